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

// stringKeys are the keys whose "key=value", "--key value" and quoted
// forms are masked inside free-form strings: oslo's list and the
// credential words IsKey adds (passwd, pwd, credential, ...).
var stringKeys = append(append([]string(nil), sanitizeKeys...),
	"passwd", "pwd", "credential", "apikey", "api_key", "authkey", "auth_key", "key_contents", "_pass")

// secretWords are the credential words beyond oslo's list: a key with any
// of them as one of its words (split at _, -, ., spaces and camelCase
// humps) holds a secret: bmc_pass, ipmi_passwd, snmp_pwd, ssh_credentials.
var secretWords = map[string]bool{"pass": true, "passwd": true, "pwd": true, "pw": true, "pswd": true,
	"passcode": true, "secret": true, "secrets": true, "token": true, "tokens": true,
	"credential": true, "credentials": true, "cred": true, "creds": true, "apikey": true,
	"authkey": true, "privkey": true, "psk": true}

// IsKey reports whether a dict key names a secret: oslo.utils'
// _SANITIZE_KEYS as substrings (what Ironic's mask_dict_password masks),
// any credential word of secretWords, any key ending in "_key" or holding
// key contents or key data (BMC, SNMP and SSH keys oslo's list misses:
// snmp_auth_key, ssh_key_contents), a key named "auth" or ending in
// "_auth", and Authorization headers (also ending a key: IPA's
// image_request_authorization).
func IsKey(k string) bool {
	lk := strings.ToLower(k)
	if strings.HasSuffix(lk, "_key") || strings.HasSuffix(lk, "-key") || lk == "authorization" || strings.HasSuffix(lk, "_authorization") ||
		strings.Contains(lk, "key_contents") || strings.Contains(lk, "key_data") || strings.Contains(lk, "credential") ||
		strings.Contains(lk, "passwd") || lk == "auth" || strings.HasSuffix(lk, "_auth") {
		return true
	}
	for _, s := range sanitizeKeys {
		if strings.Contains(lk, s) {
			return true
		}
	}
	for _, w := range words(k) {
		if secretWords[w] {
			return true
		}
	}
	return false
}

// words splits a key into its lower-case words at '_', '-', '.', blanks
// and lower-to-upper camelCase humps ("bmcPass" is bmc, pass).
func words(k string) []string {
	var out []string
	start := 0
	flush := func(end int) {
		if end > start {
			out = append(out, strings.ToLower(k[start:end]))
		}
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c == '_' || c == '-' || c == '.' || c == ' ' || c == '/' || c == ':':
			flush(i)
			start = i + 1
		case c >= 'A' && c <= 'Z' && i > start && k[i-1] >= 'a' && k[i-1] <= 'z':
			flush(i)
			start = i
		}
	}
	flush(len(k))
	return out
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
	// The password runs to the last '@' before the path, so one holding
	// an unescaped '@' is masked whole.
	urlCreds = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@'"]*:)[^/\s'"]+@`)
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
	out := make(map[string][]compiled, len(stringKeys))
	for _, k := range stringKeys {
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
	for _, k := range stringKeys {
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

// DSN is a database URL or keyword/value connection string as it may be
// shown (start-up lines, errors): a URL's user info password masked
// whatever it holds (an unescaped '@' or '/' included: everything between
// the first ':' after "//" and the last '@'), and its query parameters
// naming a secret (?password=, ?sslpassword=); a keyword/value string's
// secrets (password=...) masked as String masks them.
func DSN(s string) string {
	if scheme, rest, ok := strings.Cut(s, "://"); ok {
		// The user info ends at the last '@' (a password may hold '@', '/',
		// '?' or '#'; an '@' in the query only makes more be masked).
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			if user, _, hasPW := strings.Cut(rest[:at], ":"); hasPW {
				rest = user + ":" + Mask + rest[at:]
			}
		}
		if q := strings.IndexByte(rest, '?'); q >= 0 {
			rest = rest[:q+1] + maskQuery(rest[q+1:])
		}
		return scheme + "://" + rest
	}
	return String(s)
}

// WithoutDSN is text (an error that may quote the connection string dsn,
// or part of it as a driver misread it) with dsn's password masked: the
// whole dsn as DSN shows it, its password and every piece of the password
// between the characters a URL parser splits at ('@', '/', ':', '?', '#')
// of four characters or more replaced by Mask, then String's masking.
// pgx, given "postgres://u:p@ss/word@host/db", names "ss/word@host/db"
// as the database in its error; the pieces catch that.
func WithoutDSN(text, dsn string) string {
	if dsn == "" {
		return String(text)
	}
	text = strings.ReplaceAll(text, dsn, DSN(dsn))
	if pw := dsnPassword(dsn); pw != "" {
		text = strings.ReplaceAll(text, pw, Mask)
		pieces := strings.FieldsFunc(pw, func(r rune) bool { return strings.ContainsRune("@/:?#", r) })
		for _, p := range pieces {
			if len(p) >= 4 {
				text = strings.ReplaceAll(text, p, Mask)
			}
		}
	}
	return String(text)
}

// dsnPassword is the password of a database URL's user info, as DSN
// delimits it, or of a keyword/value string's password=.
func dsnPassword(dsn string) string {
	if _, rest, ok := strings.Cut(dsn, "://"); ok {
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
				return pw
			}
		}
		return ""
	}
	for _, f := range strings.Fields(dsn) {
		if v, ok := strings.CutPrefix(f, "password="); ok {
			return strings.Trim(v, `'"`)
		}
	}
	return ""
}

// maskQuery masks the values of a URL query's secret parameters, keeping
// everything else byte for byte.
func maskQuery(q string) string {
	frag := ""
	if i := strings.IndexByte(q, '#'); i >= 0 {
		q, frag = q[:i], q[i:]
	}
	parts := strings.Split(q, "&")
	for i, p := range parts {
		k, _, hasV := strings.Cut(p, "=")
		if hasV && IsKey(k) {
			parts[i] = k + "=" + Mask
		}
	}
	return strings.Join(parts, "&") + frag
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
