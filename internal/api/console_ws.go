package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/anvil-metal/anvil/internal/auth"
	"github.com/anvil-metal/anvil/internal/console"
	"github.com/anvil-metal/anvil/internal/fault"
)

// Anvil extensions: a node's serial console over WebSocket (the url of
// console_info for the ipmi-sol console interface) and its recorded output.
//
// GET /v1/nodes/{ident}/console/ws[?replay=BYTES] upgrades to a WebSocket:
// binary messages from the server are console output, binary messages
// from the client are keystrokes; text messages from the server are JSON:
// {"type": "status", "read_only": bool} when the viewer starts and when it
// is given the keyboard, {"type": "end", "reason": "..."} before the
// server closes. The first viewer is read-write, the others read-only.
//
// GET /v1/nodes/{ident}/console/log[?tail=BYTES] answers the recorded
// output (text/plain, at most 1 MiB).
//
// Both read the console service of this process: the conductor that owns
// the node. A process serving the API only relays the WebSocket to the
// owner (console_relay.go) and asks it for the log (internal/handoff).
func (hs managementAPI) consoleWSRoutes() {
	s := hs.s
	s.handle(endpoint{"GET": {hs.consoleWS, nodeRule("baremetal:node:get_console")}}, "/v1/nodes/{ident}/console/ws")
	s.handle(endpoint{"GET": {hs.consoleLog, nodeRule("baremetal:node:get_console")}}, "/v1/nodes/{ident}/console/log")
}

// consoleWriteTimeout bounds one message to a viewer.
const consoleWriteTimeout = 30 * time.Second

// byteParam reads a non-negative byte count query parameter.
func (rc *call) byteParam(name string) (int, error) {
	raw, ok := rc.param(name)
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 {
		return 0, invalid("Invalid value for %s: %q is not a non-negative integer.", name, raw)
	}
	return min(n, 1<<20), nil
}

func (hs managementAPI) consoleWS(rc *call) error {
	s := hs.s
	if err := rc.checkQuery("replay"); err != nil {
		return err
	}
	replay, err := rc.byteParam("replay")
	if err != nil {
		return err
	}
	n, _, err := (nodeAPI{rc.s}).loadNode(rc)
	if err != nil {
		return err
	}
	if !n.ConsoleEnabled {
		return invalid("Console access is not enabled on node %s", n.UUID)
	}
	if s.cfg.Console == nil && s.cfg.ConsoleRelay != nil {
		return hs.relayConsole(rc, n, replay)
	}
	if s.cfg.Console == nil {
		return fault.New(fault.Unavailable, "The console of node %s is not served by this process (it serves the API only); connect to the conductor that owns the node.", n.UUID)
	}
	v, err := s.cfg.Console.Attach(n.UUID, replay)
	if errors.Is(err, console.ErrNotHeld) {
		return fault.New(fault.Unavailable, "The console of node %s is not connected on this conductor yet (or another conductor owns the node); retry.", n.UUID)
	}
	if err != nil {
		return err
	}
	defer v.Close()
	hs.acceptViewer(rc, func(conn *websocket.Conn, ended <-chan string) {
		serveViewer(rc.r.Context(), conn, v, ended)
	})
	return nil
}

// acceptViewer upgrades the request to the viewer's WebSocket and runs
// serve with it and the channel on which the viewer's credential ends. The
// server's read and write timeouts are for requests: a console lasts as
// long as its viewer.
func (hs managementAPI) acceptViewer(rc *call, serve func(conn *websocket.Conn, ended <-chan string)) {
	ctl := http.NewResponseController(rc.w)
	_ = ctl.SetReadDeadline(time.Time{})
	_ = ctl.SetWriteDeadline(time.Time{})
	conn, err := websocket.Accept(rc.w, rc.r, nil)
	if err != nil {
		return // Accept has answered
	}
	defer conn.CloseNow()
	ended, stop := hs.credentialEnd(rc.r.Context())
	defer stop()
	serve(conn, ended)
}

// Why a viewer's credential ended it.
const (
	// ExpiredReason: its token or dashboard session expired.
	ExpiredReason = "the credentials expired: authenticate again to reconnect"
	// LoggedOutReason: its dashboard session was ended (logged out).
	LoggedOutReason = "the dashboard session ended: log in again to reconnect"
)

// DefaultConsoleRecheck is how often a console viewer's dashboard session
// is re-checked (a logout elsewhere ends the viewer within it).
const DefaultConsoleRecheck = 15 * time.Second

