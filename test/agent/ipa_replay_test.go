package agent_test

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// exchanges is testdata/ipa/exchanges.json: IPA's side of the protocol.
type exchanges struct {
	Lookup    request `json:"lookup"`
	Heartbeat request `json:"heartbeat"`
	Inspect   request `json:"inspection"`
	Commands  map[string]struct {
		Signature struct {
			Required []string `json:"required"`
			Optional []string `json:"optional"`
			AnyOther bool     `json:"any_other"`
		} `json:"signature"`
		Async   bool `json:"async"`
		Result  any  `json:"result"`
		Failure any  `json:"failure"`
	} `json:"commands"`
	Faults map[string]struct {
		Status int `json:"status"`
		Body   any `json:"body"`
	} `json:"faults"`
}

type request struct {
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Query   map[string]string `json:"query"`
	Headers map[string]string `json:"headers"`
	Body    any               `json:"body"`
}

// fill replaces {{name}} placeholders in v (strings, recursively): a string
// that is only "{{params.a.b}}" becomes that parameter's value.
func fill(v any, vars map[string]string, params map[string]any) any {
	switch x := v.(type) {
	case string:
		if strings.HasPrefix(x, "{{params.") && strings.HasSuffix(x, "}}") && strings.Count(x, "{{") == 1 {
			return param(params, strings.TrimSuffix(strings.TrimPrefix(x, "{{params."), "}}"))
		}
		for strings.Contains(x, "{{params.") {
			i := strings.Index(x, "{{params.")
			j := strings.Index(x[i:], "}}") + i
			x = x[:i] + fmt.Sprint(param(params, x[i+len("{{params."):j])) + x[j+2:]
		}
		for k, val := range vars {
			x = strings.ReplaceAll(x, "{{"+k+"}}", val)
		}
		return x
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = fill(e, vars, params)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = fill(e, vars, params)
		}
		return out
	}
	return v
}

func param(params map[string]any, path string) any {
	var cur any = params
	for _, k := range strings.Split(path, ".") {
		m, _ := cur.(map[string]any)
		cur = m[k]
	}
	return cur
}

// fakeIPA plays IPA from the recorded exchanges: it looks its node up,
// heartbeats, serves the command API with IPA's answers and checks what
// Anvil sends against IPA's signatures and token rule.
type fakeIPA struct {
	t       *testing.T
	ex      exchanges
	api     string
	mac     string
	srv     *httptest.Server
	mu      sync.Mutex
	token   string
	node    string
	cmds    []map[string]any // IPA's command history (serialised results)
	params  map[string]map[string]any
	seen    []string // every command name Anvil sent, in order
	failing string   // a command to fail once with its recorded failure
	held    bool     // the main loop is paused (IPA still collecting its inventory)
	lookup  []byte   // the last lookup's answer
	errs    []string // protocol violations seen
}

func loadExchanges(t *testing.T) exchanges {
	t.Helper()
	b, err := os.ReadFile("testdata/ipa/exchanges.json")
	if err != nil {
		t.Fatal(err)
	}
	var ex exchanges
	if err := json.Unmarshal(b, &ex); err != nil {
		t.Fatal(err)
	}
	return ex
}

func startFakeIPA(t *testing.T, api, mac string) *fakeIPA {
	f := &fakeIPA{t: t, ex: loadExchanges(t), api: api, mac: mac, params: map[string]map[string]any{}}
	// IPA serves its command API over TLS with a certificate of its own,
	// sent in the heartbeat's agent_verify_ca (auto TLS, recorded).
	f.srv = httptest.NewTLSServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	stop := make(chan struct{})
	done := make(chan struct{})
	t.Cleanup(func() { close(stop); <-done })
	go func() {
		defer close(done)
		for {
			f.beat()
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond): // IPA's heartbeat, sped up
			}
		}
	}()
	return f
}

func (f *fakeIPA) violation(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

func (f *fakeIPA) vars() map[string]string {
	return map[string]string{"mac": f.mac, "macs": f.mac, "node": f.node, "token": f.token, "callback_url": f.srv.URL,
		"bootif":          "01-" + strings.ReplaceAll(f.mac, ":", "-"),
		"agent_verify_ca": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.srv.Certificate().Raw}))}
}

