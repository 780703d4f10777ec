package testbin

import (
	"os"
	"path/filepath"
	"testing"
)

func TestStrict(t *testing.T) {
	for _, tt := range []struct {
		name     string
		ci, vm   string
		envs     []string
		expected bool
	}{
		{name: "nothing set", expected: false},
		{name: "CI set", ci: "true", expected: true},
		{name: "package switch on", vm: "1", envs: []string{"ANVIL_TESTBIN_SWITCH"}, expected: true},
		{name: "package switch not consulted", vm: "1", expected: false},
		{name: "package switch off", vm: "0", envs: []string{"ANVIL_TESTBIN_SWITCH"}, expected: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CI", tt.ci) // empty counts as unset
			t.Setenv("ANVIL_TESTBIN_SWITCH", tt.vm)
			if got := Strict(tt.envs...); got != tt.expected {
				t.Errorf("Strict(%v) = %v, want %v", tt.envs, got, tt.expected)
			}
		})
	}
}

func TestLookTool(t *testing.T) {
	dir := t.TempDir()
	tool := filepath.Join(dir, "tool")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := lookTool(tool); err != nil || got != tool {
		t.Errorf("absolute present tool: %q, %v", got, err)
	}
	if _, err := lookTool(filepath.Join(dir, "absent")); err == nil {
		t.Error("absolute absent tool found")
	}
	t.Setenv("PATH", dir)
	if got, err := lookTool("tool"); err != nil || got != tool {
		t.Errorf("tool in PATH: %q, %v", got, err)
	}
	if _, err := lookTool("absent-tool"); err == nil {
		t.Error("absent tool found in PATH")
	}
}

// TestNeedSkipsOutsideCI: outside CI a missing tool skips (the test that
// calls Need ends skipped, not failed).
func TestNeedSkipsOutsideCI(t *testing.T) {
	t.Setenv("CI", "")
	t.Setenv("PATH", t.TempDir())
	var ran bool
	ok := t.Run("inner", func(t *testing.T) {
		Need(t, "absent-tool", "absent-package")
		ran = true
	})
	if !ok || ran {
		t.Errorf("inner test: passed %v, ran past Need %v; want skipped", ok, ran)
	}
}
