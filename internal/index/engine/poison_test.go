package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragmem/ragmem/index"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/internal/embed"
)

// headingBomb is a page of tiny headings: each one is a chunk.
func headingBomb(bytes int, html bool) (string, chunk.Format) {
	if html {
		return strings.Repeat("<h1>t</h1>", bytes/10), chunk.HTML
	}
	return strings.Repeat("# t\n", bytes/4), chunk.Markdown
}

// TestHeadingBombIsRefused: a page of a quarter of a million headings fails
// with ErrTooManyChunks at once, allocating a small fraction of what
// indexing it would (the issue measured 22 KB per chunk, so about 5 GB here),
// and the store is unchanged.
func TestHeadingBombIsRefused(t *testing.T) {
	ix := open(t, t.TempDir(), nil)
	defer ix.Close()
	for _, html := range []bool{false, true} {
		src, f := headingBomb(1<<20, html)
		var err error
		var a, b runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&a)
		start := time.Now()
		_, err = ix.Add(ctx, index.Document{SourceURL: "https://bomb.example/", Content: src, Format: f})
		took := time.Since(start)
		runtime.ReadMemStats(&b)
		if !errors.Is(err, ErrTooManyChunks) || !strings.Contains(err.Error(), "4096") {
			t.Fatalf("html=%v: err = %v; want ErrTooManyChunks naming the limit", html, err)
		}
		if alloc := b.TotalAlloc - a.TotalAlloc; alloc > 64<<20 {
			t.Errorf("html=%v: refusing the bomb allocated %d MB", html, alloc>>20)
		}
		t.Logf("html=%v: %v in %v", html, err, took)
	}
	if st, _ := ix.Stats(ctx); st.ChunkCount != 0 {
		t.Fatalf("the store holds %d chunks", st.ChunkCount)
	}
	// Under the limit a document is indexed as before, and the limit is
	// the option's.
	ix2 := open(t, t.TempDir(), &Options{MaxChunksPerDocument: 10})
	defer ix2.Close()
	src, f := headingBomb(40, false)
	if r, err := ix2.Add(ctx, index.Document{SourceURL: "u", Content: src, Format: f}); err != nil || r.Chunks != 10 {
		t.Fatalf("10 headings with a limit of 10: %+v, %v", r, err)
	}
	src, f = headingBomb(44, false)
	if _, err := ix2.Add(ctx, index.Document{SourceURL: "u", Content: src, Format: f}); !errors.Is(err, ErrTooManyChunks) {
		t.Fatalf("11 headings with a limit of 10: %v", err)
	}
}

