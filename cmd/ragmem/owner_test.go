package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/internal/owner"
)

// processGone reports whether pid has exited (a zombie counts as gone).
func processGone(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
}

// processTestDir starts a test that starts ragmem processes (skipped with
// -short; run in parallel when parallel says so): a data directory whose
// owner is stopped when the test ends.
func processTestDir(t *testing.T, parallel bool) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts processes")
	}
	if parallel {
		t.Parallel()
	}
	dir := t.TempDir()
	stopOwnerAtEnd(t, dir)
	return dir
}

// stopOwnerAtEnd stops, when the test ends and before its directories go,
// whatever process owns dir then (a background owner the test started,
// even one still starting), and waits for it to exit. Register it after
// creating dir.
func stopOwnerAtEnd(t *testing.T, dir string) {
	t.Cleanup(func() {
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			pid := 0
			if in, err := owner.ReadInfo(dir); err == nil {
				pid = in.PID
			} else if held, _ := owner.LockHeld(dir); held {
				pid = owner.LockHolder(dir) // starting: stop it all the same
			}
			if pid == 0 || processGone(pid) {
				if held, _ := owner.LockHeld(dir); !held {
					return
				}
				continue
			}
			_ = syscall.Kill(pid, syscall.SIGTERM)
			if time.Now().After(deadline) {
				t.Errorf("owner pid %d did not stop", pid)
				_ = syscall.Kill(pid, syscall.SIGKILL)
				return
			}
		}
	})
}

// runAsMain runs the test binary as ragmem with args and stdin, and
// returns stdout, stderr and the exit code.
func runAsMain(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "RAGMEM_TEST_AS_MAIN=1", "RAGMEM_EMBEDDER=lexical")
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// waitOwner waits until dir's owner file names a process of kind.
func waitOwner(t *testing.T, dir string, kind owner.Kind) owner.Info {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if in, err := owner.ReadInfo(dir); err == nil && in.Kind == kind {
			return in
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s owner of %s", kind, dir)
		}
	}
}

var (
	prefIDs    = regexp.MustCompile(`pref_[0-9a-f]{16}`)
	tookMs     = regexp.MustCompile(`"tookMs": [0-9.e+-]+`) // how long a search took: differs run to run
	rfc3339    = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	lastSyncTx = regexp.MustCompile(`(?m)^(last sync|index size) .*\n`)
	// A memory file's MD5: supersede writes the time of day into the
	// file, so the two copies' hashes differ when their commands run in
	// different seconds.
	memoryHash = regexp.MustCompile(`"hash": "[0-9a-f]{32}"`)
)

