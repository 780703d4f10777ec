package server

import (
	"net"
	"net/http"
	"strings"

	"github.com/anvil-metal/anvil/internal/api"
)

// hostGuard refuses requests whose Host header names a host this server
// does not know, against DNS rebinding: a web page whose name the attacker
// re-points at 127.0.0.1 reaches the API with its own name in Host.
// Accepted: IP literals (a rebinding needs a name), localhost and
// *.localhost, and the allowed names (--allowed-hosts, plus the hosts of
// the configured public URLs). Names compare case-insensitively, without
// the port; "*" in allowed turns the check off.
func hostGuard(h http.Handler, allowed []string) http.Handler {
	names := map[string]bool{}
	for _, a := range allowed {
		if a == "*" {
			return h
		}
		names[hostOnly(a)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostAllowed(r.Host, names) {
			api.WriteError(w, http.StatusBadRequest, "Host "+quoteHost(r.Host)+" is not one of this server's names; add it with --allowed-hosts.")
			return
		}
		h.ServeHTTP(w, r)
	})
}

func hostAllowed(host string, names map[string]bool) bool {
	h := hostOnly(host)
	if h == "" {
		return false
	}
	if net.ParseIP(h) != nil || h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	return names[h]
}

// hostOnly is the lower-cased host of a Host value or URL host, without
// port, brackets or trailing dot.
func hostOnly(hostport string) string {
	h := strings.ToLower(strings.TrimSpace(hostport))
	if hh, _, err := net.SplitHostPort(h); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(h, "]"), "["), ".")
	return h
}

// quoteHost bounds and quotes a client's Host value for the error text.
func quoteHost(h string) string {
	if len(h) > 64 {
		h = h[:64] + "..."
	}
	return "'" + strings.ReplaceAll(h, "'", "") + "'"
}
