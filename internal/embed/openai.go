package embed

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ragmem/ragmem/internal/tokens"
)

const (
	defaultOpenAIBaseURL = "https://api.openai.com/v1"
	defaultBatchSize     = 64
	defaultMaxRetries    = 5
	defaultHTTPTimeout   = 60 * time.Second
	defaultAPIKeyEnv     = "OPENAI_API_KEY"

	// DefaultConcurrency is the default number of requests an [OpenAI]
	// embedder has in flight at once, across all its callers.
	DefaultConcurrency = 4
	// DefaultMaxRequestTokens is the default bound on the estimated tokens of
	// one request: OpenAI's limit of 300,000 tokens summed over a request's inputs.
	DefaultMaxRequestTokens = 300_000

	maxOpenAIDim          = 1 << 16
	maxBatchSize          = 2048 // OpenAI's own limit on inputs per request
	maxRetriesLimit       = 100
	maxConcurrency        = 256
	maxRequestTokensLimit = 1 << 30

	defaultBackoffBase   = 500 * time.Millisecond
	defaultBackoffMax    = 30 * time.Second
	defaultRetryAfterCap = 60 * time.Second

	maxErrorMessage = 512 // bytes of a server's error message kept in errors
)

// OpenAIOptions configures [NewOpenAI]. Zero fields mean the documented defaults.
type OpenAIOptions struct {
	// Model is the embedding model name, e.g. "text-embedding-3-small" or
	// "nomic-embed-text". Required.
	Model string
	// BaseURL is the API root that /embeddings is appended to.
	// Default $OPENAI_BASE_URL, else "https://api.openai.com/v1". Local servers:
	// Ollama "http://localhost:11434/v1", LM Studio "http://localhost:1234/v1",
	// llama.cpp and vLLM "http://localhost:8080/v1" / ":8000/v1".
	BaseURL string
	// APIKey is sent as "Authorization: Bearer KEY". Default: the environment
	// variable APIKeyEnv. It may be empty for local servers, and then no
	// Authorization header is sent; OpenAI's own API (api.openai.com) needs
	// one, and without it Embed fails with ErrNoAPIKey before sending anything.
	APIKey string
	// APIKeyEnv names the environment variable read when APIKey is empty, and
	// the one error messages tell the user to set. Default "OPENAI_API_KEY".
	APIKeyEnv string
	// Headers are extra HTTP headers sent with every request (a gateway's own
	// authentication, an organisation id, ...). Their values are redacted from
	// error messages, like the key. Default none.
	Headers map[string]string
	// Dimensions is the expected vector length. It is requested from the server
	// (the "dimensions" field) only for text-embedding-3 models, which can shorten
	// their vectors; for other models it is only checked. 0 = whatever the server
	// returns: learned on the first successful call, then enforced.
	Dimensions int
	// BatchSize is the largest number of texts per request. Default 64, at
	// most 2048 (OpenAI's limit on inputs per request).
	BatchSize int
	// MaxRequestTokens bounds the estimated tokens of one request's inputs
	// together. Default 300,000 (OpenAI's limit). A text's estimate is its
	// length in bytes (an upper bound for byte-level BPE tokenizers), refined
	// by counting it with the model's tiktoken encoding (cl100k_base for
	// models it does not know) when the bound would not fit.
	MaxRequestTokens int
	// Concurrency is the largest number of requests in flight at once, across
	// all the embedder's callers. Default 4. When a request is rate limited
	// (429) every request waits the Retry-After (or backoff) period.
	Concurrency int
	// MaxRetries is how often a request is retried after 429, 5xx or a network
	// error, with exponential backoff and jitter. Default 5; -1 means no retries.
	MaxRetries int
	// Timeout bounds each HTTP request when HTTPClient is nil. Default 60 s.
	Timeout time.Duration
	// HTTPClient sends the requests. Default a client with Timeout.
	HTTPClient *http.Client
}

