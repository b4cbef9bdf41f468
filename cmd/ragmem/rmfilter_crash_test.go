package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ragmem/ragmem/internal/owner"
	"github.com/ragmem/ragmem/rag"
)

// TestRmFilterKilled: `ragmem rm --filter` killed with SIGKILL while it
// removes leaves a store that `ragmem check` finds consistent, in which
// each source is either whole (every chunk it had) or gone, and nothing
// the filter does not match is touched; running it again then removes
// the rest, so that in the end exactly what the dry run listed is gone.
func TestRmFilterKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("indexes a large folder and kills processes")
	}
	t.Setenv("RAGMEM_EMBEDDER", "lexical")
	dir := t.TempDir()
	stopOwnerAtEnd(t, dir)
	notes := t.TempDir()
	const n = 600
	for i := range n {
		team := []string{"red", "blue", "green"}[i%3]
		body := fmt.Sprintf("Note %d of team %s about herons.", i, team)
		if i%10 == 0 { // a source of several chunks
			var b strings.Builder
			for s := range 4 {
				fmt.Fprintf(&b, "## Section %d\n\n", s)
				for w := range 60 {
					fmt.Fprintf(&b, "word%d of note %d section %d ", w, i, s)
				}
				b.WriteString("\n\n")
			}
			body = b.String()
		}
		writeFile(t, filepath.Join(notes, team, fmt.Sprintf("n%04d.md", i)), "# Note\n\n"+body+"\n")
	}
	for _, team := range []string{"red", "blue", "green"} {
		mustRun(t, "--dir", dir, "index", filepath.Join(notes, team), "--attr", "team="+team)
	}
	sources := func() map[string]int {
		t.Helper()
		var out rag.SourcesJSON
		if err := json.Unmarshal([]byte(mustRun(t, "--dir", dir, "sources", "--json", "--limit", "0")), &out); err != nil {
			t.Fatal(err)
		}
		m := map[string]int{}
		for _, s := range out.Sources {
			m[s.URL] = s.Chunks
		}
		return m
	}
	before := sources()
	if len(before) != n {
		t.Fatalf("%d sources indexed, want %d", len(before), n)
	}
	const filter = `team = "red"`
	var dry rmFilterJSON
	if err := json.Unmarshal([]byte(mustRun(t, "--dir", dir, "rm", "--filter", filter, "--dry-run", "--json")), &dry); err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, s := range dry.Sources {
		listed[s.URL] = true
	}
	if len(listed) != n/3 {
		t.Fatalf("the dry run lists %d sources, want %d", len(listed), n/3)
	}

	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	midway := 0
	for round := 0; round < 6; round++ {
		if round > 0 && len(sources()) == n-len(listed) {
			// All gone: index them again for another kill.
			mustRun(t, "--dir", dir, "index", filepath.Join(notes, "red"), "--attr", "team=red")
		}
		cmd := exec.Command(os.Args[0], "--dir", dir, "rm", "--filter", filter)
		cmd.Env = append(os.Environ(), "RAGMEM_TEST_AS_MAIN=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The command owns the store once it has opened it, just before
		// it removes: kill it a moment later.
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(2 * time.Millisecond) {
			if in, err := owner.ReadInfo(dir); err == nil && in.PID == cmd.Process.Pid {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("rm --filter never owned the store")
			}
		}
		time.Sleep(time.Duration(rng.IntN(25)) * time.Millisecond)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()

		out, stderr, err := runCLI(t, "--dir", dir, "check", "--json")
		if err != nil || !strings.Contains(out, `"consistent": true`) {
			t.Fatalf("round %d: check after the kill: %v\n%s%s", round, err, out, stderr)
		}
		after := sources()
		gone := 0
		for u, chunks := range before {
			got, ok := after[u]
			switch {
			case !ok && !listed[u]:
				t.Fatalf("round %d: %s is gone but the filter does not match it", round, u)
			case !ok:
				gone++
			case got != chunks:
				t.Fatalf("round %d: %s has %d of its %d chunks", round, u, got, chunks)
			}
		}
		t.Logf("round %d: %d of %d listed sources gone after the kill", round, gone, len(listed))
		if gone > 0 && gone < len(listed) {
			midway++
		}
	}
	t.Logf("%d kills landed in the middle of the removal", midway)
	mustRun(t, "--dir", dir, "rm", "--filter", filter)
	after := sources()
	for u, chunks := range before {
		if got, ok := after[u]; ok == listed[u] || (ok && got != chunks) {
			t.Fatalf("in the end %s: present %v with %d chunks (listed by the dry run: %v)", u, ok, got, listed[u])
		}
	}
	if out, _, err := runCLI(t, "--dir", dir, "check", "--json"); err != nil || !strings.Contains(out, `"consistent": true`) {
		t.Fatalf("check at the end: %v\n%s", err, out)
	}
}
