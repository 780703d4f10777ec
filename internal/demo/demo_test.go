package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// running is a demo started by a test.
type running struct {
	Info
	out  *syncBuffer
	stop func() // stops the demo (once) and waits for it
	mu   sync.Mutex
	seen bytes.Buffer // every API response body, to grep for passwords
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// readyBound is how long a demo of n machines may take to start: a minute,
// and 100 ms to enroll each machine (10,000 took over a minute, 2,000 over
// 100 s at a load average of 30–50).
func readyBound(n int) time.Duration { return time.Minute + time.Duration(n)*100*time.Millisecond }

// startDemo runs the demo with n machines on free ports until the test ends.
func startDemo(t *testing.T, n int) *running { return startDemoWith(t, Config{Machines: n}) }

// startDemoWith runs the demo configured by cfg on free ports until the
// test ends.
func startDemoWith(t testing.TB, cfg Config) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{out: &syncBuffer{}}
	var stopOnce sync.Once
	ready := make(chan Info, 1)
	done := make(chan error, 1)
	cfg.Listen, cfg.Dir, cfg.Out, cfg.Ready = "127.0.0.1:0", t.TempDir(), r.out, func(i Info) { ready <- i }
	go func() { done <- Run(ctx, cfg) }()
	select {
	case r.Info = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("demo stopped before it was ready: %v\n%s", err, r.out)
	case <-time.After(readyBound(cfg.Machines)):
		cancel()
		t.Fatalf("demo not ready after %v\n%s", readyBound(cfg.Machines), r.out)
	}
	r.stop = func() {
		stopOnce.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("demo: %v", err)
				}
			case <-time.After(60 * time.Second):
				t.Error("demo did not stop within 60 s")
			}
		})
	}
	t.Cleanup(r.stop)
	return r
}

// api calls the demo's API and records the answer.
func (r *running) api(t *testing.T, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, r.API+path, rd)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r.mu.Lock()
	r.seen.Write(b)
	r.seen.WriteByte('\n')
	r.mu.Unlock()
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return resp.StatusCode, out
}

