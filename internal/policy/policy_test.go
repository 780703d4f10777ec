package policy

import (
	"slices"
	"strings"
	"testing"

	"github.com/anvil-metal/anvil/internal/auth"
)

func TestDefaultsParse(t *testing.T) {
	if _, err := New(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := New(map[string]string{"x": "role:a and (role:b"}); err == nil {
		t.Fatal("an unbalanced check string parsed")
	}
}

func TestTokenize(t *testing.T) {
	got := tokenize("((role:member and system_scope:all) or project_id:%(node.owner)s)")
	want := []string{"(", "(", "role:member", "and", "system_scope:all", ")", "or", "project_id:%(node.owner)s", ")"}
	if len(got) != len(want) {
		t.Fatalf("%q", got)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%q", got)
		}
	}
}

func TestExpand(t *testing.T) {
	got := Expand([]string{"Admin", "service"})
	want := []string{"admin", "manager", "member", "reader", "service"}
	if len(got) != len(want) {
		t.Fatalf("%v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%v", got)
		}
	}
}

// TestRules checks Ironic master's defaults as its docs state them, for
// each kind of principal, on a node owned by P and leased to L.
func TestRules(t *testing.T) {
	e := Default()
	node := NodeTarget("P", "L")
	who := map[string]auth.Principal{
		"sys-admin":    {User: "a", Roles: []string{"admin"}},
		"sys-member":   {User: "m", Roles: []string{"member"}},
		"sys-reader":   {User: "r", Roles: []string{"reader"}},
		"sys-service":  {User: "s", Roles: []string{"service"}},
		"basic":        {User: "b"},
		"own-admin":    {User: "oa", Project: "P", Roles: []string{"admin"}},
		"own-manager":  {User: "om", Project: "P", Roles: []string{"manager"}},
		"own-member":   {User: "om", Project: "P", Roles: []string{"member"}},
		"own-reader":   {User: "or", Project: "P", Roles: []string{"reader"}},
		"own-service":  {User: "os", Project: "P", Roles: []string{"service"}},
		"les-admin":    {User: "la", Project: "L", Roles: []string{"admin"}},
		"les-manager":  {User: "lm", Project: "L", Roles: []string{"manager"}},
		"les-member":   {User: "lm", Project: "L", Roles: []string{"member"}},
		"les-reader":   {User: "lr", Project: "L", Roles: []string{"reader"}},
		"other-admin":  {User: "xa", Project: "X", Roles: []string{"admin"}},
		"empty-roles?": {User: "e", Project: "P", Roles: []string{"observer"}},
	}
	cases := []struct {
		rule string
		yes  []string // everyone else: no
	}{
		{"baremetal:node:get", []string{"sys-admin", "sys-member", "sys-reader", "sys-service", "basic", "own-admin", "own-manager", "own-member", "own-reader", "own-service", "les-admin", "les-manager", "les-member", "les-reader"}},
		{"baremetal:node:get:last_error", []string{"sys-admin", "sys-member", "sys-reader", "sys-service", "basic", "own-admin", "own-manager", "own-member", "own-reader", "own-service"}},
		{"baremetal:node:set_provision_state", []string{"sys-admin", "sys-member", "sys-service", "basic", "own-admin", "own-manager", "own-member", "own-service", "les-admin", "les-manager"}},
		{"baremetal:node:update:driver_interfaces", []string{"sys-admin", "sys-member", "sys-service", "basic", "own-admin", "own-manager", "own-service"}},
		{"baremetal:node:update:owner", []string{"sys-admin", "sys-member", "basic"}},
		{"baremetal:node:delete", []string{"sys-admin", "basic"}},
		{"baremetal:node:create", []string{"sys-admin", "sys-service", "basic"}},
		{"baremetal:node:list", []string{"sys-admin", "sys-member", "sys-reader", "sys-service", "basic", "own-admin", "own-manager", "own-member", "own-reader", "own-service", "les-admin", "les-manager", "les-member", "les-reader", "other-admin"}},
		{"baremetal:node:list_all", []string{"sys-admin", "sys-member", "sys-reader", "sys-service", "basic"}},
		{"baremetal:chassis:create", []string{"sys-admin", "basic"}},
		{"baremetal:driver:ipa_lookup", []string{"sys-admin", "sys-member", "sys-reader", "sys-service", "basic", "own-admin", "own-manager", "own-member", "own-reader", "own-service", "les-admin", "les-manager", "les-member", "les-reader", "other-admin", "empty-roles?"}},
		{"show_password", nil},
		{"no:such:rule", nil},
	}
	for _, c := range cases {
		for name, p := range who {
			want := false
			for _, y := range c.yes {
				want = want || y == name
			}
			if got := e.Allowed(CredsOf(p), c.rule, node); got != want {
				t.Errorf("%s for %s: %v, want %v (%s)", c.rule, name, got, want, e.CheckString(c.rule))
			}
		}
	}
}

