package server_test

import (
	"context"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
)

// heapGrowth runs f while sampling the heap and returns its peak growth.
func heapGrowth(f func()) uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	base := m.HeapAlloc
	var peak atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > base && m.HeapAlloc-base > peak.Load() {
				peak.Store(m.HeapAlloc - base)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	f()
	close(stop)
	<-done
	return peak.Load()
}

// TestHeadingBombOverHTTP: the pages that took the server down (a page of
// tiny headings, as Markdown text or as HTML) are refused at once with 422,
// the heap grows by a bounded amount while the server reads them, and the
// store is unchanged. Scaled down from the 10 MiB of the report to 1 MiB
// (about 100,000 and 250,000 headings; before the limits, 2.2 GB of memory
// for half that): the full size is measured by `ragmem bench bombs` (see
// docs/server.md).
func TestHeadingBombOverHTTP(t *testing.T) {
	// The node and chunk bounds are under test, not the time bound
	// (extract.TestExtractionTimeout): under -race on a busy machine these
	// pages can take longer than the default 10 s to extract.
	ts := newTestServer(t, &server.Options{ExtractTimeout: 5 * time.Minute})
	for _, tc := range []struct {
		name string
		page map[string]any
		code string
	}{
		{"markdown", map[string]any{"url": "https://bomb.example/md", "format": "markdown", "text": strings.Repeat("# t\n", (1<<20)/4)}, server.CodeTooManyChunks},
		{"html", map[string]any{"url": "https://bomb.example/html", "html": strings.Repeat("<h1>t</h1>", (1<<20)/10)}, server.CodeTooManyChunks},
		{"html, many nodes", map[string]any{"url": "https://bomb.example/nodes", "html": strings.Repeat("<h1>t</h1>", (2<<20)/10)}, server.CodeTooComplex},
		{"amplifying html", map[string]any{"url": "https://bomb.example/biu", "html": strings.Repeat("<p><b><i><u>x", (2<<20)/14)}, server.CodeTooComplex},
	} {
		var r response
		grew := heapGrowth(func() { r = ts.req("POST", "/v1/pages", tc.page) })
		if r.status != http.StatusUnprocessableEntity || r.errCode() != tc.code {
			t.Fatalf("%s: %d %s", tc.name, r.status, r.body)
		}
		if grew > 192<<20 {
			t.Errorf("%s: the heap grew by %d MB", tc.name, grew>>20)
		}
		t.Logf("%s: %s; heap +%d MB", tc.name, r.body, grew>>20)
	}
	var st server.StatsJSON
	ts.must(http.StatusOK, "GET", "/v1/stats", nil).json(t, &st)
	if st.Store.ChunkCount != 0 || st.Store.Queue.Enqueued != 0 {
		t.Fatalf("the store changed: %+v", st.Store)
	}
	// A page under the limits still goes through.
	j := ts.indexPage(map[string]any{"url": "https://ok.example/", "format": "markdown", "text": strings.Repeat("# Herons\n\nThey wade.\n\n", 50)})
	if j.State != "done" || j.Chunks != 50 {
		t.Fatalf("ordinary page: %+v", j)
	}
}

// gateEmbedder holds back texts containing "slow" until the gate opens.
type gateEmbedder struct {
	embed.Embedder
	gate chan struct{}
}

func (g *gateEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	for _, t := range texts {
		if strings.Contains(t, "slow") {
			<-g.gate
		}
	}
	return g.Embedder.Embed(ctx, texts)
}

