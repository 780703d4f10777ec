package server

import (
	"slices"
	"strings"
	"testing"
)

// bigRule is issue 13's rule in the form Ironic master accepts: Ironic
// registers no "ge" operator (the brief's {"op":"ge"} is refused, as
// TestInspectionRulesRefuseGe checks), and interpolation gives strings, so
// "at least 1024 MiB" is !lt against the string "1024" (compared as
// strings: true for 2048..9999). The actions use the deprecated positional
// args, as the brief wrote them, plus one that proves the rule ran where
// the inspection itself also sets cpu_arch.
const bigRule = `{"description": "big machines", "priority": 10,
	"conditions": [{"op": "!lt", "args": {"values": ["{inventory[memory][physical_mb]}", "1024"]}}],
	"actions": [{"op": "add-trait", "args": ["CUSTOM_BIG"]},
		{"op": "set-attribute", "args": ["/properties/cpu_arch", "{inventory[cpu][architecture]}"]},
		{"op": "set-attribute", "args": {"path": "/extra/rule_arch", "value": "{inventory[cpu][architecture]}"}},
		{"op": "set-plugin-data", "args": {"path": "rules.big", "value": "{inventory[memory][physical_mb]}"}}]}`

// hugeRule never matches ("8192" < "99999" as strings): its trait must
// not appear.
const hugeRule = `{"priority": 5,
	"conditions": [{"op": "!lt", "args": {"values": ["{inventory[memory][physical_mb]}", "99999"]}}],
	"actions": [{"op": "add-trait", "args": {"name": "CUSTOM_HUGE"}}]}`

func TestInspectionRulesRefuseGe(t *testing.T) {
	s := serveWith(t, nil)
	brief := `{"conditions":[{"op":"ge","args":["{inventory[memory][physical_mb]}", 1024]}],
		"actions":[{"op":"add-trait","args":["CUSTOM_BIG"]},{"op":"set-attribute","args":["/properties/cpu_arch","{inventory[cpu][architecture]}"]}]}`
	got := s.do("POST", "/v1/inspection_rules", brief, 400)
	if msg := faultString(got); !strings.HasPrefix(msg, "Schema error: 'ge' is not one of ['eq', 'lt', 'gt',") {
		t.Fatalf("ge: %q", msg)
	}
}

// faultString digs the message out of Ironic's error body.
func faultString(body map[string]any) string {
	raw, _ := body["error_message"].(string)
	i := strings.Index(raw, `"faultstring": "`)
	if i < 0 {
		return raw
	}
	rest := raw[i+len(`"faultstring": "`):]
	return rest[:strings.Index(rest, `", "debuginfo"`)]
}

