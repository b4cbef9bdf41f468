package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
)

// TestFullDiskNamesNoPath is item 7 of issue 25: the indexing queue on a
// real, full file system (a 1 MiB tmpfs, which needs root; skipped
// otherwise). POST /v1/pages answers 503 saying the disk is full, and
// neither that answer nor the job's record names the queue file or its
// directory; the server's log has both, with the request id.
func TestFullDiskNamesNoPath(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
	queue := filepath.Join(mnt, "queue-of-the-server")
	var logs bytes.Buffer
	ts := newTestServer(t, &server.Options{
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Open: func(ctx context.Context, dir string) (*rag.Engine, error) {
			return rag.Open(ctx, dir, &rag.Options{QueueDir: queue, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		},
	})
	ts.indexPage(map[string]any{"url": "https://before.example/", "text": "Herons wade in shallow water."})
	// Fill the file system up to the last few KiB.
	filler, err := os.Create(filepath.Join(mnt, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for {
		if _, err := filler.Write(buf); err != nil {
			break
		}
	}
	filler.Close()
	r := ts.req("POST", "/v1/pages", map[string]any{"url": "https://after.example/", "text": strings.Repeat("Egrets fish at dawn. ", 2000)})
	if r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), "the disk is full") {
		t.Fatalf("POST /v1/pages on a full disk: %d %s", r.status, r.body)
	}
	for _, leak := range []string{mnt, "queue-of-the-server", "/tmp/", ".log"} {
		if strings.Contains(string(r.body), leak) {
			t.Errorf("the answer names %q: %s", leak, r.body)
		}
	}
	var jobs struct{ Jobs []rag.JobJSON }
	ts.must(http.StatusOK, "GET", "/v1/jobs", nil).json(t, &jobs)
	failed := 0
	for _, j := range jobs.Jobs {
		if j.State == "failed" {
			failed++
			if strings.Contains(j.Error, mnt) || !strings.Contains(j.Error, "the disk is full") {
				t.Errorf("job error: %q", j.Error)
			}
		}
	}
	if failed != 1 {
		t.Errorf("%d failed jobs: %+v", failed, jobs.Jobs)
	}
	id := r.header.Get("X-Request-Id")
	if !strings.Contains(logs.String(), mnt) || !strings.Contains(logs.String(), "requestId="+id) {
		t.Errorf("the log lacks the queue's path or the request id %s:\n%s", id, logs.String())
	}
}
