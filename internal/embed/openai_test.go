package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const testKey = "sk-test-0123456789abcdef"

// embRequest is the body of POST /v1/embeddings, decoded the way the real API
// does: unknown fields are rejected, input may be a string, a list of strings
// or token arrays.
type embRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat *string         `json:"encoding_format,omitempty"`
	Dimensions     *int            `json:"dimensions,omitempty"`
	User           *string         `json:"user,omitempty"`

	inputs []string // Input decoded
	raw    []byte
	ctx    context.Context // the HTTP request's: done when the client gives up
}

type embItem struct {
	Object    string    `json:"object"`
	Index     int       `json:"index"`
	Embedding []float32 `json:"embedding"`
}

type embResponse struct {
	Object string    `json:"object"`
	Data   []embItem `json:"data"`
	Model  string    `json:"model"`
	Usage  struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// fakeServer speaks the OpenAI /v1/embeddings protocol. Vectors are the
// texts' lexical embeddings at dimension dim, scaled by 3 (so clients must
// normalise). hook, if set, may answer a request itself (return true).
type fakeServer struct {
	t    *testing.T
	key  string
	dim  int
	lex  *Lexical
	srv  *httptest.Server
	hook func(call int, req *embRequest, w http.ResponseWriter) bool
	// mutate, if set, edits a successful response before it is sent.
	mutate func(call int, req *embRequest, resp *embResponse)

	mu       sync.Mutex
	hits     int // HTTP requests received, valid or not
	requests []*embRequest
}

func newFakeServer(t *testing.T, dim int) *fakeServer {
	f := &fakeServer{t: t, key: testKey, dim: dim, lex: NewLexical(&LexicalOptions{Dimension: dim})}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) baseURL() string { return f.srv.URL + "/v1" }

func (f *fakeServer) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits
}

func (f *fakeServer) request(i int) *embRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[i]
}

func openAIError(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	body := map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}}
	_ = json.NewEncoder(w).Encode(body)
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.hits++
	f.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		openAIError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", "Unknown request URL: "+r.Method+" "+r.URL.Path)
		return
	}
	if f.key != "" && r.Header.Get("Authorization") != "Bearer "+f.key {
		// The real API echoes a masked key; this one echoes it whole to prove the client redacts it.
		openAIError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key",
			"Incorrect API key provided: "+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+".")
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		openAIError(w, http.StatusBadRequest, "invalid_request_error", "", "Content-Type must be application/json, got "+ct)
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		openAIError(w, http.StatusBadRequest, "invalid_request_error", "", err.Error())
		return
	}
	req := &embRequest{raw: raw, ctx: r.Context()}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(req); err != nil {
		openAIError(w, http.StatusBadRequest, "invalid_request_error", "", "We could not parse the JSON body of your request: "+err.Error())
		return
	}
	var one string
	switch {
	case json.Unmarshal(req.Input, &req.inputs) == nil:
	case json.Unmarshal(req.Input, &one) == nil:
		req.inputs = []string{one}
	default:
		openAIError(w, http.StatusBadRequest, "invalid_request_error", "", "'$.input' is invalid: this fake accepts strings only")
		return
	}
	f.mu.Lock()
	call := len(f.requests)
	f.requests = append(f.requests, req)
	f.mu.Unlock()

	if f.hook != nil && f.hook(call, req, w) {
		return
	}
	if req.Model == "" {
		openAIError(w, http.StatusBadRequest, "invalid_request_error", "", "you must provide a model parameter")
		return
	}
	if len(req.inputs) == 0 || len(req.inputs) > 2048 {
		openAIError(w, http.StatusBadRequest, "invalid_request_error", "", "'$.input' is invalid")
		return
	}
	for _, in := range req.inputs {
		if in == "" {
			openAIError(w, http.StatusBadRequest, "invalid_request_error", "", "'$.input' is invalid. Please check the API reference")
			return
		}
	}
	if req.EncodingFormat != nil && *req.EncodingFormat == "base64" {
		// A real server would answer with base64 strings, which a float client cannot read.
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":"AAAAAA=="}],"model":"x","usage":{"prompt_tokens":1,"total_tokens":1}}`)
		return
	}
	dim := f.dim
	if req.Dimensions != nil {
		dim = *req.Dimensions
	}
	lex := f.lex
	if dim != f.dim {
		lex = NewLexical(&LexicalOptions{Dimension: dim})
	}
	resp := &embResponse{Object: "list", Model: req.Model}
	for i, in := range req.inputs {
		v := lex.EmbedText(in)
		for j := range v {
			v[j] *= 3
		}
		resp.Data = append(resp.Data, embItem{Object: "embedding", Index: i, Embedding: v})
		resp.Usage.PromptTokens += len(strings.Fields(in))
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens
	if f.mutate != nil {
		f.mutate(call, req, resp)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// newTestOpenAI returns a client for f with short backoffs.
func newTestOpenAI(t *testing.T, f *fakeServer, opts OpenAIOptions) *OpenAI {
	t.Helper()
	if opts.Model == "" {
		opts.Model = "nomic-embed-text"
	}
	if opts.BaseURL == "" {
		opts.BaseURL = f.baseURL()
	}
	if opts.APIKey == "" {
		opts.APIKey = testKey
	}
	o, err := NewOpenAI(opts)
	if err != nil {
		t.Fatal(err)
	}
	o.backoffBase, o.backoffMax, o.retryAfterCap = time.Millisecond, 5*time.Millisecond, 50*time.Millisecond
	return o
}

// wantVectors checks that got are the unit-normalised lexical vectors of texts.
func wantVectors(t *testing.T, f *fakeServer, texts []string, got [][]float32) {
	t.Helper()
	if len(got) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(got), len(texts))
	}
	for i, text := range texts {
		if text == "" {
			text = " "
		}
		want := f.lex.EmbedText(text)
		checkUnit(t, got[i], f.dim)
		if c := cosine(got[i], want); c < 1-1e-5 {
			t.Fatalf("vector %d is not the embedding of %q (cos %v)", i, text, c)
		}
	}
}

