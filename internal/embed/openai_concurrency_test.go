package embed

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// numbered returns n distinct texts.
func numbered(n int) []string {
	texts := make([]string, n)
	for i := range texts {
		texts[i] = fmt.Sprintf("text %d about subject %c%c", i, 'a'+i%26, 'a'+i/26%26)
	}
	return texts
}

// inflight counts the requests a fake server is answering at once.
type inflight struct {
	mu       sync.Mutex
	now, max int
}

func (c *inflight) enter() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now++
	c.max = max(c.max, c.now)
	return c.now
}

func (c *inflight) leave() {
	c.mu.Lock()
	c.now--
	c.mu.Unlock()
}

func (c *inflight) peak() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.max
}

func TestOpenAIConcurrencyReachedNeverExceeded(t *testing.T) {
	const conc = 3
	f := newFakeServer(t, 8)
	var in inflight
	full := make(chan struct{})
	var once sync.Once
	f.hook = func(_ int, _ *embRequest, _ http.ResponseWriter) bool {
		if in.enter() == conc {
			once.Do(func() { close(full) })
		}
		defer in.leave()
		// Hold each request until conc are in flight together (or a
		// generous timeout, so that a sequential client fails, not hangs).
		select {
		case <-full:
		case <-time.After(5 * time.Second):
		}
		return false
	}
	o := newTestOpenAI(t, f, OpenAIOptions{BatchSize: 2, Concurrency: conc})
	texts := numbered(21)
	got, err := o.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	wantVectors(t, f, texts, got)
	if p := in.peak(); p != conc {
		t.Errorf("peak of %d requests in flight, want %d", p, conc)
	}
	if f.calls() != 11 {
		t.Errorf("%d requests for 21 texts in batches of 2", f.calls())
	}
}

func TestOpenAIConcurrencySharedAcrossCalls(t *testing.T) {
	f := newFakeServer(t, 8)
	var in inflight
	f.hook = func(_ int, _ *embRequest, _ http.ResponseWriter) bool {
		in.enter()
		defer in.leave()
		time.Sleep(2 * time.Millisecond)
		return false
	}
	o := newTestOpenAI(t, f, OpenAIOptions{BatchSize: 1, Concurrency: 2})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			texts := numbered(8)
			for i := range texts {
				texts[i] += fmt.Sprint(" from caller ", g)
			}
			got, err := o.Embed(context.Background(), texts)
			if err != nil {
				t.Error(err)
				return
			}
			wantVectors(t, f, texts, got)
		}()
	}
	wg.Wait()
	if p := in.peak(); p > 2 {
		t.Errorf("peak of %d requests in flight across callers, limit 2", p)
	}
}

func TestOpenAIOrderKeptWhenAnswersArriveOutOfOrder(t *testing.T) {
	f := newFakeServer(t, 8)
	var arrived atomic.Int64
	f.hook = func(_ int, _ *embRequest, _ http.ResponseWriter) bool {
		// Earlier arrivals answer later.
		n := arrived.Add(1)
		time.Sleep(time.Duration(max(0, 40-8*n)) * time.Millisecond)
		return false
	}
	o := newTestOpenAI(t, f, OpenAIOptions{BatchSize: 3, Concurrency: 4})
	texts := numbered(12)
	got, err := o.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	wantVectors(t, f, texts, got)
}

