package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/anvil-metal/anvil/internal/api"
	"github.com/anvil-metal/anvil/pkg/events"
)

// Limits bound what one client can hold of the API listener; zero values
// take the defaults below.
type Limits struct {
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included: a client
	// that stalls mid-body is cut.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing a response. Long answers (the event
	// stream, boot file downloads) instead get it per write: they last as
	// long as the reader keeps reading.
	WriteTimeout time.Duration
	// IdleTimeout reaps keep-alive connections with no request.
	IdleTimeout time.Duration
	// MaxConnections caps open connections. At the cap, a connection that
	// holds its slot without using it is closed for a new client: first
	// one that has not sent its headers within a second or whose request
	// body is behind MinBodyRate, then the oldest idle keep-alive one; if
	// every connection is busy, new clients wait in the listen backlog.
	MaxConnections int
	// MaxConnectionsPerAddress caps the open connections of one client
	// address: one more is answered 429 and closed at once, so that one
	// host cannot take the whole of MaxConnections.
	MaxConnectionsPerAddress int
	// BodyGrace and MinBodyRate pace request bodies: a body must have
	// arrived at MinBodyRate bytes a second after its first BodyGrace
	// (BodyGrace + n/MinBodyRate for n bytes; the grace is stretched by up
	// to half at random, so that bodies started together are not cut
	// together), or its request is answered 408 and its connection
	// closed, long before ReadTimeout would cut it.
	BodyGrace   time.Duration
	MinBodyRate int64
	// MaxStreamsPerClient caps the open event streams of one principal
	// (under noauth, one client address); more are answered 429.
	MaxStreamsPerClient int
	// MaxStreams caps the open event streams of the server, so that
	// streams (which last) never hold more than a part of MaxConnections;
	// more are answered 503. Default: a quarter of MaxConnections.
	MaxStreams int
}

// Default limits. A 64 MiB config drive at 1 MiB/s still fits ReadTimeout.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 120 * time.Second
	DefaultWriteTimeout      = 120 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultMaxConnections    = 2048
	// DefaultMaxConnectionsPerAddress leaves a host (a CLI, an operator
	// with a hundred workers, the scaling benchmarks' clients) plenty while
	// a flood from one address takes an eighth of the listener.
	DefaultMaxConnectionsPerAddress = 256
	DefaultBodyGrace                = 5 * time.Second
	DefaultMinBodyRate              = 1024 // bytes a second
)

func (l Limits) withDefaults() Limits {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&l.ReadTimeout, DefaultReadTimeout)
	def(&l.WriteTimeout, DefaultWriteTimeout)
	def(&l.IdleTimeout, DefaultIdleTimeout)
	def(&l.BodyGrace, DefaultBodyGrace)
	if l.MaxConnections <= 0 {
		l.MaxConnections = DefaultMaxConnections
	}
	if l.MaxConnectionsPerAddress <= 0 {
		l.MaxConnectionsPerAddress = DefaultMaxConnectionsPerAddress
	}
	if l.MinBodyRate <= 0 {
		l.MinBodyRate = DefaultMinBodyRate
	}
	if l.MaxStreams <= 0 {
		l.MaxStreams = max(1, l.MaxConnections/4)
	}
	return l
}

// newHTTPServer is the API's http.Server with the limits' timeouts.
func newHTTPServer(h http.Handler, l Limits) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
	}
}

// connCap caps open connections at max, and those of one client address
// at perAddr (one more is refused at once, see refuse). When full, a new
// client is not left waiting behind connections that do nothing with
// their slot: one that has not sent its request headers within staleNew,
// or whose request body (paced by pacedBody) is behind its minimum rate,
// is closed to make room, else the oldest idle keep-alive connection.
// Only when every connection is busy with a request does the new one wait
// in the backlog (until a request ends or a timeout cuts a stalled one).
// Its track method must be the http.Server's ConnState, and its
// connContext its ConnContext.
type connCap struct {
	net.Listener
	max, perAddr int
	staleNew     time.Duration
	mu           sync.Mutex
	conns        map[net.Conn]*connInfo
	byAddr       map[string]int
	freed        chan struct{} // a token per released connection
	done         chan struct{} // closed by Close
	once         sync.Once
}

