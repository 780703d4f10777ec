package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/ipmi"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/testbin"
	"github.com/anvil-metal/anvil/internal/testbin/ipmisim"
	"github.com/anvil-metal/anvil/pkg/events"
)

// diagnosis reads a node's diagnosis through the API.
func (s *served) diagnosis(node string) (*model.Diagnosis, string) {
	s.t.Helper()
	code, body := s.call("GET", "/v1/nodes/"+node+"/diagnosis", "")
	if code != 200 {
		s.t.Fatalf("GET diagnosis: %d %s", code, body)
	}
	var d model.Diagnosis
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		s.t.Fatal(err)
	}
	return &d, body
}

// evidenceHas reports whether a line of d's evidence contains want.
func evidenceHas(d *model.Diagnosis, want string) bool {
	for _, e := range d.Evidence {
		if strings.Contains(e, want) {
			return true
		}
	}
	return false
}

// TestDiagnosisBMCFaults: with OpenIPMI's ipmi_sim as the BMC, a node
// whose password the BMC refuses and one whose BMC does not answer fail
// verification (manage → enroll), as does a Redfish node (the BMC
// emulator) with a wrong password; each is diagnosed with its class, the
// failing IPMI call as evidence, and never the password.
func TestDiagnosisBMCFaults(t *testing.T) {
	const rightPW, wrongPW = "right-bmc-pw", "wrong-bmc-pw-7"
	port := ipmisim.Start(t, "diag-bmc", rightPW)
	dead := testbin.FreeUDPPort(t)
	s := serveWith(t, func(c *Config) {
		c.Interfaces = driver.Enablement{Interfaces: map[string][]string{"boot": {"fake", "ipxe"}}}
		c.IPMI = ipmi.Config{MinCommandInterval: -1, CommandRetryTimeout: 2 * time.Second, ExchangeTimeout: 300 * time.Millisecond}
	})
	// The watch stream carries each diagnosis' class (node.history).
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	stream, err := events.Subscribe(ctx, s.base, events.Filter{Types: []string{"node.history"}})
	if err != nil {
		t.Fatal(err)
	}
	streamed := make(chan string, 64)
	go func() {
		for e := range stream {
			if e.History != nil && e.History.EventType == "diagnosis" {
				streamed <- e.Node + " " + e.History.Event
			}
		}
	}()

	// The BMC emulator's Redfish endpoint, asked with a wrong password.
	emu, err := bmcemu.Start(t.Context(), bmcemu.Config{Count: 1, StateDir: filepath.Join(t.TempDir(), "emu"), Password: rightPW})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emu.Close() })
	rf, err := emu.Nodes(bmcemu.DriverRedfish)
	if err != nil {
		t.Fatal(err)
	}
	rfInfo := rf.Nodes[0].DriverInfo
	rfInfo["redfish_password"] = wrongPW
	rfJSON, _ := json.Marshal(rfInfo)
	rfHost := strings.TrimPrefix(emu.URL(), "http://")
	cases := []struct {
		name, password, body string
		class, evidence      string
	}{
		{"wrong password", wrongPW, ipmiNode(port, wrongPW), "bmc-credentials-refused", fmt.Sprintf("ipmi power status on 127.0.0.1:%d", port)},
		{"dead BMC", rightPW, ipmiNode(dead, rightPW), "bmc-unreachable", fmt.Sprintf("ipmi power status on 127.0.0.1:%d", dead)},
		{"redfish wrong password", wrongPW, `{"driver":"redfish","boot_interface":"fake","driver_info":` + string(rfJSON) + `}`,
			"bmc-credentials-refused", "redfish GET /redfish/v1/"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := s.do("POST", "/v1/nodes", tc.body, 201)["uuid"].(string)
			if code, _ := s.call("GET", "/v1/nodes/"+node+"/diagnosis", ""); code != 404 {
				t.Fatalf("diagnosis before any failure: %d, want 404", code)
			}
			s.do("PUT", "/v1/nodes/"+node+"/states/provision", `{"target":"manage"}`, 202)
			s.wait(node, "enroll")
			d, body := s.diagnosis(node)
			if d.Class != tc.class || !evidenceHas(d, tc.evidence) {
				t.Fatalf("class %q, evidence %q; want %s with %q", d.Class, d.Evidence, tc.class, tc.evidence)
			}
			if tc.name == "redfish wrong password" && !evidenceHas(d, rfHost) {
				t.Errorf("evidence %q does not name the BMC %s", d.Evidence, rfHost)
			}
			if d.Hint == "" || d.LastError == "" || len(d.BMCCalls) == 0 || d.FromState != "verifying" {
				t.Errorf("hint %q, last_error %q, calls %+v, from %q", d.Hint, d.LastError, d.BMCCalls, d.FromState)
			}
			if strings.Contains(body, tc.password) {
				t.Fatalf("the BMC password is in the diagnosis: %s", body)
			}
			n := s.do("GET", "/v1/nodes/"+node+"/history", "", 200)
			if !strings.Contains(fmt.Sprint(n), tc.class) {
				t.Errorf("no history entry carries the class %s: %v", tc.class, n)
			}
			select {
			case got := <-streamed:
				if !strings.HasPrefix(got, node+" Diagnosis: "+tc.class+": ") {
					t.Errorf("streamed %q, want node %s's diagnosis %s", got, node, tc.class)
				}
			case <-time.After(testTimeout):
				t.Error("no node.history event carried the diagnosis")
			}

			// The CLI: the class, what to do and the evidence; -f json
			// is the document.
			env := map[string]string{"OS_ENDPOINT": s.base}
			out, errOut, err := runCLI(t, env, "node", "diagnose", node)
			if err != nil || !strings.Contains(out, "Class:       "+tc.class) || !strings.Contains(out, "What to do:  "+d.Hint) ||
				!strings.Contains(out, tc.evidence) || strings.Contains(out, tc.password) {
				t.Errorf("anvil node diagnose: %v %s\n%s", err, errOut, out)
			}
			out, _, err = runCLI(t, env, "node", "diagnose", node, "-f", "json")
			var got model.Diagnosis
			if err != nil || json.Unmarshal([]byte(out), &got) != nil || got.Class != tc.class {
				t.Errorf("anvil node diagnose -f json: %v\n%s", err, out)
			}
		})
	}
	env := map[string]string{"OS_ENDPOINT": s.base}
	fresh := s.do("POST", "/v1/nodes", `{"driver":"fake-hardware"}`, 201)["uuid"].(string)
	if _, _, err := runCLI(t, env, "node", "diagnose", fresh); err == nil || !strings.Contains(err.Error(), "has no diagnosis") || strings.Contains(strings.TrimSpace(err.Error()), "\n") {
		t.Errorf("a node that never failed: %v, want one line saying it has no diagnosis", err)
	}
	if _, _, err := runCLI(t, env, "node", "diagnose", "no-such-node"); err == nil || !strings.Contains(err.Error(), "could not be found") {
		t.Errorf("an unknown node: %v", err)
	}
}