func TestOpenAIRateLimitPausesEveryRequest(t *testing.T) {
	const retryAfter = 300 * time.Millisecond
	f := newFakeServer(t, 8)
	var (
		mu         sync.Mutex
		limited    time.Time   // when the 429 was sent
		releasedAt time.Time   // when the requests in flight then were answered
		arrivals   []time.Time // of every request
		first      = true
	)
	released := make(chan struct{})
	f.hook = func(_ int, _ *embRequest, w http.ResponseWriter) bool {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		if first {
			first = false
			limited = time.Now()
			mu.Unlock()
			w.Header().Set("Retry-After-Ms", fmt.Sprint(retryAfter.Milliseconds()))
			openAIError(w, http.StatusTooManyRequests, "requests", "rate_limit_exceeded", "Rate limit reached")
			go func() {
				time.Sleep(50 * time.Millisecond)
				mu.Lock()
				releasedAt = time.Now()
				mu.Unlock()
				close(released)
			}()
			return true
		}
		mu.Unlock()
		// Requests in flight when the 429 went out are answered 50 ms after
		// it; a client that does not share the pause sends its next ones at once.
		select {
		case <-released:
		case <-time.After(5 * time.Second):
		}
		return false
	}
	o := newTestOpenAI(t, f, OpenAIOptions{BatchSize: 1, Concurrency: 4})
	o.retryAfterCap = time.Second
	texts := numbered(12)
	got, err := o.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	wantVectors(t, f, texts, got)
	mu.Lock()
	defer mu.Unlock()
	early := 0
	for _, a := range arrivals {
		if a.After(releasedAt) && a.Sub(limited) < retryAfter-30*time.Millisecond {
			early++
		}
	}
	if early > 0 {
		t.Errorf("%d requests were sent during the %v pause another request's 429 asked for", early, retryAfter)
	}
	if f.calls() != 13 {
		t.Errorf("%d requests for 12 texts and one retry", f.calls())
	}
}