// send makes one of IPA's requests to Anvil.
func (f *fakeIPA) send(r request, vars map[string]string, extra map[string]any) (int, []byte) {
	path := fill(r.Path, vars, nil).(string)
	if len(r.Query) > 0 {
		q := []string{}
		for k, v := range r.Query {
			q = append(q, k+"="+fill(v, vars, nil).(string))
		}
		path += "?" + strings.Join(q, "&")
	}
	var body io.Reader
	if r.Body != nil {
		b := fill(r.Body, vars, nil).(map[string]any)
		for k, v := range extra {
			b[k] = v
		}
		raw, _ := json.Marshal(b)
		body = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(r.Method, f.api+path, body)
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// beat is one turn of IPA's main loop: look up when it has no token, then
// heartbeat. A refused heartbeat stands for the conductor rebooting the
// machine: a fresh IPA, with no token and no command history.
func (f *fakeIPA) beat() {
	f.mu.Lock()
	vars := f.vars()
	have, held := f.token != "", f.held
	f.mu.Unlock()
	if held {
		return
	}
	if !have {
		st, b := f.send(f.ex.Lookup, vars, nil)
		if st != http.StatusOK {
			return
		}
		var lr struct {
			Node   struct{ UUID string } `json:"node"`
			Config struct {
				AgentToken string `json:"agent_token"`
				Required   bool   `json:"agent_token_required"`
			} `json:"config"`
		}
		_ = json.Unmarshal(b, &lr)
		if !lr.Config.Required || lr.Config.AgentToken == "" || lr.Config.AgentToken == "******" {
			f.violation("lookup config unusable by IPA: %s", b)
			return
		}
		f.mu.Lock()
		f.token, f.node, f.cmds, f.lookup = lr.Config.AgentToken, lr.Node.UUID, nil, b
		vars = f.vars()
		f.mu.Unlock()
	}
	if st, _ := f.send(f.ex.Heartbeat, vars, nil); st >= 400 && st != http.StatusConflict {
		f.mu.Lock()
		f.token, f.cmds = "", nil
		f.mu.Unlock()
	}
}

// fault answers one of IPA's recorded faults.
func (f *fakeIPA) fault(w http.ResponseWriter, name string, vars map[string]string) {
	fl := f.ex.Faults[name]
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(fl.Status)
	_ = json.NewEncoder(w).Encode(fill(fl.Body, vars, nil))
}

// serve is IPA's command API (api/app.py) answering recorded results.
func (f *fakeIPA) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Query().Get("agent_token") != f.token || f.token == "" {
		f.errs = append(f.errs, fmt.Sprintf("%s %s without the lookup's token in agent_token", r.Method, r.URL.Path))
		f.fault(w, "token", nil)
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/commands/":
		writeJSONTest(w, map[string]any{"commands": f.cmds})
		return
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/commands/"):
		id := strings.TrimPrefix(r.URL.Path, "/v1/commands/")
		for _, c := range f.cmds {
			if c["id"] == id {
				f.finish(c) // an asynchronous command is done by its first poll
				writeJSONTest(w, c)
				return
			}
		}
		http.Error(w, `{"faultcode":"Client","faultstring":"Not found"}`, 404)
		return
	case r.Method != http.MethodPost || r.URL.Path != "/v1/commands/":
		f.errs = append(f.errs, "unexpected "+r.Method+" "+r.URL.Path)
		http.NotFound(w, r)
		return
	}
	var req struct {
		Name   string         `json:"name"`
		Params map[string]any `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Name == "" || req.Params == nil {
		f.errs = append(f.errs, fmt.Sprintf("malformed command body (%v)", err))
		w.WriteHeader(400)
		return
	}
	f.seen = append(f.seen, req.Name)
	ext, _, _ := strings.Cut(req.Name, ".")
	spec, ok := f.ex.Commands[req.Name]
	if !ok {
		f.errs = append(f.errs, "command IPA lacks: "+req.Name)
		f.fault(w, "unknown_extension", map[string]string{"extension": ext})
		return
	}
	for _, k := range spec.Signature.Required {
		if _, ok := req.Params[k]; !ok {
			f.errs = append(f.errs, fmt.Sprintf("%s without its parameter %s (IPA: TypeError)", req.Name, k))
		}
	}
	for k := range req.Params {
		if !spec.Signature.AnyOther && !slices.Contains(spec.Signature.Required, k) && !slices.Contains(spec.Signature.Optional, k) {
			f.errs = append(f.errs, fmt.Sprintf("%s with parameter %s IPA does not take (TypeError)", req.Name, k))
		}
	}
	if n := len(f.cmds); n > 0 && f.cmds[n-1]["command_status"] == "RUNNING" {
		f.fault(w, "busy", map[string]string{"running": f.cmds[n-1]["command_name"].(string)})
		return
	}
	_, name, _ := strings.Cut(req.Name, ".")
	c := map[string]any{"id": uuid.NewString(), "command_name": name, "command_status": "RUNNING",
		"command_error": nil, "command_result": nil}
	f.params[c["id"].(string)] = req.Params
	f.cmds = append(f.cmds, c)
	if !spec.Async {
		f.finish(c)
	}
	writeJSONTest(w, c)
}

// finish records a command's recorded outcome (its failure, once, when it
// is the one set to fail).
func (f *fakeIPA) finish(c map[string]any) {
	if c["command_status"] != "RUNNING" {
		return
	}
	name := c["command_name"].(string)
	for full, spec := range f.ex.Commands {
		if !strings.HasSuffix(full, "."+name) {
			continue
		}
		params := f.params[c["id"].(string)]
		if f.failing == full {
			f.failing = ""
			c["command_status"], c["command_error"] = "FAILED", fill(spec.Failure, nil, params)
			return
		}
		c["command_status"], c["command_result"] = "SUCCEEDED", fill(spec.Result, nil, params)
		return
	}
}

func writeJSONTest(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// sent returns the commands Anvil sent since the last call, and the
// violations seen.
func (f *fakeIPA) sent() ([]string, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, e := f.seen, f.errs
	f.seen, f.errs = nil, nil
	return s, e
}

func (f *fakeIPA) paramsOf(name string) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.cmds) - 1; i >= 0; i-- {
		if f.cmds[i]["command_name"] == name {
			return f.params[f.cmds[i]["id"].(string)]
		}
	}
	return nil
}

// TestAnvilDrivesIPA replays IPA's recorded side of the protocol against a
// real `anvil serve`: agent inspection (IPA's inventory format), automated
// cleaning, a deploy whose image fails IPA's checksum check, a good deploy,
// and a rescue — each command Anvil sends checked against IPA's signature
// and token rule, each answer IPA's.
func TestAnvilDrivesIPA(t *testing.T) {
	api := startServer(t)
	const mac = "52:54:00:77:66:01"
	n := mustCall(t, 201, "POST", api+"/v1/nodes", map[string]any{"name": "ipa-node", "driver": "fake-hardware",
		"deploy_interface": "direct", "inspect_interface": "agent", "rescue_interface": "agent"}).JSON(t)
	node := n["uuid"].(string)
	mustCall(t, 201, "POST", api+"/v1/ports", map[string]any{"node_uuid": node, "address": mac})
	ipa := startFakeIPA(t, api, mac)
	check := func(phase string, want ...string) {
		t.Helper()
		seen, errs := ipa.sent()
		if len(errs) > 0 {
			t.Fatalf("%s: protocol violations: %q", phase, errs)
		}
		if !slices.Equal(seen, want) {
			t.Fatalf("%s: Anvil sent %q, want %q", phase, seen, want)
		}
	}

	// Inspection: stock IPA posts its inventory before it looks its node
	// up, so without a token (ironic-python-agent's inspector.py runs
	// before the heartbeat loop); Anvil takes it as Ironic does while no
	// token was issued for the node.
	hold := func(h bool) { ipa.mu.Lock(); ipa.held = h; ipa.mu.Unlock() }
	insp := map[string]string{"mac": mac, "bootif": "01-" + strings.ReplaceAll(mac, ":", "-")}
	hold(true)
	provision(t, api, node, "manage")
	waitState(t, api, node, "manageable")
	provision(t, api, node, "inspect")
	waitState(t, api, node, "inspect wait")
	if st, b := ipa.send(ipa.ex.Inspect, insp, nil); st != http.StatusAccepted {
		t.Fatalf("IPA's token-less inspection data before any lookup: HTTP %d %s, want 202", st, b)
	}
	got := waitState(t, api, node, "manageable")
	if p := got["properties"].(map[string]any); p["cpus"] != float64(1) || p["memory_mb"] != float64(1536) || p["local_gb"] != float64(4) {
		t.Errorf("properties from IPA's token-less inventory = %v", p)
	}

	// Once the agent looked up and holds a token, the token is required:
	// a token-less post is refused (401) and changes nothing; with the
	// token it is taken.
	provision(t, api, node, "inspect")
	waitState(t, api, node, "inspect wait")
	hold(false)
	for deadline := time.Now().Add(stateTimeout); ; {
		ipa.mu.Lock()
		tok := ipa.token
		ipa.mu.Unlock()
		if tok != "" {
			if st, b := ipa.send(ipa.ex.Inspect, insp, nil); st != http.StatusUnauthorized {
				t.Fatalf("token-less inspection data after the lookup: HTTP %d %s, want 401", st, b)
			}
			if st, b := ipa.send(ipa.ex.Inspect, insp, map[string]any{"agent_token": tok}); st != http.StatusAccepted {
				t.Fatalf("inspection data with the token: HTTP %d %s", st, b)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("IPA never looked its node up during inspection")
		}
		time.Sleep(20 * time.Millisecond)
	}
	got = waitState(t, api, node, "manageable")
	if p := got["properties"].(map[string]any); p["cpus"] != float64(1) || p["memory_mb"] != float64(1536) || p["local_gb"] != float64(4) {
		t.Errorf("properties from IPA's inventory = %v", p)
	}
	inv := mustCall(t, 200, "GET", api+"/v1/nodes/"+node+"/inventory", nil).JSON(t)
	if pd := inv["plugin_data"].(map[string]any); pd["boot_interface"] != ipa.vars()["bootif"] || pd["root_disk"] == nil {
		t.Errorf("plugin_data = %v", pd)
	}
	check("inspection")

	// Automated cleaning: clean.execute_clean_step, polled to its end.
	provision(t, api, node, "provide")
	waitState(t, api, node, "available")
	check("cleaning", "clean.execute_clean_step")
	// The lookup's node carries no inspection data (Ironic keeps it apart;
	// with IPA's logs it was >100 KB in every lookup).
	ipa.mu.Lock()
	lookup := ipa.lookup
	ipa.mu.Unlock()
	var lr struct {
		Node struct {
			DII map[string]any `json:"driver_internal_info"`
		} `json:"node"`
	}
	if err := json.Unmarshal(lookup, &lr); err != nil || lr.Node.DII == nil {
		t.Fatalf("lookup answer %s: %v", lookup, err)
	}
	for _, k := range []string{"inspection_inventory", "inspection_plugin_data"} {
		if _, ok := lr.Node.DII[k]; ok {
			t.Errorf("the lookup's driver_internal_info carries %s", k)
		}
	}
	if p := ipa.paramsOf("execute_clean_step"); p["step"].(map[string]any)["step"] != "erase_devices_metadata" ||
		p["node"].(map[string]any)["uuid"] != node {
		t.Errorf("execute_clean_step params = %v", p)
	}

	// A deploy whose image fails IPA's checksum check: IPA's details in
	// last_error.
	sum := strings.Repeat("ab", 32)
	setImage(t, api, node, "http://127.0.0.1:1/images/ipa.img", sum)
	ipa.mu.Lock()
	ipa.failing = "standby.prepare_image"
	ipa.mu.Unlock()
	provision(t, api, node, "active")
	failed := waitState(t, api, node, "deploy failed")
	if le, _ := failed["last_error"].(string); !strings.Contains(le, "Image failed to verify against checksum") || !strings.Contains(le, sum) {
		t.Errorf("last_error = %q, want IPA's checksum error details", le)
	}
	check("failed deploy", "standby.prepare_image")

	provision(t, api, node, "active")
	waitState(t, api, node, "active")
	check("deploy", "standby.prepare_image", "standby.get_partition_uuids", "standby.sync")
	info := ipa.paramsOf("prepare_image")["image_info"].(map[string]any)
	if urls, _ := info["urls"].([]any); info["id"] != "ipa.img" || len(urls) != 1 || urls[0] != "http://127.0.0.1:1/images/ipa.img" ||
		info["os_hash_algo"] != "sha256" || info["os_hash_value"] != sum {
		t.Errorf("image_info = %v", info)
	}

	// Rescue: rescue.finalize_rescue with the password's crypt hash.
	mustCall(t, 202, "PUT", api+"/v1/nodes/"+node+"/states/provision", map[string]any{"target": "rescue", "rescue_password": "ipa-rescue"})
	waitState(t, api, node, "rescue")
	check("rescue", "rescue.finalize_rescue")
	if p := ipa.paramsOf("finalize_rescue"); p["hashed"] != true || !strings.HasPrefix(fmt.Sprint(p["rescue_password"]), "$6$") {
		t.Errorf("finalize_rescue params = %v", p)
	}

	// In UEFI boot mode a whole-disk deploy asks the agent to install the
	// boot loader (the boot entry), as Ironic's configure_local_boot.
	provision(t, api, node, "unrescue")
	waitState(t, api, node, "active")
	provision(t, api, node, "deleted")
	waitState(t, api, node, "available")
	mustCall(t, 200, "PATCH", api+"/v1/nodes/"+node, []map[string]any{
		{"op": "add", "path": "/properties/capabilities", "value": "boot_mode:uefi"}})
	setImage(t, api, node, "http://127.0.0.1:1/images/ipa.img", sum)
	ipa.mu.Lock()
	ipa.seen = nil
	ipa.mu.Unlock()
	provision(t, api, node, "active")
	waitState(t, api, node, "active")
	seen, errs := ipa.sent()
	if len(errs) > 0 {
		t.Fatalf("UEFI deploy: protocol violations: %q", errs)
	}
	if i := slices.Index(seen, "image.install_bootloader"); i < 0 || !slices.Contains(seen[i:], "standby.sync") {
		t.Errorf("UEFI deploy sent %q, want image.install_bootloader before standby.sync", seen)
	}
	if p := ipa.paramsOf("install_bootloader"); p["target_boot_mode"] != "uefi" {
		t.Errorf("install_bootloader params = %v", p)
	}
}