// TestEmptyNeverMatches: a system principal is no unowned node's owner.
func TestEmptyNeverMatches(t *testing.T) {
	e, err := New(map[string]string{"own": "project_id:%(node.owner)s", "missing": "project_id:%(nothing)s"})
	if err != nil {
		t.Fatal(err)
	}
	if e.Allowed(Creds{}, "own", NodeTarget("", "")) {
		t.Error("empty project matched an unowned node")
	}
	if e.Allowed(Creds{ProjectID: "P"}, "missing", NodeTarget("P", "")) {
		t.Error("a missing target key matched")
	}
	if !e.Allowed(Creds{ProjectID: "P"}, "own", NodeTarget("P", "")) {
		t.Error("the owner did not match")
	}
}

// TestNodeRulesMatrix: each rule × {owner, lessee, stranger} × {reader,
// member, admin} of a project, against Ironic's defaults written out as
// the set of principals each allows (moved here from the server's own
// policy tables, unchanged).
func TestNodeRulesMatrix(t *testing.T) {
	e := Default()
	who := []string{"owner-reader", "owner-member", "owner-admin", "lessee-reader", "lessee-member", "lessee-admin",
		"stranger-admin"}
	var (
		projectReader            = who[:6]
		projectMember            = []string{"owner-member", "owner-admin", "lessee-member", "lessee-admin"}
		ownerReader              = who[:3]
		ownerMember              = []string{"owner-member", "owner-admin"}
		ownerAdmin               = []string{"owner-admin"}
		ownerMemberOrLesseeAdmin = []string{"owner-member", "owner-admin", "lessee-admin"}
		none                     []string
	)
	want := map[string][]string{
		"baremetal:node:get":                      projectReader,
		"baremetal:node:get:driver_info":          ownerReader,
		"baremetal:node:get:last_error":           ownerReader,
		"baremetal:node:get:reservation":          ownerReader,
		"baremetal:node:get:driver_internal_info": ownerReader,
		"baremetal:node:history:get":              ownerReader,
		"baremetal:node:update":                   projectMember,
		"baremetal:node:update_extra":             projectMember,
		"baremetal:node:update_instance_info":     ownerMemberOrLesseeAdmin,
		"baremetal:node:update_owner_provisioned": none,
		"baremetal:node:update:owner":             none,
		"baremetal:node:update:driver_info":       ownerMember,
		"baremetal:node:update:lessee":            ownerMember,
		"baremetal:node:update:name":              ownerMember,
		"baremetal:node:update:driver_interfaces": ownerAdmin,
		"baremetal:node:update:chassis_uuid":      none,
		"baremetal:node:disable_cleaning":         none,
		"baremetal:node:delete":                   none,
		"baremetal:node:set_provision_state":      ownerMemberOrLesseeAdmin,
		"baremetal:node:set_power_state":          projectMember,
		"baremetal:node:set_maintenance":          ownerMemberOrLesseeAdmin,
		"baremetal:node:set_boot_device":          ownerAdmin,
		"baremetal:node:get_console":              ownerMember,
		"baremetal:node:vif:attach":               ownerMemberOrLesseeAdmin,
		"baremetal:node:traits:set":               ownerAdmin,
		"baremetal:port:create":                   ownerAdmin,
		"baremetal:volume:get":                    projectReader,
		"baremetal:volume:list":                   append(append([]string{}, projectReader...), "stranger-admin"), // the node's visibility is checked first
		"baremetal:volume:create":                 {"owner-admin", "lessee-admin"},
		"baremetal:volume:update":                 ownerMemberOrLesseeAdmin,
		"baremetal:volume:delete":                 {"owner-admin", "lessee-admin"},
		"baremetal:volume:view_target_properties": {"owner-admin", "lessee-admin", "stranger-admin"},
		"baremetal:port:get":                      projectReader,
	}
	node := NodeTarget("own", "lea")
	for rule, allowed := range want {
		if !e.Known(rule) {
			t.Errorf("%s: not a rule", rule)
			continue
		}
		for _, w := range who {
			rel, role, _ := strings.Cut(w, "-")
			project := map[string]string{"owner": "own", "lessee": "lea", "stranger": "other"}[rel]
			got := e.Allowed(CredsOf(auth.Principal{Project: project, Roles: []string{role}}), rule, node)
			if got != slices.Contains(allowed, w) {
				t.Errorf("%s for %s: %v", rule, w, got)
			}
		}
	}
}

// TestRecordRulesUnderOverrides: a record kind's default rules are added
// to an enforcer, and an operator's override of one of them stays.
func TestRecordRulesUnderOverrides(t *testing.T) {
	e, err := New(map[string]string{"baremetal:widget:get": "role:admin"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := e.With(RecordRules("widget"))
	if err != nil {
		t.Fatal(err)
	}
	if got := w.CheckString("baremetal:widget:get"); got != "role:admin" {
		t.Errorf("override replaced: %q", got)
	}
	if e.Known("baremetal:widget:delete") || !w.Known("baremetal:widget:delete") {
		t.Error("With changed its receiver, or added nothing")
	}
	manager := CredsOf(auth.Principal{User: "m", Project: "p1", Roles: []string{"manager"}})
	if !w.Allowed(manager, "baremetal:widget:update", Target{"widget.owner": "p1"}) ||
		w.Allowed(manager, "baremetal:widget:update", Target{"widget.owner": "p2"}) ||
		w.Allowed(manager, "baremetal:widget:update:owner", Target{"widget.owner": "p1"}) {
		t.Error("a project manager's rights over its own and another project's widget")
	}
}
