package embed_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/embed/embedtest"
)

// clock is a settable time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// scripted is an embedder whose calls fail with err while it is set, and
// whose vectors have dim dimensions (Dimension says want).
type scripted struct {
	want, dim int
	err       atomic.Pointer[error]
	calls     atomic.Int64
	block     chan struct{} // when set, calls wait for it or their context
}

func (s *scripted) Identity() string { return "scripted" }
func (s *scripted) Dimension() int   { return s.want }
func (s *scripted) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	s.calls.Add(1)
	if s.block != nil {
		select {
		case <-s.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if e := s.err.Load(); e != nil {
		return nil, *e
	}
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = make([]float32, s.dim)
		out[i][0] = 1
	}
	return out, nil
}

func (s *scripted) fail(err error) {
	if err == nil {
		s.err.Store(nil)
		return
	}
	s.err.Store(&err)
}

var down = errors.Join(embed.ErrRetriesExhausted, errors.New("503 Service Unavailable"))

// TestBreakerOpensAndHalfOpens: outage failures in a row open the breaker;
// while open, calls fail at once without reaching the embedder; after
// OpenFor one trial call goes through; a failed trial doubles the wait, a
// good one closes the breaker.
func TestBreakerOpensAndHalfOpens(t *testing.T) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	s := &scripted{want: 4, dim: 4}
	b := embed.NewBreaker(s, &embed.BreakerOptions{Failures: 3, OpenFor: 10 * time.Second, MaxOpenFor: 25 * time.Second, Now: c.now})
	ctx := context.Background()
	if _, err := b.Embed(ctx, []string{"a"}); err != nil || b.State().State != "closed" {
		t.Fatalf("healthy: %v %+v", err, b.State())
	}
	s.fail(down)
	for i := 0; i < 3; i++ {
		_, err := b.Embed(ctx, []string{"a"})
		var ue *embed.UnavailableError
		if !errors.As(err, &ue) || !errors.Is(err, embed.ErrUnavailable) || !errors.Is(err, embed.ErrRetriesExhausted) {
			t.Fatalf("failure %d: %v", i, err)
		}
	}
	if st := b.State(); st.State != "open" || st.Failures != 3 || !st.RetryAt.Equal(c.now().Add(10*time.Second)) {
		t.Fatalf("after 3 failures: %+v", st)
	}
	calls := s.calls.Load()
	for i := 0; i < 100; i++ {
		_, err := b.EmbedQuery(ctx, "q")
		var ue *embed.UnavailableError
		if !errors.As(err, &ue) || !ue.RetryAt.Equal(c.now().Add(10*time.Second)) {
			t.Fatalf("open: %v", err)
		}
	}
	if s.calls.Load() != calls {
		t.Fatalf("calls reached the embedder while the breaker was open: %d", s.calls.Load()-calls)
	}
	// Half-open: one trial; it fails, the wait doubles.
	c.add(10 * time.Second)
	if st := b.State(); st.State != "half-open" {
		t.Fatalf("after OpenFor: %+v", st)
	}
	if _, err := b.Embed(ctx, []string{"a"}); err == nil || s.calls.Load() != calls+1 {
		t.Fatalf("trial: %v, %d calls", err, s.calls.Load()-calls)
	}
	if st := b.State(); st.State != "open" || !st.RetryAt.Equal(c.now().Add(20*time.Second)) {
		t.Fatalf("after a failed trial: %+v", st)
	}
	c.add(20 * time.Second)
	b.Embed(ctx, []string{"a"}) // fails again: capped at MaxOpenFor
	if st := b.State(); !st.RetryAt.Equal(c.now().Add(25 * time.Second)) {
		t.Fatalf("the wait is not capped: %+v", st)
	}
	// The embedder is back: the next trial closes the breaker.
	s.fail(nil)
	c.add(25 * time.Second)
	if _, err := b.Embed(ctx, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if st := b.State(); st.State != "closed" || st.Failures != 0 {
		t.Fatalf("after a good trial: %+v", st)
	}
	// Back to the first wait.
	s.fail(down)
	for i := 0; i < 3; i++ {
		b.Embed(ctx, []string{"a"})
	}
	if st := b.State(); !st.RetryAt.Equal(c.now().Add(10 * time.Second)) {
		t.Fatalf("the wait did not reset: %+v", st)
	}
}

