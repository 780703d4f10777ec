package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/anvil-metal/anvil/internal/api"
	"github.com/anvil-metal/anvil/internal/auth"
	"github.com/anvil-metal/anvil/internal/secret"
)

// AuditRecord is one audited write: who, from where, what, which node, the
// result and the request id. Bodies are never recorded: they carry
// passwords.
type AuditRecord struct {
	Time      time.Time `json:"time"`
	User      string    `json:"user"`
	Remote    string    `json:"remote"`
	Method    string    `json:"method"`
	Path      string    `json:"path"`
	Node      string    `json:"node,omitempty"`
	Status    int       `json:"status"`
	RequestID string    `json:"request_id"`
}

// auditMsg is the log message of an audit record.
const auditMsg = "audit"

// openAudit returns the logger audit records go to: a JSON-lines file
// (created 0600, appended) when path is set, else log. close ends it.
func openAudit(path string, log *slog.Logger) (_ *slog.Logger, closeFn func() error, _ error) {
	if path == "" {
		return log, func() error { return nil }, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("audit log: %w", err)
	}
	return slog.New(secret.Handler(slog.NewJSONHandler(f, nil))), f.Close, nil
}

// audit logs every mutating API request once it is answered, except the
// agents' heartbeats (one per agent every few seconds: noise, and
// token-guarded).
func audit(h http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet, r.Method == http.MethodHead, r.Method == http.MethodOptions,
			strings.HasPrefix(r.URL.Path, "/v1/heartbeat/"):
			h.ServeHTTP(w, r)
			return
		}
		rec := &auditRecorder{ResponseWriter: w}
		ctx, note := api.WithAuditNote(r.Context())
		h.ServeHTTP(rec, r.WithContext(ctx))
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		log.Info(auditMsg, "user", auth.User(r.Context()), "remote", r.RemoteAddr,
			"method", r.Method, "path", r.URL.Path, "node", note.Node,
			"status", status, "request_id", w.Header().Get("Openstack-Request-Id"))
	})
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

// AuditFilter selects records; zero fields match everything.
type AuditFilter struct {
	Node, User   string
	Since, Until time.Time
}

func (f AuditFilter) match(r AuditRecord) bool {
	return (f.Node == "" || r.Node == f.Node) && (f.User == "" || r.User == f.User) &&
		(f.Since.IsZero() || !r.Time.Before(f.Since)) && (f.Until.IsZero() || r.Time.Before(f.Until))
}

// ReadAudit reads the audit records of r (JSON lines; other log lines are
// skipped) that f selects.
func ReadAudit(r io.Reader, f AuditFilter) ([]AuditRecord, error) {
	var out []AuditRecord
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var line struct {
			Msg string `json:"msg"`
			AuditRecord
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Msg != auditMsg {
			continue
		}
		if f.match(line.AuditRecord) {
			out = append(out, line.AuditRecord)
		}
	}
	return out, sc.Err()
}
