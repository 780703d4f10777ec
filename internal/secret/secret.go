package secret

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"sync"
)

// Mask replaces a secret value, as Ironic's node rendering does.
const Mask = "******"

// sanitizeKeys are oslo.utils' _SANITIZE_KEYS: a key containing any of them
// (case-insensitively) holds a secret.
var sanitizeKeys = []string{"adminpass", "admin_pass", "password", "admin_password",
	"auth_token", "new_pass", "auth_password", "secret_uuid", "secret", "sys_pswd",
	"token", "configdrive", "chappassword", "encrypted_key", "private_key", "fernetkey",
	"sslkey", "passphrase", "cephclusterfsid", "octaviaheartbeatkey", "rabbitcookie",
	"cephmanilaclientkey", "pacemakerremoteauthkey", "designaterndckey", "cephadminkey",
	"heatauthencryptionkey", "cephclientkey", "keystonecredential",
	"barbicansimplecryptokek", "cephrgwkey", "swifthashsuffix", "migrationsshkey",
	"cephmdskey", "cephmonkey", "chapsecret"}

// IsKey reports whether a dict key names a secret: oslo's list, plus any
// key ending in "_key" (BMC and SNMP keys oslo's list misses) and
// Authorization headers.
func IsKey(k string) bool {
	lk := strings.ToLower(k)
	if strings.HasSuffix(lk, "_key") || lk == "authorization" {
		return true
	}
	for _, s := range sanitizeKeys {
		if strings.Contains(lk, s) {
			return true
		}
	}
	return false
}

// oslo's _FORMAT_PATTERNS_2 (two groups kept around the secret) and
// _FORMAT_PATTERNS_1 (one group before it), case-insensitive and dot-all,
// compiled per key as oslo does: a string pays only for the keys it holds.
// They are compiled on first use (some 8 ms), not at every program start.
var patterns = sync.OnceValues(func() (two, one map[string][]compiled) {
	return compile(
		pat{`(%k[0-9]*\s*[=]\s*[\"\'])[^\"\']*([\"\'])`, `"'`},
		pat{`(%k[0-9]*\s*[=]\s*[\"])[^\"]*([\"])`, `"`},
		pat{`(%k[0-9]*\s*[=]\s*[\'])[^\']*([\'])`, `'`},
		pat{`(%k[0-9]*\s+[\"\'])[^\"\']*([\"\'])`, `"'`},
		pat{`([-]{2}%k[0-9]*\s+)[^\'^\"^=^\s]+([\s]*)`, `-`},
		pat{`(<%k[0-9]*>)[^<]*(</%k[0-9]*>)`, `<`},
		pat{`([\"\']%k[0-9]*[\"\']\s*:\s*[\"\'])[^\"\']*([\"\'])`, `"'`},
		pat{`([\'"][^"\']*%k[0-9]*[\'"]\s*:\s*u?[\'"])[^\"\']*([\'"])`, `"'`},
		pat{`([\'"][^\'"]*%k[0-9]*[\'"]\s*,\s*\'--?[A-z]+\'\s*,\s*u?[\'"])[^\"\']*([\'"])`, `"'`},
		pat{`(%k[0-9]*\s*--?[A-z]+\s*)\S+(\s*)`, `-`},
	), compile(pat{`(%k[0-9]*\s*[=]\s*)[^\s^\'^\"]+`, `=`})
})

var (
	// Credentials in a URL: scheme://user:password@host.
	urlCreds = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@'"]*:)[^/\s@'"]+@`)
	// An HTTP Authorization header's credentials.
	authzHeader = regexp.MustCompile(`(?i)(authorization\s*[:=]\s*"?(?:basic|bearer|digest)\s+)[A-Za-z0-9+/=._~-]+`)
)

// pat is one oslo pattern (%k stands for the key) and the characters of
// which a string must hold one for it to match (a cheap pre-check).
type pat struct{ re, need string }

// compiled is a pattern compiled for one key.
type compiled struct {
	re   *regexp.Regexp
	need string
}

// compile returns, per sanitize key, the patterns with %k the key.
func compile(pats ...pat) map[string][]compiled {
	out := make(map[string][]compiled, len(sanitizeKeys))
	for _, k := range sanitizeKeys {
		for _, p := range pats {
			re := regexp.MustCompile("(?is)" + strings.ReplaceAll(p.re, "%k", regexp.QuoteMeta(k)))
			out[k] = append(out[k], compiled{re, p.need})
		}
	}
	return out
}

