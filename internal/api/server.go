package api

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anvil-metal/anvil/internal/console"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/policy"
	"github.com/anvil-metal/anvil/internal/pyrepr"
)

// Config configures the API handler. Zero values take Ironic's defaults.
type Config struct {
	// The readers (backend.go): nodes, with the broker of the watch
	// stream; what nodes accumulate; the records with no node.
	Nodes   NodeReader
	Details NodeDetailReader
	Catalog RecordReader
	// The conductor side's services (backend.go): every write, and the
	// agent's callbacks.
	Lifecycle   Lifecycle
	Management  Management
	NodeRecords NodeRecords
	Records     Records
	Agents      Agents
	Hardware    Hardware
	Logger      *slog.Logger
	// MaxBodyBytes caps request bodies (Ironic's [api]max_json_body_size,
	// 1 MiB); larger bodies answer 413.
	MaxBodyBytes int64
	// MaxProvisionBodyBytes caps PUT .../states/provision, which may carry a
	// config drive ([api]max_json_body_size_provision, 64 MiB).
	MaxProvisionBodyBytes int64
	// PublicURL is the base of every link (Ironic's [api]public_endpoint);
	// empty means http://<Host header>.
	PublicURL string
	Now       func() time.Time
	// ConductorAliveWindow is how recent a conductor's heartbeat must be
	// for it to count as alive ([conductor]heartbeat_timeout, 60 s).
	ConductorAliveWindow time.Duration
	// MaxPageSize is the default and largest page of a list ([api]max_limit, 1000).
	MaxPageSize int
	// Policy decides what each principal may do (internal/policy);
	// nil is the default rules.
	Policy *policy.Enforcer
	// MaxStreamsPerClient caps the open event streams of one principal
	// (under noauth, of one client address); more are answered 429
	// (DefaultMaxStreamsPerClient).
	MaxStreamsPerClient int
	// MaxStreams caps the open event streams of the server; more are
	// answered 503 (DefaultMaxStreams).
	MaxStreams int
	// Console is this process's console service (nil in an API-only
	// process): the console WebSocket and log routes read it.
	Console *console.Service
	// ConsoleRelay, in an API-only process, asks the conductor that owns
	// n for its console: the URL of its relay endpoint (ConsoleRelay) and
	// a one-time ticket for it (internal/handoff, through the database).
	ConsoleRelay func(ctx context.Context, n *model.Node) (url, ticket string, err error)
	// ConsoleLogRelay, in an API-only process, asks n's owner for the last
	// tail bytes of its recorded console output, and whether there is any.
	ConsoleLogRelay func(ctx context.Context, n *model.Node, tail int) ([]byte, bool, error)
	// ConsoleRecheck is how often a console viewer's dashboard session is
	// re-checked (DefaultConsoleRecheck when 0).
	ConsoleRecheck time.Duration
	// Kinds are record kinds served beside the declared ones
	// (record_kinds.go), for tests.
	Kinds []RecordKind
}

// Server is the Ironic v1 REST API over a store and a conductor.
type Server struct {
	cfg  Config
	log  *slog.Logger
	mux  *http.ServeMux
	bufs sync.Pool // *[]byte response buffers of large lists
	own  atomic.Pointer[ownRow]
	// enforcer decides authorization; routes is the route table with the
	// guard of each method, for the policy document and its tests.
	enforcer *policy.Enforcer
	routes   []Route
	// kinds are the record kinds served (record_kinds.go).
	kinds []RecordKind
	// streams counts open event streams per client (events.go).
	streams streamCounts
}

// New returns the API handler. Every reader (Nodes with its Broker) and
// service is required: New panics without one, at wiring time, rather
// than serve 404s.
func New(cfg Config) *Server {
	if cfg.Nodes == nil || cfg.Details == nil || cfg.Catalog == nil || cfg.Lifecycle == nil || cfg.Management == nil ||
		cfg.NodeRecords == nil || cfg.Records == nil || cfg.Agents == nil || cfg.Hardware == nil || cfg.Nodes.Broker() == nil {
		panic("api.New: Config's readers (Nodes with a broker, Details, Catalog) and services (Lifecycle, Management, NodeRecords, Records, Agents, Hardware) are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.MaxProvisionBodyBytes <= 0 {
		cfg.MaxProvisionBodyBytes = 64 << 20
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ConductorAliveWindow <= 0 {
		cfg.ConductorAliveWindow = 60 * time.Second
	}
	if cfg.MaxPageSize <= 0 {
		cfg.MaxPageSize = 1000
	}
	if cfg.Policy == nil {
		cfg.Policy = policy.Default()
	}
	if cfg.MaxStreamsPerClient <= 0 {
		cfg.MaxStreamsPerClient = DefaultMaxStreamsPerClient
	}
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = DefaultMaxStreams
	}
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	kinds := kindsOf(cfg)
	s := &Server{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), enforcer: withKindRules(cfg.Policy, kinds), kinds: kinds}
	s.register()
	return s
}

