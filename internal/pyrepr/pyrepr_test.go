package pyrepr

import (
	"encoding/json"
	"math"
	"testing"
)

// The expected strings are what CPython 3.11 prints for the same values
// (python3 -c 'print(repr(...))'); TestAgainstPython re-checks random
// values against a live python3 when one is installed.

func TestQuote(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"empty", "", `''`},
		{"plain", "plain", `'plain'`},
		{"single quote switches to double", "it's", `"it's"`},
		{"double quotes stay inside single", `say "hi"`, `'say "hi"'`},
		{"both quotes escape the single", `both ' "`, `'both \' "'`},
		{"backslash in double-quoted", `back\slash'`, `"back\\slash'"`},
		{"tab newline backslash", "tab\there\nnew\\", `'tab\there\nnew\\'`},
		{"carriage return", "cr\r", `'cr\r'`},
		{"control char", "a\x01b", `'a\x01b'`},
		{"DEL", "del\x7f", `'del\x7f'`},
		{"C1 controls", "\u0080\u009f", `'\x80\x9f'`},
		{"no-break space", "\u00a0", `'\xa0'`},
		{"soft hyphen", "\u00ad", `'\xad'`},
		{"Latin-1 letter stays", "é", `'é'`},
		{"letters stay", "ü中Ω≈ç√", `'ü中Ω≈ç√'`},
		{"line separator", "\u2028", `'\u2028'`},
		{"ideographic space", "\u3000", `'\u3000'`},
		{"private use", "\ue000", `'\ue000'`},
		{"replacement char is printable", "\ufffd", `'�'`},
		{"emoji stays", "😀", `'😀'`},
		{"astral format char", "\U000e0001", `'\U000e0001'`},
		{"last code point", "\U0010ffff", `'\U0010ffff'`},
		{"invalid UTF-8", "a\xffb", `'a\ufffdb'`},
		// Texts from Ironic 21.4 (testdata/ironic/ironic-21.4-observed.md).
		{"bad node name", "bad name!", `'bad name!'`},
		{"state with space", "wait call-back", `'wait call-back'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Quote(tt.in); got != tt.want {
				t.Errorf("Quote(%q) = %s, want %s", tt.in, got, tt.want)
			}
			if got := Repr(tt.in); got != tt.want {
				t.Errorf("Repr(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestFloat(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0.0"}, {math.Copysign(0, -1), "-0.0"}, {1, "1.0"}, {2.5, "2.5"}, {1e3, "1000.0"},
		{1e15, "1000000000000000.0"}, {9007199254740992, "9007199254740992.0"},
		{1e16, "1e+16"}, {1.5e16, "1.5e+16"}, {1e22, "1e+22"}, {1e300, "1e+300"},
		{1234567.5, "1234567.5"}, {123456789012345.6, "123456789012345.6"},
		{0.1, "0.1"}, {1.0 / 3, "0.3333333333333333"}, {0.0001, "0.0001"},
		{0.00001, "1e-05"}, {1e-7, "1e-07"}, {1.5e-7, "1.5e-07"}, {-2.5e-10, "-2.5e-10"},
		{5e-324, "5e-324"}, {math.MaxFloat64, "1.7976931348623157e+308"},
		{math.Inf(1), "inf"}, {math.Inf(-1), "-inf"}, {math.NaN(), "nan"},
	}
	for _, tt := range tests {
		if got := Float(tt.in); got != tt.want {
			t.Errorf("Float(%v) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestNumber(t *testing.T) {
	tests := map[string]string{
		"1": "1", "-0": "0", "24": "24", "1e3": "1000.0", "1E3": "1000.0", "1.0": "1.0",
		"-0.0": "-0.0", "0.5": "0.5", "1.5e16": "1.5e+16", "1e400": "inf",
		"123456789012345678901234567890": "123456789012345678901234567890",
	}
	for in, want := range tests {
		if got := Repr(json.Number(in)); got != want {
			t.Errorf("Repr(json.Number(%s)) = %s, want %s", in, got, want)
		}
	}
}

func TestRepr(t *testing.T) {
	type named map[string]any
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"None", nil, "None"},
		{"bools", []any{true, false}, "[True, False]"},
		{"decoded ints", []any{24.0, -3.0, 0.0}, "[24, -3, 0]"},
		{"decoded floats", []any{2.5, 1e16, 1e-5}, "[2.5, 1e+16, 1e-05]"},
		{"Go ints", []any{7, int64(-8), uint8(9), int32(10)}, "[7, -8, 9, 10]"},
		{"json numbers", []any{json.Number("24"), json.Number("2.5"), json.Number("1e3")}, "[24, 2.5, 1000.0]"},
		{"empty list", []any{}, "[]"},
		{"nil slice", []string(nil), "[]"},
		{"empty dict", map[string]any{}, "{}"},
		{"dict sorted", map[string]any{"b": "x", "a": []any{}}, "{'a': [], 'b': 'x'}"},
		{"nested", map[string]any{"a": []any{1.0, nil, true, map[string]any{"b": "it's"}}}, `{'a': [1, None, True, {'b': "it's"}]}`},
		{"string list", []string{"a", "b"}, "['a', 'b']"},
		{"named map type", named{"k": "v"}, "{'k': 'v'}"},
		{"string map", map[string]string{"z": "1", "y": "2"}, "{'y': '2', 'z': '1'}"},
		{"int slice", []int{1, 2}, "[1, 2]"},
		{"empty tuple", Tuple{}, "()"},
		{"one tuple", Tuple{"a"}, "('a',)"},
		{"two tuple", Tuple{"a", 1}, "('a', 1)"},
		{"nil pointer", (*int)(nil), "None"},
		// Ironic's step dict keeps insertion order (last_error of a failed clean).
		{"ordered step", Dict{Keys: []string{"interface", "step", "args", "priority"},
			Values: map[string]any{"interface": "deploy", "step": "erase_devices_metadata", "args": map[string]any{}, "priority": 99}},
			"{'interface': 'deploy', 'step': 'erase_devices_metadata', 'args': {}, 'priority': 99}"},
		{"dict missing value", Dict{Keys: []string{"a"}}, "{'a': None}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Repr(tt.in); got != tt.want {
				t.Errorf("Repr = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestStr(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{"plain", "plain"}, {"it's", "it's"}, {nil, "None"}, {true, "True"},
		{[]any{"x"}, "['x']"}, {3.0, "3"},
	}
	for _, tt := range tests {
		if got := Str(tt.in); got != tt.want {
			t.Errorf("Str(%#v) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestIronicMessages rebuilds messages a real Ironic 21.4 returned
// (testdata/ironic/ironic-21.4-observed.md) from their parts.
func TestIronicMessages(t *testing.T) {
	tests := []struct{ name, got, want string }{
		{"delete allowed states",
			`Valid provision states to perform deletion are: "` + StringTuple([]string{"manageable", "enroll", "adopt failed", "available"}) + `"`,
			`Valid provision states to perform deletion are: "('manageable', 'enroll', 'adopt failed', 'available')"`},
		{"unknown clean step",
			"node does not support this clean step: " + Repr(Dict{Keys: []string{"interface", "step"}, Values: map[string]any{"interface": "deploy", "step": "no_such_step"}}),
			"node does not support this clean step: {'interface': 'deploy', 'step': 'no_such_step'}"},
		{"no recognized columns",
			"No recognized column names in " + Strings([]string{"name"}) + ". Recognized columns are " +
				StringTuple([]string{"UUID", "Name", "Instance UUID", "Power State", "Provisioning State", "Maintenance"}) + ".",
			"No recognized column names in ['name']. Recognized columns are ('UUID', 'Name', 'Instance UUID', 'Power State', 'Provisioning State', 'Maintenance')."},
		{"bad name", "Cannot create node with invalid name " + Quote("bad name!"), "Cannot create node with invalid name 'bad name!'"},
		{"argparse choices", "(choose from " + QuoteAll([]string{"classic", "dynamic"}) + ")", "(choose from 'classic', 'dynamic')"},
		{"one-column tuple", StringTuple([]string{"UUID"}), "('UUID',)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, tt.got, tt.want)
		}
	}
}

func TestAppendJSONString(t *testing.T) {
	tests := map[string]string{
		"plain":             `"plain"`,
		"\x7f\x00é😀":        `"\u007f\u0000\u00e9\ud83d\ude00"`,
		"q\"b\\n\n\r\t\b\f": `"q\"b\\n\n\r\t\b\f"`,
		"</script>&":        `"</script>&"`,
		"bad\xff":           `"bad\ufffd"`,
	}
	for in, want := range tests {
		if got := string(AppendJSONString(nil, in)); got != want {
			t.Errorf("AppendJSONString(%q) = %s, want %s", in, got, want)
		}
	}
}

func FuzzQuote(f *testing.F) {
	for _, s := range []string{"", "it's", `"'`, "\x00\xff", "ü\u2028😀"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := Quote(s)
		if len(q) < 2 || q[0] != q[len(q)-1] || (q[0] != '\'' && q[0] != '"') {
			t.Fatalf("Quote(%q) = %s: not quoted", s, q)
		}
	})
}

func BenchmarkRepr(b *testing.B) {
	v := map[string]any{"interface": "deploy", "step": "erase_devices", "args": map[string]any{"force": true, "n": 3.0}, "priority": 99.0}
	for b.Loop() {
		_ = Repr(v)
	}
}
