// Package server is ragmem's HTTP backend for browser extensions and other
// local clients: a versioned JSON API under /v1 over rag.Engine, a small web
// UI at /, health and readiness probes and Prometheus metrics. `ragmem serve`
// runs it.
//
// Every /v1 call needs a bearer token (see EnsureToken, RotateToken). CORS
// headers go only to the origins given in Options.AllowOrigins, and requests
// from any other cross origin are refused; request bodies are limited; each
// client (token, or address before authentication) has a token-bucket rate
// limit. Namespaces keep users apart: a token bound to a namespace reaches
// only that namespace, and the main token picks one with the
// X-Ragmem-Namespace header. Each namespace is its own store, opened on
// first use (see NamespaceDir).
//
// Other handlers (an MCP endpoint, more /v1 routes) are mounted with Handle
// behind the same authentication, CORS, limits, logging and metrics; Engine
// gives them the request's namespace.
//
//	srv, err := server.New(ctx, dir, &server.Options{AllowOrigins: []string{"chrome-extension://abc"}})
//	srv.Handle("POST /v1/memories", memoriesHandler)
//	err = srv.Run(ctx, listener, nil) // until ctx is cancelled, then a graceful shutdown
//
// A *Server is safe for concurrent use.
package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/semaphore"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/extract"
	"github.com/ragmem/ragmem/internal/perm"
	"github.com/ragmem/ragmem/rag"
)

// Defaults of Options.
const (
	DefaultAddr            = "127.0.0.1:7437"
	DefaultMaxBodyBytes    = 10 << 20
	DefaultMaxBodyInflight = 64 << 20
	DefaultRateLimit       = 20
	DefaultRateBurst       = 60
	DefaultMaxNamespaces   = 16
	DefaultRequestTimeout  = 60 * time.Second
	DefaultShutdownTimeout = 30 * time.Second
	DefaultQuotaChunks     = 500_000
	DefaultQuotaBytes      = 4 << 30

	DefaultLocalMaxBodyBytes   = 128 << 20
	DefaultLocalRequestTimeout = 10 * time.Minute
)