// endpoint maps HTTP methods to the operations of one path.
type endpoint map[string]op

// op is one method of a route: its handler and its authorization.
type op struct {
	fn func(*call) error
	g  guard
}

// Route is one method of one path of the API, with the policy rules that
// guard it (for docs/policy.md and the authorization tests).
type Route struct {
	Method, Pattern string
	Rules           []string
	Target          string // what the rules are checked against
	SystemOnly      bool   // refused to project-scoped principals
}

// Routes is the route table, in registration order.
func (s *Server) Routes() []Route { return slices.Clone(s.routes) }

// call is one request being served.
type call struct {
	s     *Server
	w     http.ResponseWriter
	r     *http.Request
	ctx   context.Context
	minor int
	base  string // public URL, no trailing slash
	reqID string
	query url.Values
	ncond *nodeConductor // lazily resolved "conductor" of rendered nodes
	// jsonSuffix: a ".json" was stripped from the path (before 1.91).
	jsonSuffix bool
	redact     Redactor // nil: every node field is shown
	auth       authz

	linkSelf, linkBook []byte // encoded `{"href": "<base>[/v1]`, built on first use
}

type callKey struct{}

func (s *Server) register() {
	s.handle(endpoint{"GET": {s.getRoot, public()}}, "/{$}")
	s.handle(endpoint{"GET": {s.getV1, public()}}, "/v1", "/v1/{$}")
	recordAPI{s}.chassisRoutes()
	nodeAPI{s}.nodeRoutes()
	nodeAPI{s}.nodeStateRoutes()
	nodeAPI{s}.historyRoutes()
	nodeAPI{s}.inventoryRoutes()
	managementAPI{s}.vmediaRoutes()
	managementAPI{s}.biosRoutes()
	managementAPI{s}.vendorRoutes()
	volumeAPI{s}.volumeRoutes()
	fleetAPI{s}.shardRoutes()
	managementAPI{s}.consoleRoutes()
	managementAPI{s}.consoleWSRoutes()
	nodeAPI{s}.diagnosisRoutes()
	managementAPI{s}.bootModeRoutes()
	s.netEventRoutes()
	managementAPI{s}.indicatorRoutes()
	managementAPI{s}.raidRoutes()
	portAPI{s}.portRoutes()
	nodeAPI{s}.traitRoutes()
	portgroupAPI{s}.portgroupRoutes()
	managementAPI{s}.vifRoutes()
	allocationAPI{s}.allocationRoutes()
	recordAPI{s}.deployTemplateRoutes()
	recordAPI{s}.runbookRoutes()
	recordAPI{s}.inspectionRuleRoutes()
	driverAPI{s}.driverRoutes()
	recordAPI{s}.conductorRoutes()
	agentAPI{s}.agentRoutes()
	agentAPI{s}.lookupRoutes()
	agentAPI{s}.continueInspectionRoutes()
	s.eventRoutes()
	fleetAPI{s}.fleetRoutes()
	s.registerKinds(s.kinds)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		rc := r.Context().Value(callKey{}).(*call)
		s.writeError(w, r, rc.reqID, errNotFound())
	})
}

