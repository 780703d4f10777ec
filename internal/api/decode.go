package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/big"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// maxJSONDepth is Ironic's [api]max_json_body_depth default: deeper bodies
// are refused before any parser sees them.
const maxJSONDepth = 25

func errTooLarge() error {
	return fault.New(fault.TooLarge, "Request body is too large. Please contact the service administrator.")
}

func errTooDeep() error {
	return fault.New(fault.Invalid, "Request body JSON is nested too deeply. Please contact the service administrator.")
}

// readBody reads the request body, at most limit bytes, and checks that a
// non-empty body is JSON (a missing Content-Type is accepted).
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	if r.ContentLength > limit {
		return nil, errTooLarge()
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errTooLarge()
		}
		return nil, fault.Wrap(fault.Invalid, err, "The request body could not be read.")
	}
	if int64(len(body)) > limit {
		return nil, errTooLarge()
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil
	}
	if err := checkMediaType(r.Header.Get("Content-Type")); err != nil {
		return nil, err
	}
	return body, nil
}

// checkMediaType accepts application/json, any +json type and no type.
func checkMediaType(ct string) error {
	if strings.TrimSpace(ct) == "" {
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return nil
	}
	return fault.New(fault.Unsupported, "The media type %s is not supported, use application/json.", strconv.Quote(ct))
}

// parseJSON decodes one JSON document after bounding its nesting depth.
// An empty body decodes to nil.
func parseJSON(body []byte) (any, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, nil
	}
	if !depthWithin(body, maxJSONDepth) {
		return nil, errTooDeep()
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, malformed(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, invalid("Malformed JSON in request body: unexpected data after the JSON value.")
	}
	return v, nil
}

func malformed(err error) error {
	msg := err.Error()
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		msg = "unexpected end of JSON input"
	}
	return fault.Wrap(fault.Invalid, err, "Malformed JSON in request body: "+msg+".")
}