// TestDeadLettersOverHTTP: a page the worker gives up on (here: the
// namespace's chunk quota filled up while it waited) is listed by GET
// /v1/jobs?state=dead, can be retried once there is room, and dropped.
func TestDeadLettersOverHTTP(t *testing.T) {
	var gate *gateEmbedder
	ts := newTestServer(t, &server.Options{Open: func(ctx context.Context, dir string) (*rag.Engine, error) {
		gate = &gateEmbedder{Embedder: embed.Default(), gate: make(chan struct{})}
		return rag.Open(ctx, dir, &rag.Options{Embedder: gate, QuotaChunks: 3, Logger: quietLogger()})
	}})
	page := func(u, word string) map[string]any {
		return map[string]any{"url": u, "format": "markdown", "text": "# A\n\nherons " + word + "\n\n# B\n\nstorks\n"}
	}
	// a is held in the embedder while b is checked (the store is empty
	// then) and queued; once a is in, b no longer fits.
	var a, b, c rag.PageAccepted
	ts.must(http.StatusAccepted, "POST", "/v1/pages", page("https://q.example/a", "slow")).json(t, &a)
	ts.must(http.StatusAccepted, "POST", "/v1/pages", page("https://q.example/b", "")).json(t, &b)
	ts.must(http.StatusAccepted, "POST", "/v1/pages", page("https://q.example/c", "")).json(t, &c)
	close(gate.gate)
	ja, jb, jc := ts.waitJob(a.JobID), ts.waitJob(b.JobID), ts.waitJob(c.JobID)
	if ja.State != "done" || jb.State != "dead" || jb.Attempts != 1 || !strings.Contains(jb.Error, "quota") || jc.State != "dead" {
		t.Fatalf("jobs: %+v %+v %+v", ja, jb, jc)
	}
	// Now the quota is full: a new page is refused at once.
	if r := ts.req("POST", "/v1/pages", page("https://q.example/x", "")); r.status != http.StatusInsufficientStorage || r.errCode() != server.CodeQuotaExceeded {
		t.Fatalf("past the quota: %d %s", r.status, r.body)
	}
	var jobs rag.JobsJSON
	ts.must(http.StatusOK, "GET", "/v1/jobs?state=dead", nil).json(t, &jobs)
	if len(jobs.Jobs) != 2 || jobs.Jobs[0].ID != c.JobID || jobs.Jobs[1].ID != b.JobID || jobs.Queue.Dead != 2 {
		t.Fatalf("dead letters: %+v", jobs)
	}
	ts.must(http.StatusOK, "GET", "/v1/jobs", nil).json(t, &jobs)
	if len(jobs.Jobs) != 3 {
		t.Fatalf("all jobs: %+v", jobs)
	}
	if r := ts.req("GET", "/v1/jobs?state=zombie", nil); r.status != http.StatusBadRequest {
		t.Fatalf("unknown state: %d", r.status)
	}
	if r := ts.req("POST", "/v1/jobs/"+a.JobID+"/retry", nil); r.status != http.StatusNotFound {
		t.Fatalf("retrying a done job: %d %s", r.status, r.body)
	}
	// Make room, retry: indexed.
	ts.must(http.StatusOK, "DELETE", "/v1/pages?url=https://q.example/a", nil)
	ts.must(http.StatusAccepted, "POST", "/v1/jobs/"+b.JobID+"/retry", nil)
	if j := ts.waitJob(b.JobID); j.State != "done" || j.Chunks != 2 {
		t.Fatalf("retried job: %+v", j)
	}
	// Drop a dead letter: it is gone, and so is its job.
	ts.must(http.StatusNotFound, "DELETE", "/v1/jobs/"+b.JobID, nil) // done, not dead
	ts.must(http.StatusOK, "DELETE", "/v1/jobs/"+c.JobID, nil)
	ts.must(http.StatusNotFound, "DELETE", "/v1/jobs/"+c.JobID, nil)
	ts.must(http.StatusNotFound, "GET", "/v1/jobs/"+c.JobID, nil)
	ts.must(http.StatusOK, "GET", "/v1/jobs?state=dead", nil).json(t, &jobs)
	if len(jobs.Jobs) != 0 {
		t.Fatalf("dead letters after the drop: %+v", jobs.Jobs)
	}
}
