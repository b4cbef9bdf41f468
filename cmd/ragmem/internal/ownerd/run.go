// Package ownerd is this process as the owner of a data directory, or as
// its client: ragmem's commands hold a Store (the engine when this process
// owns the directory, the owner's client otherwise), serve and the
// background owner become the owner (Serve), and the owner serves the
// HTTP API, the agent memories, MCP and its own routes on its socket.
package ownerd

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/settings"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/memory"
	"github.com/ragmem/ragmem/internal/memory/memhttp"
	"github.com/ragmem/ragmem/internal/owner"
	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
)

// DefaultGrace is how long a background owner stays without clients
// before it exits: long enough that the next command, or an MCP client
// restarted, finds the store open; short enough not to hold its memory
// for nothing.
const DefaultGrace = 2 * time.Minute

// Config describes the owner this process becomes.
type Config struct {
	Kind    owner.Kind
	Command string       // a cli owner's command line, for status
	Log     *slog.Logger // default slog.Default()
	// Server configures the HTTP server (serve's flags); nil: defaults,
	// with Open from Open below.
	Server *server.Options
	// Open opens a namespace's store; default the settings' Open for the
	// data directory and rag.Open with the resolved embedder for namespaces.
	Open server.OpenFunc
	// TCP, if set, is `ragmem serve`'s HTTP listener, served next to the
	// socket.
	TCP       net.Listener
	TLSConfig *tls.Config
	// MCPTCP serves MCP at /mcp on TCP too (serve --mcp), read-only with
	// MCPReadOnly. On the socket /mcp is always served (read-only when the
	// request says readOnly=1).
	MCPTCP, MCPReadOnly bool
	// Memories is the default namespace's agent-memory directory.
	Memories string
	// Handover is called when a client asks this owner to hand over; nil
	// refuses (serve).
	Handover func()
}

// Run is this process acting as the owner of its data directory: the
// HTTP API over the store, on the owner's socket (and, for serve, on TCP).
// It is safe for concurrent use.
type Run struct {
	kind  owner.Kind
	dir   string
	claim *owner.Claim
	srv   *server.Server
	ln    *owner.Listener
	pres  *owner.Presence
	eng   *rag.Engine // the default namespace's engine
	log   *slog.Logger

	token        string // the main API token
	tokenCreated bool   // this start created it
	memories     string // the default namespace's agent-memory directory
	stores       *memory.Stores

	cancel   context.CancelFunc
	finished chan struct{} // closed when serving ends
	serveErr error         // why, once finished is closed

	handoverOnce sync.Once
	handover     func()
	handingOver  atomic.Bool

	stopOnce sync.Once
	stopErr  error
}

