package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/anvil-metal/anvil/internal/driver/redfish"
)

// isoRecorder is an ISO publisher that records what it is asked.
type isoRecorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *isoRecorder) PublishISO(_ context.Context, node string, rd redfish.ISORamdisk) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, "iso "+rd.Kernel+" "+rd.KernelParams)
	return "http://127.0.0.1:6385/boot/n/T/boot.iso", nil
}

func (r *isoRecorder) Withdraw(context.Context, string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, "withdraw")
	return nil
}

func (r *isoRecorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// mediaBMC is a Redfish BMC with one system and one virtual CD that logs
// inserts and ejects; refuse makes InsertMedia answer 400 with a message.
type mediaBMC struct {
	mu       sync.Mutex
	image    string
	log      []string
	refuse   bool
	override string
}

func (b *mediaBMC) serve(t *testing.T) string {
	const sys, cd = "/redfish/v1/Systems/1", "/redfish/v1/Systems/1/VirtualMedia/Cd"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		defer b.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		var out any
		switch r.Method + " " + strings.TrimSuffix(r.URL.Path, "/") {
		case "GET /redfish/v1":
			out = map[string]any{"Systems": map[string]any{"@odata.id": "/redfish/v1/Systems"}}
		case "GET " + sys:
			out = map[string]any{"@odata.id": sys, "Id": "1", "PowerState": "On",
				"VirtualMedia": map[string]any{"@odata.id": sys + "/VirtualMedia"}}
		case "GET " + sys + "/VirtualMedia":
			out = map[string]any{"Members": []any{map[string]any{"@odata.id": cd}}}
		case "GET " + cd:
			out = map[string]any{"@odata.id": cd, "Id": "Cd", "MediaTypes": []string{"CD", "DVD"}, "Image": b.image, "Inserted": b.image != "",
				"Actions": map[string]any{"#VirtualMedia.InsertMedia": map[string]any{"target": cd + "/Actions/VirtualMedia.InsertMedia"},
					"#VirtualMedia.EjectMedia": map[string]any{"target": cd + "/Actions/VirtualMedia.EjectMedia"}}}
		case "POST " + cd + "/Actions/VirtualMedia.InsertMedia":
			if b.refuse {
				w.WriteHeader(http.StatusBadRequest)
				out = map[string]any{"error": map[string]any{"message": "image not reachable"}}
				break
			}
			var req struct{ Image string }
			json.NewDecoder(r.Body).Decode(&req)
			b.image = req.Image
			b.log = append(b.log, "insert "+req.Image)
			w.WriteHeader(http.StatusNoContent)
			return
		case "POST " + cd + "/Actions/VirtualMedia.EjectMedia":
			b.image = ""
			b.log = append(b.log, "eject")
			w.WriteHeader(http.StatusNoContent)
			return
		default:
			w.WriteHeader(http.StatusNotFound)
			out = map[string]any{"error": map[string]any{"message": "no " + r.URL.Path}}
		}
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func (b *mediaBMC) seen() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.log)
}