// handle registers ep under each pattern; other methods answer 405. A
// method without a guard is a programming error: New panics, so a route
// added without its policy fails every test.
func (s *Server) handle(ep endpoint, patterns ...string) {
	allow := make([]string, 0, len(ep)+1)
	for _, m := range slices.Sorted(maps.Keys(ep)) {
		o := ep[m]
		allow = append(allow, m)
		if o.fn == nil || (o.g.on != onPublic && len(o.g.rules) == 0) {
			panic(fmt.Sprintf("api: %s %v has no handler or no policy rule", m, patterns))
		}
		for _, r := range o.g.rules {
			if !s.enforcer.Known(r) {
				panic(fmt.Sprintf("api: %s %v names unknown policy rule %s", m, patterns, r))
			}
		}
		for _, p := range patterns {
			s.routes = append(s.routes, Route{Method: m, Pattern: p, Rules: o.g.rules,
				Target: o.g.on.String(), SystemOnly: o.g.system})
		}
	}
	if _, ok := ep["GET"]; ok {
		allow = append(allow, "HEAD")
	}
	slices.Sort(allow)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := r.Context().Value(callKey{}).(*call)
		rc.r = r
		method := r.Method
		if method == http.MethodHead {
			method = http.MethodGet
		}
		o, ok := ep[method]
		if !ok {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			s.writeError(w, r, rc.reqID, errMethod(r.Method))
			return
		}
		defer rc.noteNode()
		if err := rc.authorizeRoute(o.g); err != nil {
			s.writeError(w, r, rc.reqID, err)
			return
		}
		if err := o.fn(rc); err != nil {
			s.writeError(w, r, rc.reqID, err)
			return
		}
		if rc.auth.pending {
			// A body guard's handler answered without authorizing: a bug
			// the route matrix test catches; logged loudly here.
			s.log.Error("route answered without its authorization check", "method", r.Method,
				"path", r.URL.Path, "request_id", rc.reqID)
		}
	})
	for _, p := range patterns {
		s.mux.Handle(p, h)
	}
}

// ServeHTTP negotiates the microversion, sets the headers every response
// carries and routes the request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := s.cfg.Now()
	sw := &statusWriter{ResponseWriter: w}
	reqID := "req-" + uuid.NewString()
	h := sw.Header()
	h.Set(hdrRequestID, reqID)
	h.Set(hdrXRequestID, reqID)
	h.Set(hdrMinVersion, minVersionString)
	h.Set(hdrMaxVersion, maxVersionString)
	h.Set("Vary", hdrStdVersion+", "+hdrLegacyVersion)
	defer s.recoverPanic(sw, r, reqID)
	defer func() {
		s.log.Debug("request", "request_id", reqID, "method", r.Method, "path", r.URL.Path,
			"status", sw.status, "duration", s.cfg.Now().Sub(start))
	}()
	minor, err := negotiate(r.Header)
	if err != nil {
		s.writeError(sw, r, reqID, err)
		return
	}
	h.Set(hdrLegacyVersion, versionString(minor))
	h.Set(hdrStdVersion, serviceType+" "+versionString(minor))
	query, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		s.writeError(sw, r, reqID, invalid("The query string could not be parsed."))
		return
	}
	rc := &call{s: s, w: sw, r: r, minor: minor, reqID: reqID, query: query,
		base: s.publicURL(r)}
	ctx := context.WithValue(r.Context(), callKey{}, rc)
	rc.ctx = ctx
	routed, stripped := stripJSONSuffix(r.WithContext(ctx))
	rc.jsonSuffix = stripped
	s.mux.ServeHTTP(sw, withV1Prefix(routed))
}

// stripJSONSuffix is Ironic's JsonExtensionMiddleware: before 1.91 a path
// ending in ".json" (trailing slashes aside) is served without it, so
// /v1/nodes/n1.json is node n1; from 1.91 it is node "n1.json". Like
// Ironic, it reads only the legacy X-OpenStack-Ironic-API-Version header:
// a request without it (served at 1.1) or with only OpenStack-API-Version
// keeps its path.
func stripJSONSuffix(r *http.Request) (*http.Request, bool) {
	p := strings.TrimRight(r.URL.Path, "/")
	if !strings.HasSuffix(p, ".json") {
		return r, false
	}
	_, minor, ok := parseVersion(strings.Join(r.Header.Values(hdrLegacyVersion), ","))
	if !ok || minor.Sign() == 0 || minor.Cmp(big.NewInt(minorDotJSON)) >= 0 {
		return r, false
	}
	u := *r.URL
	u.Path = strings.TrimSuffix(p, ".json")
	if u.Path == "" {
		u.Path = "/"
	}
	if raw := strings.TrimRight(u.RawPath, "/"); strings.HasSuffix(raw, ".json") {
		u.RawPath = strings.TrimSuffix(raw, ".json")
	} else {
		u.RawPath = ""
	}
	r2 := *r
	r2.URL = &u
	return &r2, true
}

