package conductor_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/conductor"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// diagnosisOf returns the node's stored diagnosis.
func diagnosisOf(t *testing.T, e *env, id string) *model.Diagnosis {
	t.Helper()
	raw, err := e.st.Diagnoses().GetDiagnosis(e.ctx, id)
	if err != nil {
		t.Fatalf("diagnosis: %v", err)
	}
	var d model.Diagnosis
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

// TestDiagnosisGathersAndMasks: a deploy that times out while an agent
// with an unknown MAC looked up is classified agent-lookup-failed with the
// MACs it tried; the bundle holds the console tail, BMC calls, boot events
// and agent logs of this operation (older ones left out), never the
// node's password or agent token, and a history entry carries the class.
func TestDiagnosisGathersAndMasks(t *testing.T) {
	const pw, token = "s3cret-ipmi-pw", "tok-4f2a9e-secret"
	var since time.Time
	start := time.Now().UTC()
	var clk *clock
	e, clk := newClockEnvWith(t, func(c *conductor.Config) {
		c.Diagnosis = conductor.DiagnosisSources{
			ConsoleTail: func(node string, n int) ([]byte, bool) {
				return []byte("SeaBIOS\r\niPXE booting\r\nlogin with " + pw + " and token " + token + "\xff\r\n"), true
			},
			Boot: func(node string, macs []string) []model.BootEvent {
				return []model.BootEvent{{Time: start.Add(-time.Hour), Service: "http", File: "kernel", Status: "404"},
					{Time: clk.Now().Add(time.Second), Service: "http", MAC: macs[0], File: "/mac/" + macs[0], Status: "200"}}
			},
			BMCCalls: func(node string) []model.BMCCall {
				return []model.BMCCall{{Time: clk.Now().Add(time.Second), Protocol: "ipmi", Op: "power on", BMC: "127.0.0.1:623"}}
			},
			AgentLogs: func(node string, s time.Time) *model.AgentLogs {
				since = s
				return &model.AgentLogs{Collect: "on_failure", Note: "the agent's logs were not collected"}
			},
		}
	})
	tc := waitCases()[0] // deploy
	id := e.park(tc)
	if err := e.st.Ports().CreatePort(e.ctx, &model.Port{NodeUUID: id, Address: "52:54:00:aa:bb:01"}); err != nil {
		t.Fatal(err)
	}
	// Written behind the conductor's back: the API refuses updates while
	// the node waits.
	n := e.get(id)
	n.DriverInfo["ipmi_password"] = pw
	n.DriverInternalInfo["agent_secret_token"] = token
	if err := e.st.Nodes().UpdateNode(e.ctx, n); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.c.Agents().Lookup(e.ctx, []string{"52:54:00:99:99:99"}, ""); fault.KindOf(err) != fault.NotFound {
		t.Fatalf("lookup with an unknown MAC: %v", err)
	}
	clk.Advance(31 * time.Minute)
	if err := e.c.CheckTimeouts(e.ctx); err != nil {
		t.Fatal(err)
	}
	raw, err := e.st.Diagnoses().GetDiagnosis(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), pw) || strings.Contains(string(raw), token) {
		t.Fatalf("a secret in the diagnosis: %s", raw)
	}
	d := diagnosisOf(t, e, id)
	if d.Class != "agent-lookup-failed" || !strings.Contains(strings.Join(d.Evidence, "\n"), "52:54:00:99:99:99") ||
		!strings.Contains(strings.Join(d.Evidence, "\n"), "the node's ports: 52:54:00:aa:bb:01") {
		t.Fatalf("class %q evidence %q", d.Class, d.Evidence)
	}
	if !strings.Contains(d.ConsoleTail, "iPXE booting") || !strings.Contains(d.ConsoleTail, "login with ******") {
		t.Errorf("console tail %q", d.ConsoleTail)
	}
	if len(d.Boot) != 1 || d.Boot[0].Status != "200" || len(d.BMCCalls) != 1 || d.AgentLogs == nil || d.AgentLogs.Collect != "on_failure" {
		t.Errorf("boot %+v (the hour-old 404 is not this operation's), calls %+v, logs %+v", d.Boot, d.BMCCalls, d.AgentLogs)
	}
	if since.IsZero() || since.Before(start.Add(-time.Second)) {
		t.Errorf("agent logs asked from %v, want the operation's start", since)
	}
	if d.Interfaces["deploy_interface"] == "" || len(d.History) == 0 || d.FromState != fsm.DeployWait {
		t.Errorf("interfaces %v, history %d, from %q", d.Interfaces, len(d.History), d.FromState)
	}
	hist, err := e.st.Nodes().ListHistory(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	last := hist[len(hist)-1]
	if last.EventType != "diagnosis" || !strings.Contains(last.Event, "agent-lookup-failed") {
		t.Errorf("last history entry %q %q, want the diagnosis' class", last.EventType, last.Event)
	}

	// Deleting the node removes its diagnosis; a node that never failed
	// has none (404).
	if err := e.c.Nodes().SetMaintenance(e.ctx, id, true, "gone"); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Nodes().DeleteNode(e.ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.Diagnoses().GetDiagnosis(e.ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the deleted node's diagnosis: %v", err)
	}
	other := e.create(model.JSON{}).UUID
	if _, err := e.st.Diagnoses().GetDiagnosis(e.ctx, other); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("diagnosis of a node that never failed: %v", err)
	}
}

// TestDiagnosisIsBounded: however much the sources hand over, the stored
// diagnosis stays within DiagnosisMaxBytes, keeping the newest console
// output and boot events.
func TestDiagnosisIsBounded(t *testing.T) {
	var clk *clock
	e, clk := newClockEnvWith(t, func(c *conductor.Config) {
		c.Diagnosis = conductor.DiagnosisSources{
			ConsoleTail: func(string, int) ([]byte, bool) {
				return []byte(strings.Repeat("old console line\r\n", 40000) + "NEWEST-CONSOLE-LINE\r\n"), true
			},
			Boot: func(node string, macs []string) []model.BootEvent {
				evs := make([]model.BootEvent, 20000)
				for i := range evs {
					evs[i] = model.BootEvent{Time: clk.Now().Add(time.Duration(i) * time.Millisecond), Service: "http", File: "/mac/" + strings.Repeat("x", 100), Status: "200"}
				}
				evs[len(evs)-1].Note = "NEWEST-BOOT-EVENT"
				return evs
			},
		}
	})
	id := e.park(waitCases()[0])
	clk.Advance(31 * time.Minute)
	if err := e.c.CheckTimeouts(e.ctx); err != nil {
		t.Fatal(err)
	}
	raw, err := e.st.Diagnoses().GetDiagnosis(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > conductor.DiagnosisMaxBytes {
		t.Fatalf("%d bytes stored, bound %d", len(raw), conductor.DiagnosisMaxBytes)
	}
	d := diagnosisOf(t, e, id)
	if !strings.HasSuffix(d.ConsoleTail, "NEWEST-CONSOLE-LINE\r\n") {
		t.Errorf("the console tail lost its newest line: ...%q", d.ConsoleTail[max(0, len(d.ConsoleTail)-40):])
	}
	if len(d.Boot) == 0 || d.Boot[len(d.Boot)-1].Note != "NEWEST-BOOT-EVENT" {
		t.Errorf("%d boot events kept, the newest lost", len(d.Boot))
	}
}
