package bmcemu_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/bmcemu"
)

const pw = "emu-Secret-pw-42"

func start(t *testing.T, cfg bmcemu.Config) *bmcemu.Emulator {
	t.Helper()
	if cfg.Password == "" {
		cfg.Password = pw
	}
	e, err := bmcemu.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

type reply struct {
	status int
	body   string
	header http.Header
}

func do(t *testing.T, method, url, user, pass, body string) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, string(b), resp.Header}
}

func TestRedfishTreeAndAuth(t *testing.T) {
	e := start(t, bmcemu.Config{Count: 3})
	root := do(t, "GET", e.URL()+"/redfish/v1/", "", "", "")
	if root.status != 200 || !strings.Contains(root.body, `"/redfish/v1/Systems"`) {
		t.Fatalf("service root: %+v", root)
	}
	if r := do(t, "GET", e.URL()+"/redfish/v1/Systems/node-01", "", "", ""); r.status != 401 {
		t.Errorf("no credentials: %d", r.status)
	}
	if r := do(t, "GET", e.URL()+"/redfish/v1/Systems/node-01", "admin", "wrong", ""); r.status != 401 || strings.Contains(r.body, pw) {
		t.Errorf("wrong password: %+v", r)
	}
	// walk every resource the redfish driver reads; none shows the password
	paths := []string{"/redfish/v1/Systems", "/redfish/v1/Systems/node-02", "/redfish/v1/Systems/node-02/Processors",
		"/redfish/v1/Systems/node-02/Processors/CPU1", "/redfish/v1/Systems/node-02/Memory", "/redfish/v1/Systems/node-02/Memory/DIMM4",
		"/redfish/v1/Systems/node-02/SimpleStorage", "/redfish/v1/Systems/node-02/SimpleStorage/1",
		"/redfish/v1/Systems/node-02/EthernetInterfaces", "/redfish/v1/SessionService", "/emulator/machines"}
	for _, p := range paths {
		r := do(t, "GET", e.URL()+p, "admin", pw, "")
		if r.status != 200 {
			t.Errorf("GET %s: %d %s", p, r.status, r.body)
		}
		if strings.Contains(r.body, pw) {
			t.Errorf("GET %s shows the password", p)
		}
	}
	if r := do(t, "GET", e.URL()+"/redfish/v1/Systems/node-02/Memory/DIMM9", "admin", pw, ""); r.status != 404 {
		t.Errorf("missing DIMM: %d", r.status)
	}
	var sys struct {
		PowerState string
		Boot       struct{ BootSourceOverrideEnabled, BootSourceOverrideTarget, BootSourceOverrideMode string }
	}
	json.Unmarshal([]byte(do(t, "GET", e.URL()+"/redfish/v1/Systems/node-01", "admin", pw, "").body), &sys)
	if sys.PowerState != "Off" || sys.Boot.BootSourceOverrideEnabled != "Disabled" || sys.Boot.BootSourceOverrideMode != "UEFI" {
		t.Errorf("initial system: %+v", sys)
	}
}

