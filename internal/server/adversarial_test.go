package server_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
)

// TestBinaryTextIsRefused: text that is binary data (a NUL, control bytes)
// is a page with no text to index, 422, never a 500.
func TestBinaryTextIsRefused(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, body := range []string{
		`{"url":"https://a.example/nul","text":"nul \u0000 inside"}`,
		`{"url":"https://a.example/ctl","text":"` + strings.Repeat(`\u0001\u0002 `, 100) + `","format":"markdown"}`,
	} {
		r := ts.req("POST", "/v1/pages", body)
		if r.status != 422 || r.errCode() != server.CodeNoContent || !strings.Contains(string(r.body), "binary") {
			t.Errorf("%.60s: %d %s", body, r.status, r.body)
		}
	}
}

// TestPageURLCredentialsAreNeverStored: user info in a page's URL
// ("user:password@") is dropped before anything is stored: the job, the
// sources, the page's title (which defaults to the URL) and the
// <knowledge_context> never carry the password, and the page is the same
// page as the URL without it.
func TestPageURLCredentialsAreNeverStored(t *testing.T) {
	ts := newTestServer(t, nil)
	const secret = "s3cretPassw0rd"
	j := ts.indexPage(map[string]any{"url": "https://alice:" + secret + "@creds.example/doc", "html": "<html><body><article><p>Quokkas smile at photographers on Rottnest island. <a href='/more'>more</a></p></article></body></html>"})
	if j.State != "done" {
		t.Fatalf("job %+v", j)
	}
	j2 := ts.indexPage(map[string]any{"url": "https://bob@creds.example/text", "text": "Wombats dig burrows with their strong claws."})
	if j2.State != "done" || j2.URL != "https://creds.example/text" {
		t.Fatalf("job %+v", j2)
	}
	for _, r := range []response{
		ts.must(http.StatusOK, "GET", "/v1/jobs/"+j.ID, nil),
		ts.must(http.StatusOK, "GET", "/v1/sources", nil),
		ts.must(http.StatusOK, "GET", "/v1/pages?url="+url.QueryEscape("https://creds.example/doc"), nil),
		ts.must(http.StatusOK, "POST", "/v1/search", map[string]any{"query": "quokkas smile wombats burrows"}),
		ts.must(http.StatusOK, "POST", "/v1/context", map[string]any{"query": "quokkas smile wombats burrows"}),
	} {
		if strings.Contains(string(r.body), secret) || strings.Contains(string(r.body), "alice") || strings.Contains(string(r.body), "bob@") {
			t.Errorf("an answer carries the credentials: %s", r.body)
		}
	}
	var c rag.ContextJSON
	ts.must(http.StatusOK, "POST", "/v1/context", map[string]any{"query": "quokkas smile"}).json(t, &c)
	if !strings.Contains(c.Text, `url="https://creds.example/doc"`) {
		t.Errorf("the context does not cite the page: %s", c.Text)
	}
	// The URL with other credentials is the same page: it is deleted.
	ts.must(http.StatusOK, "DELETE", "/v1/pages?url="+url.QueryEscape("https://mallory:x@creds.example/doc"), nil)
	ts.must(http.StatusNotFound, "GET", "/v1/pages?url="+url.QueryEscape("https://creds.example/doc"), nil)
}

// TestPageURLNeedsHostAndPort: a page URL with no host or a port past
// 65535 is refused with 400, saying what is wrong.
func TestPageURLNeedsHostAndPort(t *testing.T) {
	ts := newTestServer(t, nil)
	for u, want := range map[string]string{
		"https:///x":                 "names no host",
		"https://:443/x":             "names no host",
		"https://a.example:65536/x":  "is not a port number",
		"http://a.example:99999999/": "is not a port number",
	} {
		r := ts.req("POST", "/v1/pages", map[string]any{"url": u, "text": "some text"})
		if r.status != http.StatusBadRequest || r.errCode() != server.CodeBadRequest || !strings.Contains(string(r.body), want) {
			t.Errorf("%s: %d %s", u, r.status, r.body)
		}
	}
	if r := ts.must(http.StatusOK, "GET", "/v1/jobs", nil); strings.Contains(string(r.body), "a.example") {
		t.Errorf("a refused page was queued: %s", r.body)
	}
}

// TestDeleteCancelsQueuedPage: DELETE /v1/pages of a page whose indexing
// is queued (or under way) cancels it: the answer names the cancelled jobs,
// the jobs end cancelled, and the page does not come back.
func TestDeleteCancelsQueuedPage(t *testing.T) {
	gate := &gateEmbedder{Embedder: embed.Default(), gate: make(chan struct{})}
	var once sync.Once
	open := func() { once.Do(func() { close(gate.gate) }) }
	ts := newTestServer(t, &server.Options{Open: func(ctx context.Context, dir string) (*rag.Engine, error) {
		return rag.Open(ctx, dir, &rag.Options{Embedder: gate, Logger: quietLogger()})
	}})
	t.Cleanup(open) // runs before the server's cleanup, which waits for the queue
	var a, b rag.PageAccepted
	ts.must(http.StatusAccepted, "POST", "/v1/pages", map[string]any{"url": "https://d.example/first", "text": "slow page about kestrels"}).json(t, &a)
	ts.must(http.StatusAccepted, "POST", "/v1/pages", map[string]any{"url": "https://d.example/second", "text": "a page about herons"}).json(t, &b)
	for _, c := range []struct {
		url string
		job string
	}{{"https://d.example/second#x", b.JobID}, {"https://d.example/first", a.JobID}} {
		var del struct {
			URL           string   `json:"url"`
			Removed       int      `json:"removed"`
			CancelledJobs []string `json:"cancelledJobs"`
		}
		ts.must(http.StatusOK, "DELETE", "/v1/pages?url="+url.QueryEscape(c.url), nil).json(t, &del)
		if del.Removed != 0 || len(del.CancelledJobs) != 1 || del.CancelledJobs[0] != c.job {
			t.Fatalf("DELETE %s: %+v, want job %s cancelled", c.url, del, c.job)
		}
	}
	open()
	for _, id := range []string{a.JobID, b.JobID} {
		if j := ts.waitJob(id); j.State != "cancelled" || !strings.Contains(j.Error, "deleted") {
			t.Fatalf("job %s: %+v", id, j)
		}
	}
	// A later page is indexed: the worker went on, and nothing brought
	// the deleted pages back before it.
	if j := ts.indexPage(map[string]any{"url": "https://d.example/third", "text": "a page about owls"}); j.State != "done" {
		t.Fatalf("third: %+v", j)
	}
	for _, u := range []string{"https://d.example/first", "https://d.example/second"} {
		ts.must(http.StatusNotFound, "GET", "/v1/pages?url="+url.QueryEscape(u), nil)
		ts.must(http.StatusNotFound, "DELETE", "/v1/pages?url="+url.QueryEscape(u), nil)
	}
	var jobs rag.JobsJSON
	ts.must(http.StatusOK, "GET", "/v1/jobs?state=cancelled", nil).json(t, &jobs)
	if len(jobs.Jobs) != 2 || jobs.Queue.Cancelled != 2 {
		t.Fatalf("cancelled jobs: %+v", jobs)
	}
}
