package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragmem/ragmem/index"

	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/index/local"
)

// openAIServer speaks POST /v1/embeddings of the OpenAI API. It answers
// with the vectors of emb (memoised by text, so that its own CPU time is
// paid once), after delay, and counts requests, the inputs of each and the
// peak of requests in flight. A non-empty key must come as a bearer token.
type openAIServer struct {
	*httptest.Server
	key      string
	emb      embed.Embedder
	delay    time.Duration
	calls    atomic.Int64
	inflight atomic.Int64
	peak     atomic.Int64
	memo     sync.Map // text -> []float32
	mu       sync.Mutex
	sizes    []int
}

// newOpenAIServer answers with 16-dimensional lexical vectors at once.
func newOpenAIServer(t testing.TB, key string) *openAIServer {
	return startOpenAIServer(t, &openAIServer{key: key, emb: embed.NewLexical(&embed.LexicalOptions{Dimension: 16})})
}

func startOpenAIServer(t testing.TB, s *openAIServer) *openAIServer {
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		n := s.inflight.Add(1)
		defer s.inflight.Add(-1)
		for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
		}
		if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
			http.Error(w, `{"error":{"message":"unknown URL","type":"invalid_request_error"}}`, http.StatusNotFound)
			return
		}
		if s.key != "" && r.Header.Get("Authorization") != "Bearer "+s.key {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
			return
		}
		var req struct {
			Model          string   `json:"model"`
			Input          []string `json:"input"`
			EncodingFormat string   `json:"encoding_format"`
			Dimensions     int      `json:"dimensions"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" || len(req.Input) == 0 {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`)
			return
		}
		s.mu.Lock()
		s.sizes = append(s.sizes, len(req.Input))
		s.mu.Unlock()
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		data := make([]item, len(req.Input))
		for i, in := range req.Input {
			v, ok := s.memo.Load(in)
			if !ok {
				vs, err := s.emb.Embed(r.Context(), []string{in})
				if err != nil {
					http.Error(w, `{"error":{"message":"server error"}}`, http.StatusInternalServerError)
					return
				}
				v = vs[0]
				s.memo.Store(in, v)
			}
			data[i] = item{Object: "embedding", Index: i, Embedding: v.([]float32)}
		}
		time.Sleep(s.delay)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model,
			"usage": map[string]int{"prompt_tokens": len(req.Input), "total_tokens": len(req.Input)}})
	}))
	t.Cleanup(s.Close)
	return s
}

func TestStoreRecordsAndRebuildsItsEmbedder(t *testing.T) {
	srv := newOpenAIServer(t, "sk-local-123456")
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("OPENAI_API_KEY", "")
	dir := t.TempDir()
	emb, err := embed.New(embed.Spec{Kind: embed.KindOpenAI, Model: "nomic-embed-text", BaseURL: srv.URL + "/v1",
		Options: map[string]string{"concurrency": "2"}}, &embed.BuildOptions{APIKey: "sk-local-123456"})
	if err != nil {
		t.Fatal(err)
	}
	ix := open(t, dir, &Options{Embedder: emb})
	if _, err := ix.Add(ctx, index.Document{SourceURL: "u1", Content: longDoc(300, "otters")}); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}

	// What the store records: the spec, never the key.
	be, err := local.Open(ctx, dir, &local.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	rec, ok, err := ReadEmbedderRecord(ctx, be)
	raw, _, _ := be.Meta(ctx, metaEmbedderSpec)
	be.Close()
	if err != nil || !ok || rec.Spec == nil || rec.FromIdentity {
		t.Fatalf("record %+v, %v, %v", rec, ok, err)
	}
	if got := rec.Spec.String(); got != "openai:nomic-embed-text,concurrency=2,dim=16,base="+srv.URL+"/v1" {
		t.Errorf("recorded spec %q", got)
	}
	if rec.Identity != "openai/nomic-embed-text/d16" {
		t.Errorf("recorded identity %q", rec.Identity)
	}
	if strings.Contains(raw, "sk-local") {
		t.Errorf("the API key was recorded: %s", raw)
	}

	// Reopened with no embedder at all: rebuilt from the record, with the
	// key from the environment.
	t.Setenv("OPENAI_API_KEY", "sk-local-123456")
	ix = open(t, dir, nil)
	defer ix.Close()
	if id := ix.Embedder().Identity(); id != "openai/nomic-embed-text/d16" {
		t.Errorf("rebuilt embedder %q", id)
	}
	before := srv.calls.Load()
	hits, err := ix.Vector(ctx, "otters", 3, index.Filter{})
	if err != nil || len(hits) == 0 {
		t.Fatalf("vector search with the rebuilt embedder: %v, %v", hits, err)
	}
	if srv.calls.Load() != before+1 {
		t.Errorf("the rebuilt embedder did not call the recorded server")
	}
}