type connInfo struct {
	addr  string
	state http.ConnState
	since time.Time  // accepted (new) or idle since
	body  *pacedBody // the request body being read, if any
}

func newConnCap(ln net.Listener, n, perAddr int) *connCap {
	return &connCap{Listener: ln, max: n, perAddr: perAddr, staleNew: time.Second,
		conns: map[net.Conn]*connInfo{}, byAddr: map[string]int{},
		freed: make(chan struct{}, 1), done: make(chan struct{})}
}

// Accept waits for room, then accepts; a connection beyond its address's
// share is refused and the next one accepted.
func (l *connCap) Accept() (net.Conn, error) {
	for {
		for !l.room() {
			select {
			case <-l.freed:
			case <-l.done:
				return nil, net.ErrClosed
			case <-time.After(l.staleNew / 4): // a connection may have gone stale
			}
		}
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := hostOf(c.RemoteAddr())
		l.mu.Lock()
		full := l.perAddr > 0 && l.byAddr[addr] >= l.perAddr
		if !full {
			l.conns[c] = &connInfo{addr: addr, state: http.StateNew, since: time.Now()}
			l.byAddr[addr]++
		}
		l.mu.Unlock()
		if !full {
			return c, nil
		}
		go refuse(c)
	}
}

// hostOf is a connection's client address without the port.
func hostOf(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// tooManyConnections is the answer to a connection beyond its address's
// share: a 429 with Ironic's error body; the connection is then closed.
var tooManyConnections = rawAnswer(http.StatusTooManyRequests,
	"Too many open connections from this address; close some and retry.")

// rawAnswer is a whole HTTP/1.1 answer with Ironic's error body, written
// on a connection net/http does not serve.
func rawAnswer(status int, msg string) []byte {
	rec := &answerRecorder{h: http.Header{}}
	api.WriteError(rec, status, msg)
	var b bytes.Buffer
	resp := &http.Response{StatusCode: rec.status, ProtoMajor: 1, ProtoMinor: 1, Header: rec.h, Close: true,
		ContentLength: int64(rec.body.Len()), Body: io.NopCloser(&rec.body)}
	resp.Header.Set("Retry-After", "1")
	_ = resp.Write(&b)
	return b.Bytes()
}

// answerRecorder keeps an answer written through http.ResponseWriter.
type answerRecorder struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (r *answerRecorder) Header() http.Header         { return r.h }
func (r *answerRecorder) WriteHeader(status int)      { r.status = status }
func (r *answerRecorder) Write(b []byte) (int, error) { return r.body.Write(b) }

// refuse answers 429 on a plain connection (a TLS one has not shaken
// hands: it is only closed) and closes it.
func refuse(c net.Conn) {
	defer c.Close()
	if _, isTLS := c.(*tls.Conn); isTLS {
		return
	}
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write(tooManyConnections); err != nil {
		return
	}
	if tc, ok := c.(*net.TCPConn); ok {
		// Let the request's bytes arrive before closing, or the kernel
		// answers them with a reset that may discard the 429 unread.
		_ = tc.CloseWrite()
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	}
}

// room reports whether a connection may be accepted, evicting one that
// holds a slot without using it when the cap is reached.
func (l *connCap) room() bool {
	l.mu.Lock()
	if len(l.conns) < l.max {
		l.mu.Unlock()
		return true
	}
	now := time.Now()
	var (
		victim net.Conn
		vRank  int
		vSince time.Time
	)
	for c, in := range l.conns {
		rank, since := l.rank(in, now)
		if rank > 0 && (rank > vRank || rank == vRank && since.Before(vSince)) {
			victim, vRank, vSince = c, rank, since
		}
	}
	if victim != nil {
		l.forget(victim)
	}
	l.mu.Unlock()
	if victim == nil {
		return false
	}
	go victim.Close() // a TLS close may wait on the peer
	return true
}

// rank orders eviction: 2 for a connection wasting its slot (no headers
// within staleNew, a body behind its minimum rate), 1 for one idle for
// staleNew, 0 for one that may not be evicted; since breaks ties, oldest
// first.
func (l *connCap) rank(in *connInfo, now time.Time) (int, time.Time) {
	switch {
	case in.state == http.StateNew && now.Sub(in.since) >= l.staleNew:
		return 2, in.since
	case in.state == http.StateActive && in.body != nil && in.body.behind(now, l.staleNew):
		return 2, in.body.start
	case in.state == http.StateIdle && now.Sub(in.since) >= l.staleNew:
		// Not one idle between a client's requests: only after staleNew.
		return 1, in.since
	}
	return 0, time.Time{}
}

// forget drops c; l.mu is held.
func (l *connCap) forget(c net.Conn) {
	in, ok := l.conns[c]
	if !ok {
		return
	}
	delete(l.conns, c)
	if l.byAddr[in.addr]--; l.byAddr[in.addr] <= 0 {
		delete(l.byAddr, in.addr)
	}
}

// track follows the server's connection states.
func (l *connCap) track(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	in, ok := l.conns[c]
	if !ok {
		return
	}
	switch st {
	case http.StateClosed, http.StateHijacked:
		l.forget(c)
		select {
		case l.freed <- struct{}{}:
		default:
		}
	case http.StateIdle:
		in.state, in.since, in.body = st, time.Now(), nil
	default:
		in.state = st
	}
}

// reading records that c's request body is read through b (nil: no
// longer).
func (l *connCap) reading(c net.Conn, b *pacedBody) {
	l.mu.Lock()
	if in, ok := l.conns[c]; ok {
		in.body = b
	}
	l.mu.Unlock()
}

type connKey struct{}

// connContext keeps the connection in its requests' context, for pace.
func (l *connCap) connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// Close stops accepting.
func (l *connCap) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// isLongLived reports whether r is answered by a long response: the event
// stream or a boot file.
func isLongLived(r *http.Request, bootPrefix string) bool {
	return r.URL.Path == events.StreamPath || bootPrefix != "" && len(r.URL.Path) > len(bootPrefix) &&
		r.URL.Path[:len(bootPrefix)+1] == bootPrefix+"/"
}

// longLived serves h without the server's whole-response write deadline:
// the deadline moves forward on every write, so a reader that stops reading
// for perWrite is cut while a slow but steady one is not. (The read
// deadline needs nothing: net/http lifts it once the request is read.)
func longLived(h http.Handler, perWrite time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctl := http.NewResponseController(w)
		_ = ctl.SetWriteDeadline(time.Now().Add(perWrite))
		h.ServeHTTP(&progressWriter{ResponseWriter: w, ctl: ctl, d: perWrite}, r)
	})
}

