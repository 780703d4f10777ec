package server

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/bmcemu"
	"github.com/anvil-metal/anvil/internal/bmcemu/emutest"
	"github.com/anvil-metal/anvil/internal/driver"
)

// TestDiagnosisConsoleTailFromVM: a deploy to the BMC emulator's qemu VM
// (IPMI, ipmi-sol console, nobody attached, the console never enabled)
// whose agent never calls back fails by the deploy callback timeout; its
// diagnosis holds, in the console tail, the VM's boot output recorded
// while the node deployed (its disk's boot sector printing a marker).
func TestDiagnosisConsoleTailFromVM(t *testing.T) {
	emu, m := emutest.VM(t, bmcemu.Config{}, "VM-DEPLOY-BOOT-OUTPUT")
	st := m.Status()
	nd := emutest.Node(t, emu, bmcemu.DriverIPMI)
	di, _ := json.Marshal(nd.DriverInfo)
	s := serveWith(t, func(c *Config) {
		c.Interfaces = driver.Enablement{Interfaces: map[string][]string{"boot": {"fake", "ipxe"}}}
		c.Conductor.DeployCallbackTimeout = 45 * time.Second
		c.Conductor.CheckProvisionStateInterval = time.Second
	})
	node := s.do("POST", "/v1/nodes", `{"driver":"ipmi","console_interface":"ipmi-sol","boot_interface":"fake","deploy_interface":"direct",
		"automated_clean":false,"driver_info":`+string(di)+`,
		"instance_info":{"image_source":"http://127.0.0.1:1/img","image_checksum":"`+strings.Repeat("ab", 32)+`"}}`, 201)["uuid"].(string)
	s.do("POST", "/v1/ports", `{"node_uuid":"`+node+`","address":"`+nd.Ports[0].Address+`"}`, 201)
	s.do("PUT", "/v1/nodes/"+node+"/states/provision", `{"target":"manage"}`, 202)
	waitWithin(t, 2*testTimeout, "manageable", func() bool {
		return s.do("GET", "/v1/nodes/"+node, "", 200)["provision_state"] == "manageable"
	})
	s.do("PUT", "/v1/nodes/"+node+"/states/provision", `{"target":"provide"}`, 202)
	waitWithin(t, 2*testTimeout, "available", func() bool {
		return s.do("GET", "/v1/nodes/"+node, "", 200)["provision_state"] == "available"
	})
	s.do("PUT", "/v1/nodes/"+node+"/states/provision", `{"target":"active"}`, 202)
	waitWithin(t, 4*testTimeout, "deploy failed", func() bool {
		return s.do("GET", "/v1/nodes/"+node, "", 200)["provision_state"] == "deploy failed"
	})
	if n := s.do("GET", "/v1/nodes/"+node, "", 200); n["console_enabled"] != false {
		t.Fatalf("console_enabled %v: nobody enabled the console", n["console_enabled"])
	}
	// The failure is saved before its diagnosis is gathered: a reader may
	// see deploy failed a moment before the diagnosis.
	waitWithin(t, testTimeout, "the diagnosis", func() bool {
		code, _ := s.call("GET", "/v1/nodes/"+node+"/diagnosis", "")
		return code == 200
	})
	d, _ := s.diagnosis(node)
	if !strings.Contains(d.ConsoleTail, "VM-DEPLOY-BOOT-OUTPUT") {
		log, _ := os.ReadFile(st.Console)
		t.Fatalf("console tail %q lacks the VM's boot output (VM console.log %q); note %q", d.ConsoleTail, log, d.ConsoleNote)
	}
	if d.Class != "callback-timeout" || !strings.Contains(d.LastError, "Timeout reached while waiting for callback") {
		t.Errorf("class %q, last_error %q", d.Class, d.LastError)
	}
	if len(d.BMCCalls) == 0 {
		t.Errorf("no BMC calls recorded for the deploy's power and boot device changes")
	}
}
