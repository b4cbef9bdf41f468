package ownerd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/settings"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/owner"
	"github.com/ragmem/ragmem/prefs"
	"github.com/ragmem/ragmem/rag"
)

// Store is the memory (rag.Memory) of one command: the commands
// hold a rag.Memory and never ask which one it is. When no process owns the
// data directory, this process becomes its owner (kind cli): it opens the
// store (the Memory is its *rag.Engine) and serves other ragmem processes
// on the owner's socket until the command ends. Otherwise it is the
// owner's client (its *owner.Client, the contract over the socket). When the owner changes
// under the command (it hands over, or dies), the next call finds the new
// owner, or becomes it, and is retried when that is safe: always when the
// request had not reached the owner, and for reads and idempotent writes
// (indexing) otherwise. A change that may or may not have been applied is
// reported as such, never retried. It is safe for concurrent use.
type Store struct {
	set      *settings.Settings
	dir      string
	memories string // the default namespace's agent-memory directory ("": the owner's default)

	mu     sync.RWMutex // held for reading during a call, for writing while switching
	gen    int          // incremented by every switch
	cur    rag.Memory
	run    *Run          // this process owns the store
	client *owner.Client // another process owns it
	err    error         // a handover could not find the next owner

	// nsEng is the engine of the command's namespace while this process
	// owns the store (run.eng for the default one); nsRelease lets go of
	// it (see attachNamespace).
	nsEng     *rag.Engine
	nsRelease func()
}

// Connect finds the owner of the data directory the settings name, or
// becomes it; memories is the agent-memory directory a cli owner serves
// for the default namespace ("": the settings' or <data dir>/memories).
func Connect(ctx context.Context, set *settings.Settings, memories string) (*Store, error) {
	dir, err := set.DataDir()
	if err != nil {
		return nil, err
	}
	s := &Store{set: set, dir: dir, memories: defaultMemories(set, memories)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.attachLocked(ctx, 0); err != nil {
		return nil, err
	}
	return s, nil
}

var _ rag.Memory = (*Store)(nil)

// HandoverPatience is how long a process that handed the store over waits
// for its successor before it would take the store back.
const HandoverPatience = 30 * time.Second

// attachLocked finds the owner or becomes it, not before claimAfter. s.mu
// is held. An owner that goes away while this process checks it (it hands
// over, or its command ends) is looked for again.
func (s *Store) attachLocked(ctx context.Context, claimAfter time.Duration) error {
	for attempt := 0; ; attempt++ {
		err := s.attachOnce(ctx, claimAfter)
		if !errors.Is(err, owner.ErrGone) || attempt >= 4 || ctx.Err() != nil {
			return err
		}
	}
}

// attachOnce is one try of attachLocked.
func (s *Store) attachOnce(ctx context.Context, claimAfter time.Duration) error {
	info, claim, err := owner.Join(ctx, s.dir, &owner.JoinOptions{ClaimAfter: claimAfter, Waiting: func(pid int) {
		if claimAfter == 0 {
			fmt.Fprintf(s.set.Stderr, "ragmem: waiting for pid %d, which is opening the store in %s\n", pid, s.dir)
		}
	}})
	if err != nil {
		return err
	}
	s.gen++
	if claim != nil {
		run, err := Start(ctx, s.set, claim, Config{Kind: owner.KindCLI, Command: CommandLine(), Handover: s.handover, Memories: s.memories})
		if err != nil {
			_ = claim.Release()
			return err
		}
		if err := s.attachNamespace(ctx, run); err != nil {
			_ = run.Stop()
			return err
		}
		return nil
	}
	c, err := owner.NewClient(s.dir, info, s.set.ClientOptions())
	if err != nil {
		return err
	}
	if err := agreeWithOwner(ctx, s.set, c); err != nil {
		c.Close()
		return err
	}
	s.client, s.cur = c, c
	return nil
}

// handover is called when a client (`ragmem serve`) asks this process to
// hand the data directory over: it waits for the command's calls in
// flight, stops owning and becomes the new owner's client.
func (s *Store) handover() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run == nil {
		return
	}
	s.releaseNamespace()
	if err := s.run.Stop(); err != nil {
		fmt.Fprintf(s.set.Stderr, "ragmem: handing over: %v\n", err)
	}
	s.run, s.cur = nil, nil
	if err := s.attachLocked(context.Background(), HandoverPatience); err != nil {
		s.err = fmt.Errorf("after handing the store over: %w", err)
	}
}

// Call runs f on the current store, finding the owner again when it went
// away. safe says whether f may be run again after a request that reached
// the owner; what names the change for the error otherwise.
func (s *Store) Call(ctx context.Context, safe bool, what string, f func(rag.Memory) error) error {
	for attempt := 0; ; attempt++ {
		s.mu.RLock()
		cur, gen, serr := s.cur, s.gen, s.err
		if serr != nil {
			s.mu.RUnlock()
			return serr
		}
		err := f(cur)
		s.mu.RUnlock()
		var ge *owner.GoneError
		if !errors.As(err, &ge) || attempt >= 2 || ctx.Err() != nil {
			return err
		}
		if ge.Sent && !safe {
			return fmt.Errorf("%w; %s may or may not have been done: check before trying again", err, what)
		}
		if err := s.reattach(ctx, gen); err != nil {
			return err
		}
	}
}

