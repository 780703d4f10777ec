package bmcemu_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"testing"

	"github.com/anvil-metal/anvil/internal/bmcemu"
)

// debianPython is the interpreter whose dist-packages hold python3-sushy.
const debianPython = "/usr/bin/python3"

// TestSushyDrivesBIOSAndUpdates: real sushy (python3-sushy, what Ironic's
// redfish interfaces use) reads the emulated Bios and its attribute
// registry, sets attributes with apply time OnReset (pending in
// Bios/Settings), resets the BIOS, and runs a SimpleUpdate whose task
// monitor it waits on until the Task completes. Skipped without
// python3-sushy unless $CI is set.
func TestSushyDrivesBIOSAndUpdates(t *testing.T) {
	if err := exec.Command(debianPython, "-c", "import sushy").Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("python3-sushy is needed: %v", err)
		}
		t.Skip("python3-sushy not installed (apt-get install python3-sushy)")
	}
	e := start(t, bmcemu.Config{Count: 2})
	img := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("capsule\n")) }))
	defer img.Close()
	out, err := exec.Command(debianPython, "testdata/sushy_bios.py", e.URL(), "admin", pw, "node-02", img.URL+"/bios.cap").Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("sushy: %v\n%s", err, stderr)
	}
	var got struct {
		BIOSVersion      string                    `json:"bios_version"`
		Attributes       map[string]any            `json:"attributes"`
		ApplyTimes       []string                  `json:"apply_times"`
		Registry         map[string]map[string]any `json:"registry"`
		Pending          map[string]any            `json:"pending"`
		TaskState        string                    `json:"task_state"`
		BIOSVersionAfter string                    `json:"bios_version_after"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Attributes["ProcTurboMode"] != "Enabled" || got.BIOSVersion != "1.0.0" {
		t.Errorf("sushy read %v (BIOS %s)", got.Attributes, got.BIOSVersion)
	}
	if len(got.ApplyTimes) != 1 || got.ApplyTimes[0] != "OnReset" {
		t.Errorf("supported apply times %v", got.ApplyTimes)
	}
	if r := got.Registry["PowerOnDelay"]; r["type"] != "Integer" || r["upper"] != 300.0 || r["read_only"] != false {
		t.Errorf("registry PowerOnDelay %v", r)
	}
	if r := got.Registry["SystemServiceTag"]; r["read_only"] != true || r["unique"] != true {
		t.Errorf("registry SystemServiceTag %v", r)
	}
	if r := got.Registry["ProcTurboMode"]; len(r["values"].([]any)) != 2 {
		t.Errorf("registry ProcTurboMode %v", r)
	}
	if got.Pending["ProcTurboMode"] != "Disabled" || got.Pending["PowerOnDelay"] != 30.0 {
		t.Errorf("pending after set_attributes: %v", got.Pending)
	}
	if got.TaskState != "Completed" || got.BIOSVersionAfter != "1.1.0" {
		t.Errorf("update: task %s, BIOS %s", got.TaskState, got.BIOSVersionAfter)
	}
	// reset_bios made the defaults pending; nothing applied without a boot
	cur, pending := e.Machine("node-02").BIOS()
	if cur["ProcTurboMode"] != "Enabled" || pending["ProcTurboMode"] != "Enabled" || pending["PowerOnDelay"] != 0 {
		t.Errorf("after reset_bios: current %v pending %v", cur, pending)
	}
}
