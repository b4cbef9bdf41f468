package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/extract"
	"github.com/ragmem/ragmem/internal/owner"
	"github.com/ragmem/ragmem/internal/perm"
	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
)

// serveFlags are the flags of ragmem serve.
type serveFlags struct {
	addr            string
	origins         []string
	allowRemote     bool
	insecureRemote  bool
	tlsCert         string
	tlsKey          string
	maxBody         string
	maxBodyInflight string
	rateLimit       float64
	rateBurst       int
	maxNamespaces   int
	logFormat       string
	shutdownTimeout time.Duration
	mcp             bool
	mcpReadOnly     bool
	quotaChunks     int
	quotaBytes      string
	extractNodes    int
	extractTimeout  time.Duration
	metricsPublic   bool
	memories        string
	background      bool          // a background owner started by ragmem mcp
	idleExit        time.Duration // a background owner exits after this long without clients
}

func newServeCmd(g *globals) *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API and web UI for browser extensions (loopback only by default)",
		Long: "Serve the memory over HTTP: the JSON API under /v1 (bearer token required), the web UI at /,\n" +
			"/healthz, /readyz and /metrics. The first start creates the API token and prints it once.\n" +
			"SIGINT or SIGTERM stops accepting requests, finishes queued indexing and exits.",
		Example: "  ragmem serve\n" +
			"  ragmem serve --allow-origin chrome-extension://abcdefghijklmnopabcdefghijklmnop\n" +
			"  ragmem serve --addr 0.0.0.0:7437 --allow-remote --tls-cert cert.pem --tls-key key.pem",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runServe(cmd.Context(), g, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", server.DefaultAddr, "address to listen on (host:port; port 0 picks a free one)")
	fl.StringArrayVar(&f.origins, "allow-origin", nil, "origin allowed to call the API from a browser, e.g. chrome-extension://<id> or moz-extension://<uuid> (repeatable)")
	fl.BoolVar(&f.allowRemote, "allow-remote", false, "allow a non-loopback --addr (needs --tls-cert/--tls-key or --insecure-remote)")
	fl.BoolVar(&f.insecureRemote, "insecure-remote", false, "with --allow-remote: serve plain HTTP to the network, token and memory unencrypted")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "TLS certificate file (PEM) to serve HTTPS")
	fl.StringVar(&f.tlsKey, "tls-key", "", "TLS private key file (PEM)")
	fl.StringVar(&f.maxBody, "max-body", "10MiB", "largest request body accepted (bytes, or with KiB/MiB/GiB)")
	fl.StringVar(&f.maxBodyInflight, "max-body-inflight", "64MiB", "most request-body bytes of all requests in flight; past it, 503 with Retry-After (0: no bound)")
	fl.Float64Var(&f.rateLimit, "rate-limit", server.DefaultRateLimit, "requests per second allowed per client (0 disables; failed logins stay limited)")
	fl.IntVar(&f.rateBurst, "rate-burst", server.DefaultRateBurst, "requests a client may make in a burst")
	fl.IntVar(&f.maxNamespaces, "max-namespaces", server.DefaultMaxNamespaces, "namespace stores open at once")
	fl.StringVar(&f.logFormat, "log-format", "text", "log format on stderr: text or json")
	fl.DurationVar(&f.shutdownTimeout, "shutdown-timeout", server.DefaultShutdownTimeout, "how long to wait for requests in flight on shutdown")
	fl.BoolVar(&f.mcp, "mcp", false, "also serve MCP over streamable HTTP at /mcp, behind the same token (and namespaces)")
	fl.BoolVar(&f.mcpReadOnly, "mcp-read-only", false, "with --mcp: offer only the tools that read the memory")
	fl.IntVar(&f.quotaChunks, "quota-chunks", server.DefaultQuotaChunks, "most chunks a namespace may hold (0: no quota)")
	fl.StringVar(&f.quotaBytes, "quota-bytes", "4GiB", "most bytes a namespace's store may take on disk (0: no quota)")
	fl.BoolVar(&f.metricsPublic, "metrics-public", false, "serve /metrics without the bearer token (it needs the token by default)")
	fl.IntVar(&f.extractNodes, "extract-max-nodes", extract.DefaultMaxNodes, "most elements and runs of text a page may make when its HTML is parsed")
	fl.DurationVar(&f.extractTimeout, "extract-timeout", extract.DefaultTimeout, "longest the extraction of one page may take")
	fl.StringVar(&f.memories, "memories", "", "agent-memory directory of the default namespace (default $RAGMEM_MEMORIES, else <data dir>/memories)")
	fl.BoolVar(&f.background, "background", false, "run as the background owner ragmem mcp starts: no HTTP listener, exit after --idle-exit without clients")
	fl.DurationVar(&f.idleExit, "idle-exit", defaultOwnerGrace, "with --background: exit after this long without clients")
	_ = fl.MarkHidden("background")
	_ = fl.MarkHidden("idle-exit")
	return cmd
}

