package agent

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/ipa"
)

// cmdAPI is a test client of an agent's command API.
type cmdAPI struct {
	t   *testing.T
	url string
}

func newCmdAPI(t *testing.T, a *Agent) cmdAPI {
	srv := httptest.NewServer(a.cmd.handler())
	t.Cleanup(func() { srv.Close(); a.cmd.wait() })
	return cmdAPI{t: t, url: srv.URL}
}

func (c cmdAPI) do(method, path string, q url.Values, body string) (int, []byte) {
	c.t.Helper()
	u := c.url + path
	if q != nil {
		u += "?" + q.Encode()
	}
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode, b
}

// run posts a command with the token and polls it to its end.
func (c cmdAPI) run(token, name string, params map[string]any) ipa.CommandResult {
	c.t.Helper()
	body, _ := json.Marshal(ipa.CommandRequest{Name: name, Params: params})
	st, b := c.do("POST", "/v1/commands/", url.Values{"wait": {"false"}, "agent_token": {token}}, string(body))
	if st != http.StatusOK {
		c.t.Fatalf("%s: HTTP %d: %s", name, st, b)
	}
	var res ipa.CommandResult
	if err := json.Unmarshal(b, &res); err != nil {
		c.t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); res.Status == ipa.StatusRunning && time.Now().Before(deadline); {
		// No token: Ironic 21.4 polls without one.
		st, b := c.do("GET", "/v1/commands/"+res.ID, nil, "")
		if st != http.StatusOK {
			c.t.Fatalf("poll %s: HTTP %d: %s", name, st, b)
		}
		res = ipa.CommandResult{}
		_ = json.Unmarshal(b, &res)
		time.Sleep(5 * time.Millisecond)
	}
	return res
}

