package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestSplitKV(t *testing.T) {
	tests := []struct {
		in    string
		key   string
		value any
	}{
		{"cpus=24", "cpus", json.Number("24")},
		{"cpu_arch=x86_64", "cpu_arch", "x86_64"},
		{"image_source=glance://cirros-image", "image_source", "glance://cirros-image"},
		{"flag=true", "flag", true},
		{"list=[1, 2]", "list", []any{json.Number("1"), json.Number("2")}},
		{"s=\"quoted\"", "s", "quoted"},
		{"two=1 2", "two", "1 2"},
		{"eq=a=b", "eq", "a=b"},
		{"empty=", "empty", ""},
	}
	for _, tt := range tests {
		k, v, err := splitKV(tt.in)
		if err != nil || k != tt.key || !reflect.DeepEqual(v, tt.value) {
			t.Errorf("splitKV(%q) = %q, %#v, %v", tt.in, k, v, err)
		}
	}
	if _, _, err := splitKV("novalue"); err == nil {
		t.Error("key without = must fail")
	}
}

func TestJSONArg(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "steps.json")
	if err := os.WriteFile(path, []byte(`[{"interface": "deploy", "step": "x"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{`[{"interface": "deploy", "step": "x"}]`, path, "@" + path, "-"} {
		v, err := jsonArg(arg, "clean steps", strings.NewReader(`[{"interface": "deploy", "step": "x"}]`))
		if err != nil {
			t.Fatalf("jsonArg(%q): %v", arg, err)
		}
		if l, ok := v.([]any); !ok || len(l) != 1 {
			t.Errorf("jsonArg(%q) = %#v", arg, v)
		}
	}
	if _, err := jsonArg("@"+filepath.Join(dir, "missing"), "x", nil); err == nil {
		t.Error("a missing @file must fail")
	}
}

func TestOptionalAndMultiArgs(t *testing.T) {
	tests := []struct {
		name     string
		argv     []string
		wait     string
		waitSet  bool
		fields   []string
		leftover []string
	}{
		{"--wait N after the node", []string{"n1", "--wait", "60"}, "60", true, nil, []string{"n1"}},
		{"--wait N before the node", []string{"--wait", "60", "n1"}, "60", true, nil, []string{"n1"}},
		{"bare --wait", []string{"n1", "--wait"}, "0", true, nil, []string{"n1"}},
		{"--wait=N", []string{"--wait=5", "n1", "7"}, "5", true, nil, []string{"n1", "7"}},
		{"--wait before a name", []string{"--wait", "n1"}, "0", true, nil, []string{"n1"}},
		{"--fields takes the following words", []string{"--fields", "uuid", "name", "provision_state"}, "", false,
			[]string{"uuid", "name", "provision_state"}, []string{}},
		{"--fields with commas after a node", []string{"n1", "--fields", "uuid,name"}, "", false,
			[]string{"uuid", "name"}, []string{"n1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			wait := newOptionalArg(fs, "wait", "seconds", "0", "")
			fields := newMultiArg(fs, "fields", "")
			if err := fs.Parse(tt.argv); err != nil {
				t.Fatal(err)
			}
			args := fs.Args()
			v, args := wait.take(args, isSeconds)
			fl, args := fields.take(args)
			if v != tt.wait || wait.set != tt.waitSet || !reflect.DeepEqual(fl, tt.fields) || len(args) != len(tt.leftover) {
				t.Errorf("wait %q (set %v), fields %v, args %v", v, wait.set, fl, args)
			}
			for i := range args {
				if args[i] != tt.leftover[i] {
					t.Errorf("args %v, want %v", args, tt.leftover)
				}
			}
		})
	}
}