// parseBytes reads "10MiB", "512KiB", "1GiB", "1048576" for a flag.
func parseBytes(flag, s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.m
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("%s %q: want a positive size such as 10MiB", flag, s)
	}
	return n * mult, nil
}

// isLoopback reports whether a listen host is a loopback address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

func (f *serveFlags) check() (*tls.Config, error) {
	host, _, err := net.SplitHostPort(f.addr)
	if err != nil {
		return nil, fmt.Errorf("--addr %q: %v (want host:port, e.g. 127.0.0.1:7437)", f.addr, err)
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return nil, errors.New("give both --tls-cert and --tls-key")
	}
	if !isLoopback(host) {
		if !f.allowRemote {
			return nil, fmt.Errorf("refusing to listen on %s, which is not a loopback address: the memory would be reachable from the network. "+
				"Use --addr 127.0.0.1:PORT, or add --allow-remote with --tls-cert/--tls-key (or --insecure-remote)", f.addr)
		}
		if f.tlsCert == "" && !f.insecureRemote {
			return nil, errors.New("--allow-remote needs TLS (--tls-cert and --tls-key) or the explicit --insecure-remote")
		}
	}
	if f.logFormat != "text" && f.logFormat != "json" {
		return nil, fmt.Errorf("--log-format %q: want text or json", f.logFormat)
	}
	if f.tlsCert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
	if err != nil {
		return nil, fmt.Errorf("load TLS certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

func (f *serveFlags) logger(w io.Writer, verbose bool) *slog.Logger {
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	return f.loggerAt(w, level)
}

func (f *serveFlags) loggerAt(w io.Writer, level slog.Level) *slog.Logger {
	o := &slog.HandlerOptions{Level: level}
	if f.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, o))
	}
	return slog.New(slog.NewTextHandler(w, o))
}

