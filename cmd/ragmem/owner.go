package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/memory"
	"github.com/ragmem/ragmem/internal/memory/memhttp"
	"github.com/ragmem/ragmem/internal/owner"
	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
)

// defaultOwnerGrace is how long a background owner stays without clients
// before it exits: long enough that the next command, or an MCP client
// restarted, finds the store open; short enough not to hold its memory
// for nothing.
const defaultOwnerGrace = 2 * time.Minute

// ownerConfig describes the owner this process becomes.
type ownerConfig struct {
	kind    owner.Kind
	command string       // a cli owner's command line, for status
	log     *slog.Logger // default slog.Default()
	// server configures the HTTP server (serve's flags); nil: defaults,
	// with Open from open below.
	server *server.Options
	// open opens a namespace's store; default g.open for the data
	// directory and rag.Open with the resolved embedder for namespaces.
	open server.OpenFunc
	// tcp, if set, is `ragmem serve`'s HTTP listener, served next to the
	// socket.
	tcp       net.Listener
	tlsConfig *tls.Config
	// mcpTCP serves MCP at /mcp on tcp too (serve --mcp), read-only with
	// mcpReadOnly. On the socket /mcp is always served (read-only when the
	// request says readOnly=1).
	mcpTCP, mcpReadOnly bool
	// memories is the default namespace's agent-memory directory.
	memories string
	// handover is called when a client asks this owner to hand over; nil
	// refuses (serve).
	handover func()
}

