package main

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ragmem/ragmem/internal/embed/embedtest"
	"github.com/ragmem/ragmem/rag"
)

// TestOutageCostsMilliseconds is issue 25's outage check. The embedding
// server of a store is gone (its port closed): the first query of the
// outage, in a one-shot `ragmem search` and through `ragmem serve`, answers
// from BM25 within 100 ms and says why ("connection refused to
// 127.0.0.1:PORT"). A server that accepts the connection and never
// answers costs the query time limit (3 s) once per search, not once per
// retry, and the query reaches it once.
func TestOutageCostsMilliseconds(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	emb := embedtest.New(t, 16)
	dir, docs := t.TempDir(), t.TempDir()
	writeFile(t, docs+"/heron.md", "# Herons\n\nThe grey heron wades in shallow water.\n")
	spec := "openai:test-embed,dim=16" // retries as configured by default
	mustRun(t, "--dir", dir, "--embedder", spec, "--base-url", emb.BaseURL(), "index", docs)
	hostport := func(base string) string {
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		return u.Host
	}
	refused := "embedder unavailable: connection refused to " + hostport(emb.BaseURL())
	emb.Set(embedtest.Refused)

	search := func(base, query string) (rag.SearchJSON, time.Duration) {
		t.Helper()
		start := time.Now()
		out, _, code := runAsMain(t, "", "--dir", dir, "--embedder", spec, "--base-url", base, "search", "--json", query)
		took := time.Since(start)
		var res rag.SearchJSON
		if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 {
			t.Fatalf("search --json: exit %d %v\n%s", code, err, out)
		}
		return res, took
	}
	res, took := search(emb.BaseURL(), "grey heron")
	t.Logf("one-shot search, connection refused: %.1f ms searching, %s in all", res.TookMs, took.Round(time.Millisecond))
	if res.Mode != "fulltext" || res.Degraded != refused || len(res.Results) != 1 || res.TookMs > 100 {
		t.Errorf("one-shot search during the outage: mode %q degraded %q, %d results, %.1f ms", res.Mode, res.Degraded, len(res.Results), res.TookMs)
	}

	hang := embedtest.New(t, 16)
	hang.Set(embedtest.Hang)
	res, took = search(hang.BaseURL(), "wading heron")
	t.Logf("one-shot search, no answer: %.1f ms searching, %s in all, %d requests", res.TookMs, took.Round(time.Millisecond), hang.Calls())
	if res.Mode != "fulltext" || res.Degraded != "embedder unavailable: it does not answer in time" || res.TookMs > 5000 || hang.Calls() != 1 {
		t.Errorf("one-shot search, embedder not answering: mode %q degraded %q, %.1f ms, %d requests", res.Mode, res.Degraded, res.TookMs, hang.Calls())
	}

	// Through serve: the first query of the outage.
	s := startServeEnv(t, dir, []string{"RAGMEM_EMBEDDER=" + spec, "OPENAI_BASE_URL=" + emb.BaseURL()})
	defer s.stop()
	start := time.Now()
	r := s.call("POST", "/v1/search", jsonBody(t, map[string]any{"query": "shallow water heron"}), false)
	took = time.Since(start)
	var sr rag.SearchJSON
	if err := json.Unmarshal(r.body, &sr); err != nil {
		t.Fatalf("%s: %v", r.body, err)
	}
	t.Logf("serve, connection refused: %.1f ms searching, %s for the request", sr.TookMs, took.Round(time.Millisecond))
	if sr.Mode != "fulltext" || sr.Degraded != refused || len(sr.Results) != 1 || sr.TookMs > 100 || took > time.Second {
		t.Errorf("serve during the outage: mode %q degraded %q, %d results, %.1f ms searching, %s in all", sr.Mode, sr.Degraded, len(sr.Results), sr.TookMs, took)
	}
	time.Sleep(200 * time.Millisecond)
	if !strings.Contains(s.errText(), "connection refused") {
		t.Errorf("serve's log does not say why:\n%s", s.errText())
	}
}
