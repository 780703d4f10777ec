package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// fakeIronic is a small stateful stand-in for the API: enough nodes,
// ports, conductors and state changes for the command tests. A provision
// or power change is accepted in a transitional state and completes one
// step per read of the node (state, then lock release), so waits are
// exercised without timers. locked[node] answers that many requests 409
// "locked"; failing[node] makes the next provision action fail.
type fakeIronic struct {
	mu      sync.Mutex
	nodes   []map[string]any
	ports   []map[string]any
	pending map[string][]func(n map[string]any) // per node uuid: steps left
	onPut   func()                              // called on every PUT, unlocked
	locked  map[string]int
	failing map[string]bool
	calls   []string
	bodies  []map[string]any // of the provision requests, in order
	version []string         // their API version headers
	seq     int
}

func newFake() *fakeIronic {
	return &fakeIronic{pending: map[string][]func(map[string]any){}, locked: map[string]int{}, failing: map[string]bool{}}
}

func (f *fakeIronic) addNode(name, state string, extra map[string]any) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	uuid := fmt.Sprintf("00000000-0000-0000-0000-%012d", f.seq)
	n := map[string]any{"uuid": uuid, "name": name, "provision_state": state, "target_provision_state": nil,
		"power_state": nil, "target_power_state": nil, "maintenance": false, "maintenance_reason": nil,
		"fault": nil, "last_error": nil, "reservation": nil, "instance_uuid": nil, "driver": "fake-hardware",
		"resource_class": nil, "properties": map[string]any{}, "instance_info": map[string]any{},
		"driver_info": map[string]any{}, "extra": map[string]any{},
		"provision_updated_at": "2026-01-01T00:00:00+00:00", "created_at": "2026-01-01T00:00:00+00:00"}
	if name == "" {
		n["name"] = nil
	}
	for k, v := range extra {
		n[k] = v
	}
	f.nodes = append(f.nodes, n)
	return uuid
}

func (f *fakeIronic) find(ident string) map[string]any {
	for _, n := range f.nodes {
		if n["uuid"] == ident || n["name"] == ident {
			return n
		}
	}
	return nil
}

func (f *fakeIronic) node(ident string) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.find(ident)
}

// advance runs one pending step of n.
func (f *fakeIronic) advance(n map[string]any) {
	uuid := n["uuid"].(string)
	if steps := f.pending[uuid]; len(steps) > 0 {
		steps[0](n)
		f.pending[uuid] = steps[1:]
	}
}

func pick2(n map[string]any, fields string) map[string]any {
	if fields == "" {
		return n
	}
	out := map[string]any{}
	for _, k := range strings.Split(fields, ",") {
		out[k] = n[k]
	}
	return out
}

func (f *fakeIronic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == "PUT" && f.onPut != nil {
		f.onPut()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, r.Method+" "+r.URL.Path)
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var body any
	if r.Body != nil {
		dec := json.NewDecoder(r.Body)
		dec.UseNumber()
		_ = dec.Decode(&body)
	}
	q := r.URL.Query()
	reply := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	switch {
	case len(parts) == 2 && parts[1] == "nodes" && r.Method == "POST":
		b := body.(map[string]any)
		f.mu.Unlock()
		name, _ := b["name"].(string)
		if name != "" && f.node(name) != nil {
			f.mu.Lock()
			ironicError(w, 409, "A node with name "+name+" already exists.")
			return
		}
		uuid := f.addNode(name, "enroll", b)
		f.mu.Lock()
		w.WriteHeader(201)
		reply(f.find(uuid))
	case len(parts) >= 2 && parts[1] == "nodes" && (len(parts) == 2 || parts[2] == "detail") && r.Method == "GET":
		var out []any
		for _, n := range f.nodes {
			if s := q.Get("provision_state"); s != "" && n["provision_state"] != s {
				continue
			}
			if m := q.Get("maintenance"); m != "" && fmt.Sprint(n["maintenance"]) != m {
				continue
			}
			if rc := q.Get("resource_class"); rc != "" && n["resource_class"] != rc {
				continue
			}
			f.advance(n)
			out = append(out, pick2(n, q.Get("fields")))
		}
		reply(map[string]any{"nodes": out})
	case len(parts) >= 3 && parts[1] == "nodes":
		f.serveNode(w, r, parts[2], parts[3:], body, reply)
	case len(parts) == 2 && parts[1] == "ports" && r.Method == "POST":
		p := body.(map[string]any)
		p["uuid"] = fmt.Sprintf("11111111-0000-0000-0000-%012d", len(f.ports)+1)
		f.ports = append(f.ports, p)
		w.WriteHeader(201)
		reply(p)
	case len(parts) == 2 && parts[1] == "conductors":
		reply(map[string]any{"conductors": []any{
			map[string]any{"hostname": "c1", "conductor_group": "", "alive": true},
			map[string]any{"hostname": "c2", "conductor_group": "", "alive": false}}})
	default:
		ironicError(w, 404, "Not found")
	}
}