// reattach finds the owner again after the one of generation gen went
// away.
func (s *Store) reattach(ctx context.Context, gen int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen || s.err != nil {
		return s.err // another call already did
	}
	if s.client != nil {
		s.client.Close()
		s.client = nil
	}
	return s.attachLocked(ctx, 0)
}

// close ends the command's use of the store: an owner stops owning (after
// finishing what its clients asked), a client closes its connections.
func (s *Store) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	if s.run != nil {
		s.releaseNamespace()
		err = s.run.Stop()
		s.run = nil
	}
	if s.client != nil {
		s.client.Close()
		s.client = nil
	}
	s.cur = nil
	if s.err == nil {
		s.err = errors.New("the store is closed")
	}
	return err
}

// Local returns the engine of the command's namespace when this process
// owns the store (nil when it is a client).
func (s *Store) Local() *rag.Engine {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.run == nil {
		return nil
	}
	return s.nsEng
}

// Owning returns this process's owner when it owns the store (nil when it
// is a client).
func (s *Store) Owning() *Run {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.run
}

// Client returns the client when another process owns the store.
func (s *Store) Client() *owner.Client {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.client
}

// Dir is the data directory.
func (s *Store) Dir() string { return s.dir }

// The contract, on the current memory: reads and idempotent writes are
// retried when the owner changes under them; other changes are reported
// as possibly done (see Call).

func (s *Store) Index(ctx context.Context, req rag.DocumentsRequest) (out *rag.DocumentsJSON, err error) {
	err = s.Call(ctx, true, "indexing", func(m rag.Memory) (err error) { out, err = m.Index(ctx, req); return err })
	return out, err
}

func (s *Store) IndexPage(ctx context.Context, req rag.PageRequest) (out *rag.PageAccepted, err error) {
	err = s.Call(ctx, true, "queuing the page", func(m rag.Memory) (err error) { out, err = m.IndexPage(ctx, req); return err })
	return out, err
}

func (s *Store) Job(ctx context.Context, id string) (out *rag.JobJSON, err error) {
	err = s.Call(ctx, true, "", func(m rag.Memory) (err error) { out, err = m.Job(ctx, id); return err })
	return out, err
}

func (s *Store) Jobs(ctx context.Context, req rag.JobsRequest) (out *rag.JobsJSON, err error) {
	err = s.Call(ctx, true, "", func(m rag.Memory) (err error) { out, err = m.Jobs(ctx, req); return err })
	return out, err
}

func (s *Store) RetryJob(ctx context.Context, id string) (out *rag.JobJSON, err error) {
	err = s.Call(ctx, false, "the retry of job "+id, func(m rag.Memory) (err error) { out, err = m.RetryJob(ctx, id); return err })
	return out, err
}

func (s *Store) DropJob(ctx context.Context, id string) error {
	return s.Call(ctx, false, "dropping job "+id, func(m rag.Memory) error { return m.DropJob(ctx, id) })
}

func (s *Store) Search(ctx context.Context, req rag.SearchRequest) (out *rag.SearchJSON, err error) {
	err = s.Call(ctx, true, "", func(m rag.Memory) (err error) { out, err = m.Search(ctx, req); return err })
	return out, err
}

func (s *Store) BuildContext(ctx context.Context, req rag.ContextRequest) (out *rag.ContextJSON, err error) {
	err = s.Call(ctx, true, "", func(m rag.Memory) (err error) { out, err = m.BuildContext(ctx, req); return err })
	return out, err
}

func (s *Store) Sources(ctx context.Context, req rag.SourcesRequest) (out *rag.SourcesJSON, err error) {
	err = s.Call(ctx, true, "", func(m rag.Memory) (err error) { out, err = m.Sources(ctx, req); return err })
	return out, err
}

func (s *Store) Page(ctx context.Context, u string) (out *rag.PageJSON, err error) {
	err = s.Call(ctx, true, "", func(m rag.Memory) (err error) { out, err = m.Page(ctx, u); return err })
	return out, err
}

func (s *Store) ForgetPage(ctx context.Context, u string) (out *rag.ForgetJSON, err error) {
	err = s.Call(ctx, false, "forgetting "+u, func(m rag.Memory) (err error) { out, err = m.ForgetPage(ctx, u); return err })
	return out, err
}

func (s *Store) Remove(ctx context.Context, sourceURL string) (n int, err error) {
	err = s.Call(ctx, false, "the removal of "+sourceURL, func(m rag.Memory) (err error) { n, err = m.Remove(ctx, sourceURL); return err })
	return n, err
}

