package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrefsDetectEveryStatement: `ragmem prefs detect` prints, and with
// --save stores, every statement of a message.
func TestPrefsDetectEveryStatement(t *testing.T) {
	dir, docs := t.TempDir(), t.TempDir()
	writeFile(t, docs+"/a.md", "# A\n\nSomething to make a store.\n")
	mustRun(t, "--dir", dir, "index", docs)
	out := mustRun(t, "--dir", dir, "prefs", "detect", "--save", "I'm a data scientist, explain like I'm new to Go")
	if !strings.Contains(out, "expertise: User is a data scientist\nstyle: Explain like the user is new to Go\n") || strings.Count(out, "saved ") != 2 {
		t.Errorf("prefs detect:\n%s", out)
	}
	if list := mustRun(t, "--dir", dir, "prefs", "list"); !strings.Contains(list, "User is a data scientist") || !strings.Contains(list, "new to Go") {
		t.Errorf("prefs list:\n%s", list)
	}
}

// TestMemoryStatsNoRateBeforeUse: a memory never used has no cite rate
// ("–", and none in JSON), not the ranking's prior of 0.5; one cited has
// its observed rate.
func TestMemoryStatsNoRateBeforeUse(t *testing.T) {
	dir := t.TempDir()
	mem := filepath.Join(t.TempDir(), "memories")
	run := func(args ...string) string {
		t.Helper()
		return mustRun(t, append([]string{"--dir", dir, "memory"}, append(args[:1:1], append([]string{"--memories", mem}, args[1:]...)...)...)...)
	}
	run("add", "--title", "Billing uses Postgres", "--when", "billing", "The billing service stores its invoices in Postgres.")
	run("add", "--title", "Deploys happen on Tuesdays", "--when", "deploy", "Deploys happen on Tuesdays only.")
	run("cite", "--injected", "billing-uses-postgres", "It is Postgres [memory:billing-uses-postgres].")
	out := run("stats")
	var unused, used string
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "deploys-happen-on-tuesdays"):
			unused = line
		case strings.HasPrefix(line, "billing-uses-postgres"):
			used = line
		}
	}
	if !strings.Contains(unused, " – ") || strings.Contains(out, "0.500") || !strings.Contains(used, " 1     1.000 ") {
		t.Errorf("stats:\n%s", out)
	}
	js := run("stats", "--json")
	var rep struct {
		Items []struct {
			Slug     string
			CiteRate *float64
		}
	}
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatal(err)
	}
	for _, it := range rep.Items {
		if (it.Slug == "deploys-happen-on-tuesdays") != (it.CiteRate == nil) {
			t.Errorf("%s: cite rate %v", it.Slug, it.CiteRate)
		}
	}
}

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