// OpenAI embeds texts with an OpenAI-compatible embeddings endpoint
// (POST {BaseURL}/embeddings with {"model","input":[...],"encoding_format":"float"}),
// as served by OpenAI, Ollama, vLLM, LM Studio and llama.cpp. It is safe for
// concurrent use.
//
// Texts are sent in batches of at most BatchSize texts and MaxRequestTokens
// estimated tokens, up to Concurrency requests at once (a limit shared by
// all callers); results are placed by the index field of each response item,
// in input order. 429 (honouring Retry-After, and pausing every request of
// the embedder for that long), 5xx and network errors are retried with
// exponential backoff and jitter; other 4xx fail at once with a
// [*StatusError] carrying the server's message, and cancel the call's other
// requests. Every vector is checked for length and finiteness and
// L2-normalised if the server did not. Error messages never contain the API
// key or header values.
//
// Identity is "openai/<model>/d<dim>". The base URL is deliberately not part
// of it: the same model served by different hosts (OpenAI, a proxy, a local
// Ollama) yields comparable vectors. Until the dimension is known (Dimensions
// unset and no successful call yet) Dimension returns 0 and Identity ends in
// "/d0"; call [OpenAI.Probe] first where that matters.
//
// Texts longer than the model's context are rejected by the server (a 400
// surfaced as *StatusError); split them first (package chunk does).
type OpenAI struct {
	client      *openai.Client
	model       string
	base        string // BaseURL without trailing slash
	apiKey      string // only for redaction
	keyEnv      string // the variable the key comes from, for error messages
	keyMissing  bool   // the server needs a key and none was given
	secrets     []string
	wantDim     int
	requestDims bool
	batch       int
	maxRetries  int
	concurrency int
	maxTokens   int
	timeout     time.Duration

	slots chan struct{} // one per request in flight

	mu         sync.Mutex
	learnedDim int
	pauseUntil time.Time // no request starts before this (a shared 429 backoff)

	encOnce sync.Once
	enc     *tokens.Encoding // counts tokens when the byte bound does not fit; nil if unavailable

	// Unexported knobs, shortened by tests.
	backoffBase, backoffMax, retryAfterCap time.Duration
}

// StatusError is an HTTP error status from the embedding server: a
// non-retryable 4xx, or the last of the retried statuses.
type StatusError struct {
	StatusCode int    // HTTP status code
	Type       string // the error type from an OpenAI error body, if any
	Message    string // the server's message, at most 512 bytes, API key redacted
	URL        string // the endpoint that was called
	Hint       string // what the user can do about it, if known
}

func (e *StatusError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = "(no message)"
	}
	s := fmt.Sprintf("embed: %s returned HTTP %d %s: %s", e.URL, e.StatusCode, http.StatusText(e.StatusCode), msg)
	if e.StatusCode == http.StatusNotFound {
		s += " (check the model name, and that the base URL is the API root, usually ending in /v1)"
	}
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	return s
}

// NewOpenAI returns an embedder for an OpenAI-compatible endpoint. It does not
// contact the server.
func NewOpenAI(opts OpenAIOptions) (*OpenAI, error) {
	model := strings.TrimSpace(opts.Model)
	if model == "" {
		return nil, fmt.Errorf("%w: OpenAIOptions.Model is required", ErrInvalidOptions)
	}
	if err := opts.checkRanges(); err != nil {
		return nil, err
	}
	base := strings.TrimSpace(opts.BaseURL)
	if base == "" {
		base = strings.TrimSpace(os.Getenv("OPENAI_BASE_URL"))
	}
	if base == "" {
		base = defaultOpenAIBaseURL
	}
	if err := checkBaseURL(base); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	keyEnv := strings.TrimSpace(opts.APIKeyEnv)
	if keyEnv == "" {
		keyEnv = defaultAPIKeyEnv
	}
	key := opts.APIKey
	if key == "" {
		key = os.Getenv(keyEnv)
	}
	key = strings.TrimSpace(key)
	secrets, err := headerSecrets(opts.Headers)
	if err != nil {
		return nil, err
	}
	timeout := cmp.Or(opts.Timeout, defaultHTTPTimeout)
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: timeout}
	}
	cfg := openai.DefaultConfig(key)
	base = strings.TrimRight(base, "/")
	cfg.BaseURL = base
	cfg.HTTPClient = recordingDoer{c: hc, headers: opts.Headers}

	o := &OpenAI{
		client:        openai.NewClientWithConfig(cfg),
		model:         model,
		base:          base,
		apiKey:        key,
		keyEnv:        keyEnv,
		keyMissing:    key == "" && needsKey(base) && !hasAuthHeader(opts.Headers),
		secrets:       secrets,
		wantDim:       opts.Dimensions,
		requestDims:   opts.Dimensions > 0 && strings.HasPrefix(model, "text-embedding-3"),
		batch:         cmp.Or(opts.BatchSize, defaultBatchSize),
		maxRetries:    opts.MaxRetries,
		concurrency:   cmp.Or(opts.Concurrency, DefaultConcurrency),
		maxTokens:     cmp.Or(opts.MaxRequestTokens, DefaultMaxRequestTokens),
		timeout:       timeout,
		backoffBase:   defaultBackoffBase,
		backoffMax:    defaultBackoffMax,
		retryAfterCap: defaultRetryAfterCap,
	}
	o.slots = make(chan struct{}, o.concurrency)
	switch o.maxRetries {
	case 0:
		o.maxRetries = defaultMaxRetries
	case -1:
		o.maxRetries = 0
	}
	return o, nil
}

