package api

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func traitsOf(t *testing.T, e *env, node string) []string {
	t.Helper()
	rec := e.do("GET", "/v1/nodes/"+node+"/traits", "", latest)
	if rec.Code != 200 {
		t.Fatalf("GET traits: %d %s", rec.Code, rec.Body.String())
	}
	var out []string
	for _, v := range decode(t, rec)["traits"].([]any) {
		out = append(out, v.(string))
	}
	return out
}

func TestTraitsLifecycle(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(nodeFixture("tn"))
	if got := traitsOf(t, e, "tn"); len(got) != 0 {
		t.Fatalf("new node traits %v", got)
	}
	rec := e.do("PUT", "/v1/nodes/tn/traits", `{"traits": ["HW_CPU_X86_VMX", "CUSTOM_TRAIT1", "CUSTOM_TRAIT1"]}`, latest)
	if rec.Code != 204 || rec.Body.Len() != 0 {
		t.Fatalf("PUT traits: %d %s", rec.Code, rec.Body.String())
	}
	if got := traitsOf(t, e, n.UUID); !slices.Equal(got, []string{"CUSTOM_TRAIT1", "HW_CPU_X86_VMX"}) {
		t.Fatalf("traits %v", got)
	}
	rec = e.do("PUT", "/v1/nodes/tn/traits/CUSTOM_GPU", "", latest)
	if rec.Code != 204 || rec.Header().Get("Location") != "http://"+testHost+"/v1/nodes/tn/traits/CUSTOM_GPU" {
		t.Fatalf("PUT one trait: %d %q %s", rec.Code, rec.Header().Get("Location"), rec.Body.String())
	}
	// The node document shows them too.
	node := decode(t, e.do("GET", "/v1/nodes/tn", "", latest))
	if fmt.Sprint(node["traits"]) != "[CUSTOM_GPU CUSTOM_TRAIT1 HW_CPU_X86_VMX]" {
		t.Fatalf("node traits %v", node["traits"])
	}
	if rec := e.do("DELETE", "/v1/nodes/tn/traits/CUSTOM_TRAIT1", "", latest); rec.Code != 204 {
		t.Fatalf("DELETE one: %d %s", rec.Code, rec.Body.String())
	}
	rec = e.do("DELETE", "/v1/nodes/tn/traits/CUSTOM_TRAIT1", "", latest)
	if _, msg := faultOf(t, rec); rec.Code != 404 || msg != "Node "+n.UUID+" doesn't have a trait 'CUSTOM_TRAIT1'" {
		t.Fatalf("DELETE missing: %d %q", rec.Code, msg)
	}
	if got := traitsOf(t, e, "tn"); !slices.Equal(got, []string{"CUSTOM_GPU", "HW_CPU_X86_VMX"}) {
		t.Fatalf("traits %v", got)
	}
	if rec := e.do("DELETE", "/v1/nodes/tn/traits", "", latest); rec.Code != 204 {
		t.Fatalf("DELETE all: %d %s", rec.Code, rec.Body.String())
	}
	if got := traitsOf(t, e, "tn"); len(got) != 0 {
		t.Fatalf("traits after delete all %v", got)
	}
}

