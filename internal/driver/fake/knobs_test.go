package fake_test

import (
	"testing"

	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/fake"
	"github.com/anvil-metal/anvil/internal/model"
)

// TestKnobValidation: every numeric knob refuses NaN, infinities and wrong
// types; fake_fail takes a comma list or a list of names, nothing else.
func TestKnobValidation(t *testing.T) {
	h := fake.New()
	cases := []struct {
		name string
		info map[string]any
		ok   bool
	}{
		{"delay number", map[string]any{"fake_deploy_delay": 1.5}, true},
		{"delay string", map[string]any{"fake_deploy_delay": "2"}, true},
		{"delay NaN", map[string]any{"fake_deploy_delay": "NaN"}, false},
		{"delay Inf", map[string]any{"fake_deploy_delay": "Inf"}, false},
		{"delay negative", map[string]any{"fake_deploy_delay": -1.0}, false},
		{"delay bool", map[string]any{"fake_deploy_delay": true}, false},
		{"fail string", map[string]any{"fake_fail": "deploy, clean"}, true},
		{"fail list", map[string]any{"fake_fail": []any{"deploy"}}, true},
		{"fail number", map[string]any{"fake_fail": 3.0}, false},
		{"fail list of numbers", map[string]any{"fake_fail": []any{3.0}}, false},
	}
	for _, c := range cases {
		err := h.Validate(&driver.Task{Node: &model.Node{DriverInfo: c.info}})
		if (err == nil) != c.ok {
			t.Errorf("%s: Validate = %v, want ok=%v", c.name, err, c.ok)
		}
	}
	if !fake.Fails(&model.Node{DriverInfo: map[string]any{"fake_fail": []any{"clean", "deploy"}}}, "deploy") {
		t.Error("a list-valued fake_fail was ignored")
	}
}
