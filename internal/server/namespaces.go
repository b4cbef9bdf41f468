package server

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"sync"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/rag"
)

// NamespaceHeader selects the namespace of a request made with the main token.
const NamespaceHeader = rag.NamespaceHeader

const namespaceRule = "use 1 to 64 characters: lower-case letters, digits, '-' and '_', starting with a letter or digit"

// validNamespace reports whether name may name a namespace. The empty name
// is the default namespace and is not valid here.
func validNamespace(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '-' || c == '_') && i > 0:
		default:
			return false
		}
	}
	return true
}

// NamespaceDir returns where a namespace's store lives: the data directory
// itself for the default namespace "", so that the CLI sees what the server
// indexed, and <dir>/namespaces/<name> for the others.
func NamespaceDir(dir, namespace string) string {
	if namespace == "" {
		return dir
	}
	return filepath.Join(dir, "namespaces", namespace)
}

// OpenFunc opens the engine of one namespace's directory. It must be safe
// for concurrent use: the server calls it from several goroutines at once,
// for different directories.
type OpenFunc func(ctx context.Context, dir string) (*rag.Engine, error)

// pool keeps at most max engines open, one per namespace, opening them on
// first use and closing the least recently used idle one to make room. The
// default namespace is never closed before the pool. It is safe for
// concurrent use.
type pool struct {
	root string
	open OpenFunc
	max  int

	mu      sync.Mutex
	slots   map[string]*slot
	closing map[string]chan struct{} // namespaces whose engine is being closed
	closed  bool
	tick    uint64
	retired index.QueueStats // counters of engines already closed
	bg      sync.WaitGroup   // background closes
}

type slot struct {
	ready chan struct{} // closed once eng or err is set
	eng   *rag.Engine
	err   error
	refs  int
	used  uint64
}

func newPool(root string, open OpenFunc, max int) *pool {
	return &pool{root: root, open: open, max: max, slots: map[string]*slot{}, closing: map[string]chan struct{}{}}
}

// acquire returns the engine of ns, opening it if needed, and a release
// function to call when the caller is done with it.
func (p *pool) acquire(ctx context.Context, ns string) (*rag.Engine, func(), error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, nil, ErrClosed
		}
		if ch, ok := p.closing[ns]; ok {
			// The store is still being closed: its lock must be released
			// before it can be opened again.
			p.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}
		p.tick++
		if sl, ok := p.slots[ns]; ok {
			sl.refs++
			sl.used = p.tick
			p.mu.Unlock()
			select {
			case <-sl.ready:
			case <-ctx.Done():
				p.release(ns, sl)
				return nil, nil, ctx.Err()
			}
			if sl.err != nil {
				p.release(ns, sl)
				return nil, nil, sl.err
			}
			return sl.eng, p.releaser(ns, sl), nil
		}
		if len(p.slots) >= p.max && !p.evictLocked() {
			p.mu.Unlock()
			return nil, nil, fmt.Errorf("%w: %d namespaces are open and busy; retry later", ErrTooManyNamespaces, len(p.slots))
		}
		sl := &slot{ready: make(chan struct{}), refs: 1, used: p.tick}
		p.slots[ns] = sl
		p.mu.Unlock()

		// Opening is not tied to this request: another request may be
		// waiting for the same namespace.
		eng, err := p.open(context.WithoutCancel(ctx), NamespaceDir(p.root, ns))
		p.mu.Lock()
		sl.eng, sl.err = eng, err
		close(sl.ready)
		if err != nil {
			delete(p.slots, ns)
		}
		p.mu.Unlock()
		if err != nil {
			p.release(ns, sl)
			return nil, nil, err
		}
		return eng, p.releaser(ns, sl), nil
	}
}

func (p *pool) releaser(ns string, sl *slot) func() {
	var once sync.Once
	return func() { once.Do(func() { p.release(ns, sl) }) }
}

func (p *pool) release(ns string, sl *slot) {
	p.mu.Lock()
	sl.refs--
	p.mu.Unlock()
}

// evictLocked closes the least recently used idle engine (not the default
// namespace's, and not one with indexing to do now) in the background.
// It reports whether it made room.
func (p *pool) evictLocked() bool {
	var victim string
	var best *slot
	for ns, sl := range p.slots {
		if ns == "" || sl.refs > 0 || sl.eng == nil {
			continue
		}
		// Pages waiting for a retry (an embedder outage) do not pin a
		// namespace whose queue is durable: closing it keeps them for
		// the next open.
		if q := sl.eng.QueueStats(); q.Depth-q.Waiting > 0 || (q.Waiting > 0 && !q.Durable) {
			continue
		}
		if best == nil || sl.used < best.used {
			victim, best = ns, sl
		}
	}
	if best == nil {
		return false
	}
	delete(p.slots, victim)
	done := make(chan struct{})
	p.closing[victim] = done
	p.bg.Add(1)
	go func() {
		defer p.bg.Done()
		q := best.eng.QueueStats()
		_ = best.eng.Close()
		p.mu.Lock()
		p.addRetired(q)
		delete(p.closing, victim)
		close(done)
		p.mu.Unlock()
	}()
	return true
}

func (p *pool) addRetired(q index.QueueStats) {
	p.retired.Enqueued += q.Enqueued
	p.retired.Done += q.Done
	p.retired.Unchanged += q.Unchanged
	p.retired.Failed += q.Failed
	p.retired.Dropped += q.Dropped
}

// each calls fn for every open engine, sorted by namespace.
func (p *pool) each(fn func(ns string, eng *rag.Engine)) {
	p.mu.Lock()
	type open struct {
		ns  string
		eng *rag.Engine
	}
	var list []open
	for ns, sl := range p.slots {
		if sl.eng != nil {
			list = append(list, open{ns, sl.eng})
		}
	}
	p.mu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].ns < list[j].ns })
	for _, o := range list {
		fn(o.ns, o.eng)
	}
}

// queueTotals sums the auto-indexer counters of every engine ever opened.
func (p *pool) queueTotals() index.QueueStats {
	p.mu.Lock()
	t := p.retired
	p.mu.Unlock()
	p.each(func(_ string, eng *rag.Engine) {
		q := eng.QueueStats()
		t.Depth += q.Depth
		t.Enqueued += q.Enqueued
		t.Done += q.Done
		t.Unchanged += q.Unchanged
		t.Failed += q.Failed
		t.Dropped += q.Dropped
	})
	return t
}

func (p *pool) openCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.slots)
}

// close closes every engine; each Close finishes its queued indexing first.
// Engines still in use by a request are closed too: the HTTP server has
// stopped before close is called.
func (p *pool) close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	slots := p.slots
	p.slots = map[string]*slot{}
	p.mu.Unlock()
	p.bg.Wait()
	var firstErr error
	names := make([]string, 0, len(slots))
	for ns := range slots {
		names = append(names, ns)
	}
	sort.Strings(names)
	for _, ns := range names {
		sl := slots[ns]
		<-sl.ready
		if sl.eng == nil {
			continue
		}
		err := sl.eng.Close()
		p.mu.Lock()
		p.addRetired(sl.eng.QueueStats())
		p.mu.Unlock()
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("server: close namespace %q: %w", ns, err)
		}
	}
	return firstErr
}