// Start makes this process the owner of the data directory it has
// claimed: it opens the store, mounts the API, the agent memories, MCP and
// the owner's routes, listens on the socket (announcing itself in the owner
// file) and serves until Stop. On error the claim is left to the caller.
func Start(ctx context.Context, s *settings.Settings, claim *owner.Claim, cfg Config) (*Run, error) {
	dir := claim.Dir()
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	for _, n := range claim.Notes() {
		log.Info(n)
	}
	token, created, err := server.EnsureToken(dir)
	if err != nil {
		return nil, err
	}
	var so server.Options
	if cfg.Server != nil {
		so = *cfg.Server
	}
	if so.Logger == nil {
		so.Logger = log
	}
	open := cfg.Open
	if open == nil {
		open = func(ctx context.Context, d string) (*rag.Engine, error) {
			if d == dir {
				return s.Open(ctx)
			}
			return rag.Open(ctx, d, &rag.Options{EmbedderFor: s.EmbedderFor, Logger: log, Config: s.RagConfig()})
		}
	}
	var (
		mu     sync.Mutex
		defEng *rag.Engine
	)
	so.Open = func(ctx context.Context, d string) (*rag.Engine, error) {
		e, err := open(ctx, d)
		if err == nil && d == dir {
			mu.Lock()
			defEng = e
			mu.Unlock()
		}
		return e, err
	}
	srv, err := server.New(ctx, dir, &so) // opens the default namespace's store
	if err != nil {
		return nil, err
	}
	r := &Run{kind: cfg.Kind, dir: dir, claim: claim, srv: srv, log: log, handover: cfg.Handover, token: token, tokenCreated: created, memories: cfg.Memories}
	mu.Lock()
	r.eng = defEng
	mu.Unlock()
	fail := func(err error) (*Run, error) {
		_ = claim.Withdraw()
		_ = srv.Close()
		return nil, err
	}

	if err := r.mountMemories(s, cfg); err != nil {
		return fail(err)
	}
	if err := r.listen(cfg); err != nil {
		return fail(err)
	}

	listeners := []server.Listener{{Listener: r.ln, Local: true}}
	if cfg.TCP != nil {
		l := server.Listener{Listener: cfg.TCP}
		l.TLS = cfg.TLSConfig
		listeners = append(listeners, l)
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	r.finished = make(chan struct{})
	go func() {
		r.serveErr = srv.Serve(sctx, listeners...)
		close(r.finished)
	}()
	return r, nil
}

// mountMemories mounts the agent memories' API and MCP. Agent memories
// live in each namespace's directory, under memories/; the default
// namespace's are the configured ones.
func (r *Run) mountMemories(s *settings.Settings, cfg Config) error {
	srv, dir := r.srv, r.dir
	stores := memory.NewStores(&memory.Options{Logger: r.log, LLM: s.ChatLLM()}) // the chat model also judges restatements and contradictions
	r.stores = stores
	memoriesOf := func(r *http.Request, eng *rag.Engine) (*memory.Store, error) {
		d := filepath.Join(server.NamespaceDir(dir, server.Namespace(r)), "memories")
		if server.Namespace(r) == "" && cfg.Memories != "" {
			d = cfg.Memories
		}
		return stores.Get(r.Context(), d, eng.Store())
	}
	mem := memhttp.New(func(r *http.Request) (*memory.Store, error) {
		eng, err := srv.Engine(r)
		if err != nil {
			return nil, err
		}
		return memoriesOf(r, eng)
	}, &memhttp.Options{WriteError: server.WriteError, Fail: srv.Fail, ShowPaths: server.IsLocal, Logger: r.log, LLM: s.ChatLLM()})
	for _, p := range []string{memhttp.DefaultPrefix, memhttp.DefaultPrefix + "/"} {
		if err := srv.Handle(p, mem); err != nil {
			return err
		}
	}
	return srv.Handle("/mcp", newMCPMount(srv, cfg.MCPTCP, cfg.MCPReadOnly, s.ChatLLM(), memoriesOf))
}

// listen listens on the owner socket, announcing this owner in the owner
// file, and mounts the owner's own routes (local listeners only).
func (r *Run) listen(cfg Config) error {
	info := owner.Info{Kind: cfg.Kind, Command: cfg.Command}
	if cfg.TCP != nil {
		info.HTTP = "http://" + displayAddr(cfg.TCP.Addr())
		if cfg.TLSConfig != nil {
			info.HTTP = "https://" + displayAddr(cfg.TCP.Addr())
		}
	}
	ln, err := r.claim.Listen(info)
	if err != nil {
		return err
	}
	ln.OnRefuse(func(uid int) {
		r.log.Warn("refused a connection on the owner socket from another user's process", "uid", uid)
	})
	r.ln = ln
	r.pres = owner.NewPresence(ln)
	ownerAPI := r.pres.Handler(r.status, r.requestHandover)
	routes := map[string]http.Handler{
		"GET " + owner.StatusPath: ownerAPI, "GET " + owner.AttachPath: ownerAPI, "POST " + owner.HandoverPath: ownerAPI,
		"GET " + CheckPath: http.HandlerFunc(r.serveCheck), "GET " + NamespacesPath: http.HandlerFunc(r.serveNamespaces),
		"POST " + ExportPath: http.HandlerFunc(r.serveExport), "POST " + ImportPath: http.HandlerFunc(r.serveImport),
	}
	for _, p := range slices.Sorted(maps.Keys(routes)) {
		if err := r.srv.HandleLocal(p, routes[p]); err != nil {
			return err
		}
	}
	return nil
}

// Stop stops owning: attached clients are told, the owner file and the
// socket are removed (new clients wait for the lock), requests in flight
// and queued indexing finish, the stores close and the lock is released.
// It is safe to call more than once.
func (r *Run) Stop() error {
	r.stopOnce.Do(func() {
		if r.pres != nil {
			r.pres.Leave(r.handingOver.Load())
		}
		werr := r.claim.Withdraw()
		r.cancel()
		<-r.finished
		r.stopErr = errors.Join(r.serveErr, werr, r.claim.Release())
	})
	return r.stopErr
}

// Done is closed when serving has ended (stop, or a listener failed).
func (r *Run) Done() <-chan struct{} { return r.finished }

// requestHandover answers POST /v1/owner/handover.
func (r *Run) requestHandover() error {
	if r.handover == nil {
		return fmt.Errorf("%w: %s (pid %d) keeps the data directory until it is stopped", owner.ErrHandoverRefused, DescribeKind(r.kind, r.claim.Info().Command), os.Getpid())
	}
	r.log.Info("handing the data directory over at a client's request")
	r.handingOver.Store(true)
	r.handoverOnce.Do(func() { go r.handover() })
	return nil
}

// Extra is what an owner adds to its status: what a client must agree
// with.
type Extra struct {
	Embedder     string `json:"embedder"`               // the store's embedder identity
	EmbedderSpec string `json:"embedderSpec,omitempty"` // its recorded configuration
	Backend      string `json:"backend"`                // local or weaviate
	Memories     string `json:"memories,omitempty"`     // the default namespace's agent-memory directory
}

func (r *Run) status(req *http.Request) owner.Status {
	st := owner.Status{Owner: r.claim.Info(), Dir: r.dir}
	if r.eng != nil {
		ex := Extra{Backend: "local", Embedder: r.eng.Store().Embedder().Identity(), Memories: r.memories}
		if ex.Memories == "" {
			ex.Memories = filepath.Join(r.dir, "memories")
		}
		// The store's embedder record, as Stats reports it, without the
		// cost of Stats (which lists every source: 0.2-0.5 s at 25,000):
		// clients that name an embedder ask for this on every command.
		if rec, ok, err := r.eng.EmbedderRecord(req.Context()); err == nil && ok && rec.Spec != nil && !rec.FromIdentity {
			ex.EmbedderSpec = rec.Spec.String()
		} else if err == nil && !ok {
			// A store without records is bound by its first write, which
			// this owner makes with its own embedder: a client naming
			// another must hear of it.
			if sp, ok := embed.SpecOf(r.eng.Store().Embedder()); ok {
				pub, _ := sp.Public()
				ex.EmbedderSpec = pub.String()
			}
		}
		if _, ok := r.eng.Store().Backend().(interface{ Dir() string }); !ok {
			ex.Backend = "weaviate"
		}
		st.Extra, _ = json.Marshal(ex)
	}
	return st
}

// DescribeKind names an owner for people.
func DescribeKind(k owner.Kind, command string) string {
	switch k {
	case owner.KindServe:
		return "ragmem serve"
	case owner.KindDaemon:
		return "the background owner started by ragmem mcp"
	case owner.KindCLI:
		if command != "" {
			return command
		}
		return "a ragmem command"
	}
	return string(k)
}

// CommandLine is this process's command line, for a cli owner's status.
func CommandLine() string {
	args := make([]string, 0, len(os.Args))
	args = append(args, "ragmem")
	for _, a := range os.Args[1:] {
		if strings.ContainsAny(a, " \t\"'") {
			a = fmt.Sprintf("%q", a)
		}
		args = append(args, a)
	}
	s := strings.Join(args, " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// MemoryStore returns the default namespace's agent memories over the
// store's index: the same memory.Store the owner's API serves.
func (r *Run) MemoryStore(ctx context.Context) (*memory.Store, error) {
	d := r.memories
	if d == "" {
		d = filepath.Join(r.dir, "memories")
	}
	return r.stores.Get(ctx, d, r.eng.Store())
}
