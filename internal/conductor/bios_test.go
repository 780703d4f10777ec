package conductor_test

import (
	"testing"

	"github.com/anvil-metal/anvil/internal/fsm"
	"github.com/anvil-metal/anvil/internal/model"
)

// TestFakeBIOSKeepsSettings: fake-hardware's bios interface keeps the
// settings apply_configuration gives (Ironic's FakeBIOS: the cache becomes
// exactly them) and factory_reset drops them; a step missing its required
// argument, or given one it does not take, fails before it runs with
// Ironic's _validate_user_step text.
func TestFakeBIOSKeepsSettings(t *testing.T) {
	e := newEnv(t, nil)
	id := e.create(nil).UUID
	e.must(id, "manage", fsm.Manageable)
	apply := func(settings ...any) model.JSON {
		return model.JSON{"interface": "bios", "step": "apply_configuration", "args": map[string]any{"settings": settings}}
	}
	e.must(id, "clean", fsm.Manageable, cleanSteps(apply(map[string]any{"name": "A", "value": "1"}, map[string]any{"name": "B", "value": 2.0})))
	got, err := e.st.Settings().ListBIOSSettings(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "A" || *got[0].Value != "1" || *got[1].Value != "2" {
		t.Fatalf("cached %+v", got)
	}
	e.must(id, "clean", fsm.Manageable, cleanSteps(apply(map[string]any{"name": "B", "value": "3"})))
	if got, _ := e.st.Settings().ListBIOSSettings(e.ctx, id); len(got) != 1 || got[0].Name != "B" || *got[0].Value != "3" {
		t.Fatalf("after the second apply: %+v", got)
	}
	e.must(id, "clean", fsm.Manageable, cleanSteps(model.JSON{"interface": "bios", "step": "factory_reset"}))
	if got, _ := e.st.Settings().ListBIOSSettings(e.ctx, id); len(got) != 0 {
		t.Fatalf("after factory_reset: %+v", got)
	}

	for _, tc := range []struct {
		step model.JSON
		want string
	}{
		{model.JSON{"interface": "bios", "step": "apply_configuration"},
			"Cannot clean node " + id + ": clean step {'interface': 'bios', 'step': 'apply_configuration'} is missing these required arguments: settings (List of BIOS settings, each item needs to contain a dictionary with name/value pairs)"},
		{model.JSON{"interface": "bios", "step": "factory_reset", "args": map[string]any{"force": true}},
			""}, // factory_reset declares no argsinfo in the fake: not checked
		{model.JSON{"interface": "bios", "step": "apply_configuration", "args": map[string]any{"settings": []any{}, "force": true}},
			"Cannot clean node " + id + ": clean step {'interface': 'bios', 'step': 'apply_configuration', 'args': {'force': True, 'settings': []}} has these unexpected arguments: force"},
	} {
		if tc.want == "" {
			e.must(id, "clean", fsm.Manageable, cleanSteps(tc.step))
			continue
		}
		n := e.must(id, "clean", fsm.CleanFailed, cleanSteps(tc.step))
		if n.LastError != tc.want {
			t.Errorf("last_error %q\nwant       %q", n.LastError, tc.want)
		}
		e.must(id, "manage", fsm.Manageable)
	}
}
