package server

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRunbookProjectPolicy: Ironic master's baremetal:runbook:* defaults
// for project-scoped tokens — a project's admin creates runbooks its
// project owns (never another's, never public), a project reads its own
// and the public ones, changes and uses only its own.
func TestRunbookProjectPolicy(t *testing.T) {
	tok, call := policyServer(t)
	system := tok("", "admin")
	admin, member, reader := tok("p1", "admin"), tok("p1", "member"), tok("p1", "reader")
	steps := `"steps": [{"interface": "deploy", "step": "erase_devices", "args": {}, "order": 1}]`
	for _, rb := range []string{`"name": "CUSTOM_PUB", "public": true`, `"name": "CUSTOM_P2", "owner": "p2"`, `"name": "CUSTOM_SYS"`} {
		if st, body := call(system, "POST", "/v1/runbooks", `{`+rb+`, `+steps+`}`); st != 201 {
			t.Fatalf("system creates {%s}: %d %s", rb, st, body)
		}
	}
	st, body := call(admin, "POST", "/v1/runbooks", `{"name": "CUSTOM_P1", `+steps+`}`)
	if st != 201 || !strings.Contains(body, `"owner": "p1"`) {
		t.Fatalf("p1's admin creates: %d %s, want 201 owned by p1", st, body)
	}
	listed := func(authz, query string) []string {
		t.Helper()
		st, body := call(authz, "GET", "/v1/runbooks"+query, "")
		var list struct{ Runbooks []struct{ Name string } }
		if st != 200 || json.Unmarshal([]byte(body), &list) != nil {
			t.Fatalf("list: %d %s", st, body)
		}
		var names []string
		for _, r := range list.Runbooks {
			names = append(names, r.Name)
		}
		slices.Sort(names)
		return names
	}
	if got := listed(reader, ""); !slices.Equal(got, []string{"CUSTOM_P1", "CUSTOM_PUB"}) {
		t.Errorf("p1 lists %v, want its own and the public one", got)
	}
	if got := listed(system, ""); len(got) != 4 {
		t.Errorf("system lists %v, want all four", got)
	}

	// A manageable node of p1 whose traits name two runbooks.
	st, body = call(system, "POST", "/v1/nodes", `{"driver": "fake-hardware", "name": "a", "owner": "p1"}`)
	if st != 201 {
		t.Fatalf("create node: %d %s", st, body)
	}
	if st, body = call(system, "PUT", "/v1/nodes/a/traits", `{"traits": ["CUSTOM_P1", "CUSTOM_PUB"]}`); st != 204 {
		t.Fatalf("traits: %d %s", st, body)
	}
	if st, body = call(system, "PUT", "/v1/nodes/a/states/provision", `{"target": "manage"}`); st != 202 {
		t.Fatalf("manage: %d %s", st, body)
	}
	waitState := func(want string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; {
			_, body := call(system, "GET", "/v1/nodes/a/states", "")
			if strings.Contains(body, `"provision_state": "`+want+`"`) && strings.Contains(body, `"target_provision_state": null`) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("node a never reached %s: %s", want, body)
			}
			time.Sleep(20 * time.Millisecond) // polling a worker, bounded by the deadline
		}
	}
	waitState("manageable")

	cases := []struct {
		who, authz, method, path, body string
		want                           int
		msg                            string
	}{
		{"admin", admin, "POST", "/v1/runbooks", `{"name": "CUSTOM_X", "owner": "p2", ` + steps + `}`, 400,
			"Cannot create a runbook as a project scoped admin with an owner other than your own project."},
		{"admin", admin, "POST", "/v1/runbooks", `{"name": "CUSTOM_X", "public": true, ` + steps + `}`, 400,
			"Cannot create a public runbook as a project scoped admin."},
		{"member", member, "POST", "/v1/runbooks", `{"name": "CUSTOM_X", ` + steps + `}`, 403, "baremetal:runbook:create is disallowed by policy"},
		{"reader", reader, "GET", "/v1/runbooks?project=p2", "", 403, "baremetal:runbook:list_all is disallowed by policy"},
		{"reader", reader, "GET", "/v1/runbooks/CUSTOM_P1", "", 200, ""},
		{"reader", reader, "GET", "/v1/runbooks/CUSTOM_PUB", "", 200, ""},
		{"reader", reader, "GET", "/v1/runbooks/CUSTOM_P2", "", 403, "baremetal:runbook:get is disallowed by policy"},
		{"reader", reader, "GET", "/v1/runbooks/CUSTOM_SYS", "", 403, "baremetal:runbook:get is disallowed by policy"},
		{"reader", reader, "GET", "/v1/runbooks/CUSTOM_NONE", "", 404, "Runbook CUSTOM_NONE could not be found."},
		{"admin", admin, "PATCH", "/v1/runbooks/CUSTOM_P1", `[{"op": "add", "path": "/extra/x", "value": 1}]`, 200, ""},
		{"member", member, "PATCH", "/v1/runbooks/CUSTOM_P1", `[{"op": "add", "path": "/extra/y", "value": 1}]`, 403,
			"baremetal:runbook:update is disallowed by policy"},
		{"admin", admin, "PATCH", "/v1/runbooks/CUSTOM_P1", `[{"op": "replace", "path": "/owner", "value": "p2"}]`, 403,
			"baremetal:runbook:update:owner is disallowed by policy"},
		{"admin", admin, "PATCH", "/v1/runbooks/CUSTOM_P1", `[{"op": "replace", "path": "/public", "value": true}]`, 403,
			"baremetal:runbook:update:public is disallowed by policy"},
		{"admin", admin, "PATCH", "/v1/runbooks/CUSTOM_PUB", `[{"op": "add", "path": "/extra/x", "value": 1}]`, 403,
			"baremetal:runbook:update is disallowed by policy"},
		{"admin", admin, "DELETE", "/v1/runbooks/CUSTOM_P2", "", 403, "baremetal:runbook:delete is disallowed by policy"},
		// Using a runbook is RUNBOOK_ADMIN: a public one is not the project's.
		{"admin", admin, "PUT", "/v1/nodes/a/states/provision", `{"target": "clean", "runbook": "CUSTOM_PUB"}`, 403,
			"baremetal:runbook:use is disallowed by policy"},
		{"member", member, "PUT", "/v1/nodes/a/states/provision", `{"target": "clean", "runbook": "CUSTOM_P1"}`, 403,
			"baremetal:runbook:use is disallowed by policy"},
		// Runbook traits (1.112) are baremetal:runbook:get and :update on
		// the runbook: a project's admin sets its own runbook's, not
		// another's; from 1.112 a node uses a runbook it shares a trait with.
		{"reader", reader, "GET", "/v1/runbooks/CUSTOM_PUB/traits", "", 200, `"traits": []`},
		{"reader", reader, "GET", "/v1/runbooks/CUSTOM_P2/traits", "", 403, "baremetal:runbook:get is disallowed by policy"},
		{"admin", admin, "PUT", "/v1/runbooks/CUSTOM_PUB/traits/CUSTOM_X", "", 403, "baremetal:runbook:update is disallowed by policy"},
		{"member", member, "PUT", "/v1/runbooks/CUSTOM_P1/traits", `{"traits": ["CUSTOM_P1"]}`, 403,
			"baremetal:runbook:update is disallowed by policy"},
		{"admin", admin, "PUT", "/v1/nodes/a/states/provision", `{"target": "clean", "runbook": "CUSTOM_P1"}`, 400,
			"has no traits configured"},
		{"admin", admin, "PUT", "/v1/runbooks/CUSTOM_P1/traits", `{"traits": ["CUSTOM_P1"]}`, 204, ""},
		{"admin", admin, "PUT", "/v1/nodes/a/states/provision", `{"target": "clean", "runbook": "CUSTOM_P1"}`, 202, ""},
	}
	for _, c := range cases {
		st, body := call(c.authz, c.method, c.path, c.body)
		if st != c.want || c.msg != "" && !strings.Contains(body, c.msg) {
			t.Errorf("%s %s %s: %d %s, want %d %q", c.who, c.method, c.path, st, body, c.want, c.msg)
		}
	}
	waitState("manageable")
	if st, body = call(admin, "DELETE", "/v1/runbooks/CUSTOM_P1", ""); st != 204 {
		t.Errorf("p1's admin deletes its runbook: %d %s", st, body)
	}
}
