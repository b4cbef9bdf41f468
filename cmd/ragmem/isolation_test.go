package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/ingest"
	"github.com/ragmem/ragmem/internal/hostile"
)

// ragmemProc is `ragmem` run as a separate process: this test binary acting
// as the ragmem binary (TestMain), so that documents are read in children
// of it exactly as the installed binary reads them.
type ragmemProc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	stdout bytes.Buffer
	stderr bytes.Buffer
	exited chan struct{}
	err    error
}

func startRagmem(t *testing.T, args ...string) *ragmemProc {
	t.Helper()
	p := &ragmemProc{cmd: exec.Command(os.Args[0], args...), exited: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "RAGMEM_TEST_AS_MAIN=1", "RAGMEM_EMBEDDER=lexical")
	p.cmd.Stdout = &lockedWriter{mu: &p.mu, w: &p.stdout}
	p.cmd.Stderr = &lockedWriter{mu: &p.mu, w: &p.stderr}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

func (p *ragmemProc) out() string { p.mu.Lock(); defer p.mu.Unlock(); return p.stdout.String() }
func (p *ragmemProc) errOut() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// wait waits for the process to exit, at most d, and returns its exit
// status (-1 when killed by a signal) and how long it took.
func (p *ragmemProc) wait(t *testing.T, d time.Duration) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	select {
	case <-p.exited:
	case <-time.After(d):
		t.Fatalf("ragmem %s did not exit within %s\nstdout:\n%s\nstderr:\n%s", strings.Join(p.cmd.Args[1:], " "), d, p.out(), p.errOut())
	}
	return p.cmd.ProcessState.ExitCode(), time.Since(start)
}

// pollUntil polls until cond holds, at most d.
func pollUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s", what, d)
		}
	}
}

// notes writes n small notes into dir.
func notes(t *testing.T, dir string, n int) {
	for i := 1; i <= n; i++ {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("note%02d.md", i)), fmt.Sprintf("# Note %d\n\nKingfishers dive for fish, note number %d.\n", i, i))
	}
}

// TestIndexSkipsHostileFiles: `ragmem index DIR` over a folder of 20 notes
// and every hostile file (PDFs whose structure loops or allocates without
// bound, decompression bombs in EPUB and DOCX, a PDF too slow to read and
// one too large to read in 64 MiB) indexes the 20 notes and skips each
// hostile file with one line, in well under a minute; the process that
// reads a document is killed at its limits, never the command.
func TestIndexSkipsHostileFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir, docs := t.TempDir(), t.TempDir()
	notes(t, docs, 20)
	hostileNames := map[string]bool{}
	for _, f := range hostile.Files() {
		if err := os.WriteFile(filepath.Join(docs, f.Name), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
		hostileNames[f.Name] = true
	}
	if err := os.WriteFile(filepath.Join(docs, "slow.pdf"), hostile.SlowPDF(300), 0o644); err != nil {
		t.Fatal(err)
	}
	hostileNames["slow.pdf"] = true

	start := time.Now()
	p := startRagmem(t, "--dir", dir, "index", "--document-timeout", "2s", "--document-memory", "64MiB", docs)
	code, _ := p.wait(t, 90*time.Second)
	took := time.Since(start)
	stderr := p.errOut()
	if code != 0 || !strings.Contains(p.out(), "indexed 20 documents") || !strings.Contains(p.out(), fmt.Sprintf("%d skipped", len(hostileNames))) {
		t.Fatalf("exit %d in %s\nstdout: %s\nstderr:\n%s", code, took, p.out(), stderr)
	}
	if took > 60*time.Second {
		t.Errorf("took %s", took)
	}
	for name := range hostileNames {
		prefix := "ragmem: " + filepath.Join(docs, name) + ": skipped: "
		if n := strings.Count(stderr, prefix); n != 1 {
			t.Errorf("%s: %d skip lines\n%s", name, n, stderr)
		}
	}
	// Each file's own reason; on a loaded machine (or under -race) a slow
	// one may meet the time limit first, and the nav bomb, read up to its
	// 16 MiB bound while the collector lags behind, the memory limit.
	for name, reason := range map[string]string{
		"self-prev.pdf":    "the document is damaged or not of its format: the cross-reference sections refer to each other in a loop (/Prev)",
		"nav-bomb.epub":    "the document exceeds a limit: OEBPS/nav.xhtml is larger than 16 MiB",
		"repeat-pages.pdf": "the PDF parser ran out of memory (limit 64 MiB)",
		"slow.pdf":         "the PDF parser exceeded 2s",
	} {
		prefix := filepath.Join(docs, name) + ": skipped: "
		if !strings.Contains(stderr, prefix+reason+"\n") && !strings.Contains(stderr, prefix+"the document exceeds a limit: not read within the time limit\n") &&
			!strings.Contains(stderr, prefix+"the "+strings.ToUpper(strings.TrimPrefix(filepath.Ext(name), "."))+" parser exceeded 2s\n") &&
			!(name == "nav-bomb.epub" && strings.Contains(stderr, prefix+"the EPUB parser ran out of memory (limit 64 MiB)\n")) {
			t.Errorf("%s: not skipped for %q:\n%s", name, reason, stderr)
		}
	}
	if n := len(sourcesOf(t, dir)); n != 20 {
		t.Errorf("%d sources, want the 20 notes", n)
	}
	t.Logf("%d notes and %d hostile files in %s:\n%s", 20, len(hostileNames), took.Round(time.Millisecond), stderr)
}

