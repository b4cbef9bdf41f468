package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragmem/ragmem/internal/index/local"
	"github.com/ragmem/ragmem/internal/owner"
)

// commandLoops runs `ragmem index` of a folder it changes before each run
// (so that every command indexes, and is busy when asked to hand over)
// and `ragmem search` in two loops on dir, as separate processes, until
// stop is called. ran says how many commands have ended; stop returns
// that count and the failures.
func commandLoops(t *testing.T, dir string) (ran func() int, stop func() (runs int, failures []string)) {
	t.Helper()
	var (
		wg   sync.WaitGroup
		done atomic.Bool
		mu   sync.Mutex
		runs int
		bad  []string
	)
	record := func(what, out, errs string, code int) {
		mu.Lock()
		defer mu.Unlock()
		runs++
		if code != 0 {
			bad = append(bad, fmt.Sprintf("%s: exit %d\n%s%s", what, code, out, errs))
		}
	}
	notes := t.TempDir()
	// A test that ends early (t.Fatal) stops the loops too, before its
	// temporary directories go: they must not run, or log, after it.
	t.Cleanup(func() {
		done.Store(true)
		wg.Wait()
	})
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; !done.Load(); i++ {
			for k := range 20 {
				body := fmt.Sprintf("Run %d, note %d: pangolins eat ants at night. %s\n", i, k, strings.Repeat("scales ", 40+k))
				if err := os.WriteFile(filepath.Join(notes, fmt.Sprintf("n%d.md", k)), []byte(body), 0o600); err != nil {
					t.Error(err)
					return
				}
			}
			out, errs, code := runAsMain(t, "", "--dir", dir, "index", notes)
			record("index", out, errs, code)
		}
	}()
	go func() {
		defer wg.Done()
		// Searching a directory nothing was indexed into is an error:
		// the search loop starts once the first index is done.
		for !done.Load() && !local.Exists(dir) {
			time.Sleep(10 * time.Millisecond)
		}
		for !done.Load() {
			out, errs, code := runAsMain(t, "", "--dir", dir, "search", "pangolins ants")
			record("search", out, errs, code)
		}
	}()
	ran = func() int {
		mu.Lock()
		defer mu.Unlock()
		return runs
	}
	return ran, func() (int, []string) {
		done.Store(true)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return runs, bad
	}
}

// TestServeStartsBesideCommandLoops is issue 25's handover check: with
// `ragmem index` and `ragmem search` running in loops on a data directory,
// `ragmem serve` starts within 5 s in every try (it reserves the
// succession, so the commands started meanwhile join it instead of taking
// the store back), and every command of the loops succeeds, before and
// after, as owner or as a client.
func TestServeStartsBesideCommandLoops(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for try := range 3 {
		dir := t.TempDir()
		ran, stop := commandLoops(t, dir)
		// Each loop has run a command or two: they keep taking the store.
		waitRuns(t, ran, 4)
		start := time.Now()
		s := startServe(t, dir)
		took := time.Since(start)
		waitOwner(t, dir, owner.KindServe)
		// The loops go on through the server.
		waitRuns(t, ran, ran()+4)
		runs, bad := stop()
		t.Logf("try %d: serve started in %s; %d commands ran", try, took.Round(time.Millisecond), runs)
		if took > 5*time.Second {
			t.Errorf("try %d: serve took %s to start; it said:\n%s", try, took, s.errText())
		}
		if len(bad) > 0 {
			t.Errorf("try %d: %d of %d commands failed; the first:\n%s", try, len(bad), runs, bad[0])
		}
		if strings.Contains(s.errText(), "took the store back") {
			t.Errorf("try %d: serve said:\n%s", try, s.errText())
		}
		if in, err := owner.ReadInfo(dir); err != nil || in.Kind != owner.KindServe {
			t.Errorf("try %d: after the loops the owner is %+v (%v)", try, in, err)
		}
		s.stop()
	}
}

// waitRuns waits until ran reports at least n commands ended.
func waitRuns(t *testing.T, ran func() int, n int) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ran() < n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the loops ran %d commands of %d", ran(), n)
		}
	}
}

// TestMCPStartsBesideCommandLoops: the same with `ragmem mcp`: its first
// call is answered within 5 s in every try, its background owner takes
// the store over from the commands (which join it), and every command and
// MCP call succeeds.
func TestMCPStartsBesideCommandLoops(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for try := range 2 {
		dir := t.TempDir()
		stopOwnerAtEnd(t, dir)
		ran, stop := commandLoops(t, dir)
		waitRuns(t, ran, 4)
		start := time.Now()
		m := startMCP(t, dir)
		m.mustCall("search_memory", map[string]any{"query": "pangolins"})
		took := time.Since(start)
		waitOwner(t, dir, owner.KindDaemon)
		waitRuns(t, ran, ran()+4)
		for i := range 3 {
			m.mustCall("index_text", map[string]any{"text": fmt.Sprintf("Okapi fact %d.", i), "url": fmt.Sprintf("https://zoo.example/okapi/%d", i)})
		}
		runs, bad := stop()
		t.Logf("try %d: mcp answered in %s; %d commands ran", try, took.Round(time.Millisecond), runs)
		if took > 5*time.Second {
			t.Errorf("try %d: mcp took %s to answer; it said:\n%s", try, took, m.stderr.String())
		}
		if len(bad) > 0 {
			t.Errorf("try %d: %d of %d commands failed; the first:\n%s", try, len(bad), runs, bad[0])
		}
		if in, err := owner.ReadInfo(dir); err != nil || in.Kind != owner.KindDaemon {
			t.Errorf("try %d: after the loops the owner is %+v (%v)", try, in, err)
		}
		m.close()
	}
}