func TestSessions(t *testing.T) {
	e := start(t, bmcemu.Config{Count: 1})
	resp, err := http.Post(e.URL()+"/redfish/v1/SessionService/Sessions", "application/json",
		strings.NewReader(`{"UserName":"admin","Password":"`+pw+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	tok, loc := resp.Header.Get("X-Auth-Token"), resp.Header.Get("Location")
	if resp.StatusCode != 201 || tok == "" || loc == "" {
		t.Fatalf("create session: %d %q %q", resp.StatusCode, tok, loc)
	}
	get := func() int {
		req, _ := http.NewRequest("GET", e.URL()+"/redfish/v1/Systems/node-01", nil)
		req.Header.Set("X-Auth-Token", tok)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r.StatusCode
	}
	if s := get(); s != 200 {
		t.Fatalf("with token: %d", s)
	}
	req, _ := http.NewRequest("DELETE", e.URL()+loc, nil)
	req.Header.Set("X-Auth-Token", tok)
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != 204 {
		t.Fatalf("delete session: %v %v", r, err)
	}
	if s := get(); s != 401 {
		t.Errorf("after logout: %d", s)
	}
	resp, _ = http.Post(e.URL()+"/redfish/v1/SessionService/Sessions", "application/json",
		strings.NewReader(`{"UserName":"admin","Password":"nope"}`))
	if resp.StatusCode != 401 {
		t.Errorf("session with a wrong password: %d", resp.StatusCode)
	}
}

func TestPowerBootAndHook(t *testing.T) {
	var mu sync.Mutex
	var boots []string
	e := start(t, bmcemu.Config{Count: 1, OnBoot: func(m *bmcemu.Machine, dev string) {
		mu.Lock()
		boots = append(boots, m.ID+":"+dev)
		mu.Unlock()
	}})
	sys := e.URL() + "/redfish/v1/Systems/node-01"
	if r := do(t, "PATCH", sys, "admin", pw, `{"Boot":{"BootSourceOverrideTarget":"Pxe","BootSourceOverrideEnabled":"Once"}}`); r.status != 204 {
		t.Fatalf("patch boot: %+v", r)
	}
	if r := do(t, "PATCH", sys, "admin", pw, `{"Boot":{"BootSourceOverrideTarget":"Floppy"}}`); r.status != 400 {
		t.Errorf("unsupported target: %+v", r)
	}
	for _, rt := range []string{"On", "ForceRestart", "ForceOff", "GracefulRestart"} {
		if r := do(t, "POST", sys+"/Actions/ComputerSystem.Reset", "admin", pw, `{"ResetType":"`+rt+`"}`); r.status != 204 {
			t.Fatalf("reset %s: %+v", rt, r)
		}
	}
	if r := do(t, "POST", sys+"/Actions/ComputerSystem.Reset", "admin", pw, `{"ResetType":"Explode"}`); r.status != 400 {
		t.Errorf("bad reset type: %+v", r)
	}
	mu.Lock()
	got := strings.Join(boots, ",")
	mu.Unlock()
	// the Once override is used by the first boot only
	if got != "node-01:pxe,node-01:disk,node-01:disk" {
		t.Errorf("boots = %s", got)
	}
	if st := e.Machine("node-01").Status(); st.Power != "On" || st.BootEnabled != "Disabled" || st.Boots != 3 {
		t.Errorf("status %+v", st)
	}
}

func TestKnobs(t *testing.T) {
	e := start(t, bmcemu.Config{Count: 2})
	ctl := e.URL() + "/emulator/machines"
	if r := do(t, "PATCH", ctl+"/node-01", "", "", `{"dead": true}`); r.status != 200 || !strings.Contains(r.body, `"dead":true`) {
		t.Fatalf("patch knobs: %+v", r)
	}
	if _, err := http.Get(e.URL() + "/redfish/v1/Systems/node-01"); err == nil {
		t.Error("a dead BMC answered")
	}
	if r := do(t, "GET", e.URL()+"/redfish/v1/Systems/node-02", "admin", pw, ""); r.status != 200 {
		t.Errorf("node-02 is not dead: %d", r.status)
	}
	if r := do(t, "PATCH", ctl, "", "", `{"dead": false, "latency": "60ms", "reject_auth": true}`); r.status != 200 {
		t.Fatalf("patch all: %+v", r)
	}
	start := time.Now()
	if r := do(t, "GET", e.URL()+"/redfish/v1/Systems/node-01", "admin", pw, ""); r.status != 401 {
		t.Errorf("reject_auth: %d", r.status)
	}
	if d := time.Since(start); d < 60*time.Millisecond {
		t.Errorf("latency not applied: %s", d)
	}
	if r := do(t, "PATCH", ctl, "", "", `{"latency": "0s", "reject_auth": false, "failure_rate": 1}`); r.status != 200 {
		t.Fatal(r)
	}
	if r := do(t, "GET", e.URL()+"/redfish/v1/Systems/node-01", "admin", pw, ""); r.status != 503 {
		t.Errorf("failure_rate 1: %d", r.status)
	}
	for _, bad := range []string{`{"latency": "soon"}`, `{"failure_rate": 2}`, `{"power_state": "Maybe"}`, `nope`} {
		if r := do(t, "PATCH", ctl, "", "", bad); r.status != 400 {
			t.Errorf("PATCH %s: %d", bad, r.status)
		}
	}
	if r := do(t, "PATCH", ctl+"/node-02", "", "", `{"failure_rate": 0, "power_state": "On"}`); r.status != 200 || !e.Machine("node-02").PoweredOn() {
		t.Errorf("power_state On: %+v", r)
	}
	if r := do(t, "GET", ctl+"/node-99", "", "", ""); r.status != 404 {
		t.Errorf("unknown machine: %d", r.status)
	}
}

func TestNodesFile(t *testing.T) {
	e := start(t, bmcemu.Config{Count: 3, IPMI: true})
	path := filepath.Join(t.TempDir(), "nodes.json")
	if err := e.WriteNodesFile(path, "ipmi"); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("nodes file mode: %v %v", st, err)
	}
	var f bmcemu.NodesFile
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	ports := map[float64]bool{}
	macs := map[string]bool{}
	for _, n := range f.Nodes {
		if n.Driver != "ipmi" || n.DriverInfo["ipmi_password"] != pw || n.DriverInfo["ipmi_address"] != "127.0.0.1" {
			t.Errorf("node %+v", n)
		}
		ports[n.DriverInfo["ipmi_port"].(float64)] = true
		for _, p := range n.Ports {
			macs[p.Address] = true
		}
	}
	if len(f.Nodes) != 3 || len(ports) != 3 || len(macs) != 6 {
		t.Errorf("%d nodes, %d distinct IPMI ports, %d distinct MACs", len(f.Nodes), len(ports), len(macs))
	}
	rf, err := e.Nodes("redfish")
	if err != nil || rf.Nodes[1].DriverInfo["redfish_system_id"] != "/redfish/v1/Systems/node-02" ||
		rf.Nodes[1].DriverInfo["redfish_address"] != e.URL() || !rf.Nodes[1].Ports[0].PXEEnabled || rf.Nodes[1].Ports[1].PXEEnabled {
		t.Errorf("redfish nodes: %+v, %v", rf.Nodes[1], err)
	}
	if _, err := e.Nodes("snmp"); err == nil {
		t.Error("nodes file for snmp")
	}
}

// TestSerialConsole: a system advertises IPMI Serial-over-LAN in its
// SerialConsole, at its IPMI endpoint's port, only when that endpoint is on.
func TestSerialConsole(t *testing.T) {
	type proto struct {
		ServiceEnabled bool
		Port           int
	}
	read := func(e *bmcemu.Emulator) (sc struct{ IPMI, SSH, Telnet proto }) {
		var sys struct {
			SerialConsole struct{ IPMI, SSH, Telnet proto }
		}
		r := do(t, "GET", e.URL()+"/redfish/v1/Systems/node-02", "admin", pw, "")
		if err := json.Unmarshal([]byte(r.body), &sys); err != nil {
			t.Fatalf("%d %s: %v", r.status, r.body, err)
		}
		return sys.SerialConsole
	}
	on := start(t, bmcemu.Config{Count: 2, IPMI: true})
	sc := read(on)
	if want := on.Machine("node-02").Status().IPMIPort; !sc.IPMI.ServiceEnabled || sc.IPMI.Port != want || want == 0 {
		t.Errorf("with IPMI: SerialConsole.IPMI %+v, want enabled on port %d", sc.IPMI, want)
	}
	if sc.SSH.ServiceEnabled || sc.Telnet.ServiceEnabled {
		t.Errorf("with IPMI: SSH %+v, Telnet %+v", sc.SSH, sc.Telnet)
	}
	if sc := read(start(t, bmcemu.Config{Count: 2})); sc.IPMI.ServiceEnabled || sc.IPMI.Port != 0 {
		t.Errorf("without IPMI: SerialConsole.IPMI %+v", sc.IPMI)
	}
}