func TestOpenAIEmbed(t *testing.T) {
	f := newFakeServer(t, 16)
	o := newTestOpenAI(t, f, OpenAIOptions{})
	if o.Dimension() != 0 || o.Identity() != "openai/nomic-embed-text/d0" {
		t.Fatalf("before first call: dim %d identity %q", o.Dimension(), o.Identity())
	}
	texts := []string{"first text", "second, different text", "", "inv\xffalid utf8"}
	got, err := o.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	texts[3] = "inv\uFFFDalid utf8"
	wantVectors(t, f, texts, got)
	if o.Dimension() != 16 || o.Identity() != "openai/nomic-embed-text/d16" {
		t.Errorf("after first call: dim %d identity %q", o.Dimension(), o.Identity())
	}
	req := f.request(0)
	if req.Model != "nomic-embed-text" {
		t.Errorf("model %q", req.Model)
	}
	if req.EncodingFormat == nil || *req.EncodingFormat != "float" {
		t.Errorf("encoding_format = %v, want \"float\" (base64 must not be used): %s", req.EncodingFormat, req.raw)
	}
	if req.Dimensions != nil {
		t.Errorf("dimensions sent for a model that does not support it: %s", req.raw)
	}
	if len(req.inputs) != 4 || req.inputs[2] != " " {
		t.Errorf("inputs sent: %q", req.inputs)
	}
	// No texts, no request.
	got, err = o.Embed(context.Background(), nil)
	if err != nil || len(got) != 0 || f.calls() != 1 {
		t.Errorf("Embed(nil) = %v, %v after %d calls", got, err, f.calls())
	}
}

func TestOpenAIOutOfOrderIndexes(t *testing.T) {
	f := newFakeServer(t, 12)
	f.mutate = func(_ int, _ *embRequest, resp *embResponse) {
		for i, j := 0, len(resp.Data)-1; i < j; i, j = i+1, j-1 {
			resp.Data[i], resp.Data[j] = resp.Data[j], resp.Data[i]
		}
		resp.Data[0], resp.Data[1] = resp.Data[1], resp.Data[0]
	}
	o := newTestOpenAI(t, f, OpenAIOptions{})
	texts := []string{"alpha one", "beta two", "gamma three", "delta four", "epsilon five"}
	got, err := o.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	wantVectors(t, f, texts, got)
}