// checkRanges checks the numeric options against their bounds.
func (opts *OpenAIOptions) checkRanges() error {
	for _, r := range []struct {
		name      string
		v, lo, hi int
	}{
		{"Dimensions", opts.Dimensions, 0, maxOpenAIDim},
		{"BatchSize", opts.BatchSize, 0, maxBatchSize},
		{"MaxRetries", opts.MaxRetries, -1, maxRetriesLimit},
		{"Concurrency", opts.Concurrency, 0, maxConcurrency},
		{"MaxRequestTokens", opts.MaxRequestTokens, 0, maxRequestTokensLimit},
	} {
		if r.v < r.lo || r.v > r.hi {
			return fmt.Errorf("%w: %s %d out of range %d..%d", ErrInvalidOptions, r.name, r.v, r.lo, r.hi)
		}
	}
	if opts.Timeout < 0 {
		return fmt.Errorf("%w: negative Timeout %v", ErrInvalidOptions, opts.Timeout)
	}
	return nil
}

// headerSecrets checks the extra headers and returns their values of 4
// bytes or more, which error messages redact.
func headerSecrets(headers map[string]string) ([]string, error) {
	var secrets []string
	for name, v := range headers {
		if name = strings.TrimSpace(name); name == "" || !validHeader(name, v) {
			return nil, fmt.Errorf("%w: header %q is not a valid HTTP header", ErrInvalidOptions, truncateForError(name))
		}
		if len(v) >= 4 {
			secrets = append(secrets, v)
		}
	}
	return secrets, nil
}

// Identity returns "openai/<model>/d<dim>" (d0 while the dimension is unknown).
func (o *OpenAI) Identity() string {
	return "openai/" + o.model + "/d" + strconv.Itoa(o.Dimension())
}

// Dimension returns the configured dimension, else the one learned from the
// first successful call, else 0.
func (o *OpenAI) Dimension() int {
	if o.wantDim > 0 {
		return o.wantDim
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.learnedDim
}

// Concurrency is the largest number of requests o has in flight at once.
// An embedder with this method splits large inputs itself: callers with many
// texts should pass them in one Embed call rather than fan out (see
// [Concurrency]).
func (o *OpenAI) Concurrency() int { return o.concurrency }

// Probe embeds one short text so that Dimension and Identity are known
// afterwards; it also checks that the endpoint, key and model work.
func (o *OpenAI) Probe(ctx context.Context) error {
	_, err := o.Embed(ctx, []string{"probe"})
	return err
}

// Embed embeds texts in batches of at most BatchSize texts and
// MaxRequestTokens estimated tokens, with up to Concurrency requests in
// flight (shared with every other call on o), and returns the vectors in
// input order. Empty texts are sent as a single space, since OpenAI rejects
// empty input. On a failure that is not retried, or once retries are
// exhausted, the call's other requests are cancelled and the first error is
// returned; every goroutine has ended when Embed returns.
func (o *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return [][]float32{}, nil
	}
	if o.keyMissing {
		return nil, fmt.Errorf("%w for %s: set $%s", ErrNoAPIKey, o.endpoint(), o.keyEnv)
	}
	inputs := make([]string, len(texts))
	for i, t := range texts {
		if !utf8.ValidString(t) {
			t = strings.ToValidUTF8(t, "\uFFFD")
		}
		if t == "" {
			t = " "
		}
		inputs[i] = t
	}
	spans := o.plan(inputs)
	if len(spans) == 1 {
		return o.embedBatch(ctx, inputs)
	}
	out := make([][]float32, len(inputs))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(spans))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(o.concurrency, len(spans)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(spans) || ctx.Err() != nil {
					return
				}
				sp := spans[i]
				vecs, err := o.embedBatch(ctx, inputs[sp.lo:sp.hi])
				if err != nil {
					errs[i] = fmt.Errorf("texts %d..%d of %d: %w", sp.lo, sp.hi-1, len(inputs), err)
					cancel()
					return
				}
				copy(out[sp.lo:], vecs)
			}
		}()
	}
	wg.Wait()
	if err := firstError(errs); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err // the caller's context ended between batches
	}
	return out, nil
}

