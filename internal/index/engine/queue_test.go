package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ragmem/ragmem/index"

	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/wal"
)

const queueChildEnv = "RAGMEM_QUEUE_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(queueChildEnv); dir != "" {
		os.Exit(queueChild(dir))
	}
	if dir := os.Getenv(poisonChildEnv); dir != "" {
		os.Exit(poisonChild(dir))
	}
	os.Exit(m.Run())
}

// stuckEmbedder never returns for texts containing "stuck".
type stuckEmbedder struct{ embed.Embedder }

func (s stuckEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	for _, t := range texts {
		if strings.Contains(t, "stuck") {
			select {}
		}
	}
	return s.Embedder.Embed(ctx, texts)
}

// queueChild indexes one page in the background to completion, then queues
// pages the worker cannot finish, prints every job id, and waits to be killed.
func queueChild(dir string) int {
	ix, err := Open(context.Background(), dir, &Options{Embedder: stuckEmbedder{embed.Default()}})
	if err != nil {
		fmt.Println("error", err)
		return 3
	}
	first := ix.IndexPageAsync(index.Document{SourceURL: "https://q.example/done", Title: "Done", Content: "a page about herons, indexed before the crash"})
	if err := ix.Flush(context.Background()); err != nil {
		return 4
	}
	fmt.Println("done", first)
	fmt.Println("queued", ix.IndexPageAsync(index.Document{SourceURL: "https://q.example/stuck", Content: "this page gets stuck in the embedder: storks"}))
	for i := 0; i < 5; i++ {
		fmt.Println("queued", ix.IndexPageAsync(index.Document{SourceURL: fmt.Sprintf("https://q.example/%d", i), Content: fmt.Sprintf("queued page %d about cranes", i)}))
	}
	fmt.Println("ready")
	select {}
}

// runQueueChild runs queueChild in a child process, kills it once its pages
// are queued, and returns the ids it printed.
func runQueueChild(t *testing.T, dir string) (done string, queued []string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), queueChildEnv+"="+dir)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if f[0] == "ready" {
			break
		}
		switch f[0] {
		case "done":
			done = f[1]
		case "queued":
			queued = append(queued, f[1])
		default:
			t.Fatalf("child: %s", sc.Text())
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if done == "" || len(queued) != 6 {
		t.Fatalf("child printed done %q, queued %v", done, queued)
	}
	return done, queued
}

// TestQueuedPagesSurviveACrash kills a process with pages queued (one of
// them stuck in its embedder): the next Open indexes them, and every job id,
// including that of a page finished before the crash, reports its outcome.
func TestQueuedPagesSurviveACrash(t *testing.T) {
	dir := t.TempDir()
	done, queued := runQueueChild(t, dir)
	ix := open(t, dir, nil)
	defer ix.Close()
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if j, ok := ix.Job(done); !ok || j.State != index.JobDone || j.Replayed {
		t.Fatalf("job finished before the crash: %+v %v", j, ok)
	}
	for _, id := range queued {
		j, ok := ix.Job(id)
		if !ok || j.State != index.JobDone || !j.Replayed || j.Chunks == 0 {
			t.Fatalf("queued job %s after the restart: %+v %v", id, j, ok)
		}
	}
	if q := ix.QueueStats(); q.Replayed != 6 || !q.Durable {
		t.Fatalf("queue stats %+v", q)
	}
	hits, err := ix.FullText(ctx, "storks cranes herons", 20, index.Filter{})
	if err != nil || len(hits) != 7 {
		t.Fatalf("after replay the store finds %d of 7 pages (%v)", len(hits), err)
	}
	// Job ids stay valid across a clean restart too.
	ix.Close()
	ix = open(t, dir, nil)
	if j, ok := ix.Job(queued[0]); !ok || j.State != index.JobDone {
		t.Fatalf("job after a clean restart: %+v %v", j, ok)
	}
	if ix.QueueStats().Replayed != 0 {
		t.Fatal("a clean restart replayed pages")
	}
}

// TestReplayNeverOverwritesNewer: a page queued before a crash is skipped on
// replay when its source was indexed again after the page was queued.
func TestReplayNeverOverwritesNewer(t *testing.T) {
	dir := t.TempDir()
	_, queued := runQueueChild(t, dir)
	// Index a newer version of the stuck page's source while the queue is
	// set aside, then put the queue back.
	qpath := filepath.Join(dir, queueFile)
	aside := filepath.Join(t.TempDir(), queueFile)
	if err := os.Rename(qpath, aside); err != nil {
		t.Fatal(err)
	}
	ix := open(t, dir, nil)
	time.Sleep(2 * time.Millisecond)
	if _, err := ix.Add(ctx, index.Document{SourceURL: "https://q.example/stuck", Content: "the newer version: ibises"}); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	if err := os.Rename(aside, qpath); err != nil {
		t.Fatal(err)
	}
	ix = open(t, dir, nil)
	defer ix.Close()
	ix.Flush(ctx)
	recs, _ := ix.Source(ctx, "https://q.example/stuck")
	if len(recs) != 1 || !strings.Contains(recs[0].Content, "ibises") {
		t.Fatalf("replay overwrote the newer version: %+v", recs)
	}
	if j, _ := ix.Job(queued[0]); j.State != index.JobDone || !j.Unchanged {
		t.Fatalf("skipped job: %+v", j)
	}
}

