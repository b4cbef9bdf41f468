package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/ragmem/ragmem/cmd/ragmem/internal/ownerd"
)

// TestMain lets tests run this binary's main in a child process.
func exitCode(err error) int {
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestCheckCommand: a healthy store checks clean; a chunk deleted from the
// full-text index behind ragmem's back is named and the status is 1;
// --repair fixes it; an unfinished journal write and a wrong embedder are
// reported too; check itself changes nothing.
func TestCheckCommand(t *testing.T) {
	dir := t.TempDir()
	docs := t.TempDir()
	writeFile(t, filepath.Join(docs, "a.md"), "# Alpha\n\nAardvarks dig burrows at night.\n")
	writeFile(t, filepath.Join(docs, "b.txt"), "Badgers are bold. They fear nothing.\n")
	mustRun(t, "--dir", dir, "index", docs)

	out, _, err := runCLI(t, "--dir", dir, "check")
	if err != nil || !strings.Contains(out, "consistent") {
		t.Fatalf("healthy store: %v\n%s", err, out)
	}

	// Delete one chunk from bleve behind ragmem's back.
	bi, err := bleve.OpenUsing(filepath.Join(dir, "bleve"), map[string]any{"unsafe_batch": false})
	if err != nil {
		t.Fatal(err)
	}
	res, err := bi.Search(bleve.NewSearchRequest(bleve.NewMatchAllQuery()))
	if err != nil || len(res.Hits) != 2 {
		t.Fatalf("bleve holds %v (%v)", res, err)
	}
	victim := res.Hits[0].ID
	if err := bi.Delete(victim); err != nil {
		t.Fatal(err)
	}
	bi.Close()
	before := snapshotFiles(t, dir)
	out, _, err = runCLI(t, "--dir", dir, "check")
	if exitCode(err) != 1 || !strings.Contains(out, "fulltext-missing "+victim) {
		t.Fatalf("after deleting %s: status %d (%v)\n%s", victim, exitCode(err), err, out)
	}
	if after := snapshotFiles(t, dir); after != before {
		t.Fatalf("check changed the store:\nbefore %s\nafter  %s", before, after)
	}
	out, _, err = runCLI(t, "--dir", dir, "check", "--repair")
	if err != nil || !strings.Contains(out, "consistent") {
		t.Fatalf("repair: %v\n%s", err, out)
	}
	if out, _, err = runCLI(t, "--dir", dir, "check"); err != nil {
		t.Fatalf("after repair: %v\n%s", err, out)
	}

	// An unfinished write at the end of the journal: nothing acknowledged
	// is lost, the next open cuts it: recovery pending, exit 0.
	journals, _ := filepath.Glob(filepath.Join(dir, "journal-*.rgj"))
	f, err := os.OpenFile(journals[len(journals)-1], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{100, 0, 0, 0, 1, 2, 3, 4, 5})
	f.Close()
	out, _, err = runCLI(t, "--dir", dir, "check", "--json")
	var rep ownerd.CheckReport
	json.Unmarshal([]byte(out), &rep)
	if exitCode(err) != 0 || len(rep.Pending) != 1 || rep.Pending[0].Kind != "journal-tail" || len(rep.Problems) != 0 || !rep.Consistent {
		t.Fatalf("torn tail: status %d\n%s", exitCode(err), out)
	}
	if out, _, err = runCLI(t, "--dir", dir, "check"); err != nil || !strings.Contains(out, "pending    journal-tail") || !strings.Contains(out, "recovery pending (applied on next open)") {
		t.Fatalf("torn tail, text: %v\n%s", err, out)
	}
	if out, _, err = runCLI(t, "--dir", dir, "check", "--repair"); err != nil {
		t.Fatalf("repair torn tail: %v\n%s", err, out)
	}

	// An unfinished write at the end of the background indexing queue:
	// recovery pending too.
	qf, err := os.OpenFile(filepath.Join(dir, "queue.rgq"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	qf.Write([]byte{7, 0, 0, 0, 9})
	qf.Close()
	out, _, err = runCLI(t, "--dir", dir, "check")
	if exitCode(err) != 0 || !strings.Contains(out, "pending    queue-tail: the indexing queue ends in an unfinished write") {
		t.Fatalf("torn queue: status %d\n%s", exitCode(err), out)
	}
	// Damage in the middle of the queue is a problem.
	data, _ := os.ReadFile(filepath.Join(dir, "queue.rgq"))
	os.WriteFile(filepath.Join(dir, "queue.rgq"), append(data[:len(data)-5], []byte{4, 0, 0, 0, 0, 0, 0, 0, 'x', 'y', 'z', 'w'}...), 0o600)
	out, _, err = runCLI(t, "--dir", dir, "check")
	if exitCode(err) != 1 || !strings.Contains(out, "problem    queue: the indexing queue is damaged") {
		t.Fatalf("damaged queue: status %d\n%s", exitCode(err), out)
	}
	if out, _, err = runCLI(t, "--dir", dir, "check", "--repair"); err != nil {
		t.Fatalf("repair torn queue: %v\n%s", err, out)
	}
	if out, _, err = runCLI(t, "--dir", dir, "check"); err != nil {
		t.Fatalf("after repairing the queue: %v\n%s", err, out)
	}

	// Another embedder than the one that built the store.
	out, _, err = runCLI(t, "--dir", dir, "--embedder", "lexical:dim=128", "check")
	if exitCode(err) != 1 || !strings.Contains(out, "embedder") {
		t.Fatalf("embedder mismatch: status %d\n%s", exitCode(err), out)
	}
	if _, _, err = runCLI(t, "--dir", t.TempDir(), "check"); exitCode(err) != 2 {
		t.Fatalf("empty directory: status %d (%v)", exitCode(err), err)
	}
}

// snapshotFiles describes every file of a store by name, size and content.
func snapshotFiles(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "LOCK" {
			return nil
		}
		data, _ := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(&b, "%s:%d:%x ", rel, len(data), hash(data))
		return nil
	})
	return b.String()
}

func hash(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

// TestSecondProcessIsTheFirstsClient runs two ragmem index processes on
// one data directory: the second finds the first owning the store, indexes
// through it (never opening the store itself), and both documents are
// there.
func TestSecondProcessIsTheFirstsClient(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "RAGMEM_TEST_AS_MAIN=1")
	// The first holds the store while it waits for its document on stdin.
	first := exec.Command(exe, "--dir", dir, "index", "-", "--url", "https://first.example/")
	first.Env = env
	stdin, _ := first.StdinPipe()
	var firstOut bytes.Buffer
	first.Stdout, first.Stderr = &firstOut, &firstOut
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(first.Process.Pid)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(filepath.Join(dir, "owner.json")); strings.Contains(string(b), `"pid": `+pid) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("first process never announced itself as the owner: %s", firstOut.String())
		}
	}
	st := mustRun(t, "--dir", dir, "status")
	if !strings.Contains(st, "owner           pid "+pid+": ragmem --dir") || !strings.Contains(st, "state           running") {
		t.Errorf("status while the first process owns the store:\n%s", st)
	}
	docs := t.TempDir()
	writeFile(t, filepath.Join(docs, "x.md"), "# X\n\nSecond process content about tapirs.\n")
	second := exec.Command(exe, "--dir", dir, "index", docs)
	second.Env = env
	var out, stderr bytes.Buffer
	second.Stdout, second.Stderr = &out, &stderr
	if err := second.Run(); err != nil {
		t.Fatalf("second process: %v\n%s", err, stderr.String())
	}
	if got := strings.TrimSpace(out.String()); got != "indexed 1 documents (1 chunks), 0 unchanged" {
		t.Errorf("second process said %q (stderr %q)", got, stderr.String())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "LOCK")); strings.TrimSpace(string(b)) != pid {
		t.Errorf("the store's lock names pid %q, not the first process %s: the second opened the store", b, pid)
	}
	stdin.Write([]byte("First process content about lemurs.\n"))
	stdin.Close()
	if err := first.Wait(); err != nil {
		t.Fatalf("first process: %v\n%s", err, firstOut.String())
	}
	srcs := mustRun(t, "--dir", dir, "sources")
	if !strings.Contains(srcs, "https://first.example/") || !strings.Contains(srcs, "x.md") || !strings.Contains(srcs, "2 of 2 sources") {
		t.Errorf("sources after both:\n%s", srcs)
	}
}

