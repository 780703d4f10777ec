package api

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/pyrepr"
	"github.com/anvil-metal/anvil/internal/secret"
)

// patchOp is one validated RFC 6902 operation of a PATCH body.
type patchOp struct {
	Op       string
	Path     string
	Value    any
	HasValue bool
}

// minorPatchEscapes is the version from which a patch path may name keys
// containing "~" or "/", escaped as RFC 6901 "~0" and "~1" (Ironic 1.98).
const minorPatchEscapes = 98

// patchPathRe is Ironic's patch path pattern '^(/[\w-]+)+$' (Python's \w
// is Unicode-aware); patchPathEscRe adds RFC 6901's two escapes, from 1.98.
var (
	patchPathRe    = regexp.MustCompile(`^(/[\p{L}\p{N}_-]+)+$`)
	patchPathEscRe = regexp.MustCompile(`^(/([\p{L}\p{N}_-]|~[01])+)+$`)
)

// Python reprs of the two patterns, for the schema error.
const (
	patchPathText    = `'^(/[\\w-]+)+$'`
	patchPathEscText = `'^(/([\\w-]|~[01])+)+$'`
)

// parsePatch checks a PATCH body against Ironic's patch schema: a list of
// {op, path, value} with op one of add, replace, remove. From 1.98 a path
// segment may contain "~0" (a "~" of the key) and "~1" (a "/").
//
// Ironic's own schema still refuses any "~" in a path, so Ironic answers
// such a path with the schema error even at 1.98; Anvil gives 1.98 the
// meaning its release note documents.
func parsePatch(v any, minor int) ([]patchOp, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, schemaError("patch", "%s is not of type 'array'", maskedRepr(v))
	}
	re, text := patchPathRe, patchPathText
	if minor >= minorPatchEscapes {
		re, text = patchPathEscRe, patchPathEscText
	}
	if len(list) > maxPatchOps {
		return nil, invalid("A patch may have at most %d operations, not %d.", maxPatchOps, len(list))
	}
	ops := make([]patchOp, 0, len(list))
	for _, item := range list {
		op, err := parsePatchOp(item, re, text)
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	return ops, nil
}

