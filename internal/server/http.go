package server

import (
	"io"
	"net"
	"net/http"
	"sync"
	"time"

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
	// MaxConnections caps open connections. At the cap, the oldest idle
	// keep-alive connection (or one that has not sent its headers within a
	// second) is closed for a new client; if every connection is busy,
	// new clients wait in the listen backlog.
	MaxConnections int
}

// Default limits. A 64 MiB config drive at 1 MiB/s still fits ReadTimeout.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 120 * time.Second
	DefaultWriteTimeout      = 120 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultMaxConnections    = 2048
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
	if l.MaxConnections <= 0 {
		l.MaxConnections = DefaultMaxConnections
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

// connCap caps open connections at max. When full, a new client is not
// left waiting behind connections that do nothing: the oldest idle
// keep-alive connection, or else the oldest one that has not sent its
// request headers within staleNew, is closed to make room. Only when every
// connection is busy with a request does the new one wait in the backlog
// (until a request ends or a timeout cuts a stalled one). Its track method
// must be the http.Server's ConnState.
type connCap struct {
	net.Listener
	max      int
	staleNew time.Duration
	mu       sync.Mutex
	conns    map[net.Conn]*connInfo
	freed    chan struct{} // a token per released connection
	done     chan struct{} // closed by Close
	once     sync.Once
}

type connInfo struct {
	state http.ConnState
	since time.Time // accepted (new) or idle since
}

func newConnCap(ln net.Listener, n int) *connCap {
	return &connCap{Listener: ln, max: n, staleNew: time.Second, conns: map[net.Conn]*connInfo{},
		freed: make(chan struct{}, 1), done: make(chan struct{})}
}

// Accept waits for room, then accepts.
func (l *connCap) Accept() (net.Conn, error) {
	for !l.room() {
		select {
		case <-l.freed:
		case <-l.done:
			return nil, net.ErrClosed
		case <-time.After(l.staleNew / 4): // a new connection may have gone stale
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.conns[c] = &connInfo{state: http.StateNew, since: time.Now()}
	l.mu.Unlock()
	return c, nil
}

// room reports whether a connection may be accepted, evicting an idle or
// stale new connection when the cap is reached.
func (l *connCap) room() bool {
	l.mu.Lock()
	if len(l.conns) < l.max {
		l.mu.Unlock()
		return true
	}
	var victim net.Conn
	var vInfo *connInfo
	now := time.Now()
	for c, in := range l.conns {
		switch {
		case in.state == http.StateIdle:
			if vInfo == nil || vInfo.state != http.StateIdle || in.since.Before(vInfo.since) {
				victim, vInfo = c, in
			}
		case in.state == http.StateNew && now.Sub(in.since) >= l.staleNew:
			if vInfo == nil || vInfo.state == http.StateNew && in.since.Before(vInfo.since) {
				victim, vInfo = c, in
			}
		}
	}
	if victim != nil {
		delete(l.conns, victim)
	}
	l.mu.Unlock()
	if victim == nil {
		return false
	}
	go victim.Close() // a TLS close may wait on the peer
	return true
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
		delete(l.conns, c)
		select {
		case l.freed <- struct{}{}:
		default:
		}
	case http.StateIdle:
		in.state, in.since = st, time.Now()
	default:
		in.state = st
	}
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

// withLimits serves the long answers through longLived.
func withLimits(h http.Handler, bootPrefix string, l Limits) http.Handler {
	long := longLived(h, l.WriteTimeout)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isLongLived(r, bootPrefix) {
			long.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}