func (s *Store) Preferences(ctx context.Context) (ps []prefs.Preference, err error) {
	err = s.Call(ctx, true, "", func(m rag.Memory) (err error) { ps, err = m.Preferences(ctx); return err })
	return ps, err
}

func (s *Store) AddPreference(ctx context.Context, req rag.PreferenceRequest) (p *prefs.Preference, err error) {
	err = s.Call(ctx, false, "adding the preference (see ragmem prefs list)", func(m rag.Memory) (err error) { p, err = m.AddPreference(ctx, req); return err })
	return p, err
}

func (s *Store) RemovePreference(ctx context.Context, id string) error {
	return s.Call(ctx, false, "removing the preference (see ragmem prefs list)", func(m rag.Memory) error { return m.RemovePreference(ctx, id) })
}

func (s *Store) ClearPreferences(ctx context.Context) (n int, err error) {
	err = s.Call(ctx, false, "clearing the preferences (see ragmem prefs list)", func(m rag.Memory) (err error) { n, err = m.ClearPreferences(ctx); return err })
	return n, err
}

func (s *Store) DetectPreferences(ctx context.Context, req rag.DetectRequest) (out *rag.DetectJSON, err error) {
	safe := !req.Save // detecting without saving writes nothing
	err = s.Call(ctx, safe, "saving the preferences (see ragmem prefs list)", func(m rag.Memory) (err error) { out, err = m.DetectPreferences(ctx, req); return err })
	return out, err
}

func (s *Store) Stats(ctx context.Context) (st index.Stats, err error) {
	err = s.Call(ctx, true, "", func(m rag.Memory) (err error) { st, err = m.Stats(ctx); return err })
	return st, err
}

func (s *Store) SetURLRules(ctx context.Context, r index.URLRules) error {
	// Setting the same rules twice is setting them once.
	return s.Call(ctx, true, "", func(m rag.Memory) error { return m.SetURLRules(ctx, r) })
}

// Close ends the command's use of the memory (see close).
func (s *Store) Close() error { return s.close() }

// defaultMemories is the default namespace's agent-memory directory (the
// one a memory command asked for, else the configured one), "" when it
// cannot be resolved (the owner then uses <data dir>/memories).
func defaultMemories(set *settings.Settings, asked string) string {
	d, err := set.DefaultMemoriesDir(asked)
	if err != nil {
		return ""
	}
	if a, err := filepath.Abs(d); err == nil {
		d = a
	}
	return d
}

// agreeWithOwner checks, in client mode, the settings that only an owner
// applies: the embedder a user names must be the one the owner's store
// was built with, and a backend named on the command line must be the
// owner's. Without such settings nothing is asked (the owner's are the
// store's), which keeps a client's command a single request.
func agreeWithOwner(ctx context.Context, g *settings.Settings, c *owner.Client) error {
	embNamed := g.Embedder != "" || os.Getenv("RAGMEM_EMBEDDER") != ""
	if _, ok := g.Cfg.Get("embedder"); ok {
		embNamed = true
	}
	backendNamed := g.Sources["backend"] == "--backend"
	if !embNamed && !backendNamed {
		return nil
	}
	st, err := c.Status(ctx)
	if err != nil {
		return err
	}
	var ex Extra
	if len(st.Extra) > 0 {
		if err := json.Unmarshal(st.Extra, &ex); err != nil {
			return err
		}
	}
	who := fmt.Sprintf("the store in %s is owned by pid %d (%s)", st.Dir, st.Owner.PID, DescribeKind(st.Owner.Kind, st.Owner.Command))
	if backendNamed {
		want := strings.ToLower(strings.TrimSpace(g.Backend.Name))
		if want == "" {
			want = "local"
		}
		if ex.Backend != "" && want != ex.Backend {
			return fmt.Errorf("--backend %s: %s, which uses the %s backend; stop it to use another backend", g.Backend.Name, who, ex.Backend)
		}
	}
	if embNamed && ex.EmbedderSpec != "" {
		ownerSpec, err := embed.ParseSpec(ex.EmbedderSpec)
		if err != nil {
			return nil // a spec this binary does not know: the owner's store decides
		}
		choice, err := g.ResolveEmbedder(&index.EmbedderRecord{Spec: &ownerSpec})
		if err != nil {
			return err
		}
		same := choice.Spec.SameModel(ownerSpec)
		switch strings.ToLower(strings.TrimSpace(choice.Spec.Kind)) {
		case "", embed.KindLexical, embed.KindRandProj:
			// Built here at no cost (no file, no server): compare what a
			// local open compares, the embedder's identity (its
			// dimension and options included).
			if e, err := embed.New(choice.Spec, nil); err == nil && ex.Embedder != "" {
				same = e.Identity() == ex.Embedder
			}
		}
		if !same {
			return fmt.Errorf("%w: %s, which uses embedder %s for its store, but %s (from %s) was given; drop that setting to use the store's, or stop the owner",
				rag.ErrEmbedderMismatch, who, ex.EmbedderSpec, choice.Spec, choice.From)
		}
	}
	return nil
}