func testAgent(t *testing.T, diskSize int) (*Agent, string) {
	t.Helper()
	disk := testDisk(t, diskSize)
	a, err := New(Config{APIURL: "http://127.0.0.1:1", Disk: disk, MACs: []string{"x"}, RootDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return a, disk
}

// TestCommandAPIBadInput: IPA's status and fault for each mistake, and no
// command runs.
func TestCommandAPIBadInput(t *testing.T) {
	a, _ := testAgent(t, 1<<20)
	api := newCmdAPI(t, a)
	erase := `{"name":"clean.execute_clean_step","params":{"step":{"step":"erase_devices_metadata","interface":"deploy"}}}`
	// Before the lookup the agent has no token: nothing is accepted.
	if st, b := api.do("POST", "/v1/commands/", url.Values{"agent_token": {""}}, erase); st != 401 {
		t.Fatalf("no token yet: %d %s", st, b)
	}
	a.token = "secret-token"
	tests := []struct {
		name   string
		q      url.Values
		body   string
		status int
		fault  string
	}{
		{"no token", nil, erase, 401, ipa.FaultTokenInvalid},
		{"wrong token", url.Values{"agent_token": {"secret-tokex"}}, erase, 401, ipa.FaultTokenInvalid},
		{"another node's token", url.Values{"agent_token": {"other-node-token"}}, erase, 401, ipa.FaultTokenInvalid},
		{"malformed body", url.Values{"agent_token": {"secret-token"}}, `{"name":`, 400, ipa.FaultBadRequestBody},
		{"params not an object", url.Values{"agent_token": {"secret-token"}}, `{"name":"standby.sync","params":[]}`, 400, ipa.FaultBadRequestBody},
		{"no params", url.Values{"agent_token": {"secret-token"}}, `{"name":"standby.sync"}`, 400, ipa.FaultBadRequestBody},
		{"name without extension", url.Values{"agent_token": {"secret-token"}}, `{"name":"sync","params":{}}`, 400, ipa.FaultBadCommandName},
		{"unknown extension", url.Values{"agent_token": {"secret-token"}}, `{"name":"raid.create","params":{}}`, 404, ipa.FaultUnknownExtension("raid")},
		{"unknown command", url.Values{"agent_token": {"secret-token"}}, `{"name":"standby.write_image","params":{}}`, 400, ipa.FaultUnknownCommand("write_image")},
		{"image without urls", url.Values{"agent_token": {"secret-token"}}, `{"name":"standby.prepare_image","params":{"image_info":{"id":"x","checksum":"ab"}}}`, 400,
			"Invalid command parameters: Image is missing 'urls' field."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, b := api.do("POST", "/v1/commands/", tt.q, tt.body)
			var f ipa.Fault
			if err := json.Unmarshal(b, &f); err != nil || st != tt.status || f.String != tt.fault || f.Code != "Client" {
				t.Fatalf("HTTP %d %s; want %d %q", st, b, tt.status, tt.fault)
			}
		})
	}
	if st, b := api.do("GET", "/v1/commands/", url.Values{"agent_token": {"wrong"}}, ""); st != 401 {
		t.Fatalf("list with a wrong token: %d %s", st, b)
	}
	if st, b := api.do("GET", "/v1/commands/nope", nil, ""); st != 404 || !strings.Contains(string(b), ipa.FaultNoSuchCommand("nope")) {
		t.Fatalf("unknown command id: %d %s", st, b)
	}
	st, b := api.do("GET", "/v1/commands/", nil, "")
	if st != 200 || string(bytes.TrimSpace(b)) != `{"commands":[]}` {
		t.Fatalf("commands after refusals: %d %s", st, b)
	}
}

// TestCommandAPIClean: IPA's clean sequence: the steps listed once (from
// ipa.CleanSteps), execute_clean_step's result shape, the list order, a
// version mismatch, a busy agent.
func TestCommandAPIClean(t *testing.T) {
	a, disk := testAgent(t, 4<<20)
	if err := os.WriteFile(disk, bytes.Repeat([]byte{0xAB}, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	a.token = "tok"
	api := newCmdAPI(t, a)
	steps := api.run("tok", ipa.CmdGetCleanSteps, map[string]any{"node": map[string]any{}, "ports": []any{}})
	list, _ := steps.Result["clean_steps"].(map[string]any)[ipa.HardwareManager].([]any)
	if steps.Status != ipa.StatusSucceeded || len(list) != len(ipa.CleanSteps()) ||
		list[0].(map[string]any)["step"] != ipa.StepEraseDevicesMetadata || list[0].(map[string]any)["priority"] != float64(99) {
		t.Fatalf("get_clean_steps = %+v", steps)
	}
	version := steps.Result["hardware_manager_version"]
	step := map[string]any{"step": "erase_devices_metadata", "interface": "deploy", "priority": 99}
	res := api.run("tok", ipa.CmdExecuteCleanStep, map[string]any{"step": step, "node": map[string]any{"uuid": "n"},
		"ports": []any{}, "clean_version": version})
	if res.Status != ipa.StatusSucceeded || res.Name != "execute_clean_step" || res.Result["clean_step"].(map[string]any)["step"] != "erase_devices_metadata" {
		t.Fatalf("execute_clean_step = %+v", res)
	}
	got, _ := os.ReadFile(disk)
	if !bytes.Equal(got[:1<<20], make([]byte, 1<<20)) || got[2<<20] != 0xAB {
		t.Fatal("erase_devices_metadata did not wipe the first MiB only")
	}
	bad := api.run("tok", ipa.CmdExecuteCleanStep, map[string]any{"step": step, "node": map[string]any{},
		"ports": []any{}, "clean_version": map[string]any{ipa.HardwareManager: "0.9"}})
	if bad.Status != ipa.StatusVersionMismatch {
		t.Fatalf("version mismatch = %+v", bad)
	}
	unknown := api.run("tok", ipa.CmdExecuteCleanStep, map[string]any{"step": map[string]any{"step": "burnin_cpu"}, "node": map[string]any{}, "ports": []any{}})
	if unknown.Status != ipa.StatusFailed || unknown.Error == nil || unknown.Error.Type != "CommandExecutionError" || !strings.Contains(unknown.ErrorText(), "burnin_cpu") {
		t.Fatalf("unknown step = %+v", unknown)
	}
	st, b := api.do("GET", "/v1/commands/", url.Values{"agent_token": {"tok"}}, "")
	var all ipa.CommandList
	_ = json.Unmarshal(b, &all)
	names := []string{}
	for _, c := range all.Commands {
		names = append(names, c.Name)
	}
	if st != 200 || strings.Join(names, ",") != "get_clean_steps,execute_clean_step,execute_clean_step,execute_clean_step" {
		t.Fatalf("commands = %d %v", st, names)
	}
}

// TestCommandAPIPrepareImage: standby.prepare_image writes and verifies the
// image, as Ironic 21.4 sends it (checksum by length) and as Anvil's
// conductor does (os_hash_algo/os_hash_value); a wrong checksum fails the
// command; get_partition_uuids is {} for a whole-disk image.
func TestCommandAPIPrepareImage(t *testing.T) {
	img, sum := randomImage(t, 3<<20+17)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(img) }))
	defer srv.Close()
	a, disk := testAgent(t, 8<<20)
	a.token = "tok"
	api := newCmdAPI(t, a)
	for name, info := range map[string]map[string]any{
		"checksum":     {"id": "img", "urls": []any{srv.URL + "/i"}, "checksum": sum, "disk_format": "raw"},
		"os_hash pair": {"id": "img", "urls": []any{srv.URL + "/i"}, "os_hash_algo": "sha256", "os_hash_value": sum},
	} {
		if err := os.WriteFile(disk, make([]byte, 8<<20), 0o644); err != nil {
			t.Fatal(err)
		}
		res := api.run("tok", ipa.CmdPrepareImage, map[string]any{"image_info": info, "configdrive": nil})
		got, _ := os.ReadFile(disk)
		if res.Status != ipa.StatusSucceeded || !bytes.Equal(got[:len(img)], img) ||
			!strings.HasPrefix(res.Result["result"].(string), "prepare_image: image (img) written to device") {
			t.Fatalf("%s: %+v", name, res)
		}
	}
	bad := api.run("tok", ipa.CmdPrepareImage, map[string]any{"image_info": map[string]any{"id": "img",
		"urls": []any{srv.URL + "/i"}, "os_hash_algo": "sha256", "os_hash_value": strings.Repeat("0", 64)}})
	if bad.Status != ipa.StatusFailed || !strings.Contains(bad.ErrorText(), "mismatch") {
		t.Fatalf("wrong checksum: %+v", bad)
	}
	md5 := api.run("tok", ipa.CmdPrepareImage, map[string]any{"image_info": map[string]any{"id": "img",
		"urls": []any{srv.URL + "/i"}, "checksum": strings.Repeat("0", 32)}})
	if md5.Status != ipa.StatusFailed || !strings.Contains(md5.ErrorText(), "md5") {
		t.Fatalf("md5 not enabled by the lookup: %+v", md5)
	}
	pu := api.run("tok", ipa.CmdGetPartitionUUIDs, map[string]any{})
	if pu.Status != ipa.StatusSucceeded || len(pu.Result) != 0 || pu.Result == nil {
		t.Fatalf("get_partition_uuids = %+v", pu)
	}
	if s := api.run("tok", ipa.CmdSync, map[string]any{}); s.Status != ipa.StatusSucceeded || s.Result != nil {
		t.Fatalf("sync = %+v", s)
	}
	if s := api.run("tok", ipa.CmdInstallBootloader, map[string]any{"root_uuid": "x"}); s.Status != ipa.StatusFailed {
		t.Fatalf("install_bootloader = %+v", s)
	}
	logs := api.run("tok", ipa.CmdCollectSystemLogs, map[string]any{})
	if s, _ := logs.Result["system_logs"].(string); logs.Status != ipa.StatusSucceeded || len(s) < 20 {
		t.Fatalf("collect_system_logs = %+v", logs)
	}
}

// TestCommandAPIBusy: a second command while one runs is IPA's 409.
func TestCommandAPIBusy(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1048576")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	a, _ := testAgent(t, 4<<20)
	a.token = "tok"
	api := newCmdAPI(t, a)
	body, _ := json.Marshal(ipa.CommandRequest{Name: ipa.CmdPrepareImage, Params: map[string]any{"image_info": map[string]any{
		"id": "i", "urls": []any{srv.URL}, "os_hash_algo": "sha256", "os_hash_value": strings.Repeat("a", 64)}}})
	q := url.Values{"agent_token": {"tok"}}
	if st, b := api.do("POST", "/v1/commands/", q, string(body)); st != 200 || !strings.Contains(string(b), `"RUNNING"`) {
		t.Fatalf("first: %d %s", st, b)
	}
	st, b := api.do("POST", "/v1/commands/", q, `{"name":"standby.sync","params":{}}`)
	if st != 409 || !strings.Contains(string(b), ipa.FaultBusy("prepare_image")) {
		t.Fatalf("second: %d %s", st, b)
	}
}