// TestCheckRecoveryPending: a full-text index behind the journal (as a kill
// between the journal write and bleve's leaves it) loses nothing: check
// says "recovery pending (applied on next open)" with status 0, and the
// next open applies it.
func TestCheckRecoveryPending(t *testing.T) {
	dir, docs := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(docs, "a.md"), "# Alpha\n\nAardvarks dig burrows at night.\n")
	mustRun(t, "--dir", dir, "index", docs)
	aside := filepath.Join(t.TempDir(), "bleve")
	if out, err := exec.Command("cp", "-a", filepath.Join(dir, "bleve"), aside).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	writeFile(t, filepath.Join(docs, "b.md"), "# Badgers\n\nBadgers are bold.\n")
	mustRun(t, "--dir", dir, "index", docs)
	os.RemoveAll(filepath.Join(dir, "bleve"))
	if out, err := exec.Command("cp", "-a", aside, filepath.Join(dir, "bleve")).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	out, _, err := runCLI(t, "--dir", dir, "check")
	if err != nil || !strings.Contains(out, "pending    fulltext-behind") || !strings.Contains(out, "recovery pending (applied on next open)") {
		t.Fatalf("bleve behind: %v\n%s", err, out)
	}
	if s := mustRun(t, "--dir", dir, "search", "--mode", "fulltext", "badgers bold"); !strings.Contains(s, "b.md") {
		t.Fatalf("the next open did not apply the journal:\n%s", s)
	}
	if out, _, err := runCLI(t, "--dir", dir, "check"); err != nil || strings.Contains(out, "pending") {
		t.Fatalf("after the open: %v\n%s", err, out)
	}
}
