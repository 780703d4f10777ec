package api

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anvil-metal/anvil/internal/model"
)

// walk follows next links from path and returns every node uuid seen and
// the number of pages.
func (e *env) walk(path string, headers ...string) (uuids []string, pages int) {
	e.t.Helper()
	for path != "" && pages < 100 {
		rec := e.do("GET", path, "", headers...)
		if rec.Code != 200 {
			e.t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body.String())
		}
		m := decode(e.t, rec)
		pages++
		for _, n := range m["nodes"].([]any) {
			uuids = append(uuids, n.(map[string]any)["uuid"].(string))
		}
		path = ""
		if next, ok := m["next"].(string); ok {
			u, err := url.Parse(next)
			if err != nil || u.Host != testHost {
				e.t.Fatalf("bad next link %q", next)
			}
			path = u.RequestURI()
		}
	}
	return uuids, pages
}

func TestNodePagination(t *testing.T) {
	e := newEnv(t)
	var all []string
	for i := range 2500 {
		n := e.mustNode(&model.Node{Name: fmt.Sprintf("n%04d", i), ProvisionState: "available"})
		all = append(all, n.UUID)
	}
	t.Run("default page is 1000", func(t *testing.T) {
		got, pages := e.walk("/v1/nodes", latest)
		if pages != 3 || !slices.Equal(got, all) {
			t.Fatalf("pages %d, %d nodes, in order: %v", pages, len(got), slices.Equal(got, all))
		}
	})
	t.Run("limit above max is capped", func(t *testing.T) {
		m := decode(t, e.do("GET", "/v1/nodes?limit=5000", "", latest))
		if len(m["nodes"].([]any)) != 1000 || m["next"] == nil {
			t.Fatalf("len %d next %v", len(m["nodes"].([]any)), m["next"])
		}
	})
	t.Run("detail endpoint keeps its path", func(t *testing.T) {
		m := decode(t, e.do("GET", "/v1/nodes/detail?limit=2", "", latest))
		want := "http://" + testHost + "/v1/nodes/detail?sort_key=id&sort_dir=asc&limit=2&marker=" + all[1]
		if m["next"] != want {
			t.Fatalf("next %v\nwant %s", m["next"], want)
		}
	})
	t.Run("next link shape", func(t *testing.T) {
		m := decode(t, e.do("GET", "/v1/nodes?fields=uuid,name&limit=1", "", latest))
		want := "http://" + testHost + "/v1/nodes?sort_key=id&sort_dir=asc&fields=uuid,name&limit=1&marker=" + all[0]
		if m["next"] != want {
			t.Fatalf("next %v\nwant %s", m["next"], want)
		}
		m = decode(t, e.do("GET", "/v1/nodes?limit=1&maintenance=false&provision_state=available", "", latest))
		want = "http://" + testHost + "/v1/nodes?sort_key=id&sort_dir=asc&maintenance=False&provision_state=available" +
			"&fields=instance_uuid,maintenance,power_state,provision_state,uuid,name&limit=1&marker=" + all[0]
		if m["next"] != want {
			t.Fatalf("next %v\nwant %s", m["next"], want)
		}
	})
	t.Run("desc with limit and marker", func(t *testing.T) {
		got, pages := e.walk("/v1/nodes?sort_dir=desc&limit=300", latest)
		rev := slices.Clone(all)
		slices.Reverse(rev)
		if pages != 9 || !slices.Equal(got, rev) {
			t.Fatalf("pages %d len %d", pages, len(got))
		}
		m := decode(t, e.do("GET", "/v1/nodes?marker="+all[10]+"&limit=2", "", latest))
		nodes := m["nodes"].([]any)
		if len(nodes) != 2 || nodes[0].(map[string]any)["uuid"] != all[11] {
			t.Fatalf("marker page %v", nodes)
		}
	})
	t.Run("sort by name desc", func(t *testing.T) {
		m := decode(t, e.do("GET", "/v1/nodes?sort_key=name&sort_dir=desc&limit=1", "", latest))
		if m["nodes"].([]any)[0].(map[string]any)["name"] != "n2499" {
			t.Fatalf("%v", m["nodes"])
		}
	})
	t.Run("filters survive paging", func(t *testing.T) {
		for _, id := range all[:5] {
			n, _ := e.st.Nodes().GetNode(context.Background(), id)
			n.Maintenance = true
			_ = e.st.Nodes().UpdateNode(context.Background(), n)
		}
		got, pages := e.walk("/v1/nodes?maintenance=true&limit=2", latest)
		if len(got) != 5 || pages != 3 {
			t.Fatalf("got %d in %d pages", len(got), pages)
		}
	})
}

