package rerank

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/search"
)

var _ search.Reranker = (*Client)(nil)

// score is the relevance the test servers give a document: how many of
// the query's words it holds, so that the expected order is known.
func score(query, doc string) float64 {
	n := 0.0
	for _, w := range strings.Fields(query) {
		if strings.Contains(doc, w) {
			n++
		}
	}
	return n
}

// body is what a server reads: every variant's fields.
type body struct {
	Model     string   `json:"model"`
	Query     string   `json:"query"`
	Documents []any    `json:"documents"`
	TopN      int      `json:"top_n"`
	Texts     []string `json:"texts"`
	Truncate  *bool    `json:"truncate"`
}

type scored struct {
	i int
	s float64
}

// ranked scores docs and sorts them best first, as every server answers.
func ranked(query string, docs []string) []scored {
	out := make([]scored, len(docs))
	for i, d := range docs {
		out[i] = scored{i, score(query, d)}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].s > out[b].s })
	return out
}

// server is an httptest server speaking one variant at path; it records
// the last request and its Authorization header.
type server struct {
	*httptest.Server
	calls atomic.Int32
	last  atomic.Pointer[body]
	auth  atomic.Pointer[string]
}

func newServer(t *testing.T, path string, answer func(w http.ResponseWriter, b body)) *server {
	t.Helper()
	s := &server{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		var b body
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			http.Error(w, `{"error":"bad json"}`, http.StatusUnprocessableEntity)
			return
		}
		s.last.Store(&b)
		a := r.Header.Get("Authorization")
		s.auth.Store(&a)
		w.Header().Set("Content-Type", "application/json")
		answer(w, b)
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func docsOf(b body) []string {
	if b.Texts != nil {
		return b.Texts
	}
	out := make([]string, len(b.Documents))
	for i, d := range b.Documents {
		switch d := d.(type) {
		case string:
			out[i] = d
		case map[string]any: // Jina and Cohere v1 accept {"text": ...}
			out[i], _ = d["text"].(string)
		}
	}
	return out
}

// cohere answers as Cohere, Jina, llama.cpp and vLLM do: results sorted
// best first, {index, relevance_score}, with the extra fields they add.
func cohere(w http.ResponseWriter, b body) {
	docs := docsOf(b)
	if len(b.Documents) == 0 {
		http.Error(w, `{"message":"documents is required"}`, http.StatusBadRequest)
		return
	}
	var res []map[string]any
	for _, r := range ranked(b.Query, docs) {
		res = append(res, map[string]any{"index": r.i, "relevance_score": r.s, "document": map[string]any{"text": docs[r.i]}})
	}
	if b.TopN > 0 && b.TopN < len(res) {
		res = res[:b.TopN]
	}
	json.NewEncoder(w).Encode(map[string]any{"id": "r-1", "model": b.Model, "object": "list", "results": res,
		"usage": map[string]any{"total_tokens": 10}, "meta": map[string]any{"billed_units": map[string]any{"search_units": 1}}})
}

// tei answers as Text Embeddings Inference does: a bare list of {index,
// score}, best first; it needs "texts".
func tei(w http.ResponseWriter, b body) {
	if b.Texts == nil {
		http.Error(w, `{"error":"missing field texts","error_type":"Validation"}`, http.StatusUnprocessableEntity)
		return
	}
	var res []map[string]any
	for _, r := range ranked(b.Query, b.Texts) {
		res = append(res, map[string]any{"index": r.i, "score": r.s})
	}
	json.NewEncoder(w).Encode(res)
}

// llamaCpp answers as llama.cpp's server does: TEI's list when the request
// has "texts", Cohere's object otherwise.
func llamaCpp(w http.ResponseWriter, b body) {
	if b.Texts != nil {
		tei(w, b)
		return
	}
	cohere(w, b)
}

var docs = []string{"the cat sat", "dogs and cats and birds", "a bird on a wire", "cats, dogs, birds and fish"}

const query = "dogs birds fish"

// want is the scores in document order.
func want() []float64 {
	out := make([]float64, len(docs))
	for i, d := range docs {
		out[i] = score(query, d)
	}
	return out
}

func TestVariants(t *testing.T) {
	cases := []struct {
		name, path, urlPath, api string
		answer                   func(http.ResponseWriter, body)
		wantDocs, wantTexts      bool
	}{
		{"cohere v2", "/v2/rerank", "/v2/rerank", "", cohere, true, false},
		{"cohere v1", "/v1/rerank", "/v1/rerank", "", cohere, true, false},
		{"cohere base /v2", "/v2/rerank", "/v2", "", cohere, true, false},
		{"jina", "/v1/rerank", "/v1/rerank", "jina", cohere, true, false},
		{"tei", "/rerank", "/rerank", "", tei, true, true},
		{"tei root", "/rerank", "", "", tei, true, true},
		{"tei forced", "/rerank", "/rerank", "tei", tei, false, true},
		{"llama.cpp /rerank", "/rerank", "/rerank", "", llamaCpp, true, true},
		{"llama.cpp /v1/rerank", "/v1/rerank", "/v1/rerank", "", llamaCpp, true, false},
		{"vllm /rerank", "/rerank", "/rerank", "", cohere, true, true},
		{"vllm /v1/rerank", "/v1/rerank", "/v1", "vllm", cohere, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, c.path, c.answer)
			cl, err := New(Options{URL: s.URL + c.urlPath, API: c.api, Model: "m-1", APIKey: "k-1"})
			if err != nil {
				t.Fatal(err)
			}
			got, err := cl.Rerank(context.Background(), query, docs)
			if err != nil {
				t.Fatalf("Rerank: %v", err)
			}
			if !slices.Equal(got, want()) {
				t.Fatalf("scores %v, want %v", got, want())
			}
			b := s.last.Load()
			if b.Query != query || b.Model != "m-1" {
				t.Errorf("request query %q model %q", b.Query, b.Model)
			}
			if (b.Documents != nil) != c.wantDocs || (b.Texts != nil) != c.wantTexts {
				t.Errorf("request has documents %v texts %v, want %v %v", b.Documents != nil, b.Texts != nil, c.wantDocs, c.wantTexts)
			}
			if c.wantDocs && b.TopN != len(docs) {
				t.Errorf("top_n %d, want every document (%d)", b.TopN, len(docs))
			}
			if a := *s.auth.Load(); a != "Bearer k-1" {
				t.Errorf("Authorization %q", a)
			}
		})
	}
}

