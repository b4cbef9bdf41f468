package engine

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragmem/ragmem/index"

	"github.com/ragmem/ragmem/internal/embed"
)

// heldEmbedder holds back texts containing "held" until release is closed,
// and says on entered when it starts holding.
type heldEmbedder struct {
	embed.Embedder
	entered chan struct{}
	release chan struct{}
}

func (h *heldEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	for _, t := range texts {
		if strings.Contains(t, "held") {
			select {
			case h.entered <- struct{}{}:
			default:
			}
			<-h.release
		}
	}
	return h.Embedder.Embed(ctx, texts)
}

// TestRemoveCancelsQueuedPages: removing a source cancels its queued pages
// (every URL variant) and the page being indexed, whose chunks are not
// written yet; none of them is indexed, now or after a restart, and their
// jobs say cancelled, in memory and in the persisted queue.
func TestRemoveCancelsQueuedPages(t *testing.T) {
	dir := t.TempDir()
	he := &heldEmbedder{Embedder: embed.Default(), entered: make(chan struct{}, 1), release: make(chan struct{})}
	ix := open(t, dir, &Options{Embedder: he})
	running := ix.IndexPageAsync(index.Document{SourceURL: "https://c.example/running", Content: "held page about kestrels"})
	<-he.entered // the worker is indexing it, held in the embedder
	q1 := ix.IndexPageAsync(index.Document{SourceURL: "https://c.example/queued#top", Content: "a page about herons"})
	q2 := ix.IndexPageAsync(index.Document{SourceURL: "https://c.example/queued?utm_source=feed", Content: "a newer page about herons"})
	other := ix.IndexPageAsync(index.Document{SourceURL: "https://c.example/other", Content: "a page about owls"})

	rm, err := ix.RemoveSource(ctx, "https://C.example/queued")
	if err != nil || rm.Chunks != 0 || !slices.Equal(rm.Cancelled, []string{q1, q2}) {
		t.Fatalf("RemoveSource(queued): %+v %v, want jobs %s %s", rm, err, q1, q2)
	}
	rm, err = ix.RemoveSource(ctx, "https://c.example/running")
	if err != nil || !slices.Equal(rm.Cancelled, []string{running}) {
		t.Fatalf("RemoveSource(running): %+v %v", rm, err)
	}
	if j, _ := ix.Job(running); j.State != index.JobCancelled || j.Finished.IsZero() || !strings.Contains(j.Error, "deleted") {
		t.Fatalf("running job after the removal: %+v", j)
	}
	close(he.release)
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(ix *Index, when string) {
		t.Helper()
		for _, u := range []string{"https://c.example/queued", "https://c.example/running"} {
			if recs, _ := ix.Source(ctx, u); len(recs) != 0 {
				t.Errorf("%s: %s came back: %+v", when, u, recs)
			}
		}
		for _, id := range []string{running, q1, q2} {
			if j, _ := ix.Job(id); j.State != index.JobCancelled {
				t.Errorf("%s: job %s: %+v", when, id, j)
			}
		}
		if j, _ := ix.Job(other); j.State != index.JobDone || j.Chunks != 1 {
			t.Errorf("%s: the other page's job: %+v", when, j)
		}
		if got := ix.ListJobs(index.JobCancelled); len(got) != 3 {
			t.Errorf("%s: ListJobs(cancelled): %+v", when, got)
		}
	}
	check(ix, "before the restart")
	if q := ix.QueueStats(); q.Cancelled != 3 || q.Depth != 0 || q.Done != 1 {
		t.Errorf("queue stats: %+v", q)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	qc, err := CheckQueue(ctx, dir, false)
	if err != nil || qc.Pending != 0 || len(qc.Cancelled) != 3 {
		t.Fatalf("persisted queue: %+v %v", qc, err)
	}
	ix = open(t, dir, &Options{Embedder: he})
	defer ix.Close()
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	check(ix, "after the restart")
}

// TestRemoveCancelsWaitingPages: a page waiting to be tried again after a
// failure is cancelled too, in the persisted queue as well: it is not
// waiting any more, and a restart does not bring it back.
func TestRemoveCancelsWaitingPages(t *testing.T) {
	dir := t.TempDir()
	oe := &outageEmbedder{Embedder: embed.Default()}
	oe.down.Store(true)
	ix := open(t, dir, &Options{Embedder: oe, RetryDelay: time.Hour, Breaker: &embed.BreakerOptions{OpenFor: time.Millisecond}})
	id := ix.IndexPageAsync(index.Document{SourceURL: "https://w.example/", Content: "a page about ospreys"})
	for {
		if j, _ := ix.Job(id); j.State == index.JobQueued && !j.RetryAt.IsZero() {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if q := ix.QueueStats(); q.Waiting != 1 {
		t.Fatalf("before: %+v", q)
	}
	rm, err := ix.RemoveSource(ctx, "https://w.example")
	if err != nil || !slices.Equal(rm.Cancelled, []string{id}) {
		t.Fatalf("RemoveSource: %+v %v", rm, err)
	}
	if q := ix.QueueStats(); q.Waiting != 0 || q.Depth != 0 || q.Bytes != 0 {
		t.Fatalf("after: %+v", q)
	}
	oe.down.Store(false)
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix = open(t, dir, &Options{Embedder: oe})
	defer ix.Close()
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if j, _ := ix.Job(id); j.State != index.JobCancelled {
		t.Fatalf("after the restart: %+v", j)
	}
	if recs, _ := ix.Source(ctx, "https://w.example/"); len(recs) != 0 {
		t.Fatalf("the page came back: %+v", recs)
	}
	// Removing a source with nothing stored and nothing queued cancels
	// nothing.
	if rm, err := ix.RemoveSource(ctx, "https://w.example/"); err != nil || rm.Chunks != 0 || len(rm.Cancelled) != 0 {
		t.Fatalf("second removal: %+v %v", rm, err)
	}
}
