package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// volumeFake is the part of Ironic's API `anvil volume` uses: a node to
// resolve and /v1/volume/{connectors,targets} kept in memory, every
// request recorded. (internal/api's TestBaremetalCLIVolumes drives the
// real API with python-ironicclient; this checks what anvil sends.)
type volumeFake struct {
	mu    sync.Mutex
	calls []string // "METHOD /path?query body"
	items map[string]map[string]map[string]any
	next  int
}

const volumeFakeNode = "1be26c0b-03f2-4d2e-ae87-c02d7f33c001"

func (f *volumeFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var body any
	_ = json.NewDecoder(r.Body).Decode(&body)
	raw, _ := json.Marshal(body)
	call := r.Method + " " + r.URL.RequestURI()
	if body != nil {
		call += " " + string(raw)
	}
	f.calls = append(f.calls, call)
	reply := func(code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) == 3 && parts[1] == "nodes" {
		if parts[2] != "node-01" && parts[2] != volumeFakeNode {
			ironicError(w, 404, "Node "+parts[2]+" could not be found.")
			return
		}
		reply(200, map[string]any{"uuid": volumeFakeNode})
		return
	}
	if len(parts) < 3 || parts[1] != "volume" {
		ironicError(w, 404, "Resource could not be found.")
		return
	}
	kind := parts[2]
	if f.items[kind] == nil {
		f.items[kind] = map[string]map[string]any{}
	}
	items := f.items[kind]
	if len(parts) == 3 {
		switch r.Method {
		case http.MethodPost:
			f.next++
			doc := body.(map[string]any)
			doc["uuid"] = fmt.Sprintf("00000000-0000-4000-8000-%012d", f.next)
			items[doc["uuid"].(string)] = doc
			reply(201, doc)
		default:
			var list []any
			for _, it := range items {
				list = append(list, it)
			}
			reply(200, map[string]any{kind: list})
		}
		return
	}
	doc, ok := items[parts[3]]
	if !ok {
		ironicError(w, 404, "Volume "+strings.TrimSuffix(kind, "s")+" "+parts[3]+" could not be found.")
		return
	}
	switch r.Method {
	case http.MethodDelete:
		delete(items, parts[3])
		w.WriteHeader(204)
	case http.MethodPatch:
		for _, op := range body.([]any) {
			o := op.(map[string]any)
			path := strings.Split(strings.TrimPrefix(o["path"].(string), "/"), "/")
			target := doc
			if len(path) == 2 {
				if target[path[0]] == nil {
					target[path[0]] = map[string]any{}
				}
				target = target[path[0]].(map[string]any)
			}
			if o["op"] == "remove" {
				delete(target, path[len(path)-1])
			} else {
				target[path[len(path)-1]] = o["value"]
			}
		}
		reply(200, doc)
	default:
		reply(200, doc)
	}
}