// Options configure New. A nil *Options means all defaults. Options is a
// plain value, read once by New.
type Options struct {
	// Open opens the engine of one namespace's directory. Default
	// rag.Open with the offline lexical embedder and Logger.
	Open OpenFunc
	// Logger receives one structured line per request and the server's
	// own reports. Default slog.Default().
	Logger *slog.Logger
	// AllowOrigins are the exact origins ("chrome-extension://<id>",
	// "moz-extension://<uuid>", "http://localhost:3000") that get CORS
	// headers. Requests from any other cross origin are refused with 403;
	// same-origin requests (the web UI) and requests without an Origin
	// header (curl, agents) are not affected. Default none.
	AllowOrigins []string
	// AllowedHosts are the host names accepted in the Host header, a guard
	// against DNS rebinding. "*" accepts any host (for --allow-remote).
	// Default localhost and loopback addresses.
	AllowedHosts []string
	// MaxBodyBytes limits request bodies; larger ones get 413. Default 10 MiB.
	MaxBodyBytes int64
	// MaxBodyInflight bounds the request-body bytes of all requests in
	// flight, server-wide, so that many large bodies at once cannot
	// exhaust memory. A request reserves its Content-Length (MaxBodyBytes
	// for a chunked body) before its body is read and holds it until it is
	// answered; when the reservation cannot be had within a second, the
	// answer is 503 with Retry-After. Default DefaultMaxBodyInflight
	// (64 MiB), raised to MaxBodyBytes when smaller; negative: no bound.
	MaxBodyInflight int64
	// RateLimit is the sustained requests per second allowed per client: per
	// token once authenticated, per remote address before. Over it the
	// server answers 429 with Retry-After. Default 20; negative disables.
	RateLimit float64
	// RateBurst is how many requests a client may make at once. Default 60.
	RateBurst int
	// MaxNamespaces is how many namespace stores may be open at once; the
	// least recently used idle one is closed to open another. Default 16.
	MaxNamespaces int
	// RequestTimeout bounds each API call's work. Default 60 s.
	RequestTimeout time.Duration
	// ReadHeaderTimeout bounds how long a client may take to send the
	// request headers (slow-loris defence). Default 10 s.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds how long a client may take to send a whole
	// request, body included. Default 2 min.
	ReadTimeout time.Duration
	// IdleTimeout closes keep-alive connections idle this long. Default 2 min.
	IdleTimeout time.Duration
	// ShutdownTimeout bounds how long Run waits for requests in flight
	// when its context is cancelled. Default 30 s. Queued indexing is
	// always finished, however long it takes.
	ShutdownTimeout time.Duration
	// MetricsPublic serves /metrics without the bearer token. Default false:
	// metrics need the token, like the API (Prometheus sends it with
	// authorization: {credentials_file: ...}).
	MetricsPublic bool
	// ExtractConcurrency bounds concurrent HTML extractions, which are
	// CPU-bound. A namespace may use all but one of them, and a freed one
	// goes to the waiting namespace that holds the fewest, so one
	// namespace's pages never stall the others'. Default GOMAXPROCS, at
	// least 2.
	ExtractConcurrency int
	// ExtractMaxNodes bounds the document tree of a page (see
	// extract.Options.MaxNodes); larger pages get 422 page_too_complex.
	// Default extract.DefaultMaxNodes (250,000).
	ExtractMaxNodes int
	// ExtractTimeout bounds the extraction of one page (see
	// extract.Options.Timeout); slower pages get 422 page_too_complex.
	// Default extract.DefaultTimeout (10 s).
	ExtractTimeout time.Duration
	// MaxChunksPerDocument, QuotaChunks and QuotaBytes are given to the
	// default Open (see rag.Options): the chunks one page may make
	// (more: 422 too_many_chunks), and each namespace's quotas of chunks
	// and of bytes on disk (past them: 507 quota_exceeded). Defaults
	// rag.DefaultMaxChunksPerDocument (4096), DefaultQuotaChunks
	// (500,000) and DefaultQuotaBytes (4 GiB); negative means none.
	MaxChunksPerDocument int
	QuotaChunks          int
	QuotaBytes           int64
	// LocalMaxBodyBytes limits request bodies on local listeners (see
	// Listener.Local), where the CLI sends whole files. Default 128 MiB.
	LocalMaxBodyBytes int64
	// LocalRequestTimeout bounds each API call's work on local listeners,
	// where a batch of files may take long to embed. Default 10 min.
	LocalRequestTimeout time.Duration
	// Now returns the current time (tests). Default time.Now.
	Now func() time.Time
}

