package server

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/auth"
	"github.com/anvil-metal/anvil/internal/auth/authtest"
)

// TestProjectViews: what a lessee is shown of a node (Ironic's masks), and
// the fleet views and the event stream narrowed to the project.
func TestProjectViews(t *testing.T) {
	iss := authtest.NewIssuer(t)
	s := serveWith(t, func(c *Config) {
		c.Security.Auth = auth.Config{Strategy: auth.JWT, JWT: auth.JWTConfig{Issuer: iss.URL}}
	})
	tok := func(project, role string) string {
		claims := map[string]any{"roles": []any{role}}
		if project != "" {
			claims["project_id"] = project
		}
		return "Bearer " + iss.Token(t, iss.Key, claims)
	}
	system, p1 := tok("", "admin"), tok("p1", "member")
	call := func(authz, method, path, body string) (int, map[string]any) {
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
		raw, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		return resp.StatusCode, m
	}
	uuids := map[string]string{}
	for _, n := range []struct{ name, owner, lessee string }{{"a", "p1", ""}, {"b", "p2", "p1"}, {"c", "p2", ""}} {
		st, m := call(system, "POST", "/v1/nodes", `{"driver": "fake-hardware", "name": "`+n.name+`", "owner": "`+n.owner+`", "lessee": "`+n.lessee+`", "driver_info": {"ipmi_username": "root-`+n.name+`"}}`)
		if st != 201 {
			t.Fatalf("create %s: %d %v", n.name, st, m)
		}
		uuids[n.name] = m["uuid"].(string)
	}

	t.Run("a lessee sees Ironic's placeholders", func(t *testing.T) {
		_, own := call(p1, "GET", "/v1/nodes/a", "")
		if di, _ := own["driver_info"].(map[string]any); di["ipmi_username"] != "root-a" {
			t.Errorf("the owner's driver_info: %v", own["driver_info"])
		}
		_, leased := call(p1, "GET", "/v1/nodes/b", "")
		if di, _ := leased["driver_info"].(map[string]any); !strings.Contains(di["content"].(string), "baremetal:node:get:driver_info") {
			t.Errorf("the lessee's driver_info: %v", leased["driver_info"])
		}
		if dii, _ := leased["driver_internal_info"].(map[string]any); dii["content"] == nil {
			t.Errorf("the lessee's driver_internal_info: %v", leased["driver_internal_info"])
		}
		for _, f := range []string{"last_error", "reservation"} {
			if v, _ := leased[f].(string); !strings.Contains(v, "baremetal:node:get:"+f) {
				t.Errorf("the lessee's %s: %v", f, leased[f])
			}
		}
		_, list := call(p1, "GET", "/v1/fleet/nodes?fields=uuid,driver_info&sort_key=name", "")
		nodes := list["nodes"].([]any)
		if len(nodes) != 2 || list["matching"] != float64(2) {
			t.Fatalf("p1's fleet: %v", list)
		}
		if di := nodes[1].(map[string]any)["driver_info"].(map[string]any); di["content"] == nil {
			t.Errorf("the lessee's driver_info in the fleet list: %v", di)
		}
		_, sys := call(system, "GET", "/v1/nodes/b", "")
		if di, _ := sys["driver_info"].(map[string]any); di["ipmi_username"] != "root-b" || sys["last_error"] != nil {
			t.Errorf("the system's view of b: %v %v", sys["driver_info"], sys["last_error"])
		}
	})

	t.Run("the fleet summary counts the project's nodes only", func(t *testing.T) {
		_, sum := call(p1, "GET", "/v1/fleet/summary", "")
		if sum["total"] != float64(2) || len(sum["conductors"].([]any)) != 0 {
			t.Errorf("p1's summary: total %v, conductors %v", sum["total"], sum["conductors"])
		}
		_, sum = call(system, "GET", "/v1/fleet/summary", "")
		if sum["total"] != float64(3) || len(sum["conductors"].([]any)) == 0 {
			t.Errorf("the system's summary: total %v, conductors %v", sum["total"], sum["conductors"])
		}
	})

	t.Run("the stream carries the project's nodes only", func(t *testing.T) {
		// Asking for another project's is list_all's 403, as Ironic's
		// check_list_policy answers a node list's ?project=.
		if st, m := call(p1, "GET", "/v1/events/stream?project=p2", ""); st != 403 {
			t.Fatalf("p1's stream of p2: %d %v", st, m)
		}
		req, _ := http.NewRequestWithContext(t.Context(), "GET", s.base+"/v1/events/stream", nil)
		req.Header.Set("Authorization", p1)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("stream: %d", resp.StatusCode)
		}
		lines := make(chan string, 100)
		go func() {
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// c (p2's only) changes first, then b (leased to p1): the stream is
		// in order, so c's event would come before b's.
		for _, n := range []string{"c", "b"} {
			if st, m := call(system, "PUT", "/v1/nodes/"+n+"/maintenance", `{"reason": "m-`+n+`"}`); st != 202 {
				t.Fatalf("maintenance %s: %d %v", n, st, m)
			}
		}
		deadline := time.After(10 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatal("the stream ended")
				}
				if strings.Contains(l, uuids["c"]) {
					t.Fatalf("p1's stream carried c: %s", l)
				}
				if strings.Contains(l, uuids["b"]) {
					return
				}
			case <-deadline:
				t.Fatal("no event of b")
			}
		}
	})
}

