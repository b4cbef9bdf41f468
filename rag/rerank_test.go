package rag

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragmem/ragmem/index"

	"github.com/ragmem/ragmem/search"
)

// rerankServer is a TEI-speaking reranker (POST /rerank {query, texts} →
// [{index, score}]) whose scores come from score; it counts its calls.
func rerankServer(t *testing.T, score func(i int, text string) float64) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var b struct {
			Query string   `json:"query"`
			Texts []string `json:"texts"`
		}
		if r.URL.Path != "/rerank" || json.NewDecoder(r.Body).Decode(&b) != nil || b.Query == "" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		out := make([]map[string]any, len(b.Texts))
		for i, t := range b.Texts {
			out[i] = map[string]any{"index": i, "score": score(i, t)}
		}
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

// rerankCorpus indexes n pages that each match the query, to different
// degrees, so that the fused order is a strict one.
func rerankCorpus(t *testing.T, e *Engine, n int) {
	t.Helper()
	for i := range n {
		content := fmt.Sprintf("Page %d is about harbour cranes. %s", i, strings.Repeat("harbour cranes lift containers. ", n-i))
		if _, err := e.IndexDocument(ctx, index.Document{SourceURL: fmt.Sprintf("https://example.org/p%d", i), Title: fmt.Sprintf("p%d", i), Content: content}); err != nil {
			t.Fatal(err)
		}
	}
}

func ids(rs []search.Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Record.ID
	}
	return out
}

// reversing scores the i-th document sent i: the reranker reverses the
// fused order.
func reversing(i int, _ string) float64 { return float64(i) }

func TestRerankReversesTheFusedOrder(t *testing.T) {
	srv, calls := rerankServer(t, reversing)
	plain := openEngine(t, nil)
	rerankCorpus(t, plain, 6)
	fused, rep, err := plain.RetrieveReport(ctx, "harbour cranes", &search.Options{TopK: 6})
	if err != nil || len(fused) != 6 || rep.Reranked != 0 || rep.RerankSkipped != "" {
		t.Fatalf("fused: %d results, %+v, %v", len(fused), rep, err)
	}

	e := openEngine(t, &Options{Config: Config{Rerank: RerankConfig{URL: srv.URL}}})
	rerankCorpus(t, e, 6)
	got, rep, err := e.RetrieveReport(ctx, "harbour cranes", &search.Options{TopK: 6})
	if err != nil {
		t.Fatal(err)
	}
	want := ids(fused)
	slices.Reverse(want)
	if !slices.Equal(ids(got), want) {
		t.Fatalf("reranked %v, want the fused order reversed %v", ids(got), want)
	}
	if rep.Reranked != 6 || rep.RerankSkipped != "" || calls.Load() != 1 {
		t.Errorf("report %+v, calls %d", rep, calls.Load())
	}
	for i, r := range got {
		if r.Explanation.RerankRank != i+1 || r.Explanation.RerankScore != float64(5-i) {
			t.Errorf("result %d explanation %+v", i, r.Explanation)
		}
		// Each keeps its own fused score in the explanation and takes the
		// score of its place: results stay in descending score.
		if math.Abs(r.Score-fused[i].Score) > 1e-9 { // fused scores of two stores may differ in the last bits
			t.Errorf("result %d score %v, want the place's fused score %v", i, r.Score, fused[i].Score)
		}
	}

	// The context's budget selects by score: the block follows the rerank.
	c, err := e.ContextFor(ctx, "harbour cranes", ContextOptions{Model: "gpt-4o", Config: &Config{TopK: 6, KnowledgeBudget: 4000, Rerank: RerankConfig{URL: srv.URL}}})
	if err != nil {
		t.Fatal(err)
	}
	var chunkIDs []string
	for _, s := range c.Block.Sources {
		chunkIDs = append(chunkIDs, s.ChunkID)
	}
	if !slices.Equal(chunkIDs, want) || c.Block.Retrieval.Reranked != 6 {
		t.Errorf("context sources %v (report %+v), want %v", chunkIDs, c.Block.Retrieval, want)
	}
}

func TestRerankTopNOnly(t *testing.T) {
	srv, _ := rerankServer(t, reversing)
	plain := openEngine(t, nil)
	rerankCorpus(t, plain, 6)
	fused, err := plain.Retrieve(ctx, "harbour cranes", &search.Options{TopK: 6})
	if err != nil {
		t.Fatal(err)
	}
	e := openEngine(t, &Options{Config: Config{Rerank: RerankConfig{URL: srv.URL, Top: 3}}})
	rerankCorpus(t, e, 6)
	got, rep, err := e.RetrieveReport(ctx, "harbour cranes", &search.Options{TopK: 6})
	if err != nil {
		t.Fatal(err)
	}
	f := ids(fused)
	want := append([]string{f[2], f[1], f[0]}, f[3:]...)
	if !slices.Equal(ids(got), want) || rep.Reranked != 3 {
		t.Fatalf("got %v (report %+v), want the top 3 reversed then the fused rest %v", ids(got), rep, want)
	}
	for i, r := range got[3:] {
		if r.Explanation.RerankRank != 0 || math.Abs(r.Score-fused[3+i].Score) > 1e-9 {
			t.Errorf("result %d beyond the top 3: %+v", 3+i, r)
		}
	}
}

// TestRerankHangingCostsOneTimeout: a reranker that never answers costs
// one timeout; the searches after it do not call it while its breaker is
// open; all keep the fused order and say why they were not reranked.
func TestRerankHangingCostsOneTimeout(t *testing.T) {
	var calls atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	plain := openEngine(t, nil)
	rerankCorpus(t, plain, 5)
	fused, err := plain.Retrieve(ctx, "harbour cranes", &search.Options{TopK: 5})
	if err != nil {
		t.Fatal(err)
	}
	e := openEngine(t, &Options{Config: Config{Rerank: RerankConfig{URL: srv.URL + "/rerank", Timeout: 100 * time.Millisecond}}})
	rerankCorpus(t, e, 5)
	for i := range 4 {
		got, rep, err := e.RetrieveReport(ctx, "harbour cranes", &search.Options{TopK: 5})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(got), ids(fused)) {
			t.Fatalf("search %d: %v, want the fused order %v", i, ids(got), ids(fused))
		}
		if !strings.HasPrefix(rep.RerankSkipped, "reranker unavailable: it does not answer in time; skipped until ") || rep.Reranked != 0 {
			t.Errorf("search %d report %+v", i, rep)
		}
		for _, r := range got {
			if r.Explanation.RerankRank != 0 {
				t.Errorf("search %d: a result says it was reranked: %+v", i, r.Explanation)
			}
		}
		if n := calls.Load(); n != 1 {
			t.Fatalf("after search %d the reranker got %d calls, want 1", i, n)
		}
	}
}

func TestRerankBadConfig(t *testing.T) {
	if _, err := Open(ctx, t.TempDir(), &Options{Logger: quiet(), Config: Config{Rerank: RerankConfig{URL: "localhost:1/rerank"}}}); err == nil {
		t.Fatal("Open accepted a reranker URL that is not http(s)")
	}
	// A context's own configuration with a bad URL: the search goes on in
	// the fused order and says why.
	e := openEngine(t, nil)
	rerankCorpus(t, e, 3)
	c, err := e.ContextFor(ctx, "harbour cranes", ContextOptions{Config: &Config{Rerank: RerankConfig{URL: "ftp://x"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Block.Sources) == 0 || !strings.Contains(c.Block.Retrieval.RerankSkipped, "misconfigured") {
		t.Errorf("block %d sources, report %+v", len(c.Block.Sources), c.Block.Retrieval)
	}
}