// ownerRun is this process acting as the owner of its data directory: the
// HTTP API over the store, on the owner's socket (and, for serve, on TCP).
// It is safe for concurrent use.
type ownerRun struct {
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

// startOwner makes this process the owner of the data directory it has
// claimed: it opens the store, mounts the API, the agent memories, MCP and
// the owner's routes, listens on the socket (announcing itself in the owner
// file) and serves until stop. On error the claim is left to the caller.
func (g *globals) startOwner(ctx context.Context, claim *owner.Claim, cfg ownerConfig) (*ownerRun, error) {
	dir := claim.Dir()
	log := cfg.log
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
	if cfg.server != nil {
		so = *cfg.server
	}
	if so.Logger == nil {
		so.Logger = log
	}
	open := cfg.open
	if open == nil {
		open = func(ctx context.Context, d string) (*rag.Engine, error) {
			if d == dir {
				return g.open(ctx)
			}
			return rag.Open(ctx, d, &rag.Options{EmbedderFor: g.embedderFor, Logger: log, Config: g.ragConfig()})
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
	r := &ownerRun{kind: cfg.kind, dir: dir, claim: claim, srv: srv, log: log, handover: cfg.handover, token: token, tokenCreated: created, memories: cfg.memories}
	mu.Lock()
	r.eng = defEng
	mu.Unlock()
	fail := func(err error) (*ownerRun, error) {
		_ = claim.Withdraw()
		_ = srv.Close()
		return nil, err
	}

	// Agent memories live in each namespace's directory, under memories/;
	// the default namespace's are the configured ones.
	stores := memory.NewStores(&memory.Options{Logger: log, LLM: g.chatLLM()}) // the chat model also judges restatements and contradictions
	r.stores = stores
	memoriesOf := func(r *http.Request, eng *rag.Engine) (*memory.Store, error) {
		d := filepath.Join(server.NamespaceDir(dir, server.Namespace(r)), "memories")
		if server.Namespace(r) == "" && cfg.memories != "" {
			d = cfg.memories
		}
		return stores.Get(r.Context(), d, eng.Store())
	}
	mem := memhttp.New(func(r *http.Request) (*memory.Store, error) {
		eng, err := srv.Engine(r)
		if err != nil {
			return nil, err
		}
		return memoriesOf(r, eng)
	}, &memhttp.Options{WriteError: server.WriteError, Fail: srv.Fail, ShowPaths: server.IsLocal, Logger: log, LLM: g.chatLLM()})
	for _, p := range []string{memhttp.DefaultPrefix, memhttp.DefaultPrefix + "/"} {
		if err := srv.Handle(p, mem); err != nil {
			return fail(err)
		}
	}
	if err := srv.Handle("/mcp", newMCPMount(srv, cfg.mcpTCP, cfg.mcpReadOnly, g.chatLLM(), memoriesOf)); err != nil {
		return fail(err)
	}

	info := owner.Info{Kind: cfg.kind, Command: cfg.command}
	if cfg.tcp != nil {
		info.HTTP = "http://" + displayAddr(cfg.tcp.Addr())
		if cfg.tlsConfig != nil {
			info.HTTP = "https://" + displayAddr(cfg.tcp.Addr())
		}
	}
	ln, err := claim.Listen(info)
	if err != nil {
		return fail(err)
	}
	ln.OnRefuse(func(uid int) {
		log.Warn("refused a connection on the owner socket from another user's process", "uid", uid)
	})
	r.ln = ln
	r.pres = owner.NewPresence(ln)
	ownerAPI := r.pres.Handler(r.status, r.requestHandover)
	for _, p := range []string{"GET " + owner.StatusPath, "GET " + owner.AttachPath, "POST " + owner.HandoverPath} {
		if err := srv.HandleLocal(p, ownerAPI); err != nil {
			return fail(err)
		}
	}
	if err := srv.HandleLocal("GET "+checkPath, http.HandlerFunc(r.serveCheck)); err != nil {
		return fail(err)
	}
	if err := srv.HandleLocal("GET "+namespacesPath, http.HandlerFunc(r.serveNamespaces)); err != nil {
		return fail(err)
	}
	if err := srv.HandleLocal("POST "+exportPath, http.HandlerFunc(r.serveExport)); err != nil {
		return fail(err)
	}
	if err := srv.HandleLocal("POST "+importPath, http.HandlerFunc(r.serveImport)); err != nil {
		return fail(err)
	}

	listeners := []server.Listener{{Listener: ln, Local: true}}
	if cfg.tcp != nil {
		l := server.Listener{Listener: cfg.tcp}
		l.TLS = cfg.tlsConfig
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

// stop stops owning: attached clients are told, the owner file and the
// socket are removed (new clients wait for the lock), requests in flight
// and queued indexing finish, the stores close and the lock is released.
// It is safe to call more than once.
func (r *ownerRun) stop() error {
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

// done is closed when serving has ended (stop, or a listener failed).
func (r *ownerRun) done() <-chan struct{} { return r.finished }

// requestHandover answers POST /v1/owner/handover.
func (r *ownerRun) requestHandover() error {
	if r.handover == nil {
		return fmt.Errorf("%w: %s (pid %d) keeps the data directory until it is stopped", owner.ErrHandoverRefused, describeKind(r.kind, r.claim.Info().Command), os.Getpid())
	}
	r.log.Info("handing the data directory over at a client's request")
	r.handingOver.Store(true)
	r.handoverOnce.Do(func() { go r.handover() })
	return nil
}

// ownerExtra is what an owner adds to its status: what a client must agree
// with.
type ownerExtra struct {
	Embedder     string `json:"embedder"`               // the store's embedder identity
	EmbedderSpec string `json:"embedderSpec,omitempty"` // its recorded configuration
	Backend      string `json:"backend"`                // local or weaviate
	Memories     string `json:"memories,omitempty"`     // the default namespace's agent-memory directory
}

func (r *ownerRun) status(req *http.Request) owner.Status {
	st := owner.Status{Owner: r.claim.Info(), Dir: r.dir}
	if r.eng != nil {
		ex := ownerExtra{Backend: "local", Embedder: r.eng.Store().Embedder().Identity(), Memories: r.memories}
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

// describeKind names an owner for people.
func describeKind(k owner.Kind, command string) string {
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

// commandLine is this process's command line, for a cli owner's status.
func commandLine() string {
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

// memoryStore returns the default namespace's agent memories over the
// store's index: the same memory.Store the owner's API serves.
func (r *ownerRun) memoryStore(ctx context.Context) (*memory.Store, error) {
	d := r.memories
	if d == "" {
		d = filepath.Join(r.dir, "memories")
	}
	return r.stores.Get(ctx, d, r.eng.Store())
}
