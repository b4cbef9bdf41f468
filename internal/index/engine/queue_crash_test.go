package engine

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ragmem/ragmem/index"

	"github.com/ragmem/ragmem/internal/embed"
)

// The queue's crash suite: a child process (this test binary, re-executed)
// queues pages and indexes them in the background, and dies, either because
// a page kills it (the way a page that exhausts memory gets a process
// killed) or at a random moment (SIGKILL from the parent). Every start of
// the store must open, every page the child saw acknowledged must end up
// indexed or in the dead letters, and a page that kills the process must be
// given up on after MaxAttempts starts.
//
//	go test -run QueueCrash ./index                                 # CI
//	RAGMEM_QUEUE_CRASH_POINTS=200 go test -run QueueCrash -v ./index  # longer
//	RAGMEM_QUEUE_CRASH_SEED=42 ...                                  # replay a run

const (
	poisonChildEnv     = "RAGMEM_POISON_CHILD"
	poisonChildModeEnv = "RAGMEM_POISON_CHILD_MODE"
	poisonChildSeedEnv = "RAGMEM_POISON_CHILD_SEED"
)

// killerEmbedder kills its own process when asked to embed a poison text.
type killerEmbedder struct{ embed.Embedder }

func (k killerEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	for _, t := range texts {
		if strings.Contains(t, "poison") {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	return k.Embedder.Embed(ctx, texts)
}

// poisonChild opens the store in dir and, by mode, queues pages ("fill":
// good pages around a poison one; "stream": good pages until killed) or
// only lets the worker replay what is queued ("replay"), then exits once the
// worker is idle.
func poisonChild(dir string) int {
	say := func(format string, args ...any) { os.Stdout.WriteString(fmt.Sprintf(format, args...) + "\n") }
	ix, err := Open(context.Background(), dir, &Options{
		Embedder: killerEmbedder{embed.Default()},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		say("openfail %v", err)
		return 3
	}
	say("open")
	switch os.Getenv(poisonChildModeEnv) {
	case "fill":
		for i := 0; i < 10; i++ {
			content := fmt.Sprintf("good page %d about herons", i)
			if i == 4 {
				content = "this page is poison for the embedder"
			}
			id := ix.IndexPageAsync(index.Document{SourceURL: fmt.Sprintf("https://c.example/%d", i), Content: content})
			say("acked %d %s", i, id)
		}
	case "stream":
		seed, _ := strconv.ParseUint(os.Getenv(poisonChildSeedEnv), 10, 64)
		rng := rand.New(rand.NewPCG(seed, 1))
		for i := 0; ; i++ {
			n := rng.IntN(1000)
			id := ix.IndexPageAsync(index.Document{SourceURL: fmt.Sprintf("https://s.example/%d", n), Content: fmt.Sprintf("version %d of page %d about egrets", i, n)})
			say("acked %d %s", n, id)
			if rng.IntN(4) == 0 {
				time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond)
			}
		}
	}
	if err := ix.Flush(context.Background()); err != nil {
		return 4
	}
	if err := ix.Close(); err != nil {
		say("closefail %v", err)
		return 5
	}
	say("clean")
	return 0
}

// runPoisonChild runs poisonChild and returns its output lines and whether
// it was killed. With killAfter > 0 the parent kills it that long after it
// opened.
func runPoisonChild(t *testing.T, dir, mode string, seed uint64, killAfter time.Duration) ([]string, bool) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), poisonChildEnv+"="+dir, poisonChildModeEnv+"="+mode, fmt.Sprintf("%s=%d", poisonChildSeedEnv, seed))
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(out)
	var timer *time.Timer
	for sc.Scan() {
		l := sc.Text()
		lines = append(lines, l)
		if l == "open" && killAfter > 0 {
			timer = time.AfterFunc(killAfter, func() { cmd.Process.Signal(syscall.SIGKILL) })
		}
	}
	if timer != nil {
		timer.Stop()
	}
	err = cmd.Wait()
	killed := false
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			killed = true
		} else {
			t.Fatalf("child failed: %v; output %q", err, lines)
		}
	}
	if len(lines) == 0 || lines[0] != "open" {
		t.Fatalf("the store did not open: %q", lines)
	}
	return lines, killed
}