// TestWatchSurvivesAHostileFile: `ragmem index --watch` goes on syncing
// the folder after a hostile file (and one too slow to read) arrive in it,
// skipping them, and stops on SIGTERM at once.
func TestWatchSurvivesAHostileFile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir, docs := t.TempDir(), t.TempDir()
	notes(t, docs, 2)
	p := startRagmem(t, "--dir", dir, "index", "--watch", "--document-timeout", "2s", docs)
	pollUntil(t, 60*time.Second, "watching line", func() bool { return strings.Contains(p.errOut(), "watching") })

	for _, name := range []string{"self-parent.pdf", "objstm-n.pdf"} {
		for _, f := range hostile.Files() {
			if f.Name == name {
				writeFile(t, filepath.Join(docs, name), string(f.Data))
			}
		}
	}
	writeFile(t, filepath.Join(docs, "slow.pdf"), string(hostile.SlowPDF(300)))
	pollUntil(t, 60*time.Second, "skip lines", func() bool {
		e := p.errOut()
		return strings.Contains(e, "self-parent.pdf: skipped:") && strings.Contains(e, "objstm-n.pdf: skipped:") && strings.Contains(e, "slow.pdf: skipped:")
	})
	writeFile(t, filepath.Join(docs, "after.md"), "# After\n\nHerons arrived after the hostile files.\n")
	pollUntil(t, 60*time.Second, "the note written after them indexed", func() bool { return strings.Contains(p.out(), "indexed 1 documents") })
	select {
	case <-p.exited:
		t.Fatalf("watch exited: %v\n%s", p.err, p.errOut())
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, took := p.wait(t, 10*time.Second); code != 0 || took > 2*time.Second {
		t.Errorf("watch stopped with %d after %s on SIGTERM\n%s", code, took, p.errOut())
	}
	if _, ok := sourcesOf(t, dir)[ingest.FileURL(filepath.Join(docs, "after.md"))]; !ok {
		t.Errorf("after.md not indexed")
	}
}

// TestInterruptStopsIndex: SIGTERM (and Ctrl-C) stop `ragmem index` within
// 2 s while it waits on a document the child takes long to read; the child
// is killed with it, and the batches written before the signal are in the
// store when it is opened again.
func TestInterruptStopsIndex(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		dir, docs := t.TempDir(), t.TempDir()
		notes(t, docs, 20)
		// Read last (names sort), and long: 2,000 pages of 1 MiB each.
		writeFile(t, filepath.Join(docs, "zz-slow.pdf"), string(hostile.SlowPDF(2000)))
		p := startRagmem(t, "--dir", dir, "index", "--batch", "4", "--document-timeout", "5m", docs)
		var child int
		pollUntil(t, 60*time.Second, "child reading zz-slow.pdf", func() bool {
			kids := childProcesses(p.cmd.Process.Pid)
			for _, k := range kids {
				if env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", k)); bytes.Contains(env, []byte("RAGMEM_SANDBOX_CHILD=1")) {
					child = k
					return true
				}
			}
			return false
		})
		time.Sleep(200 * time.Millisecond) // well into the document
		if err := p.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		code, took := p.wait(t, 10*time.Second)
		if took > 2*time.Second {
			t.Errorf("%v: exited after %s", sig, took)
		}
		if want := 128 + int(sig); code != want {
			t.Errorf("%v: exit status %d, want %d", sig, code, want)
		}
		name := map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT"}[sig]
		if e := p.errOut(); !strings.Contains(e, "ragmem: interrupted ("+name+")\n") || strings.Contains(e, "exiting now") {
			t.Errorf("%v: stderr:\n%s", sig, e)
		}
		pollUntil(t, 5*time.Second, "the child gone", func() bool { return processGone(child) })
		if n := len(sourcesOf(t, dir)); n != 20 {
			t.Errorf("%v: %d sources after the interruption, want the 20 notes written before it", sig, n)
		}
	}
}

// childProcesses lists the child processes of pid (Linux).
func childProcesses(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// TestStoppedReaderKeepsTheIndexedVersion: a file whose reading process is
// stopped at a limit is skipped, but what was indexed of it before stays
// (the limit may be the machine's load); a file the reader refuses for
// what it is (here: no longer a PDF) is skipped and its old version
// removed, as files gone from the folder are.
func TestStoppedReaderKeepsTheIndexedVersion(t *testing.T) {
	dir, docs := t.TempDir(), t.TempDir()
	guide, err := os.ReadFile(filepath.Join("..", "..", "testdata", "documents", "guide.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(docs, "guide.pdf")
	writeFile(t, path, string(guide))
	notes(t, docs, 1)
	mustRun(t, "--dir", dir, "index", docs)
	if _, ok := sourcesOf(t, dir)[ingest.FileURL(path)]; !ok {
		t.Fatal("guide.pdf not indexed")
	}
	out, stderr, err := runCLI(t, "--dir", dir, "index", "--document-timeout", "1ns", docs)
	if err != nil || !strings.Contains(stderr, "guide.pdf: skipped: the PDF parser exceeded 1ns") || strings.Contains(out, "removed") {
		t.Fatalf("stopped: %v\n%s\n%s", err, out, stderr)
	}
	if _, ok := sourcesOf(t, dir)[ingest.FileURL(path)]; !ok {
		t.Fatal("guide.pdf removed after its reader was stopped")
	}
	writeFile(t, path, "%PDF-1.4\nnot a PDF any more")
	out, stderr, err = runCLI(t, "--dir", dir, "index", docs)
	if err != nil || !strings.Contains(stderr, "guide.pdf: skipped: the document is damaged") || !strings.Contains(out, "1 removed") {
		t.Fatalf("damaged: %v\n%s\n%s", err, out, stderr)
	}
	if _, ok := sourcesOf(t, dir)[ingest.FileURL(path)]; ok {
		t.Fatal("the damaged guide.pdf's old version kept")
	}
}