// progressWriter extends the write deadline before each write.
type progressWriter struct {
	http.ResponseWriter
	ctl *http.ResponseController
	d   time.Duration
}

func (p *progressWriter) Write(b []byte) (int, error) {
	_ = p.ctl.SetWriteDeadline(time.Now().Add(p.d))
	return p.ResponseWriter.Write(b)
}

// progressChunk is how much a ReadFrom copies per deadline extension.
const progressChunk = 4 << 20

// ReadFrom keeps the connection's sendfile path (http.ServeContent of a
// file) while extending the deadline per chunk.
func (p *progressWriter) ReadFrom(r io.Reader) (int64, error) {
	rf, ok := p.ResponseWriter.(io.ReaderFrom)
	if !ok {
		return io.Copy(struct{ io.Writer }{p}, r)
	}
	var total int64
	for {
		_ = p.ctl.SetWriteDeadline(time.Now().Add(p.d))
		n, err := rf.ReadFrom(io.LimitReader(r, progressChunk))
		total += n
		if err != nil || n < progressChunk {
			return total, err
		}
	}
}

// Flush forwards to the connection (the event stream flushes each batch).
func (p *progressWriter) Flush() { _ = p.ctl.Flush() }

// Unwrap lets http.ResponseController reach the connection.
func (p *progressWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }

// streamSendBuffer is the kernel send buffer of an event stream's
// connection: events are small, and a reader that stops reading then
// holds this much of the kernel's memory, not the megabytes autotuning
// would grow to.
const streamSendBuffer = 64 << 10

// withLimits serves the long answers through longLived.
func withLimits(h http.Handler, bootPrefix string, l Limits) http.Handler {
	long := longLived(h, l.WriteTimeout)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == events.StreamPath {
			if tc, ok := r.Context().Value(connKey{}).(*net.TCPConn); ok {
				_ = tc.SetWriteBuffer(streamSendBuffer)
			}
		}
		if isLongLived(r, bootPrefix) {
			long.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}
