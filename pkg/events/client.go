package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/anvil-metal/anvil/internal/clock"
)

// StreamPath is the stream's path under the API root.
const StreamPath = "/v1/events/stream"

// Client follows an Anvil watch stream.
type Client struct {
	// BaseURL is the API root, e.g. http://127.0.0.1:6385 (a trailing /v1
	// is accepted).
	BaseURL string
	// HTTP sends the requests; nil means a client without timeouts (a
	// stream is long-lived; the server's heartbeats keep it alive).
	HTTP *http.Client
	// Header is added to every request (authentication, ...).
	Header http.Header
	// MinBackoff and MaxBackoff bound the wait between reconnections
	// (100 ms and 5 s); it doubles after each failed attempt.
	MinBackoff, MaxBackoff time.Duration
	// GiveUpAfter, when positive, bounds the reconnecting: a connection
	// lost and not re-established within it ends the stream with a
	// TypeError event saying "lost connection to <BaseURL>". Zero means
	// reconnect until the context ends.
	GiveUpAfter time.Duration
}

// Subscribe follows the stream at baseURL with a default Client.
func Subscribe(ctx context.Context, baseURL string, f Filter) (<-chan Event, error) {
	return (&Client{BaseURL: baseURL}).Subscribe(ctx, f)
}

// StatusError is a stream request the server refused.
type StatusError struct {
	Status  int
	Message string // the API's faultstring, or the body
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("event stream: %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// Subscribe opens the stream and returns its events. The first connection's
// failure is returned; after that the client reconnects with Last-Event-ID
// whenever the connection ends, so no event is lost while the server still
// holds it (otherwise a TypeReset event arrives: re-read the nodes; with
// f.Snapshot, snapshots follow it). Overflow events and heartbeats are
// handled inside. The channel is closed when ctx ends, after a TypeError
// event if the server refuses a reconnection (4xx).
func (c *Client) Subscribe(ctx context.Context, f Filter) (<-chan Event, error) {
	resp, err := c.connect(ctx, f, "")
	if err != nil {
		return nil, err
	}
	ch := make(chan Event, 16)
	go c.follow(ctx, f, resp, ch)
	return ch, nil
}

func (c *Client) follow(ctx context.Context, f Filter, resp *http.Response, ch chan<- Event) {
	defer close(ch)
	cursor := ""
	backoff := c.minBackoff()
	for {
		// Whatever ended the connection (EOF, overflow, a network error),
		// the answer is to reconnect from the cursor.
		delivered, _ := c.read(ctx, resp.Body, &cursor, ch)
		resp.Body.Close()
		if ctx.Err() != nil {
			return
		}
		if delivered {
			backoff = c.minBackoff()
		}
		lost := time.Now()
		for {
			var err error
			if clock.Sleep(ctx, backoff) != nil {
				return
			}
			backoff = min(2*backoff, c.maxBackoff())
			resp, err = c.connect(ctx, f, cursor)
			if err == nil {
				break
			}
			var se *StatusError
			if errors.As(err, &se) && se.Status >= 400 && se.Status < 500 &&
				se.Status != http.StatusRequestTimeout && se.Status != http.StatusTooManyRequests {
				select {
				case ch <- Event{Type: TypeError, Error: err.Error()}:
				case <-ctx.Done():
				}
				return
			}
			if ctx.Err() != nil {
				return
			}
			if c.GiveUpAfter > 0 && time.Since(lost) >= c.GiveUpAfter {
				select {
				case ch <- Event{Type: TypeError, Error: fmt.Sprintf("lost connection to %s: no answer for %s: %v",
					strings.TrimRight(c.BaseURL, "/"), c.GiveUpAfter, err)}:
				case <-ctx.Done():
				}
				return
			}
		}
	}
}

// read delivers the events of one connection and keeps cursor at the last
// ID seen. It reports whether any event was delivered.
func (c *Client) read(ctx context.Context, body io.Reader, cursor *string, ch chan<- Event) (bool, error) {
	r := newSSEReader(body)
	delivered := false
	for {
		m, err := r.next()
		if err != nil {
			return delivered, err
		}
		if m.hasID {
			*cursor = m.id
		}
		if len(m.data) == 0 {
			continue // a heartbeat carrying the position
		}
		var e Event
		if err := json.Unmarshal(m.data, &e); err != nil {
			return delivered, fmt.Errorf("event stream: bad event %q: %w", m.data, err)
		}
		if e.Type == TypeOverflow {
			return delivered, nil // reconnect from the cursor
		}
		select {
		case ch <- e:
			delivered = true
		case <-ctx.Done():
			return delivered, ctx.Err()
		}
	}
}

// connect opens the stream after cursor ("" for a new stream).
func (c *Client) connect(ctx context.Context, f Filter, cursor string) (*http.Response, error) {
	base := strings.TrimSuffix(strings.TrimRight(c.BaseURL, "/"), "/v1")
	u := base + StreamPath
	if q := f.Values().Encode(); q != "" {
		u += "?" + q
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range c.Header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", ContentType)
	if cursor != "" {
		req.Header.Set("Last-Event-ID", cursor)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("event stream: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, &StatusError{Status: resp.StatusCode, Message: faultString(body)}
	}
	return resp, nil
}

// faultString extracts the message of an Ironic error body, or returns the
// body as text.
func faultString(body []byte) string {
	var outer struct {
		ErrorMessage string `json:"error_message"`
	}
	if json.Unmarshal(body, &outer) == nil && outer.ErrorMessage != "" {
		var inner struct {
			FaultString string `json:"faultstring"`
		}
		if json.Unmarshal([]byte(outer.ErrorMessage), &inner) == nil && inner.FaultString != "" {
			return inner.FaultString
		}
		return outer.ErrorMessage
	}
	return strings.TrimSpace(string(body))
}

func (c *Client) minBackoff() time.Duration {
	if c.MinBackoff > 0 {
		return c.MinBackoff
	}
	return 100 * time.Millisecond
}

func (c *Client) maxBackoff() time.Duration {
	if c.MaxBackoff > 0 {
		return max(c.MaxBackoff, c.minBackoff())
	}
	return 5 * time.Second
}