// firstError returns the first error that is not a cancellation caused by
// another failure, else the first error.
func firstError(errs []error) error {
	var first error
	for _, e := range errs {
		if e == nil {
			continue
		}
		if !errors.Is(e, context.Canceled) {
			return e
		}
		if first == nil {
			first = e
		}
	}
	return first
}

// span is a batch: inputs[lo:hi].
type span struct{ lo, hi int }

// plan cuts inputs into batches of at most o.batch texts and o.maxTokens
// estimated tokens (a text too large on its own is a batch of its own).
func (o *OpenAI) plan(inputs []string) []span {
	var spans []span
	lo, tok := 0, 0
	for i, t := range inputs {
		n := len(t) // an upper bound on its tokens
		if tok+n > o.maxTokens {
			n = o.countTokens(t)
		}
		if i > lo && (i-lo >= o.batch || tok+n > o.maxTokens) {
			spans = append(spans, span{lo, i})
			lo, tok = i, 0
		}
		tok += n
	}
	return append(spans, span{lo, len(inputs)})
}

// countTokens counts t with the model's tiktoken encoding, or returns its
// length in bytes when no encoding can be loaded.
func (o *OpenAI) countTokens(t string) int {
	o.encOnce.Do(func() {
		if e, err := tokens.Get(tokens.EncodingNameForModel(o.model)); err == nil {
			o.enc = e
		}
	})
	if o.enc == nil {
		return len(t)
	}
	return o.enc.Count(t)
}

// embedBatch sends one batch, retrying as documented, and returns its
// vectors in input order.
func (o *OpenAI) embedBatch(ctx context.Context, inputs []string) ([][]float32, error) {
	req := openai.EmbeddingRequest{
		Input:          inputs,
		Model:          openai.EmbeddingModel(o.model),
		EncodingFormat: openai.EmbeddingEncodingFormatFloat,
	}
	if o.requestDims {
		req.Dimensions = o.wantDim
	}
	for attempt := 0; ; attempt++ {
		if err := o.waitTurn(ctx); err != nil {
			return nil, err
		}
		info := &attemptInfo{}
		resp, err := o.client.CreateEmbeddings(context.WithValue(ctx, attemptKey{}, info), req)
		<-o.slots
		if err == nil {
			return o.check(resp, len(inputs))
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		failure, retryable := o.classify(err, info)
		if !retryable {
			return nil, failure
		}
		if isQuery(ctx) && unreachable(info.transportErr) {
			// A search waits for this answer: a refused connection says
			// at once that the server is not there, and retrying would
			// only spend the query's time limit (Breaker.QueryTimeout)
			// before the search answers from full text alone.
			return nil, failure
		}
		if attempt >= o.maxRetries {
			return nil, fmt.Errorf("%w after %d attempts: %w", ErrRetriesExhausted, attempt+1, failure)
		}
		d := o.delay(attempt, info)
		if info.transportErr != nil && info.reused.Load() && attempt == 0 {
			// A kept-alive connection the server had closed (it restarted,
			// or stopped): that says nothing of the server until a new
			// connection is tried, at once.
			d = 0
		}
		if info.status == http.StatusTooManyRequests {
			o.pause(d) // the provider's limit holds for every request, not just this one
		}
		if err := sleepCtx(ctx, d); err != nil {
			return nil, err
		}
	}
}

// waitTurn waits until no shared pause is in force and a request slot is
// free, and takes the slot; the caller gives it back after the request.
func (o *OpenAI) waitTurn(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		o.mu.Lock()
		wait := time.Until(o.pauseUntil)
		o.mu.Unlock()
		if wait > 0 {
			if err := sleepCtx(ctx, wait); err != nil {
				return err
			}
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case o.slots <- struct{}{}:
		}
		// A pause may have begun while this request waited for its slot.
		o.mu.Lock()
		wait = time.Until(o.pauseUntil)
		o.mu.Unlock()
		if wait <= 0 {
			return nil
		}
		<-o.slots
	}
}

