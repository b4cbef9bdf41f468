package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/index/local"
	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
)

// faultyBackend fails writes with err while it is set.
type faultyBackend struct {
	driver.Backend
	err atomic.Pointer[error]
}

func (f *faultyBackend) Apply(ctx context.Context, b *driver.Batch) error {
	if e := f.err.Load(); e != nil {
		return *e
	}
	return f.Backend.Apply(ctx, b)
}

// TestErrorsNameNoPath: a locked namespace is 503, a full disk 507, any
// other failure 500 with the request id; no answer carries a path of the
// server or a Go error's text, which go to the log instead.
func TestErrorsNameNoPath(t *testing.T) {
	var logs bytes.Buffer
	var fb *faultyBackend
	var dataDir string
	ts := newTestServer(t, &server.Options{
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Open: func(ctx context.Context, dir string) (*rag.Engine, error) {
			if dataDir == "" {
				dataDir = dir
			}
			be, err := local.Open(ctx, dir, nil)
			if err != nil {
				return nil, err
			}
			fb = &faultyBackend{Backend: be}
			return rag.Open(ctx, dir, &rag.Options{Backend: fb, QueueDir: dir, Logger: quietLogger()})
		},
	})
	clean := func(what string, r response) {
		t.Helper()
		if strings.Contains(string(r.body), ts.dir) || strings.Contains(string(r.body), "/tmp/") || strings.Contains(string(r.body), ".rgj") {
			t.Errorf("%s: the answer names a server path: %s", what, r.body)
		}
		var e server.ErrorBody
		r.json(t, &e)
		if e.Error.RequestID == "" || e.Error.RequestID != r.header.Get("X-Request-Id") {
			t.Errorf("%s: no request id: %s", what, r.body)
		}
	}
	pref := map[string]any{"type": "style", "content": "Short answers"}

	full := error(&os.PathError{Op: "write", Path: ts.dir + "/journal-0000000000000001.rgj", Err: syscall.ENOSPC})
	fb.err.Store(&full)
	r := ts.req("POST", "/v1/preferences", pref)
	if r.status != http.StatusInsufficientStorage || r.errCode() != server.CodeDiskFull {
		t.Fatalf("disk full: %d %s", r.status, r.body)
	}
	clean("disk full", r)

	broken := error(&os.PathError{Op: "fsync", Path: ts.dir + "/journal-0000000000000001.rgj", Err: syscall.EIO})
	fb.err.Store(&broken)
	r = ts.req("POST", "/v1/preferences", pref)
	if r.status != http.StatusInternalServerError || r.errCode() != server.CodeInternal || strings.Contains(string(r.body), "input/output") {
		t.Fatalf("I/O error: %d %s", r.status, r.body)
	}
	clean("I/O error", r)
	if !strings.Contains(logs.String(), "input/output error") || !strings.Contains(logs.String(), r.header.Get("X-Request-Id")) {
		t.Errorf("the log lacks the error or the request id:\n%s", logs.String())
	}
	fb.err.Store(nil)
	ts.must(http.StatusCreated, "POST", "/v1/preferences", pref)

	// A namespace whose store another process holds.
	other, err := local.Open(context.Background(), server.NamespaceDir(ts.dir, "bob"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	r = ts.req("GET", "/v1/stats", nil, server.NamespaceHeader, "bob")
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Fatalf("locked namespace: %d %s", r.status, r.body)
	}
	clean("locked namespace", r)
}

// TestMemoryURLsNameNoPath: memories are sources of the server's own files;
// search results and source listings name them "memory:<file>", without
// the server's path or directory attribute.
func TestMemoryURLsNameNoPath(t *testing.T) {
	ts := newTestServer(t, nil)
	var eng *rag.Engine
	ts.srv.Handle("GET /v1/test-engine", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		eng, _ = ts.srv.Engine(r)
	}))
	ts.must(http.StatusOK, "GET", "/v1/test-engine", nil)
	const dir = "/srv/secret-data/namespaces/alice/memories"
	if _, err := eng.Store().Add(context.Background(), index.Document{SourceURL: "file://" + dir + "/flaky-tests.md", Title: "Flaky tests",
		Content: "Retry the network step of flaky tests.", DocType: index.DocMemory, Attrs: map[string]string{"memoryDir": dir, "memorySlug": "flaky-tests"}}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []response{
		ts.must(http.StatusOK, "POST", "/v1/search", map[string]any{"query": "flaky network", "filters": map[string]any{"docTypes": []string{"memory"}}}),
		ts.must(http.StatusOK, "GET", "/v1/sources?type=memory", nil),
	} {
		if strings.Contains(string(r.body), "/srv/secret-data") || !strings.Contains(string(r.body), `"memory:flaky-tests.md"`) {
			t.Fatalf("answer: %s", r.body)
		}
	}
}
