package server

import (
	"log/slog"
	"net/http"
	"strings"

	"github.com/anvil-metal/anvil/internal/auth"
)

// audit logs every mutating API request once it is answered: who (the
// authenticated user, "" under noauth), from where, what (method and
// path, which names the node), the status and the request id. Bodies are
// never logged: they carry passwords.
func audit(h http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			h.ServeHTTP(w, r)
			return
		}
		rec := &auditRecorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		log.Info("audit", "user", auth.User(r.Context()), "remote", r.RemoteAddr,
			"method", r.Method, "path", r.URL.Path, "node", auditNode(r.URL.Path),
			"status", status, "request_id", w.Header().Get("Openstack-Request-Id"))
	})
}

// auditNode is the node a path names (/v1/nodes/<node>/...), or "".
func auditNode(path string) string {
	rest, ok := strings.CutPrefix(path, "/v1/nodes/")
	if !ok {
		if rest, ok = strings.CutPrefix(path, "/v1/heartbeat/"); !ok {
			return ""
		}
	}
	node, _, _ := strings.Cut(rest, "/")
	return node
}

type auditRecorder struct {
	http.ResponseWriter
	status int
}

func (a *auditRecorder) WriteHeader(code int) {
	if a.status == 0 {
		a.status = code
	}
	a.ResponseWriter.WriteHeader(code)
}

func (a *auditRecorder) Write(b []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	return a.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (a *auditRecorder) Unwrap() http.ResponseWriter { return a.ResponseWriter }