func TestVolumeCommands(t *testing.T) {
	f := &volumeFake{items: map[string]map[string]map[string]any{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	run := func(want int, args ...string) cliRun {
		t.Helper()
		r := runCLI(t, srv.URL, "", args...)
		if r.code != want {
			t.Fatalf("anvil %s: code %d, want %d\n%s%s", strings.Join(args, " "), r.code, want, r.stdout, r.stderr)
		}
		return r
	}
	lastCall := func() string {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.calls[len(f.calls)-1]
	}

	r := run(0, "volume", "connector", "create", "--node", "node-01", "--type", "iqn", "--connector-id", "iqn.x",
		"--extra", "rack=a", "-f", "value", "-c", "uuid")
	conn := strings.TrimSpace(r.stdout)
	var posted map[string]any
	if call := lastCall(); !strings.HasPrefix(call, "POST /v1/volume/connectors ") {
		t.Fatalf("create sent %q", call)
	} else if err := json.Unmarshal([]byte(strings.TrimPrefix(call, "POST /v1/volume/connectors ")), &posted); err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"node_uuid": volumeFakeNode, "type": "iqn", "connector_id": "iqn.x",
		"extra": map[string]any{"rack": "a"}}; !reflect.DeepEqual(posted, want) {
		t.Errorf("create body %v, want %v", posted, want)
	}
	r = run(1, "volume", "connector", "create", "--node", "node-01", "--type", "iqn")
	if !strings.Contains(r.stderr, "connector-id") {
		t.Errorf("create without --connector-id: %+v", r)
	}

	run(0, "volume", "connector", "set", conn, "--connector-id", "iqn.y", "--node", "node-01", "--extra", "row=2")
	if want := `PATCH /v1/volume/connectors/` + conn + ` [{"op":"add","path":"/node_uuid","value":"` + volumeFakeNode +
		`"},{"op":"add","path":"/connector_id","value":"iqn.y"},{"op":"add","path":"/extra/row","value":2}]`; lastCall() != want {
		t.Errorf("set sent %q\nwant     %q", lastCall(), want)
	}
	run(0, "volume", "connector", "unset", conn, "--extra", "rack")
	if want := `PATCH /v1/volume/connectors/` + conn + ` [{"op":"remove","path":"/extra/rack"}]`; lastCall() != want {
		t.Errorf("unset sent %q", lastCall())
	}
	if r := run(0, "volume", "connector", "set", conn); !strings.Contains(r.stderr, "Please specify what to set.") {
		t.Errorf("empty set: %+v", r)
	}
	r = run(0, "volume", "connector", "show", conn, "-f", "json")
	var shown map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil || shown["connector_id"] != "iqn.y" || fmt.Sprint(shown["extra"]) != "map[row:2]" {
		t.Errorf("show: %v %v", shown, err)
	}

	target := strings.TrimSpace(run(0, "volume", "target", "create", "--node", volumeFakeNode, "--type", "iscsi", "--boot-index", "0",
		"--volume-id", "v1", "--property", "target_lun=0", "-f", "value", "-c", "uuid").stdout)
	if call := lastCall(); !strings.Contains(call, `"boot_index":0`) || !strings.Contains(call, `"volume_type":"iscsi"`) ||
		!strings.Contains(call, `"properties":{"target_lun":0}`) {
		t.Errorf("target create sent %q", call)
	}
	run(0, "volume", "target", "set", target, "--boot-index", "0", "--type", "fibre_channel")
	if want := `PATCH /v1/volume/targets/` + target + ` [{"op":"add","path":"/volume_type","value":"fibre_channel"},{"op":"add","path":"/boot_index","value":0}]`; lastCall() != want {
		t.Errorf("target set sent %q\nwant            %q", lastCall(), want)
	}
	if r := run(1, "volume", "target", "set", target, "--boot-index", "-1"); !strings.Contains(r.stderr, "Expected non-negative --boot-index, got -1") {
		t.Errorf("negative boot index: %+v", r)
	}
	r = run(0, "volume", "target", "list", "--node", "node-01", "--long", "-f", "value", "-c", "Boot Index", "-c", "Driver Volume Type", "-c", "Properties")
	// Columns come in the list's order; dicts as osc-lib's format_dict.
	if r.stdout != "fibre_channel target_lun='0' 0\n" {
		t.Errorf("target list --long: %q", r.stdout)
	}
	if want := "GET /v1/volume/targets?detail=True&node=node-01"; lastCall() != want {
		t.Errorf("list sent %q", lastCall())
	}
	run(0, "volume", "target", "list", "--fields", "uuid", "volume_id")
	if want := "GET /v1/volume/targets?fields=uuid%2Cvolume_id"; lastCall() != want {
		t.Errorf("list --fields sent %q", lastCall())
	}
	if r := run(1, "volume", "target", "list", "--fields", "name"); !strings.Contains(r.stderr, "invalid choice: 'name'") {
		t.Errorf("list --fields name: %+v", r)
	}

	r = run(1, "volume", "target", "delete", target, "00000000-0000-4000-8000-000000000099")
	if r.stdout != "Deleted volume target "+target+"\n" ||
		!strings.Contains(r.stderr, "Failed to delete volume target 00000000-0000-4000-8000-000000000099: Volume target 00000000-0000-4000-8000-000000000099 could not be found. (HTTP 404)") {
		t.Errorf("delete: %+v", r)
	}
	run(0, "volume", "connector", "delete", conn)
	if r := run(0, "volume", "connector", "list", "-f", "value", "-c", "UUID"); r.stdout != "" {
		t.Errorf("list after delete: %q", r.stdout)
	}
}