func TestNodeListParams(t *testing.T) {
	e := newEnv(t)
	e.mustNode(&model.Node{Name: "a", ProvisionState: "available", ResourceClass: "gold", Owner: "o1"})
	e.mustNode(&model.Node{Name: "b", ProvisionState: "enroll", Maintenance: true, InstanceUUID: "0d4b3e35-3a15-4d61-9fbc-4e0ab1f2f7f3"})
	e.mustNode(&model.Node{Name: "child", ProvisionState: "enroll", ParentNode: "parent-uuid"})
	tests := []struct {
		name, query string
		headers     []string
		status      int
		names       []string
		msg         string
	}{
		{"all but children", "", []string{latest}, 200, []string{"a", "b"}, ""},
		{"include children", "include_children=true", []string{latest}, 200, []string{"a", "b", "child"}, ""},
		{"provision_state", "provision_state=enroll", []string{latest}, 200, []string{"b"}, ""},
		{"maintenance", "maintenance=True", []string{latest}, 200, []string{"b"}, ""},
		{"associated", "associated=false", []string{latest}, 200, []string{"a"}, ""},
		{"instance uuid", "instance_uuid=0d4b3e35-3a15-4d61-9fbc-4e0ab1f2f7f3&limit=1", []string{latest}, 200, []string{"b"}, ""},
		{"resource_class", "resource_class=gold", []string{latest}, 200, []string{"a"}, ""},
		{"owner", "owner=o1", []string{latest}, 200, []string{"a"}, ""},
		{"driver", "driver=fake-hardware", []string{latest}, 200, []string{"a", "b"}, ""},
		{"fault", "fault=power%20failure", []string{latest}, 200, nil, ""},
		{"bogus state", "provision_state=bogus", []string{latest}, 400, nil, `Provision state "bogus" is not valid`},
		{"state filter at 1.8", "provision_state=enroll", []string{at(8)}, 406, nil, "Request not acceptable."},
		{"driver at 1.15", "driver=x", []string{at(15)}, 406, nil, "Request not acceptable. The minimal required API version should be 1.16"},
		{"owner at 1.49", "owner=x", []string{at(49)}, 406, nil, "Request not acceptable. The minimal required API version should be 1.50"},
		{"bad fault", "fault=bogus", []string{latest}, 400, nil,
			`Unrecognized fault "bogus" is specified, allowed faults are ('power failure', 'clean failure', 'rescue abort failure', 'service failure')`},
		{"bad bool", "maintenance=maybe", []string{latest}, 400, nil,
			"Invalid maintenance: Unrecognized value 'maybe', acceptable values are: '0', '1', 'f', 'false', 'n', 'no', 'off', 'on', 't', 'true', 'y', 'yes'"},
		{"bad associated", "associated=2", []string{latest}, 400, nil, ""},
		{"limit zero", "limit=0", []string{latest}, 400, nil, "Limit must be positive"},
		{"limit negative", "limit=-1", []string{latest}, 400, nil, "Limit must be positive"},
		{"limit abc", "limit=abc", []string{latest}, 400, nil, "Expected an integer for limit: abc"},
		{"sort key unknown", "sort_key=foo", []string{latest}, 400, nil, `The sort_key value "foo" is an invalid field for sorting`},
		{"sort key unsortable", "sort_key=properties", []string{latest}, 400, nil, "The sort_key value properties is an invalid field for sorting"},
		{"sort key too new", "sort_key=owner", []string{at(49)}, 406, nil, "Request not acceptable."},
		{"sort dir", "sort_dir=up", []string{latest}, 400, nil, "Invalid sort direction: up. Acceptable values are 'asc' or 'desc'"},
		{"marker not uuid", "marker=abc", []string{latest}, 400, nil, "Expected UUID for marker: abc"},
		{"marker unknown", "marker=0d4b3e35-3a15-4d61-9fbc-4e0ab1f2f7f3", []string{latest}, 404, nil,
			"Node 0d4b3e35-3a15-4d61-9fbc-4e0ab1f2f7f3 could not be found."},
		{"unknown param", "bogus=1", []string{latest}, 400, nil, "Unexpected arguments: bogus"},
		{"fields at 1.1", "fields=name", nil, 406, nil, "Request not acceptable."},
		{"fields and detail", "fields=name&detail=True", []string{latest}, 400, nil, "Can not specify ?detail=True and fields in the same request."},
		{"detail at 1.42", "detail=True", []string{at(42)}, 400, nil, "Invalid query parameter ?detail=True received."},
		{"unknown field", "fields=name,bogus", []string{latest}, 400, nil, "Field bogus is not a valid field."},
		{"field too new", "fields=lessee", []string{at(64)}, 406, nil, "Request not acceptable."},
		{"instance_name at 1.103", "instance_name=x", []string{at(103)}, 406, nil, "instance_name is not acceptable in this API version"},
		{"instance_name", "instance_name=x", []string{latest}, 200, nil, ""},
		{"bad query encoding", "name=%zz", []string{latest}, 400, nil, "The query string could not be parsed."},
		{"shard at 1.81", "shard=x", []string{at(81)}, 406, nil, ""},
		{"conductor", "conductor=anvil-test", []string{latest}, 200, []string{"a", "b"}, ""},
		{"conductor group", "conductor_group=", []string{latest}, 200, []string{"a", "b"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := e.do("GET", "/v1/nodes?"+tc.query, "", tc.headers...)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.status, rec.Body.String())
			}
			if rec.Code != 200 {
				if _, msg := faultOf(t, rec); tc.msg != "" && msg != tc.msg {
					t.Errorf("message %q\nwant    %q", msg, tc.msg)
				}
				return
			}
			m := decode(t, rec)
			var names []string
			for _, n := range m["nodes"].([]any) {
				names = append(names, n.(map[string]any)["name"].(string))
			}
			slices.Sort(names)
			if !slices.Equal(names, tc.names) {
				t.Errorf("names %v, want %v", names, tc.names)
			}
			if m["next"] != nil && strings.Contains(tc.query, "instance_uuid") {
				t.Error("instance_uuid lists never page")
			}
		})
	}
}