func TestStoreDoesNotRecordURLCredentials(t *testing.T) {
	dir := t.TempDir()
	emb, err := embed.New(embed.Spec{Kind: embed.KindOpenAI, Model: "m", BaseURL: "https://user:hunter2@gw.example.com/v1?key=sk-x",
		Options: map[string]string{"dim": "16"}}, &embed.BuildOptions{APIKey: "sk-api-key-1", Headers: map[string]string{"X-Gateway-Key": "hdr-secret-2"}})
	if err != nil {
		t.Fatal(err)
	}
	ix := open(t, dir, &Options{Embedder: emb})
	vec := make([]float32, 16)
	vec[0] = 1
	if err := ix.Put(ctx, []index.Record{{ID: "r", SourceURL: "u", Content: "Zebras.", Vector: vec}}); err != nil { // the first write records the embedder
		t.Fatal(err)
	}
	rec, ok, err := ReadEmbedderRecord(ctx, ix.Backend())
	raw, _, _ := ix.Backend().Meta(ctx, metaEmbedderSpec)
	ix.Close()
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	for _, secret := range []string{"hunter2", "sk-x", "sk-api-key-1", "hdr-secret-2", "X-Gateway-Key"} {
		if strings.Contains(raw, secret) {
			t.Errorf("the store records %q: %s", secret, raw)
		}
	}
	if s := rec.Spec.String(); strings.Contains(s, "hunter2") || strings.Contains(s, "sk-x") || rec.Spec.BaseURL != "https://gw.example.com/v1" {
		t.Errorf("recorded %q", s)
	}
	if len(rec.Omitted) != 2 {
		t.Errorf("omitted %q", rec.Omitted)
	}
}

// anonymous hides its embedder's spec, as an embedder from outside this
// module (or a store from before specs were recorded) would.
type anonymous struct{ embed.Embedder }

func TestStoreFromBeforeSpecsFallsBackToTheIdentity(t *testing.T) {
	dir := t.TempDir()
	lex := embed.NewLexical(&embed.LexicalOptions{Dimension: 96, BigramWeight: 0.5})
	ix := open(t, dir, &Options{Embedder: anonymous{lex}})
	if _, err := ix.Add(ctx, index.Document{SourceURL: "u", Content: "Zebras have stripes."}); err != nil {
		t.Fatal(err)
	}
	rec, ok, err := ReadEmbedderRecord(ctx, ix.Backend())
	ix.Close()
	if err != nil || !ok || !rec.FromIdentity || rec.Spec == nil {
		t.Fatalf("record %+v %v %v", rec, ok, err)
	}
	// Opened with no embedder: rebuilt from the identity.
	ix = open(t, dir, nil)
	if ix.Embedder().Identity() != lex.Identity() {
		t.Errorf("rebuilt %q, want %q", ix.Embedder().Identity(), lex.Identity())
	}
	// ...and the store now records the full spec.
	rec, _, _ = ReadEmbedderRecord(ctx, ix.Backend())
	ix.Close()
	if rec.FromIdentity || rec.Spec.String() != "lexical:bigram=0.5,dim=96" {
		t.Errorf("after reopening: %+v %q", rec, rec.Spec)
	}
}

func TestStoreWithUnrebuildableIdentity(t *testing.T) {
	dir := t.TempDir()
	ix := open(t, dir, &Options{Embedder: &namedEmbedder{Embedder: embed.Default(), id: "model2vec/x/0123456789ab/d768/t512"}})
	if _, err := ix.Add(ctx, index.Document{SourceURL: "u", Content: "Zebras have stripes."}); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	// Nothing to rebuild from: the default embedder, which the store refuses.
	_, err := Open(ctx, dir, nil)
	if !errors.Is(err, ErrEmbedderMismatch) {
		t.Fatalf("err = %v, want the mismatch", err)
	}
}

type namedEmbedder struct {
	embed.Embedder
	id string
}

func (n *namedEmbedder) Identity() string { return n.id }

func TestEmbedderForSeesTheRecord(t *testing.T) {
	dir := t.TempDir()
	var got []*index.EmbedderRecord
	ix := open(t, dir, &Options{EmbedderFor: func(c context.Context, rec *index.EmbedderRecord) (embed.Embedder, error) {
		got = append(got, rec)
		return embed.NewRandProj(&embed.RandProjOptions{Dimension: 24}), nil
	}})
	if _, err := ix.Add(ctx, index.Document{SourceURL: "u", Content: "Zebras have stripes."}); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	ix = open(t, dir, &Options{EmbedderFor: func(c context.Context, rec *index.EmbedderRecord) (embed.Embedder, error) {
		got = append(got, rec)
		return embed.New(*rec.Spec, nil)
	}})
	ix.Close()
	if len(got) != 2 || got[0] != nil || got[1] == nil || got[1].Spec.String() != "randproj:dim=24" {
		t.Fatalf("EmbedderFor saw %+v", got)
	}
	boom := errors.New("no key")
	if _, err := Open(ctx, dir, &Options{EmbedderFor: func(context.Context, *index.EmbedderRecord) (embed.Embedder, error) { return nil, boom }}); !errors.Is(err, boom) {
		t.Errorf("err = %v", err)
	}
	// The store is still usable (the failed open released it).
	open(t, dir, nil).Close()
}

