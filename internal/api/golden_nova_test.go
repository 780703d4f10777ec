package api

import (
	"encoding/json"
	"testing"

	"github.com/anvil-metal/anvil/internal/model"
)

// TestGoldenNovaShapes compares traits, VIFs and portgroups with Ironic's
// api-samples at the maximum version.
func TestGoldenNovaShapes(t *testing.T) {
	e, n := goldenEnv(t)
	ctx := t.Context()
	if _, err := e.cond.SetTraits(ctx, n.UUID, func([]string) ([]string, error) {
		return []string{"CUSTOM_TRAIT1", "HW_CPU_X86_VMX"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cond.UpdateNode(ctx, n.UUID, func(n *model.Node) error { n.Interfaces.Network = "flat"; return nil }); err != nil {
		t.Fatal(err)
	}
	pg := &model.Portgroup{UUID: "e43c722c-248e-4c6e-8ce8-0d8ff129387a", NodeUUID: n.UUID, Name: "test_portgroup",
		Address: "11:11:11:11:11:11", Mode: "active-backup", StandalonePortsSupported: true,
		PhysicalNetwork: "physnet1", Category: "hypernet"}
	if err := e.st.Ports().CreatePortgroup(ctx, pg); err != nil {
		t.Fatal(err)
	}
	port := &model.Port{UUID: "d2b30520-907d-46c8-bfee-c5586e6fb3a1", Address: "22:22:22:22:22:22", NodeUUID: n.UUID,
		PortgroupUUID: pg.UUID, PXEEnabled: true}
	if err := e.st.Ports().CreatePort(ctx, port); err != nil {
		t.Fatal(err)
	}
	if rec := e.do("POST", "/v1/nodes/"+n.UUID+"/vifs", `{"id": "1974dcfa-836f-41b2-b541-686c100900e5"}`, latest); rec.Code != 204 {
		t.Fatalf("attach: %d %s", rec.Code, rec.Body.String())
	}
	pgRules := shapeRules{extra: map[string]string{"dynamic_portgroup": dynPGWhy}}
	tests := []struct {
		sample, method, path, body string
		rules                      shapeRules
	}{
		{"node-traits-list-response.json", "GET", "/v1/nodes/" + n.UUID + "/traits", "", shapeRules{}},
		{"node-vif-list-response.json", "GET", "/v1/nodes/" + n.UUID + "/vifs", "", shapeRules{}},
		{"portgroup-create-response.json", "POST", "/v1/portgroups", `{"node_uuid": "` + n.UUID + `", "address": "11:11:11:11:11:12", "name": "pg2", "physical_network": "physnet1", "category": "hypernet"}`, pgRules},
		{"portgroup-list-response.json", "GET", "/v1/portgroups", "", pgRules},
		{"portgroup-list-detail-response.json", "GET", "/v1/portgroups/detail", "", pgRules},
		{"portgroup-update-response.json", "PATCH", "/v1/portgroups/" + pg.UUID, `[{"op": "replace", "path": "/address", "value": "22:22:22:22:22:22"}]`, pgRules},
		{"node-portgroup-list-response.json", "GET", "/v1/nodes/" + n.UUID + "/portgroups", "", pgRules},
		{"node-portgroup-detail-response.json", "GET", "/v1/nodes/" + n.UUID + "/portgroups/detail", "", shapeRules{
			extra: map[string]string{"physical_network": "portgroup physical_network (1.102), in the other portgroup samples",
				"category":          "portgroup category (1.103), in the other portgroup samples",
				"dynamic_portgroup": dynPGWhy}}},
		{"allocation-create-response.json", "POST", "/v1/allocations", `{"name": "allocation-2", "resource_class": "bm-large", "traits": ["CUSTOM_GOLD"]}`, shapeRules{}},
		{"allocation-show-response.json", "GET", "/v1/allocations/allocation-2", "", shapeRules{}},
		{"allocations-list-response.json", "GET", "/v1/allocations", "", shapeRules{}},
		{"allocation-update-response.json", "PATCH", "/v1/allocations/allocation-2", `[{"op": "add", "path": "/extra/foo", "value": "bar"}]`, shapeRules{}},
		{"portgroup-port-list-response.json", "GET", "/v1/portgroups/" + pg.UUID + "/ports", "", shapeRules{}},
		{"portgroup-port-detail-response.json", "GET", "/v1/portgroups/" + pg.UUID + "/ports/detail", "", shapeRules{
			extra: map[string]string{"name": "port name (1.88)", "description": "port description (1.97)",
				"vendor": "port vendor (1.100)", "category": "port category (1.101)",
				"available_for_dynamic_portgroup": dynPGWhy}}},
	}
	for _, tc := range tests {
		t.Run(tc.sample, func(t *testing.T) {
			rec := e.do(tc.method, tc.path, tc.body, latest)
			if rec.Code >= 300 {
				t.Fatalf("%s %s: %d %s", tc.method, tc.path, rec.Code, rec.Body.String())
			}
			var ours any
			if err := json.Unmarshal(rec.Body.Bytes(), &ours); err != nil {
				t.Fatal(err)
			}
			compareShape(t, tc.sample, loadSample(t, tc.sample), ours, tc.rules)
		})
	}
}

// dynPGWhy allows the 1.111 keys (Ironic master 63fefc3ce), which the
// API reference samples predate.
const dynPGWhy = "1.111 (dynamic portgroups); not in the samples"
