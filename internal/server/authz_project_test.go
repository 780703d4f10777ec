package server

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/auth"
	"github.com/anvil-metal/anvil/internal/auth/authtest"
)

// policyServer serves Anvil with jwt authentication; tok mints a token
// for a project (none: system scope) with roles, call sends a request at
// the latest version and returns its status and body.
func policyServer(t *testing.T) (tok func(project string, roles ...any) string, call func(authz, method, path, body string) (int, string)) {
	iss := authtest.NewIssuer(t)
	s := serveWith(t, func(c *Config) {
		c.Security.Auth = auth.Config{Strategy: auth.JWT, JWT: auth.JWTConfig{Issuer: iss.URL}}
	})
	tok = func(project string, roles ...any) string {
		claims := map[string]any{"roles": roles}
		if project != "" {
			claims["project_id"] = project
		}
		return "Bearer " + iss.Token(t, iss.Key, claims)
	}
	call = func(authz, method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, s.base+path, strings.NewReader(body))
		req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", authz)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if strings.HasPrefix(path, "/v1/events/stream") {
			return resp.StatusCode, "" // a stream: not read
		}
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}
	return tok, call
}

// TestProjectPolicy: project-scoped tokens see only nodes their project
// owns or leases, act on them per Ironic's default policy, and reach no
// system-wide resource.
func TestProjectPolicy(t *testing.T) {
	tok, call := policyServer(t)
	system := tok("", "admin")
	uuids := map[string]string{}
	for _, n := range []struct{ name, owner, lessee string }{{"a", "p1", ""}, {"b", "p2", "p1"}, {"c", "p2", ""}} {
		st, body := call(system, "POST", "/v1/nodes", `{"driver": "fake-hardware", "name": "`+n.name+`", "owner": "`+n.owner+`", "lessee": "`+n.lessee+`"}`)
		if st != 201 {
			t.Fatalf("create %s: %d %s", n.name, st, body)
		}
		var node struct{ UUID string }
		_ = json.Unmarshal([]byte(body), &node)
		uuids[n.name] = node.UUID
	}
	ports := map[string]string{}
	for i, n := range []string{"a", "c"} {
		st, body := call(system, "POST", "/v1/ports", `{"address": "52:54:00:00:00:0`+string(rune('1'+i))+`", "node_uuid": "`+uuids[n]+`"}`)
		if st != 201 {
			t.Fatalf("port on %s: %d %s", n, st, body)
		}
		var p struct{ UUID string }
		_ = json.Unmarshal([]byte(body), &p)
		ports[n] = p.UUID
	}
	member, admin, reader := tok("p1", "member"), tok("p1", "admin"), tok("p1", "reader")
	conns, targets := map[string]string{}, map[string]string{}
	for _, n := range []string{"a", "c"} {
		for kind, body := range map[string]string{
			"connectors": `{"node_uuid": "` + uuids[n] + `", "type": "iqn", "connector_id": "iqn.` + n + `"}`,
			"targets":    `{"node_uuid": "` + uuids[n] + `", "volume_type": "iscsi", "boot_index": 0, "volume_id": "v", "properties": {"target_lun": 1}}`,
		} {
			st, body := call(system, "POST", "/v1/volume/"+kind, body)
			if st != 201 {
				t.Fatalf("volume %s on %s: %d %s", kind, n, st, body)
			}
			var v struct{ UUID string }
			_ = json.Unmarshal([]byte(body), &v)
			map[string]map[string]string{"connectors": conns, "targets": targets}[kind][n] = v.UUID
		}
	}
	// Target properties are for admins (baremetal:volume:view_target_properties).
	for _, c := range []struct {
		who, authz string
		redacted   bool
	}{{"reader", reader, true}, {"member", member, true}, {"admin", admin, false}, {"system", system, false}} {
		for _, path := range []string{"/v1/volume/targets/" + targets["a"], "/v1/nodes/a/volume/targets?detail=True"} {
			st, body := call(c.authz, "GET", path, "")
			redacted := strings.Contains(body, "Value redacted: Requires permission baremetal:volume:view_target_properties")
			if st != 200 || redacted != c.redacted || strings.Contains(body, "target_lun") == redacted {
				t.Errorf("%s GET %s: %d %s (redacted: %v)", c.who, path, st, body, c.redacted)
			}
		}
	}

	// The list shows what p1 owns or leases.
	_, body := call(member, "GET", "/v1/nodes?owner=p2", "")
	var list struct{ Nodes []struct{ Name string } }
	_ = json.Unmarshal([]byte(body), &list)
	var names []string
	for _, n := range list.Nodes {
		names = append(names, n.Name)
	}
	if slices.Sort(names); !slices.Equal(names, []string{"b"}) {
		t.Errorf("p1 listing owner=p2 sees %v, want [b] (leased)", names)
	}
	_, body = call(member, "GET", "/v1/nodes/detail?project=p2", "")
	if strings.Contains(body, `"name": "c"`) {
		t.Errorf("p1 asking for project=p2 saw c: %s", body)
	}

	cases := []struct {
		who, authz, method, path, body string
		want                           int
	}{
		{"member", member, "GET", "/v1/nodes/a", "", 200},
		{"member", member, "GET", "/v1/nodes/b", "", 200},
		{"member", member, "GET", "/v1/nodes/c", "", 404},
		{"member", member, "GET", "/v1/nodes/" + uuids["c"] + "/states", "", 404},
		{"member", member, "PATCH", "/v1/nodes/a", `[{"op": "add", "path": "/extra/x", "value": 1}]`, 200},
		// Ironic 21.4: a lessee's member may PATCH extra (update_extra) and the
		// generic fields (update), not driver_info, name or instance_info
		// (update_instance_info is for the lessee's admin).
		{"member", member, "PATCH", "/v1/nodes/b", `[{"op": "add", "path": "/extra/x", "value": 1}]`, 200},
		{"member", member, "PATCH", "/v1/nodes/b", `[{"op": "add", "path": "/description", "value": "d"}]`, 200},
		{"member", member, "PATCH", "/v1/nodes/b", `[{"op": "add", "path": "/driver_info/x", "value": 1}]`, 403},
		{"member", member, "PATCH", "/v1/nodes/b", `[{"op": "add", "path": "/extra/y", "value": 1}, {"op": "add", "path": "/name", "value": "bb"}]`, 403},
		{"member", member, "PATCH", "/v1/nodes/b", `[{"op": "add", "path": "/instance_info/image_source", "value": "http://127.0.0.1/i"}]`, 403},
		{"admin", admin, "PATCH", "/v1/nodes/b", `[{"op": "add", "path": "/instance_info/image_source", "value": "http://127.0.0.1/i"}]`, 200},
		{"admin", admin, "PATCH", "/v1/nodes/b", `[{"op": "add", "path": "/deploy_interface", "value": "fake"}]`, 403},
		{"admin", admin, "PATCH", "/v1/nodes/a", `[{"op": "add", "path": "/deploy_interface", "value": "fake"}]`, 200},
		{"member", member, "PATCH", "/v1/nodes/a", `[{"op": "add", "path": "/deploy_interface", "value": "fake"}]`, 403},
		{"admin", admin, "PATCH", "/v1/nodes/a", `[{"op": "replace", "path": "/owner", "value": "p2"}]`, 403},
		{"admin", admin, "PATCH", "/v1/nodes/a", `[{"op": "replace", "path": "/automated_clean", "value": false}]`, 403},
		{"member", member, "PATCH", "/v1/nodes/a", `[{"op": "replace", "path": "/lessee", "value": "p3"}]`, 200},
		{"member", member, "PATCH", "/v1/nodes/a", `[{"op": "remove", "path": "/lessee"}]`, 200},
		{"member", member, "PATCH", "/v1/nodes/c", `[{"op": "add", "path": "/extra/x", "value": 1}]`, 404},
		{"reader", reader, "PATCH", "/v1/nodes/a", `[{"op": "add", "path": "/extra/y", "value": 1}]`, 403},
		{"member", member, "PUT", "/v1/nodes/a/states/provision", `{"target": "manage"}`, 202},
		{"member", member, "PUT", "/v1/nodes/b/states/provision", `{"target": "manage"}`, 403},
		{"admin", admin, "PUT", "/v1/nodes/b/states/power", `{"target": "power on"}`, 202},
		{"member", member, "PUT", "/v1/nodes/b/states/power", `{"target": "power on"}`, 202},
		{"member", member, "PUT", "/v1/nodes/b/maintenance", `{"reason": "x"}`, 403},
		{"member", member, "PUT", "/v1/nodes/a/maintenance", `{"reason": "x"}`, 202},
		{"admin", admin, "PUT", "/v1/nodes/b/maintenance", `{"reason": "x"}`, 202},
		{"admin", admin, "DELETE", "/v1/nodes/b/maintenance", "", 202},
		{"member", member, "GET", "/v1/nodes/a/history", "", 200},
		{"member", member, "GET", "/v1/nodes/b/history", "", 403},
		{"member", member, "GET", "/v1/nodes/b/states", "", 200},
		{"admin", admin, "DELETE", "/v1/nodes/a", "", 403},
		{"admin", admin, "POST", "/v1/nodes", `{"driver": "fake-hardware", "name": "d", "owner": "p1"}`, 403},
		{"member", member, "GET", "/v1/ports", "", 403},
		{"member", member, "GET", "/v1/ports?node=a", "", 200},
		{"member", member, "GET", "/v1/ports?node=c", "", 404},
		{"member", member, "GET", "/v1/ports/" + ports["a"], "", 200},
		{"member", member, "GET", "/v1/ports/" + ports["c"], "", 404},
		// A node the project may not see is answered as no node at all
		// (400), so as not to tell that it exists.
		{"admin", admin, "POST", "/v1/ports", `{"address": "52:54:00:00:00:09", "node_uuid": "` + uuids["c"] + `"}`, 400},
		{"member", member, "POST", "/v1/ports", `{"address": "52:54:00:00:00:09", "node_uuid": "` + uuids["a"] + `"}`, 403},
		{"admin", admin, "DELETE", "/v1/ports/" + ports["c"], "", 404},
		{"member", member, "POST", "/v1/nodes/a/vifs", `{"id": "vif-1"}`, 204},
		{"member", member, "POST", "/v1/nodes/b/vifs", `{"id": "vif-2"}`, 403},
		{"admin", admin, "POST", "/v1/nodes/b/vifs", `{"id": "vif-2"}`, 204},
		{"reader", reader, "DELETE", "/v1/nodes/a/vifs/vif-1", "", 403},
		{"member", member, "DELETE", "/v1/nodes/a/vifs/vif-1", "", 204},
		{"member", member, "POST", "/v1/nodes/c/vifs", `{"id": "vif-3"}`, 404},
		{"member", member, "PUT", "/v1/nodes/a/traits/CUSTOM_X", "", 403},
		{"admin", admin, "PUT", "/v1/nodes/a/traits/CUSTOM_X", "", 204},
		{"admin", admin, "PUT", "/v1/nodes/b/traits", `{"traits": ["CUSTOM_Y"]}`, 403},
		{"reader", reader, "GET", "/v1/nodes/a/traits", "", 200},
		{"admin", admin, "DELETE", "/v1/nodes/a/traits/CUSTOM_X", "", 204},
		{"admin", admin, "DELETE", "/v1/nodes/c/traits", "", 404},
		{"reader", reader, "POST", "/v1/nodes/a/vmedia", `{"device_type": "CDROM", "image_url": "http://127.0.0.1/x.iso"}`, 403},
		{"admin", admin, "GET", "/v1/nodes/a/vendor_passthru?method=third_method_sync", "", 403},
		{"admin", admin, "POST", "/v1/nodes/a/vendor_passthru?method=third_method_sync", `{"bar": "meow"}`, 403},
		{"admin", admin, "GET", "/v1/nodes/a/vendor_passthru/methods", "", 403},
		{"system", system, "POST", "/v1/nodes/a/vendor_passthru?method=third_method_sync", `{"bar": "meow"}`, 200},
		{"member", member, "PUT", "/v1/nodes/a/management/inject_nmi", "", 403},
		{"admin", admin, "PUT", "/v1/nodes/b/management/inject_nmi", "", 403},
		{"admin", admin, "PUT", "/v1/nodes/a/management/inject_nmi", "", 400}, // allowed; fake-hardware has no NMI
		{"member", member, "PUT", "/v1/nodes/a/states/raid", `{}`, 204},
		{"member", member, "PUT", "/v1/nodes/b/states/raid", `{}`, 403},
		{"reader", reader, "PUT", "/v1/nodes/a/states/raid", `{}`, 403},
		{"member", member, "GET", "/v1/portgroups", "", 403},
		{"member", member, "GET", "/v1/allocations", "", 403},
		{"admin", admin, "GET", "/v1/deploy_templates", "", 403},
		{"admin", admin, "POST", "/v1/deploy_templates", `{"name": "CUSTOM_X", "steps": [{"interface": "raid", "step": "apply_configuration", "args": {}, "priority": 1}]}`, 403},
		{"system", system, "GET", "/v1/deploy_templates", "", 200},
		{"member", member, "GET", "/v1/drivers", "", 403},
		{"member", member, "GET", "/v1/conductors", "", 403},
		{"member", member, "GET", "/metrics", "", 403},
		{"member", member, "GET", "/v1/events/stream", "", 200},
		{"member", member, "GET", "/v1/events/stream?node=c", "", 404},
		{"member", member, "GET", "/v1/events/stream?node=b", "", 200},
		{"member", member, "GET", "/v1/fleet/nodes", "", 200},
		{"member", member, "GET", "/v1/fleet/summary", "", 200},
		{"member", member, "GET", "/v1", "", 200},
		{"member", member, "GET", "/v1/volume", "", 200},
		{"member", member, "GET", "/v1/volume/connectors", "", 403},
		{"member", member, "GET", "/v1/volume/connectors?node=a", "", 200},
		{"member", member, "GET", "/v1/volume/targets?node=c", "", 404},
		{"reader", reader, "GET", "/v1/nodes/a/volume/connectors", "", 200},
		{"reader", reader, "GET", "/v1/nodes/c/volume/connectors", "", 404},
		{"reader", reader, "GET", "/v1/volume/connectors/" + conns["a"], "", 200},
		{"admin", admin, "GET", "/v1/volume/connectors/" + conns["c"], "", 404},
		{"member", member, "POST", "/v1/volume/connectors", `{"node_uuid": "` + uuids["a"] + `", "type": "ip", "connector_id": "10.0.0.1"}`, 403},
		{"admin", admin, "POST", "/v1/volume/connectors", `{"node_uuid": "` + uuids["a"] + `", "type": "ip", "connector_id": "10.0.0.1"}`, 201},
		{"admin", admin, "POST", "/v1/volume/targets", `{"node_uuid": "` + uuids["c"] + `", "volume_type": "iscsi", "boot_index": 1, "volume_id": "v"}`, 400},
		{"member", member, "PATCH", "/v1/volume/connectors/" + conns["c"], `[{"op": "add", "path": "/extra/x", "value": 1}]`, 404},
		{"reader", reader, "PATCH", "/v1/volume/connectors/" + conns["a"], `[{"op": "add", "path": "/extra/x", "value": 1}]`, 403},
		{"member", member, "DELETE", "/v1/volume/targets/" + targets["a"], "", 403},
		{"admin", admin, "DELETE", "/v1/volume/targets/" + targets["c"], "", 404},
	}
	for _, c := range cases {
		st, body := call(c.authz, c.method, c.path, c.body)
		for i := 0; st == http.StatusConflict && strings.Contains(body, "is locked") && i < 100; i++ {
			time.Sleep(20 * time.Millisecond) // the previous case's work still holds the node, as clients retry
			st, body = call(c.authz, c.method, c.path, c.body)
		}
		if st != c.want {
			t.Errorf("%s %s %s: %d %s, want %d", c.who, c.method, c.path, st, body, c.want)
		}
	}
	// Nothing of c changed.
	if _, body := call(system, "GET", "/v1/nodes/c", ""); strings.Contains(body, `"x": 1`) || !strings.Contains(body, `"maintenance": false`) {
		t.Errorf("c changed: %s", body)
	}
}
