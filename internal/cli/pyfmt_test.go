package cli

import (
	"strings"
	"testing"
)

// The expected strings below are what CPython 3 prints (json.dumps,
// yaml.safe_dump, osc-lib's format_dict) for the same values; repr() and
// str() are tested in package pyrepr.

func TestFormatDict(t *testing.T) {
	in := map[string]any{"b": num("2"), "a": map[string]any{"x": "y"}, "c": nil}
	if got, want := formatDict(in), "a.x='y', b='2', c='None'"; got != want {
		t.Errorf("formatDict = %q, want %q", got, want)
	}
	if got := formatDict(map[string]any{}); got != "" {
		t.Errorf("formatDict({}) = %q", got)
	}
}

func TestPyJSON(t *testing.T) {
	in := map[string]any{"a": "ü中/<>&\x01", "b": []any{}, "c": map[string]any{}, "d": []any{num("1"), map[string]any{"e": nil}}, "f": "😀"}
	var b strings.Builder
	writePyJSON(&b, in, 2, 0)
	want := "{\n  \"a\": \"\\u00fc\\u4e2d/<>&\\u0001\",\n  \"b\": [],\n  \"c\": {},\n  \"d\": [\n    1,\n    {\n      \"e\": null\n    }\n  ],\n  \"f\": \"\\ud83d\\ude00\"\n}"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	writePyJSON(&b, map[string]any{"a": []any{num("1"), true}, "b": nil}, -1, 0)
	if got := b.String(); got != `{"a": [1, true], "b": null}` {
		t.Errorf("noindent = %s", got)
	}
}

func TestYAMLScalars(t *testing.T) {
	tests := map[string]string{
		"":                                 "''",
		"1.5":                              "'1.5'",
		"2026-12-02T14:04:08.666444+00:00": "'2026-12-02T14:04:08.666444+00:00'",
		"******":                           "'******'",
		"yes":                              "'yes'",
		"a: b":                             "'a: b'",
		"null":                             "'null'",
		"1.2.3.4":                          "1.2.3.4",
		"-x":                               "-x",
		"x-":                               "x-",
		" lead":                            "' lead'",
		"#c":                               "'#c'",
		"a #b":                             "'a #b'",
		"@x":                               "'@x'",
		"0x1F":                             "'0x1F'",
		"1_000":                            "'1_000'",
		"~":                                "'~'",
		"x: ":                              "'x: '",
		"%x":                               "'%x'",
		"fake-hardware":                    "fake-hardware",
		"00:11:22:33:44:55":                "00:11:22:33:44:55",
		"12:30":                            "'12:30'",
		".5":                               "'.5'",
		"1e3":                              "1e3",
		"ü中":                               `"\xFC\u4E2D"`,
		"it's":                             "it's",
		"line1\nline2":                     `"line1\nline2"`,
	}
	for in, want := range tests {
		if got := yamlScalar(in); got != want {
			t.Errorf("yamlScalar(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestYAMLDocument(t *testing.T) {
	in := map[string]any{
		"i": []any{}, "j": map[string]any{},
		"k": []any{map[string]any{"x": num("1"), "y": []any{num("1"), num("2")}}},
		"l": map[string]any{"m": []any{"a"}, "n": map[string]any{"o": true}},
	}
	var b strings.Builder
	writeYAML(&b, in, 0)
	want := "i: []\nj: {}\nk:\n- x: 1\n  y:\n  - 1\n  - 2\nl:\n  m:\n  - a\n  n:\n    o: true\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestYAMLFolding checks the folding of long strings against what
// PyYAML's safe_dump wrote for the same node (a failed clean's last_error).
func TestYAMLFolding(t *testing.T) {
	msg := "Node bd6f4909-e6e2-4632-ac46-37291739e778 failed step {'interface': 'deploy', 'step': 'erase_devices_metadata', 'args': {}, 'priority': 99}: fake clean failure requested by driver_info fake_fail"
	var b strings.Builder
	writeYAML(&b, []any{orderedMap{Keys: []string{"Last Error"}, Values: map[string]any{"Last Error": msg}}}, 0)
	want := "- Last Error: 'Node bd6f4909-e6e2-4632-ac46-37291739e778 failed step {''interface'':\n" +
		"    ''deploy'', ''step'': ''erase_devices_metadata'', ''args'': {}, ''priority'':\n" +
		"    99}: fake clean failure requested by driver_info fake_fail'\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	plain := "Failed to tear down. Error: fake undeploy failure requested by driver_info fake_fail and more words"
	b.Reset()
	writeYAMLMap(&b, []string{"last_error"}, func(string) any { return plain }, 0, "")
	want = "last_error: 'Failed to tear down. Error: fake undeploy failure requested by driver_info\n  fake_fail and more words'\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	writeYAMLMap(&b, []string{"event"}, func(string) any { return strings.Repeat("word ", 20) + "end" }, 0, "")
	want = "event: word word word word word word word word word word word word word word word\n  word word word word word end\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}
