package api

import (
	"github.com/anvil-metal/anvil/internal/pyrepr"
	"github.com/anvil-metal/anvil/internal/secret"
)

// secretMask replaces secret values in responses, as in Ironic.
const secretMask = secret.Mask

// Keys Ironic masks besides the generic ones, when they hold a value.
var (
	driverInfoSecrets   = []string{"snmp_auth_key", "snmp_priv_key"}
	instanceInfoSecrets = []string{"configdrive", "image_url"}
)

// maskedWhenSet says whether key k of a map whose extra secrets are
// extra (driverInfoSecrets, instanceInfoSecrets) is masked for holding a
// value (Ironic masks those keys only when truthy).
func maskedWhenSet(extra []string, k string, v any) bool { return containsStr(extra, k) && truthy(v) }

// masked writes m (nil as {}) with its secrets replaced by "******" as
// Ironic's mask_dict_password: keys naming a secret, recursively through
// nested objects and lists, "password=..." and the like inside any other
// string (secret.String), plus the top-level extra keys whenever their
// value is truthy.
func (w *jw) masked(m map[string]any, extra ...string) {
	if len(m) == 0 {
		w.object(nil)
		return
	}
	w.obj()
	mark := len(w.keyBuf)
	w.keyBuf = appendSortedKeys(w.keyBuf, m)
	for _, k := range w.keyBuf[mark:] {
		v := m[k]
		w.key(k)
		switch {
		case maskedWhenSet(extra, k, v):
			w.str(secretMask)
		default:
			w.maskedValue(k, v)
		}
	}
	w.keyBuf = w.keyBuf[:mark]
	w.endObj()
}

// secret answers secret.IsKey, remembering answers for this response.
func (w *jw) secret(k string) bool {
	if s, ok := w.secrets[k]; ok {
		return s
	}
	if w.secrets == nil {
		w.secrets = make(map[string]bool)
	}
	s := secret.IsKey(k)
	w.secrets[k] = s
	return s
}

func (w *jw) maskedValue(k string, v any) {
	switch x := v.(type) {
	case map[string]any:
		w.masked(x)
	case []any:
		if k != "" && w.secret(k) {
			w.str(secretMask)
			return
		}
		w.arr()
		for _, e := range x {
			w.maskedValue("", e)
		}
		w.endArr()
	default:
		if k != "" && w.secret(k) {
			w.str(secretMask)
			return
		}
		if str, ok := v.(string); ok {
			w.str(secret.String(str))
			return
		}
		w.any(v)
	}
}

// truthy is Python's bool() of a decoded JSON value.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case float64:
		return x != 0
	case string:
		return x != ""
	case map[string]any:
		return len(x) > 0
	case []any:
		return len(x) > 0
	}
	return true
}

func containsStr(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// maskedRepr is Python's repr() of a value an error text quotes, with its
// secrets masked as responses mask them (secret.Value): a schema error
// about {"ipmi_password": 5} or "password=x" must not echo the secret.
// Every client-visible error quoting a request value goes through it.
func maskedRepr(v any) string { return pyrepr.Repr(secret.Value(v)) }