func TestExplicitEmbedderStillChecked(t *testing.T) {
	dir := t.TempDir()
	ix := open(t, dir, &Options{Embedder: embed.NewRandProj(&embed.RandProjOptions{Dimension: 24})})
	if _, err := ix.Add(ctx, index.Document{SourceURL: "u", Content: "Zebras have stripes."}); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	if _, err := Open(ctx, dir, &Options{Embedder: embed.NewRandProj(&embed.RandProjOptions{Dimension: 32})}); !errors.Is(err, ErrEmbedderMismatch) {
		t.Fatalf("another embedder: %v", err)
	}
	open(t, dir, &Options{Embedder: embed.NewRandProj(&embed.RandProjOptions{Dimension: 24})}).Close()
}

func TestRepeatedQueryCostsNoEmbedderCall(t *testing.T) {
	srv := newOpenAIServer(t, "")
	t.Setenv("OPENAI_API_KEY", "")
	emb, err := embed.NewOpenAI(embed.OpenAIOptions{Model: "m", BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	ix := open(t, t.TempDir(), &Options{Embedder: emb})
	defer ix.Close()
	if _, err := ix.Add(ctx, index.Document{SourceURL: "u", Content: longDoc(200, "zebras")}); err != nil {
		t.Fatal(err)
	}
	before := srv.calls.Load()
	for range 5 {
		if _, err := ix.Vector(ctx, "where do zebras live", 3, index.Filter{}); err != nil {
			t.Fatal(err)
		}
		if _, err := ix.EmbedQuery(ctx, "where do zebras live"); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.calls.Load() - before; n != 1 {
		t.Errorf("%d embedder requests for one question asked 10 times", n)
	}
	st, err := ix.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.QueryCache.Hits != 9 || st.QueryCache.Entries < 1 {
		t.Errorf("cache stats %+v", st.QueryCache)
	}
	if st.EmbedderSpec != "openai:m,dim=16,base="+srv.URL+"/v1" {
		t.Errorf("stats spec %q", st.EmbedderSpec)
	}
}

func TestSelfParallelEmbedderGetsEveryChunkAtOnce(t *testing.T) {
	srv := newOpenAIServer(t, "")
	t.Setenv("OPENAI_API_KEY", "")
	emb, err := embed.NewOpenAI(embed.OpenAIOptions{Model: "m", BaseURL: srv.URL + "/v1", BatchSize: 50, Concurrency: 3})
	if err != nil {
		t.Fatal(err)
	}
	ix := open(t, t.TempDir(), &Options{Embedder: emb, EmbedBatch: 8})
	defer ix.Close()
	var docs []index.Document
	for i := range 120 {
		docs = append(docs, index.Document{SourceURL: fmt.Sprint("u", i), Content: fmt.Sprintf("Document %d is about subject %d.", i, i)})
	}
	if _, err := ix.AddMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	sizes := fmt.Sprint(srv.sizes)
	srv.mu.Unlock()
	// 120 chunks in batches of the embedder's 50, not the index's 8.
	if sizes != "[50 50 20]" && sizes != "[50 20 50]" && sizes != "[20 50 50]" {
		t.Errorf("request sizes %s", sizes)
	}
	hits, err := ix.Vector(ctx, "Document 77 is about subject 77.", 1, index.Filter{})
	if err != nil || len(hits) != 1 || hits[0].Record.SourceURL != "u77" {
		t.Errorf("vectors out of order: %+v %v", hits, err)
	}
}

func TestCopyCarriesTheEmbedderSpec(t *testing.T) {
	srcDir := t.TempDir()
	ix := open(t, srcDir, &Options{Embedder: embed.NewRandProj(&embed.RandProjOptions{Dimension: 24})})
	if _, err := ix.Add(ctx, index.Document{SourceURL: "u", Content: "Zebras have stripes."}); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	src, err := local.Open(ctx, srcDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dstDir := t.TempDir()
	dst, err := local.Open(ctx, dstDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Copy(ctx, dst, src, nil); err != nil {
		t.Fatal(err)
	}
	rec, ok, err := ReadEmbedderRecord(ctx, dst)
	if err != nil || !ok || rec.FromIdentity || rec.Spec.String() != "randproj:dim=24" {
		t.Errorf("copied record %+v %v %v", rec, ok, err)
	}
	dst.Close()
	// The copy reopens with no embedder given.
	ix = open(t, dstDir, nil)
	defer ix.Close()
	if got := ix.Embedder().Identity(); got != embed.NewRandProj(&embed.RandProjOptions{Dimension: 24}).Identity() {
		t.Errorf("copy rebuilt %q", got)
	}
}