func (f *fakeIronic) serveNode(w http.ResponseWriter, r *http.Request, ident string, sub []string, body any, reply func(any)) {
	n := f.find(ident)
	if n == nil {
		ironicError(w, 404, "Node "+ident+" could not be found.")
		return
	}
	uuid := n["uuid"].(string)
	if r.Method != "GET" && f.locked[uuid] > 0 {
		f.locked[uuid]--
		ironicError(w, 409, "Node "+uuid+" is locked by host c1, please retry after the current operation is completed.")
		return
	}
	path := strings.Join(sub, "/")
	switch {
	case path == "" && r.Method == "GET":
		f.advance(n)
		reply(pick2(n, r.URL.Query().Get("fields")))
	case path == "" && r.Method == "PATCH":
		for _, op := range body.([]any) {
			o := op.(map[string]any)
			p := strings.Split(strings.Trim(o["path"].(string), "/"), "/")
			if len(p) == 2 {
				m, _ := n[p[0]].(map[string]any)
				m[p[1]] = o["value"]
			} else {
				n[p[0]] = o["value"]
			}
		}
		reply(n)
	case path == "" && r.Method == "DELETE":
		f.nodes = slices.DeleteFunc(f.nodes, func(x map[string]any) bool { return x["uuid"] == uuid })
		w.WriteHeader(204)
	case path == "states" && r.Method == "GET":
		reply(pick2(n, "power_state,target_power_state,provision_state,target_provision_state,last_error"))
	case path == "states/provision":
		f.version = append(f.version, r.Header.Get("X-OpenStack-Ironic-API-Version"))
		f.provision(w, n, body.(map[string]any))
	case path == "states/power":
		target := body.(map[string]any)["target"].(string)
		final := map[string]string{"power on": "power on", "rebooting": "power on", "power off": "power off", "soft power off": "power off"}[target]
		n["target_power_state"], n["reservation"] = final, "c1"
		f.pending[uuid] = append(f.pending[uuid], func(n map[string]any) {
			n["power_state"], n["target_power_state"], n["reservation"] = final, nil, nil
		})
		w.WriteHeader(202)
	case path == "maintenance" && r.Method == "PUT":
		n["maintenance"], n["maintenance_reason"] = true, body.(map[string]any)["reason"]
		w.WriteHeader(202)
	case path == "maintenance" && r.Method == "DELETE":
		n["maintenance"], n["maintenance_reason"] = false, nil
		w.WriteHeader(202)
	default:
		ironicError(w, 404, "Not found")
	}
}

// fakeMoves are the provision targets the fake knows: from, through, to.
var fakeMoves = map[string][3]string{
	"manage": {"enroll", "verifying", "manageable"}, "provide": {"manageable", "cleaning", "available"},
	"active": {"available", "deploying", "active"}, "deleted": {"active", "deleting", "available"},
}

func (f *fakeIronic) provision(w http.ResponseWriter, n map[string]any, body map[string]any) {
	f.bodies = append(f.bodies, body)
	target := body["target"].(string)
	uuid := n["uuid"].(string)
	mv, ok := fakeMoves[target]
	if !ok || n["provision_state"] != mv[0] {
		ironicError(w, 400, fmt.Sprintf("The requested action %q can not be performed on node %q while it is in state %q.", target, uuid, n["provision_state"]))
		return
	}
	n["provision_state"], n["target_provision_state"], n["reservation"] = mv[1], mv[2], "c1"
	fail := f.failing[uuid]
	f.pending[uuid] = append(f.pending[uuid], func(n map[string]any) {
		if fail {
			n["provision_state"], n["last_error"] = mv[0], "fake "+target+" failure"
		} else {
			n["provision_state"] = mv[2]
		}
		n["target_provision_state"] = nil
	}, func(n map[string]any) { n["reservation"] = nil })
	w.WriteHeader(202)
}

// cliRun is one run of the CLI in-process.
type cliRun struct {
	stdout, stderr string
	code           int
}

// runCLI runs `anvil <args>` against url with the given stdin, waiting
// with a poller that never sleeps for real.
func runCLI(t *testing.T, url string, stdin string, args ...string) cliRun {
	t.Helper()
	return runCLICtx(t, t.Context(), url, stdin, args...)
}

// runCLICtx is runCLI under ctx (to test interrupts).
func runCLICtx(t *testing.T, ctx context.Context, url string, stdin string, args ...string) cliRun {
	t.Helper()
	return runCLIEnv(t, ctx, url, stdin, false, args...)
}

// runCLIEnv is runCLICtx; terminal says whether stderr is a terminal.
func runCLIEnv(t *testing.T, ctx context.Context, url string, stdin string, terminal bool, args ...string) cliRun {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := 0
	env := Env{Stdout: &stdout, Stderr: &stderr, Stdin: strings.NewReader(stdin),
		Getenv: func(k string) string {
			if k == "OS_ENDPOINT" {
				return url
			}
			return ""
		},
		Exit: func(c int) { code = c },
		NewWaiter: func(c *Client) Waiter {
			return &Poller{Client: c, Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}
		},
		Now:        func() time.Time { return time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC) },
		IsTerminal: func(io.Writer) bool { return terminal },
	}
	root := &cobra.Command{Use: "anvil", SilenceUsage: true, SilenceErrors: true}
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.AddCommand(Commands(env)...)
	root.SetArgs(append([]string{"--retry-interval", "0"}, args...))
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(&stderr, err)
		code = 1
	}
	return cliRun{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

func startFake(t *testing.T) (*fakeIronic, string) {
	t.Helper()
	f := newFake()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}
