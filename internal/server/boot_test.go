package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/driver/pxe"
	"github.com/anvil-metal/anvil/internal/ipa"
)

// recorder is a boot service that records what it is asked to publish.
type recorder struct {
	mu    sync.Mutex
	calls []string
	last  pxe.Ramdisk
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, s)
}

func (r *recorder) PublishRamdisk(_ context.Context, _ string, macs []string, rd pxe.Ramdisk) error {
	r.mu.Lock()
	r.last = rd
	r.mu.Unlock()
	r.add("ramdisk " + strings.Join(macs, ","))
	return nil
}

func (r *recorder) PublishLocalBoot(_ context.Context, _ string, macs []string) error {
	r.add("local " + strings.Join(macs, ","))
	return nil
}

func (r *recorder) Withdraw(context.Context, string) error { r.add("withdraw"); return nil }

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// fakeAgent answers the agent command API: every command is accepted
// RUNNING and reported SUCCEEDED when polled.
func fakeAgent(t *testing.T) string { return fakeAgentEnding(t, ipa.StatusSucceeded) }

// fakeAgentEnding is fakeAgent whose commands end with status final.
func fakeAgentEnding(t *testing.T, final string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res := ipa.CommandResult{ID: "c1", Status: ipa.StatusRunning}
		if r.Method == http.MethodPost {
			var req ipa.CommandRequest
			_ = json.NewDecoder(r.Body).Decode(&req)
			res.ID, res.Name = req.Name, req.Name
		} else {
			res.ID = strings.TrimPrefix(r.URL.Path, "/v1/commands/")
			res.Name, res.Status = res.ID, final
			if final != ipa.StatusSucceeded {
				res.Error = &ipa.RESTError{Message: "disk on fire"}
			}
		}
		_ = json.NewEncoder(w).Encode(res)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// raw sends a request and returns its status and body.
func (s *served) raw(method, path, body string) (int, map[string]any) {
	s.t.Helper()
	req, _ := http.NewRequest(method, s.base+path, strings.NewReader(body))
	req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := map[string]any{}
	_ = json.Unmarshal(b, &out)
	return resp.StatusCode, out
}

// agentRun plays the agent the node booted: it looks itself up by MAC and
// heartbeats until the node reaches want.
func (s *served) agentRun(node, mac, agentURL, want string) {
	s.t.Helper()
	token := ""
	deadline := time.Now().Add(testTimeout)
	for time.Now().Before(deadline) {
		n := s.do("GET", "/v1/nodes/"+node, "", 200)
		switch st := n["provision_state"]; {
		case st == want:
			return
		case strings.HasSuffix(st.(string), "failed"):
			s.t.Fatalf("node %s: %v (%v)", node, st, n["last_error"])
		}
		if token == "" {
			if code, lk := s.raw("GET", "/v1/lookup?addresses="+mac, ""); code == 200 {
				token, _ = lk["config"].(map[string]any)["agent_token"].(string)
			}
		}
		if token != "" {
			s.raw("POST", "/v1/heartbeat/"+node, `{"callback_url":"`+agentURL+`","agent_token":"`+token+`","agent_version":"test"}`)
		}
		time.Sleep(20 * time.Millisecond) // an agent's heartbeat interval, not synchronisation
	}
	s.t.Fatalf("node %s did not reach %s", node, want)
}

// TestNetworkBootCycle: a node with the ipxe boot interface and the direct
// deploy has its ramdisk published for cleaning, deploy and rescue, a
// local-boot script once deployed or unrescued, and everything withdrawn
// after cleaning, once the rescue ramdisk is finalized, on undeploy
// and on delete; a deploy without deploy_kernel is refused before anything
// happens, with Ironic's text.
func TestNetworkBootCycle(t *testing.T) {
	pub := &recorder{}
	s := serveWith(t, func(c *Config) { c.Boot, c.KernelParams = pub, "console=ttyS0" })
	agentURL := fakeAgent(t)
	const mac = "52:54:00:12:34:56"
	n := s.do("POST", "/v1/nodes", `{"name":"pxe-1","driver":"fake-hardware","boot_interface":"ipxe","deploy_interface":"direct",
		"rescue_interface":"agent","driver_info":{"deploy_kernel":"http://127.0.0.1/k","deploy_ramdisk":"http://127.0.0.1/r",
		"rescue_kernel":"http://127.0.0.1/rk","rescue_ramdisk":"http://127.0.0.1/rr"}}`, 201)
	noPort := "Node " + n["uuid"].(string) + " does not have any port associated with it"
	v := s.do("GET", "/v1/nodes/pxe-1/validate", "", 200)
	if r, _ := v["boot"].(map[string]any); r["result"] != false || r["reason"] != noPort {
		t.Errorf("boot validation without ports: %v, want %q", r, noPort)
	}
	s.do("POST", "/v1/ports", `{"node_uuid":"`+n["uuid"].(string)+`","address":"`+mac+`"}`, 201)
	v = s.do("GET", "/v1/nodes/pxe-1/validate", "", 200)
	if r, _ := v["boot"].(map[string]any); r["result"] != true {
		t.Errorf("boot validation with a port: %v", r)
	}
	s.do("PUT", "/v1/nodes/pxe-1/states/provision", `{"target":"manage"}`, 202)
	s.wait("pxe-1", "manageable")

	s.do("PUT", "/v1/nodes/pxe-1/states/provision", `{"target":"provide"}`, 202)
	s.agentRun("pxe-1", mac, agentURL, "available")
	want := []string{"ramdisk " + mac, "withdraw"}
	if got := pub.seen(); !slices.Equal(got, want) {
		t.Fatalf("after cleaning: %v, want %v", got, want)
	}
	if pub.last.Kernel.Source != "http://127.0.0.1/k" || pub.last.KernelParams != "console=ttyS0" {
		t.Errorf("published %+v", pub.last)
	}

	// No image: refused 400 before anything is published or powered.
	code, body := s.raw("PUT", "/v1/nodes/pxe-1/states/provision", `{"target":"active"}`)
	if em, _ := body["error_message"].(string); code != 400 || !strings.Contains(em, "Failed to validate deploy or power info for node") {
		t.Fatalf("deploy without image: %d %v", code, body)
	}
	s.do("PATCH", "/v1/nodes/pxe-1", `[{"op":"add","path":"/instance_info/image_source","value":"http://127.0.0.1/img"},
		{"op":"add","path":"/instance_info/image_checksum","value":"`+strings.Repeat("ab", 32)+`"},
		{"op":"remove","path":"/driver_info/deploy_kernel"}]`, 200)
	code, body = s.raw("PUT", "/v1/nodes/pxe-1/states/provision", `{"target":"active"}`)
	var fault struct{ Faultstring string }
	_ = json.Unmarshal([]byte(body["error_message"].(string)), &fault)
	wantMsg := "Failed to validate deploy or power info for node " + n["uuid"].(string) +
		": Cannot validate PXE bootloader. Some parameters were missing in node's driver_info and configuration. Missing are: ['deploy_kernel']"
	if code != 400 || fault.Faultstring != wantMsg {
		t.Fatalf("deploy without deploy_kernel: %d %q\nwant %q", code, fault.Faultstring, wantMsg)
	}
	if got := s.do("GET", "/v1/nodes/pxe-1", "", 200); got["provision_state"] != "available" || len(pub.seen()) != 2 {
		t.Fatalf("refused deploy changed something: %v, %v", got["provision_state"], pub.seen())
	}

	s.do("PATCH", "/v1/nodes/pxe-1", `[{"op":"add","path":"/driver_info/deploy_kernel","value":"http://127.0.0.1/k"}]`, 200)
	s.do("PUT", "/v1/nodes/pxe-1/states/provision", `{"target":"active"}`, 202)
	s.agentRun("pxe-1", mac, agentURL, "active")
	want = append(want, "ramdisk "+mac, "local "+mac)
	if got := pub.seen(); !slices.Equal(got, want) {
		t.Fatalf("after deploy: %v, want %v", got, want)
	}

	s.do("PUT", "/v1/nodes/pxe-1/states/provision", `{"target":"rescue","rescue_password":"pw"}`, 202)
	s.agentRun("pxe-1", mac, agentURL, "rescue")
	if pub.last.Kernel.Source != "http://127.0.0.1/rk" || pub.last.Ramdisk.Source != "http://127.0.0.1/rr" {
		t.Errorf("rescue published %+v", pub.last)
	}
	// finalize_rescue done: the rescue ramdisk's script is withdrawn (Ironic's
	// _finalize_rescue → clean_up_ramdisk).
	want = append(want, "ramdisk "+mac, "withdraw")
	if got := pub.seen(); !slices.Equal(got, want) {
		t.Fatalf("after rescue: %v, want %v", got, want)
	}
	s.do("PUT", "/v1/nodes/pxe-1/states/provision", `{"target":"unrescue"}`, 202)
	s.wait("pxe-1", "active")
	want = append(want, "local "+mac)
	if got := pub.seen(); !slices.Equal(got, want) {
		t.Fatalf("after rescue and unrescue: %v, want %v", got, want)
	}

	s.do("PUT", "/v1/nodes/pxe-1/states/provision", `{"target":"deleted"}`, 202)
	s.agentRun("pxe-1", mac, agentURL, "available")
	want = append(want, "withdraw", "ramdisk "+mac, "withdraw")
	if got := pub.seen(); !slices.Equal(got, want) {
		t.Fatalf("after undeploy: %v, want %v", got, want)
	}

	s.do("DELETE", "/v1/nodes/pxe-1", "", 204)
	want = append(want, "withdraw")
	if got := pub.seen(); !slices.Equal(got, want) {
		t.Fatalf("after delete: %v, want %v", got, want)
	}
}

// TestNetworkBootNotConfigured: without a boot service the ipxe interface
// fails validation with a message saying what to do.
func TestNetworkBootNotConfigured(t *testing.T) {
	s := serve(t)
	s.do("POST", "/v1/nodes", `{"name":"n","driver":"ipmi","driver_info":{"deploy_kernel":"k","deploy_ramdisk":"r"}}`, 201)
	v := s.do("GET", "/v1/nodes/n/validate", "", 200)
	boot, _ := v["boot"].(map[string]any)
	if boot["result"] != false || !strings.Contains(boot["reason"].(string), "network boot is not configured: start anvil serve with --http-url") {
		t.Errorf("boot validation %v", boot)
	}
	if d, _ := v["deploy"].(map[string]any); d["result"] != false {
		t.Errorf("deploy validation %v (the direct deploy validates the boot interface)", d)
	}
	// The no-* interfaces say what Ironic's say (recorded from Ironic 21.4).
	for _, kind := range []string{"bios", "console", "raid"} {
		r, _ := v[kind].(map[string]any)
		if want := "Driver ipmi does not support " + kind + " (disabled or not implemented)."; r["result"] != false || r["reason"] != want {
			t.Errorf("%s validation %v, want %q", kind, r, want)
		}
	}
}

// TestDeployRefusedWithoutPort: a network-booted deploy of a node without
// ports is refused 400 before anything happens (Ironic's boot validation).
func TestDeployRefusedWithoutPort(t *testing.T) {
	pub := &recorder{}
	s := serveWith(t, func(c *Config) { c.Boot = pub })
	n := s.do("POST", "/v1/nodes", `{"name":"np","driver":"fake-hardware","boot_interface":"ipxe","deploy_interface":"direct",
		"automated_clean":false,"driver_info":{"deploy_kernel":"k","deploy_ramdisk":"r"},
		"instance_info":{"image_source":"http://127.0.0.1/img","image_checksum":"`+strings.Repeat("ab", 32)+`"}}`, 201)
	s.do("PUT", "/v1/nodes/np/states/provision", `{"target":"manage"}`, 202)
	s.wait("np", "manageable")
	s.do("PUT", "/v1/nodes/np/states/provision", `{"target":"provide"}`, 202)
	s.wait("np", "available")
	code, body := s.raw("PUT", "/v1/nodes/np/states/provision", `{"target":"active"}`)
	var fault struct{ Faultstring string }
	_ = json.Unmarshal([]byte(body["error_message"].(string)), &fault)
	want := "Failed to validate deploy or power info for node " + n["uuid"].(string) + ": Node " + n["uuid"].(string) + " does not have any port associated with it"
	if code != 400 || fault.Faultstring != want {
		t.Fatalf("%d %q, want 400 %q", code, fault.Faultstring, want)
	}
	if got := pub.seen(); len(got) != 0 {
		t.Errorf("published %v", got)
	}
}

// TestBootImageUnreachable: with the real boot service, a deploy kernel URL
// that answers 404 fails the deploy (nothing is booted) with a last_error
// naming the URL, its password masked.
func TestBootImageUnreachable(t *testing.T) {
	files := httptest.NewServer(http.NotFoundHandler())
	defer files.Close()
	secret := "kernel-url-secret-7731"
	kernel := strings.Replace(files.URL, "http://", "http://user:"+secret+"@", 1) + "/vmlinuz"
	s := serveWith(t, func(c *Config) {
		c.Network = BootConfig{HTTPURL: "http://127.0.0.1:1/boot", Root: t.TempDir(), PublicEndpoint: "http://127.0.0.1:1"}
	})
	n := s.do("POST", "/v1/nodes", `{"name":"pxe-404","driver":"fake-hardware","boot_interface":"ipxe","deploy_interface":"direct",
		"driver_info":{"deploy_kernel":"`+kernel+`","deploy_ramdisk":"`+files.URL+`/initrd"},
		"instance_info":{"image_source":"http://127.0.0.1:1/img","image_checksum":"`+strings.Repeat("ab", 32)+`"}}`, 201)
	s.do("POST", "/v1/ports", `{"node_uuid":"`+n["uuid"].(string)+`","address":"52:54:00:00:04:04"}`, 201)
	s.do("PUT", "/v1/nodes/pxe-404/states/provision", `{"target":"manage"}`, 202)
	s.wait("pxe-404", "manageable")
	s.do("PATCH", "/v1/nodes/pxe-404", `[{"op":"add","path":"/automated_clean","value":false}]`, 200)
	s.do("PUT", "/v1/nodes/pxe-404/states/provision", `{"target":"provide"}`, 202)
	s.wait("pxe-404", "available")
	s.do("PUT", "/v1/nodes/pxe-404/states/provision", `{"target":"active"}`, 202)
	s.wait("pxe-404", "deploy failed")
	got := s.do("GET", "/v1/nodes/pxe-404", "", 200)
	le, _ := got["last_error"].(string)
	masked := strings.Replace(kernel, secret, "***", 1)
	if !strings.Contains(le, masked) || !strings.Contains(le, "404") || strings.Contains(le, secret) {
		t.Errorf("last_error = %q, want the masked URL %q and its 404", le, masked)
	}
	if got["power_state"] == "power on" {
		t.Errorf("the node was powered on although its ramdisk could not be published")
	}
}