// Server serves the API. See the package comment. It is safe for
// concurrent use; Handle may be called while it serves.
type Server struct {
	dir      string
	o        Options
	log      *slog.Logger
	tokens   *tokenStore
	pool     *pool
	metrics  *metrics
	limits   *limiters
	fails    *limiters // failed authentications per address, whatever RateLimit says
	sessions *sessions
	origins  map[string]bool
	hosts    map[string]bool
	anyHost  bool
	extract  *fairSlots
	started  time.Time
	bodies   *semaphore.Weighted // request-body bytes in flight; nil: no bound
	inflight atomic.Int64        // bytes reserved in bodies

	mu        sync.Mutex
	mux       *http.ServeMux
	protected map[string]bool // patterns behind auth
	localOnly map[string]bool // patterns served only on local listeners

	draining  atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// ExtractOptions are the limits of a page's extraction the options set
// (MaxBodyBytes, ExtractMaxNodes, ExtractTimeout), for rag.Options.Extract:
// the default Open passes them, an Open of one's own should too.
func (o *Options) ExtractOptions() *extract.Options {
	return &extract.Options{MaxBytes: int(o.MaxBodyBytes), MaxNodes: o.ExtractMaxNodes, Timeout: o.ExtractTimeout}
}

// New opens the default namespace's store in dir and prepares the server.
// The token file must exist (EnsureToken creates it).
func New(ctx context.Context, dir string, opts *Options) (*Server, error) {
	o := withDefaults(opts)
	if dir == "" {
		return nil, errors.New("server: no data directory given")
	}
	origins, err := originSet(o.AllowOrigins)
	if err != nil {
		return nil, err
	}
	hosts, anyHost := hostSet(o.AllowedHosts)
	// The data directory is the user's (internal/perm: ssh's rule): one
	// another user owns or may write is refused, with the fix.
	note, err := perm.Dir(dir)
	if err != nil {
		return nil, fmt.Errorf("server: the data directory: %w", err)
	}
	if note != "" {
		o.Logger.Info(note)
	}
	tokens, err := newTokenStore(TokenPath(dir), o.Logger)
	if err != nil {
		return nil, err
	}
	s := &Server{
		dir: dir, o: o, log: o.Logger, tokens: tokens,
		pool:     newPool(dir, o.Open, o.MaxNamespaces),
		limits:   newLimiters(o.RateLimit, o.RateBurst),
		fails:    newLimiters(failedAuthRate, failedAuthBurst),
		sessions: newSessions(DefaultSessionTTL),
		origins:  origins, hosts: hosts, anyHost: anyHost,
		extract:   newFairSlots(o.ExtractConcurrency),
		bodies:    newBodies(o.MaxBodyInflight),
		started:   o.Now(),
		mux:       http.NewServeMux(),
		protected: map[string]bool{},
		localOnly: map[string]bool{},
	}
	s.metrics = newMetrics(s.pool)
	s.metrics.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "ragmem_http_body_bytes_inflight",
		Help: "Request-body bytes reserved by requests in flight (bounded by --max-body-inflight).",
	}, func() float64 { return float64(s.inflight.Load()) }))
	// Open the default namespace now, so that a store that cannot be
	// opened (locked, other embedder) fails the start, not the first call.
	_, release, err := s.pool.acquire(ctx, "")
	if err != nil {
		return nil, err
	}
	release()
	s.routes()
	return s, nil
}