func TestOpenAIBatching(t *testing.T) {
	f := newFakeServer(t, 8)
	o := newTestOpenAI(t, f, OpenAIOptions{BatchSize: 3, Concurrency: 1}) // one at a time: requests arrive in order
	texts := make([]string, 10)
	for i := range texts {
		texts[i] = fmt.Sprintf("text number %d about topic %c", i, 'a'+i)
	}
	got, err := o.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	wantVectors(t, f, texts, got)
	if f.calls() != 4 {
		t.Fatalf("%d requests, want 4", f.calls())
	}
	sent := 0
	for i, want := range []int{3, 3, 3, 1} {
		req := f.request(i)
		if len(req.inputs) != want {
			t.Errorf("request %d has %d inputs, want %d", i, len(req.inputs), want)
		}
		for j, in := range req.inputs {
			if in != texts[sent+j] {
				t.Errorf("request %d input %d = %q, want %q", i, j, in, texts[sent+j])
			}
		}
		sent += len(req.inputs)
	}
}

func TestOpenAIDefaultBatchSize(t *testing.T) {
	f := newFakeServer(t, 4)
	o := newTestOpenAI(t, f, OpenAIOptions{})
	texts := make([]string, 130)
	for i := range texts {
		texts[i] = fmt.Sprint("t", i)
	}
	if _, err := o.Embed(context.Background(), texts); err != nil {
		t.Fatal(err)
	}
	// The requests run concurrently and may arrive in any order.
	sizes := map[int]int{}
	for i := range f.calls() {
		sizes[len(f.request(i).inputs)]++
	}
	if f.calls() != 3 || sizes[64] != 2 || sizes[2] != 1 {
		t.Errorf("130 texts: %d requests of sizes %v, want 64, 64 and 2", f.calls(), sizes)
	}
}

func TestOpenAIRetries(t *testing.T) {
	cases := []struct {
		name     string
		fail     func(w http.ResponseWriter)
		failures int
		minWait  time.Duration
	}{
		{"429 with Retry-After", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "1") // 1 s, capped to retryAfterCap (50 ms) in tests
			openAIError(w, http.StatusTooManyRequests, "requests", "rate_limit_exceeded", "Rate limit reached")
		}, 1, 50 * time.Millisecond},
		{"429 with retry-after-ms", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After-Ms", "30")
			openAIError(w, http.StatusTooManyRequests, "requests", "rate_limit_exceeded", "Rate limit reached")
		}, 2, 60 * time.Millisecond},
		{"500", func(w http.ResponseWriter) {
			openAIError(w, http.StatusInternalServerError, "server_error", "", "The server had an error")
		}, 1, 0},
		{"502 html", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, "<html>bad gateway</html>")
		}, 3, 0},
		{"connection dropped", func(w http.ResponseWriter) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}, 2, 0},
		{"truncated body", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "500")
			_, _ = io.WriteString(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,`)
		}, 1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeServer(t, 8)
			f.hook = func(call int, _ *embRequest, w http.ResponseWriter) bool {
				if call < c.failures {
					c.fail(w)
					return true
				}
				return false
			}
			o := newTestOpenAI(t, f, OpenAIOptions{MaxRetries: 3})
			start := time.Now()
			got, err := o.Embed(context.Background(), []string{"retry me"})
			if err != nil {
				t.Fatal(err)
			}
			wantVectors(t, f, []string{"retry me"}, got)
			if f.calls() != c.failures+1 {
				t.Errorf("%d requests, want %d", f.calls(), c.failures+1)
			}
			if el := time.Since(start); el < c.minWait {
				t.Errorf("took %v: Retry-After not honoured (want >= %v)", el, c.minWait)
			}
		})
	}
}

func TestOpenAINoRetryOn4xx(t *testing.T) {
	cases := []struct {
		name    string
		status  int
		body    string
		typ     string
		message string
	}{
		{"400 openai error", 400,
			`{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","param":"input","code":null}}`,
			"invalid_request_error", "maximum context length is 8192 tokens"},
		{"404 ollama model missing", 404, `{"error":"model \"nomic-embed-text\" not found, try pulling it first"}`,
			"", `model "nomic-embed-text" not found`},
		{"422 vllm detail", 422, `{"detail":"input too long"}`, "", "input too long"},
		{"403 plain text", 403, "forbidden by proxy", "", "forbidden by proxy"},
		{"413 empty", 413, "", "", "(no message)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeServer(t, 8)
			f.hook = func(_ int, _ *embRequest, w http.ResponseWriter) bool {
				w.WriteHeader(c.status)
				_, _ = io.WriteString(w, c.body)
				return true
			}
			o := newTestOpenAI(t, f, OpenAIOptions{})
			_, err := o.Embed(context.Background(), []string{"x"})
			var se *StatusError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want *StatusError", err)
			}
			if se.StatusCode != c.status || se.Type != c.typ {
				t.Errorf("status %d type %q, want %d %q", se.StatusCode, se.Type, c.status, c.typ)
			}
			if !strings.Contains(err.Error(), c.message) || !strings.Contains(err.Error(), fmt.Sprint(c.status)) {
				t.Errorf("error %q lacks status or message %q", err, c.message)
			}
			if !strings.Contains(err.Error(), f.baseURL()+"/embeddings") {
				t.Errorf("error %q does not name the endpoint", err)
			}
			if errors.Is(err, ErrRetriesExhausted) || f.calls() != 1 {
				t.Errorf("%d requests for a %d: it must not be retried", f.calls(), c.status)
			}
		})
	}
}

