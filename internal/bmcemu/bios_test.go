package bmcemu_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/bmcemu"
)

func TestBIOSSettingsApplyAtNextBoot(t *testing.T) {
	e := start(t, bmcemu.Config{Count: 1})
	m := e.Machines()[0]
	bios := e.URL() + "/redfish/v1/Systems/" + m.ID + "/Bios"
	r := do(t, "GET", bios, "admin", pw, "")
	if r.status != 200 || !strings.Contains(r.body, `"ProcTurboMode":"Enabled"`) || !strings.Contains(r.body, `"/redfish/v1/Systems/node-01/Bios/Settings"`) {
		t.Fatalf("GET Bios: %+v", r)
	}
	if r := do(t, "PATCH", bios+"/Settings", "admin", pw, `{"Attributes":{"ProcTurboMode":"Disabled","PowerOnDelay":30},"@Redfish.SettingsApplyTime":{"ApplyTime":"OnReset"}}`); r.status != 204 {
		t.Fatalf("PATCH Settings: %+v", r)
	}
	cur, pending := m.BIOS()
	if cur["ProcTurboMode"] != "Enabled" || pending["ProcTurboMode"] != "Disabled" || pending["PowerOnDelay"] != 30 {
		t.Fatalf("before boot: current %v pending %v", cur, pending)
	}
	// a bad attribute rejects the whole PATCH: nothing more is pending
	for _, bad := range []struct{ body, code string }{
		{`{"Attributes":{"AssetTag":"x","NoSuchThing":"1"}}`, "PropertyUnknown"},
		{`{"Attributes":{"AssetTag":"x","SystemServiceTag":"X"}}`, "PropertyNotWritable"},
		{`{"Attributes":{"AssetTag":"x","BootMode":"Floppy"}}`, "PropertyValueNotInList"},
		{`{"Attributes":{"AssetTag":"x","PowerOnDelay":301}}`, "PropertyValueOutOfRange"},
	} {
		if r := do(t, "PATCH", bios+"/Settings", "admin", pw, bad.body); r.status != 400 || !strings.Contains(r.body, bad.code) {
			t.Errorf("PATCH %s: %+v, want 400 %s", bad.body, r, bad.code)
		}
	}
	if _, pending := m.BIOS(); len(pending) != 2 {
		t.Errorf("a rejected PATCH changed the pending settings: %v", pending)
	}
	if r := do(t, "GET", bios+"/Settings", "admin", pw, ""); !strings.Contains(r.body, `"ProcTurboMode":"Disabled"`) {
		t.Errorf("GET Settings: %+v", r)
	}
	if err := m.SetPower(true); err != nil {
		t.Fatal(err)
	}
	cur, pending = m.BIOS()
	if cur["ProcTurboMode"] != "Disabled" || cur["PowerOnDelay"] != 30 || len(pending) != 0 {
		t.Fatalf("after boot: current %v pending %v", cur, pending)
	}
	// ResetBios: defaults at the next reset
	if r := do(t, "POST", bios+"/Actions/Bios.ResetBios", "admin", pw, ""); r.status != 204 {
		t.Fatalf("ResetBios: %+v", r)
	}
	if cur, _ := m.BIOS(); cur["ProcTurboMode"] != "Disabled" {
		t.Errorf("ResetBios applied before the reset")
	}
	if r := do(t, "POST", e.URL()+"/redfish/v1/Systems/"+m.ID+"/Actions/ComputerSystem.Reset", "admin", pw, `{"ResetType":"ForceRestart"}`); r.status != 204 {
		t.Fatal(r)
	}
	if cur, _ := m.BIOS(); cur["ProcTurboMode"] != "Enabled" || cur["PowerOnDelay"] != 0 {
		t.Errorf("after ResetBios and a reset: %v", cur)
	}
	// the attribute registry is reachable the way sushy finds it
	reg := do(t, "GET", e.URL()+"/redfish/v1/Registries/"+bmcemu.BIOSRegistryID+"/registry", "admin", pw, "")
	if reg.status != 200 || !strings.Contains(reg.body, `"AttributeName":"SystemServiceTag"`) || !strings.Contains(reg.body, `"UpperBound":300`) {
		t.Errorf("registry: %+v", reg)
	}
}