// TestOwnerProvisioned: baremetal:node:update_owner_provisioned — a system
// member may not change an active node's owner (409, as Ironic answers),
// under /v1 and unversioned alike; a system admin may, and other fields or
// states are not concerned.
func TestOwnerProvisioned(t *testing.T) {
	tok, call := policyServer(t)
	admin, member := tok("", "admin"), tok("", "member")
	uuids := map[string]string{}
	for _, name := range []string{"act", "man"} {
		st, body := call(admin, "POST", "/v1/nodes", `{"driver": "fake-hardware", "name": "`+name+`"}`)
		if st != 201 {
			t.Fatalf("create %s: %d %s", name, st, body)
		}
		var n struct{ UUID string }
		_ = json.Unmarshal([]byte(body), &n)
		uuids[name] = n.UUID
	}
	for _, verb := range []string{"manage", "provide", "active"} {
		st, body := call(admin, "PUT", "/v1/nodes/act/states/provision", `{"target": "`+verb+`"}`)
		if st != 202 {
			t.Fatalf("%s: %d %s", verb, st, body)
		}
		waitState(t, call, admin, "act", map[string]string{"manage": "manageable", "provide": "available", "active": "active"}[verb])
	}
	owner := `[{"op": "replace", "path": "/owner", "value": "p9"}]`
	for _, c := range []struct {
		who, authz, path, body string
		want                   int
	}{
		{"member", member, "/v1/nodes/act", owner, 409},
		{"member", member, "/nodes/" + uuids["act"], owner, 409},
		{"member", member, "/v1/nodes/" + uuids["act"] + "/", owner, 409},
		{"member", member, "/v1/nodes/man", owner, 200},
		{"member", member, "/v1/nodes/act", `[{"op": "add", "path": "/extra/x", "value": 1}]`, 200},
		{"admin", admin, "/nodes/act", owner, 200},
	} {
		if st, body := call(c.authz, "PATCH", c.path, c.body); st != c.want {
			t.Errorf("%s PATCH %s %s: %d %s, want %d", c.who, c.path, c.body, st, body, c.want)
		}
	}
}

// waitState polls a node until its provision state is want (bounded).
func waitState(t *testing.T, call func(authz, method, path, body string) (int, string), authz, node, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, body := call(authz, "GET", "/v1/nodes/"+node, "")
		var n struct {
			ProvisionState string `json:"provision_state"`
		}
		_ = json.Unmarshal([]byte(body), &n)
		if n.ProvisionState == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s stayed %q, want %q", node, n.ProvisionState, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestInspectionRulePolicy: Ironic master's baremetal:inspection_rule:*
// defaults: system readers read, system admins write, projects neither;
// unversioned paths are the same routes with the same rules.
func TestInspectionRulePolicy(t *testing.T) {
	tok, call := policyServer(t)
	const missing = "/v1/inspection_rules/1be26c0b-03f2-4d2e-ae87-c02d7f33c125"
	rule := `{"actions": [{"op": "set-attribute", "args": {"path": "/extra/x", "value": 1}}]}`
	for _, c := range []struct {
		who, authz, method, path, body string
		want                           int
		msg                            string
	}{
		{"system reader", tok("", "reader"), "GET", "/v1/inspection_rules", "", 200, ""},
		{"system member", tok("", "member"), "GET", missing, "", 404, ""},
		{"system member", tok("", "member"), "POST", "/v1/inspection_rules", rule, 403, "baremetal:inspection_rule:create is disallowed by policy"},
		{"system member", tok("", "member"), "POST", "/inspection_rules", rule, 403, "baremetal:inspection_rule:create is disallowed by policy"},
		{"system member", tok("", "member"), "PATCH", missing, "[]", 403, "baremetal:inspection_rule:update is disallowed by policy"},
		{"system member", tok("", "member"), "DELETE", "/v1/inspection_rules", "", 403, "baremetal:inspection_rule:delete is disallowed by policy"},
		{"system member", tok("", "member"), "DELETE", "/inspection_rules", "", 403, "baremetal:inspection_rule:delete is disallowed by policy"},
		{"system member", tok("", "member"), "DELETE", "/inspection_rules/", "", 403, "baremetal:inspection_rule:delete is disallowed by policy"},
		{"system admin", tok("", "admin"), "POST", "/v1/inspection_rules", rule, 201, ""},
		{"system admin", tok("", "admin"), "DELETE", missing, "", 404, ""},
		{"project admin", tok("p1", "admin"), "GET", "/v1/inspection_rules", "", 403, "baremetal:inspection_rule:get is disallowed by policy"},
		{"project admin", tok("p1", "admin"), "POST", "/inspection_rules", rule, 403, "baremetal:inspection_rule:create is disallowed by policy"},
	} {
		st, body := call(c.authz, c.method, c.path, c.body)
		if st != c.want || !strings.Contains(body, c.msg) {
			t.Errorf("%s %s %s: %d %s, want %d %q", c.who, c.method, c.path, st, body, c.want, c.msg)
		}
	}
}
