package api

import (
	"fmt"
	"testing"
)

func TestChassisCRUDAndNodes(t *testing.T) {
	e := newEnv(t)
	rec := e.do("POST", "/v1/chassis", `{"description": "rack 1", "extra": {"row": "a"}}`, latest)
	if rec.Code != 201 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body.String())
	}
	c := decode(t, rec)
	id, _ := c["uuid"].(string)
	if rec.Header().Get("Location") != "http://"+testHost+"/v1/chassis/"+id || c["description"] != "rack 1" || len(c) != 7 {
		t.Fatalf("created %v (Location %q)", c, rec.Header().Get("Location"))
	}
	if nodes := c["nodes"].([]any); len(nodes) != 2 || nodes[0].(map[string]any)["href"] != "http://"+testHost+"/v1/chassis/"+id+"/nodes" {
		t.Errorf("nodes links %v", c["nodes"])
	}
	e.createNode(`{"driver": "fake-hardware", "name": "in-rack", "chassis_uuid": "` + id + `"}`)
	e.createNode(`{"driver": "fake-hardware", "name": "elsewhere"}`)
	unknown := "11111111-2222-4333-8444-555555555555"
	listNames := func(t *testing.T, m map[string]any) {
		t.Helper()
		list := m["nodes"].([]any)
		if len(list) != 1 || list[0].(map[string]any)["name"] != "in-rack" {
			t.Errorf("nodes %v", list)
		}
	}
	runVCases(t, e, []vcase{
		{"list", "GET", "/v1/chassis", "", latest, 200, "", func(t *testing.T, m map[string]any) {
			one := m["chassis"].([]any)[0].(map[string]any)
			if len(one) != 3 || one["uuid"] != id || one["description"] != "rack 1" {
				t.Errorf("list %v", m)
			}
		}},
		{"detail", "GET", "/v1/chassis/detail", "", latest, 200, "", func(t *testing.T, m map[string]any) {
			if one := m["chassis"].([]any)[0].(map[string]any); len(one) != 7 {
				t.Errorf("detail %v", one)
			}
		}},
		{"get", "GET", "/v1/chassis/" + id + "?fields=extra", "", latest, 200, "", func(t *testing.T, m map[string]any) {
			if len(m) != 2 || fmt.Sprint(m["extra"]) != "map[row:a]" {
				t.Errorf("get %v", m)
			}
		}},
		{"get not a uuid", "GET", "/v1/chassis/rack", "", latest, 400, "Expected UUID for chassis_uuid: rack", nil},
		{"get unknown", "GET", "/v1/chassis/" + unknown, "", latest, 404, "Chassis " + unknown + " could not be found.", nil},
		{"nodes of the chassis", "GET", "/v1/chassis/" + id + "/nodes", "", latest, 200, "", listNames},
		{"nodes detail of the chassis", "GET", "/v1/chassis/" + id + "/nodes/detail", "", latest, 200, "", listNames},
		{"nodes filter", "GET", "/v1/nodes?chassis_uuid=" + id, "", latest, 200, "", listNames},
		{"nodes filter unknown", "GET", "/v1/nodes?chassis_uuid=" + unknown, "", latest, 404, "Chassis " + unknown + " could not be found.", nil},
		{"node with unknown chassis", "POST", "/v1/nodes", `{"driver": "fake-hardware", "chassis_uuid": "` + unknown + `"}`, latest, 400,
			"Chassis " + unknown + " could not be found.", nil},
		{"bad body", "POST", "/v1/chassis", `{"name": "x"}`, latest, 400,
			"Schema error for chassis: Additional properties are not allowed ('name' was unexpected)", nil},
		{"long description", "POST", "/v1/chassis", fmt.Sprintf(`{"description": "%0256d"}`, 0), latest, 400, "", nil},
		{"bad uuid", "POST", "/v1/chassis", `{"uuid": "nope"}`, latest, 400, "Expected UUID for uuid: nope", nil},
		{"duplicate uuid", "POST", "/v1/chassis", `{"uuid": "` + id + `"}`, latest, 409, "A chassis with UUID " + id + " already exists.", nil},
		{"patch", "PATCH", "/v1/chassis/" + id, `[{"op": "replace", "path": "/description", "value": "rack 2"}, {"op": "add", "path": "/extra/u", "value": 4}]`,
			latest, 200, "", func(t *testing.T, m map[string]any) {
				if m["description"] != "rack 2" || fmt.Sprint(m["extra"]) != "map[row:a u:4]" || m["updated_at"] == nil {
					t.Errorf("patched %v", m)
				}
			}},
		{"patch uuid", "PATCH", "/v1/chassis/" + id, `[{"op": "replace", "path": "/uuid", "value": "` + unknown + `"}]`, latest, 400,
			"Cannot overwrite UUID for an existing Chassis.", nil},
		{"patch unknown field", "PATCH", "/v1/chassis/" + id, `[{"op": "add", "path": "/name", "value": "x"}]`, latest, 400, "", nil},
		{"delete with nodes", "DELETE", "/v1/chassis/" + id, "", latest, 400,
			"Cannot complete the requested action because chassis " + id + " contains nodes.", nil},
		{"node leaves the chassis", "PATCH", "/v1/nodes/in-rack", `[{"op": "remove", "path": "/chassis_uuid"}]`, latest, 200, "", nil},
		{"delete", "DELETE", "/v1/chassis/" + id, "", latest, 204, "", nil},
		{"delete again", "DELETE", "/v1/chassis/" + id, "", latest, 404, "Chassis " + id + " could not be found.", nil},
	})
}
