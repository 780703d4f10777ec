package agent_test

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/testbin"
)

// TestDefaultHeartbeatSettings runs provide and deploy with the agent's
// default heartbeat (no --heartbeat-interval: every 0.3–0.6 × the
// conductor's heartbeat_timeout, read from a lookup). Each finishes only
// because the agent heartbeats as soon as a command ends (as IPA does):
// its log shows the heartbeat it sent when the erase finished, sooner
// after the previous one than the shortest regular interval, and the
// provide's history shows the clean resumed once, by a heartbeat that
// found the erase done (those that found it running left the node
// waiting). Cleaning ends with the node powered off and its agent
// forgotten, so the deploy boots a fresh agent, as power on does on a
// real machine.
func TestDefaultHeartbeatSettings(t *testing.T) {
	api := startServer(t)
	imgs, image, sum := imageServer(t)
	minInterval := time.Duration(0.3 * float64(heartbeatTimeout(t, api)))
	const mac = "52:54:00:aa:bb:0d"
	node := createNode(t, api, "default-heartbeat", mac)
	disk := tempDisk(t, 64*mib, 0xAA)
	boot := func() *process {
		return start(t, "anvil agent", "agent", "--api-url", api, "--mac", mac, "--disk", disk,
			"--listen", testbin.FreeAddr(t), "--log-level", "debug")
	}
	agent := boot()

	provision(t, api, node, "manage")
	waitState(t, api, node, "manageable")
	provision(t, api, node, "provide")
	waitState(t, api, node, "available")
	// Heartbeats that find the erase running leave the node waiting; the
	// one after it finished resumes the clean.
	if resumes := resumeTimes(t, api, node, "clean wait", "cleaning"); len(resumes) != 1 {
		t.Errorf("provide resumed %d times by heartbeats, want once (the erase done)", len(resumes))
	}
	beats := heartbeatsSent(t, agent)
	var finished int
	for i, b := range beats {
		if b.reason != "command finished" {
			continue
		}
		finished++
		if i == 0 {
			t.Fatalf("the first heartbeat says a command finished: %v", beats)
		}
		gap := b.at.Sub(beats[i-1].at)
		t.Logf("heartbeat %d: %v after the previous one (regular heartbeats ≥ %v apart)", i, gap, minInterval)
		if gap >= minInterval {
			t.Errorf("the heartbeat after a command came %v after the previous one, no sooner than a regular one (≥ %v)", gap, minInterval)
		}
	}
	if finished == 0 {
		t.Fatalf("the agent never heartbeat when a command finished: %v", beats)
	}

	_ = agent.Stop(t)
	boot()
	setImage(t, api, node, imgs.URL+"/good.img", sum)
	provision(t, api, node, "active")
	waitState(t, api, node, "active")
	d, err := os.ReadFile(disk)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(d[:len(image)], image) {
		t.Fatalf("the disk does not start with the image")
	}
}

// heartbeatTimeout is the heartbeat_timeout the conductor's lookup hands
// agents. It is read for a probe node parked in clean wait with no agent
// (so the token the test takes is no agent's).
func heartbeatTimeout(t *testing.T, api string) time.Duration {
	t.Helper()
	const mac = "52:54:00:aa:bb:0e"
	node := createNode(t, api, "heartbeat-probe", mac)
	provision(t, api, node, "manage")
	waitState(t, api, node, "manageable")
	provision(t, api, node, "provide")
	deadline := time.Now().Add(stateTimeout)
	for time.Now().Before(deadline) {
		r := callVersion(t, "1.68", "GET", api+"/v1/lookup?addresses="+mac, nil)
		if r.Status == 200 {
			cfg, _ := r.JSON(t)["config"].(map[string]any)
			s, ok := cfg["heartbeat_timeout"].(float64)
			if !ok || s <= 0 {
				t.Fatalf("lookup config has no heartbeat_timeout: %v", cfg)
			}
			return time.Duration(s * float64(time.Second))
		}
		time.Sleep(20 * time.Millisecond) // polling interval, bounded by the deadline
	}
	t.Fatal("the probe node never answered a lookup")
	return 0
}

// heartbeat is one heartbeat an agent logged sending.
type heartbeat struct {
	at     time.Time
	reason string
}

// heartbeatsSent reads the heartbeats the agent's debug log says it sent,
// in order.
func heartbeatsSent(t *testing.T, agent *process) []heartbeat {
	t.Helper()
	var out []heartbeat
	for _, line := range strings.Split(agent.Logs.String(), "\n") {
		if !strings.Contains(line, `msg="heartbeat sent"`) {
			continue
		}
		ts, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			t.Fatalf("agent log line %q: %v", line, err)
		}
		_, reason, _ := strings.Cut(line, "reason=")
		out = append(out, heartbeat{at: at, reason: strings.Trim(reason, `"`)})
	}
	return out
}

// resumeTimes are the times node moved from one state to another, from
// its history, in order.
func resumeTimes(t *testing.T, api, node, from, to string) []time.Time {
	t.Helper()
	h := mustCall(t, 200, "GET", api+"/v1/nodes/"+node+"/history?detail=true", nil).JSON(t)
	entries, _ := h["history"].([]any)
	want := `Node moved to provision state "` + to + `" from state "` + from + `"`
	var out []time.Time
	for _, e := range entries {
		m, _ := e.(map[string]any)
		if ev, _ := m["event"].(string); !strings.HasPrefix(ev, want) {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, m["created_at"].(string))
		if err != nil {
			t.Fatalf("history created_at: %v", err)
		}
		out = append(out, at)
	}
	return out
}
