package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/anvil-metal/anvil/internal/console"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/model"
)

// Consoles across processes. An API-only process (serve --role api) holds
// no console: a viewer attaching to it is relayed to the conductor that
// owns the node, which holds the BMC session. The API process checks the
// viewer as for a local console (authentication, baremetal:node:get_console
// on the node, console enabled), asks the owner through the database for a
// one-time ticket (Config.ConsoleRelay), dials the owner's relay endpoint
// with it and copies messages both ways: the viewer sees the owner's
// status and end messages, and its close reason.
//
// The relay endpoint, ConsoleRelayPrefix+"{node uuid}/ws" on a conductor's
// listener, is outside the API's route table: its only credential is the
// ticket (header ConsoleTicketHeader), which only a process with access to
// the database can obtain, good for one attachment to one node within
// console.TicketTTL.
const (
	ConsoleRelayPrefix  = "/internal/console/"
	ConsoleTicketHeader = "X-Anvil-Console-Ticket"
)

// consoleRelayDial bounds the dial to the owner's relay endpoint.
const consoleRelayDial = 10 * time.Second

// ConsoleRelay is a conductor's relay endpoint: viewers of the consoles svc
// holds, admitted by tickets.
func ConsoleRelay(svc *console.Service, tickets *console.Tickets) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, ConsoleRelayPrefix)
		node, ok2 := strings.CutSuffix(rest, "/ws")
		if !ok || !ok2 || node == "" || strings.Contains(node, "/") || r.Method != http.MethodGet {
			WriteError(w, http.StatusNotFound, "The resource could not be found.")
			return
		}
		if !tickets.Redeem(r.Header.Get(ConsoleTicketHeader), node) {
			WriteError(w, http.StatusUnauthorized, "A valid console ticket is required.")
			return
		}
		replay, err := (&call{r: r, query: r.URL.Query()}).byteParam("replay")
		if err != nil {
			WriteError(w, http.StatusBadRequest, err.Error())
			return
		}
		v, err := svc.Attach(node, replay)
		if err != nil {
			WriteError(w, http.StatusServiceUnavailable, "The console of node "+node+" is not connected on this conductor; retry.")
			return
		}
		defer v.Close()
		ctl := http.NewResponseController(w)
		_ = ctl.SetReadDeadline(time.Time{})
		_ = ctl.SetWriteDeadline(time.Time{})
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		serveViewer(r.Context(), conn, v, nil) // the API process watches the credential
	})
}

// relayConsole serves a viewer of n's console held by another process.
func (hs managementAPI) relayConsole(rc *call, n *model.Node, replay int) error {
	s := hs.s
	target, ticket, err := s.cfg.ConsoleRelay(rc.r.Context(), n)
	if err != nil {
		if _, ok := fault.As(err); ok {
			return err
		}
		s.log.Warn("console relay: no ticket from the owner", "node", n.UUID, "err", err)
		return fault.New(fault.Unavailable, "The conductor that owns node %s did not answer for its console; retry.", n.UUID)
	}
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") {
		s.log.Warn("console relay: bad relay URL", "node", n.UUID, "url", target)
		return fault.New(fault.Unavailable, "The conductor that owns node %s answered an unusable console address; retry.", n.UUID)
	}
	if replay > 0 {
		q := u.Query()
		q.Set("replay", strconv.Itoa(replay))
		u.RawQuery = q.Encode()
	}
	dctx, cancel := context.WithTimeout(rc.r.Context(), consoleRelayDial)
	up, resp, err := websocket.Dial(dctx, u.String(), &websocket.DialOptions{HTTPHeader: http.Header{ConsoleTicketHeader: {ticket}}})
	cancel()
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		s.log.Warn("console relay: dial failed", "node", n.UUID, "url", u.Redacted(), "status", status, "err", err)
		return fault.New(fault.Unavailable, "The console of node %s could not be reached on the conductor that owns it; retry.", n.UUID)
	}
	defer up.CloseNow()
	up.SetReadLimit(2 << 20)
	hs.acceptViewer(rc, func(conn *websocket.Conn, ended <-chan string) {
		pipeWebSockets(rc.r.Context(), conn, up, ended)
	})
	return nil
}

// pipeWebSockets copies messages between a viewer and the owner's relay
// until either closes, or ended says why the viewer's credential stopped
// holding; the owner's close reason is passed on.
func pipeWebSockets(ctx context.Context, viewer, up *websocket.Conn, ended <-chan string) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case why := <-ended:
			endViewer(ctx, viewer, websocket.StatusPolicyViolation, why)
			_ = up.Close(websocket.StatusNormalClosure, "")
			cancel()
		case <-ctx.Done():
		}
	}()
	go func() { // keystrokes: binary messages only, as serveViewer reads them
		defer cancel()
		for {
			typ, p, err := viewer.Read(ctx)
			if err != nil {
				_ = up.Close(websocket.StatusNormalClosure, "")
				return
			}
			if typ != websocket.MessageBinary {
				continue
			}
			if err := writeWithin(ctx, up, typ, p); err != nil {
				return
			}
		}
	}()
	for {
		typ, p, err := up.Read(ctx)
		if err != nil {
			reason := ""
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				reason = ce.Reason
			}
			_ = viewer.Close(websocket.StatusNormalClosure, closeReason(reason))
			return
		}
		if writeWithin(ctx, viewer, typ, p) != nil {
			return
		}
	}
}

// writeWithin writes one message, bounded by consoleWriteTimeout.
func writeWithin(ctx context.Context, c *websocket.Conn, typ websocket.MessageType, p []byte) error {
	wctx, cancel := context.WithTimeout(ctx, consoleWriteTimeout)
	defer cancel()
	return c.Write(wctx, typ, p)
}
