package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/embed/embedtest"
	"github.com/ragmem/ragmem/internal/index/engine"
)

// deadLetters queues pages the worker gives up on (too many chunks for
// the limit used here) into the store in dir and returns their job ids.
func deadLetters(t *testing.T, dir string, n int) []string {
	t.Helper()
	ctx := context.Background()
	ix, err := engine.Open(ctx, dir, &engine.Options{MaxChunksPerDocument: 5})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := 0; i < n; i++ {
		ids = append(ids, ix.IndexPageAsync(index.Document{SourceURL: fmt.Sprintf("https://dead.example/%d", i), Content: strings.Repeat("# heading\n", 8), Format: chunk.Markdown}))
	}
	ids = append(ids, ix.IndexPageAsync(index.Document{SourceURL: "https://ok.example/", Content: "a page about herons"}))
	deadline := time.Now().Add(10 * time.Second)
	for _, id := range ids[:n] {
		for {
			if j, _ := ix.Job(id); j.State == index.JobDead {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s never dead", id)
			}
			time.Sleep(time.Millisecond)
		}
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	return ids[:n]
}

// TestJobsCommands: dead letters are listed by ragmem jobs list and ragmem
// check (which still exits 0: they are not an inconsistency), retried (here
// with a limit that now allows them) and dropped.
func TestJobsCommands(t *testing.T) {
	dir := t.TempDir()
	ids := deadLetters(t, dir, 2)
	out := mustRun(t, "--dir", dir, "jobs", "list")
	for _, id := range ids {
		if !strings.Contains(out, "dead        "+id) || !strings.Contains(out, "too many chunks") {
			t.Fatalf("jobs list:\n%s", out)
		}
	}
	var js struct{ Pending, Dead []index.Job }
	if err := json.Unmarshal([]byte(mustRun(t, "--dir", dir, "jobs", "list", "--json")), &js); err != nil || len(js.Dead) != 2 || len(js.Pending) != 0 {
		t.Fatalf("jobs list --json: %+v %v", js, err)
	}
	out, _, err := runCLI(t, "--dir", dir, "check")
	if err != nil || !strings.Contains(out, "dead       "+ids[0]) || !strings.Contains(out, "2 pages given up on") || !strings.Contains(out, "consistent") {
		t.Fatalf("check with dead letters: %v\n%s", err, out)
	}
	// Retried with the default limit, the page goes in.
	out = mustRun(t, "--dir", dir, "jobs", "retry", ids[0])
	if !strings.Contains(out, "indexed https://dead.example/0 (8 chunks)") {
		t.Fatalf("jobs retry:\n%s", out)
	}
	// Retried with the same small limit, it fails again: exit 1.
	_, _, err = runCLI(t, "--dir", dir, "--max-chunks-per-doc", "5", "jobs", "retry", ids[1])
	if exitCode(err) != 1 || !strings.Contains(err.Error(), "failed again") {
		t.Fatalf("retry that fails again: %v", err)
	}
	mustRun(t, "--dir", dir, "jobs", "drop", ids[1])
	if out := mustRun(t, "--dir", dir, "jobs", "list"); !strings.Contains(out, "no jobs waiting and no dead letters") {
		t.Fatalf("after drop:\n%s", out)
	}
	if _, _, err := runCLI(t, "--dir", dir, "jobs", "drop", ids[1]); err == nil || !strings.Contains(err.Error(), "no dead letter") {
		t.Fatalf("dropping twice: %v", err)
	}
}

// TestIndexRefusesAHeadingBomb: the CLI refuses a document over the chunk
// limit with one line naming the limit and the flag's effect.
func TestIndexRefusesAHeadingBomb(t *testing.T) {
	dir, docs := t.TempDir(), t.TempDir()
	writeFile(t, docs+"/bomb.md", strings.Repeat("# t\n", 5000))
	_, stderr, err := runCLI(t, "--dir", dir, "index", docs+"/bomb.md")
	line := strings.TrimSpace(stderr)
	if exitCode(err) != 1 || !strings.Contains(line, "too many chunks") || !strings.Contains(line, "4096") || strings.Contains(line, "\n") {
		t.Fatalf("bomb: %v\n%s", err, stderr)
	}
	if _, _, err := runCLI(t, "--dir", dir, "--max-chunks-per-doc", "0", "index", docs+"/bomb.md"); err != nil {
		t.Fatalf("with no limit: %v", err)
	}
}

// TestSearchSaysWhenDegraded: with the embedding server gone, ragmem search
// answers from BM25 and says so: "mode" and "degraded" in JSON, a line on
// stderr otherwise.
func TestSearchSaysWhenDegraded(t *testing.T) {
	emb := embedtest.New(t, 16)
	dir, docs := t.TempDir(), t.TempDir()
	writeFile(t, docs+"/heron.md", "# Herons\n\nThe grey heron wades in shallow water.\n")
	spec := "openai:test-embed,dim=16,retries=-1"
	mustRun(t, "--dir", dir, "--embedder", spec, "--base-url", emb.BaseURL(), "index", docs)
	emb.Set(embedtest.Refused)
	out := mustRun(t, "--dir", dir, "--embedder", spec, "--base-url", emb.BaseURL(), "search", "--json", "grey heron")
	var res struct {
		Mode, Degraded string
		Results        []any
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Mode != "fulltext" || !strings.HasPrefix(res.Degraded, "embedder unavailable: ") || len(res.Results) != 1 {
		t.Fatalf("search --json: %+v %v\n%s", res, err, out)
	}
	_, stderr, err := runCLI(t, "--dir", dir, "--embedder", spec, "--base-url", emb.BaseURL(), "search", "grey heron")
	if err != nil || !strings.Contains(stderr, "answered by fulltext search: embedder unavailable") {
		t.Fatalf("search: %v\n%s", err, stderr)
	}
}

// holdEmbedder holds every embedding until release is closed.
type holdEmbedder struct {
	embed.Embedder
	release chan struct{}
}

func (h holdEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	<-h.release
	return h.Embedder.Embed(ctx, texts)
}

// TestJobsListShowsCancelled: a queued page whose source was removed is
// listed as cancelled, in text and JSON.
func TestJobsListShowsCancelled(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	h := holdEmbedder{Embedder: embed.Default(), release: make(chan struct{})}
	ix, err := engine.Open(ctx, dir, &engine.Options{Embedder: h})
	if err != nil {
		t.Fatal(err)
	}
	id := ix.IndexPageAsync(index.Document{SourceURL: "https://gone.example/", Content: "a page about egrets"})
	if rm, err := ix.RemoveSource(ctx, "https://gone.example/"); err != nil || len(rm.Cancelled) != 1 {
		t.Fatalf("RemoveSource: %+v %v", rm, err)
	}
	close(h.release)
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, "--dir", dir, "jobs", "list")
	if !strings.Contains(out, "cancelled   "+id+"  https://gone.example/") {
		t.Fatalf("jobs list:\n%s", out)
	}
	var js struct{ Pending, Dead, Cancelled []index.Job }
	if err := json.Unmarshal([]byte(mustRun(t, "--dir", dir, "jobs", "list", "--json")), &js); err != nil || len(js.Cancelled) != 1 || js.Cancelled[0].State != index.JobCancelled || len(js.Pending) != 0 {
		t.Fatalf("jobs list --json: %+v %v", js, err)
	}
}