// logText is the demo's server log so far.
func (r *running) logText(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(r.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// waitState polls a node until provision_state is want and no target remains.
func (r *running) waitState(t *testing.T, node, want string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, n := r.api(t, "GET", "/v1/nodes/"+node, nil)
		if n["provision_state"] == want && n["target_provision_state"] == nil {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s: provision_state %v (target %v, last_error %v), want %s", node,
				n["provision_state"], n["target_provision_state"], n["last_error"], want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDemoWalkReachesActive starts `anvil demo` and runs the commands it
// prints, in order, with the real baremetal CLI: the node reaches active.
func TestDemoWalkReachesActive(t *testing.T) {
	testbin.Need(t, "baremetal", "python3-ironicclient")
	r := startDemo(t, 3)
	out := r.out.String()
	for _, want := range []string{"3 emulated machines", "export OS_ENDPOINT=" + r.API, "baremetal node manage node-01",
		"--instance-info image_source=" + r.ImageURL, "--instance-info image_checksum=" + r.ImageChecksum,
		`deploy_interface "direct"`} {
		if !strings.Contains(out, want) {
			t.Fatalf("instructions lack %q:\n%s", want, out)
		}
	}
	env := os.Environ()
	for _, line := range r.Commands {
		words := strings.Fields(line)
		switch words[0] {
		case "export":
			env = append(env, words[1:]...)
			continue
		case "curl":
			resp, err := http.Get(words[len(words)-1])
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(b), `"power_state":"Off"`) {
				t.Errorf("%s = %s, want the machine off", line, b)
			}
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, words[0], words[1:]...)
		cmd.Env = env
		b, err := cmd.CombinedOutput()
		cancel()
		t.Logf("$ %s\n%s", line, b)
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, b)
		}
		if strings.Contains(line, " properties") && !strings.Contains(string(b), `"cpus": 16`) {
			t.Errorf("inspection did not record 16 cpus: %s", b)
		}
	}
	n := r.waitState(t, "node-01", "active")
	if n["power_state"] != "power off" {
		t.Errorf("power_state %v after power off", n["power_state"])
	}
	if n["deploy_interface"] != "direct" {
		t.Errorf("deploy_interface %v, want direct", n["deploy_interface"])
	}
	disk, err := os.ReadFile(filepath.Join(r.DiskDir, "node-01.img"))
	if err != nil {
		t.Fatal(err)
	}
	image := Image()
	if len(disk) != DiskBytes || !bytes.Equal(disk[:len(image)], image) {
		t.Errorf("node-01's disk file (%d bytes) does not start with the demo image", len(disk))
	}
}

// TestDeployWritesTheImage: without the baremetal CLI, through the API, a
// node of the demo goes manageable → available → active with the demo's image
// on its disk file and the emulated machine running it from disk.
func TestDeployWritesTheImage(t *testing.T) {
	r := startDemo(t, 2)
	for _, step := range []struct{ target, want string }{
		{"manage", "manageable"}, {"provide", "available"}, {"active", "active"},
	} {
		code, body := r.api(t, "PUT", "/v1/nodes/node-02/states/provision", map[string]any{"target": step.target})
		if code != http.StatusAccepted {
			t.Fatalf("%s: HTTP %d: %v", step.target, code, body)
		}
		r.waitState(t, "node-02", step.want)
	}
	disk, err := os.ReadFile(filepath.Join(r.DiskDir, "node-02.img"))
	if err != nil {
		t.Fatal(err)
	}
	image := Image()
	if !bytes.Equal(disk[:len(image)], image) {
		t.Fatalf("node-02's disk file does not start with the demo image")
	}
	resp, err := http.Get(r.BMC + "/emulator/machines/node-02")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Power   string `json:"power_state"`
		Running string `json:"running"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&st)
	if st.Power != "On" || st.Running != "image" {
		t.Errorf("machine node-02: power %q, running %q; want On, running the image", st.Power, st.Running)
	}
}

// TestDeployByVirtualMedia: `anvil demo --virtual-media` without qemu
// enrols Metal3's way (redfish-virtual-media, deploy_iso) and a node goes
// manageable → available → active → available, each boot of the agent
// from the ISO the BMC inserted in the machine's virtual CD: the image on
// its disk, then cleaned away.
func TestDeployByVirtualMedia(t *testing.T) {
	r := startDemoWith(t, Config{Machines: 1, VirtualMedia: true})
	if out := r.out.String(); !strings.Contains(out, "from the deploy ISO its BMC inserts in its virtual CD") {
		t.Errorf("instructions do not say the agent boots by virtual media:\n%s", out)
	}
	_, n := r.api(t, "GET", "/v1/nodes/node-01", nil)
	if n["boot_interface"] != "redfish-virtual-media" {
		t.Fatalf("boot_interface %v, want redfish-virtual-media", n["boot_interface"])
	}
	machine := func() (power, running string, inserted bool) {
		t.Helper()
		resp, err := http.Get(r.BMC + "/emulator/machines/node-01")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st struct {
			Power   string `json:"power_state"`
			Running string `json:"running"`
			Media   struct {
				Inserted bool `json:"inserted"`
			} `json:"virtual_media"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&st)
		return st.Power, st.Running, st.Media.Inserted
	}
	disk := filepath.Join(r.DiskDir, "node-01.img")
	image := Image()
	for _, step := range []struct{ target, want string }{
		{"manage", "manageable"}, {"provide", "available"}, {"active", "active"}, {"deleted", "available"},
	} {
		code, body := r.api(t, "PUT", "/v1/nodes/node-01/states/provision", map[string]any{"target": step.target})
		if code != http.StatusAccepted {
			t.Fatalf("%s: HTTP %d: %v", step.target, code, body)
		}
		r.waitState(t, "node-01", step.want)
		b, err := os.ReadFile(disk)
		if err != nil {
			t.Fatal(err)
		}
		onDisk := bytes.Equal(b[:len(image)], image)
		power, running, inserted := machine()
		switch step.target {
		case "active":
			if !onDisk || power != "On" || running != "image" || inserted {
				t.Errorf("active: image on disk %v, machine %s running %q, media inserted %v", onDisk, power, running, inserted)
			}
		case "deleted":
			if onDisk || bytes.Count(b[:1<<20], []byte{0}) != 1<<20 || power != "Off" {
				t.Errorf("after undeploy: image on disk %v, machine %s", onDisk, power)
			}
		}
	}
	if !strings.Contains(r.logText(t), "serving the deploy ISO stand-in") {
		t.Errorf("the BMC never fetched the deploy ISO")
	}
}

