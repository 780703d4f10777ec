package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/secret"
	"github.com/anvil-metal/anvil/internal/store"
)

// kindStatus is the one table from fault kinds to HTTP status codes.
var kindStatus = map[fault.Kind]int{
	fault.Invalid:       http.StatusBadRequest,
	fault.Unauthorized:  http.StatusUnauthorized,
	fault.NotFound:      http.StatusNotFound,
	fault.NotAllowed:    http.StatusMethodNotAllowed,
	fault.NotAcceptable: http.StatusNotAcceptable,
	fault.Conflict:      http.StatusConflict,
	fault.TooLarge:      http.StatusRequestEntityTooLarge,
	fault.Unsupported:   http.StatusUnsupportedMediaType,
	fault.Unavailable:   http.StatusServiceUnavailable,
	fault.DriverFailed:  http.StatusInternalServerError,
	fault.Forbidden:     http.StatusForbidden,
}

// statusClientClosed records a request whose client disconnected before
// the answer (nginx's 499).
const statusClientClosed = 499

// classify maps any error to its HTTP status and the client-visible text.
// It is the only place that decides a status from an error. ok is false for
// internal errors, whose text must never reach the client.
func classify(err error) (status int, msg string, ok bool) {
	if f, isFault := fault.As(err); isFault {
		if st, known := kindStatus[f.Kind]; known {
			// The last net under maskedRepr: a text quoting "password=..."
			// or a URL's credentials is masked whatever built it.
			return st, secret.String(f.Msg), true
		}
		return http.StatusInternalServerError, "", false
	}
	var locked *store.LockedError
	if errors.As(err, &locked) {
		return http.StatusConflict, fault.NodeLocked(locked.Node, locked.Holder).Msg, true
	}
	var dup *store.DuplicateError
	if errors.As(err, &dup) {
		return http.StatusConflict, duplicateText(dup), true
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound, "Resource could not be found.", true
	case errors.Is(err, store.ErrStale):
		return http.StatusConflict, "The resource was changed by another request, please retry.", true
	}
	return http.StatusInternalServerError, "", false
}

// duplicateText words a unique-constraint violation as Ironic does.
func duplicateText(d *store.DuplicateError) string {
	switch d.Field {
	case "address":
		return "A port with MAC address " + d.Value + " already exists."
	case "name":
		return "A node with name " + d.Value + " already exists."
	case "instance_uuid":
		return "Instance " + d.Value + " is already associated with a node."
	case "hostname":
		return "Conductor " + d.Value + " already registered."
	}
	return "A resource with " + d.Field + " " + d.Value + " already exists."
}

// writeError answers err with Ironic's error body. Internal errors are
// logged with the request id and answered with a generic text.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, reqID string, err error) {
	status, msg, ok := classify(err)
	if f, isFault := fault.As(err); isFault && f.Routing && ok {
		writeRaw(w, status, routingErrorBody(status, msg))
		return
	}
	if !ok && errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		// The client left: nobody reads the answer, and it is no server
		// error (a 5xx alert must not fire on client timeouts).
		s.log.Info("client disconnected", "request_id", reqID, "method", r.Method, "path", r.URL.Path)
		w.WriteHeader(statusClientClosed)
		return
	}
	if !ok {
		level := slog.LevelError
		if errors.Is(err, context.Canceled) {
			level = slog.LevelWarn
		}
		s.log.Log(r.Context(), level, "internal error", "request_id", reqID,
			"method", r.Method, "path", r.URL.Path, "err", err)
		msg = "An internal server error occurred; see the server log for request " + reqID + "."
	}
	writeRaw(w, status, errorBody(status, msg))
}

// errorBody builds {"error_message": "<JSON text>"}: the value is itself a
// JSON document, encoded as a string, exactly as Ironic nests it.
func errorBody(status int, msg string) []byte {
	code := "Client"
	if status >= 500 {
		code = "Server"
	}
	inner := jw{}
	inner.rootObj()
	inner.key("faultcode")
	inner.str(code)
	inner.key("faultstring")
	inner.str(msg)
	inner.key("debuginfo")
	inner.null()
	inner.endObj()
	outer := jw{b: make([]byte, 0, 2*len(inner.b)+24)}
	outer.rootObj()
	outer.key("error_message")
	outer.str(string(inner.bytes()))
	outer.endObj()
	return outer.bytes()
}

// routingErrorBody is webob's error document, nested the same way:
// {"error_message": "{\"code\": 406, \"title\": \"Not Acceptable\", \"description\": \"...\"}"}.
func routingErrorBody(status int, msg string) []byte {
	inner := jw{}
	inner.rootObj()
	inner.key("code")
	inner.integer(int64(status))
	inner.key("title")
	inner.str(http.StatusText(status))
	inner.key("description")
	inner.str(msg)
	inner.endObj()
	outer := jw{b: make([]byte, 0, 2*len(inner.b)+24)}
	outer.rootObj()
	outer.key("error_message")
	outer.str(string(inner.bytes()))
	outer.endObj()
	return outer.bytes()
}

// writeRaw writes a JSON body with its status.
func writeRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// Errors the router itself raises.
func errNotFound() error { return fault.ResourceNotFound() }

func errMethod(method string) error {
	return fault.New(fault.NotAllowed, "The method %s is not allowed for this resource.", method)
}

// notAcceptable is Ironic's bare 406.
func notAcceptable() error { return fault.NotAcceptableVersion() }

// minVersionRequired is Ironic's 406 naming the version a filter needs.
func minVersionRequired(minor int) error {
	return fault.New(fault.NotAcceptable, "Request not acceptable. The minimal required API version should be 1.%d", minor)
}

// invalid is a 400 with a formatted text.
func invalid(format string, args ...any) error { return fault.New(fault.Invalid, format, args...) }

// WriteError answers with Ironic's error body, for the guards in front of
// the API (Host check, authentication).
func WriteError(w http.ResponseWriter, status int, msg string) {
	writeRaw(w, status, errorBody(status, msg))
}
