package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/anvil-metal/anvil/internal/clock"
	"github.com/anvil-metal/anvil/internal/ipa"
)

// The lookup's retry delays: doubling from lookupBackoffMin to at most
// lookupBackoffMax (or twice a fixed heartbeat interval), each drawn in
// [d/2, d] so that a rack of machines booted together spreads out.
const (
	lookupBackoffMin = 100 * time.Millisecond
	lookupBackoffMax = 10 * time.Second
)

// LookupError is a failed lookup, said in one line for a server's console:
// which MACs were looked up on which API, and why it failed.
type LookupError struct {
	APIURL string   // credentials removed
	MACs   []string // the addresses looked up by
	Status int      // the API's HTTP status, 0 when it did not answer
	Reason string   // one line
	Err    error
}

func (e *LookupError) Error() string {
	return fmt.Sprintf("lookup of %s on %s failed: %s", macList(e.MACs), e.APIURL, e.Reason)
}

func (e *LookupError) Unwrap() error { return e.Err }

func macList(macs []string) string {
	if len(macs) == 0 {
		return "no MAC"
	}
	return strings.Join(macs, ",")
}

// lookupUntilFound looks the node up until it is found or ctx ends; each
// failure is logged at warning level (the default level shows it) with its
// reason, the MACs and the API URL, then retried after a jittered,
// bounded back-off.
func (a *Agent) lookupUntilFound(ctx context.Context) error {
	maxDelay := lookupBackoffMax
	if a.cfg.HeartbeatInterval > 0 {
		maxDelay = min(maxDelay, 2*a.cfg.HeartbeatInterval)
	}
	b := backoff{next: lookupBackoffMin, max: maxDelay}
	for attempt := 1; ; attempt++ {
		err := a.LookupOnce(ctx)
		if err == nil {
			if attempt > 1 {
				a.log.Info("lookup succeeded", "attempts", attempt)
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		d := b.delay(rand.Float64())
		var le *LookupError
		if errors.As(err, &le) {
			a.log.Warn("lookup failed; retrying", "reason", le.Reason, "macs", macList(le.MACs),
				"api_url", le.APIURL, "attempt", attempt, "retry_in", d.Round(time.Millisecond))
		} else {
			a.log.Warn("lookup failed; retrying", "err", err, "attempt", attempt, "retry_in", d.Round(time.Millisecond))
		}
		if clock.Sleep(ctx, d) != nil {
			return ctx.Err()
		}
	}
}

// backoff hands out doubling delays up to max, each jittered into
// [d/2, d] by a draw r in [0, 1).
type backoff struct{ next, max time.Duration }

func (b *backoff) delay(r float64) time.Duration {
	d := min(b.next, b.max)
	b.next = min(2*d, b.max)
	return d/2 + time.Duration(r*float64(d/2))
}

// LookupOnce looks the node up once by the agent's MACs (GET /v1/lookup)
// and keeps its UUID and token; a failure is a *LookupError. `anvil agent
// --once` is this alone.
func (a *Agent) LookupOnce(ctx context.Context) error {
	fail := func(status int, err error, reason string) error {
		return &LookupError{APIURL: redactURL(a.cfg.APIURL), MACs: a.cfg.MACs, Status: status,
			Reason: oneLine(reason), Err: err}
	}
	if len(a.cfg.MACs) == 0 {
		return fail(0, nil, "no MAC address to look up by: no NIC in /sys/class/net (give --mac)")
	}
	err := a.lookup(ctx)
	if err == nil {
		return nil
	}
	var he *httpError
	switch {
	case errors.As(err, &he) && he.status == http.StatusNotFound:
		return fail(he.status, err, "HTTP 404: no node has a port with these MACs, or the node is not "+
			"waiting for an agent (it must be deploying, cleaning, inspecting, rescuing or servicing): "+ironicFault(he.body))
	case errors.As(err, &he) && (he.status == http.StatusUnauthorized || he.status == http.StatusForbidden):
		return fail(he.status, err, fmt.Sprintf("HTTP %d: the API refused the lookup (is the URL Ironic's "+
			"lookup endpoint, reachable without credentials?): %s", he.status, ironicFault(he.body)))
	case errors.As(err, &he):
		return fail(he.status, err, fmt.Sprintf("HTTP %d: %s", he.status, ironicFault(he.body)))
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fail(0, err, "API unreachable: "+ue.Err.Error())
	}
	return fail(0, err, err.Error())
}

// MACs are the addresses the agent looks its node up by.
func (a *Agent) MACs() []string { return append([]string(nil), a.cfg.MACs...) }

// NodeUUID is the node the last lookup found ("" before one).
func (a *Agent) NodeUUID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.nodeUUID
}

// ironicFault is the faultstring of an Ironic error body
// ({"error_message": "{\"faultstring\": ...}"}), else the body itself.
func ironicFault(body string) string {
	var outer struct {
		ErrorMessage json.RawMessage `json:"error_message"`
	}
	if json.Unmarshal([]byte(body), &outer) == nil && len(outer.ErrorMessage) > 0 {
		var inner struct {
			Faultstring string `json:"faultstring"`
		}
		var s string
		if json.Unmarshal(outer.ErrorMessage, &s) == nil {
			if json.Unmarshal([]byte(s), &inner) == nil && inner.Faultstring != "" {
				return inner.Faultstring
			}
			return s
		}
		if json.Unmarshal(outer.ErrorMessage, &inner) == nil && inner.Faultstring != "" {
			return inner.Faultstring
		}
	}
	if body == "" {
		return "(empty answer)"
	}
	return body
}

// oneLine collapses whitespace (a console line) and bounds the length.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}

// redactURL is u without credentials (user:password@).
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.User == nil {
		return u
	}
	p.User = nil
	return p.String()
}

func (a *Agent) lookup(ctx context.Context) error {
	q := url.Values{"addresses": {strings.Join(a.cfg.MACs, ",")}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(a.cfg.APIURL, "/")+"/v1/lookup?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-OpenStack-Ironic-API-Version", "1.68")
	var lr ipa.LookupResponse
	if err := a.do(req, &lr); err != nil {
		return err
	}
	token := lr.Config.AgentToken
	if token == "" || token == ipa.MaskedToken {
		// IPA: a masked token is the one the boot media carries, if any
		if a.cfg.AgentToken == "" {
			return errors.New("lookup found the node but its token was already handed out (and no ipa-agent-token was given)")
		}
		token = a.cfg.AgentToken
	}
	a.mu.Lock()
	a.nodeUUID, a.token = lr.Node.UUID, token
	a.timeout = time.Duration(lr.Config.HeartbeatTimeout * float64(time.Second))
	a.md5Enabled = lr.Config.AgentMD5ChecksumEnable
	a.mu.Unlock()
	// A new token means a new boot to the conductor: like a freshly booted
	// IPA, the agent has run no command yet (Ironic 21.4 reads an empty
	// history, or only get_<kind>_steps, as "freshly booted").
	a.cmd.forgetFinished()
	a.log.Info("node found", "node", lr.Node.UUID)
	a.mu.Lock()
	a.inspectPending = lr.Node.ProvisionState == inspectWait
	a.mu.Unlock()
	return nil
}