func TestOpenAIFatalErrorCancelsTheRest(t *testing.T) {
	f := newFakeServer(t, 8)
	var cancelled atomic.Int64
	// Every request but the poisoned one hangs until its client gives up.
	f.hook = func(_ int, req *embRequest, w http.ResponseWriter) bool {
		if req.inputs[0] == "poison" {
			time.Sleep(20 * time.Millisecond) // let the others get going
			openAIError(w, http.StatusBadRequest, "invalid_request_error", "", "This input is not allowed")
			return true
		}
		select {
		case <-time.After(5 * time.Second):
		case <-req.ctx.Done():
			cancelled.Add(1)
		}
		return true
	}
	before := runtime.NumGoroutine()
	o := newTestOpenAI(t, f, OpenAIOptions{BatchSize: 1, Concurrency: 3,
		HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}})
	texts := numbered(30)
	texts[1] = "poison"
	start := time.Now()
	_, err := o.Embed(context.Background(), texts)
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusBadRequest || !strings.Contains(err.Error(), "texts 1..1 of 30") {
		t.Fatalf("err = %v, want the 400 of text 1", err)
	}
	if time.Since(start) > 4*time.Second {
		t.Errorf("Embed waited %v for requests it should have cancelled", time.Since(start))
	}
	if n := f.calls(); n != 3 {
		t.Errorf("%d requests sent; want the first 3, and no new one after the fatal error", n)
	}
	// No goroutine outlives the call (keep-alives are off, so no idle
	// connection holds one), and the server saw the others cancelled.
	deadline := time.Now().Add(5 * time.Second)
	for (runtime.NumGoroutine() > before || cancelled.Load() < 2) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if c := cancelled.Load(); c != 2 {
		t.Errorf("%d requests in flight were cancelled, want 2", c)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after Embed, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

func TestOpenAICallerCancelStopsEverything(t *testing.T) {
	f := newFakeServer(t, 8)
	f.hook = func(_ int, req *embRequest, w http.ResponseWriter) bool {
		<-req.ctx.Done()
		return true
	}
	o := newTestOpenAI(t, f, OpenAIOptions{BatchSize: 1, Concurrency: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := o.Embed(ctx, numbered(10)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the deadline", err)
	}
	if n := f.calls(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestOpenAIRequestTokenBound(t *testing.T) {
	f := newFakeServer(t, 8)
	o := newTestOpenAI(t, f, OpenAIOptions{MaxRequestTokens: 100, Concurrency: 1})
	texts := []string{
		"the cat sat on the mat today", "the dog sat on the rug today", "a bird sat on the roof today", "a fish swam in the pond today",
		strings.Repeat("big ", 200), // 800 bytes, ~200 tokens: over the bound on its own
		"tail",
	}
	got, err := o.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	wantVectors(t, f, texts, got)
	enc := o.enc
	if enc == nil {
		t.Fatal("the token counter was never needed")
	}
	for i := range f.calls() {
		in := f.request(i).inputs
		sum := 0
		for _, s := range in {
			sum += enc.Count(s)
		}
		if sum > 100 && len(in) > 1 {
			t.Errorf("request %d: %d texts of %d tokens together, bound 100", i, len(in), sum)
		}
	}
	// The byte bound alone would send the four 28-byte texts in two requests;
	// counted (7 tokens each), they fit in one.
	if first := f.request(0).inputs; len(first) != 4 {
		t.Errorf("first request has %d texts, want the 4 short ones", len(first))
	}
	if f.calls() != 3 {
		t.Errorf("%d requests, want 3 (4 short texts, the big one alone, the tail)", f.calls())
	}
}

func TestOpenAIPlanRespectsBatchSize(t *testing.T) {
	o, err := NewOpenAI(OpenAIOptions{Model: "m", BaseURL: "http://h/v1", BatchSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	spans := o.plan(numbered(10))
	want := []span{{0, 4}, {4, 8}, {8, 10}}
	if fmt.Sprint(spans) != fmt.Sprint(want) {
		t.Errorf("plan = %v, want %v", spans, want)
	}
}

func TestOpenAINoAPIKeyForOpenAI(t *testing.T) {
	t.Setenv("MY_OPENAI_KEY", "")
	t.Setenv("OPENAI_API_KEY", "")
	called := false
	hc := &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		called = true
		return nil, errors.New("no network in tests")
	})}
	o, err := NewOpenAI(OpenAIOptions{Model: "text-embedding-3-small", BaseURL: "https://api.openai.com/v1", APIKeyEnv: "MY_OPENAI_KEY", HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.Embed(context.Background(), []string{"x"})
	if !errors.Is(err, ErrNoAPIKey) || !strings.Contains(err.Error(), "$MY_OPENAI_KEY") {
		t.Errorf("err = %v, want ErrNoAPIKey naming $MY_OPENAI_KEY", err)
	}
	if called {
		t.Error("a request was sent without a key")
	}
	// A gateway authenticating by its own header needs no key.
	o, err = NewOpenAI(OpenAIOptions{Model: "m", BaseURL: "https://api.openai.com/v1", HTTPClient: hc, MaxRetries: -1, Headers: map[string]string{"authorization": "Bearer x"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Embed(context.Background(), []string{"x"}); errors.Is(err, ErrNoAPIKey) {
		t.Errorf("err = %v with an Authorization header", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestOpenAIUnauthorizedSaysWhichVariable(t *testing.T) {
	f := newFakeServer(t, 8)
	t.Setenv("OPENAI_API_KEY", "")
	o, err := NewOpenAI(OpenAIOptions{Model: "m", BaseURL: f.baseURL(), APIKeyEnv: "LOCAL_KEY", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.Embed(context.Background(), []string{"x"})
	if err == nil || !strings.Contains(err.Error(), "no API key was sent: set $LOCAL_KEY") {
		t.Errorf("err = %v", err)
	}
}

func TestOpenAIHeadersSentAndRedacted(t *testing.T) {
	f := newFakeServer(t, 8)
	const secret = "gw-secret-value-42"
	f.key = ""
	var seen atomic.Value
	inner := f.srv.Config.Handler
	f.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r.Header.Get("X-Gateway-Key"))
		if r.Header.Get("X-Gateway-Key") != "" {
			openAIError(w, http.StatusForbidden, "invalid_request_error", "", "gateway key "+r.Header.Get("X-Gateway-Key")+" is not allowed")
			return
		}
		inner.ServeHTTP(w, r)
	})
	o := newTestOpenAI(t, f, OpenAIOptions{Headers: map[string]string{"X-Gateway-Key": secret}})
	_, err := o.Embed(context.Background(), []string{"x"})
	if seen.Load() != secret {
		t.Errorf("header sent: %v", seen.Load())
	}
	if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("err = %v: the header value must be redacted", err)
	}
	if _, err := NewOpenAI(OpenAIOptions{Model: "m", Headers: map[string]string{"Bad Name": "x"}}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("bad header name: %v", err)
	}
	if _, err := NewOpenAI(OpenAIOptions{Model: "m", Headers: map[string]string{"X-A": "line\nbreak"}}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("bad header value: %v", err)
	}
}