// TestVirtualMediaBootCycle: a node with the redfish-virtual-media boot
// interface and the direct deploy gets its ISO built and inserted for
// cleaning, deploy and rescue, ejected and withdrawn after each; a BMC refusing the
// image fails cleaning with its reason in last_error, the ISO withdrawn.
func TestVirtualMediaBootCycle(t *testing.T) {
	isos := &isoRecorder{}
	s := serveWith(t, func(c *Config) { c.ISO, c.KernelParams = isos, "console=ttyS0" })
	bmc := &mediaBMC{}
	addr := bmc.serve(t)
	agentURL := fakeAgent(t)
	const mac = "52:54:00:12:34:57"
	create := func(name string) string {
		n := s.do("POST", "/v1/nodes", `{"name":"`+name+`","driver":"fake-hardware","boot_interface":"redfish-virtual-media",
			"deploy_interface":"direct","driver_info":{"redfish_address":"`+addr+`","redfish_system_id":"/redfish/v1/Systems/1",
			"redfish_username":"admin","redfish_password":"pw-secret-55","deploy_kernel":"http://127.0.0.1/k","deploy_ramdisk":"http://127.0.0.1/r",
			"rescue_kernel":"http://127.0.0.1/rk","rescue_ramdisk":"http://127.0.0.1/rr"},"rescue_interface":"agent",
			"instance_info":{"image_source":"http://127.0.0.1/img","image_checksum":"`+strings.Repeat("ab", 32)+`"}}`, 201)
		s.do("PUT", "/v1/nodes/"+name+"/states/provision", `{"target":"manage"}`, 202)
		s.wait(name, "manageable")
		return n["uuid"].(string)
	}
	uuid := create("vm-1")
	s.do("POST", "/v1/ports", `{"node_uuid":"`+uuid+`","address":"`+mac+`"}`, 201)
	if v := s.do("GET", "/v1/nodes/vm-1/validate", "", 200); v["boot"].(map[string]any)["result"] != true {
		t.Fatalf("boot validation: %v", v["boot"])
	}
	s.do("PUT", "/v1/nodes/vm-1/states/provision", `{"target":"provide"}`, 202)
	s.agentRun("vm-1", mac, agentURL, "available")
	iso := "http://127.0.0.1:6385/boot/n/T/boot.iso"
	wantISO := []string{"iso http://127.0.0.1/k console=ttyS0", "withdraw"}
	wantBMC := []string{"insert " + iso, "eject"}
	if got := isos.seen(); !slices.Equal(got, wantISO) {
		t.Errorf("after cleaning, ISOs: %v, want %v", got, wantISO)
	}
	if got := bmc.seen(); !slices.Equal(got, wantBMC) {
		t.Errorf("after cleaning, BMC: %v, want %v", got, wantBMC)
	}
	s.do("PUT", "/v1/nodes/vm-1/states/provision", `{"target":"active"}`, 202)
	s.agentRun("vm-1", mac, agentURL, "active")
	wantISO, wantBMC = append(wantISO, wantISO...), append(wantBMC, wantBMC...)
	if got := isos.seen(); !slices.Equal(got, wantISO) {
		t.Errorf("after deploy, ISOs: %v, want %v", got, wantISO)
	}
	if got := bmc.seen(); !slices.Equal(got, wantBMC) {
		t.Errorf("after deploy, BMC: %v, want %v", got, wantBMC)
	}

	// Rescue: the rescue ISO is inserted, then ejected and withdrawn once
	// finalize_rescue is done (Ironic's _finalize_rescue →
	// clean_up_ramdisk), before any unrescue.
	s.do("PUT", "/v1/nodes/vm-1/states/provision", `{"target":"rescue","rescue_password":"pw"}`, 202)
	s.agentRun("vm-1", mac, agentURL, "rescue")
	wantISO = append(wantISO, "iso http://127.0.0.1/rk console=ttyS0", "withdraw")
	wantBMC = append(wantBMC, "insert "+iso, "eject")
	if got := isos.seen(); !slices.Equal(got, wantISO) {
		t.Errorf("after rescue, ISOs: %v, want %v", got, wantISO)
	}
	if got := bmc.seen(); !slices.Equal(got, wantBMC) {
		t.Errorf("after rescue, BMC: %v, want %v", got, wantBMC)
	}
	s.do("PUT", "/v1/nodes/vm-1/states/provision", `{"target":"unrescue"}`, 202)
	s.wait("vm-1", "active")
	wantISO = append(wantISO, "withdraw") // PrepareInstance: nothing inserted, nothing to eject
	if got := isos.seen(); !slices.Equal(got, wantISO) {
		t.Errorf("after unrescue, ISOs: %v, want %v", got, wantISO)
	}
	if got := bmc.seen(); !slices.Equal(got, wantBMC) {
		t.Errorf("after unrescue, BMC: %v, want %v", got, wantBMC)
	}

	// Undeploy (cleaning through the agent), then a manual clean aborted in
	// clean wait: the ISO is ejected and withdrawn (Ironic's
	// do_node_clean_abort → tear_down_cleaning).
	s.do("PUT", "/v1/nodes/vm-1/states/provision", `{"target":"deleted"}`, 202)
	s.agentRun("vm-1", mac, agentURL, "available")
	s.wait("vm-1", "available")
	s.do("PUT", "/v1/nodes/vm-1/states/provision", `{"target":"manage"}`, 202)
	s.wait("vm-1", "manageable")
	wantISO = append(wantISO, "withdraw", "iso http://127.0.0.1/k console=ttyS0", "withdraw")
	wantBMC = append(wantBMC, "insert "+iso, "eject")
	s.do("PUT", "/v1/nodes/vm-1/states/provision", `{"target":"clean","clean_steps":[{"interface":"deploy","step":"erase_devices_metadata"}]}`, 202)
	s.waitParked("vm-1", "clean wait")
	s.do("PUT", "/v1/nodes/vm-1/states/provision", `{"target":"abort"}`, 202)
	s.wait("vm-1", "clean failed")
	wantISO = append(wantISO, "iso http://127.0.0.1/k console=ttyS0", "withdraw")
	wantBMC = append(wantBMC, "insert "+iso, "eject")
	if got := isos.seen(); !slices.Equal(got, wantISO) {
		t.Errorf("after a clean abort, ISOs: %v, want %v", got, wantISO)
	}
	if got := bmc.seen(); !slices.Equal(got, wantBMC) {
		t.Errorf("after a clean abort, BMC: %v, want %v", got, wantBMC)
	}

	bmc.mu.Lock()
	bmc.refuse = true
	bmc.mu.Unlock()
	create("vm-2")
	before := len(isos.seen())
	s.do("PUT", "/v1/nodes/vm-2/states/provision", `{"target":"provide"}`, 202)
	s.wait("vm-2", "clean failed")
	le, _ := s.do("GET", "/v1/nodes/vm-2", "", 200)["last_error"].(string)
	for _, w := range []string{"Virtual media mount failed for node", "HTTP 400", "image not reachable"} {
		if !strings.Contains(le, w) {
			t.Errorf("last_error %q lacks %q", le, w)
		}
	}
	if strings.Contains(le, "pw-secret-55") {
		t.Errorf("last_error shows the password: %q", le)
	}
	// Withdrawn by the failed insert, and again (idempotent) by the clean
	// failure's tear down (Ironic's tear_down_cleaning → clean_up_ramdisk).
	if got := isos.seen()[before:]; !slices.Equal(got, []string{"iso http://127.0.0.1/k console=ttyS0", "withdraw", "withdraw"}) {
		t.Errorf("ISOs after the refused insert: %v, want built then withdrawn", got)
	}
}