// TestInspectionRulesAgentInspection: rules run when the agent posts its
// inventory (POST /v1/continue_inspection) for a node in inspect wait, and
// a failing rule fails the inspection with Ironic's text.
func TestInspectionRulesAgentInspection(t *testing.T) {
	s := serveWith(t, func(c *Config) { c.Boot = &recorder{} })
	const mac = "52:54:00:12:34:61"
	n := s.do("POST", "/v1/nodes", `{"name":"ir-1","driver":"fake-hardware","boot_interface":"ipxe","inspect_interface":"agent",
		"driver_info":{"deploy_kernel":"http://127.0.0.1/k","deploy_ramdisk":"http://127.0.0.1/r"}}`, 201)
	s.do("POST", "/v1/ports", `{"node_uuid":"`+n["uuid"].(string)+`","address":"`+mac+`"}`, 201)
	s.do("PUT", "/v1/nodes/ir-1/states/provision", `{"target":"manage"}`, 202)
	s.wait("ir-1", "manageable")
	s.do("POST", "/v1/inspection_rules", bigRule, 201)
	s.do("POST", "/v1/inspection_rules", hugeRule, 201)

	inventory := `{"inventory": {"cpu": {"count": 8, "architecture": "aarch64"}, "memory": {"physical_mb": 8192, "total": 8589934592},
		"disks": [{"name": "/dev/vda", "size": 21474836480}], "interfaces": [{"name": "eth0", "mac_address": "` + mac + `"}],
		"bmc_address": "127.0.0.9", "bmc_password": "hunter2"}, "collector": "default"}`
	s.do("PUT", "/v1/nodes/ir-1/states/provision", `{"target":"inspect"}`, 202)
	s.waitParked("ir-1", "inspect wait")
	s.do("POST", "/v1/continue_inspection", inventory, 202)
	s.wait("ir-1", "manageable")
	got := s.do("GET", "/v1/nodes/ir-1", "", 200)
	props, extra := got["properties"].(map[string]any), got["extra"].(map[string]any)
	if props["cpu_arch"] != "aarch64" || extra["rule_arch"] != "aarch64" {
		t.Errorf("properties %v, extra %v", props, extra)
	}
	traits := s.do("GET", "/v1/nodes/ir-1/traits", "", 200)["traits"].([]any)
	if !slices.Contains(traits, any("CUSTOM_BIG")) || slices.Contains(traits, any("CUSTOM_HUGE")) {
		t.Errorf("traits %v, want CUSTOM_BIG and not CUSTOM_HUGE", traits)
	}
	pd := s.do("GET", "/v1/nodes/ir-1/inventory", "", 200)["plugin_data"].(map[string]any)
	if rules, _ := pd["rules"].(map[string]any); rules["big"] != "8192" || pd["collector"] != "default" {
		t.Errorf("plugin data %v", pd)
	}

	// A failing rule fails the inspection (Ironic's continue_inspection text).
	s.do("DELETE", "/v1/inspection_rules", "", 204)
	s.do("POST", "/v1/inspection_rules", `{"conditions": [{"op": "contains", "args": {"value": "{inventory[cpu][architecture]}", "regex": "arch"}}],
		"actions": [{"op": "fail", "args": {"msg": "no ARM machines here"}}]}`, 201)
	s.do("PUT", "/v1/nodes/ir-1/states/provision", `{"target":"inspect"}`, 202)
	s.waitParked("ir-1", "inspect wait")
	s.do("POST", "/v1/continue_inspection", inventory, 202)
	s.wait("ir-1", "inspect failed")
	got = s.do("GET", "/v1/nodes/ir-1", "", 200)
	if want := "Failed to finish inspection: Failed to inspect hardware. Reason: no ARM machines here"; got["last_error"] != want {
		t.Errorf("last_error %q, want %q", got["last_error"], want)
	}
}

// TestInspectionRulesRedfishInspection: rules run on the inventory
// out-of-band inspection read from the BMC emulator.
func TestInspectionRulesRedfishInspection(t *testing.T) {
	e := newVendorEnv(t)
	e.do("POST", "/v1/inspection_rules", bigRule, 201)
	e.do("POST", "/v1/inspection_rules", hugeRule, 201)
	e.do("PUT", "/v1/nodes/"+e.node+"/states/provision", `{"target":"manage"}`, 202)
	e.wait(e.node, "manageable")
	e.do("PUT", "/v1/nodes/"+e.node+"/states/provision", `{"target":"inspect"}`, 202)
	e.wait(e.node, "manageable")
	got := e.do("GET", "/v1/nodes/"+e.node, "", 200)
	props, extra := got["properties"].(map[string]any), got["extra"].(map[string]any)
	if props["cpu_arch"] != "x86_64" || extra["rule_arch"] != "x86_64" {
		t.Errorf("properties %v, extra %v", props, extra)
	}
	traits := e.do("GET", "/v1/nodes/"+e.node+"/traits", "", 200)["traits"].([]any)
	if !slices.Contains(traits, any("CUSTOM_BIG")) || slices.Contains(traits, any("CUSTOM_HUGE")) {
		t.Errorf("traits %v, want CUSTOM_BIG and not CUSTOM_HUGE (memory %d MiB)", traits, e.m.HW.DIMMs*e.m.HW.DIMMMiB)
	}

	// A rule's failure is the inspection's (Ironic's str(e) as last_error).
	e.do("DELETE", "/v1/inspection_rules", "", 204)
	e.do("POST", "/v1/inspection_rules", `{"conditions": [{"op": "eq", "args": {"values": ["{inventory[system_vendor][manufacturer]}", "Anvil"]}}],
		"actions": [{"op": "set-attribute", "args": {"path": "/properties/cpus/nested", "value": 1}}]}`, 201)
	e.do("PUT", "/v1/nodes/"+e.node+"/states/provision", `{"target":"inspect"}`, 202)
	e.wait(e.node, "inspect failed")
	got = e.do("GET", "/v1/nodes/"+e.node, "", 200)
	if want := "Inspection rule action execution failed. Reason: Failed to set attribute /properties/cpus/nested with value 1: " +
		"'int' object does not support item assignment"; got["last_error"] != want {
		t.Errorf("last_error %q\nwant %q", got["last_error"], want)
	}
}