// pause holds back every request of o for d from now (extending, never
// shortening, a pause in force).
func (o *OpenAI) pause(d time.Duration) {
	until := time.Now().Add(d)
	o.mu.Lock()
	if until.After(o.pauseUntil) {
		o.pauseUntil = until
	}
	o.mu.Unlock()
}

// classify turns a failed attempt into the error to report and whether it may be retried.
func (o *OpenAI) classify(err error, info *attemptInfo) (error, bool) {
	if te := info.transportErr; te != nil {
		// Connection refused/reset, timeout, DNS...: transient. The API key is
		// only ever in a header, but a key pasted into the base URL would show.
		if msg := te.Error(); msg != o.redact(msg) {
			return fmt.Errorf("embed: request to embedding server failed: %s", o.redact(msg)), true
		}
		return fmt.Errorf("embed: request to embedding server failed: %w", te), true
	}
	status := info.status
	if status >= 200 && status < 300 {
		// The response body could not be read or decoded.
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		if errors.As(err, &syn) || errors.As(err, &typ) {
			return fmt.Errorf("%w: cannot decode response: %s", ErrBadResponse, o.redact(err.Error())), false
		}
		if errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: empty response body", ErrBadResponse), false
		}
		return fmt.Errorf("embed: reading response from embedding server failed: %s", o.redact(err.Error())), true
	}
	se := &StatusError{StatusCode: status, URL: o.endpoint()}
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &reqErr): // not an OpenAI error body; it may wrap an empty APIError
		se.Message = messageFromBody(reqErr.Body)
	case errors.As(err, &apiErr):
		se.Type = apiErr.Type
		se.Message = apiErr.Message
	default:
		se.Message = err.Error()
	}
	se.Message = truncateBytes(strings.TrimSpace(o.redact(se.Message)), maxErrorMessage)
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		if o.apiKey == "" {
			se.Hint = "no API key was sent: set $" + o.keyEnv
		} else {
			se.Hint = "the API key (from $" + o.keyEnv + " or as configured) was refused"
		}
	}
	if status == 0 {
		return fmt.Errorf("embed: embedding request failed: %s", se.Message), false
	}
	return se, status == http.StatusTooManyRequests || status >= 500
}

// endpoint is the URL called, for error messages, with any password hidden.
func (o *OpenAI) endpoint() string { return o.redact(redactURL(o.base) + "/embeddings") }

// delay is the wait before retry number attempt+1: exponential backoff with
// jitter in [d/2, d), but never less than a (capped) Retry-After.
func (o *OpenAI) delay(attempt int, info *attemptInfo) time.Duration {
	d := o.backoffBase << min(attempt, 30)
	if d <= 0 || d > o.backoffMax {
		d = o.backoffMax
	}
	if half := int64(d / 2); half > 0 {
		d = time.Duration(half + rand.Int64N(half))
	}
	if ra, ok := retryAfter(info.header, time.Now()); ok {
		d = max(d, min(ra, o.retryAfterCap))
	}
	return d
}

