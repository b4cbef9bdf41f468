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
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/ownerd"
	"github.com/ragmem/ragmem/cmd/ragmem/internal/units"
	"github.com/ragmem/ragmem/internal/extract"
	"github.com/ragmem/ragmem/internal/perm"
	"github.com/ragmem/ragmem/internal/server"
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
	fl.DurationVar(&f.idleExit, "idle-exit", ownerd.DefaultGrace, "with --background: exit after this long without clients")
	_ = fl.MarkHidden("background")
	_ = fl.MarkHidden("idle-exit")
	return cmd
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

// sizes reads --max-body, --max-body-inflight and --quota-bytes (the last
// two -1 for 0: no bound).
func (f *serveFlags) sizes() (maxBody, maxBodyInflight, quotaBytes int64, err error) {
	if maxBody, err = units.ParseBytes("--max-body", f.maxBody); err != nil {
		return 0, 0, 0, err
	}
	maxBodyInflight, quotaBytes = -1, -1
	if strings.TrimSpace(f.maxBodyInflight) != "0" {
		if maxBodyInflight, err = units.ParseBytes("--max-body-inflight", f.maxBodyInflight); err != nil {
			return 0, 0, 0, err
		}
	}
	if strings.TrimSpace(f.quotaBytes) != "0" {
		if quotaBytes, err = units.ParseBytes("--quota-bytes", f.quotaBytes); err != nil {
			return 0, 0, 0, err
		}
	}
	return maxBody, maxBodyInflight, quotaBytes, nil
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
	maxBody, maxBodyInflight, quotaBytes, err := f.sizes()
	if err != nil {
		return err
	}
	quotaChunks := f.quotaChunks
	if quotaChunks <= 0 {
		quotaChunks = -1
	}
	if f.extractNodes <= 0 || f.extractTimeout <= 0 {
		return errors.New("--extract-max-nodes and --extract-timeout must be positive")
	}
	dir, err := g.DataDir()
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
	if _, err := g.ResolveEmbedder(nil); err != nil {
		return err
	}
	memories, err := g.MemoriesDir(f.memories)
	if err != nil {
		return err
	}
	if memories, err = filepath.Abs(memories); err != nil {
		return err
	}
	log := f.logger(g.Stderr, g.Verbose)
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
	if f.background && !g.Verbose {
		// A background owner logs what goes wrong, not every request:
		// its log is a file nobody watches.
		opts.Logger = f.loggerAt(g.Stderr, slog.LevelWarn)
	}
	served := false // the banner was printed: serve says when it stops
	err = ownerd.Serve(ctx, g.Settings, ownerd.ServeOptions{
		Dir: dir, Background: f.background, IdleExit: f.idleExit, Addr: f.addr, TLS: tlsConfig,
		Server: opts, Log: log, MCP: f.mcp, MCPReadOnly: f.mcpReadOnly, Memories: memories,
		QuotaChunks: quotaChunks, QuotaBytes: quotaBytes,
		Ready: func(run *ownerd.Run) error {
			if err := printServeBanner(g, f, dir, run, tlsConfig != nil); err != nil {
				return err
			}
			served = true
			return nil
		},
	})
	if served {
		fmt.Fprintln(g.stdout, "ragmem: stopped")
	}
	return err
}

// printServeBanner says where serve listens and how to reach it.
func printServeBanner(g *globals, f *serveFlags, dir string, run *ownerd.Run, https bool) error {
	out := g.stdout
	base := run.Info().HTTP
	token, created := run.Token()
	fmt.Fprintf(out, "ragmem: serving %s on %s\n", dir, base)
	login, err := run.Server().LoginURL(base, server.DefaultLoginTTL)
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintf(out, "ragmem: created the API token, stored in %s (mode 0600). It is printed only on this first start:\n\n    %s\n\n", server.TokenPath(dir), token)
		fmt.Fprintf(out, "  Browser extension: in its options, set the server to %s and paste the token;\n", base)
		fmt.Fprintf(out, "  then restart ragmem serve with --allow-origin chrome-extension://<its id> (see docs/server.md).\n")
		fmt.Fprintf(out, "  Print it again with 'ragmem token show'; replace it with 'ragmem token rotate'.\n")
	}
	fmt.Fprintf(out, "ragmem: web UI: %s\n", login)
	fmt.Fprintf(out, "  (this link logs one browser in, once, within %s; the token itself never goes in a URL:\n", server.DefaultLoginTTL)
	fmt.Fprintf(out, "  afterwards open %s/ and paste the token, or restart the server for a new link)\n", base)
	fmt.Fprintf(out, "ragmem: other ragmem commands on %s go through this server (socket %s)\n", dir, run.SocketPath())
	if f.mcp {
		fmt.Fprintf(out, "ragmem: MCP (streamable HTTP) at %s/mcp, with the same bearer token\n", base)
	}
	if len(f.origins) > 0 {
		fmt.Fprintf(out, "ragmem: browser origins allowed: %s\n", strings.Join(f.origins, ", "))
	}
	if f.allowRemote && !https {
		run.Log().Warn("serving plain HTTP to the network (--insecure-remote): the token and the memory travel unencrypted")
	}
	return nil
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
			dir, err := g.DataDir()
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
			fmt.Fprintf(g.Stderr, "ragmem: new %s stored in %s; the old one stops working within a second\n", what, server.TokenPath(dir))
			return nil
		},
	}
	rotate.Flags().StringVar(&ns, "namespace", "", "rotate (or create) the token bound to this namespace")
	var showNS string
	show := &cobra.Command{
		Use:   "show",
		Short: "Print the API token (or a namespace's token)",
		Args:  cobra.NoArgs,
		RunE: g.onTokens(func(dir string, toks []server.Token) error {
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
		}),
	}
	show.Flags().StringVar(&showNS, "namespace", "", "print the token bound to this namespace")
	list := &cobra.Command{
		Use:   "list",
		Short: "List the tokens: namespace, creation time and fingerprint (as in the server's logs), not the secrets",
		Args:  cobra.NoArgs,
		RunE: g.onTokens(func(_ string, toks []server.Token) error {
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
		}),
	}
	cmd.AddCommand(rotate, show, list)
	return cmd
}

// onTokens is a token command's RunE: fn gets the data directory and its
// tokens.
func (g *globals) onTokens(fn func(dir string, toks []server.Token) error) func(*cobra.Command, []string) error {
	return func(*cobra.Command, []string) error {
		dir, err := g.DataDir()
		if err != nil {
			return err
		}
		toks, err := server.Tokens(dir)
		if err != nil {
			return err
		}
		return fn(dir, toks)
	}
}