// credentialEnd delivers why the request's credential stopped holding: it
// expired (auth.ExpiryOf), or, for a dashboard session, it was ended
// (auth.StillValid, asked every s.cfg.ConsoleRecheck). Nothing comes for
// credentials that neither expire nor end. stop releases its goroutine.
func (hs managementAPI) credentialEnd(ctx context.Context) (<-chan string, func()) {
	s := hs.s
	exp, expires := auth.ExpiryOf(ctx)
	live, checks := auth.StillValid(ctx)
	if !expires && !checks {
		return nil, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	ended := make(chan string, 1)
	go func() {
		var expired <-chan time.Time
		if expires {
			t := time.NewTimer(time.Until(exp))
			defer t.Stop()
			expired = t.C
		}
		var recheck <-chan time.Time
		if checks {
			t := time.NewTicker(cmp.Or(s.cfg.ConsoleRecheck, DefaultConsoleRecheck))
			defer t.Stop()
			recheck = t.C
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-expired:
				ended <- ExpiredReason
				return
			case <-recheck:
				if !live(ctx) && ctx.Err() == nil {
					ended <- LoggedOutReason
					return
				}
			}
		}
	}()
	return ended, cancel
}

// endViewer tells a viewer why it ends and closes its WebSocket with code.
func endViewer(ctx context.Context, conn *websocket.Conn, code websocket.StatusCode, reason string) {
	b, _ := json.Marshal(map[string]any{"type": "end", "reason": reason})
	_ = writeWithin(ctx, conn, websocket.MessageText, b)
	_ = conn.Close(code, closeReason(reason))
}

// serveViewer relays between a WebSocket and a console viewer until
// either ends, or ended says why the viewer's credential stopped holding.
func serveViewer(ctx context.Context, conn *websocket.Conn, v *console.Viewer, ended <-chan string) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	send := func(typ websocket.MessageType, p []byte) error {
		wctx, wcancel := context.WithTimeout(ctx, consoleWriteTimeout)
		defer wcancel()
		return conn.Write(wctx, typ, p)
	}
	status := func(rw bool) error {
		b, _ := json.Marshal(map[string]any{"type": "status", "read_only": !rw})
		return send(websocket.MessageText, b)
	}
	rw := v.ReadWrite()
	if status(rw) != nil {
		return
	}
	typed := make(chan struct{}, 1) // a keystroke was refused: re-check the role
	go func() {
		defer cancel()
		for {
			typ, p, err := conn.Read(ctx)
			if err != nil {
				return
			}
			if typ != websocket.MessageBinary || len(p) == 0 {
				continue
			}
			if _, err := v.Write(p); err != nil && !errors.Is(err, console.ErrReadOnly) && !errors.Is(err, console.ErrOffline) {
				return
			}
			select {
			case typed <- struct{}{}:
			default:
			}
		}
	}()
	for {
		select {
		case p := <-v.Output():
			if send(websocket.MessageBinary, p) != nil {
				return
			}
		case <-typed:
		case <-v.Promoted():
		case <-v.Done():
			endViewer(ctx, conn, websocket.StatusNormalClosure, v.Reason())
			return
		case why := <-ended:
			endViewer(ctx, conn, websocket.StatusPolicyViolation, why)
			return
		case <-ctx.Done():
			_ = conn.Close(websocket.StatusNormalClosure, "")
			return
		}
		if now := v.ReadWrite(); now != rw {
			rw = now
			if status(rw) != nil {
				return
			}
		}
	}
}

// closeReason fits a close frame (123 bytes at most).
func closeReason(s string) string {
	if len(s) <= 123 {
		return s
	}
	return strings.ToValidUTF8(s[:123], "")
}

// GET /v1/nodes/{ident}/console/log: the recorded console output.
func (hs managementAPI) consoleLog(rc *call) error {
	s := hs.s
	if err := rc.checkQuery("tail"); err != nil {
		return err
	}
	tail, err := rc.byteParam("tail")
	if err != nil {
		return err
	}
	n, _, err := (nodeAPI{rc.s}).loadNode(rc)
	if err != nil {
		return err
	}
	var (
		b  []byte
		ok bool
	)
	switch {
	case s.cfg.Console != nil:
		b, ok = s.cfg.Console.Log(n.UUID, tail)
	case s.cfg.ConsoleLogRelay != nil:
		if b, ok, err = s.cfg.ConsoleLogRelay(rc.r.Context(), n, tail); err != nil {
			if _, isFault := fault.As(err); isFault {
				return err
			}
			s.log.Warn("console log: the owner did not answer", "node", n.UUID, "err", err)
			return fault.New(fault.Unavailable, "The conductor that owns node %s did not answer for its console log; retry.", n.UUID)
		}
	default:
		return fault.New(fault.Unavailable, "The console of node %s is not recorded by this process (it serves the API only); ask the conductor that owns the node.", n.UUID)
	}
	if !ok {
		return fault.New(fault.NotFound, "No console output has been recorded for node %s.", n.UUID)
	}
	rc.w.Header().Set("Content-Type", "text/plain")
	rc.w.WriteHeader(http.StatusOK)
	_, _ = rc.w.Write(b)
	return nil
}
