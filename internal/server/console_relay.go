package server

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"strings"
	"sync/atomic"

	"github.com/anvil-metal/anvil/internal/api"
	"github.com/anvil-metal/anvil/internal/console"
	"github.com/anvil-metal/anvil/internal/fault"
	"github.com/anvil-metal/anvil/internal/handoff"
)

// ownedConsoles answers API processes' requests for the consoles this
// process holds (handed-over calls): a ticket for its relay endpoint while
// a console is held here, and recorded logs.
type ownedConsoles struct {
	svc     *console.Service
	tickets *console.Tickets
	base    *atomic.Pointer[string] // the relay's base URL, once the listener is bound
}

func (o ownedConsoles) Access(_ context.Context, node string) (handoff.ConsoleAccess, error) {
	b := o.base.Load()
	if b == nil || !o.svc.Held(node) {
		return handoff.ConsoleAccess{}, fault.New(fault.Unavailable, "The console of node %s is not connected on the conductor that owns it yet; retry.", node)
	}
	return handoff.ConsoleAccess{URL: *b + api.ConsoleRelayPrefix + node + "/ws", Ticket: o.tickets.Mint(node)}, nil
}

func (o ownedConsoles) Log(node string, tail int) ([]byte, bool) { return o.svc.Log(node, tail) }

// checkAdvertise refuses an --advertise-url that is not http(s)://host[:port].
func checkAdvertise(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return errors.New("--advertise-url: want http://HOST[:PORT] or https://HOST[:PORT] (no credentials), where other anvil processes reach this one")
	}
	return nil
}

// advertised is the ws:// or wss:// base URL other processes reach this
// listener at: --advertise-url when given, else the bound address (an
// unspecified one, 0.0.0.0 or ::, replaced by the host name).
func advertised(advertise string, addr net.Addr, tlsOn bool) string {
	if advertise != "" {
		u, err := url.Parse(advertise)
		if err == nil {
			switch u.Scheme {
			case "https":
				u.Scheme = "wss"
			case "http":
				u.Scheme = "ws"
			}
			u.Path, u.RawQuery, u.Fragment = "", "", ""
			return strings.TrimSuffix(u.String(), "/")
		}
	}
	scheme := "ws://"
	if tlsOn {
		scheme = "wss://"
	}
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return scheme + addr.String()
	}
	if name, ok := machineName(host); ok {
		host = name
	}
	return scheme + net.JoinHostPort(host, port)
}

// machineName is the name other processes reach a listener bound to host
// by when host names no address (empty, 0.0.0.0 or ::): the machine's host
// name. ok is false for a specific host.
func machineName(host string) (string, bool) {
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return "", false
	}
	name, err := os.Hostname()
	return name, err == nil && name != ""
}