// String is oslo's mask_password: the secrets inside a free-form string
// (command lines, kernel parameters, URLs, JSON or Python reprs) masked.
func String(s string) string {
	if s == "" {
		return s
	}
	if strings.Contains(s, "@") {
		s = urlCreds.ReplaceAllStringFunc(s, func(m string) string {
			sub := urlCreds.FindStringSubmatch(m)
			if strings.Trim(m[len(sub[1]):len(m)-1], "*") == "" {
				return m // already masked
			}
			return sub[1] + Mask + "@"
		})
	}
	ls := strings.ToLower(s)
	if strings.Contains(ls, "authorization") {
		s = authzHeader.ReplaceAllString(s, "${1}"+Mask)
	}
	var patterns2, patterns1 map[string][]compiled
	for _, k := range sanitizeKeys {
		if !strings.Contains(ls, k) {
			continue
		}
		if patterns2 == nil {
			patterns2, patterns1 = patterns()
		}
		for _, p := range patterns2[k] {
			if strings.ContainsAny(s, p.need) {
				s = p.re.ReplaceAllString(s, "${1}"+Mask+"${2}")
			}
		}
		for _, p := range patterns1[k] {
			if strings.ContainsAny(s, p.need) {
				s = p.re.ReplaceAllString(s, "${1}"+Mask)
			}
		}
	}
	return s
}

// Path reports whether a JSON pointer (a JSON Patch path) names a secret:
// one of its segments is a secret key.
func Path(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if part != "" && IsKey(part) {
			return true
		}
	}
	return false
}

// Value is oslo's mask_dict_password generalised to any decoded JSON
// value: a copy where nested objects are masked in turn, other values of
// secret keys are replaced by Mask, and every other string goes through
// String.
func Value(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if _, isMap := e.(map[string]any); !isMap && IsKey(k) {
				out[k] = Mask
				continue
			}
			out[k] = Value(e)
		}
		// A JSON Patch operation on a secret: its value is the secret.
		if p, ok := x["path"].(string); ok && x["op"] != nil && x["value"] != nil && Path(p) {
			out["value"] = Mask
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Value(e)
		}
		return out
	case string:
		return String(x)
	}
	return v
}

// JSON masks a JSON document's secrets (for logged request and response
// bodies); text that is not JSON is masked as a string.
func JSON(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // numbers print as they came
	if err := dec.Decode(&v); err != nil || dec.More() {
		return []byte(String(string(b)))
	}
	out, err := json.Marshal(Value(v))
	if err != nil {
		return []byte(Mask)
	}
	return out
}

// ReplaceAttr is a slog.HandlerOptions.ReplaceAttr that masks every log
// record: the message, string and error values, attributes whose key names
// a secret, and maps (driver_info and the like).
func ReplaceAttr(_ []string, a slog.Attr) slog.Attr {
	if a.Key != slog.MessageKey && IsKey(a.Key) {
		return slog.String(a.Key, Mask)
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if m := String(v.String()); m != v.String() {
			return slog.String(a.Key, m)
		}
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			if m := String(x.Error()); m != x.Error() {
				return slog.String(a.Key, m)
			}
		case map[string]any:
			return slog.Any(a.Key, Value(x))
		case []byte:
			return slog.String(a.Key, string(JSON(x)))
		}
	}
	return a
}

// Handler wraps a slog.Handler so that every record it receives is masked
// as ReplaceAttr masks it, whatever options the handler was built with.
func Handler(h slog.Handler) slog.Handler {
	if _, ok := h.(maskHandler); ok {
		return h
	}
	return maskHandler{h}
}

type maskHandler struct{ next slog.Handler }

func (m maskHandler) Enabled(ctx context.Context, l slog.Level) bool { return m.next.Enabled(ctx, l) }

func (m maskHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(maskAttr(a))
		return true
	})
	return m.next.Handle(ctx, out)
}

func (m maskHandler) WithAttrs(as []slog.Attr) slog.Handler {
	masked := make([]slog.Attr, len(as))
	for i, a := range as {
		masked[i] = maskAttr(a)
	}
	return maskHandler{m.next.WithAttrs(masked)}
}

func (m maskHandler) WithGroup(name string) slog.Handler { return maskHandler{m.next.WithGroup(name)} }

// maskAttr masks an attribute, through groups.
func maskAttr(a slog.Attr) slog.Attr {
	if v := a.Value.Resolve(); v.Kind() == slog.KindGroup {
		g := v.Group()
		out := make([]any, len(g))
		for i, e := range g {
			out[i] = maskAttr(e)
		}
		return slog.Group(a.Key, out...)
	}
	return ReplaceAttr(nil, a)
}
