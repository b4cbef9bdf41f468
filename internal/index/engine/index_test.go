package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragmem/ragmem/index"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/internal/embed"
)

var ctx = context.Background()

func open(t *testing.T, dir string, opts *Options) *Index {
	t.Helper()
	ix, err := Open(ctx, dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return ix
}

func longDoc(words int, topic string) string {
	var b strings.Builder
	for i := 0; i < words/10; i++ {
		fmt.Fprintf(&b, "Sentence %d talks about %s and other things here. ", i, topic)
		if i%8 == 7 {
			b.WriteString("\n\n")
		}
	}
	return b.String()
}

func TestAddIsIdempotentAndReplaces(t *testing.T) {
	dir := t.TempDir()
	ix := open(t, dir, nil)
	defer ix.Close()
	d := index.Document{SourceURL: "https://example.com/a", Title: "A", Content: longDoc(1500, "gardening")}
	r1, err := ix.Add(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Chunks < 3 || r1.Unchanged {
		t.Fatalf("first add: %+v", r1)
	}
	first, _ := ix.Source(ctx, d.SourceURL)
	// Same content: no-op, same chunks.
	r2, err := ix.Add(ctx, d)
	if err != nil || !r2.Unchanged || r2.Chunks != r1.Chunks {
		t.Fatalf("second add: %+v, %v", r2, err)
	}
	again, _ := ix.Source(ctx, d.SourceURL)
	if len(again) != len(first) || again[0].ID != first[0].ID || !again[0].CreatedAt.Equal(first[0].CreatedAt) {
		t.Fatalf("unchanged re-index rewrote chunks")
	}
	// Changed content: full replacement.
	d.Content = longDoc(600, "astronomy")
	r3, err := ix.Add(ctx, d)
	if err != nil || r3.Unchanged || r3.Removed != r1.Chunks {
		t.Fatalf("changed add: %+v, %v", r3, err)
	}
	now, _ := ix.Source(ctx, d.SourceURL)
	if len(now) != r3.Chunks {
		t.Fatalf("source has %d chunks, result says %d", len(now), r3.Chunks)
	}
	for _, c := range now {
		if strings.Contains(c.Content, "gardening") {
			t.Fatalf("old chunk survived replacement: %s", c.ID)
		}
	}
	hits, _ := ix.FullText(ctx, "gardening", 10, index.Filter{})
	if len(hits) != 0 {
		t.Fatalf("old content still searchable")
	}
	// A title change alone is a change.
	d.Title = "A, renamed"
	r4, _ := ix.Add(ctx, d)
	if r4.Unchanged {
		t.Fatalf("title change treated as unchanged")
	}
}

func TestChunkMetadata(t *testing.T) {
	ix := open(t, t.TempDir(), nil)
	defer ix.Close()
	before := time.Now()
	md := "# Install\n\nIntro text.\n\n## Linux\n\nUse the tarball on Linux.\n"
	if _, err := ix.Add(ctx, index.Document{SourceURL: "file:///docs/install.md", Title: "Install guide", Content: md, Format: chunk.Markdown}); err != nil {
		t.Fatal(err)
	}
	recs, _ := ix.Records(ctx, index.Filter{SourceURL: "file:///docs/install.md"})
	var linux *index.Record
	for i := range recs {
		r := &recs[i]
		if r.Title != "Install guide" || r.DocType != index.DocKnowledge || r.ContentHash == "" || len(r.Vector) != ix.Embedder().Dimension() {
			t.Fatalf("bad record %+v", r)
		}
		if r.CreatedAt.Before(before.Add(-time.Second)) || r.CreatedAt.After(time.Now().Add(time.Second)) {
			t.Fatalf("createdAt %v not within a second of indexing", r.CreatedAt)
		}
		if md[r.Start:r.End] != r.Content {
			t.Fatalf("offsets [%d,%d) do not locate the chunk", r.Start, r.End)
		}
		if strings.Contains(r.Content, "tarball") {
			linux = r
		}
	}
	if linux == nil || strings.Join(linux.HeadingPath, "/") != "Install/Linux" {
		t.Fatalf("heading path of the Linux chunk: %+v", linux)
	}
}

func TestHTMLTitleAndExtraction(t *testing.T) {
	ix := open(t, t.TempDir(), nil)
	defer ix.Close()
	html := `<html><head><title>Page T</title><script>var secret=1</script></head><body><nav>Menu</nav><h1>Heading</h1><p>Body text about otters.</p></body></html>`
	if _, err := ix.Add(ctx, index.Document{SourceURL: "https://h.example/", Content: html, Format: chunk.HTML}); err != nil {
		t.Fatal(err)
	}
	recs, _ := ix.Source(ctx, "https://h.example/")
	if len(recs) == 0 || recs[0].Title != "Page T" {
		t.Fatalf("records %+v", recs)
	}
	for _, r := range recs {
		if strings.Contains(r.Content, "secret") || strings.Contains(r.Content, "<p>") {
			t.Fatalf("script or markup indexed: %q", r.Content)
		}
	}
}

func TestBadDocuments(t *testing.T) {
	ix := open(t, t.TempDir(), nil)
	defer ix.Close()
	if _, err := ix.Add(ctx, index.Document{SourceURL: "", Content: "x"}); !errors.Is(err, ErrNoSource) {
		t.Fatalf("no URL: %v", err)
	}
	if _, err := ix.Add(ctx, index.Document{SourceURL: "u", Content: "   \n\t "}); !errors.Is(err, ErrEmptyDocument) {
		t.Fatalf("blank content: %v", err)
	}
	// Invalid UTF-8 is repaired, not rejected.
	if _, err := ix.Add(ctx, index.Document{SourceURL: "u", Content: "valid \xff\xfe text"}); err != nil {
		t.Fatalf("invalid UTF-8: %v", err)
	}
	// One bad document does not sink the batch.
	res, err := ix.AddMany(ctx, []index.Document{{SourceURL: "ok", Content: "fine text"}, {SourceURL: "", Content: "no url"}})
	if err != nil || res[0].Err != nil || res[1].Err == nil {
		t.Fatalf("AddMany: %+v %v", res, err)
	}
	st, _ := ix.Stats(ctx)
	if st.DocumentCount != 2 {
		t.Fatalf("documents = %d, want 2", st.DocumentCount)
	}
	// The same URL twice in one call: the last wins.
	res, _ = ix.AddMany(ctx, []index.Document{{SourceURL: "dup", Content: "first version"}, {SourceURL: "dup", Content: "second version"}})
	if !res[0].Superseded || res[1].Err != nil {
		t.Fatalf("duplicate URLs: %+v", res)
	}
	recs, _ := ix.Source(ctx, "dup")
	if len(recs) != 1 || !strings.Contains(recs[0].Content, "second") {
		t.Fatalf("duplicate URL result: %+v", recs)
	}
}

func TestEmbedderMismatchIsRefused(t *testing.T) {
	dir := t.TempDir()
	ix := open(t, dir, nil)
	ix.Add(ctx, index.Document{SourceURL: "u", Content: "text"})
	ix.Close()
	other := embed.NewLexical(&embed.LexicalOptions{Dimension: 128})
	_, err := Open(ctx, dir, &Options{Embedder: other})
	if !errors.Is(err, ErrEmbedderMismatch) {
		t.Fatalf("err = %v, want ErrEmbedderMismatch", err)
	}
	for _, want := range []string{embed.Default().Identity(), other.Identity(), "--embedder", "--dir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	// The store is untouched and still opens with its own embedder.
	ix = open(t, dir, nil)
	defer ix.Close()
	if recs, _ := ix.Source(ctx, "u"); len(recs) != 1 {
		t.Fatal("store damaged by the refused open")
	}
}

func TestSameEmbedder(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"lexical-v1/d384/w1", "lexical-v1/d384/w1", true},
		{"lexical-v1/d384/w1", "lexical-v1/d128/w1", false},
		{"openai/nomic/d0", "openai/nomic/d768", true},
		{"openai/nomic/d768", "openai/nomic/d0", true},
		{"openai/nomic/d0", "openai/other/d768", false},
		{"openai/nomic/d512", "openai/nomic/d768", false},
	}
	for _, c := range cases {
		if got := SameEmbedder(c.a, c.b); got != c.want {
			t.Errorf("SameEmbedder(%q, %q) = %v", c.a, c.b, got)
		}
	}
}

// failingEmbedder fails every call after the first n texts.
type failingEmbedder struct {
	embed.Embedder
	fail atomic.Bool
}

func (f *failingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if f.fail.Load() {
		return nil, errors.New("model server down")
	}
	return f.Embedder.Embed(ctx, texts)
}

func TestEmbedFailureChangesNothing(t *testing.T) {
	fe := &failingEmbedder{Embedder: embed.Default()}
	ix := open(t, t.TempDir(), &Options{Embedder: fe})
	defer ix.Close()
	ix.Add(ctx, index.Document{SourceURL: "u", Content: "original text"})
	fe.fail.Store(true)
	_, err := ix.Add(ctx, index.Document{SourceURL: "u", Content: "replacement text"})
	if !errors.Is(err, ErrEmbedding) {
		t.Fatalf("err = %v", err)
	}
	recs, _ := ix.Source(ctx, "u")
	if len(recs) != 1 || recs[0].Content != "original text" {
		t.Fatalf("failed replacement changed the source: %+v", recs)
	}
	st, _ := ix.Stats(ctx)
	if st.EmbeddingModelLoaded {
		t.Fatal("stats say the embedder is fine after a failure")
	}
	if _, err := ix.Vector(ctx, "q", 3, index.Filter{}); !errors.Is(err, ErrEmbedding) {
		t.Fatalf("vector query with a failing embedder: %v", err)
	}
}

func TestIndexPageAsync(t *testing.T) {
	fe := &failingEmbedder{Embedder: embed.Default()}
	ix := open(t, t.TempDir(), &Options{Embedder: fe, MaxAttempts: 2, RetryDelay: time.Millisecond})
	var ids []string
	for i := 0; i < 40; i++ {
		ids = append(ids, ix.IndexPageAsync(index.Document{SourceURL: fmt.Sprintf("https://p.example/%d", i%20), Title: "P", Content: fmt.Sprintf("page %d about rivers", i%20)}))
	}
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		j, ok := ix.Job(id)
		if !ok || j.State != index.JobDone {
			t.Fatalf("job %s: %+v", id, j)
		}
	}
	st, _ := ix.Stats(ctx)
	if st.DocumentCount != 20 {
		t.Fatalf("documents = %d, want 20 (same URL + content is one set of chunks)", st.DocumentCount)
	}
	q := ix.QueueStats()
	if q.Enqueued != 40 || q.Done != 40 || q.Unchanged < 20 || q.Failed != 0 {
		t.Fatalf("queue stats %+v", q)
	}
	// Failures are retried, counted and reported by the job, never
	// returned; after MaxAttempts the page goes to the dead letters.
	fe.fail.Store(true)
	bad := ix.IndexPageAsync(index.Document{SourceURL: "https://p.example/new", Content: "new page"})
	deadline := time.Now().Add(10 * time.Second)
	for {
		j, _ := ix.Job(bad)
		if j.State == index.JobDead {
			if j.Attempts != 2 || !strings.Contains(j.Error, "gave up after 2 attempts") || !strings.Contains(j.Error, "the embedder failed") {
				t.Fatalf("dead job: %+v", j)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job never given up on: %+v", j)
		}
		time.Sleep(time.Millisecond)
	}
	if q := ix.QueueStats(); q.Failed != 1 || q.Retries != 1 || q.Dead != 1 {
		t.Fatalf("failure not counted: %+v", q)
	}
	fe.fail.Store(false)
	// Close waits for queued pages.
	last := ix.IndexPageAsync(index.Document{SourceURL: "https://p.example/last", Content: "the last page"})
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if j, _ := ix.Job(last); j.State != index.JobDone {
		t.Fatalf("Close did not finish the queue: %+v", j)
	}
	// After Close, pages are refused without panicking.
	after := ix.IndexPageAsync(index.Document{SourceURL: "x", Content: "y"})
	if j, _ := ix.Job(after); j.State != index.JobFailed {
		t.Fatalf("job after close: %+v", j)
	}
}

func TestQueueFullDrops(t *testing.T) {
	ix := openBlocked(t, &Options{QueueSize: 2})
	var states []string
	for i := 0; i < 10; i++ {
		id := ix.IndexPageAsync(index.Document{SourceURL: fmt.Sprintf("u%d", i), Content: "text"})
		j, _ := ix.Job(id)
		states = append(states, string(j.State))
	}
	if ix.QueueStats().Dropped == 0 {
		t.Fatalf("no page dropped with a full queue: %v", states)
	}
}

// openBlocked opens an index in a new directory with opts and an embedder
// that blocks until the test ends, so that the worker holds the first page
// it takes and the queue fills.
func openBlocked(t *testing.T, opts *Options) *Index {
	t.Helper()
	block := make(chan struct{})
	o := *opts
	o.Embedder = &blockingEmbedder{Embedder: embed.Default(), block: block}
	ix := open(t, t.TempDir(), &o)
	t.Cleanup(func() { ix.Close() })
	t.Cleanup(func() { close(block) }) // runs first: the worker finishes
	return ix
}

type blockingEmbedder struct {
	embed.Embedder
	block chan struct{}
}

func (b *blockingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	<-b.block
	return b.Embedder.Embed(ctx, texts)
}

func TestStats(t *testing.T) {
	ix := open(t, t.TempDir(), nil)
	defer ix.Close()
	ix.Add(ctx, index.Document{SourceURL: "a", Content: "alpha text"})
	ix.Add(ctx, index.Document{SourceURL: "m", Content: "a memory", DocType: index.DocMemory})
	ix.Put(ctx, []index.Record{{ID: "p1", SourceURL: "preference://user", Content: "likes go", DocType: index.DocPreference}})
	st, err := ix.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.DocumentCount != 1 || st.ChunkCount != 3 || st.PreferenceCount != 1 || st.MemoryCount != 1 ||
		st.IndexSizeBytes <= 0 || st.LastSyncTime.IsZero() || !st.EmbeddingModelLoaded || st.Dimension != embed.Default().Dimension() {
		t.Fatalf("stats %+v", st)
	}
}