// ipmiNode is a node of the ipmi driver on the BMC at 127.0.0.1:port.
func ipmiNode(port int, password string) string {
	return fmt.Sprintf(`{"driver":"ipmi","boot_interface":"fake","driver_info":{"ipmi_address":"127.0.0.1","ipmi_port":%d,"ipmi_username":%q,"ipmi_password":%q}}`,
		port, ipmisim.User, password)
}

// TestDiagnosisAuthz: the diagnosis (which holds the console's output) is
// guarded as the console log: the system and the owner's members read
// it; the owner's readers and the lessee are refused; another project
// does not see the node.
func TestDiagnosisAuthz(t *testing.T) {
	tok, call := policyServer(t)
	system := tok("", "admin")
	st, body := call(system, "POST", "/v1/nodes", `{"driver": "fake-hardware", "name": "d", "owner": "p1", "lessee": "p2",
		"driver_info": {"fake_fail": "verify"}}`)
	if st != 201 {
		t.Fatalf("create: %d %s", st, body)
	}
	if st, body := call(system, "PUT", "/v1/nodes/d/states/provision", `{"target": "manage"}`); st != 202 {
		t.Fatalf("manage: %d %s", st, body)
	}
	waitFor(t, "the diagnosis of the failed verify", func() bool {
		st, _ := call(system, "GET", "/v1/nodes/d/diagnosis", "")
		return st == 200
	})
	for _, c := range []struct {
		who, authz string
		want       int
	}{
		{"system admin", system, 200},
		{"owner's member", tok("p1", "member"), 200},
		{"owner's reader", tok("p1", "reader"), 403},
		{"lessee's member", tok("p2", "member"), 403},
		{"lessee's reader", tok("p2", "reader"), 403},
		{"another project", tok("p3", "admin"), 404},
	} {
		st, body := call(c.authz, "GET", "/v1/nodes/d/diagnosis", "")
		if st != c.want {
			t.Errorf("%s: %d %s, want %d", c.who, st, body, c.want)
		}
		if st == 200 && !strings.Contains(body, `"class"`) {
			t.Errorf("%s: %s", c.who, body)
		}
	}
	if st, body := call(system, "GET", "/v1/nodes/d/diagnosis?x=1", ""); st != 400 {
		t.Errorf("an unknown query parameter: %d %s, want 400", st, body)
	}
}