// withDefaults is *opts (nil: the zero Options) with every zero field
// given its default, as the fields' comments say.
func withDefaults(opts *Options) Options {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.QuotaChunks = orDefault(o.QuotaChunks, DefaultQuotaChunks)
	o.QuotaBytes = orDefault(o.QuotaBytes, DefaultQuotaBytes)
	if o.Open == nil {
		ro := rag.Options{Logger: o.Logger, MaxChunksPerDocument: o.MaxChunksPerDocument, QuotaChunks: o.QuotaChunks, QuotaBytes: o.QuotaBytes}
		o.Open = func(ctx context.Context, d string) (*rag.Engine, error) {
			ro := ro
			ro.Extract = o.ExtractOptions() // o's limits once defaulted below
			return rag.Open(ctx, d, &ro)
		}
	}
	positive(&o.MaxBodyBytes, DefaultMaxBodyBytes)
	o.MaxBodyInflight = orDefault(o.MaxBodyInflight, DefaultMaxBodyInflight)
	if o.MaxBodyInflight > 0 && o.MaxBodyInflight < o.MaxBodyBytes {
		o.MaxBodyInflight = o.MaxBodyBytes // every body the limit allows can be read
	}
	if o.RateLimit == 0 {
		o.RateLimit = DefaultRateLimit
	}
	positive(&o.RateBurst, DefaultRateBurst)
	positive(&o.MaxNamespaces, DefaultMaxNamespaces)
	positive(&o.RequestTimeout, DefaultRequestTimeout)
	positive(&o.ReadHeaderTimeout, 10*time.Second)
	positive(&o.ReadTimeout, 2*time.Minute)
	positive(&o.IdleTimeout, 2*time.Minute)
	positive(&o.ShutdownTimeout, DefaultShutdownTimeout)
	positive(&o.LocalMaxBodyBytes, DefaultLocalMaxBodyBytes)
	positive(&o.LocalRequestTimeout, DefaultLocalRequestTimeout)
	positive(&o.ExtractConcurrency, max(2, runtime.GOMAXPROCS(0)))
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// positive sets *v to def unless it is above zero.
func positive[T int | int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// orDefault is v for a bound where zero means the default and a negative
// value means none: def for 0, 0 (none) for v < 0.
func orDefault[T int | int64](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// originSet is the set of --allow-origin values, normalized
// (normalizeOrigin); a malformed one is an error.
func originSet(allow []string) (map[string]bool, error) {
	origins := map[string]bool{}
	for _, or := range allow {
		n, err := normalizeOrigin(or)
		if err != nil {
			return nil, err
		}
		origins[n] = true
	}
	return origins, nil
}

// hostSet is the set of allowed Host names, lower case and without an
// IPv6 address's brackets; anyHost says "*" is among them.
func hostSet(allowed []string) (hosts map[string]bool, anyHost bool) {
	hosts = map[string]bool{}
	for _, h := range allowed {
		if h == "*" {
			anyHost = true
		}
		hosts[strings.ToLower(strings.Trim(h, "[]"))] = true
	}
	return hosts, anyHost
}

// normalizeOrigin checks an --allow-origin value: scheme://host[:port],
// nothing more.
func normalizeOrigin(o string) (string, error) {
	o = strings.TrimRight(strings.TrimSpace(o), "/")
	i := strings.Index(o, "://")
	if i <= 0 || strings.ContainsAny(o[i+3:], "/?#@ ") || len(o) == i+3 || o == "null" {
		return "", fmt.Errorf("server: origin %q is not scheme://host[:port] (e.g. chrome-extension://abcdefghijklmnopabcdefghijklmnop)", o)
	}
	return strings.ToLower(o), nil
}

// Handle registers h for pattern (a net/http ServeMux pattern such as
// "POST /v1/memories" or "/mcp") behind the server's bearer-token
// authentication, CORS, rate limit, body limit, request id, logging and
// metrics. Errors should be written with WriteError. Handlers that stream
// for longer than Options.RequestTimeout can extend their deadline with
// http.NewResponseController(w).SetWriteDeadline. It returns an error
// wrapping ErrRouteConflict for a pattern that conflicts with one already
// registered.
func (s *Server) Handle(pattern string, h http.Handler) (err error) {
	return s.handle(pattern, h, true)
}

// HandleLocal is Handle for routes served only on local listeners (see
// Listener.Local): on the others they do not exist (404). They are for the
// processes of the user who runs the server: the ragmem CLI, `ragmem mcp`.
func (s *Server) HandleLocal(pattern string, h http.Handler) error {
	if err := s.handle(pattern, h, true); err != nil {
		return err
	}
	s.mu.Lock()
	s.localOnly[pattern] = true
	s.mu.Unlock()
	return nil
}

// Routes lists the patterns the server serves, its own and those
// registered with Handle and HandleLocal ("POST /v1/pages", "/mcp"),
// sorted: for a test or a listing that must visit every route.
func (s *Server) Routes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.protected))
	for p := range s.protected {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func (s *Server) handle(pattern string, h http.Handler, protected bool) (err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrRouteConflict, r)
		}
	}()
	s.mux.Handle(pattern, h)
	s.protected[pattern] = protected
	return nil
}

func (s *Server) mustHandle(pattern string, h http.HandlerFunc, protected bool) {
	if err := s.handle(pattern, h, protected); err != nil {
		panic(err) // our own routes never conflict
	}
}

// Engine returns the engine of the request's namespace, opening its store
// if needed. It is for handlers mounted with Handle; the engine stays
// usable until the handler returns.
func (s *Server) Engine(r *http.Request) (*rag.Engine, error) {
	st := stateOf(r)
	if st == nil {
		return nil, errors.New("server: Engine called outside a request served by this server")
	}
	eng, release, err := s.pool.acquire(r.Context(), st.namespace)
	if err != nil {
		return nil, err
	}
	st.mu.Lock()
	st.releases = append(st.releases, release)
	st.mu.Unlock()
	return eng, nil
}

// Namespace returns the namespace of a request ("" for the default one).
func Namespace(r *http.Request) string {
	if st := stateOf(r); st != nil {
		return st.namespace
	}
	return ""
}

// Listener is an address the server answers on.
type Listener struct {
	net.Listener
	// TLS, if set, serves HTTPS on the listener.
	TLS *tls.Config
	// Local marks a listener that only the processes of the user running
	// the server can reach (the data directory owner's Unix socket, whose
	// peers are checked). Its requests are authenticated like any other,
	// but they are not rate limited, may send bodies of up to
	// Options.LocalMaxBodyBytes, run for up to Options.LocalRequestTimeout,
	// and reach the routes registered with HandleLocal.
	Local bool
}

