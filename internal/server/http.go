package server

import (
	"io"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"

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
	// MaxConnections caps open connections; further clients wait in the
	// listen backlog until one closes.
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

// limitListener caps ln at l.MaxConnections open connections.
func limitListener(ln net.Listener, l Limits) net.Listener {
	return netutil.LimitListener(ln, l.MaxConnections)
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
