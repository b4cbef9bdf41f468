package embed

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/singleflight"
)

// Query cache defaults.
const (
	// DefaultQueryCacheEntries is the default bound on a QueryCache's entries.
	DefaultQueryCacheEntries = 1024
	// DefaultQueryCacheBytes is the default bound on a QueryCache's memory:
	// 16 MiB, about 2,700 vectors of 1536 dimensions (so the entry bound
	// usually binds first).
	DefaultQueryCacheBytes = 16 << 20
)

// entryOverhead approximates the bytes of an entry beyond its key and vector
// (list element, map slot, slice headers).
const entryOverhead = 160

// QueryCacheOptions bound a [QueryCache]. A nil *QueryCacheOptions, and
// every zero field, means the default.
type QueryCacheOptions struct {
	// MaxEntries bounds the number of cached queries. Default 1024; a
	// negative value disables caching (every query calls the embedder,
	// concurrent identical queries still share one call).
	MaxEntries int
	// MaxBytes bounds the memory of the cached keys and vectors. Default
	// 16 MiB. An entry larger than a quarter of it is not cached.
	MaxBytes int64
}

// QueryCache remembers query embeddings, so that a repeated question costs
// no embedder call: a least-recently-used map bounded in entries and bytes,
// keyed by the embedder's Identity and the exact query text. Concurrent
// misses for the same key share one embedder call. Failed calls are not
// cached. One cache may serve several embedders and stores (their
// identities keep them apart). A QueryCache is safe for concurrent use; the
// zero value is not usable, call [NewQueryCache].
type QueryCache struct {
	maxEntries int
	maxBytes   int64

	mu    sync.Mutex
	ll    *list.List // front = most recently used; values are *cacheEntry
	items map[string]*list.Element
	bytes int64

	group singleflight.Group
	hits  atomic.Uint64
	miss  atomic.Uint64
}

type cacheEntry struct {
	key  string
	vec  []float32
	size int64
}

// QueryCacheStats are a cache's counters.
type QueryCacheStats struct {
	Hits    uint64 `json:"hits"`    // queries answered from the cache
	Misses  uint64 `json:"misses"`  // queries that called the embedder (or joined a call in flight)
	Entries int    `json:"entries"` // queries cached now
	Bytes   int64  `json:"bytes"`   // their approximate memory
}

// NewQueryCache returns an empty cache; nil opts means the defaults.
func NewQueryCache(opts *QueryCacheOptions) *QueryCache {
	var o QueryCacheOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxEntries == 0 {
		o.MaxEntries = DefaultQueryCacheEntries
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultQueryCacheBytes
	}
	return &QueryCache{maxEntries: o.MaxEntries, maxBytes: o.MaxBytes, ll: list.New(), items: map[string]*list.Element{}}
}

// maxLeaderRetries bounds how often a caller whose own context is alive
// retries after the call it joined was cancelled by its first caller.
const maxLeaderRetries = 3

// Embed returns the query embedding of text by e: from the cache when it
// holds one for e's identity and this exact text, else from
// e.EmbedQuery when e is a [QueryEmbedder], else e.Embed. The caller owns
// the returned slice.
func (c *QueryCache) Embed(ctx context.Context, e Embedder, text string) ([]float32, error) {
	key := e.Identity() + "\x00" + text
	if v, ok := c.get(key); ok {
		c.hits.Add(1)
		return v, nil
	}
	c.miss.Add(1)
	for try := 0; ; try++ {
		ch := c.group.DoChan(key, func() (any, error) {
			v, err := embedQuery(ctx, e, text)
			if err != nil {
				if ctx.Err() != nil {
					return nil, &leaderGone{err}
				}
				return nil, err
			}
			// The identity may have changed with this call (an OpenAI
			// embedder learns its dimension): cache under the new one too.
			c.put(key, v)
			if k2 := e.Identity() + "\x00" + text; k2 != key {
				c.put(k2, v)
			}
			return v, nil
		})
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case r := <-ch:
			if r.Err != nil {
				// The call was made with the first caller's context; if that one
				// gave up, a caller still waiting tries again with its own. An
				// embedder that ran out of its own time limit is not tried
				// again: the search waiting for it would wait that long again.
				var lg *leaderGone
				if errors.As(r.Err, &lg) {
					if ctx.Err() == nil && try < maxLeaderRetries {
						continue
					}
					return nil, lg.err
				}
				return nil, r.Err
			}
			return clone(r.Val.([]float32)), nil
		}
	}
}

// leaderGone is the error of a shared call whose first caller gave up
// (its context ended): the callers that joined it may try again.
type leaderGone struct{ err error }

func (e *leaderGone) Error() string { return e.err.Error() }
func (e *leaderGone) Unwrap() error { return e.err }

// embedQuery embeds one query with e's query form when it has one.
func embedQuery(ctx context.Context, e Embedder, text string) ([]float32, error) {
	if qe, ok := e.(QueryEmbedder); ok {
		return qe.EmbedQuery(ctx, text)
	}
	vs, err := e.Embed(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	if len(vs) != 1 {
		return nil, fmt.Errorf("%w: embedder returned %d vectors for 1 text", ErrDimensionMismatch, len(vs))
	}
	return vs[0], nil
}

func clone(v []float32) []float32 { return append([]float32(nil), v...) }

func (c *QueryCache) get(key string) ([]float32, bool) {
	if c.maxEntries < 0 {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return nil, false
	}
	c.ll.MoveToFront(el)
	return clone(el.Value.(*cacheEntry).vec), true
}

func (c *QueryCache) put(key string, v []float32) {
	size := int64(len(key)) + 4*int64(len(v)) + entryOverhead
	if c.maxEntries < 0 || size > c.maxBytes/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		old := el.Value.(*cacheEntry)
		c.bytes += size - old.size
		old.vec, old.size = clone(v), size
		c.ll.MoveToFront(el)
	} else {
		c.items[key] = c.ll.PushFront(&cacheEntry{key: key, vec: clone(v), size: size})
		c.bytes += size
	}
	for c.ll.Len() > c.maxEntries || c.bytes > c.maxBytes {
		last := c.ll.Back()
		ent := last.Value.(*cacheEntry)
		c.ll.Remove(last)
		delete(c.items, ent.key)
		c.bytes -= ent.size
	}
}

// Stats returns the cache's counters.
func (c *QueryCache) Stats() QueryCacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return QueryCacheStats{Hits: c.hits.Load(), Misses: c.miss.Load(), Entries: c.ll.Len(), Bytes: c.bytes}
}
