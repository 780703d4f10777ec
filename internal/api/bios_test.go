package api

import (
	"testing"

	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
)

func sp(s string) *string { return &s }

// TestBIOSAndFirmwareEndpoints: GET /bios (1.40, ?detail and ?fields at
// 1.74), GET /bios/{name} and GET /firmware (1.86) render the store's rows
// in Ironic's shapes; older versions and bad queries get Ironic's answers.
func TestBIOSAndFirmwareEndpoints(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(&model.Node{Name: "b1", ProvisionState: fsm.Manageable})
	lo, hi, ro := int64(0), int64(300), true
	if err := e.st.Settings().SyncBIOSSettings(t.Context(), n.UUID, []model.BIOSSetting{
		{Name: "ProcTurboMode", Value: sp("Enabled"), AttributeType: sp("Enumeration"), AllowableValues: []string{"Enabled", "Disabled"}},
		{Name: "PowerOnDelay", Value: sp("30"), AttributeType: sp("Integer"), LowerBound: &lo, UpperBound: &hi},
		{Name: "SystemServiceTag", Value: sp("ABC"), ReadOnly: &ro},
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.st.Settings().SyncFirmwareComponents(t.Context(), n.UUID, []model.FirmwareComponent{{Component: "bios", CurrentVersion: "1.0.0"}}); err != nil {
		t.Fatal(err)
	}
	if err := e.st.Settings().SyncFirmwareComponents(t.Context(), n.UUID, []model.FirmwareComponent{{Component: "bios", CurrentVersion: "1.1.0"}}); err != nil {
		t.Fatal(err)
	}
	bios := "/v1/nodes/b1/bios"
	listed := func(want int, keys ...string) func(t *testing.T, m map[string]any) {
		return func(t *testing.T, m map[string]any) {
			t.Helper()
			list, _ := m["bios"].([]any)
			if len(list) != want {
				t.Fatalf("bios = %v, want %d settings", m["bios"], want)
			}
			first := list[0].(map[string]any)
			if len(first) != len(keys) {
				t.Errorf("setting keys %v, want %v", first, keys)
			}
			for _, k := range keys {
				if _, ok := first[k]; !ok {
					t.Errorf("setting lacks %s: %v", k, first)
				}
			}
		}
	}
	detailKeys := []string{"created_at", "updated_at", "name", "value", "attribute_type", "allowable_values", "lower_bound",
		"max_length", "min_length", "read_only", "reset_required", "unique", "upper_bound", "links"}
	runVCases(t, e, []vcase{
		{"below 1.40", "GET", bios, "", at(39), 404, "", nil},
		{"list", "GET", bios, "", at(40), 200, "", listed(3, "created_at", "updated_at", "name", "value", "links")},
		{"detail at 1.74", "GET", bios + "?detail=true", "", at(74), 200, "", listed(3, detailKeys...)},
		{"detail before 1.74", "GET", bios + "?detail=true", "", at(73), 400, "Invalid query parameter ?detail=True received.", nil},
		{"fields", "GET", bios + "?fields=name,read_only", "", at(74), 200, "", listed(3, "created_at", "updated_at", "name", "read_only", "links")},
		{"fields and detail", "GET", bios + "?fields=name&detail=true", "", at(74), 400, "Can not specify ?detail=True and fields in the same request.", nil},
		{"bad detail", "GET", bios + "?detail=maybe", "", at(74), 400, "", nil},
		{"unknown query", "GET", bios + "?limit=1", "", at(74), 400, "Unexpected arguments: limit", nil},
		{"one at 1.74", "GET", bios + "/PowerOnDelay", "", at(74), 200, "", func(t *testing.T, m map[string]any) {
			s, _ := m["PowerOnDelay"].(map[string]any)
			if s["value"] != "30" || s["upper_bound"] != 300.0 || s["attribute_type"] != "Integer" || s["read_only"] != nil {
				t.Errorf("PowerOnDelay = %v", m)
			}
		}},
		{"one at 1.40", "GET", bios + "/ProcTurboMode", "", at(40), 200, "", func(t *testing.T, m map[string]any) {
			s, _ := m["ProcTurboMode"].(map[string]any)
			if s["value"] != "Enabled" || len(s) != 5 {
				t.Errorf("ProcTurboMode = %v", m)
			}
		}},
		{"missing one", "GET", bios + "/Nope", "", at(74), 404, "Node " + n.UUID + " doesn't have a BIOS setting 'Nope'", nil},
		{"unknown node", "GET", "/v1/nodes/nope/bios", "", at(74), 404, "Node nope could not be found.", nil},
		{"firmware below 1.86", "GET", "/v1/nodes/b1/firmware", "", at(85), 404, "", nil},
		{"firmware", "GET", "/v1/nodes/b1/firmware", "", at(86), 200, "", func(t *testing.T, m map[string]any) {
			list, _ := m["firmware"].([]any)
			if len(list) != 1 {
				t.Fatalf("firmware = %v", m)
			}
			c := list[0].(map[string]any)
			if c["component"] != "bios" || c["initial_version"] != "1.0.0" || c["current_version"] != "1.1.0" ||
				c["last_version_flashed"] != "1.1.0" || c["updated_at"] == nil || len(c) != 6 {
				t.Errorf("component = %v", c)
			}
		}},
	})
}

// TestStepSchema: clean and service steps failing Ironic's _STEPS_SCHEMA
// are refused with 400 before anything is asked of the conductor.
func TestStepSchema(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(&model.Node{Name: "s1", ProvisionState: fsm.Manageable})
	path := "/v1/nodes/" + n.UUID + "/states/provision"
	clean := func(step string) string { return `{"target":"clean","clean_steps":[` + step + `]}` }
	var cases []vcase
	for _, tc := range []struct{ name, step, msg string }{
		{"args not an object", `{"interface":"bios","step":"apply_configuration","args":[]}`, "Invalid clean_steps: [] is not of type 'object'"},
		{"unknown interface", `{"interface":"cpu","step":"x"}`, "Invalid clean_steps: 'cpu' is not one of ['vendor', 'power', 'management', 'firmware', 'deploy', 'bios', 'raid']"},
		{"no step", `{"interface":"bios"}`, "Invalid clean_steps: 'step' is a required property"},
		{"empty step", `{"interface":"bios","step":""}`, "Invalid clean_steps: '' should be non-empty"},
		{"extra key", `{"interface":"bios","step":"factory_reset","priority":5}`, "Invalid clean_steps: Additional properties are not allowed ('priority' was unexpected)"},
		{"bad order", `{"interface":"bios","step":"factory_reset","order":-1}`, "Invalid clean_steps: -1 is less than the minimum of 0"},
	} {
		cases = append(cases, vcase{tc.name, "PUT", path, clean(tc.step), at(90), 400, tc.msg, nil})
	}
	cases = append(cases, vcase{"service args", "PUT", path, `{"target":"service","service_steps":[{"interface":"firmware","step":"update","args":"x"}]}`,
		at(90), 400, "Invalid service_steps: 'x' is not of type 'object'", nil})
	runVCases(t, e, cases)
	e.cond.mu.Lock()
	defer e.cond.mu.Unlock()
	if len(e.cond.provisions) != 0 {
		t.Errorf("the conductor was asked: %+v", e.cond.provisions)
	}
}
