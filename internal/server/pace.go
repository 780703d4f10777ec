package server

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/anvil-metal/anvil/internal/api"
)

// A request body must keep arriving: after a grace it must have come at a
// minimum rate, or its request is cut (answered 408 and its connection
// closed) long before the server's ReadTimeout would. The deadline is the
// connection's read deadline, moved forward as bytes come, so it also cuts
// a body nobody reads (net/http reads what a handler left, after a 401
// say, before it reuses the connection). Until the body is done the
// connection cap sees its progress and may evict it when it falls behind
// (connCap.rank).

// errBodyTooSlow is the 408's text.
const errBodyTooSlow = "The request body arrived too slowly; send it at once and retry."

// pace serves h with request bodies paced by l's BodyGrace and
// MinBodyRate; a connection cap, if any, is told which connection reads
// which body.
func pace(h http.Handler, l Limits, capped *connCap) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		ctl := http.NewResponseController(w)
		now := time.Now()
		// Bodies started together are not all cut together: a grace of
		// up to half more, at random, spreads the work of cutting them.
		grace := l.BodyGrace + rand.N(l.BodyGrace/2+1)
		b := &pacedBody{ReadCloser: r.Body, ctl: ctl, start: now, grace: grace, rate: l.MinBodyRate,
			limit: now.Add(l.ReadTimeout)}
		_ = ctl.SetReadDeadline(b.deadline())
		c, _ := r.Context().Value(connKey{}).(net.Conn)
		if capped != nil && c != nil {
			capped.reading(c, b)
			defer capped.reading(c, nil)
		}
		r2 := *r
		r2.Body = b
		h.ServeHTTP(&slowAnswer{ResponseWriter: w, body: b}, &r2)
	})
}

// pacedBody is a request body whose connection read deadline is BodyGrace
// after the request began plus a second per rate bytes read, at most the
// request's whole-read limit.
type pacedBody struct {
	io.ReadCloser
	ctl   *http.ResponseController
	start time.Time
	grace time.Duration
	rate  int64
	limit time.Time

	mu   sync.Mutex
	n    int64 // bytes read
	slow bool  // a read failed at the pacing deadline
}

// deadline is when the next byte must have come.
func (b *pacedBody) deadline() time.Time {
	b.mu.Lock()
	n := b.n
	b.mu.Unlock()
	secs := float64(n) / float64(b.rate)
	if secs >= b.limit.Sub(b.start).Seconds() {
		return b.limit
	}
	if d := b.start.Add(b.grace + time.Duration(secs*float64(time.Second))); d.Before(b.limit) {
		return d
	}
	return b.limit
}

// behind reports whether the body, read for at least minAge, has come
// slower than the minimum rate (grace not counted): the connection cap's
// test of a slot wasted.
func (b *pacedBody) behind(now time.Time, minAge time.Duration) bool {
	age := now.Sub(b.start)
	if age < minAge {
		return false
	}
	b.mu.Lock()
	n := b.n
	b.mu.Unlock()
	return float64(n) < float64(b.rate)*age.Seconds()
}

func (b *pacedBody) Read(p []byte) (int, error) {
	// Set before the read: once the body ends net/http lifts the deadline
	// for its background read, which must not be cut afterwards.
	_ = b.ctl.SetReadDeadline(b.deadline())
	n, err := b.ReadCloser.Read(p)
	b.mu.Lock()
	b.n += int64(n)
	var ne net.Error
	if err != nil && errors.As(err, &ne) && ne.Timeout() {
		b.slow = true
	}
	b.mu.Unlock()
	return n, err
}

func (b *pacedBody) cut() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.slow
}

// slowAnswer replaces the handler's answer with a 408 once the body was
// cut for coming too slowly (the handler saw only a read error).
type slowAnswer struct {
	http.ResponseWriter
	body     *pacedBody
	decided  bool
	replaced bool
}

func (s *slowAnswer) decide() {
	if s.decided {
		return
	}
	s.decided = true
	if s.body.cut() {
		s.replaced = true
		s.ResponseWriter.Header().Del("Content-Length")
		s.ResponseWriter.Header().Set("Connection", "close")
		api.WriteError(s.ResponseWriter, http.StatusRequestTimeout, errBodyTooSlow)
	}
}

func (s *slowAnswer) WriteHeader(status int) {
	s.decide()
	if !s.replaced {
		s.ResponseWriter.WriteHeader(status)
	}
}

func (s *slowAnswer) Write(p []byte) (int, error) {
	s.decide()
	if s.replaced {
		return len(p), nil
	}
	return s.ResponseWriter.Write(p)
}

// Flush forwards to the connection.
func (s *slowAnswer) Flush() { _ = http.NewResponseController(s.ResponseWriter).Flush() }

// Unwrap lets http.ResponseController reach the connection.
func (s *slowAnswer) Unwrap() http.ResponseWriter { return s.ResponseWriter }
