package server

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/ipa"
)

// TestRamdiskTornDownOnFailureAndAbort: with the ipxe boot interface and
// the agent interfaces (direct deploy, agent inspect and rescue), every
// wait state an operator aborts, and a clean step the agent fails, leave
// no iPXE script behind (CleanUpRamdisk: the publisher's withdraw) and the
// power where Ironic leaves it: a clean abort and an inspection abort
// power off; a failed clean step (maintenance), a rescue abort and a
// deploy abort keep it on.
func TestRamdiskTornDownOnFailureAndAbort(t *testing.T) {
	pub := &recorder{}
	s := serveWith(t, func(c *Config) { c.Boot = pub })
	const mac = "52:54:00:12:34:58"
	n := s.do("POST", "/v1/nodes", `{"name":"td-1","driver":"fake-hardware","boot_interface":"ipxe","deploy_interface":"direct",
		"inspect_interface":"agent","rescue_interface":"agent",
		"driver_info":{"deploy_kernel":"http://127.0.0.1/k","deploy_ramdisk":"http://127.0.0.1/r",
		"rescue_kernel":"http://127.0.0.1/rk","rescue_ramdisk":"http://127.0.0.1/rr"},
		"instance_info":{"image_source":"http://127.0.0.1/img","image_checksum":"`+strings.Repeat("ab", 32)+`"}}`, 201)
	s.do("POST", "/v1/ports", `{"node_uuid":"`+n["uuid"].(string)+`","address":"`+mac+`"}`, 201)
	s.do("PUT", "/v1/nodes/td-1/states/provision", `{"target":"manage"}`, 202)
	s.wait("td-1", "manageable")

	var want []string
	// check asserts what was published since the last check, and the power.
	check := func(what, power string) {
		t.Helper()
		want = append(want, "ramdisk "+mac, "withdraw")
		if got := pub.seen(); !slices.Equal(got, want) {
			t.Fatalf("%s: published %v, want %v", what, got, want)
		}
		if got := s.do("GET", "/v1/nodes/td-1", "", 200)["power_state"]; got != power {
			t.Errorf("%s: power_state %v, want %q", what, got, power)
		}
	}
	abort := func(from, to string) {
		t.Helper()
		s.waitParked("td-1", from)
		s.do("PUT", "/v1/nodes/td-1/states/provision", `{"target":"abort"}`, 202)
		s.wait("td-1", to)
	}

	// Clean wait (no agent heartbeats) aborted: powered off.
	s.do("PUT", "/v1/nodes/td-1/states/provision", `{"target":"clean","clean_steps":[{"interface":"deploy","step":"erase_devices_metadata"}]}`, 202)
	abort("clean wait", "clean failed")
	check("clean abort", "power off")
	s.do("PUT", "/v1/nodes/td-1/states/provision", `{"target":"manage"}`, 202)
	s.wait("td-1", "manageable")

	// Inspect wait aborted: powered off.
	s.do("PUT", "/v1/nodes/td-1/states/provision", `{"target":"inspect"}`, 202)
	abort("inspect wait", "inspect failed")
	check("inspect abort", "power off")
	s.do("PUT", "/v1/nodes/td-1/states/provision", `{"target":"manage"}`, 202)
	s.wait("td-1", "manageable")

	// A clean step the agent fails: ramdisk withdrawn, power kept on,
	// maintenance (Ironic leaves the node on for the operator).
	s.do("PUT", "/v1/nodes/td-1/states/provision", `{"target":"clean","clean_steps":[{"interface":"deploy","step":"erase_devices_metadata"}]}`, 202)
	failing := fakeAgentEnding(t, ipa.StatusFailed)
	s.agentRun("td-1", mac, failing, "clean failed")
	s.wait("td-1", "clean failed")
	check("failed clean step", "power on")
	if got := s.do("GET", "/v1/nodes/td-1", "", 200); got["maintenance"] != true || !strings.Contains(got["last_error"].(string), "disk on fire") {
		t.Errorf("after the failed clean step: maintenance %v, last_error %v", got["maintenance"], got["last_error"])
	}
	s.do("PATCH", "/v1/nodes/td-1", `[{"op":"replace","path":"/maintenance","value":false}]`, 200)
	s.do("PUT", "/v1/nodes/td-1/states/provision", `{"target":"manage"}`, 202)
	s.wait("td-1", "manageable")

	// Automated clean succeeds; deploy wait aborted: power kept.
	s.do("PUT", "/v1/nodes/td-1/states/provision", `{"target":"provide"}`, 202)
	s.agentRun("td-1", mac, fakeAgent(t), "available")
	s.wait("td-1", "available")
	check("provide", "power off")
	s.do("PUT", "/v1/nodes/td-1/states/provision", `{"target":"active"}`, 202)
	abort("wait call-back", "deploy failed")
	check("deploy abort", "power on")

	// Deployed, then rescue wait aborted: power kept.
	s.do("PUT", "/v1/nodes/td-1/states/provision", `{"target":"active"}`, 202)
	s.agentRun("td-1", mac, fakeAgent(t), "active")
	s.wait("td-1", "active")
	want = append(want, "ramdisk "+mac, "local "+mac)
	if got := pub.seen(); !slices.Equal(got, want) {
		t.Fatalf("deploy: published %v, want %v", got, want)
	}
	s.do("PUT", "/v1/nodes/td-1/states/provision", `{"target":"rescue","rescue_password":"pw"}`, 202)
	abort("rescue wait", "rescue failed")
	check("rescue abort", "power on")
	if ii := s.do("GET", "/v1/nodes/td-1", "", 200)["instance_info"].(map[string]any); ii["hashed_rescue_password"] != nil {
		t.Errorf("the rescue password survived the abort: %v", ii)
	}
}

// waitParked polls until node rests unlocked in the wait state (a wait
// state keeps its target, so wait's resting test does not apply).
func (s *served) waitParked(node, state string) {
	s.t.Helper()
	deadline := time.Now().Add(testTimeout)
	for time.Now().Before(deadline) {
		n := s.do("GET", "/v1/nodes/"+node, "", 200)
		if n["provision_state"] == state && n["reservation"] == nil {
			return
		}
		time.Sleep(10 * time.Millisecond) // polling interval, bounded by the deadline
	}
	s.t.Fatalf("%s never parked in %s", node, state)
}