func TestOpenAIUnauthorizedDoesNotLeakKey(t *testing.T) {
	f := newFakeServer(t, 8)
	const wrongKey = "sk-wrong-key-that-must-not-leak-42"
	o := newTestOpenAI(t, f, OpenAIOptions{APIKey: wrongKey})
	_, err := o.Embed(context.Background(), []string{"x"})
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusUnauthorized {
		t.Fatalf("err = %v, want a 401 StatusError", err)
	}
	if strings.Contains(err.Error(), wrongKey) || strings.Contains(fmt.Sprintf("%+v", se), wrongKey) {
		t.Errorf("error leaks the API key: %v", err)
	}
	if !strings.Contains(err.Error(), "Incorrect API key provided: [redacted]") {
		t.Errorf("server message not surfaced: %v", err)
	}
	if f.calls() != 1 {
		t.Errorf("%d requests, want 1", f.calls())
	}
	// The right key in the header works.
	f2 := newFakeServer(t, 8)
	if _, err := newTestOpenAI(t, f2, OpenAIOptions{}).Embed(context.Background(), []string{"x"}); err != nil {
		t.Fatalf("with the right key: %v", err)
	}
}

func TestOpenAINoKeyNoAuthorizationHeader(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	f := newFakeServer(t, 8)
	f.key = ""
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Values("Authorization")...)
		mu.Unlock()
		f.serve(w, r)
	}))
	defer srv.Close()
	o, err := NewOpenAI(OpenAIOptions{Model: "m", BaseURL: srv.URL + "/v1/"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Embed(context.Background(), []string{"local server"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auth) != 0 {
		t.Errorf("Authorization sent without a key: %q", auth)
	}
}

func TestOpenAIGivesUp(t *testing.T) {
	f := newFakeServer(t, 8)
	f.hook = func(_ int, _ *embRequest, w http.ResponseWriter) bool {
		openAIError(w, http.StatusServiceUnavailable, "server_error", "", "overloaded")
		return true
	}
	o := newTestOpenAI(t, f, OpenAIOptions{MaxRetries: 2})
	_, err := o.Embed(context.Background(), []string{"x"})
	var se *StatusError
	if !errors.Is(err, ErrRetriesExhausted) || !errors.As(err, &se) || se.StatusCode != 503 {
		t.Fatalf("err = %v, want ErrRetriesExhausted wrapping a 503", err)
	}
	if !strings.Contains(err.Error(), "overloaded") || !strings.Contains(err.Error(), "3 attempts") {
		t.Errorf("error %q", err)
	}
	if f.calls() != 3 {
		t.Errorf("%d requests, want 1 + MaxRetries = 3", f.calls())
	}

	// MaxRetries -1: no retry at all.
	f2 := newFakeServer(t, 8)
	f2.hook = f.hook
	_, err = newTestOpenAI(t, f2, OpenAIOptions{MaxRetries: -1}).Embed(context.Background(), []string{"x"})
	if !errors.Is(err, ErrRetriesExhausted) || f2.calls() != 1 {
		t.Errorf("MaxRetries -1: %d requests, err %v", f2.calls(), err)
	}
}

func TestOpenAIContextCancelledDuringBackoff(t *testing.T) {
	f := newFakeServer(t, 8)
	f.hook = func(_ int, _ *embRequest, w http.ResponseWriter) bool {
		w.Header().Set("Retry-After", "30")
		openAIError(w, http.StatusTooManyRequests, "requests", "", "slow down")
		return true
	}
	o := newTestOpenAI(t, f, OpenAIOptions{})
	o.backoffBase, o.backoffMax, o.retryAfterCap = 10*time.Second, 10*time.Second, time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := o.Embed(ctx, []string{"x"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("cancellation took %v", el)
	}
	if f.calls() != 1 {
		t.Errorf("%d requests, want 1", f.calls())
	}
}

func TestOpenAIContextDeadlineDuringRequest(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	f := newFakeServer(t, 8)
	f.hook = func(_ int, _ *embRequest, w http.ResponseWriter) bool {
		<-release
		return false
	}
	o := newTestOpenAI(t, f, OpenAIOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := o.Embed(ctx, []string{"x"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	if f.calls() != 1 {
		t.Errorf("%d requests after the deadline, want 1", f.calls())
	}
}

func TestOpenAIBadResponses(t *testing.T) {
	cases := []struct {
		name    string
		opts    OpenAIOptions
		mutate  func(resp *embResponse)
		wantErr error
	}{
		{"wrong dimension", OpenAIOptions{Dimensions: 12}, nil, ErrDimensionMismatch},
		{"mixed lengths", OpenAIOptions{}, func(r *embResponse) { r.Data[1].Embedding = r.Data[1].Embedding[:5] }, ErrDimensionMismatch},
		{"too few items", OpenAIOptions{}, func(r *embResponse) { r.Data = r.Data[:1] }, ErrBadResponse},
		{"too many items", OpenAIOptions{}, func(r *embResponse) { r.Data = append(r.Data, r.Data[0]) }, ErrBadResponse},
		{"duplicate index", OpenAIOptions{}, func(r *embResponse) { r.Data[1].Index = 0 }, ErrBadResponse},
		{"index out of range", OpenAIOptions{}, func(r *embResponse) { r.Data[1].Index = 7 }, ErrBadResponse},
		{"negative index", OpenAIOptions{}, func(r *embResponse) { r.Data[0].Index = -1 }, ErrBadResponse},
		{"empty vector", OpenAIOptions{}, func(r *embResponse) { r.Data[0].Embedding = nil }, ErrBadResponse},
		{"zero vector", OpenAIOptions{}, func(r *embResponse) { clear(r.Data[0].Embedding) }, ErrBadResponse},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeServer(t, 8)
			if c.mutate != nil {
				f.mutate = func(_ int, _ *embRequest, r *embResponse) { c.mutate(r) }
			}
			o := newTestOpenAI(t, f, c.opts)
			_, err := o.Embed(context.Background(), []string{"one", "two"})
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("err = %v, want %v", err, c.wantErr)
			}
			if f.calls() != 1 {
				t.Errorf("%d requests: a bad response must not be retried", f.calls())
			}
			if c.opts.Dimensions == 0 && o.Dimension() != 0 {
				t.Errorf("dimension %d learned from a bad response", o.Dimension())
			}
		})
	}
}

func TestOpenAIUndecodableResponse(t *testing.T) {
	for name, body := range map[string]string{
		"not json":      "<html>hello</html>",
		"base64 vector": `{"object":"list","data":[{"object":"embedding","index":0,"embedding":"AAAAAA=="}],"model":"m"}`,
		"empty body":    "",
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakeServer(t, 8)
			f.hook = func(_ int, _ *embRequest, w http.ResponseWriter) bool {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, body)
				return true
			}
			_, err := newTestOpenAI(t, f, OpenAIOptions{}).Embed(context.Background(), []string{"x"})
			if !errors.Is(err, ErrBadResponse) {
				t.Fatalf("err = %v, want ErrBadResponse", err)
			}
			if f.calls() != 1 {
				t.Errorf("%d requests", f.calls())
			}
		})
	}
}

