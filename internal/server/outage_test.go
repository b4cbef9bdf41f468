package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/embed/embedtest"
	"github.com/ragmem/ragmem/internal/index/local"
	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
)

// TestEmbedderOutage drives the server against an OpenAI-compatible
// embedding server that goes down (503), comes back, answers vectors of
// the wrong dimension, and stops listening: hybrid searches answer from
// BM25 alone, fast once the circuit breaker is open (no query then reaches
// the embedder), and say so in "mode" and "degraded"; a page queued during
// the outage waits and is indexed once the embedder is back; a vector of the
// wrong dimension is never stored.
func TestEmbedderOutage(t *testing.T) {
	emb := embedtest.New(t, 32)
	var dir string
	ts := newTestServer(t, &server.Options{Open: func(ctx context.Context, d string) (*rag.Engine, error) {
		dir = d
		return rag.Open(ctx, d, &rag.Options{Embedder: emb.Embedder(t, -1), Logger: quietLogger(),
			Breaker: &embed.BreakerOptions{Failures: 2, OpenFor: 300 * time.Millisecond, MaxOpenFor: 300 * time.Millisecond, QueryTimeout: 2 * time.Second}})
	}})
	ts.indexPage(map[string]any{"url": "https://birds.example/heron", "text": "The grey heron wades in shallow water and strikes at fish."})
	// Each query is new: a query embedded before is answered from the
	// query cache, embedder or not.
	n := 0
	fresh := func() map[string]any {
		n++
		return map[string]any{"query": fmt.Sprintf("heron wading fish %d", n)}
	}
	var s rag.SearchJSON
	s = rag.SearchJSON{}
	ts.must(http.StatusOK, "POST", "/v1/search", fresh()).json(t, &s)
	if s.Mode != "hybrid" || s.Degraded != "" || len(s.Results) != 1 {
		t.Fatalf("healthy: %+v", s)
	}

	emb.Set(embedtest.Unavailable)
	// The first queries find out (each bounded by the query timeout), then
	// the breaker opens.
	for i := 0; i < 2; i++ {
		start := time.Now()
		s = rag.SearchJSON{}
		ts.must(http.StatusOK, "POST", "/v1/search", fresh()).json(t, &s)
		if s.Mode != "fulltext" || !strings.HasPrefix(s.Degraded, "embedder unavailable: ") || len(s.Results) != 1 || time.Since(start) > 5*time.Second {
			t.Fatalf("outage, query %d: %+v after %v", i, s, time.Since(start))
		}
	}
	calls := emb.Calls()
	for i := 0; i < 20; i++ {
		s = rag.SearchJSON{}
		ts.must(http.StatusOK, "POST", "/v1/search", fresh()).json(t, &s)
		if s.Mode != "fulltext" || s.Degraded == "" || len(s.Results) != 1 || s.Results[0].Explanation.Method != "bm25" {
			t.Fatalf("breaker open: %+v", s)
		}
	}
	if n := emb.Calls() - calls; n > 2 { // at most the half-open trials
		t.Fatalf("%d embedding requests while the breaker was open", n)
	}
	var c rag.ContextJSON
	ts.must(http.StatusOK, "POST", "/v1/context", fresh()).json(t, &c)
	if c.Mode != "fulltext" || c.Degraded == "" || c.Found != 1 {
		t.Fatalf("context during the outage: mode %q degraded %q found %d", c.Mode, c.Degraded, c.Found)
	}
	// A page sent during the outage waits.
	var acc rag.PageAccepted
	ts.must(http.StatusAccepted, "POST", "/v1/pages", map[string]any{"url": "https://birds.example/stork", "text": "The white stork nests on rooftops."}).json(t, &acc)
	time.Sleep(400 * time.Millisecond)
	var j rag.JobJSON
	j = rag.JobJSON{}
	ts.must(http.StatusOK, "GET", "/v1/jobs/"+acc.JobID, nil).json(t, &j)
	if (j.State != "queued" && j.State != "running") || j.Attempts != 0 || !strings.Contains(j.Error, "the embedder is unavailable") || strings.Contains(j.Error, "127.0.0.1") {
		t.Fatalf("job during the outage: %+v", j)
	}

	// Back: the breaker half-opens, the page is indexed, search is hybrid.
	emb.Set(embedtest.Healthy)
	if j := ts.waitJob(acc.JobID); j.State != "done" || j.Chunks != 1 {
		t.Fatalf("job after the outage: %+v", j)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		s = rag.SearchJSON{}
		ts.must(http.StatusOK, "POST", "/v1/search", fresh()).json(t, &s)
		if s.Mode == "hybrid" && s.Degraded == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("search never recovered: %+v", s)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Vectors of the wrong dimension: an outage, not a record.
	emb.Set(embedtest.WrongDim)
	s = rag.SearchJSON{}
	ts.must(http.StatusOK, "POST", "/v1/search", fresh()).json(t, &s)
	if s.Mode != "fulltext" || !strings.Contains(s.Degraded, "dimension") {
		t.Fatalf("wrong dimension: %+v", s)
	}
	ts.must(http.StatusAccepted, "POST", "/v1/pages", map[string]any{"url": "https://birds.example/ibis", "text": "The sacred ibis probes mud."}).json(t, &acc)
	time.Sleep(300 * time.Millisecond)
	j = rag.JobJSON{}
	ts.must(http.StatusOK, "GET", "/v1/jobs/"+acc.JobID, nil).json(t, &j)
	if (j.State != "queued" && j.State != "running") || !strings.Contains(j.Error, "dimension") {
		t.Fatalf("job with the wrong dimension: %+v", j)
	}
	if r := ts.req("GET", "/v1/pages?url=https://birds.example/ibis", nil); r.status != http.StatusNotFound {
		t.Fatalf("a page embedded with the wrong dimension was stored: %d %s", r.status, r.body)
	}

	// The server stops listening: connections refused.
	emb.Set(embedtest.Refused)
	time.Sleep(350 * time.Millisecond)
	for i := 0; i < 3; i++ {
		s = rag.SearchJSON{}
		ts.must(http.StatusOK, "POST", "/v1/search", fresh()).json(t, &s)
	}
	if s.Mode != "fulltext" || s.Degraded == "" {
		t.Fatalf("refused: %+v", s)
	}
	// Nothing corrupt: the store checks clean once closed.
	ts.hs.Close()
	if err := ts.srv.Close(); err != nil {
		t.Fatal(err)
	}
	be, err := local.Open(context.Background(), dir, &local.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	probs, err := be.Check(context.Background())
	if err != nil || len(probs) != 0 {
		t.Fatalf("store after the outage: %v %v", probs, err)
	}
}