func parsePatchOp(item any, pathRe *regexp.Regexp, pathText string) (patchOp, error) {
	m, ok := item.(map[string]any)
	if !ok {
		return patchOp{}, schemaError("patch", "%s is not of type 'object'", maskedRepr(item))
	}
	for _, req := range []string{"op", "path"} {
		if _, ok := m[req]; !ok {
			return patchOp{}, schemaError("patch", "'%s' is a required property", req)
		}
	}
	var extra []string
	for k := range m {
		if k != "op" && k != "path" && k != "value" {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		return patchOp{}, additionalProps("patch", extra)
	}
	path, ok := m["path"].(string)
	if !ok {
		return patchOp{}, schemaError("patch", "%s is not of type 'string'", maskedRepr(m["path"]))
	}
	if !pathRe.MatchString(path) {
		return patchOp{}, schemaError("patch", "%s does not match %s", pyrepr.Quote(path), pathText)
	}
	op, ok := m["op"].(string)
	if !ok {
		return patchOp{}, schemaError("patch", "%s is not of type 'string'", maskedRepr(m["op"]))
	}
	if op != "add" && op != "replace" && op != "remove" {
		return patchOp{}, schemaError("patch", "%s is not one of ['add', 'replace', 'remove']", pyrepr.Quote(op))
	}
	val, has := m["value"]
	return patchOp{Op: op, Path: path, Value: val, HasValue: has}, nil
}

// repr is Python's repr() of the operation, as Ironic quotes it, with the
// value masked when the path names a secret (an error text must not echo
// a password).
func (p patchOp) repr() string {
	d := pyrepr.Dict{Keys: []string{"op", "path"}, Values: map[string]any{"op": p.Op, "path": p.Path}}
	if p.HasValue {
		d.Keys = append(d.Keys, "value")
		d.Values["value"] = maskPatchValue(p.Path, p.Value)
	}
	return maskedRepr(d)
}

// maskPatchValue is v as it may be shown: Mask when a segment of path
// names a secret, else with its inner secrets masked.
func maskPatchValue(path string, v any) any {
	if secret.Path(path) {
		return secret.Mask
	}
	return secret.Value(v)
}

// field is the top-level attribute an operation touches, with RFC 6901's
// escapes decoded (Ironic's decode_json_pointer; only 1.98 lets them in).
func (p patchOp) field() string {
	f, _, _ := strings.Cut(strings.TrimPrefix(p.Path, "/"), "/")
	return decodePointerToken(f)
}

// decodePointerToken decodes one JSON pointer token: "~1" is "/", then
// "~0" is "~".
func decodePointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// patchValues returns the values set on exactly path (Ironic's
// get_patch_values: every non-remove operation on that path).
func patchValues(ops []patchOp, path string) []any {
	var out []any
	for _, p := range ops {
		if p.Path == path && p.Op != "remove" && p.HasValue {
			out = append(out, p.Value)
		}
	}
	return out
}

// touches reports whether an operation changes path or something below it.
func touches(ops []patchOp, path string) bool {
	for _, p := range ops {
		if p.Path == path || strings.HasPrefix(p.Path, path+"/") {
			return true
		}
	}
	return false
}

// checkAllowedFields is Ironic's patch_validate_allowed_fields.
func checkAllowedFields(ops []patchOp, allowed []string) error {
	for _, p := range ops {
		if !slices.Contains(allowed, p.field()) {
			return invalid("Cannot patch %s. Only the following can be updated: %s", p.Path, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// fillRemoved sets the properties a patch removed to null, as Ironic reads
// a missing key of the patched document.
func fillRemoved(doc map[string]any, props []nodeProp) {
	for _, p := range props {
		if _, ok := doc[p.name]; !ok {
			doc[p.name] = nil
		}
	}
}

// maxPatchOps caps the operations of one PATCH. Ironic sets no cap; a node
// has a few dozen fields, so no real patch comes near it.
const maxPatchOps = 1000

// applyPatch applies the operations one at a time to a copy of a JSON
// object, reporting the first failing one as Ironic does. It works on the
// decoded document, so its cost is linear in the patch and the document;
// it stops when ctx ends (the client left).
func applyPatch(ctx context.Context, doc map[string]any, ops []patchOp) (map[string]any, error) {
	for _, p := range ops {
		if p.Op == "add" && strings.Count(p.Path, "/") == 1 {
			if _, ok := doc[p.field()]; !ok {
				return nil, invalid("Adding a new attribute (%s) to the root of the resource is not allowed", p.Path)
			}
		}
	}
	var out map[string]any
	if err := jsonCopy(doc, &out); err != nil {
		return nil, fmt.Errorf("copy patch document: %w", err)
	}
	for i, p := range ops {
		if i%64 == 0 && ctx.Err() != nil {
			return nil, fmt.Errorf("apply patch: %w", ctx.Err())
		}
		if err := applyOne(out, p); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// jsonCopy is a deep copy through JSON, giving the types a decoded body
// has (float64 numbers, []any, map[string]any).
func jsonCopy(v any, out any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

func patchError(p patchOp, reason string) error {
	return fault.New(fault.Invalid, "Couldn't apply patch '%s'. Reason: %s", p.repr(), reason)
}

// applyOne checks one operation against the document with jsonpatch's
// (Python) wording, then applies it in place.
func applyOne(doc map[string]any, p patchOp) error {
	if (p.Op == "add" || p.Op == "replace") && !p.HasValue {
		return patchError(p, "The operation does not contain a 'value' member")
	}
	if reason := precheck(doc, p); reason != "" {
		return patchError(p, reason)
	}
	var val any
	if p.HasValue {
		if err := jsonCopy(p.Value, &val); err != nil {
			return patchError(p, "the value can not be encoded")
		}
	}
	parts := pointerParts(p.Path)
	var parent any = doc
	for _, part := range parts[:len(parts)-1] {
		parent, _ = step(parent, part)
	}
	last := parts[len(parts)-1]
	switch c := parent.(type) {
	case map[string]any:
		if p.Op == "remove" {
			delete(c, last)
		} else {
			c[last] = val
		}
	case []any:
		next := c
		switch {
		case p.Op == "add" && last == "-":
			next = append(c, val)
		case p.Op == "add":
			idx, _ := listIndex(last)
			next = slices.Insert(c, idx, val)
		case p.Op == "replace":
			idx, _ := listIndex(last)
			c[idx] = val
		default:
			idx, _ := listIndex(last)
			next = slices.Delete(c, idx, idx+1)
		}
		setChild(doc, parts[:len(parts)-1], next)
	}
	return nil
}

// setChild stores a list that may have moved (append, insert, delete) back
// under its parent.
func setChild(doc map[string]any, parts []string, v any) {
	var cur any = doc
	for i, part := range parts {
		if i == len(parts)-1 {
			switch c := cur.(type) {
			case map[string]any:
				c[part] = v
			case []any:
				idx, _ := listIndex(part)
				c[idx] = v
			}
			return
		}
		cur, _ = step(cur, part)
	}
}

// pointerParts splits a JSON pointer into its decoded tokens.
func pointerParts(path string) []string {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i, part := range parts {
		parts[i] = decodePointerToken(part)
	}
	return parts
}

func patchOpMap(p patchOp) map[string]any {
	m := map[string]any{"op": p.Op, "path": p.Path}
	if p.HasValue {
		m["value"] = p.Value
	}
	return m
}

// precheck walks the JSON pointer the way python-jsonpointer does and
// returns jsonpatch's reason for an operation that cannot apply.
func precheck(doc any, p patchOp) string {
	parts := pointerParts(p.Path)
	cur := doc
	for _, part := range parts[:len(parts)-1] {
		next, reason := step(cur, part)
		if reason != "" {
			return reason
		}
		cur = next
	}
	return lastStep(cur, parts[len(parts)-1], p.Op)
}

func step(cur any, part string) (any, string) {
	if str, ok := cur.(string); ok {
		// A Python str is a sequence: it takes indexes, not names.
		if _, ok := listIndex(part); !ok {
			return nil, fmt.Sprintf("'%s' is not a valid sequence index", part)
		}
		return nil, notIndexable(str)
	}
	switch c := cur.(type) {
	case map[string]any:
		v, ok := c[part]
		if !ok {
			return nil, fmt.Sprintf("member '%s' not found in %s", part, maskedRepr(c))
		}
		return v, ""
	case []any:
		idx, ok := listIndex(part)
		if !ok {
			return nil, fmt.Sprintf("'%s' is not a valid sequence index", part)
		}
		if idx >= len(c) {
			return nil, fmt.Sprintf("index '%s' is out of bounds", part)
		}
		return c[idx], ""
	}
	return nil, notIndexable(cur)
}

func lastStep(parent any, part, op string) string {
	switch c := parent.(type) {
	case map[string]any:
		if _, ok := c[part]; !ok && op != "add" {
			return fmt.Sprintf("can't %s a non-existent object '%s'", op, part)
		}
	case []any:
		if part == "-" && op == "add" {
			return ""
		}
		idx, ok := listIndex(part)
		if !ok {
			return fmt.Sprintf("'%s' is not a valid sequence index", part)
		}
		switch {
		case op == "add" && idx > len(c):
			return "can't insert outside of list"
		case op == "replace" && idx >= len(c):
			return "can't replace outside of list"
		case op == "remove" && idx >= len(c):
			return fmt.Sprintf("can't remove a non-existent object '%s'", part)
		}
	case string:
		if _, ok := listIndex(part); !ok && part != "-" {
			return fmt.Sprintf("'%s' is not a valid sequence index", part)
		}
		return notIndexable(c)
	default:
		return notIndexable(parent)
	}
	return ""
}

// listIndex parses a JSON pointer array index ('0|[1-9][0-9]*').
func listIndex(part string) (int, bool) {
	if part == "" || len(part) > 9 || (len(part) > 1 && part[0] == '0') {
		return 0, false
	}
	n, err := strconv.Atoi(part)
	if err != nil || n < 0 || strings.ContainsAny(part, "+-") {
		return 0, false
	}
	return n, true
}

func notIndexable(v any) string {
	name := map[string]string{"null": "NoneType", "boolean": "bool", "string": "str",
		"integer": "int", "number": "float"}[jsonType(v)]
	return fmt.Sprintf("Document '<class '%s'>' does not support indexing, must be mapping/sequence or support __getitem__", name)
}
