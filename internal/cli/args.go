package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// splitKV splits "key=value" and JSON-decodes the value when it is JSON
// (so cpus=24 sends a number), as python-ironicclient does.
func splitKV(s string) (string, any, error) {
	key, raw, ok := strings.Cut(s, "=")
	if !ok {
		return "", nil, fmt.Errorf("Attributes must be a list of PATH=VALUE not %q", s)
	}
	return key, jsonOrString(raw), nil
}

// jsonOrString decodes raw as JSON, or keeps it as a string.
func jsonOrString(raw string) any {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err == nil && !dec.More() {
		if _, err := dec.Token(); err == io.EOF {
			return v
		}
	}
	return raw
}

// kvMap turns repeated key=value options into an object.
func kvMap(pairs []string) (map[string]any, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	m := map[string]any{}
	for _, p := range pairs {
		k, v, err := splitKV(p)
		if err != nil {
			return nil, err
		}
		m[k] = v
	}
	return m, nil
}

// patchOp is one JSON Patch operation.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// addKV appends "add" operations for key=value pairs under prefix
// (e.g. /properties).
func addKV(ops []patchOp, prefix string, pairs []string) ([]patchOp, error) {
	for _, p := range pairs {
		k, v, err := splitKV(p)
		if err != nil {
			return nil, err
		}
		ops = append(ops, patchOp{Op: "add", Path: prefix + "/" + strings.TrimPrefix(k, "/"), Value: v})
	}
	return ops, nil
}

// removeKeys appends "remove" operations for keys under prefix.
func removeKeys(ops []patchOp, prefix string, keys []string) []patchOp {
	for _, k := range keys {
		ops = append(ops, patchOp{Op: "remove", Path: prefix + "/" + strings.TrimPrefix(k, "/")})
	}
	return ops
}

// jsonArg reads a JSON (or YAML-free JSON) argument the way
// python-ironicclient's handle_json_arg does: "-" reads standard input,
// "@path" or an existing file path reads the file, anything else is JSON.
func jsonArg(arg, what string, stdin io.Reader) (any, error) {
	var data []byte
	switch {
	case arg == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("read %s from standard input: %w", what, err)
		}
		data = b
	case strings.HasPrefix(arg, "@"):
		b, err := os.ReadFile(arg[1:])
		if err != nil {
			return nil, fmt.Errorf("Cannot get JSON from file '%s'. Error: %w", arg[1:], err)
		}
		data = b
	default:
		if st, err := os.Stat(arg); err == nil && st.Mode().IsRegular() {
			b, err := os.ReadFile(arg)
			if err != nil {
				return nil, fmt.Errorf("Cannot get JSON from file '%s'. Error: %w", arg, err)
			}
			data = b
		} else {
			data = []byte(arg)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("Value '%s' is not a file and cannot be parsed as JSON: '%v'", strings.TrimSpace(string(data)), err)
	}
	return v, nil
}

// optionalArg is a flag with an optional value that, like argparse's
// nargs='?', also takes its value from the next word: `--wait 60`. pflag
// only takes `--wait=60`, and leaves 60 among the positional arguments;
// take moves it back. Given alone, the flag holds its default (def).
type optionalArg struct {
	fs   *pflag.FlagSet
	typ  string
	def  string
	set  bool
	bare bool
	at   int // number of positional arguments seen when the flag was met
	val  string
}

func (o *optionalArg) String() string { return o.val }

func (o *optionalArg) Set(s string) error {
	o.set, o.val = true, s
	// pflag hands a flag given alone its default: the value may then be
	// the next positional word.
	o.bare = s == o.def
	if o.bare {
		o.at = len(o.fs.Args())
	}
	return nil
}

func (o *optionalArg) Type() string { return o.typ }

// newOptionalArg defines --name with an optional value of type typ whose
// default (when given alone) is def.
func newOptionalArg(fs *pflag.FlagSet, name, typ, def, usage string) *optionalArg {
	o := &optionalArg{fs: fs, typ: typ, def: def}
	f := fs.VarPF(o, name, "", usage)
	f.NoOptDefVal = def
	return o
}

// take returns the flag's value: the positional argument that followed it
// when accept says it is one (args loses that word), else its own.
func (o *optionalArg) take(args []string, accept func(string) bool) (string, []string) {
	if !o.bare || o.at >= len(args) || !accept(args[o.at]) {
		return o.val, args
	}
	v := args[o.at]
	rest := append(append([]string(nil), args[:o.at]...), args[o.at+1:]...)
	return v, rest
}

// multiArg is a flag like argparse's nargs='+' (`--fields uuid name`):
// pflag takes one word; the positional words after it are moved back by
// take. Commas also separate values.
type multiArg struct {
	fs   *pflag.FlagSet
	vals []string
	at   int
}

func (m *multiArg) String() string { return strings.Join(m.vals, ",") }

func (m *multiArg) Set(s string) error {
	if len(m.vals) == 0 {
		m.at = len(m.fs.Args())
	}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			m.vals = append(m.vals, p)
		}
	}
	return nil
}

func (m *multiArg) Type() string { return "strings" }

func newMultiArg(fs *pflag.FlagSet, name, usage string) *multiArg {
	m := &multiArg{fs: fs}
	fs.Var(m, name, usage)
	return m
}

// take returns the values plus the positional words that followed the
// flag; args keeps the words before it.
func (m *multiArg) take(args []string) ([]string, []string) {
	if len(m.vals) == 0 || m.at >= len(args) {
		return m.vals, args
	}
	return append(append([]string(nil), m.vals...), args[m.at:]...), args[:m.at]
}

// isSeconds accepts a whole number of seconds.
func isSeconds(s string) bool { _, ok := parseSeconds(s); return ok }

// parseBool reads a Python-ish boolean word.
func parseBool(s string) (bool, bool) { return pyrepr.BoolFromString(s) }

func isBoolWord(s string) bool { _, ok := parseBool(s); return ok }