// TestBothModesSameOutput runs every command (62 command lines, folder
// sync, document formats, filters and memory extraction included) on two
// copies of one store:
// on the first with no owner (the command opens the store itself), on the
// second through a running `ragmem serve` (the command is its client). The
// outputs must be the same, byte for byte, once the data directory's path
// is replaced and the values that differ between any two runs (new
// preferences' random ids, times, and the hashes of memory files that hold
// a time) are masked. stats
// differs by design in what describes the process that has the store open
// (the command itself, or the owner) rather than the store: the last-sync
// time, the queue and query-cache counters, and the bytes on disk (each
// close of a store writes a checkpoint, and the first copy is opened and
// closed by every command); those are left out of the comparison.
func TestBothModesSameOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process")
	}
	t.Setenv("RAGMEM_EMBEDDER", "lexical")
	base := t.TempDir()
	files := t.TempDir()
	writeFile(t, filepath.Join(files, "otters.md"), "# Otters\n\n## Sleep\n\nOtters hold hands while they sleep so that they do not drift apart.\n\n## Food\n\nSea otters eat urchins and crabs.\n")
	writeFile(t, filepath.Join(files, "notes", "tapirs.txt"), "Tapirs snorkel with their trunks. They are related to horses and rhinos.\n")
	writeFile(t, filepath.Join(files, "page.html"), "<html><head><title>Zebras</title></head><body><h1>Zebras</h1><p>Zebras have stripes that confuse biting flies.</p><script>x()</script></body></html>")
	writeFile(t, filepath.Join(files, "bad-utf8.txt"), "Caf\xe9 au lait, then more text about capybaras.\n")
	mustRun(t, "--dir", base, "index", files)
	mustRun(t, "--dir", base, "index", "../../internal/sample/corpus")
	mustRun(t, "--dir", base, "prefs", "add", "style", "Prefers short answers with code")
	writeFile(t, filepath.Join(base, "memories", "lemurs.md"), "---\ntitle: Lemurs\nwhenToUse: lemurs\ndiscoveredAt: 2026-01-09T10:00:00Z\n---\n\nLemurs sunbathe in the morning.\n")
	writeFile(t, filepath.Join(base, "memories", "jwt-auth.md"), "---\ntitle: Project uses JWT authentication\nwhenToUse:\n  - auth|jwt|login\nimportance: high\ndiscoveredAt: 2026-01-10T10:00:00Z\ndiscoveredBy: planner\n---\n\nThe project signs JWTs with HS256; tokens expire after 15 minutes.\n")
	local, served := filepath.Join(t.TempDir(), "local"), filepath.Join(t.TempDir(), "served")
	copyDir(t, base, local)
	copyDir(t, base, served)
	for _, d := range []string{local, served} { // copyDir loosens modes; the token file's is checked
		if err := os.Chmod(filepath.Join(d, "server-tokens.json"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := startServe(t, served)
	defer s.stop()
	extra := filepath.Join(t.TempDir(), "extra.md")
	writeFile(t, extra, "# Quokkas\n\nQuokkas smile and live on Rottnest Island.\n")
	// A folder kept in sync: documents (PDF, DOCX, EPUB), files skipped
	// (encrypted, empty, binary), ignore files and --exclude, attributes.
	shelf := t.TempDir()
	for _, name := range []string{"guide.pdf", "guide.docx", "guide.epub", "encrypted.pdf"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "documents", name))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(shelf, "books", name), string(data))
	}
	writeFile(t, filepath.Join(shelf, "copy-of-otters.md"), "# Otters\n\n## Sleep\n\nOtters hold hands while they sleep so that they do not drift apart.\n\n## Food\n\nSea otters eat urchins and crabs.\n")
	writeFile(t, filepath.Join(shelf, "empty.md"), "")
	writeFile(t, filepath.Join(shelf, "blob.txt"), strings.Repeat("\x00\x01\x02binary", 64))
	writeFile(t, filepath.Join(shelf, "drafts", "wip.md"), "# Draft\n\nexcluded by .ragmemignore\n")
	writeFile(t, filepath.Join(shelf, ".ragmemignore"), "drafts/\n")
	writeFile(t, filepath.Join(shelf, "build", "out.md"), "# Build\n\nexcluded by --exclude\n")
	writeFile(t, filepath.Join(shelf, "gone.md"), "# Gone\n\nDeleted after the first sync: capybaras.\n")
	// Memory extraction calls a chat model (here, a test server speaking
	// the OpenAI protocol) from the command's process in both modes.
	chat := chatServer(t)
	t.Setenv("OPENAI_BASE_URL", chat.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "test-key")

	steps := []struct {
		args   []string
		stdin  string
		before func() // run once before the step's two runs
	}{
		{args: []string{"search", "hybrid", "fusion"}},
		{args: []string{"search", "--json", "--mode", "fulltext", "--top-k", "3", "bm25 saturation"}},
		{args: []string{"search", "--mode", "vector", "--threshold", "-1", "--top-k", "4", "stripes"}},
		{args: []string{"search", "--types", "memory", "lemurs"}},
		{args: []string{"search", "--source", "file://" + filepath.Join(files, "otters.md"), "--fusion", "rrf", "otters"}},
		{args: []string{"search", "--json", "no such words zzqx"}},
		{args: []string{"context", "how does reciprocal rank fusion work"}},
		{args: []string{"context", "--json", "--top-k", "2", "--knowledge-budget", "300", "--mode", "fulltext", "install on linux"}},
		{args: []string{"sources"}},
		{args: []string{"sources", "--json", "--limit", "3", "--offset", "1", "--types", "knowledge,memory"}},
		{args: []string{"prefs", "list"}},
		{args: []string{"prefs", "list", "--json"}},
		{args: []string{"prefs", "add", "expertise", "Senior Go developer"}},
		{args: []string{"prefs", "rm", "pref_0000000000000000"}},
		{args: []string{"prefs", "detect", "--save", "I'm a data scientist and I prefer examples in Python"}},
		{args: []string{"prefs", "list"}},
		{args: []string{"context", "--json", "what do I prefer"}},
		{args: []string{"index", extra}},
		{args: []string{"index", extra}},
		{args: []string{"index", "-", "--url", "https://stdin.example/doc", "--format", "markdown", "--title", "Stdin"}, stdin: "# Stdin\n\nRead from standard input about wombats.\n"},
		{args: []string{"search", "wombats quokkas"}},
		{args: []string{"rm", "file://" + filepath.Join(files, "notes", "tapirs.txt")}},
		{args: []string{"rm", "https://never.example/"}},
		{args: []string{"memory", "match", "--agent", "developer", "Fix the login flow"}},
		{args: []string{"memory", "match", "--agent", "developer", "--prompt", "Fix the login flow"}},
		{args: []string{"memory", "match", "--agent", "developer", "--json", "Fix the login flow"}},
		{args: []string{"token", "list"}},
		{args: []string{"jobs", "list"}},
		{args: []string{"jobs", "list", "--json"}},
		{args: []string{"jobs", "drop", "job_nonexistent"}},
		{args: []string{"jobs", "retry", "job_nonexistent"}},
		{args: []string{"check"}},
		{args: []string{"check", "--json"}},
		{args: []string{"stats"}},
		{args: []string{"stats", "--json"}},
		{args: []string{"prefs", "clear"}},
		{args: []string{"sources", "--json", "--types", "preference"}},
		// Main's ingestion: folder sync, formats, attributes, filters.
		{args: []string{"index", "--exclude", "build/", "--attr", "team=search", "--attr", "lang=en", shelf}},
		{args: []string{"index", "--attr", "team=search", "--attr", "lang=en", shelf}, before: func() {
			if err := os.Remove(filepath.Join(shelf, "gone.md")); err != nil {
				t.Fatal(err)
			}
		}},
		{args: []string{"sources", "--json", "--limit", "0"}},
		{args: []string{"search", "--filter", "team = search AND lang IN [en, de]", "otters sleep"}},
		{args: []string{"search", "--json", "--source", filepath.Join(shelf, "books") + "/", "holts dens"}},
		{args: []string{"search", "--group", "--max-per-source", "1", "otters"}},
		{args: []string{"search", "--keep-duplicates", "otters hold hands"}},
		{args: []string{"search", "--filter", "team = ", "otters"}},
		{args: []string{"search", "--top-k", "150", "--max-per-source", "120", "--threshold", "-1", "otters"}},
		{args: []string{"context", "--json", "--top-k", "150", "otters"}},
		{args: []string{"context", "--json", "--filter", "type = knowledge AND team = search", "otter dens"}},
		{args: []string{"context", "--source", filepath.Join(shelf, "books", "guide.epub"), "otter dens"}},
		{args: []string{"index", "--keep-params", "ref_src", "-", "--url", "https://Example.com/a?ref_src=x&utm_source=y#top", "--format", "html"},
			stdin: "<html><head><title>Mutexes</title></head><body><main><h1>Mutexes</h1><p>Mutexes guard shared data.</p></main></body></html>"},
		{args: []string{"index", "-", "--url", "https://example.com/bin"}, stdin: strings.Repeat("\x00\x01binary", 64)},
		{args: []string{"index", "--attr", "bad key=x", "-", "--url", "https://example.com/bad"}, stdin: "text"},
		{args: []string{"sources", "--types", "knowledge"}},
		{args: []string{"rm", "https://EXAMPLE.com/a?ref_src=x"}},
		{args: []string{"rm", filepath.Join(shelf, "books") + "/"}},
		{args: []string{"rm", filepath.Join(shelf, "nothing-here") + "/"}},
		{args: []string{"memory", "extract", "--agent", "developer", "--task", "Fix uploads", "--model", "gpt-4o-mini", "-"}, stdin: "proxy_read_timeout 60s"},
		{args: []string{"memory", "extract", "--agent", "developer", "--task", "Fix uploads", "--model", "gpt-4o-mini", "--dry-run", "--json", "-"}, stdin: "proxy_read_timeout 60s"},
		{args: []string{"memory", "match", "--agent", "developer", "uploads time out"}},
		{args: []string{"memory", "search", "uploads proxy"}},
		{args: []string{"memory", "match", "--agent", "developer", "--history", "--when", "this year", "uploads"}},
		// Memories written, superseded and cited through the owner's memory
		// API as over this process's index.
		{args: []string{"memory", "add", "--title", "Sessions use cookies", "--when", "auth|login|session", "--at", "2026-03-01T09:00:00Z",
			"--importance", "high", "--tag", "auth", "Sessions moved from JWTs to HttpOnly cookies."}},
		{args: []string{"memory", "add", "--title", "Sessions use cookies", "--when", "auth|login|session", "--at", "2026-03-02T09:00:00Z",
			"Sessions moved from JWTs to HttpOnly cookies."}},
		{args: []string{"memory", "supersede", "sessions-use-cookies", "jwt-auth", "--why", "checked the code"}},
		{args: []string{"memory", "supersede", "jwt-auth", "sessions-use-cookies"}},
		{args: []string{"memory", "search", "--json", "--history", "sessions jwt"}},
		{args: []string{"search", "--types", "memory", "JWT HS256 tokens"}},
		{args: []string{"memory", "match", "--agent", "developer", "Fix the login flow"}},
		{args: []string{"memory", "cite", "Sessions use cookies [memory:sessions-use-cookies] [memory:nope]."}},
		{args: []string{"memory", "stats", "--json"}},
		// A portable export and import, through the owner as without one
		// (DIR is each mode's data directory: its export goes beside it).
		{args: []string{"export", "DIR/../memory.ragmem"}},
		{args: []string{"import", "DIR/../memory.ragmem"}},
		{args: []string{"import", "--merge", "DIR/../memory.ragmem"}},
		{args: []string{"import", "--key-file", filepath.Join(files, "otters.md"), "DIR/../memory.ragmem"}},
		{args: []string{"export", filepath.Join(files, "no-such-dir", "x.ragmem")}},
		{args: []string{"sources", "--json", "--limit", "0"}},
		{args: []string{"check"}},
	}
	normalize := func(s, dir string, stats bool) string {
		s = strings.ReplaceAll(s, dir, "DIR")
		s = strings.ReplaceAll(s, filepath.Dir(dir), "PARENT") // an export beside the data directory
		s = prefIDs.ReplaceAllString(s, "pref_ID")
		if stats {
			s = lastSyncTx.ReplaceAllString(s, "")
			var m map[string]any
			if json.Unmarshal([]byte(s), &m) == nil {
				delete(m, "lastSyncTime")
				delete(m, "indexSizeBytes")
				delete(m, "queue")
				delete(m, "queryCache")
				b, _ := json.MarshalIndent(m, "", "  ")
				return string(b)
			}
			return s
		}
		s = memoryHash.ReplaceAllString(s, `"hash": "HASH"`)
		return tookMs.ReplaceAllString(rfc3339.ReplaceAllString(s, "TIME"), `"tookMs": N`)
	}
	for _, st := range steps {
		name := strings.Join(st.args, " ")
		if st.before != nil {
			st.before()
		}
		inDir := func(dir string) []string {
			args := []string{"--dir", dir}
			for _, a := range st.args {
				if rest, ok := strings.CutPrefix(a, "DIR/"); ok {
					a = filepath.Join(dir, rest)
				}
				args = append(args, a)
			}
			return args
		}
		lout, lerr, lcode := runCLIStdin(t, st.stdin, inDir(local)...)
		sout, serr, scode := runCLIStdin(t, st.stdin, inDir(served)...)
		isStats := st.args[0] == "stats"
		if a, b := normalize(lout, local, isStats), normalize(sout, served, isStats); a != b {
			t.Errorf("ragmem %s: stdout differs\nno owner:\n%s\nthrough serve:\n%s", name, a, b)
		}
		if a, b := normalize(lerr, local, isStats), normalize(serr, served, isStats); a != b {
			t.Errorf("ragmem %s: stderr differs\nno owner:\n%s\nthrough serve:\n%s", name, a, b)
		}
		if (lcode == nil) != (scode == nil) || (lcode != nil && normalize(lcode.Error(), local, false) != normalize(scode.Error(), served, false)) {
			t.Errorf("ragmem %s: errors differ: no owner %v, through serve %v", name, lcode, scode)
		}
		if in, err := owner.ReadInfo(local); err == nil {
			t.Fatalf("ragmem %s left an owner file naming pid %d", name, in.PID)
		}
	}
	// The served copy was never opened by a command: its store lock
	// names the server.
	if b, _ := os.ReadFile(filepath.Join(served, "LOCK")); strings.TrimSpace(string(b)) != strconv.Itoa(s.cmd.Process.Pid) {
		t.Errorf("the served store's lock names pid %s, not the server's %d", b, s.cmd.Process.Pid)
	}
	if s.errText() == "" || strings.Contains(s.errText(), "level=ERROR") {
		t.Errorf("server log:\n%.3000s", s.errText())
	}
}

// runCLIStdin is runCLI with stdin.
func runCLIStdin(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

// TestClientAgreesWithOwnersEmbedder: a client that names an embedder other
// than the one the owner's store was built with is refused, as a local open
// would be; naming the store's own is fine.
func TestClientAgreesWithOwnersEmbedder(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process")
	}
	t.Setenv("RAGMEM_EMBEDDER", "lexical")
	dir := t.TempDir()
	mustRun(t, "--dir", dir, "index", "../../internal/sample/corpus")
	s := startServe(t, dir)
	defer s.stop()
	_, _, err := runCLI(t, "--dir", dir, "--embedder", "lexical:dim=64", "search", "fusion")
	if !errors.Is(err, engine.ErrEmbedderMismatch) || !strings.Contains(err.Error(), "owned by pid "+strconv.Itoa(s.cmd.Process.Pid)) ||
		!strings.Contains(err.Error(), "from --embedder") {
		t.Fatalf("another embedder through the owner: %v", err)
	}
	if out, stderr, err := runCLI(t, "--dir", dir, "--embedder", "lexical", "search", "fusion"); err != nil || !strings.Contains(out, "hybrid-search.md") {
		t.Fatalf("the store's own embedder: %v\n%s%s", err, out, stderr)
	}
}