// depthWithin scans raw JSON iteratively, counting brackets outside strings,
// and reports whether nesting stays within max (Ironic's json_depth check).
func depthWithin(raw []byte, max int) bool {
	depth := 0
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case escaped:
			escaped = false
		case inString:
			if c == '\\' {
				escaped = true
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > max {
				return false
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return true
}

// decodeBody reads and parses a request body.
func (rc *call) decodeBody(limit int64) (any, error) {
	body, err := readBody(rc.r, limit)
	if fe, ok := errors.AsType[*fault.Error](err); ok && fe.Kind == fault.TooLarge {
		rc.drainBody()
	}
	if err != nil {
		return nil, err
	}
	return parseJSON(body)
}

// A body refused as too large is still read (and discarded) up to
// drainLimit bytes, within drainTimeout, before the 413 is sent: a server
// that answers and closes while the client is still sending makes the
// client's next write fail (a reset, a broken pipe), and ordinary clients
// (python http.client, gophercloud) then never read the 413. Larger or
// slower bodies are cut off; the connection is closed after the answer.
const (
	drainLimit   = 256 << 20
	drainTimeout = 30 * time.Second
)

func (rc *call) drainBody() {
	rc.w.Header().Set("Connection", "close")
	if rc.r.Body == nil || rc.r.ContentLength > drainLimit {
		return
	}
	ctl := http.NewResponseController(rc.w)
	_ = ctl.SetReadDeadline(time.Now().Add(drainTimeout))
	_, _ = io.Copy(io.Discard, io.LimitReader(rc.r.Body, drainLimit))
	_ = ctl.SetReadDeadline(time.Time{})
}

// argsBody reads an action body ({"target": ...}) as named arguments, the
// way Ironic's controllers take them: query parameters count too, a body
// that is not an object counts as none, and unknown names are refused.
func (rc *call) argsBody(limit int64, allowed ...string) (map[string]any, error) {
	v, err := rc.decodeBody(limit)
	if err != nil {
		return nil, err
	}
	args, _ := v.(map[string]any)
	if args == nil {
		args = map[string]any{}
	}
	for k, vals := range rc.query {
		if _, ok := args[k]; !ok && len(vals) > 0 {
			args[k] = vals[0]
		}
	}
	var extra []string
	for k := range args {
		if !slices.Contains(allowed, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		return nil, invalid("Unexpected arguments: %s", strings.Join(extra, ", "))
	}
	return args, nil
}

// Argument validators with Ironic's wording (ironic/common/args.py).

func missingArg(name string) error { return invalid("Missing mandatory parameter: %s", name) }

// argString accepts a string or null (present=false).
func argString(name string, v any) (s string, present bool, err error) {
	switch x := v.(type) {
	case nil:
		return "", false, nil
	case string:
		return x, true, nil
	}
	return "", false, invalid("Expected string for %s: %s", name, pyrepr.Str(v))
}

var boolWords = map[string]bool{
	"1": true, "t": true, "true": true, "on": true, "y": true, "yes": true,
	"0": false, "f": false, "false": false, "off": false, "n": false, "no": false,
}

// argBool is oslo's bool_from_string(strict=True); null means absent.
func argBool(name string, v any) (*bool, error) {
	if v == nil {
		return nil, nil
	}
	if b, ok := v.(bool); ok {
		return &b, nil
	}
	subject := pyrepr.Str(v)
	if b, ok := boolWords[strings.ToLower(strings.TrimSpace(subject))]; ok {
		return &b, nil
	}
	return nil, invalid("Invalid %s: Unrecognized value '%s', acceptable values are: '0', '1', 'f', 'false', 'n', 'no', 'off', 'on', 't', 'true', 'y', 'yes'",
		name, subject)
}

// argInt is Python's int() on a JSON value or query string; null is absent.
func argInt(name string, v any) (*int64, error) {
	bad := func() error { return invalid("Expected an integer for %s: %s", name, pyrepr.Str(v)) }
	var n int64
	switch x := v.(type) {
	case nil:
		return nil, nil
	case bool:
		if x {
			n = 1
		}
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, bad()
		}
		n = saturate(new(big.Float).SetFloat64(math.Trunc(x)))
	case string:
		i, ok := parsePyInt(x)
		if !ok {
			return nil, bad()
		}
		n = saturate(new(big.Float).SetInt(i))
	default:
		return nil, bad()
	}
	return &n, nil
}

func saturate(f *big.Float) int64 {
	if f.Cmp(big.NewFloat(math.MaxInt64)) >= 0 {
		return math.MaxInt64
	}
	if f.Cmp(big.NewFloat(math.MinInt64)) <= 0 {
		return math.MinInt64
	}
	i, _ := f.Int64()
	return i
}

// pyTypeNames are Python's spellings of the JSON types in args.types errors.
var pyTypeNames = map[string]string{
	"null": "<class 'NoneType'>", "object": "<class 'dict'>", "string": "<class 'str'>",
	"array": "<class 'list'>",
}

// argTypes checks v against JSON types ("null", "object", "string", "array").
func argTypes(name string, v any, types ...string) error {
	if slices.Contains(types, jsonType(v)) {
		return nil
	}
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = pyTypeNames[t]
	}
	return invalid("Expected types %s for %s: %s", strings.Join(names, ", "), name, pyrepr.Str(v))
}

// jsonType names a decoded value's JSON type as jsonschema does.
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case float64:
		if x == math.Trunc(x) {
			return "integer"
		}
		return "number"
	}
	return "unknown"
}

// isUUIDLike is oslo's uuidutils.is_uuid_like.
func isUUIDLike(s string) bool {
	_, err := uuid.Parse(s)
	return err == nil && len(s) <= 45
}

// canonicalUUID returns the lower-case dashed form of a UUID-like string.
func canonicalUUID(s string) string {
	u, err := uuid.Parse(s)
	if err != nil {
		return s
	}
	return u.String()
}

// isValidLogicalName is Ironic's utils.is_valid_logical_name: RFC 3986
// unreserved characters, at most 255 of them.
func isValidLogicalName(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

// isHostnameSafe is Ironic's pre-1.10 name check (RFC 952/1123 host names).
func isHostnameSafe(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	s = strings.TrimSuffix(s, ".")
	labels := strings.Split(s, ".")
	for i, l := range labels {
		if l == "" || len(l) > 63 || !isAlnumLower(l[len(l)-1]) {
			return false
		}
		for j := 0; j < len(l); j++ {
			c := l[j]
			if !isAlnumLower(c) && c != '-' && !(i > 0 && c == '_') {
				return false
			}
		}
		if i == 0 && !isAlnumLower(l[0]) {
			return false
		}
	}
	return true
}

func isAlnumLower(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