// withV1Prefix routes unversioned paths (bookmark links such as /nodes/X)
// to v1 and drops a trailing slash, as Ironic's root controller does.
func withV1Prefix(r *http.Request) *http.Request {
	p := r.URL.Path
	if p == "/" || p == "/v1" || p == "/v1/" {
		return r
	}
	u := *r.URL
	if !strings.HasPrefix(p, "/v1/") {
		u.Path = "/v1" + p
		if u.RawPath != "" {
			u.RawPath = "/v1" + u.RawPath
		}
	}
	if len(u.Path) > 1 && strings.HasSuffix(u.Path, "/") {
		u.Path = strings.TrimSuffix(u.Path, "/")
		u.RawPath = strings.TrimSuffix(u.RawPath, "/")
	}
	if u.Path == p && u.RawPath == r.URL.RawPath {
		return r
	}
	r2 := *r
	r2.URL = &u
	return &r2
}

func (s *Server) recoverPanic(w *statusWriter, r *http.Request, reqID string) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	err := fmt.Errorf("panic: %v", v)
	if w.status != 0 {
		s.log.Error("panic after response started", "request_id", reqID, "err", err)
		return
	}
	s.writeError(w, r, reqID, err)
}

// publicURL is the base of every link in a response.
func (s *Server) publicURL(r *http.Request) string {
	if s.cfg.PublicURL != "" {
		return s.cfg.PublicURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// statusWriter remembers the status for the access log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Responses.

func (rc *call) json(status int, w *jw) error {
	writeRaw(rc.w, status, w.bytes())
	rc.s.releaseWriter(w)
	return nil
}

// listWriter returns a writer whose buffer comes from the server's pool
// (large lists would otherwise allocate megabytes per request).
func (s *Server) listWriter(sizeHint int) *jw {
	bp, _ := s.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	if cap(*bp) < sizeHint {
		*bp = make([]byte, 0, sizeHint)
	}
	return &jw{b: (*bp)[:0], pooled: bp}
}

// releaseWriter gives a pooled buffer back once its bytes are written.
func (s *Server) releaseWriter(w *jw) {
	if w.pooled == nil || cap(w.b) > 64<<20 {
		return
	}
	*w.pooled = w.b[:0]
	s.bufs.Put(w.pooled)
	w.pooled, w.b = nil, nil
}

// accepted answers 202 with no body, and a Location when given.
func (rc *call) accepted(location string) error {
	if location != "" {
		rc.w.Header().Set("Location", location)
	}
	rc.w.WriteHeader(http.StatusAccepted)
	return nil
}

func (rc *call) noContent() error {
	rc.w.WriteHeader(http.StatusNoContent)
	return nil
}

// link is an absolute URL of a v1 resource (bookmark drops /v1).
func (rc *call) link(bookmark bool, parts ...string) string {
	var b strings.Builder
	b.WriteString(rc.base)
	if !bookmark {
		b.WriteString("/v1")
	}
	for _, p := range parts {
		b.WriteByte('/')
		b.WriteString(p)
	}
	return b.String()
}

// links writes Ironic's [self, bookmark] link pair straight into w.
func (rc *call) links(w *jw, parts ...string) {
	if rc.linkSelf == nil {
		rc.linkSelf = pyrepr.AppendJSONStringBody([]byte(`{"href": "`), rc.base+"/v1")
		rc.linkBook = pyrepr.AppendJSONStringBody([]byte(`{"href": "`), rc.base)
	}
	w.sep()
	w.b = append(w.b, '[')
	for i, prefix := range [2][]byte{rc.linkSelf, rc.linkBook} {
		w.b = append(w.b, prefix...)
		for _, p := range parts {
			w.b = append(w.b, '/')
			w.b = pyrepr.AppendJSONStringBody(w.b, p)
		}
		if i == 0 {
			w.b = append(w.b, `", "rel": "self"}, `...)
		} else {
			w.b = append(w.b, `", "rel": "bookmark"}`...)
		}
	}
	w.b = append(w.b, ']')
}

// pathEscape escapes an identifier for use in a link.
func pathEscape(s string) string { return url.PathEscape(s) }