// Run serves on ln until ctx is cancelled, then shuts down gracefully: it
// stops accepting, lets requests in flight finish (up to
// Options.ShutdownTimeout), and closes every store, which finishes the
// queued background indexing. With tlsConfig it serves HTTPS.
func (s *Server) Run(ctx context.Context, ln net.Listener, tlsConfig *tls.Config) error {
	return s.Serve(ctx, Listener{Listener: ln, TLS: tlsConfig})
}

// localKey marks the context of connections accepted on a local listener.
type localKey struct{}

// IsLocal reports whether r came in on a local listener (Listener.Local).
func IsLocal(r *http.Request) bool {
	v, _ := r.Context().Value(localKey{}).(bool)
	return v
}

// Serve is Run on several listeners at once: it serves on each until ctx
// is cancelled or one fails, then shuts them all down gracefully and
// closes every store.
func (s *Server) Serve(ctx context.Context, ls ...Listener) error {
	if len(ls) == 0 {
		return errors.New("server: Serve needs a listener")
	}
	servers := make([]*http.Server, len(ls))
	errc := make(chan error, len(ls))
	for i, l := range ls {
		local := l.Local
		hs := &http.Server{
			Handler:           s,
			ReadHeaderTimeout: s.o.ReadHeaderTimeout,
			ReadTimeout:       s.o.ReadTimeout,
			IdleTimeout:       s.o.IdleTimeout,
			MaxHeaderBytes:    64 << 10,
			ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
			BaseContext: func(net.Listener) context.Context {
				return context.WithValue(context.WithoutCancel(ctx), localKey{}, local)
			},
		}
		if local {
			hs.ReadTimeout = s.o.LocalRequestTimeout // whole files come in one body
		}
		servers[i] = hs
		ln := l.Listener
		if l.TLS != nil {
			ln = tls.NewListener(ln, l.TLS)
		}
		go func() { errc <- hs.Serve(ln) }()
	}
	var serveErr error
	pending := len(servers)
	select {
	case serveErr = <-errc:
		pending--
	case <-ctx.Done():
	}
	s.draining.Store(true)
	q := s.pool.queueTotals()
	s.log.Info("shutting down: finishing requests in flight and queued indexing", "queued", q.Depth)
	sctx, cancel := context.WithTimeout(context.Background(), s.o.ShutdownTimeout)
	var wg sync.WaitGroup
	for _, hs := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := hs.Shutdown(sctx); err != nil {
				s.log.Warn("requests still in flight at the shutdown deadline were cut", "err", err)
				_ = hs.Close()
			}
		}()
	}
	wg.Wait()
	cancel()
	for ; pending > 0; pending-- {
		if err := <-errc; serveErr == nil && !errors.Is(err, http.ErrServerClosed) {
			serveErr = err
		}
	}
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	closeErr := s.Close()
	if serveErr != nil {
		return serveErr
	}
	return closeErr
}

// Close closes every namespace's store, finishing queued indexing first. It
// is safe to call more than once. Run calls it.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.draining.Store(true)
		before := s.pool.queueTotals()
		s.closeErr = s.pool.close()
		after := s.pool.queueTotals()
		s.log.Info("stores closed", "indexedWhileClosing", before.Depth, "jobsDone", after.Done, "jobsFailed", after.Failed+after.Dropped)
	})
	return s.closeErr
}

// reqState is what the middleware learns about a request.
type reqState struct {
	id        string
	route     string
	namespace string
	tokenID   string
	errCode   string
	local     bool // came in on a local listener

	mu       sync.Mutex
	releases []func()
}

type stateKey struct{}

func stateOf(r *http.Request) *reqState {
	st, _ := r.Context().Value(stateKey{}).(*reqState)
	return st
}

// statusWriter records the status and size of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
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
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		if w.status == 0 {
			w.status = http.StatusOK
		}
		f.Flush()
	}
}