// TestDiagnosisNetworkBoot: with the real boot service (ipxe boot
// interface), a deploy kernel URL that answers 404 is boot-file-missing;
// deploys whose machine never shows up, or fetches its boot script and
// stops, or fetches kernel and ramdisk but never calls back, time out and
// are told apart by what the boot endpoint saw (the test plays the
// firmware with plain HTTP GETs).
func TestDiagnosisNetworkBoot(t *testing.T) {
	kernel, ramdisk := []byte("a kernel"), []byte("a ramdisk")
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/vmlinuz":
			w.Write(kernel)
		case "/initrd":
			w.Write(ramdisk)
		default:
			http.NotFound(w, r)
		}
	}))
	defer files.Close()
	s := serveWith(t, func(c *Config) {
		c.Network = BootConfig{HTTPURL: "http://127.0.0.1:1/boot", Root: t.TempDir(), PublicEndpoint: "http://127.0.0.1:1"}
		c.Conductor.DeployCallbackTimeout = 5 * time.Second
		c.Conductor.CheckProvisionStateInterval = 300 * time.Millisecond
	})
	enroll := func(name, mac, kernelURL string) {
		n := s.do("POST", "/v1/nodes", `{"name":"`+name+`","driver":"fake-hardware","boot_interface":"ipxe","deploy_interface":"direct",
			"automated_clean":false,"driver_info":{"deploy_kernel":"`+kernelURL+`","deploy_ramdisk":"`+files.URL+`/initrd"},
			"instance_info":{"image_source":"http://127.0.0.1:1/img","image_checksum":"`+strings.Repeat("ab", 32)+`"}}`, 201)
		s.do("POST", "/v1/ports", `{"node_uuid":"`+n["uuid"].(string)+`","address":"`+mac+`"}`, 201)
		s.do("PUT", "/v1/nodes/"+name+"/states/provision", `{"target":"manage"}`, 202)
		s.wait(name, "manageable")
		s.do("PUT", "/v1/nodes/"+name+"/states/provision", `{"target":"provide"}`, 202)
		s.wait(name, "available")
		s.do("PUT", "/v1/nodes/"+name+"/states/provision", `{"target":"active"}`, 202)
	}
	get := func(url string) string {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %s", url, resp.Status)
		}
		return string(b)
	}
	// The script names kernel and ramdisk under the advertised HTTP URL;
	// the boot endpoint is the API listener's /boot.
	local := func(u string) string { return strings.Replace(u, "http://127.0.0.1:1", s.base, 1) }

	enroll("boot-404", "52:54:00:b0:00:01", files.URL+"/missing-kernel")
	enroll("no-dhcp", "52:54:00:b0:00:02", files.URL+"/vmlinuz")
	enroll("script-only", "52:54:00:b0:00:03", files.URL+"/vmlinuz")
	enroll("ramdisk-silent", "52:54:00:b0:00:04", files.URL+"/vmlinuz")
	waiting := func(node string) {
		waitFor(t, node+" waiting for its agent", func() bool {
			return s.do("GET", "/v1/nodes/"+node, "", 200)["provision_state"] == "wait call-back"
		})
	}
	waiting("script-only")
	get(s.base + "/boot/mac/52-54-00-b0-00-03")
	waiting("ramdisk-silent")
	script := get(s.base + "/boot/mac/52-54-00-b0-00-04")
	for _, l := range strings.Split(script, "\n") {
		if f := strings.Fields(l); len(f) > 1 && (f[0] == "kernel" || f[0] == "initrd") {
			get(local(f[1]))
		}
	}

	cases := []struct{ node, state, class, evidence string }{
		{"boot-404", "deploy failed", "boot-file-missing", files.URL + "/missing-kernel"},
		{"no-dhcp", "deploy failed", "no-network-boot", "saw nothing from the node's MACs 52:54:00:b0:00:02"},
		{"script-only", "deploy failed", "kernel-not-fetched", "fetched the boot script /mac/52:54:00:b0:00:03"},
		{"ramdisk-silent", "deploy failed", "callback-timeout", "the ramdisk was fetched, but its agent never looked up"},
	}
	for _, c := range cases {
		s.wait(c.node, c.state)
		d, _ := s.diagnosis(c.node)
		if d.Class != c.class || !evidenceHas(d, c.evidence) {
			t.Errorf("%s: class %q, evidence %q; want %s with %q (last_error %q, boot %+v)", c.node, d.Class, d.Evidence, c.class, c.evidence, d.LastError, d.Boot)
		}
	}
}