// waitJob polls a job until it reaches a state (or fails the test).
func waitJob(t *testing.T, ix *Index, id string, want index.JobState) index.Job {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		j, _ := ix.Job(id)
		if j.State == want {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s never became %s: %+v", id, want, j)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestPoisonPageGoesToTheDeadLetters: a background page that cannot be
// indexed goes to the dead letters at once (it would fail every time),
// the pages queued with it are indexed, and the dead letter survives a
// restart, can be retried (here with a limit that now allows it) and
// dropped.
func TestPoisonPageGoesToTheDeadLetters(t *testing.T) {
	dir := t.TempDir()
	ix := open(t, dir, &Options{MaxChunksPerDocument: 50})
	src, f := headingBomb(4*200, false)
	var ids []string
	ids = append(ids, ix.IndexPageAsync(index.Document{SourceURL: "https://a.example/1", Content: "herons wade"}))
	bomb := ix.IndexPageAsync(index.Document{SourceURL: "https://bomb.example/", Content: src, Format: f})
	ids = append(ids, ix.IndexPageAsync(index.Document{SourceURL: "https://a.example/2", Content: "storks fly"}))
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	j := waitJob(t, ix, bomb, index.JobDead)
	if j.Attempts != 1 || !strings.Contains(j.Error, "too many chunks") || !strings.Contains(j.Error, "50") {
		t.Fatalf("dead job: %+v", j)
	}
	for _, id := range ids {
		waitJob(t, ix, id, index.JobDone)
	}
	if dead := ix.ListJobs(index.JobDead); len(dead) != 1 || dead[0].ID != bomb {
		t.Fatalf("dead letters: %+v", dead)
	}
	if q := ix.QueueStats(); q.Dead != 1 || q.Failed != 1 || q.Depth != 0 {
		t.Fatalf("queue stats: %+v", q)
	}
	if _, err := ix.RetryJob(ctx, ids[0]); !errors.Is(err, ErrNoJob) {
		t.Fatalf("retrying a done job: %v", err)
	}
	ix.Close()

	qc, err := CheckQueue(ctx, dir, false)
	if err != nil || len(qc.Dead) != 1 || qc.Dead[0].ID != bomb || qc.Pending != 0 {
		t.Fatalf("CheckQueue: %+v, %v", qc, err)
	}
	// A restart keeps the dead letter and does not replay it.
	ix = open(t, dir, &Options{MaxChunksPerDocument: 500})
	defer ix.Close()
	if j, _ := ix.Job(bomb); j.State != index.JobDead || ix.QueueStats().Replayed != 0 {
		t.Fatalf("after a restart: %+v %+v", j, ix.QueueStats())
	}
	nj, err := ix.RetryJob(ctx, bomb)
	if err != nil || nj.State != index.JobQueued {
		t.Fatalf("RetryJob: %+v, %v", nj, err)
	}
	j = waitJob(t, ix, bomb, index.JobDone)
	if j.Chunks != 200 {
		t.Fatalf("retried job: %+v", j)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, deadDir, "*")); len(m) != 0 {
		t.Fatalf("dead letter files left after the retry: %v", m)
	}
	// Drop: another dead letter, then gone, with its file.
	ix.Close()
	ix = open(t, dir, &Options{MaxChunksPerDocument: 5})
	src, f = headingBomb(4*6, false)
	id := ix.IndexPageAsync(index.Document{SourceURL: "https://b.example/", Content: src, Format: f})
	waitJob(t, ix, id, index.JobDead)
	if m, _ := filepath.Glob(filepath.Join(dir, deadDir, "*")); len(m) != 1 {
		t.Fatalf("dead letter files: %v", m)
	}
	if err := ix.DropJob(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, ok := ix.Job(id); ok || len(ix.ListJobs(index.JobDead)) != 0 {
		t.Fatal("dropped job still listed")
	}
	if m, _ := filepath.Glob(filepath.Join(dir, deadDir, "*")); len(m) != 0 {
		t.Fatalf("dead letter files left after the drop: %v", m)
	}
	if err := ix.DropJob(ctx, id); !errors.Is(err, ErrNoJob) {
		t.Fatalf("second drop: %v", err)
	}
	ix.Close()
	ix = open(t, dir, nil)
	if len(ix.ListJobs(index.JobDead)) != 0 {
		t.Fatal("dropped job back after a restart")
	}
}

// outageEmbedder is down (an outage, as a circuit breaker reports it) while
// down is set, and counts its calls.
type outageEmbedder struct {
	embed.Embedder
	down  atomic.Bool
	calls atomic.Int64
}

func (o *outageEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	o.calls.Add(1)
	if o.down.Load() {
		return nil, &embed.UnavailableError{Cause: errors.New("connection refused"), RetryAt: time.Now().Add(5 * time.Millisecond)}
	}
	return o.Embedder.Embed(ctx, texts)
}

// TestPagesWaitOutAnOutage: while the embedder is unavailable, background
// pages wait without using up their attempts, survive a restart, and are
// indexed once it is back.
func TestPagesWaitOutAnOutage(t *testing.T) {
	dir := t.TempDir()
	oe := &outageEmbedder{Embedder: embed.Default()}
	oe.down.Store(true)
	fast := &embed.BreakerOptions{OpenFor: time.Millisecond}
	ix := open(t, dir, &Options{Embedder: oe, MaxAttempts: 2, RetryDelay: time.Millisecond, Breaker: fast})
	id := ix.IndexPageAsync(index.Document{SourceURL: "https://o.example/", Content: "a page about ospreys"})
	for oe.calls.Load() < 10 {
		time.Sleep(time.Millisecond)
	}
	j, _ := ix.Job(id)
	if j.State == index.JobDead || j.Attempts != 0 || !strings.Contains(j.Error, "unavailable") {
		t.Fatalf("job during the outage: %+v", j)
	}
	if q := ix.QueueStats(); q.Waiting+q.Depth == 0 {
		t.Fatalf("queue stats during the outage: %+v", q)
	}
	// Close with the embedder still down: the page stays queued on disk.
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if qc, _ := CheckQueue(ctx, dir, false); qc.Pending != 1 {
		t.Fatalf("after closing during an outage: %+v", qc)
	}
	oe.down.Store(false)
	ix = open(t, dir, &Options{Embedder: oe, Breaker: fast})
	defer ix.Close()
	if j := waitJob(t, ix, id, index.JobDone); j.Chunks != 1 {
		t.Fatalf("job after the outage: %+v", j)
	}
}

// TestQueueBytesBound: the text waiting in memory is bounded; a page is
// always accepted by an empty queue.
func TestQueueBytesBound(t *testing.T) {
	ix := openBlocked(t, &Options{QueueBytes: 1000})
	big := strings.Repeat("x ", 2000)
	first := ix.IndexPageAsync(index.Document{SourceURL: "u0", Content: big}) // taken by the worker, which blocks
	waitJob(t, ix, first, index.JobRunning)
	second := ix.IndexPageAsync(index.Document{SourceURL: "u1", Content: big}) // alone in the queue: accepted
	third := ix.IndexPageAsync(index.Document{SourceURL: "u2", Content: "small"})
	if j, _ := ix.Job(second); j.State != index.JobQueued {
		t.Fatalf("a page into an empty queue: %+v", j)
	}
	if j, _ := ix.Job(third); j.State != index.JobFailed || !strings.Contains(j.Error, "bytes of text waiting") {
		t.Fatalf("a page past the bytes bound: %+v", j)
	}
}

// TestQuotas: a write past the store's chunk or byte quota fails with
// ErrQuotaExceeded; replacing a source counts only the difference; removals
// always work; a background page past the quota goes to the dead letters.
func TestQuotas(t *testing.T) {
	ix := open(t, t.TempDir(), &Options{QuotaChunks: 3})
	defer ix.Close()
	for i := 0; i < 3; i++ {
		if _, err := ix.Add(ctx, index.Document{SourceURL: fmt.Sprint("u", i), Content: "text"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ix.Add(ctx, index.Document{SourceURL: "u3", Content: "text"}); !errors.Is(err, ErrQuotaExceeded) || !strings.Contains(err.Error(), "quota of 3") {
		t.Fatalf("past the chunk quota: %v", err)
	}
	if _, err := ix.Add(ctx, index.Document{SourceURL: "u0", Content: "replaced"}); err != nil {
		t.Fatalf("replacing within the quota: %v", err)
	}
	if n, err := ix.Remove(ctx, "u1"); err != nil || n != 1 {
		t.Fatalf("remove at the quota: %d, %v", n, err)
	}
	if _, err := ix.Add(ctx, index.Document{SourceURL: "u3", Content: "text"}); err != nil {
		t.Fatalf("after a removal: %v", err)
	}
	id := ix.IndexPageAsync(index.Document{SourceURL: "u4", Content: "text"})
	if j := waitJob(t, ix, id, index.JobDead); !strings.Contains(j.Error, "quota") || j.Attempts != 1 {
		t.Fatalf("background page past the quota: %+v", j)
	}

	// Bytes: the store's own files, not a store nested in its directory.
	dir := t.TempDir()
	nested := open(t, filepath.Join(dir, "namespaces", "alice"), nil)
	if _, err := nested.Add(ctx, index.Document{SourceURL: "n", Content: strings.Repeat("nested words ", 20000)}); err != nil {
		t.Fatal(err)
	}
	nested.Close()
	ixb := open(t, dir, &Options{QuotaBytes: 200 << 10})
	defer ixb.Close()
	if _, err := ixb.Add(ctx, index.Document{SourceURL: "a", Content: "a small page"}); err != nil {
		t.Fatalf("a small page under the byte quota (a larger nested store must not count): %v", err)
	}
	if _, err := ixb.Add(ctx, index.Document{SourceURL: "b", Content: strings.Repeat("many words here ", 30000)}); !errors.Is(err, ErrQuotaExceeded) {
		t.Fatalf("past the byte quota: %v", err)
	}
}

// TestInterruptedPagesGoAlone: pages whose indexing a crash interrupted are
// indexed one at a time, so a page that kills the process uses up only its
// own attempts.
func TestInterruptedPagesGoAlone(t *testing.T) {
	ix := &Index{}
	ix.ready = []*job{{id: "a", attempts: 1}, {id: "b"}, {id: "c"}}
	if b := ix.takeLocked(); len(b) != 1 || b[0].id != "a" {
		t.Fatalf("first batch: %v", len(b))
	}
	if b := ix.takeLocked(); len(b) != 2 {
		t.Fatalf("second batch: %d pages", len(b))
	}
	ix.ready = []*job{{id: "a"}, {id: "b", attempts: 2}, {id: "c"}}
	if b := ix.takeLocked(); len(b) != 1 || b[0].id != "a" {
		t.Fatalf("a batch stops before an interrupted page: %d", len(b))
	}
	ix.ready = []*job{{id: "a", bytes: 600 << 10}, {id: "b", bytes: 600 << 10}}
	if b := ix.takeLocked(); len(b) != 1 {
		t.Fatalf("a batch holds at most %d bytes: %d pages", maxBatchBytes, len(b))
	}
}