// TestQueueCrashPoisonPage: a page that kills the process every time it is
// indexed is tried at most MaxAttempts times, then kept in the dead letters;
// every other page is indexed, and every start opens.
func TestQueueCrashPoisonPage(t *testing.T) {
	dir := t.TempDir()
	lines, killed := runPoisonChild(t, dir, "fill", 0, 0)
	ids := map[int]string{}
	for _, l := range lines {
		var i int
		var id string
		if n, _ := fmt.Sscanf(l, "acked %d %s", &i, &id); n == 2 {
			ids[i] = id
		}
	}
	if len(ids) != 10 || !killed {
		t.Fatalf("first run: killed %v, acked %d: %q", killed, len(ids), lines)
	}
	kills := 1
	for run := 0; ; run++ {
		if run > 10 {
			t.Fatal("the poison page is replayed forever")
		}
		if _, killed := runPoisonChild(t, dir, "replay", 0, 0); !killed {
			break
		}
		kills++
	}
	if kills != DefaultMaxAttempts {
		t.Fatalf("the poison page killed %d starts; want %d (MaxAttempts)", kills, DefaultMaxAttempts)
	}
	qc, err := CheckQueue(ctx, dir, false)
	if err != nil || qc.Pending != 0 || len(qc.Dead) != 1 || qc.Dead[0].ID != ids[4] {
		t.Fatalf("CheckQueue: %+v, %v", qc, err)
	}
	if d := qc.Dead[0]; d.Attempts != DefaultMaxAttempts || !strings.Contains(d.Error, "process stopped") {
		t.Fatalf("dead letter: %+v", d)
	}
	ix := open(t, dir, nil)
	defer ix.Close()
	for i, id := range ids {
		j, ok := ix.Job(id)
		want := index.JobDone
		if i == 4 {
			want = index.JobDead
		}
		if !ok || j.State != want {
			t.Fatalf("page %d: %+v", i, j)
		}
		// Pages after the poison one went through at most one
		// interrupted batch, then alone.
		if i != 4 && j.Attempts > 1 {
			t.Fatalf("good page %d used %d attempts", i, j.Attempts)
		}
	}
	if st, _ := ix.Stats(ctx); st.DocumentCount != 9 {
		t.Fatalf("%d pages indexed; want 9", st.DocumentCount)
	}
}

// TestQueueCrashRandomKills kills a process that queues and indexes pages at
// random moments: each start opens, and in the end every acknowledged page
// is indexed or, when kills interrupted it MaxAttempts times, in the dead
// letters, from which it is indexed on request: none is lost.
func TestQueueCrashRandomKills(t *testing.T) {
	points := 12
	if v := os.Getenv("RAGMEM_QUEUE_CRASH_POINTS"); v != "" {
		points, _ = strconv.Atoi(v)
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("RAGMEM_QUEUE_CRASH_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("queue crash suite: %d kill points, seed %d (RAGMEM_QUEUE_CRASH_SEED=%d replays it)", points, seed, seed)
	rng := rand.New(rand.NewPCG(seed, 9))
	dir := t.TempDir()
	acked := map[string]string{} // job id -> source
	latest := map[string]string{}
	for i := 0; i < points; i++ {
		lines, _ := runPoisonChild(t, dir, "stream", rng.Uint64(), time.Duration(5+rng.IntN(60))*time.Millisecond)
		for _, l := range lines {
			var n int
			var id string
			if k, _ := fmt.Sscanf(l, "acked %d %s", &n, &id); k == 2 {
				acked[id] = fmt.Sprintf("https://s.example/%d", n)
				latest[acked[id]] = id
			}
		}
	}
	if _, killed := runPoisonChild(t, dir, "replay", 0, 0); killed {
		t.Fatal("the final replay was killed")
	}
	ix := open(t, dir, nil)
	defer ix.Close()
	dead := ix.ListJobs(index.JobDead)
	for _, j := range dead {
		if j.Attempts != DefaultMaxAttempts || !strings.Contains(j.Error, "process stopped") {
			t.Fatalf("dead letter: %+v", j)
		}
		if _, err := ix.RetryJob(ctx, j.ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for id, src := range acked {
		j, ok := ix.Job(id)
		if !ok || j.State != index.JobDone {
			t.Fatalf("acknowledged job %s (%s): %+v %v", id, src, j, ok)
		}
	}
	for src := range latest {
		if recs, _ := ix.Source(ctx, src); len(recs) == 0 {
			t.Fatalf("acknowledged page %s is not in the store", src)
		}
	}
	t.Logf("%d pages acknowledged over %d kills, all indexed (%d after a retry from the dead letters)", len(acked), points, len(dead))
}