func TestOpenAILearnedDimensionEnforced(t *testing.T) {
	f := newFakeServer(t, 8)
	o := newTestOpenAI(t, f, OpenAIOptions{})
	if _, err := o.Embed(context.Background(), []string{"first"}); err != nil {
		t.Fatal(err)
	}
	// The server switches to another model behind the same name.
	f.mutate = func(_ int, _ *embRequest, r *embResponse) {
		for i := range r.Data {
			r.Data[i].Embedding = append(r.Data[i].Embedding, 1)
		}
	}
	_, err := o.Embed(context.Background(), []string{"second"})
	if !errors.Is(err, ErrDimensionMismatch) {
		t.Fatalf("err = %v, want ErrDimensionMismatch", err)
	}
	if o.Dimension() != 8 {
		t.Errorf("dimension changed to %d", o.Dimension())
	}
}

func TestOpenAIDimensionsRequest(t *testing.T) {
	cases := []struct {
		model   string
		dims    int
		wantReq bool
	}{
		{"text-embedding-3-small", 256, true},
		{"text-embedding-3-large", 1024, true},
		{"text-embedding-3-small", 0, false},
		{"text-embedding-ada-002", 8, false},
		{"nomic-embed-text", 8, false},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.model, c.dims), func(t *testing.T) {
			f := newFakeServer(t, 8)
			o := newTestOpenAI(t, f, OpenAIOptions{Model: c.model, Dimensions: c.dims})
			vecs, err := o.Embed(context.Background(), []string{"x y z"})
			if err != nil {
				t.Fatal(err)
			}
			req := f.request(0)
			if got := req.Dimensions != nil; got != c.wantReq {
				t.Fatalf("dimensions requested = %v, want %v: %s", got, c.wantReq, req.raw)
			}
			want := max(c.dims, 8)
			if c.wantReq && *req.Dimensions != c.dims {
				t.Errorf("requested %d, want %d", *req.Dimensions, c.dims)
			}
			if len(vecs[0]) != want || o.Dimension() != want || o.Identity() != fmt.Sprintf("openai/%s/d%d", c.model, want) {
				t.Errorf("len %d dim %d identity %q", len(vecs[0]), o.Dimension(), o.Identity())
			}
		})
	}
}