func TestNoKeyNoHeader(t *testing.T) {
	s := newServer(t, "/rerank", tei)
	cl, err := New(Options{URL: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Rerank(context.Background(), query, docs); err != nil {
		t.Fatal(err)
	}
	if a := *s.auth.Load(); a != "" {
		t.Errorf("Authorization %q sent without a key", a)
	}
	if b := s.last.Load(); b.Model != "" {
		t.Errorf("model %q sent without one", b.Model)
	}
}

func TestBadOptions(t *testing.T) {
	for _, o := range []Options{{URL: ""}, {URL: "ftp://x/rerank"}, {URL: "localhost:8080"}, {URL: "http://x/rerank", API: "grpc"}} {
		if _, err := New(o); !errors.Is(err, ErrBadOptions) {
			t.Errorf("New(%+v): %v, want ErrBadOptions", o, err)
		}
	}
}

// TestHangingCostsOneTimeout: a reranker that never answers costs one
// timeout, after which the circuit is open and no call reaches it.
func TestHangingCostsOneTimeout(t *testing.T) {
	release := make(chan struct{})
	s := newServer(t, "/rerank", func(w http.ResponseWriter, b body) {
		select {
		case <-release:
		case <-time.After(time.Minute):
		}
	})
	defer close(release)
	cl, err := New(Options{URL: s.URL, Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.Rerank(context.Background(), query, docs)
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("first call: %v, want ErrUnavailable and a deadline", err)
	}
	if got := search.RerankReason(err); !strings.Contains(got, "does not answer in time") || !strings.Contains(got, "skipped until") {
		t.Errorf("reason %q", got)
	}
	for range 5 {
		if _, err := cl.Rerank(context.Background(), query, docs); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("call while open: %v", err)
		}
	}
	if n := s.calls.Load(); n != 1 {
		t.Fatalf("the server got %d calls, want 1", n)
	}
	if st := cl.State(); st.State != "open" {
		t.Errorf("breaker %+v", st)
	}
}

// TestBreakerRecovers: after OpenFor a trial call goes through and, when
// it succeeds, closes the circuit.
func TestBreakerRecovers(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	s := newServer(t, "/rerank", func(w http.ResponseWriter, b body) {
		if fail.Load() {
			http.Error(w, `{"error":"loading model"}`, http.StatusServiceUnavailable)
			return
		}
		tei(w, b)
	})
	now := time.Unix(1000, 0)
	cl, err := New(Options{URL: s.URL, Breaker: &embed.BreakerOptions{Failures: 1, OpenFor: time.Second, Now: func() time.Time { return now }}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.Rerank(context.Background(), query, docs)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(search.RerankReason(err), "HTTP 503") {
		t.Fatalf("503: %v (%s)", err, search.RerankReason(err))
	}
	if _, err := cl.Rerank(context.Background(), query, docs); !errors.Is(err, ErrUnavailable) || s.calls.Load() != 1 {
		t.Fatalf("open: %v, calls %d", err, s.calls.Load())
	}
	fail.Store(false)
	now = now.Add(2 * time.Second)
	got, err := cl.Rerank(context.Background(), query, docs)
	if err != nil || !slices.Equal(got, want()) {
		t.Fatalf("trial: %v %v", got, err)
	}
	if st := cl.State(); st.State != "closed" {
		t.Errorf("breaker %+v after a good trial", st)
	}
}

// TestRefusedIsNotAnOutage: a 4xx is the request's problem: it fails the
// call but does not open the circuit.
func TestRefusedIsNotAnOutage(t *testing.T) {
	s := newServer(t, "/rerank", func(w http.ResponseWriter, b body) {
		http.Error(w, `{"error":"input too long"}`, http.StatusRequestEntityTooLarge)
	})
	cl, err := New(Options{URL: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_, err := cl.Rerank(context.Background(), query, docs)
		var re *Error
		if !errors.As(err, &re) || re.Status != 413 || errors.Is(err, ErrUnavailable) {
			t.Fatalf("413: %v", err)
		}
	}
	if s.calls.Load() != 3 {
		t.Errorf("calls %d, want 3 (the circuit stays closed)", s.calls.Load())
	}
}

func TestBadAnswers(t *testing.T) {
	big := `{"results":[` + strings.Repeat(`{"index":0,"relevance_score":1},`, maxResponseBytes/30) + `{"index":0,"relevance_score":1}]}`
	cases := map[string]string{
		"html":          "<html>502 Bad Gateway</html>",
		"empty":         "",
		"not json":      "{results:",
		"no results":    `{"object":"list"}`,
		"too few":       `{"results":[{"index":0,"relevance_score":1}]}`,
		"out of range":  `[{"index":0,"score":1},{"index":1,"score":1},{"index":2,"score":1},{"index":9,"score":1}]`,
		"repeated":      `[{"index":0,"score":1},{"index":1,"score":1},{"index":2,"score":1},{"index":2,"score":1}]`,
		"no score":      `[{"index":0},{"index":1,"score":1},{"index":2,"score":1},{"index":3,"score":1}]`,
		"no index":      `[{"score":1},{"index":1,"score":1},{"index":2,"score":1},{"index":3,"score":1}]`,
		"string score":  `[{"index":0,"score":"1"},{"index":1,"score":1},{"index":2,"score":1},{"index":3,"score":1}]`,
		"oversized":     big,
		"number":        "42",
		"null results":  `{"results":null}`,
		"negative":      `[{"index":-1,"score":1},{"index":1,"score":1},{"index":2,"score":1},{"index":3,"score":1}]`,
		"huge exponent": `[{"index":0,"score":1e999},{"index":1,"score":1},{"index":2,"score":1},{"index":3,"score":1}]`,
	}
	for name, answer := range cases {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, "/rerank", func(w http.ResponseWriter, b body) { fmt.Fprint(w, answer) })
			cl, err := New(Options{URL: s.URL})
			if err != nil {
				t.Fatal(err)
			}
			got, err := cl.Rerank(context.Background(), query, docs)
			if err == nil || got != nil {
				t.Fatalf("got %v, %v; want an error", got, err)
			}
			if r := search.RerankReason(err); !strings.Contains(r, "invalid answers") {
				t.Errorf("reason %q", r)
			}
			if !errors.Is(err, ErrUnavailable) {
				t.Errorf("a bad answer should count as an outage: %v", err)
			}
		})
	}
}

func TestParseResponseOrders(t *testing.T) {
	// Results come best first; the scores go back in document order.
	got, err := ParseResponse([]byte(`{"results":[{"index":2,"relevance_score":0.9},{"index":0,"relevance_score":0.5},{"index":1,"relevance_score":-3.25}]}`), 3)
	if err != nil || !slices.Equal(got, []float64{0.5, -3.25, 0.9}) {
		t.Fatalf("%v %v", got, err)
	}
	got, err = ParseResponse([]byte(` [{"index":1,"score":7,"text":"x"},{"index":0,"score":2}] `), 2)
	if err != nil || !slices.Equal(got, []float64{2, 7}) {
		t.Fatalf("%v %v", got, err)
	}
}

func TestClipsLongDocuments(t *testing.T) {
	s := newServer(t, "/rerank", tei)
	cl, err := New(Options{URL: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é", MaxDocumentBytes) // 2 bytes a rune
	in := []string{"short", long}
	if _, err := cl.Rerank(context.Background(), "q", in); err != nil {
		t.Fatal(err)
	}
	sent := s.last.Load().Texts
	if len(sent[1]) > MaxDocumentBytes || !strings.HasPrefix(long, sent[1]) || sent[0] != "short" {
		t.Errorf("sent %d bytes of the long document", len(sent[1]))
	}
	if len(in[1]) != len(long) {
		t.Error("the caller's documents were changed")
	}
}

func FuzzRerankResponse(f *testing.F) {
	f.Add([]byte(`{"results":[{"index":1,"relevance_score":0.9},{"index":0,"relevance_score":0.1}]}`), 2)
	f.Add([]byte(`[{"index":0,"score":-1.5}]`), 1)
	f.Add([]byte(`{"data":[{"index":0,"relevance_score":1}]}`), 1)
	f.Add([]byte(`[{"index":0,"score":1e400}]`), 1)
	f.Add([]byte(`{"results":[{"index":0,"relevance_score":null,"score":2}]}`), 1)
	f.Add([]byte(`garbage`), 3)
	f.Fuzz(func(t *testing.T, data []byte, n int) {
		n = n % 64
		if n < 0 {
			n = -n
		}
		scores, err := ParseResponse(data, n)
		if err != nil {
			if !errors.Is(err, ErrBadResponse) {
				t.Fatalf("error %v does not wrap ErrBadResponse", err)
			}
			if scores != nil {
				t.Fatal("scores with an error")
			}
			return
		}
		if len(scores) != n {
			t.Fatalf("%d scores for %d documents", len(scores), n)
		}
		for _, s := range scores {
			if s != s || s > 1e308 || s < -1e308 {
				t.Fatalf("score %v is not finite", s)
			}
		}
	})
}
