package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestCLIReranker: --reranker sends the search's fused results to a
// /rerank server (here one speaking TEI's protocol that prefers the
// document the fused order puts last) and the JSON shows its order, its
// scores and how many it reordered; a reranker that is down leaves the
// fused order and says why.
func TestCLIReranker(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var b struct {
			Query string   `json:"query"`
			Texts []string `json:"texts"`
		}
		if r.URL.Path != "/rerank" || json.NewDecoder(r.Body).Decode(&b) != nil {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		out := make([]map[string]any, len(b.Texts))
		for i := range b.Texts {
			out[i] = map[string]any{"index": i, "score": float64(i)} // the last fused first
		}
		json.NewEncoder(w).Encode(out)
	}))
	defer srv.Close()
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