// retryAfter reads "retry-after-ms" (OpenAI) or "Retry-After" (seconds or an HTTP date).
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if h == nil {
		return 0, false
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e9 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || s > 1e6 || math.IsNaN(s) {
			return 0, false
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// check validates a response for n inputs and returns the vectors in input order.
func (o *OpenAI) check(resp openai.EmbeddingResponse, n int) ([][]float32, error) {
	if len(resp.Data) != n {
		return nil, fmt.Errorf("%w: %d embeddings for %d inputs", ErrBadResponse, len(resp.Data), n)
	}
	want := o.Dimension()
	out := make([][]float32, n)
	dim := 0
	for _, item := range resp.Data {
		i := item.Index
		if i < 0 || i >= n {
			return nil, fmt.Errorf("%w: item index %d out of range 0..%d", ErrBadResponse, i, n-1)
		}
		if out[i] != nil {
			return nil, fmt.Errorf("%w: item index %d given twice", ErrBadResponse, i)
		}
		v := item.Embedding
		if len(v) == 0 {
			return nil, fmt.Errorf("%w: empty embedding for input %d", ErrBadResponse, i)
		}
		if dim == 0 {
			dim = len(v)
		}
		if len(v) != dim {
			return nil, fmt.Errorf("%w: embeddings of lengths %d and %d in one response", ErrDimensionMismatch, dim, len(v))
		}
		if want > 0 && len(v) != want {
			return nil, fmt.Errorf("%w: model %s returned %d dimensions, want %d", ErrDimensionMismatch, o.model, len(v), want)
		}
		if err := normalize(v); err != nil {
			return nil, fmt.Errorf("%w: input %d: %w", ErrBadResponse, i, err)
		}
		out[i] = v
	}
	if o.wantDim == 0 {
		o.mu.Lock()
		defer o.mu.Unlock()
		switch o.learnedDim {
		case 0:
			o.learnedDim = dim
		case dim:
		default:
			// A concurrent first call learned another dimension.
			return nil, fmt.Errorf("%w: model %s returned %d dimensions, earlier %d", ErrDimensionMismatch, o.model, dim, o.learnedDim)
		}
	}
	return out, nil
}

var errZeroVector = errors.New("zero vector")

// normalize scales v to unit L2 norm in place unless it already is.
func normalize(v []float32) error {
	var sum float64
	for _, x := range v {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return errors.New("non-finite value")
		}
		sum += f * f
	}
	if sum == 0 || math.IsInf(sum, 0) {
		return errZeroVector
	}
	if math.Abs(sum-1) < 1e-5 {
		return nil
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range v {
		v[i] = float32(float64(x) * inv)
	}
	return nil
}

func (o *OpenAI) redact(s string) string {
	if len(o.apiKey) >= 4 {
		s = strings.ReplaceAll(s, o.apiKey, "[redacted]")
	}
	for _, v := range o.secrets {
		s = strings.ReplaceAll(s, v, "[redacted]")
	}
	return s
}

// checkBaseURL accepts an absolute http(s) URL.
func checkBaseURL(base string) error {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("base URL %q is not an http(s) URL", truncateForError(redactURL(base)))
	}
	return nil
}

// needsKey reports whether the server is known to refuse requests without
// an API key: OpenAI's own API.
func needsKey(base string) bool {
	u, err := url.Parse(base)
	return err == nil && strings.EqualFold(u.Hostname(), "api.openai.com")
}

// hasAuthHeader reports whether the extra headers authenticate by themselves.
func hasAuthHeader(h map[string]string) bool {
	for k := range h {
		if strings.EqualFold(strings.TrimSpace(k), "Authorization") {
			return true
		}
	}
	return false
}

// validHeader checks a header's name (an RFC 9110 token) and value (no
// control characters but tab).
func validHeader(name, value string) bool {
	for _, r := range name {
		if r > 0x7e || r <= 0x20 || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", r) {
			return false
		}
	}
	for _, r := range value {
		if (r < 0x20 && r != '\t') || r == 0x7f {
			return false
		}
	}
	return len(value) <= 8192
}

// redactURL hides a password in a URL's userinfo.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// messageFromBody extracts an error message from a non-OpenAI error body:
// {"error":"..."} (Ollama, llama.cpp), {"message":"..."}, {"detail":"..."}
// (vLLM/FastAPI), else the body itself.
func messageFromBody(body []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) == nil {
		for _, k := range []string{"error", "message", "detail"} {
			raw, ok := m[k]
			if !ok {
				continue
			}
			var s string
			if json.Unmarshal(raw, &s) == nil && s != "" {
				return s
			}
			var inner struct {
				Message string `json:"message"`
			}
			if json.Unmarshal(raw, &inner) == nil && inner.Message != "" {
				return inner.Message
			}
			return string(raw)
		}
	}
	return string(body)
}

func truncateBytes(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// attemptInfo records what the transport saw during one request, which
// go-openai's errors do not expose (Retry-After, transport failures).
type attemptInfo struct {
	status       int
	header       http.Header
	transportErr error
	reused       atomic.Bool // the request went out on a kept-alive connection
}

type attemptKey struct{}

// recordingDoer wraps the HTTP client: it adds the extra headers and fills
// the attemptInfo found in the request's context.
type recordingDoer struct {
	c       *http.Client
	headers map[string]string
}

func (d recordingDoer) Do(req *http.Request) (*http.Response, error) {
	for k, v := range d.headers {
		req.Header.Set(strings.TrimSpace(k), v)
	}
	info, ok := req.Context().Value(attemptKey{}).(*attemptInfo)
	if ok {
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(ci httptrace.GotConnInfo) { info.reused.Store(ci.Reused) },
		}))
	}
	resp, err := d.c.Do(req)
	if ok {
		if err != nil {
			info.transportErr = err
		} else {
			info.status = resp.StatusCode
			info.header = resp.Header
		}
	}
	return resp, err
}
