package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/ipmi"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/testbin"
	"github.com/anvil-metal/anvil/internal/testbin/ipmisim"
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
// verification (manage → enroll); each is diagnosed with its class, the
// failing IPMI call as evidence, and never the password.
func TestDiagnosisBMCFaults(t *testing.T) {
	const rightPW, wrongPW = "right-bmc-pw", "wrong-bmc-pw-7"
	port := ipmisim.Start(t, "diag-bmc", rightPW)
	dead := testbin.FreeUDPPort(t)
	s := serveWith(t, func(c *Config) {
		c.Interfaces = driver.Enablement{Interfaces: map[string][]string{"boot": {"fake", "ipxe"}}}
		c.IPMI = ipmi.Config{MinCommandInterval: -1, CommandRetryTimeout: 2 * time.Second, ExchangeTimeout: 300 * time.Millisecond}
	})
	cases := []struct {
		name, password string
		port           int
		class, bmc     string
	}{
		{"wrong password", wrongPW, port, "bmc-credentials-refused", fmt.Sprintf("127.0.0.1:%d", port)},
		{"dead BMC", rightPW, dead, "bmc-unreachable", fmt.Sprintf("127.0.0.1:%d", dead)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			di := fmt.Sprintf(`{"ipmi_address":"127.0.0.1","ipmi_port":%d,"ipmi_username":%q,"ipmi_password":%q}`, tc.port, ipmisim.User, tc.password)
			node := s.do("POST", "/v1/nodes", `{"driver":"ipmi","boot_interface":"fake","driver_info":`+di+`}`, 201)["uuid"].(string)
			if code, _ := s.call("GET", "/v1/nodes/"+node+"/diagnosis", ""); code != 404 {
				t.Fatalf("diagnosis before any failure: %d, want 404", code)
			}
			s.do("PUT", "/v1/nodes/"+node+"/states/provision", `{"target":"manage"}`, 202)
			s.wait(node, "enroll")
			d, body := s.diagnosis(node)
			if d.Class != tc.class || !evidenceHas(d, "ipmi power status on "+tc.bmc) {
				t.Fatalf("class %q, evidence %q; want %s with the IPMI call to %s", d.Class, d.Evidence, tc.class, tc.bmc)
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
		})
	}
}