func runServe(ctx context.Context, g *globals, f *serveFlags) error {
	var tlsConfig *tls.Config
	if !f.background {
		var err error
		if tlsConfig, err = f.check(); err != nil {
			return err
		}
	} else if f.logFormat != "text" && f.logFormat != "json" {
		return fmt.Errorf("--log-format %q: want text or json", f.logFormat)
	}
	maxBody, err := parseBytes("--max-body", f.maxBody)
	if err != nil {
		return err
	}
	maxBodyInflight := int64(-1)
	if strings.TrimSpace(f.maxBodyInflight) != "0" {
		if maxBodyInflight, err = parseBytes("--max-body-inflight", f.maxBodyInflight); err != nil {
			return err
		}
	}
	quotaBytes := int64(-1)
	if strings.TrimSpace(f.quotaBytes) != "0" {
		if quotaBytes, err = parseBytes("--quota-bytes", f.quotaBytes); err != nil {
			return err
		}
	}
	quotaChunks := f.quotaChunks
	if quotaChunks <= 0 {
		quotaChunks = -1
	}
	if f.extractNodes <= 0 || f.extractTimeout <= 0 {
		return errors.New("--extract-max-nodes and --extract-timeout must be positive")
	}
	dir, err := g.dataDir()
	if err != nil {
		return err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	if err := perm.BeforeCreate(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// Fail now on a bad --embedder, $RAGMEM_EMBEDDER or config file; each
	// store's embedder is built when the store is opened, from these and
	// what the store records.
	if _, err := g.resolveEmbedder(nil); err != nil {
		return err
	}
	memories, err := g.memoriesDir(f.memories)
	if err != nil {
		return err
	}
	if memories, err = filepath.Abs(memories); err != nil {
		return err
	}
	queryCache := embed.NewQueryCache(nil) // one bound for every namespace's store
	log := f.logger(g.stderr, g.verbose)
	rate := f.rateLimit
	if rate <= 0 {
		rate = -1
	}
	opts := &server.Options{
		MetricsPublic:   f.metricsPublic,
		ExtractMaxNodes: f.extractNodes,
		ExtractTimeout:  f.extractTimeout,
		AllowOrigins:    f.origins,
		MaxBodyBytes:    maxBody,
		MaxBodyInflight: maxBodyInflight,
		RateLimit:       rate,
		RateBurst:       f.rateBurst,
		MaxNamespaces:   f.maxNamespaces,
		ShutdownTimeout: f.shutdownTimeout,
	}
	if f.allowRemote {
		opts.AllowedHosts = []string{"*"}
	}
	if f.background && !g.verbose {
		// A background owner logs what goes wrong, not every request:
		// its log is a file nobody watches.
		opts.Logger = f.loggerAt(g.stderr, slog.LevelWarn)
	}
	kind := owner.KindServe
	var ln net.Listener
	if f.background {
		kind = owner.KindDaemon
	} else if ln, err = net.Listen("tcp", f.addr); err != nil { // a busy port fails before anything is taken over
		return err
	}
	closeLn := func() {
		if ln != nil {
			_ = ln.Close()
		}
	}
	claim, succession, err := g.claimForServe(ctx, dir, kind)
	if err != nil {
		closeLn()
		if errors.Is(err, errOwnerRunning) {
			log.Info("another process owns the data directory already; this background owner is not needed", "dir", dir)
			return nil
		}
		return err
	}
	handover := make(chan struct{})
	cfg := ownerConfig{
		kind: kind, log: log, server: opts, tcp: ln, tlsConfig: tlsConfig,
		mcpTCP: f.mcp, mcpReadOnly: f.mcpReadOnly, memories: memories,
		open: func(ctx context.Context, d string) (*rag.Engine, error) {
			if d == dir { // the default namespace: the store the flags select
				return g.openDir(ctx, d, nil, queryCache, log, quotaChunks, quotaBytes)
			}
			return rag.Open(ctx, d, &rag.Options{EmbedderFor: g.embedderFor, QueryCache: queryCache, Logger: log, Config: g.ragConfig(),
				MaxChunksPerDocument: g.maxChunksOption(), QuotaChunks: max(quotaChunks, 0), QuotaBytes: max(quotaBytes, 0)})
		},
	}
	if f.background {
		var once sync.Once
		cfg.handover = func() { once.Do(func() { close(handover) }) }
	}
	run, err := g.startOwner(ctx, claim, cfg)
	// It answers on the socket now (or failed): commands waiting for it
	// join it (or take the store themselves).
	_ = succession.Release()
	if err != nil {
		_ = claim.Release()
		closeLn()
		return err
	}
	if f.background {
		log.Info("background owner started", "dir", dir, "pid", os.Getpid(), "socket", run.ln.Path(), "idleExit", f.idleExit.String())
		idle := make(chan struct{})
		ictx, icancel := context.WithCancel(ctx)
		go func() {
			if run.pres.WaitIdle(ictx, f.idleExit, 0) == nil {
				close(idle)
			}
		}()
		select {
		case <-ctx.Done():
		case <-handover:
			log.Info("handing over: finishing requests in flight, then closing the store")
		case <-idle:
			log.Info("no client for the grace period: exiting", "grace", f.idleExit.String())
		case <-run.done():
		}
		icancel()
		err := run.stop()
		log.Info("background owner stopped")
		return err
	}
	if err := printServeBanner(g, f, dir, run, tlsConfig != nil); err != nil {
		_ = run.stop()
		return err
	}
	select {
	case <-ctx.Done():
	case <-run.done():
	}
	err = run.stop()
	fmt.Fprintln(g.stdout, "ragmem: stopped")
	return err
}

// errOwnerRunning: a background owner found the data directory owned.
var errOwnerRunning = errors.New("the data directory has an owner")

// maxHandovers bounds how often serve asks owners to hand over before it
// gives up (another process keeps taking the store back: with the
// succession reserved only a ragmem that does not know reservations does).
const maxHandovers = 3

// handoverWait bounds how long `ragmem serve` waits for an owner that
// agreed to hand over to let go (it finishes the requests in flight
// first).
const handoverWait = 2 * time.Minute

// reserveWait bounds how long `ragmem serve` waits for another process
// that is taking the data directory over (a background owner starting)
// before it asks that one to hand over in turn.
const reserveWait = 2 * time.Minute

// claimForServe takes the ownership of dir for `ragmem serve`: at once when
// no process owns it; from a background owner or a ragmem command that
// owns it, by asking it to hand over (it finishes what it is doing and
// lets go; its clients follow). Another `ragmem serve` is an error. A
// background owner (kind daemon) takes the store over from a ragmem
// command the same way, and returns errOwnerRunning when it finds a
// serve, another background owner, or another process taking the store
// over: it is not needed.
//
// It first reserves the succession (see owner.Reserve), so that commands
// started meanwhile, in a loop or not, join the owner and then this
// process instead of taking the store back; the caller releases the
// reservation once it answers on the owner socket.
func (g *globals) claimForServe(ctx context.Context, dir string, kind owner.Kind) (*owner.Claim, *owner.Reservation, error) {
	res, err := owner.Reserve(ctx, dir, 0)
	if errors.Is(err, owner.ErrReserved) {
		if kind == owner.KindDaemon {
			return nil, nil, errOwnerRunning
		}
		fmt.Fprintf(g.stderr, "ragmem: waiting for another process that is taking %s over (%v)\n", dir, err)
		res, err = owner.Reserve(ctx, dir, reserveWait)
	}
	if err != nil {
		return nil, nil, err
	}
	claim, err := g.claimReserved(ctx, dir, kind, res)
	if err != nil {
		_ = res.Release()
		return nil, nil, err
	}
	return claim, res, nil
}

// claimReserved is claimForServe once the succession is reserved.
func (g *globals) claimReserved(ctx context.Context, dir string, kind owner.Kind, res *owner.Reservation) (*owner.Claim, error) {
	asked := 0
	var (
		leaving    owner.Info // the owner last asked to hand over
		leavingEnd time.Time  // when to give up waiting for it
	)
	for {
		info, claim, err := owner.Join(ctx, dir, &owner.JoinOptions{Successor: res, Waiting: func(pid int) {
			if kind == owner.KindServe && asked == 0 {
				fmt.Fprintf(g.stderr, "ragmem: waiting for pid %d, which is opening the store in %s\n", pid, dir)
			}
		}})
		if err != nil {
			return nil, err
		}
		if claim != nil {
			return claim, nil
		}
		if info.Kind == owner.KindServe {
			if kind == owner.KindDaemon {
				return nil, errOwnerRunning
			}
			return nil, fmt.Errorf("%s is already served by pid %d (ragmem serve since %s%s); stop it first, or use it: every ragmem command on this directory goes through it",
				dir, info.PID, info.Since.Local().Format(time.RFC3339), httpSuffix(info.HTTP))
		}
		if kind == owner.KindDaemon && info.Kind != owner.KindCLI {
			return nil, errOwnerRunning
		}
		if asked > 0 && info.PID == leaving.PID && info.Since.Equal(leaving.Since) {
			// It is still finishing what it was doing before it lets go:
			// asking again would only count it twice.
			if time.Now().After(leavingEnd) {
				return nil, fmt.Errorf("%s: pid %d (%s) agreed to hand the store over but still holds it after %s; stop it first", dir, info.PID, describeKind(info.Kind, info.Command), handoverWait)
			}
			t := time.NewTimer(20 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
			continue
		}
		if asked >= maxHandovers {
			return nil, fmt.Errorf("%s: pid %d (%s) took the store back after %d handovers; stop it first", dir, info.PID, describeKind(info.Kind, info.Command), asked)
		}
		c, err := owner.NewClient(dir, info, nil)
		if err != nil {
			return nil, err
		}
		err = c.Handover(ctx)
		c.Close()
		if err != nil {
			if errors.Is(err, owner.ErrGone) {
				continue // it went away by itself: look again
			}
			return nil, fmt.Errorf("asking pid %d (%s) to hand %s over: %w", info.PID, describeKind(info.Kind, info.Command), dir, err)
		}
		asked++
		leaving, leavingEnd = info, time.Now().Add(handoverWait)
		to := "this server"
		if kind == owner.KindDaemon {
			to = "this background owner"
		}
		fmt.Fprintf(g.stderr, "ragmem: pid %d (%s) is handing %s over to %s; its clients follow\n", info.PID, describeKind(info.Kind, info.Command), dir, to)
	}
}

func httpSuffix(u string) string {
	if u == "" {
		return ""
	}
	return ", on " + u
}

// printServeBanner says where serve listens and how to reach it.
func printServeBanner(g *globals, f *serveFlags, dir string, run *ownerRun, https bool) error {
	out := g.stdout
	base := run.claim.Info().HTTP
	fmt.Fprintf(out, "ragmem: serving %s on %s\n", dir, base)
	login, err := run.srv.LoginURL(base, server.DefaultLoginTTL)
	if err != nil {
		return err
	}
	if run.tokenCreated {
		fmt.Fprintf(out, "ragmem: created the API token, stored in %s (mode 0600). It is printed only on this first start:\n\n    %s\n\n", server.TokenPath(dir), run.token)
		fmt.Fprintf(out, "  Browser extension: in its options, set the server to %s and paste the token;\n", base)
		fmt.Fprintf(out, "  then restart ragmem serve with --allow-origin chrome-extension://<its id> (see docs/server.md).\n")
		fmt.Fprintf(out, "  Print it again with 'ragmem token show'; replace it with 'ragmem token rotate'.\n")
	}
	fmt.Fprintf(out, "ragmem: web UI: %s\n", login)
	fmt.Fprintf(out, "  (this link logs one browser in, once, within %s; the token itself never goes in a URL:\n", server.DefaultLoginTTL)
	fmt.Fprintf(out, "  afterwards open %s/ and paste the token, or restart the server for a new link)\n", base)
	fmt.Fprintf(out, "ragmem: other ragmem commands on %s go through this server (socket %s)\n", dir, run.ln.Path())
	if f.mcp {
		fmt.Fprintf(out, "ragmem: MCP (streamable HTTP) at %s/mcp, with the same bearer token\n", base)
	}
	if len(f.origins) > 0 {
		fmt.Fprintf(out, "ragmem: browser origins allowed: %s\n", strings.Join(f.origins, ", "))
	}
	if f.allowRemote && !https {
		run.log.Warn("serving plain HTTP to the network (--insecure-remote): the token and the memory travel unencrypted")
	}
	return nil
}

func displayAddr(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	host := ta.IP.String()
	if ta.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, strconv.Itoa(ta.Port))
}

func newTokenCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Show, list or rotate the API tokens of ragmem serve",
	}
	var ns string
	rotate := &cobra.Command{
		Use:   "rotate",
		Short: "Replace the API token (or a namespace's token) with a new one",
		Long: "Replace the main API token, or with --namespace the token bound to that namespace (created if\n" +
			"there is none). A running server accepts the new token and refuses the old one within a second.\n" +
			"A namespace token reaches only its namespace: give it to a user whose memory must stay apart.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := g.dataDir()
			if err != nil {
				return err
			}
			tok, err := server.RotateToken(dir, ns)
			if err != nil {
				return err
			}
			what := "main token"
			if ns != "" {
				what = fmt.Sprintf("token of namespace %q", ns)
			}
			fmt.Fprintf(g.stdout, "%s\n", tok)
			fmt.Fprintf(g.stderr, "ragmem: new %s stored in %s; the old one stops working within a second\n", what, server.TokenPath(dir))
			return nil
		},
	}
	rotate.Flags().StringVar(&ns, "namespace", "", "rotate (or create) the token bound to this namespace")
	var showNS string
	show := &cobra.Command{
		Use:   "show",
		Short: "Print the API token (or a namespace's token)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := g.dataDir()
			if err != nil {
				return err
			}
			toks, err := server.Tokens(dir)
			if err != nil {
				return err
			}
			for _, t := range toks {
				if t.Namespace == showNS {
					fmt.Fprintln(g.stdout, t.Secret)
					return nil
				}
			}
			if showNS != "" {
				return fmt.Errorf("no token for namespace %q; create one with ragmem token rotate --namespace %s", showNS, showNS)
			}
			return fmt.Errorf("no API token in %s yet; start ragmem serve once or run ragmem token rotate", dir)
		},
	}
	show.Flags().StringVar(&showNS, "namespace", "", "print the token bound to this namespace")
	list := &cobra.Command{
		Use:   "list",
		Short: "List the tokens: namespace, creation time and fingerprint (as in the server's logs), not the secrets",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := g.dataDir()
			if err != nil {
				return err
			}
			toks, err := server.Tokens(dir)
			if err != nil {
				return err
			}
			if len(toks) == 0 {
				fmt.Fprintln(g.stdout, "no tokens")
				return nil
			}
			for _, t := range toks {
				ns := t.Namespace
				if ns == "" {
					ns = "(main: any namespace)"
				}
				fmt.Fprintf(g.stdout, "%-28s %s  %s\n", ns, t.Created.Format(time.RFC3339), t.Fingerprint())
			}
			return nil
		},
	}
	cmd.AddCommand(rotate, show, list)
	return cmd
}