// TestBreakerIgnoresOtherErrors: an error that says nothing of the server
// being down (it refused this input; the caller gave up) passes through,
// does not count, and a server that answers at all resets the count.
func TestBreakerIgnoresOtherErrors(t *testing.T) {
	s := &scripted{want: 4, dim: 4}
	b := embed.NewBreaker(s, &embed.BreakerOptions{Failures: 2})
	ctx := context.Background()
	refused := errors.New("embed: embedding request failed: input is too long")
	s.fail(refused)
	for i := 0; i < 5; i++ {
		if _, err := b.Embed(ctx, []string{"x"}); !errors.Is(err, refused) || errors.Is(err, embed.ErrUnavailable) {
			t.Fatalf("refused input: %v", err)
		}
	}
	if b.State().State != "closed" {
		t.Fatalf("%+v", b.State())
	}
	s.fail(down)
	b.Embed(ctx, []string{"x"})
	s.fail(refused)
	b.Embed(ctx, []string{"x"}) // the server answered: the count starts again
	s.fail(down)
	b.Embed(ctx, []string{"x"})
	if st := b.State(); st.State != "closed" || st.Failures != 1 {
		t.Fatalf("failures not reset by an answer: %+v", st)
	}
	// The caller's own cancellation is not an outage.
	s.fail(nil)
	s.block = make(chan struct{})
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	for i := 0; i < 3; i++ {
		if _, err := b.Embed(cctx, []string{"x"}); !errors.Is(err, context.Canceled) || errors.Is(err, embed.ErrUnavailable) {
			t.Fatalf("cancelled: %v", err)
		}
	}
	if b.State().State != "closed" {
		t.Fatalf("a cancelled caller opened the breaker: %+v", b.State())
	}
}

// TestBreakerWrongDimension: vectors of another length than the embedder's
// (or the one the caller expects) are an outage, never vectors to store.
func TestBreakerWrongDimension(t *testing.T) {
	ctx := context.Background()
	s := &scripted{want: 8, dim: 4}
	b := embed.NewBreaker(s, nil)
	vs, err := b.Embed(ctx, []string{"a"})
	if !errors.Is(err, embed.ErrDimensionMismatch) || !errors.Is(err, embed.ErrUnavailable) || vs != nil && err == nil {
		t.Fatalf("short vectors: %v", err)
	}
	// An embedder that does not know its dimension, and a store that does.
	s2 := &scripted{want: 0, dim: 4}
	b2 := embed.NewBreaker(s2, nil)
	if _, err := b2.Embed(ctx, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	b2.ExpectDimension(8)
	if _, err := b2.EmbedQuery(ctx, "a"); !errors.Is(err, embed.ErrDimensionMismatch) || !errors.Is(err, embed.ErrUnavailable) {
		t.Fatalf("expected 8: %v", err)
	}
}

// TestBreakerQueryTimeout: a query the embedder does not answer within
// QueryTimeout fails as an outage, however long the embedder would wait.
func TestBreakerQueryTimeout(t *testing.T) {
	s := &scripted{want: 4, dim: 4, block: make(chan struct{})}
	defer close(s.block)
	b := embed.NewBreaker(s, &embed.BreakerOptions{QueryTimeout: 50 * time.Millisecond})
	start := time.Now()
	_, err := b.EmbedQuery(context.Background(), "q")
	if !errors.Is(err, embed.ErrUnavailable) || time.Since(start) > 5*time.Second {
		t.Fatalf("hung query: %v after %v", err, time.Since(start))
	}
}

// TestBreakerAroundAnOpenAIServer: with a real OpenAI-compatible client and
// a server answering 503, the breaker opens after its failures and then no
// request reaches the server until it half-opens; a server that comes back
// is used again.
func TestBreakerAroundAnOpenAIServer(t *testing.T) {
	srv := embedtest.New(t, 16)
	c := &clock{t: time.Unix(2_000_000, 0)}
	b := embed.NewBreaker(srv.Embedder(t, -1), &embed.BreakerOptions{Failures: 2, OpenFor: time.Minute, Now: c.now})
	ctx := context.Background()
	if _, err := b.EmbedQuery(ctx, "herons"); err != nil {
		t.Fatal(err)
	}
	srv.Set(embedtest.Unavailable)
	for i := 0; i < 2; i++ {
		if _, err := b.EmbedQuery(ctx, "herons"); !errors.Is(err, embed.ErrUnavailable) {
			t.Fatalf("503: %v", err)
		}
	}
	calls := srv.Calls()
	for i := 0; i < 50; i++ {
		b.EmbedQuery(ctx, "herons")
	}
	if srv.Calls() != calls {
		t.Fatalf("%d requests reached the server while the breaker was open", srv.Calls()-calls)
	}
	srv.Set(embedtest.Healthy)
	c.add(time.Minute)
	if _, err := b.EmbedQuery(ctx, "herons"); err != nil || b.State().State != "closed" {
		t.Fatalf("after the server came back: %v %+v", err, b.State())
	}
	// Wrong dimension from the server: an outage.
	srv.Set(embedtest.WrongDim)
	if _, err := b.EmbedQuery(ctx, "herons"); !errors.Is(err, embed.ErrDimensionMismatch) || !errors.Is(err, embed.ErrUnavailable) {
		t.Fatalf("wrong dimension: %v", err)
	}
}