// TestQueueLogRecovers: a torn tail is cut, damage is quarantined, and the
// pages before it are still indexed.
func TestQueueLogRecovers(t *testing.T) {
	for _, tc := range []struct {
		name string
		tail []byte
	}{
		{"torn", []byte{200, 0, 0, 0, 1, 2}},
		{"damaged", wal.AppendFrame(nil, []byte(`{"k":"page"}`))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			data := []byte(queueMagic)
			for i := 0; i < 3; i++ {
				p, _ := json.Marshal(queueRecord{Kind: "page", Job: index.Job{ID: fmt.Sprintf("job_%d", i), State: index.JobQueued, Queued: time.Now().UTC()},
					Doc: &index.Document{SourceURL: fmt.Sprintf("https://l.example/%d", i), Content: "logged page about puffins"}})
				data = wal.AppendFrame(data, p)
			}
			data = append(data, tc.tail...)
			os.WriteFile(filepath.Join(dir, queueFile), data, 0o600)
			var logs bytes.Buffer
			ix := open(t, dir, &Options{Logger: slogTo(&logs)})
			defer ix.Close()
			ix.Flush(ctx)
			for i := 0; i < 3; i++ {
				if j, _ := ix.Job(fmt.Sprintf("job_%d", i)); j.State != index.JobDone {
					t.Fatalf("job_%d: %+v", i, j)
				}
			}
			if !strings.Contains(logs.String(), "indexing queue") {
				t.Fatalf("recovery not logged: %s", logs.String())
			}
			if tc.name == "damaged" {
				if m, _ := filepath.Glob(filepath.Join(dir, "quarantine", queueFile+".*")); len(m) != 1 {
					t.Fatalf("damaged queue not quarantined: %v", m)
				}
			}
		})
	}
}

// TestQueueCompaction: compaction keeps pending pages and finished jobs.
func TestQueueCompaction(t *testing.T) {
	dir := t.TempDir()
	q, _, err := openQueue(wal.OS{}, dir, slogTo(&bytes.Buffer{}), 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		if err := q.enqueue(index.Job{ID: fmt.Sprint("j", i), State: index.JobQueued}, &index.Document{SourceURL: fmt.Sprint("u", i), Content: strings.Repeat("x", 1000)}); err != nil {
			t.Fatal(err)
		}
	}
	q.finish(index.Job{ID: "j1", State: index.JobDone})
	q.finish(index.Job{ID: "j2", State: index.JobFailed, Error: "boom"})
	before := q.log.Size()
	q.mu.Lock()
	err = q.compactLocked()
	q.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if q.log.Size() >= before {
		t.Fatalf("compaction grew the log: %d -> %d", before, q.log.Size())
	}
	q.close()
	q, st, err := openQueue(wal.OS{}, dir, slogTo(&bytes.Buffer{}), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer q.close()
	var pending, finished []string
	for _, r := range st.pending {
		pending = append(pending, r.Job.ID)
	}
	for _, j := range st.finished {
		finished = append(finished, j.ID+"="+string(j.State))
	}
	if strings.Join(pending, ",") != "j0,j3" || strings.Join(finished, ",") != "j1=done,j2=failed" {
		t.Fatalf("after compaction: pending %v, finished %v", pending, finished)
	}
}

// A second process gets a clear error for a queue directory in use.
func TestQueueDirIsLocked(t *testing.T) {
	dir := t.TempDir()
	q, _, err := openQueue(wal.OS{}, dir, slogTo(&bytes.Buffer{}), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer q.close()
	_, _, err = openQueue(wal.OS{}, dir, slogTo(&bytes.Buffer{}), 3)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("indexing queue is locked by pid %d", os.Getpid())) {
		t.Fatalf("second open: %v", err)
	}
}

// FuzzReadQueue feeds arbitrary bytes to the queue log reader: it must never
// panic, and every record it accepts is well-formed.
func FuzzReadQueue(f *testing.F) {
	p, _ := json.Marshal(queueRecord{Kind: "page", Job: index.Job{ID: "job_1"}, Doc: &index.Document{SourceURL: "u", Content: "c"}})
	d, _ := json.Marshal(queueRecord{Kind: "done", Job: index.Job{ID: "job_1", State: index.JobDone}})
	good := wal.AppendFrame(wal.AppendFrame([]byte(queueMagic), p), d)
	f.Add(good)
	f.Add(good[:len(good)-2])
	f.Add(p)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, in := range [][]byte{data, wal.AppendFrame([]byte(queueMagic), data)} {
			res, err := readQueue(bufio.NewReader(bytes.NewReader(in)), func(r *queueRecord) {
				if r.Job.ID == "" || (r.Kind == "page") != (r.Doc != nil) {
					t.Fatalf("malformed record accepted: %+v", r)
				}
			})
			if err == nil && res.ValidEnd > int64(len(in)) {
				t.Fatalf("valid end %d beyond %d bytes", res.ValidEnd, len(in))
			}
		}
	})
}

func slogTo(w *bytes.Buffer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