func TestSimpleUpdate(t *testing.T) {
	e := start(t, bmcemu.Config{Count: 2})
	m := e.Machines()[1]
	img := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/bmc.bin":
			w.Write([]byte("component=bmc version=2.5.0\nbinary"))
		case "/bios.bin":
			w.Write([]byte("no header\n"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer img.Close()
	post := func(body string) reply {
		return do(t, "POST", e.URL()+"/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate", "admin", pw, body)
	}
	wait := func(loc string) map[string]any {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			r := do(t, "GET", e.URL()+loc, "admin", pw, "")
			var task map[string]any
			_ = json.Unmarshal([]byte(r.body), &task)
			if task["TaskState"] != bmcemu.TaskRunning || time.Now().After(deadline) {
				return task
			}
		}
	}
	target := `"Targets":["/redfish/v1/Systems/` + m.ID + `"]`
	r := post(`{"ImageURI":"` + img.URL + `/bmc.bin",` + target + `}`)
	if r.status != 202 {
		t.Fatalf("SimpleUpdate: %+v", r)
	}
	var task map[string]any
	_ = json.Unmarshal([]byte(r.body), &task)
	if task["TaskState"] != bmcemu.TaskRunning || task["TaskMonitor"] == nil {
		t.Errorf("SimpleUpdate answered %v, want the Task Running with its monitor", task)
	}
	if task := wait(task["@odata.id"].(string)); task["TaskState"] != bmcemu.TaskCompleted {
		t.Fatalf("task: %v", task)
	}
	r = post(`{"ImageURI":"` + img.URL + `/bios.bin",` + target + `}`)
	_ = json.Unmarshal([]byte(r.body), &task)
	wait(task["@odata.id"].(string))
	if fw := m.Firmware(); fw["bmc"] != "2.5.0" || fw["bios"] != "1.1.0" {
		t.Errorf("firmware after updates: %v", fw)
	}
	if fw := e.Machines()[0].Firmware(); fw["bios"] != "1.0.0" || fw["bmc"] != "1.0.0" {
		t.Errorf("the other machine changed: %v", fw)
	}
	if inv := do(t, "GET", e.URL()+"/redfish/v1/UpdateService/FirmwareInventory/"+m.ID+"-BMC", "admin", pw, ""); !strings.Contains(inv.body, `"Version":"2.5.0"`) {
		t.Errorf("inventory: %+v", inv)
	}
	if sys := do(t, "GET", e.URL()+"/redfish/v1/Systems/"+m.ID, "admin", pw, ""); !strings.Contains(sys.body, `"BiosVersion":"1.1.0"`) {
		t.Errorf("system BiosVersion: %s", sys.body)
	}
	// a missing image: the task ends in Exception, versions unchanged
	r = post(`{"ImageURI":"` + img.URL + `/missing.bin",` + target + `}`)
	_ = json.Unmarshal([]byte(r.body), &task)
	if task := wait(task["@odata.id"].(string)); task["TaskState"] != bmcemu.TaskException {
		t.Errorf("missing image: %v", task)
	}
	if mon := do(t, "GET", e.URL()+task["TaskMonitor"].(string), "admin", pw, ""); mon.status != 200 || !strings.Contains(mon.body, `"TaskState":"Exception"`) {
		t.Errorf("task monitor of an ended task: %+v", mon)
	}
	if got := e.UpdateTasks(m.ID); len(got) != 3 || got[2] != bmcemu.TaskException {
		t.Errorf("tasks: %v", got)
	}
	// refused: not loopback, no target among two machines
	if r := post(`{"ImageURI":"http://192.0.2.1/x.bin",` + target + `}`); r.status != 400 {
		t.Errorf("non-loopback image: %+v", r)
	}
	if r := post(`{"ImageURI":"` + img.URL + `/bios.bin"}`); r.status != 400 {
		t.Errorf("no Targets with two systems: %+v", r)
	}
}

// TestRunningTaskAnswers202: while an update runs (its image download held
// here), both the Task sushy polls (the @odata.id SimpleUpdate returns)
// and the task monitor answer 202 with TaskState Running; once it ends,
// 200 with Completed. (sushy's wait stopped at a 200 Task of a running
// update and read it Running: a CI failure of TestSushyDrivesBIOSAndUpdates.)
func TestRunningTaskAnswers202(t *testing.T) {
	e := start(t, bmcemu.Config{Count: 1})
	release := make(chan struct{})
	img := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.Write([]byte("component=bios version=3.0.0\n"))
	}))
	defer img.Close()
	var once sync.Once
	defer once.Do(func() { close(release) })
	r := do(t, "POST", e.URL()+"/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate", "admin", pw,
		`{"ImageURI":"`+img.URL+`/bios.bin"}`)
	if r.status != 202 {
		t.Fatalf("SimpleUpdate: %+v", r)
	}
	var task map[string]any
	_ = json.Unmarshal([]byte(r.body), &task)
	for _, u := range []string{task["@odata.id"].(string), task["TaskMonitor"].(string)} {
		if g := do(t, "GET", e.URL()+u, "admin", pw, ""); g.status != 202 || !strings.Contains(g.body, `"TaskState":"Running"`) {
			t.Errorf("GET %s while the update runs: %+v", u, g)
		}
	}
	once.Do(func() { close(release) })
	deadline := time.Now().Add(10 * time.Second)
	for {
		g := do(t, "GET", e.URL()+task["@odata.id"].(string), "admin", pw, "")
		if g.status == 200 {
			if !strings.Contains(g.body, `"TaskState":"Completed"`) {
				t.Errorf("ended task: %+v", g)
			}
			break
		}
		if g.status != 202 || time.Now().After(deadline) {
			t.Fatalf("task never ended: %+v", g)
		}
		time.Sleep(10 * time.Millisecond) // polling with a deadline
	}
}