func TestOpenAIAlreadyNormalisedKept(t *testing.T) {
	f := newFakeServer(t, 8)
	f.mutate = func(_ int, _ *embRequest, r *embResponse) {
		for i := range r.Data {
			for j := range r.Data[i].Embedding {
				r.Data[i].Embedding[j] /= 3
			}
		}
	}
	got, err := newTestOpenAI(t, f, OpenAIOptions{}).Embed(context.Background(), []string{"unit already"})
	if err != nil {
		t.Fatal(err)
	}
	want := f.lex.EmbedText("unit already")
	for i := range want {
		if math.Abs(float64(got[0][i]-want[i])) > 1e-6 {
			t.Fatalf("component %d: %v, want %v", i, got[0][i], want[i])
		}
	}
}

func TestOpenAIEnvironmentDefaults(t *testing.T) {
	f := newFakeServer(t, 8)
	t.Setenv("OPENAI_BASE_URL", f.baseURL())
	t.Setenv("OPENAI_API_KEY", testKey)
	o, err := NewOpenAI(OpenAIOptions{Model: "text-embedding-3-small"})
	if err != nil {
		t.Fatal(err)
	}
	o.backoffBase = time.Millisecond
	if _, err := o.Embed(context.Background(), []string{"env"}); err != nil {
		t.Fatal(err)
	}
	if f.calls() != 1 {
		t.Errorf("%d requests to the env base URL", f.calls())
	}
}