// requestID returns a sane client-supplied X-Request-Id or a new one.
func requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); id != "" && len(id) <= 64 {
		ok := true
		for i := 0; i < len(id); i++ {
			c := id[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
				ok = false
				break
			}
		}
		if ok {
			return id
		}
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ServeHTTP implements http.Handler: request id, recovery, logging and
// metrics around the host check, CORS, authentication, limits and routing.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := s.o.Now()
	st := &reqState{id: requestID(r), local: IsLocal(r)}
	r = r.WithContext(context.WithValue(r.Context(), stateKey{}, st))
	sw := &statusWriter{ResponseWriter: w}
	sw.Header().Set("X-Request-Id", st.id)
	h, pattern := s.mux.Handler(r)
	st.route = pattern
	if pattern == "" {
		st.route = "unmatched"
	}
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("handler panicked", "requestId", st.id, "route", st.route, "panic", fmt.Sprint(v))
			if sw.status == 0 {
				WriteError(sw, r, http.StatusInternalServerError, CodeInternal, "internal error")
			}
		}
		st.mu.Lock()
		rel := st.releases
		st.releases = nil
		st.mu.Unlock()
		for _, f := range rel {
			f()
		}
		d := s.o.Now().Sub(start)
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		s.metrics.observe(st.route, r.Method, status, st.errCode, d)
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelError
		}
		s.log.LogAttrs(r.Context(), level, "request",
			slog.String("requestId", st.id), slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.String("route", st.route), slog.Int("status", status), slog.Int64("bytes", sw.bytes),
			slog.Float64("ms", float64(d.Microseconds())/1000), slog.String("namespace", st.namespace),
			slog.String("client", clientAddr(r)), slog.String("token", st.tokenID), slog.String("error", st.errCode))
	}()
	s.serve(sw, r, st, h, pattern)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, st *reqState, h http.Handler, pattern string) {
	if !s.hostAllowed(r.Host) {
		WriteError(w, r, http.StatusForbidden, CodeHostNotAllowed,
			fmt.Sprintf("host %q is not allowed; use http://127.0.0.1 or http://localhost (start the server with --allow-remote to accept other host names)", r.Host))
		return
	}
	if !s.cors(w, r) {
		return // refused, or a preflight that has been answered
	}
	protected, localOnly, known := s.isProtected(pattern)
	hidden := known && localOnly && !st.local // local routes do not exist elsewhere
	if hidden {
		known, protected = false, true
	}
	if !known && strings.HasPrefix(r.URL.Path, "/v1/") {
		protected = true // do not reveal which /v1 routes exist before authentication
	}
	if protected {
		if !s.authenticate(w, r, st) {
			return
		}
		if !s.limitBody(w, r, st) {
			return
		}
		timeout := s.o.RequestTimeout
		if st.local {
			timeout = s.o.LocalRequestTimeout
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		r = r.WithContext(ctx)
	}
	if hidden {
		WriteError(w, r, http.StatusNotFound, CodeNotFound, fmt.Sprintf("no route for %s %s; see /v1/openapi.json", r.Method, r.URL.Path))
		return
	}
	if !known {
		s.notFound(w, r, h)
		return
	}
	// Through the mux again, which sets the path values ({id}).
	s.mux.ServeHTTP(w, r)
}

func (s *Server) isProtected(pattern string) (protected, localOnly, known bool) {
	if pattern == "" {
		return false, false, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.protected[pattern]
	return p, s.localOnly[pattern], ok
}

// notFound turns ServeMux's plain-text 404, 405 and redirects into the
// API's JSON errors (redirects pass through).
func (s *Server) notFound(w http.ResponseWriter, r *http.Request, h http.Handler) {
	cw := &captureWriter{header: http.Header{}}
	h.ServeHTTP(cw, r)
	switch cw.status {
	case http.StatusMethodNotAllowed:
		if a := cw.header.Get("Allow"); a != "" {
			w.Header().Set("Allow", a)
		}
		WriteError(w, r, http.StatusMethodNotAllowed, CodeMethodNotAllowed, fmt.Sprintf("method %s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, cw.header.Get("Allow")))
	case http.StatusMovedPermanently, http.StatusPermanentRedirect, http.StatusTemporaryRedirect, http.StatusFound:
		w.Header().Set("Location", cw.header.Get("Location"))
		w.WriteHeader(cw.status)
	default:
		WriteError(w, r, http.StatusNotFound, CodeNotFound, fmt.Sprintf("no route for %s %s; see /v1/openapi.json", r.Method, r.URL.Path))
	}
}

type captureWriter struct {
	header http.Header
	status int
}

func (c *captureWriter) Header() http.Header { return c.header }
func (c *captureWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
}
func (c *captureWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	return len(b), nil
}

// hostAllowed guards against DNS rebinding: a page on another site whose
// name resolves to 127.0.0.1 must not reach the server.
func (s *Server) hostAllowed(hostport string) bool {
	if s.anyHost {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || s.hosts[host] {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// cors applies the CORS policy and reports whether the request goes on.
func (s *Server) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	h := w.Header()
	h.Add("Vary", "Origin")
	allowed := s.origins[strings.ToLower(origin)]
	preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
	if !allowed {
		if !preflight && sameOrigin(origin, r) {
			return true
		}
		WriteError(w, r, http.StatusForbidden, CodeOriginNotAllowed,
			fmt.Sprintf("origin %q is not allowed; start the server with --allow-origin %s to allow it", origin, origin))
		return false
	}
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Expose-Headers", "X-Request-Id, Retry-After, Location")
	if preflight {
		h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Request-Id, "+NamespaceHeader+", Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-Id")
		h.Set("Access-Control-Max-Age", "600")
		h.Add("Vary", "Access-Control-Request-Method")
		h.Add("Vary", "Access-Control-Request-Headers")
		w.WriteHeader(http.StatusNoContent)
		return false
	}
	return true
}

// sameOrigin reports whether origin is the server's own (the web UI).
func sameOrigin(origin string, r *http.Request) bool {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return strings.EqualFold(origin, scheme+"://"+r.Host)
}

// Failed authentications are limited per remote address to failedAuthRate
// a second (bursts of failedAuthBurst), always: --rate-limit 0 lifts the
// limit of authenticated clients, never this one.
const (
	failedAuthRate  = 1
	failedAuthBurst = 10
)

// failedAuth counts a failed authentication of r's address and reports
// whether it may be answered; past the limit it answers 429 itself.
func (s *Server) failedAuth(w http.ResponseWriter, r *http.Request) bool {
	if IsLocal(r) {
		return true // the user's own process: not limited
	}
	now := s.o.Now()
	for _, l := range []*limiters{s.limits, s.fails} {
		if allowed, wait := l.allow("addr:"+clientAddr(r), now); !allowed {
			s.tooMany(w, r, wait)
			return false
		}
	}
	return true
}

// bearer returns the credentials of an Authorization header with the
// Bearer scheme, whose name is case-insensitive (RFC 9110).
func bearer(auth string) (string, bool) {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(auth), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	cred = strings.TrimSpace(cred)
	return cred, cred != ""
}

// authenticate checks the bearer token (or the web UI's session cookie)
// and the namespace, then the rate limit of the token; failures are
// limited per remote address.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request, st *reqState) bool {
	auth := r.Header.Get("Authorization")
	var tok storedToken
	ok := false
	msg := "missing bearer token: send Authorization: Bearer <token> (the token is in " + tokenFileName + " in the data directory; ragmem token show prints it)"
	if auth != "" {
		if secret, isBearer := bearer(auth); isBearer {
			tok, ok = s.tokens.lookup(secret)
		}
		if !ok {
			msg = "invalid bearer token (it may have been rotated; ragmem token show prints the current one)"
		}
	} else {
		var err error
		tok, ok, err = s.sessionToken(r)
		switch {
		case err != nil:
			msg = err.Error()
		case !ok && hasCookie(r, SessionCookie):
			msg = "the web UI session has ended (the server restarted, or the token was rotated); sign in again"
		case !ok && r.Header.Get(UIHeader) != "":
			msg = "not signed in: open the link ragmem serve printed, or paste the token (ragmem token show)"
		}
	}
	if !ok {
		if !s.failedAuth(w, r) {
			return false
		}
		WriteError(w, r, http.StatusUnauthorized, CodeUnauthorized, msg)
		return false
	}
	st.tokenID = tok.id
	// The user's own processes on a local listener are neither limited nor
	// counted against the token's limit: the limit guards against a
	// runaway extension or web page.
	if !st.local {
		if allowed, wait := s.limits.allow("token:"+tok.id, s.o.Now()); !allowed {
			s.tooMany(w, r, wait)
			return false
		}
	}
	ns := strings.TrimSpace(r.Header.Get(NamespaceHeader))
	switch {
	case ns != "" && !validNamespace(ns):
		WriteError(w, r, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("invalid namespace %q in %s: %s", clip(ns, 80), NamespaceHeader, namespaceRule))
		return false
	case tok.namespace != "" && ns != "" && ns != tok.namespace:
		WriteError(w, r, http.StatusForbidden, CodeForbidden, fmt.Sprintf("this token is bound to namespace %q and cannot use %q", tok.namespace, ns))
		return false
	case tok.namespace != "":
		ns = tok.namespace
	}
	st.namespace = ns
	return true
}

func hasCookie(r *http.Request, name string) bool {
	_, err := r.Cookie(name)
	return err == nil
}

func (s *Server) tooMany(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	secs := int((wait + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	w.Header().Set("Retry-After", fmt.Sprint(secs))
	WriteError(w, r, http.StatusTooManyRequests, CodeRateLimited, fmt.Sprintf("rate limit exceeded; retry in %d s", secs))
}

// bodyInflightWait is how long a request waits for room among the
// request bodies in flight before it is answered 503.
const bodyInflightWait = time.Second

func newBodies(n int64) *semaphore.Weighted {
	if n <= 0 {
		return nil
	}
	return semaphore.NewWeighted(n)
}

// limitBody refuses bodies declared larger than the limit and caps the rest,
// and reserves the body's bytes among those in flight server-wide
// (Options.MaxBodyInflight) until the request is answered.
func (s *Server) limitBody(w http.ResponseWriter, r *http.Request, st *reqState) bool {
	limit := s.o.MaxBodyBytes
	if st.local {
		limit = max(limit, s.o.LocalMaxBodyBytes)
	}
	if r.ContentLength > limit {
		w.Header().Set("Connection", "close")
		WriteError(w, r, http.StatusRequestEntityTooLarge, CodeTooLarge, tooLargeMsg(limit))
		return false
	}
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return true
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	if s.bodies == nil {
		return true
	}
	n := r.ContentLength
	if n < 0 {
		n = limit // a chunked body may grow to the limit
	}
	// A local body larger than the whole allowance takes all of it.
	n = min(n, s.o.MaxBodyInflight)
	ctx, cancel := context.WithTimeout(r.Context(), bodyInflightWait)
	err := s.bodies.Acquire(ctx, n)
	cancel()
	if err != nil {
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Connection", "close")
		WriteError(w, r, http.StatusServiceUnavailable, CodeUnavailable,
			fmt.Sprintf("the server is reading too many large requests at once (at most %d bytes of request bodies, --max-body-inflight); retry shortly", s.o.MaxBodyInflight))
		return false
	}
	s.inflight.Add(n)
	st.mu.Lock()
	st.releases = append(st.releases, func() {
		s.inflight.Add(-n)
		s.bodies.Release(n)
	})
	st.mu.Unlock()
	return true
}

func tooLargeMsg(limit int64) string {
	return fmt.Sprintf("request body is larger than the limit of %d bytes (--max-body)", limit)
}

func clientAddr(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// routes registers the API, the UI and the probes.
func (s *Server) routes() {
	s.mustHandle("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}, false)
	s.mustHandle("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if s.draining.Load() {
			WriteError(w, r, http.StatusServiceUnavailable, CodeUnavailable, "shutting down")
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	}, false)
	prom := promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{})
	s.mustHandle("GET /metrics", prom.ServeHTTP, !s.o.MetricsPublic)
	s.uiRoutes()
	s.apiRoutes()
	if err := s.HandleLocal("PUT "+rag.URLRulesPath, bind(s, http.StatusNoContent, body[index.URLRules], setURLRules)); err != nil {
		panic(err) // our own routes never conflict
	}
}
