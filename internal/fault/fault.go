// Package fault is Anvil's error vocabulary shared by the conductor and the API:
// each Kind maps to exactly one HTTP status (in internal/api), and Msg is the
// client-facing text, worded as Ironic words it. Internal errors never become a
// fault: they stay plain errors and the API answers 500 without echoing them.
package fault

import (
	"errors"
	"fmt"
)

// Kind classifies a client-visible failure.
type Kind int

// Kinds, with the HTTP status the API gives them.
const (
	Invalid       Kind = iota + 1 // 400: bad request, invalid state transition
	Unauthorized                  // 401: a missing or wrong agent token
	NotFound                      // 404
	NotAllowed                    // 405
	NotAcceptable                 // 406: microversion too low/high
	Conflict                      // 409: locked, duplicate, wrong state for delete
	TooLarge                      // 413
	Unsupported                   // 415: wrong content type
	Unavailable                   // 503: no free worker, limit reached
	// DriverFailed is 500 with its text shown: a driver operation failed on
	// the hardware (Ironic's DriverOperationError, e.g. RedfishError).
	DriverFailed
	Forbidden // 403: a policy rule refused the principal
)

// Error is a client-visible failure with Ironic's wording.
type Error struct {
	Kind Kind
	Msg  string
	Err  error // optional cause, never shown to clients
	// Routing marks errors Ironic raises before its controllers run (bad
	// microversion, malformed identifier in the path): Ironic answers those
	// with webob's {"code", "title", "description"} document instead of
	// {"faultcode", "faultstring", "debuginfo"}.
	Routing bool
}

// AsRouting marks e as a routing error and returns it.
func (e *Error) AsRouting() *Error {
	e.Routing = true
	return e
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// New returns a fault of kind k with a formatted message.
func New(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...)}
}

// Wrap returns a fault of kind k with message msg and cause err.
func Wrap(k Kind, err error, msg string) *Error {
	return &Error{Kind: k, Msg: msg, Err: err}
}

// As extracts a *Error from err's chain.
func As(err error) (*Error, bool) {
	var f *Error
	ok := errors.As(err, &f)
	return f, ok
}

// KindOf returns err's Kind, or 0 if err carries no fault.
func KindOf(err error) Kind {
	if f, ok := As(err); ok {
		return f.Kind
	}
	return 0
}

// Ironic's standard messages.

// Missing is Ironic's NotFound text for a resource ("Port", "Deploy
// template", ...) and the ident the client gave, as a NotFound fault.
func Missing(resource, ident string) *Error {
	return New(NotFound, "%s", MissingText(resource, ident))
}

// NotFoundFor is Missing for resource as a function of the ident, for
// the readers that take one.
func NotFoundFor(resource string) func(ident string) error {
	return func(ident string) error { return Missing(resource, ident) }
}

// MissingText is Ironic's "<resource> <ident> could not be found.", for
// the places that answer it with another status (a body naming a node
// that does not exist is 400) or print it (the CLI).
func MissingText(resource, ident string) string {
	return resource + " " + ident + " could not be found."
}

// ResourceNotFound is the text of a 404 that names nothing (Ironic's
// generic NotFound, and its answer to a lookup that finds no node).
func ResourceNotFound() *Error { return New(NotFound, "Resource could not be found.") }

// NodeNotFound is Ironic's NodeNotFound text.
func NodeNotFound(ident string) *Error { return Missing("Node", ident) }

// NodeLocked is Ironic's NodeLocked text.
func NodeLocked(node, host string) *Error {
	return New(Conflict, "Node %s is locked by host %s, please retry after the current operation is completed.", node, host)
}

// InvalidState is Ironic's InvalidStateRequested text.
func InvalidState(action, node, state string) *Error {
	return New(Invalid, "The requested action \"%s\" can not be performed on node \"%s\" while it is in state \"%s\".", action, node, state)
}

// NotAcceptableVersion is Ironic's NotAcceptable text.
func NotAcceptableVersion() *Error { return New(NotAcceptable, "Request not acceptable.") }
