package ownerd

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/settings"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/owner"
	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
)

// ServeOptions are what `ragmem serve`, or the background owner `ragmem
// mcp` starts, asks of the owner it becomes.
type ServeOptions struct {
	Dir        string        // the data directory: absolute, and existing
	Background bool          // the background owner: no TCP listener, exits after IdleExit without clients
	IdleExit   time.Duration // with Background
	Addr       string        // the TCP address to listen on (without Background)
	TLS        *tls.Config   // nil: plain HTTP
	Server     *server.Options
	Log        *slog.Logger
	// MCP serves MCP at /mcp on TCP too, read-only with MCPReadOnly.
	MCP, MCPReadOnly bool
	Memories         string // the default namespace's agent-memory directory
	QuotaChunks      int    // per namespace; negative: none
	QuotaBytes       int64  // per namespace; negative: none
	// Ready is called once the owner serves (without Background), to say
	// where; its error stops the owner.
	Ready func(*Run) error
}

// Serve takes the data directory over (see claimForServe) and serves it
// until ctx ends or serving fails; a background owner also stops when it
// is asked to hand over or has had no client for IdleExit. A background
// owner that finds the directory owned already returns nil: it is not
// needed.
func Serve(ctx context.Context, s *settings.Settings, o ServeOptions) error {
	kind := owner.KindServe
	var ln net.Listener
	if o.Background {
		kind = owner.KindDaemon
	} else {
		var err error
		if ln, err = net.Listen("tcp", o.Addr); err != nil { // a busy port fails before anything is taken over
			return err
		}
	}
	closeLn := func() {
		if ln != nil {
			_ = ln.Close()
		}
	}
	claim, succession, err := claimForServe(ctx, s.Stderr, o.Dir, kind)
	if err != nil {
		closeLn()
		if errors.Is(err, ErrOwnerRunning) {
			o.Log.Info("another process owns the data directory already; this background owner is not needed", "dir", o.Dir)
			return nil
		}
		return err
	}
	handover := make(chan struct{})
	cfg := serveConfig(s, o, kind, ln)
	if o.Background {
		var once sync.Once
		cfg.Handover = func() { once.Do(func() { close(handover) }) }
	}
	run, err := Start(ctx, s, claim, cfg)
	// It answers on the socket now (or failed): commands waiting for it
	// join it (or take the store themselves).
	_ = succession.Release()
	if err != nil {
		_ = claim.Release()
		closeLn()
		return err
	}
	if o.Background {
		return run.serveInBackground(ctx, o, handover)
	}
	if err := o.Ready(run); err != nil {
		_ = run.Stop()
		return err
	}
	select {
	case <-ctx.Done():
	case <-run.Done():
	}
	return run.Stop()
}

// serveConfig is the owner serve becomes: every namespace's store shares
// one query cache and has the quotas.
func serveConfig(s *settings.Settings, o ServeOptions, kind owner.Kind, ln net.Listener) Config {
	queryCache := embed.NewQueryCache(nil) // one bound for every namespace's store
	return Config{
		Kind: kind, Log: o.Log, Server: o.Server, TCP: ln, TLSConfig: o.TLS,
		MCPTCP: o.MCP, MCPReadOnly: o.MCPReadOnly, Memories: o.Memories,
		Open: func(ctx context.Context, d string) (*rag.Engine, error) {
			if d == o.Dir { // the default namespace: the store the flags select
				return s.OpenDir(ctx, d, nil, queryCache, o.Log, o.QuotaChunks, o.QuotaBytes)
			}
			return rag.Open(ctx, d, &rag.Options{EmbedderFor: s.EmbedderFor, QueryCache: queryCache, Logger: o.Log, Config: s.RagConfig(),
				MaxChunksPerDocument: s.MaxChunksOption(), QuotaChunks: max(o.QuotaChunks, 0), QuotaBytes: max(o.QuotaBytes, 0)})
		},
	}
}

// serveInBackground is the background owner's life: until ctx ends, a
// client asks it to hand over, it has had no client for the grace period,
// or serving fails.
func (r *Run) serveInBackground(ctx context.Context, o ServeOptions, handover <-chan struct{}) error {
	log := o.Log
	log.Info("background owner started", "dir", o.Dir, "pid", os.Getpid(), "socket", r.ln.Path(), "idleExit", o.IdleExit.String())
	idle := make(chan struct{})
	ictx, icancel := context.WithCancel(ctx)
	go func() {
		if r.pres.WaitIdle(ictx, o.IdleExit, 0) == nil {
			close(idle)
		}
	}()
	select {
	case <-ctx.Done():
	case <-handover:
		log.Info("handing over: finishing requests in flight, then closing the store")
	case <-idle:
		log.Info("no client for the grace period: exiting", "grace", o.IdleExit.String())
	case <-r.Done():
	}
	icancel()
	err := r.Stop()
	log.Info("background owner stopped")
	return err
}

// Info is what the owner announces (its HTTP address among it).
func (r *Run) Info() owner.Info { return r.claim.Info() }

// Server is the HTTP server of the owner.
func (r *Run) Server() *server.Server { return r.srv }

// Engine is the default namespace's engine.
func (r *Run) Engine() *rag.Engine { return r.eng }

// Token is the main API token, and whether this start created it.
func (r *Run) Token() (token string, created bool) { return r.token, r.tokenCreated }

// SocketPath is the owner socket's path.
func (r *Run) SocketPath() string { return r.ln.Path() }

// Log is the owner's logger.
func (r *Run) Log() *slog.Logger { return r.log }
