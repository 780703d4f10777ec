package metrics

import (
	"net/http"
	"strconv"
	"strings"
)

// Instrument counts and times the requests next serves, labelled with the
// route pattern route names (e.g. api.Server.Route), the method and the status.
// Event streams (text/event-stream answers) are counted, not timed: their
// duration is the client's choice.
func (m *Metrics) Instrument(next http.Handler, route func(*http.Request) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := m.cfg.Now()
		rw := &statusRecorder{ResponseWriter: w}
		defer func() {
			status := rw.status
			if status == 0 {
				status = http.StatusOK
			}
			rt := route(r)
			if rt == "" {
				rt = "other"
			}
			labels := []string{rt, methodLabel(r.Method), strconv.Itoa(status)}
			m.requests.WithLabelValues(labels...).Inc()
			if !rw.stream {
				m.latency.WithLabelValues(labels...).Observe(m.cfg.Now().Sub(start).Seconds())
			}
		}()
		next.ServeHTTP(rw, r)
	})
}

// methodLabel bounds the method label to the standard methods.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

// statusRecorder remembers the status and whether the answer is a stream.
type statusRecorder struct {
	http.ResponseWriter
	status int
	stream bool
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		w.stream = strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream")
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flush, deadlines).
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
