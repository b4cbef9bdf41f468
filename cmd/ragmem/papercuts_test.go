package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestFusedScoreShowsRawScores: a hybrid result's fused score is relative to
// its list, so the raw scores stand beside it (BM25's and the cosine
// similarity, as the JSON explanation has them); a single list's score is
// raw already and stands alone.
func TestFusedScoreShowsRawScores(t *testing.T) {
	dir, docs := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(docs, "a.md"), "# Herons\n\nThe grey heron wades in shallow water and eats fish.\n")
	writeFile(t, filepath.Join(docs, "b.md"), "# Storks\n\nThe white stork wades in meadows and eats frogs.\n")
	mustRun(t, "--dir", dir, "index", docs)
	js := mustRun(t, "--dir", dir, "search", "--json", "--threshold", "-1", "wades and eats")
	var res struct {
		Results []struct {
			Title       string
			Explanation struct {
				BM25Score, VectorSimilarity float64
			}
		}
	}
	if err := json.Unmarshal([]byte(js), &res); err != nil || len(res.Results) != 2 {
		t.Fatalf("%v\n%s", err, js)
	}
	out := mustRun(t, "--dir", dir, "search", "--threshold", "-1", "wades and eats")
	for _, r := range res.Results {
		want := fmt.Sprintf("in this list; raw bm25 %.3f, cosine %.3f)", r.Explanation.BM25Score, r.Explanation.VectorSimilarity)
		if !strings.Contains(out, r.Title+"  (score ") || !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	out = mustRun(t, "--dir", dir, "search", "--mode", "fulltext", "--threshold", "-1", "wades and eats")
	if strings.Contains(out, "in this list") || !strings.Contains(out, "bm25 #1 (") {
		t.Errorf("BM25 alone:\n%s", out)
	}
}