func TestTraitsBadInput(t *testing.T) {
	e := newEnv(t)
	n := e.mustNode(nodeFixture("tb"))
	many := make([]string, 51)
	for i := range many {
		many[i] = fmt.Sprintf(`"CUSTOM_T%d"`, i)
	}
	cases := []struct {
		name, method, path, body string
		status                   int
		msg                      string
	}{
		{"lower case", "PUT", "/v1/nodes/tb/traits/custom_x", "", 400,
			"Schema error for trait: 'custom_x' is not valid under any of the given schemas. Possible root cause: 'custom_x' does not match '^CUSTOM_[A-Z0-9_]+$'"},
		{"not standard", "PUT", "/v1/nodes/tb/traits", `{"traits": ["CUSTOM_A", "HW_NOT_A_TRAIT"]}`, 400,
			"Schema error for body: 'HW_NOT_A_TRAIT' is not valid under any of the given schemas. Possible root cause: 'HW_NOT_A_TRAIT' does not match '^CUSTOM_[A-Z0-9_]+$'"},
		{"too long", "PUT", "/v1/nodes/tb/traits/CUSTOM_" + strings.Repeat("A", 250), "", 400,
			"Schema error for trait: 'CUSTOM_" + strings.Repeat("A", 250) + "' is too long"},
		{"not a list", "PUT", "/v1/nodes/tb/traits", `{"traits": "CUSTOM_A"}`, 400,
			"Schema error for body: 'CUSTOM_A' is not of type 'array'"},
		{"not strings", "PUT", "/v1/nodes/tb/traits", `{"traits": [1]}`, 400,
			"Schema error for body: 1 is not of type 'string'"},
		{"extra key", "PUT", "/v1/nodes/tb/traits", `{"trait": []}`, 400,
			"Schema error for body: Additional properties are not allowed ('trait' was unexpected)"},
		{"not an object", "PUT", "/v1/nodes/tb/traits", `[]`, 400, "Schema error for body: [] is not of type 'object'"},
		{"no list", "PUT", "/v1/nodes/tb/traits", `{}`, 400,
			"A single node trait may be added via PUT /v1/nodes/<node identifier>/traits/<trait> with no body, or all node traits may be replaced via PUT /v1/nodes/<node identifier>/traits with the list of traits specified in the request body."},
		{"both", "PUT", "/v1/nodes/tb/traits/CUSTOM_A", `{"traits": []}`, 400,
			"A single node trait may be added via PUT /v1/nodes/<node identifier>/traits/<trait> with no body, or all node traits may be replaced via PUT /v1/nodes/<node identifier>/traits with the list of traits specified in the request body."},
		{"more than 50", "PUT", "/v1/nodes/tb/traits", `{"traits": [` + strings.Join(many, ",") + `]}`, 400,
			fmt.Sprintf("Could not modify traits for node %d as it would exceed the maximum number of traits per node (51 vs. 50)", n.ID)},
		{"unknown node", "PUT", "/v1/nodes/nope/traits/CUSTOM_A", "", 404, "Node nope could not be found."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := e.do(c.method, c.path, c.body, latest)
			if _, msg := faultOf(t, rec); rec.Code != c.status || msg != c.msg {
				t.Fatalf("%d %q, want %d %q", rec.Code, msg, c.status, c.msg)
			}
		})
	}
	if got := traitsOf(t, e, "tb"); len(got) != 0 {
		t.Fatalf("a refused request changed the traits: %v", got)
	}
}

func TestTraitsMicroversion(t *testing.T) {
	e := newEnv(t)
	e.mustNode(nodeFixture("tv"))
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/nodes/tv/traits"}, {"PUT", "/v1/nodes/tv/traits/CUSTOM_A"}, {"DELETE", "/v1/nodes/tv/traits"},
	} {
		if rec := e.do(c.method, c.path, "", at(36)); rec.Code != 404 {
			t.Fatalf("%s %s at 1.36: %d", c.method, c.path, rec.Code)
		}
		if rec := e.do(c.method, c.path, "", at(37)); rec.Code/100 != 2 {
			t.Fatalf("%s %s at 1.37: %d %s", c.method, c.path, rec.Code, rec.Body.String())
		}
	}
}

func TestStandardTraits(t *testing.T) {
	for _, s := range []string{"HW_CPU_X86_VMX", "COMPUTE_ACCELERATORS", "STORAGE_DISK_SSD"} {
		if !isStandardTrait(s) {
			t.Errorf("%s is an os-traits name", s)
		}
	}
	for _, s := range []string{"", "HW_CPU", "HW_CPU_X86_VMX\nSTORAGE_DISK_SSD", "hw_cpu_x86_vmx"} {
		if isStandardTrait(s) {
			t.Errorf("%q is not an os-traits name", s)
		}
	}
}
