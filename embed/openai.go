package embed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

const (
	defaultOpenAIBaseURL = "https://api.openai.com/v1"
	defaultBatchSize     = 64
	defaultMaxRetries    = 5
	defaultHTTPTimeout   = 60 * time.Second

	maxOpenAIDim    = 1 << 16
	maxBatchSize    = 2048 // OpenAI's own limit on inputs per request
	maxRetriesLimit = 100

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
	// APIKey is sent as "Authorization: Bearer KEY". Default $OPENAI_API_KEY;
	// may be empty for local servers, and then no Authorization header is sent.
	APIKey string
	// Dimensions is the expected vector length. It is requested from the server
	// (the "dimensions" field) only for text-embedding-3 models, which can shorten
	// their vectors; for other models it is only checked. 0 = whatever the server
	// returns: learned on the first successful call, then enforced.
	Dimensions int
	// BatchSize is the number of texts per request. Default 64, at most 2048.
	BatchSize int
	// MaxRetries is how often a request is retried after 429, 5xx or a network
	// error, with exponential backoff and jitter. Default 5; -1 means no retries.
	MaxRetries int
	// HTTPClient sends the requests. Default a client with a 60 s timeout.
	HTTPClient *http.Client
}

// OpenAI embeds texts with an OpenAI-compatible embeddings endpoint
// (POST {BaseURL}/embeddings with {"model","input":[...],"encoding_format":"float"}),
// as served by OpenAI, Ollama, vLLM, LM Studio and llama.cpp. It is safe for
// concurrent use.
//
// Texts are sent in batches of BatchSize; results are placed by the index
// field of each response item. 429 (honouring Retry-After), 5xx and network
// errors are retried with exponential backoff and jitter; other 4xx fail at
// once with a [*StatusError] carrying the server's message. Every vector is
// checked for length and finiteness and L2-normalised if the server did not.
// Error messages never contain the API key.
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
	wantDim     int
	requestDims bool
	batch       int
	maxRetries  int

	mu         sync.Mutex
	learnedDim int

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
	return s
}

// NewOpenAI returns an embedder for an OpenAI-compatible endpoint. It does not
// contact the server.
func NewOpenAI(opts OpenAIOptions) (*OpenAI, error) {
	model := strings.TrimSpace(opts.Model)
	if model == "" {
		return nil, fmt.Errorf("%w: OpenAIOptions.Model is required", ErrInvalidOptions)
	}
	if opts.Dimensions < 0 || opts.Dimensions > maxOpenAIDim {
		return nil, fmt.Errorf("%w: Dimensions %d out of range 0..%d", ErrInvalidOptions, opts.Dimensions, maxOpenAIDim)
	}
	if opts.BatchSize < 0 || opts.BatchSize > maxBatchSize {
		return nil, fmt.Errorf("%w: BatchSize %d out of range 0..%d", ErrInvalidOptions, opts.BatchSize, maxBatchSize)
	}
	if opts.MaxRetries < -1 || opts.MaxRetries > maxRetriesLimit {
		return nil, fmt.Errorf("%w: MaxRetries %d out of range -1..%d", ErrInvalidOptions, opts.MaxRetries, maxRetriesLimit)
	}
	base := strings.TrimSpace(opts.BaseURL)
	if base == "" {
		base = strings.TrimSpace(os.Getenv("OPENAI_BASE_URL"))
	}
	if base == "" {
		base = defaultOpenAIBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: base URL %q is not an http(s) URL", ErrInvalidOptions, truncateForError(redactURL(base)))
	}
	key := opts.APIKey
	if key == "" {
		key = os.Getenv("OPENAI_API_KEY")
	}
	key = strings.TrimSpace(key)

	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: defaultHTTPTimeout}
	}
	cfg := openai.DefaultConfig(key)
	base = strings.TrimRight(base, "/")
	cfg.BaseURL = base
	cfg.HTTPClient = recordingDoer{hc}

	o := &OpenAI{
		client:        openai.NewClientWithConfig(cfg),
		model:         model,
		base:          base,
		apiKey:        key,
		wantDim:       opts.Dimensions,
		requestDims:   opts.Dimensions > 0 && strings.HasPrefix(model, "text-embedding-3"),
		batch:         opts.BatchSize,
		maxRetries:    opts.MaxRetries,
		backoffBase:   defaultBackoffBase,
		backoffMax:    defaultBackoffMax,
		retryAfterCap: defaultRetryAfterCap,
	}
	if o.batch == 0 {
		o.batch = defaultBatchSize
	}
	switch o.maxRetries {
	case 0:
		o.maxRetries = defaultMaxRetries
	case -1:
		o.maxRetries = 0
	}
	return o, nil
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

// Probe embeds one short text so that Dimension and Identity are known
// afterwards; it also checks that the endpoint, key and model work.
func (o *OpenAI) Probe(ctx context.Context) error {
	_, err := o.Embed(ctx, []string{"probe"})
	return err
}

// Embed embeds texts in batches of BatchSize, one request at a time.
// Empty texts are sent as a single space, since OpenAI rejects empty input.
func (o *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for start := 0; start < len(texts); start += o.batch {
		end := min(start+o.batch, len(texts))
		vecs, err := o.embedBatch(ctx, texts[start:end])
		if err != nil {
			if len(texts) > o.batch {
				return nil, fmt.Errorf("texts %d..%d of %d: %w", start, end-1, len(texts), err)
			}
			return nil, err
		}
		copy(out[start:], vecs)
	}
	return out, nil
}

func (o *OpenAI) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
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
	req := openai.EmbeddingRequest{
		Input:          inputs,
		Model:          openai.EmbeddingModel(o.model),
		EncodingFormat: openai.EmbeddingEncodingFormatFloat,
	}
	if o.requestDims {
		req.Dimensions = o.wantDim
	}
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		info := &attemptInfo{}
		resp, err := o.client.CreateEmbeddings(context.WithValue(ctx, attemptKey{}, info), req)
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
		if attempt >= o.maxRetries {
			return nil, fmt.Errorf("%w after %d attempts: %w", ErrRetriesExhausted, attempt+1, failure)
		}
		if err := sleepCtx(ctx, o.delay(attempt, info)); err != nil {
			return nil, err
		}
	}
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
	return s
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
}

type attemptKey struct{}

// recordingDoer wraps the HTTP client and fills the attemptInfo found in the
// request's context.
type recordingDoer struct{ c *http.Client }

func (d recordingDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.c.Do(req)
	if info, ok := req.Context().Value(attemptKey{}).(*attemptInfo); ok {
		if err != nil {
			info.transportErr = err
		} else {
			info.status = resp.StatusCode
			info.header = resp.Header
		}
	}
	return resp, err
}
