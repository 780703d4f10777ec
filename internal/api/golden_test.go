package api

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/model"
)

// referenceDir holds the Ironic reference files kept in the repository
// (testdata/ironic; testdata/README.md says where they come from).
const referenceDir = "../../testdata/ironic"

func loadSample(t *testing.T, name string) any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(referenceDir, "api-samples", name))
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// shapeRules say which differences from a sample are expected, each for a
// documented reason.
type shapeRules struct {
	missing map[string]string // key → why Anvil lacks it
	extra   map[string]string // key → why the sample lacks it
	retype  map[string]string // key → why its JSON type differs
}

// opaqueKeys hold free-form data: their contents are not a shape.
var opaqueKeys = map[string]bool{"driver_info": true, "driver_internal_info": true, "instance_info": true,
	"extra": true, "properties": true, "local_link_connection": true, "internal_info": true,
	"raid_config": true, "target_raid_config": true, "network_data": true, "clean_step": true,
	"deploy_step": true, "service_step": true}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	}
	return fmt.Sprintf("%T", v)
}

// compareShape compares key sets (recursively through objects and the
// first element of arrays) and JSON types where both values are non-null.
func compareShape(t *testing.T, where string, sample, ours any, r shapeRules) {
	t.Helper()
	sk, ok := jsonKind(sample), jsonKind(ours)
	if sk == "null" || ok == "null" {
		return
	}
	if sk != ok {
		if _, fine := r.retype[lastKey(where)]; !fine {
			t.Errorf("%s: sample is %s, Anvil gives %s", where, sk, ok)
		}
		return
	}
	switch s := sample.(type) {
	case map[string]any:
		o := ours.(map[string]any)
		for k := range s {
			if _, ok := o[k]; !ok {
				if _, fine := r.missing[k]; !fine {
					t.Errorf("%s: key %q of the sample is missing", where, k)
				}
			}
		}
		for k := range o {
			if _, ok := s[k]; !ok {
				if _, fine := r.extra[k]; !fine {
					t.Errorf("%s: key %q is not in the sample", where, k)
				}
			}
		}
		for k, sv := range s {
			ov, ok := o[k]
			switch {
			case !ok:
			case opaqueKeys[k]:
				if a, b := jsonKind(sv), jsonKind(ov); a != "null" && b != "null" && a != b {
					t.Errorf("%s.%s: sample is %s, Anvil gives %s", where, k, a, b)
				}
			default:
				compareShape(t, where+"."+k, sv, ov, r)
			}
		}
	case []any:
		o := ours.([]any)
		if len(s) > 0 && len(o) > 0 {
			compareShape(t, where+"[0]", s[0], o[0], r)
		}
	}
}

func lastKey(where string) string {
	return where[strings.LastIndex(where, ".")+1:]
}

