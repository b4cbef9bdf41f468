package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// reversingReranker is a /rerank server speaking TEI's protocol that
// scores the i-th document i: it reverses the fused order.
func reversingReranker(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var b struct {
			Query string   `json:"query"`
			Texts []string `json:"texts"`
		}
		if r.URL.Path != "/rerank" || json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&b) != nil {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		out := make([]map[string]any, len(b.Texts))
		for i := range b.Texts {
			out[i] = map[string]any{"index": i, "score": float64(i)}
		}
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

// TestCLIReranker: --reranker sends the search's fused results to a
// /rerank server (here one speaking TEI's protocol that prefers the
// document the fused order puts last) and the JSON shows its order, its
// scores and how many it reordered; a reranker that is down leaves the
// fused order and says why.
func TestCLIReranker(t *testing.T) {
	srv, calls := reversingReranker(t)
	dir, docs := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(docs, "a.md"), "# A\n\nQuetzal quetzal quetzal tarball.\n")
	writeFile(t, filepath.Join(docs, "b.md"), "# B\n\nA quetzal and other birds.\n")
	mustRun(t, "--dir", dir, "index", docs)

	type out struct {
		Reranked      int    `json:"reranked"`
		RerankSkipped string `json:"rerankSkipped"`
		Results       []struct {
			URL         string         `json:"url"`
			Explanation map[string]any `json:"explanation"`
		} `json:"results"`
	}
	search := func(args ...string) out {
		t.Helper()
		s := mustRun(t, append(append([]string{"--dir", dir}, args...), "search", "--mode", "fulltext", "--threshold", "-1", "--json", "quetzal")...)
		var o out
		if err := json.Unmarshal([]byte(s), &o); err != nil || len(o.Results) != 2 {
			t.Fatalf("%v\n%s", err, s)
		}
		return o
	}
	fused := search()
	if fused.Reranked != 0 || fused.Results[0].Explanation["rerankRank"] != nil {
		t.Fatalf("reranked without a reranker: %+v", fused)
	}
	got := search("--reranker", srv.URL)
	if got.Reranked != 2 || got.Results[0].URL != fused.Results[1].URL || got.Results[1].URL != fused.Results[0].URL {
		t.Fatalf("reranked %+v, fused %+v", got, fused)
	}
	if got.Results[0].Explanation["rerankRank"] != 1.0 || got.Results[0].Explanation["rerankScore"] != 1.0 || calls.Load() != 1 {
		t.Errorf("explanation %v, calls %d", got.Results[0].Explanation, calls.Load())
	}
	srv.Close()
	down := search("--reranker", srv.URL+"/rerank")
	if down.Reranked != 0 || !strings.HasPrefix(down.RerankSkipped, "reranker unavailable: ") || down.Results[0].URL != fused.Results[0].URL {
		t.Errorf("reranker down: %+v", down)
	}
	if _, _, err := runCLI(t, "--dir", dir, "--reranker", "not a url", "search", "quetzal"); err == nil || !strings.Contains(err.Error(), "reranker URL") {
		t.Errorf("a bad --reranker: %v", err)
	}
}

// ragmem serve --reranker: the HTTP API's searches and contexts are
// reranked and say so.
func TestServeReranker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process")
	}
	srv, calls := reversingReranker(t)
	dir, docs := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(docs, "a.md"), "# A\n\nQuetzal quetzal quetzal tarball.\n")
	writeFile(t, filepath.Join(docs, "b.md"), "# B\n\nA quetzal and other birds.\n")
	mustRun(t, "--dir", dir, "index", docs)
	s := startServe(t, dir, "--reranker", srv.URL)
	var res struct {
		Reranked int `json:"reranked"`
		Results  []struct {
			URL         string         `json:"url"`
			Explanation map[string]any `json:"explanation"`
		} `json:"results"`
	}
	r := s.call("POST", "/v1/search", jsonBody(t, map[string]any{"query": "quetzal", "mode": "fulltext", "threshold": -1}), false)
	decode(t, r, &res)
	if r.status != http.StatusOK || res.Reranked != 2 || len(res.Results) != 2 || !strings.HasSuffix(res.Results[0].URL, "b.md") ||
		res.Results[0].Explanation["rerankRank"] != 1.0 || calls.Load() != 1 {
		t.Fatalf("search: %d %s (calls %d)", r.status, r.body, calls.Load())
	}
	var c struct {
		Reranked int `json:"reranked"`
		Sources  []struct {
			URL string `json:"url"`
		} `json:"sources"`
	}
	r = s.call("POST", "/v1/context", jsonBody(t, map[string]any{"query": "quetzal", "model": "gpt-4o"}), false)
	decode(t, r, &c)
	if r.status != http.StatusOK || c.Reranked != 2 || len(c.Sources) == 0 || !strings.HasSuffix(c.Sources[0].URL, "b.md") {
		t.Fatalf("context: %d %s", r.status, r.body)
	}
}
