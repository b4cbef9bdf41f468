package embed

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingEmbedder counts Embed calls; gate, when set, holds each call until closed.
type countingEmbedder struct {
	Embedder
	id    string
	calls atomic.Int64
	gate  chan struct{}
	fail  error
}

func (c *countingEmbedder) Identity() string {
	if c.id != "" {
		return c.id
	}
	return c.Embedder.Identity()
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.calls.Add(1)
	if c.gate != nil {
		select {
		case <-c.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if c.fail != nil {
		return nil, c.fail
	}
	return c.Embedder.Embed(ctx, texts)
}

func TestQueryCacheHitsAndCopies(t *testing.T) {
	ce := &countingEmbedder{Embedder: NewLexical(&LexicalOptions{Dimension: 16})}
	c := NewQueryCache(nil)
	ctx := context.Background()
	v1, err := c.Embed(ctx, ce, "what is hybrid search")
	if err != nil {
		t.Fatal(err)
	}
	want := append([]float32(nil), v1...)
	v1[0] = 42 // the caller owns its slice
	v2, err := c.Embed(ctx, ce, "what is hybrid search")
	if err != nil {
		t.Fatal(err)
	}
	if ce.calls.Load() != 1 {
		t.Errorf("%d embedder calls for a repeated query", ce.calls.Load())
	}
	for i := range want {
		if v2[i] != want[i] {
			t.Fatalf("cached vector changed at %d: %v, want %v", i, v2[i], want[i])
		}
	}
	// Exact text: a different string is a different query.
	if _, err := c.Embed(ctx, ce, "what is hybrid search "); err != nil || ce.calls.Load() != 2 {
		t.Errorf("near-duplicate query: %v, %d calls", err, ce.calls.Load())
	}
	// Another embedder identity never shares an entry.
	other := &countingEmbedder{Embedder: ce.Embedder, id: "other"}
	if _, err := c.Embed(ctx, other, "what is hybrid search"); err != nil || other.calls.Load() != 1 {
		t.Errorf("other identity: %v, %d calls", err, other.calls.Load())
	}
	st := c.Stats()
	if st.Hits != 1 || st.Misses != 3 || st.Entries != 3 || st.Bytes <= 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestQueryCacheEvictsLeastRecentlyUsed(t *testing.T) {
	ce := &countingEmbedder{Embedder: NewLexical(&LexicalOptions{Dimension: 8})}
	c := NewQueryCache(&QueryCacheOptions{MaxEntries: 2})
	ctx := context.Background()
	for _, q := range []string{"a", "b", "a", "c"} { // "b" is the least recently used when "c" comes
		if _, err := c.Embed(ctx, ce, q); err != nil {
			t.Fatal(err)
		}
	}
	n := ce.calls.Load()
	if _, err := c.Embed(ctx, ce, "a"); err != nil || ce.calls.Load() != n {
		t.Errorf("\"a\" was evicted")
	}
	if _, err := c.Embed(ctx, ce, "b"); err != nil || ce.calls.Load() != n+1 {
		t.Errorf("\"b\" was kept")
	}
	if st := c.Stats(); st.Entries != 2 {
		t.Errorf("%d entries, bound 2", st.Entries)
	}
}

func TestQueryCacheByteBound(t *testing.T) {
	ce := &countingEmbedder{Embedder: NewLexical(&LexicalOptions{Dimension: 256})}
	// An entry is about 256*4 + key + 160 bytes, so 16 KiB holds about 12 of them.
	c := NewQueryCache(&QueryCacheOptions{MaxBytes: 16 << 10})
	for i := range 100 {
		if _, err := c.Embed(context.Background(), ce, fmt.Sprint("query ", i)); err != nil {
			t.Fatal(err)
		}
		if st := c.Stats(); st.Bytes > 16<<10 {
			t.Fatalf("%d bytes cached, bound %d", st.Bytes, 16<<10)
		}
	}
	if st := c.Stats(); st.Entries < 8 || st.Entries > 16 {
		t.Errorf("%d entries in 16 KiB", st.Entries)
	}
	// A query too large for the cache is answered but not cached.
	big := string(make([]byte, 4<<10))
	for range 2 {
		if _, err := c.Embed(context.Background(), ce, big); err != nil {
			t.Fatal(err)
		}
	}
	if st := c.Stats(); st.Bytes > 16<<10 {
		t.Errorf("%d bytes after a huge query", st.Bytes)
	}
}

func TestQueryCacheSingleFlight(t *testing.T) {
	ce := &countingEmbedder{Embedder: NewLexical(&LexicalOptions{Dimension: 8}), gate: make(chan struct{})}
	c := NewQueryCache(nil)
	var wg sync.WaitGroup
	const n = 16
	results := make([][]float32, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := c.Embed(context.Background(), ce, "the same question")
			if err != nil {
				t.Error(err)
			}
			results[i] = v
		}()
	}
	// Let every goroutine reach the cache before the one call returns.
	deadline := time.Now().Add(5 * time.Second)
	for c.Stats().Misses < n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(ce.gate)
	wg.Wait()
	if got := ce.calls.Load(); got != 1 {
		t.Errorf("%d embedder calls for %d concurrent identical queries", got, n)
	}
	for i := 1; i < n; i++ {
		if &results[i][0] == &results[0][0] {
			t.Fatalf("callers share one slice")
		}
	}
}

func TestQueryCacheLeaderCancelled(t *testing.T) {
	ce := &countingEmbedder{Embedder: NewLexical(&LexicalOptions{Dimension: 8}), gate: make(chan struct{})}
	c := NewQueryCache(nil)
	leaderCtx, cancel := context.WithCancel(context.Background())
	leaderDone := make(chan error, 1)
	go func() {
		_, err := c.Embed(leaderCtx, ce, "q")
		leaderDone <- err
	}()
	for ce.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	follower := make(chan error, 1)
	go func() {
		_, err := c.Embed(context.Background(), ce, "q")
		follower <- err
	}()
	for c.Stats().Misses < 2 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-leaderDone; !errors.Is(err, context.Canceled) {
		t.Errorf("leader: %v", err)
	}
	close(ce.gate) // the follower's own attempt may now complete
	if err := <-follower; err != nil {
		t.Errorf("follower failed with its leader: %v", err)
	}
}

func TestQueryCacheErrorsAreNotCached(t *testing.T) {
	boom := errors.New("server down")
	ce := &countingEmbedder{Embedder: NewLexical(nil), fail: boom}
	c := NewQueryCache(nil)
	for range 2 {
		if _, err := c.Embed(context.Background(), ce, "q"); !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
	}
	if ce.calls.Load() != 2 || c.Stats().Entries != 0 {
		t.Errorf("%d calls, %d entries", ce.calls.Load(), c.Stats().Entries)
	}
}

func TestQueryCacheDisabled(t *testing.T) {
	ce := &countingEmbedder{Embedder: NewLexical(nil)}
	c := NewQueryCache(&QueryCacheOptions{MaxEntries: -1})
	for range 3 {
		if _, err := c.Embed(context.Background(), ce, "q"); err != nil {
			t.Fatal(err)
		}
	}
	if ce.calls.Load() != 3 || c.Stats().Entries != 0 {
		t.Errorf("disabled cache: %d calls, %d entries", ce.calls.Load(), c.Stats().Entries)
	}
}

// TestQueryCacheOpenAI counts requests on a server speaking the OpenAI protocol.
func TestQueryCacheOpenAI(t *testing.T) {
	f := newFakeServer(t, 16)
	o := newTestOpenAI(t, f, OpenAIOptions{})
	c := NewQueryCache(nil)
	for range 5 {
		v, err := c.Embed(context.Background(), o, "how do I rotate keys")
		if err != nil {
			t.Fatal(err)
		}
		checkUnit(t, v, 16)
	}
	if f.calls() != 1 {
		t.Errorf("%d requests for one question asked 5 times", f.calls())
	}
}

func BenchmarkQueryCacheHit(b *testing.B) {
	c := NewQueryCache(nil)
	e := NewRandProj(nil)
	ctx := context.Background()
	if _, err := c.Embed(ctx, e, "a question asked again and again"); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Embed(ctx, e, "a question asked again and again"); err != nil {
			b.Fatal(err)
		}
	}
}
