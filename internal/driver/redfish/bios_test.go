package redfish_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/model"
)

// writeLog serves the emulator and records every write it receives.
type writeLog struct {
	mu     sync.Mutex
	writes []string // "METHOD path body"
}

func (r *writeLog) wrap(t *testing.T, e *bmcemu.Emulator) string {
	h := e.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && !strings.Contains(req.URL.Path, "SessionService") {
			b, _ := io.ReadAll(req.Body)
			req.Body = io.NopCloser(strings.NewReader(string(b)))
			r.mu.Lock()
			r.writes = append(r.writes, req.Method+" "+req.URL.Path+" "+string(b))
			r.mu.Unlock()
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func (r *writeLog) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.writes
	r.writes = nil
	return out
}

func step(name string, args model.JSON) driver.Step {
	return driver.Step{Interface: "bios", Step: name, Args: args}
}

// TestBIOSTalksAsSushy: apply_configuration PATCHes the Bios resource's
// @Redfish.Settings object (never the Bios itself) with the Attributes,
// their values converted to the registry's types, and the OnReset apply
// time the resource supports (sushy's set_attributes); a reboot applies
// them; the settings are read back with the registry's schema. A request
// that matches the current BIOS changes nothing. factory_reset POSTs the
// #Bios.ResetBios target (sushy's reset_bios) and reboots.
func TestBIOSTalksAsSushy(t *testing.T) {
	e := startEmulator(t, bmcemu.Config{Count: 2})
	rec := &writeLog{}
	n := node(e, "node-01", testPassword, "basic")
	n.DriverInfo["redfish_address"] = rec.wrap(t, e)
	d := fastDriver()
	b := d.BIOS()
	ctx := context.Background()
	settings := []any{map[string]any{"name": "ProcTurboMode", "value": "Disabled"}, map[string]any{"name": "PowerOnDelay", "value": "30"}}

	task := &driver.Task{Node: n}
	if _, err := b.ExecuteStep(ctx, task, driver.CleanSteps, step("apply_configuration", model.JSON{"settings": settings})); err != nil {
		t.Fatal(err)
	}
	writes := rec.take()
	if len(writes) < 2 || !strings.HasPrefix(writes[0], "PATCH /redfish/v1/Systems/node-01/Bios/Settings ") ||
		!strings.HasPrefix(writes[1], "POST /redfish/v1/Systems/node-01/Actions/ComputerSystem.Reset") {
		t.Fatalf("writes %q", writes)
	}
	var patch map[string]any
	_ = json.Unmarshal([]byte(strings.SplitN(writes[0], " ", 3)[2]), &patch)
	attrs, _ := patch["Attributes"].(map[string]any)
	if attrs["ProcTurboMode"] != "Disabled" || attrs["PowerOnDelay"] != 30.0 {
		t.Errorf("PATCH Attributes %v: want the Integer as a number", attrs)
	}
	if at, _ := patch["@Redfish.SettingsApplyTime"].(map[string]any); at["ApplyTime"] != "OnReset" {
		t.Errorf("PATCH apply time %v", patch)
	}
	if task.BIOS == nil {
		t.Fatal("no settings cached")
	}
	cached := map[string]model.BIOSSetting{}
	for _, s := range *task.BIOS {
		cached[s.Name] = s
	}
	if s := cached["PowerOnDelay"]; s.Value == nil || *s.Value != "30" || s.UpperBound == nil || *s.UpperBound != 300 || *s.AttributeType != "Integer" {
		t.Errorf("cached PowerOnDelay %+v", s)
	}
	if s := cached["ProcTurboMode"]; *s.Value != "Disabled" || len(s.AllowableValues) != 2 || s.ResetRequired == nil || !*s.ResetRequired {
		t.Errorf("cached ProcTurboMode %+v", s)
	}

	// asking again for what is set: no PATCH, no reboot
	if _, err := b.ExecuteStep(ctx, &driver.Task{Node: n}, driver.ServiceSteps, step("apply_configuration", model.JSON{"settings": settings})); err != nil {
		t.Fatal(err)
	}
	if w := rec.take(); len(w) != 0 {
		t.Errorf("a no-op apply wrote %q", w)
	}

	// factory reset
	if _, err := b.ExecuteStep(ctx, &driver.Task{Node: n}, driver.CleanSteps, step("factory_reset", nil)); err != nil {
		t.Fatal(err)
	}
	writes = rec.take()
	if len(writes) < 2 || writes[0] != "POST /redfish/v1/Systems/node-01/Bios/Actions/Bios.ResetBios {}" {
		t.Errorf("factory reset writes %q", writes)
	}
	if cur, _ := e.Machine("node-01").BIOS(); cur["ProcTurboMode"] != "Enabled" {
		t.Errorf("after factory reset: %v", cur)
	}
}

// TestFirmwareUpdateTargetsTheSystem: with two systems on the BMC the
// SimpleUpdate names the node's system in Targets (as Ironic does for
// sushy-tools); the versions the BMC reports afterwards are cached.
func TestFirmwareUpdateTargetsTheSystem(t *testing.T) {
	e := startEmulator(t, bmcemu.Config{Count: 2})
	rec := &writeLog{}
	n := node(e, "node-02", testPassword, "basic")
	n.DriverInfo["redfish_address"] = rec.wrap(t, e)
	img := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("component=bmc version=3.0\n")) }))
	t.Cleanup(img.Close)
	f := fastDriver().Firmware()
	task := &driver.Task{Node: n}
	args := model.JSON{"settings": []any{map[string]any{"component": "bmc", "url": img.URL + "/bmc.bin"}}}
	if _, err := f.ExecuteStep(context.Background(), task, driver.ServiceSteps, driver.Step{Interface: "firmware", Step: "update", Args: args}); err != nil {
		t.Fatal(err)
	}
	writes := rec.take()
	want := `POST /redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate {"ImageURI":"` + img.URL + `/bmc.bin","Targets":["/redfish/v1/Systems/node-02"],"TransferProtocol":"HTTP"}`
	if len(writes) != 1 || writes[0] != want {
		t.Errorf("writes %q\nwant %q", writes, want)
	}
	if task.Firmware == nil || len(*task.Firmware) != 2 || (*task.Firmware)[1].Component != "bmc" || (*task.Firmware)[1].CurrentVersion != "3.0" {
		t.Errorf("cached firmware %+v", task.Firmware)
	}
	if fw := e.Machine("node-01").Firmware(); fw["bmc"] != "1.0.0" {
		t.Errorf("the other system's BMC was flashed: %v", fw)
	}
}