// observedNodeKeys is the 63-key node of a real Ironic at 1.82, as recorded
// in ironic-21.4-observed.md.
func observedNodeKeys(t *testing.T) []string {
	raw, err := os.ReadFile(filepath.Join(referenceDir, "ironic-21.4-observed.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)at 1\\.82: 63 keys[^:]*:\\s*`([^`]+)`").FindSubmatch(raw)
	if m == nil {
		t.Fatal("observed 1.82 node key list not found")
	}
	var keys []string
	for _, k := range strings.Split(string(m[1]), ",") {
		keys = append(keys, strings.TrimSpace(k))
	}
	if len(keys) != 63 {
		t.Fatalf("parsed %d observed keys", len(keys))
	}
	return keys
}

// Keys of the (master) samples that Ironic shows only from a version:
// below it Anvil lacks them too.
var (
	nodeSampleKeysByMinor = map[string]int{"instance_name": 104}
	portSampleKeysByMinor = map[string]int{"description": 97, "vendor": 100, "category": 101}
)

// missingBelow is the allowance for sample keys newer than minor.
func missingBelow(minor int, byMinor map[string]int) map[string]string {
	m := map[string]string{}
	for k, v := range byMinor {
		if v > minor {
			m[k] = fmt.Sprintf("added in 1.%d, above the version asked", v)
		}
	}
	return m
}

// newerThanSamples are keys Ironic master shows that the API reference
// samples (master) still lack; each must be seen at least once.
var newerThanSamples = map[string]string{
	"disable_power_off": "node field of 1.95; not in the node samples",
	"health":            "node field of 1.109; not in the node samples",
}

// nodeExtras are node keys that real Ironic shows at ≤ 1.89 (observed at
// 1.82, or VERSIONED_FIELDS 1.83-1.89) but the docs samples predate, and
// the newer ones above.
func nodeExtras(t *testing.T) map[string]string {
	extra := map[string]string{"parent_node": "1.83", "firmware_interface": "1.86", "service_step": "1.87"}
	for _, k := range observedNodeKeys(t) {
		extra[k] = "observed on Ironic 21.4 at 1.82"
	}
	for k, why := range newerThanSamples {
		extra[k] = why
	}
	return extra
}

func goldenEnv(t *testing.T) (*env, *model.Node) {
	e := newEnv(t)
	n := e.createNode(`{"driver":"fake-hardware","name":"test_node_classic","resource_class":"bm-large",
		"driver_info":{"ipmi_username":"ADMIN","ipmi_password":"password"}}`)
	stored, err := e.st.Nodes().GetNode(context.Background(), n["uuid"].(string))
	if err != nil {
		t.Fatal(err)
	}
	return e, stored
}

func TestGoldenNodeKeysAt1_82MatchObserved(t *testing.T) {
	e, n := goldenEnv(t)
	got := orderedKeys(t, e.do("GET", "/v1/nodes/"+n.UUID, "", at(82)).Body.Bytes())
	if want := observedNodeKeys(t); !slices.Equal(got, want) {
		t.Errorf("node keys at 1.82 differ from the observed Ironic:\n got %v\nwant %v", got, want)
	}
}

func TestGoldenShapes(t *testing.T) {
	// 1.89 is Metal3's oldest choice, 1.110 its newest; MaxMinor is Ironic master's (1.115).
	for _, minor := range []int{89, MaxMinor} {
		t.Run(versionString(minor), func(t *testing.T) { goldenShapesAt(t, minor) })
	}
}

func goldenShapesAt(t *testing.T, minor int) {
	e, n := goldenEnv(t)
	ctx := context.Background()
	port := &model.Port{UUID: "d2b30520-907d-46c8-bfee-c5586e6fb3a1", Address: "22:22:22:22:22:22", NodeUUID: n.UUID,
		PXEEnabled: true, Name: "port1", PhysicalNetwork: "physnet1", IsSmartNIC: true,
		LocalLinkConnection: model.JSON{"port_id": "Ethernet3/1", "switch_id": "0a:1b:2c:3d:4e:5f", "switch_info": "switch1"}}
	if err := e.st.Ports().CreatePort(ctx, port); err != nil {
		t.Fatal(err)
	}
	_ = e.st.Nodes().AddHistory(ctx, &model.HistoryEvent{NodeUUID: n.UUID, Severity: "ERROR", Event: "Something is wrong"}, 0)
	nodeRules := shapeRules{missing: missingBelow(minor, nodeSampleKeysByMinor), extra: nodeExtras(t)}
	portRules := shapeRules{missing: missingBelow(minor, portSampleKeysByMinor),
		extra: map[string]string{"name": "port name (1.88), in the other port samples",
			"description": "port description (1.97), in the other port samples"}}
	if minor >= minorDynamicPortgroup {
		portRules.extra["available_for_dynamic_portgroup"] = "port field of 1.111 (Ironic master 63fefc3ce); not in the port samples"
	}
	driverRules := shapeRules{
		missing: map[string]string{"enabled_firmware_interface": "typo in the sample; Ironic's key is enabled_firmware_interfaces"},
		extra:   map[string]string{"enabled_firmware_interfaces": "Ironic's real key (the sample misspells it)"},
	}
	v1Rules := shapeRules{
		extra: map[string]string{"conductors": "advertised by Ironic from 1.49", "allocations": "advertised by Ironic from 1.52 (observed)",
			"events": "advertised by Ironic from 1.54 (observed)", "deploy_templates": "advertised by Ironic from 1.55 (observed)",
			"shards": "advertised by Ironic from 1.82 (observed)", "continue_inspection": "advertised by Ironic master from 1.84",
			"runbooks": "advertised by Ironic master from 1.92", "inspection_rules": "advertised by Ironic master from 1.96",
			"version": "part of Ironic's v1() document (observed)"},
		retype: map[string]string{"media_types": "Ironic returns an object (observed on 21.4 and in v1/__init__.py); the sample shows a list"},
	}
	tests := []struct {
		sample, method, path, body string
		rules                      shapeRules
	}{
		{"node-show-response.json", "GET", "/v1/nodes/" + n.UUID, "", nodeRules},
		{"node-create-response.json", "POST", "/v1/nodes", `{"driver":"fake-hardware","name":"test_node_x","driver_info":{"ipmi_username":"ADMIN","ipmi_password":"password"}}`, nodeRules},
		{"nodes-list-response.json", "GET", "/v1/nodes", "", nodeRules},
		{"nodes-list-details-response.json", "GET", "/v1/nodes/detail", "", nodeRules},
		{"node-update-driver-info-response.json", "PATCH", "/v1/nodes/" + n.UUID, `[{"op":"add","path":"/driver_info/deploy_kernel","value":"k"}]`, nodeRules},
		{"node-get-state-response.json", "GET", "/v1/nodes/" + n.UUID + "/states", "", shapeRules{}},
		{"node-validate-response.json", "GET", "/v1/nodes/" + n.UUID + "/validate", "", shapeRules{
			missing: map[string]string{"reason": "fake-hardware validates every interface, so no result here has a reason; TestNodeStatesAndManagement checks a failed one"}}},
		{"node-get-boot-device-response.json", "GET", "/v1/nodes/" + n.UUID + "/management/boot_device", "", shapeRules{}},
		{"node-get-supported-boot-devices-response.json", "GET", "/v1/nodes/" + n.UUID + "/management/boot_device/supported", "", shapeRules{}},
		{"node-history-list-response.json", "GET", "/v1/nodes/" + n.UUID + "/history", "", shapeRules{}},
		{"node-port-list-response.json", "GET", "/v1/nodes/" + n.UUID + "/ports", "", portRules},
		{"node-port-detail-response.json", "GET", "/v1/nodes/" + n.UUID + "/ports/detail", "", portRules},
		{"port-create-response.json", "POST", "/v1/ports", `{"address":"11:11:11:11:11:11","node_uuid":"` + n.UUID + `","name":"port2","physical_network":"physnet1"}`, portRules},
		{"port-list-response.json", "GET", "/v1/ports", "", portRules},
		{"port-list-detail-response.json", "GET", "/v1/ports/detail", "", portRules},
		{"port-update-response.json", "PATCH", "/v1/ports/" + port.UUID, `[{"op":"replace","path":"/address","value":"22:22:22:22:22:23"}]`, portRules},
		{"drivers-list-response.json", "GET", "/v1/drivers", "", shapeRules{}},
		{"drivers-list-detail-response.json", "GET", "/v1/drivers?detail=True", "", driverRules},
		{"driver-get-response.json", "GET", "/v1/drivers/fake-hardware", "", driverRules},
		{"conductor-list-response.json", "GET", "/v1/conductors", "", shapeRules{}},
		{"conductor-list-details-response.json", "GET", "/v1/conductors?detail=True", "", shapeRules{}},
		{"conductor-show-response.json", "GET", "/v1/conductors/anvil-test", "", shapeRules{}},
		{"api-root-response.json", "GET", "/", "", shapeRules{}},
		{"api-v1-root-response.json", "GET", "/v1/", "", v1Rules},
	}
	seen := map[string]bool{}
	for _, tc := range tests {
		t.Run(tc.sample, func(t *testing.T) {
			rec := e.do(tc.method, tc.path, tc.body, at(minor))
			if rec.Code >= 300 {
				t.Fatalf("%s %s: %d %s", tc.method, tc.path, rec.Code, rec.Body.String())
			}
			var ours any
			if err := json.Unmarshal(rec.Body.Bytes(), &ours); err != nil {
				t.Fatal(err)
			}
			sample := loadSample(t, tc.sample)
			if strings.HasPrefix(tc.sample, "node-validate") {
				sample = map[string]any{"boot": sample.(map[string]any)["boot"], "rescue": sample.(map[string]any)["rescue"]}
				o := ours.(map[string]any)
				ours = map[string]any{"boot": o["boot"], "rescue": o["rescue"]}
			}
			compareShape(t, tc.sample, sample, ours, tc.rules)
			for k := range newerThanSamples {
				if strings.Contains(rec.Body.String(), `"`+k+`": `) {
					seen[k] = true
				}
			}
		})
	}
	for k := range newerThanSamples {
		if want := fieldMinor(k) <= minor; seen[k] != want {
			t.Errorf("key %q shown: %v at 1.%d; the allowance must match what Anvil shows", k, seen[k], minor)
		}
	}
}

func TestGoldenDriverProperties(t *testing.T) {
	e := newEnv(t)
	var ours map[string]any
	_ = json.Unmarshal(e.do("GET", "/v1/drivers/fake-hardware/properties", "", latest).Body.Bytes(), &ours)
	for name, m := range map[string]map[string]any{"sample": loadSample(t, "driver-property-response.json").(map[string]any), "anvil": ours} {
		if len(m) == 0 {
			t.Fatalf("%s: empty", name)
		}
		for k, v := range m {
			if _, ok := v.(string); !ok {
				t.Errorf("%s: %s is %T, want a description string", name, k, v)
			}
		}
	}
}

func TestGoldenRulesAreNeeded(t *testing.T) {
	// Every documented exception must still be needed somewhere: a stale
	// one would hide a regression.
	extras := nodeExtras(t)
	keys := make([]string, 0, len(extras))
	for k := range extras {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if nodeFieldIndex[k] == nil {
			t.Errorf("observed node key %q has no field in the node table", k)
		}
	}
}