func TestNodeListShapes(t *testing.T) {
	e := newEnv(t)
	e.mustNode(nodeFixture("s"))
	brief := func(minor int) []string {
		rec := e.do("GET", "/v1/nodes", "", at(minor))
		return orderedKeys(t, []byte(strings.TrimSuffix(strings.TrimPrefix(
			strings.TrimSpace(rec.Body.String()), `{"nodes": [`), `]}`)))
	}
	for _, minor := range []int{89, MaxMinor} {
		if got := brief(minor); !slices.Equal(got, []string{"uuid", "instance_uuid", "maintenance", "power_state", "provision_state", "name", "links"}) {
			t.Errorf("brief at 1.%d: %v", minor, got)
		}
	}
	if got := brief(1); !slices.Equal(got, []string{"uuid", "instance_uuid", "maintenance", "power_state", "provision_state", "links"}) {
		t.Errorf("brief at 1.1: %v", got)
	}
	a := decode(t, e.do("GET", "/v1/nodes/detail", "", latest))
	b := decode(t, e.do("GET", "/v1/nodes?detail=True", "", latest))
	one := decode(t, e.do("GET", "/v1/nodes/s", "", latest))
	if fmt.Sprint(a["nodes"].([]any)[0]) != fmt.Sprint(one) || fmt.Sprint(b["nodes"]) != fmt.Sprint(a["nodes"]) {
		t.Error("detail lists must hold full nodes")
	}
	if _, err := time.Parse(time.RFC3339Nano, one["created_at"].(string)); err != nil {
		t.Error(err)
	}
}

// A list of fields that have columns of their own (read without decoding the
// nodes, store.NodeQuery.Only) shows each node's fields as its detail does,
// the brief list included.
func TestNodeListColumnFields(t *testing.T) {
	e := newEnv(t)
	for i := range 6 {
		n := &model.Node{Name: fmt.Sprintf("col-%d", i), ProvisionState: []string{"enroll", "available", "active"}[i%3],
			PowerState: []string{"", "power on"}[i%2], Maintenance: i%2 == 0, ResourceClass: "gpu", Owner: "proj-a",
			Lessee: "proj-b", ConductorGroup: "g1", TargetProvisionState: []string{"", "active"}[i%2]}
		if i == 4 {
			n.Name, n.Fault = "", "power failure"
		}
		if i == 1 {
			n.InstanceUUID = "6f5d7a4e-0d3a-4b1e-9f0e-2a1b3c4d5e6f"
		}
		e.mustNode(n)
	}
	detail := decode(t, e.do("GET", "/v1/nodes/detail", "", latest))["nodes"].([]any)
	column := []string{"uuid", "name", "instance_uuid", "driver", "provision_state", "target_provision_state",
		"power_state", "maintenance", "resource_class", "fault", "owner", "lessee", "conductor_group",
		"reservation", "chassis_uuid"}
	check := func(path string, fields []string) {
		t.Helper()
		got := decode(t, e.do("GET", path, "", latest))["nodes"].([]any)
		if len(got) != len(detail) {
			t.Fatalf("GET %s: %d nodes, detail has %d", path, len(got), len(detail))
		}
		for i, g := range got {
			gm, dm := g.(map[string]any), detail[i].(map[string]any)
			if len(gm) != len(fields)+1 { // and links
				t.Errorf("GET %s node %d: keys %v, want %v and links", path, i, gm, fields)
			}
			for _, f := range append(fields, "links") {
				if fmt.Sprint(gm[f]) != fmt.Sprint(dm[f]) {
					t.Errorf("GET %s node %d: %s = %v, detail has %v", path, i, f, gm[f], dm[f])
				}
			}
		}
	}
	check("/v1/nodes?fields="+strings.Join(column, ","), column)
	check("/v1/nodes", briefNodeFields)
	for _, f := range column {
		check("/v1/nodes?fields="+f, []string{f})
	}
}