func TestOpenAIProbe(t *testing.T) {
	f := newFakeServer(t, 24)
	o := newTestOpenAI(t, f, OpenAIOptions{Model: "mxbai-embed-large:335m"})
	if err := o.Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if o.Dimension() != 24 || o.Identity() != "openai/mxbai-embed-large:335m/d24" {
		t.Errorf("after Probe: %d %q", o.Dimension(), o.Identity())
	}
}

func TestOpenAIConcurrent(t *testing.T) {
	f := newFakeServer(t, 8)
	o := newTestOpenAI(t, f, OpenAIOptions{BatchSize: 2})
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			texts := []string{fmt.Sprint("g", g, " a"), fmt.Sprint("g", g, " b"), fmt.Sprint("g", g, " c")}
			got, err := o.Embed(context.Background(), texts)
			if err != nil {
				errs <- err
				return
			}
			for i, text := range texts {
				if cosine(got[i], f.lex.EmbedText(text)) < 1-1e-5 {
					errs <- fmt.Errorf("goroutine %d: vector %d mixed up", g, i)
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if o.Dimension() != 8 {
		t.Errorf("dimension %d", o.Dimension())
	}
}

func TestNewOpenAIValidation(t *testing.T) {
	cases := []struct {
		name string
		opts OpenAIOptions
	}{
		{"no model", OpenAIOptions{}},
		{"blank model", OpenAIOptions{Model: "  "}},
		{"negative dimensions", OpenAIOptions{Model: "m", Dimensions: -1}},
		{"huge dimensions", OpenAIOptions{Model: "m", Dimensions: 1 << 20}},
		{"negative batch", OpenAIOptions{Model: "m", BatchSize: -3}},
		{"huge batch", OpenAIOptions{Model: "m", BatchSize: 5000}},
		{"retries below -1", OpenAIOptions{Model: "m", MaxRetries: -2}},
		{"ftp base", OpenAIOptions{Model: "m", BaseURL: "ftp://example.com/v1"}},
		{"no host", OpenAIOptions{Model: "m", BaseURL: "http:///v1"}},
		{"garbage base", OpenAIOptions{Model: "m", BaseURL: "::not a url"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := NewOpenAI(c.opts); !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("err = %v, want ErrInvalidOptions", err)
			}
		})
	}
	// A password in the base URL is not echoed.
	_, err := NewOpenAI(OpenAIOptions{Model: "m", BaseURL: "ftp://user:hunter2@example.com"})
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("err = %v", err)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{nil, 0, false},
		{map[string]string{"Retry-After": "2"}, 2 * time.Second, true},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond, true},
		{map[string]string{"Retry-After": now.Add(3 * time.Second).Format(http.TimeFormat)}, 3 * time.Second, true},
		{map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0, true},
		{map[string]string{"Retry-After": "soon"}, 0, false},
		{map[string]string{"Retry-After": "-4"}, 0, false},
		{map[string]string{"Retry-After": "NaN"}, 0, false},
		{map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond, true},
		{map[string]string{"Retry-After-Ms": "x", "Retry-After": "9"}, 9 * time.Second, true},
	}
	for _, c := range cases {
		h := http.Header{}
		for k, v := range c.header {
			h.Set(k, v)
		}
		got, ok := retryAfter(h, now)
		if got != c.want || ok != c.ok {
			t.Errorf("%v: got %v %v, want %v %v", c.header, got, ok, c.want, c.ok)
		}
	}
}

func TestBackoffDelay(t *testing.T) {
	o := &OpenAI{backoffBase: 100 * time.Millisecond, backoffMax: time.Second, retryAfterCap: 2 * time.Second}
	for attempt := 0; attempt < 40; attempt++ {
		d := o.delay(attempt, &attemptInfo{})
		full := min(o.backoffBase<<min(attempt, 30), o.backoffMax)
		if d < full/2 || d >= full {
			t.Errorf("attempt %d: delay %v outside [%v, %v)", attempt, d, full/2, full)
		}
	}
	h := http.Header{"Retry-After": []string{"60"}}
	if d := o.delay(0, &attemptInfo{header: h}); d != 2*time.Second {
		t.Errorf("Retry-After 60 with cap 2s: delay %v", d)
	}
}