// TestManageVerifiesTheBMC: manage with the right credentials reaches
// manageable; a wrong password, an unreachable BMC or a missing field go back
// to enroll with a last_error naming the cause — and the password appears in
// no response, log line or error.
func TestManageVerifiesTheBMC(t *testing.T) {
	r := startDemo(t, 2)
	nodes, _ := os.ReadFile(r.NodesFile)
	var nf struct {
		Nodes []struct {
			DriverInfo map[string]any `json:"driver_info"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(nodes, &nf); err != nil {
		t.Fatal(err)
	}
	good := nf.Nodes[0].DriverInfo
	secret := good["redfish_password"].(string)
	const wrong = "not-the-Right-pw-7"
	closed := testbin.RefusedAddr(t) // refused while the test runs
	variant := func(change func(map[string]any)) map[string]any {
		di := map[string]any{}
		for k, v := range good {
			di[k] = v
		}
		change(di)
		return di
	}
	cases := []struct {
		name string
		di   map[string]any
		want string // last_error part; "" = manageable
	}{
		{"right", good, ""},
		{"wrong-password", variant(func(di map[string]any) { di["redfish_password"] = wrong }), "refused the credentials of user \"admin\""},
		{"unreachable", variant(func(di map[string]any) { di["redfish_address"] = "http://" + closed }), "unreachable"},
		{"missing-address", variant(func(di map[string]any) { delete(di, "redfish_address") }), "Missing the following Redfish properties"},
		{"unknown-system", variant(func(di map[string]any) { di["redfish_system_id"] = "/redfish/v1/Systems/nope" }), "was not found"},
	}
	for _, c := range cases {
		if s, body := r.api(t, "POST", "/v1/nodes", map[string]any{"name": "v-" + c.name, "driver": "redfish",
			"driver_info": c.di, "deploy_interface": "fake"}); s != 201 {
			t.Fatalf("create %s: %d %v", c.name, s, body)
		}
		if s, body := r.api(t, "PUT", "/v1/nodes/v-"+c.name+"/states/provision", map[string]any{"target": "manage"}); s != 202 {
			t.Fatalf("manage %s: %d %v", c.name, s, body)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := "manageable"
			if c.want != "" {
				want = "enroll"
			}
			n := r.waitState(t, "v-"+c.name, want)
			le, _ := n["last_error"].(string)
			if c.want == "" && le != "" || c.want != "" && !strings.Contains(le, c.want) {
				t.Errorf("last_error %q, want %q", le, c.want)
			}
			if c.want != "" && !strings.HasPrefix(le, "Failed to ") {
				t.Errorf("last_error %q does not start like Ironic's", le)
			}
		})
	}
	// validate names what is missing, per interface, without contacting the BMC
	_, v := r.api(t, "GET", "/v1/nodes/v-missing-address/validate", nil)
	for _, iface := range []string{"power", "management", "inspect"} {
		res, _ := v[iface].(map[string]any)
		if res["result"] != false || !strings.Contains(fmt.Sprint(res["reason"]), "redfish_address") {
			t.Errorf("validate %s = %v", iface, res)
		}
	}
	_, v = r.api(t, "GET", "/v1/nodes/v-right/validate", nil)
	if res, _ := v["power"].(map[string]any); res["result"] != true {
		t.Errorf("validate power of a good node = %v", res)
	}
	for _, n := range []string{"v-right", "v-wrong-password", "v-unreachable"} {
		r.api(t, "GET", "/v1/nodes/"+n, nil)
		r.api(t, "GET", "/v1/nodes/"+n+"/history", nil)
	}
	r.api(t, "GET", "/v1/nodes?detail=true", nil)
	logs, _ := os.ReadFile(r.LogFile)
	for _, pw := range []string{secret, wrong} {
		r.mu.Lock()
		inResponses := strings.Contains(r.seen.String(), pw)
		r.mu.Unlock()
		if inResponses {
			t.Errorf("a response contains a password")
		}
		if strings.Contains(string(logs), pw) {
			t.Errorf("the server log contains a password")
		}
		if strings.Contains(r.out.String(), pw) {
			t.Errorf("the demo's output contains a password")
		}
	}
}

// TestManageIPMINode: a node of the ipmi hardware type (ipmitool power and
// management over go-ipmi) verifies against the emulator's IPMI endpoint.
func TestManageIPMINode(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan Info, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{Machines: 1, IPMI: true, Listen: "127.0.0.1:0", Dir: t.TempDir(), Out: io.Discard,
			Ready: func(i Info) { ready <- i }})
	}()
	var info Info
	select {
	case info = <-ready:
	case err := <-done:
		t.Fatalf("demo: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("demo not ready")
	}
	r := &running{Info: info, out: &syncBuffer{}}
	b, _ := os.ReadFile(info.NodesFile)
	var nf struct {
		Nodes []struct {
			DriverInfo map[string]any `json:"driver_info"`
			Extra      struct {
				BMC map[string]any `json:"bmc_emulator"`
			} `json:"extra"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(b, &nf); err != nil {
		t.Fatal(err)
	}
	n := nf.Nodes[0]
	di := map[string]any{"ipmi_address": n.Extra.BMC["ipmi_address"], "ipmi_port": n.Extra.BMC["ipmi_port"],
		"ipmi_username": n.DriverInfo["redfish_username"], "ipmi_password": n.DriverInfo["redfish_password"]}
	if s, body := r.api(t, "POST", "/v1/nodes", map[string]any{"name": "ipmi-1", "driver": "ipmi", "driver_info": di}); s != 201 {
		t.Fatalf("create: %d %v", s, body)
	}
	if s, body := r.api(t, "PUT", "/v1/nodes/ipmi-1/states/provision", map[string]any{"target": "manage"}); s != 202 {
		t.Fatalf("manage: %d %v", s, body)
	}
	node := r.waitState(t, "ipmi-1", "manageable")
	if node["power_interface"] != "ipmitool" || node["power_state"] != "power off" {
		t.Errorf("power_interface %v, power_state %v", node["power_interface"], node["power_state"])
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("demo: %v", err)
	}
}
