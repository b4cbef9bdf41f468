package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/ingest"
	"github.com/ragmem/ragmem/cmd/ragmem/internal/ownerd"
	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
)

// searchURLs runs search --json with args and returns the result URLs.
func searchURLs(t *testing.T, args ...string) []string {
	t.Helper()
	var out rag.SearchJSON
	if err := json.Unmarshal([]byte(mustRun(t, append(args, "--json")...)), &out); err != nil {
		t.Fatal(err)
	}
	var us []string
	for _, r := range out.Results {
		us = append(us, r.URL)
	}
	return us
}

// TestNamespacesCLI: a namespace written from the CLI (this process owning
// the data directory) is invisible to another --namespace and to the
// default one, $RAGMEM_NAMESPACE picks one like the flag, `namespaces`
// lists them with their counts, a bad name is refused by the HTTP API's
// rule, and serve refuses the flag.
func TestNamespacesCLI(t *testing.T) {
	t.Setenv("RAGMEM_EMBEDDER", "lexical")
	dir := t.TempDir()
	notes := t.TempDir()
	secret := filepath.Join(notes, "quartz.md")
	writeFile(t, secret, "# Quartz\n\nAlice hid the quartz key under the blue flowerpot.\n")
	plain := filepath.Join(notes, "herons.md")
	writeFile(t, plain, "# Herons\n\nHerons wade in shallow water.\n")
	mustRun(t, "--dir", dir, "index", plain)
	mustRun(t, "--dir", dir, "--namespace", "alice", "index", secret)
	secretURL := ingest.FileURL(secret)

	if got := searchURLs(t, "--dir", dir, "--namespace", "alice", "search", "quartz key flowerpot"); !slices.Contains(got, secretURL) {
		t.Fatalf("alice cannot find her note: %v", got)
	}
	for _, ns := range [][]string{{"--namespace", "bob"}, nil} {
		if got := searchURLs(t, append(append([]string{"--dir", dir}, ns...), "search", "quartz key flowerpot")...); slices.Contains(got, secretURL) {
			t.Fatalf("%v sees alice's note: %v", ns, got)
		}
	}
	t.Setenv("RAGMEM_NAMESPACE", "alice")
	if got := searchURLs(t, "--dir", dir, "search", "quartz key flowerpot"); !slices.Contains(got, secretURL) {
		t.Fatalf("$RAGMEM_NAMESPACE=alice does not reach alice: %v", got)
	}
	t.Setenv("RAGMEM_NAMESPACE", "")

	var list []ownerd.NamespaceInfo
	if err := json.Unmarshal([]byte(mustRun(t, "--dir", dir, "namespaces", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	byName := map[string]ownerd.NamespaceInfo{}
	for _, n := range list {
		byName[n.Name] = n
	}
	if len(list) != 3 || byName[""].Sources != 1 || byName["alice"].Sources != 1 || byName["alice"].Chunks < 1 || byName["bob"].Sources != 0 {
		t.Fatalf("namespaces: %+v", list) // bob was created by its search: an empty store
	}
	if byName["alice"].Dir != filepath.Join(dir, "namespaces", "alice") {
		t.Fatalf("alice's dir: %s", byName["alice"].Dir)
	}
	for _, bad := range []string{"../etc", "Alice", "a/b", "-x", strings.Repeat("a", 65), "a.b"} {
		if _, _, err := runCLI(t, "--dir", dir, "--namespace", bad, "stats"); err == nil || !strings.Contains(err.Error(), "invalid namespace") {
			t.Errorf("--namespace %q: %v", bad, err)
		}
	}
	if _, _, err := runCLI(t, "--dir", dir, "--namespace", "alice", "serve"); err == nil || !strings.Contains(err.Error(), "--namespace") {
		t.Errorf("serve --namespace: %v", err)
	}
	// A filter that matches every source needs --all, in a dry run too.
	for _, extra := range [][]string{nil, {"--dry-run"}} {
		if _, _, err := runCLI(t, append([]string{"--dir", dir, "rm", "--filter", "source EXISTS"}, extra...)...); err == nil || !strings.Contains(err.Error(), "--all") {
			t.Errorf("rm --filter matching everything %v: %v", extra, err)
		}
	}
	if out := mustRun(t, "--dir", dir, "rm", "--filter", "source EXISTS", "--all", "--dry-run"); !strings.Contains(out, "would remove 1 sources") {
		t.Errorf("rm --filter --all --dry-run: %s", out)
	}
	// token rotate keeps its own --namespace.
	if tok := strings.TrimSpace(mustRun(t, "--dir", dir, "token", "rotate", "--namespace", "alice")); tok == "" {
		t.Error("token rotate --namespace alice printed no token")
	}
}

// TestNamespacesThroughOwner: with `ragmem serve` owning the data
// directory, CLI commands with --namespace go through its socket to the
// namespace: what they write is invisible to another namespace's token
// over HTTP and to another --namespace, visible to the namespace's own
// token; rm --filter, attrs set, check and namespaces work there too; and
// `ragmem mcp --namespace` serves that namespace only.
func TestNamespacesThroughOwner(t *testing.T) {
	dir := processTestDir(t, false)
	// Tokens made before the server starts (it re-reads the file at most
	// once a second).
	alice := strings.TrimSpace(mustRun(t, "--dir", dir, "token", "rotate", "--namespace", "alice"))
	bob := strings.TrimSpace(mustRun(t, "--dir", dir, "token", "rotate", "--namespace", "bob"))
	s := startServe(t, dir)
	defer s.stop()
	notes := t.TempDir()
	for i := range 4 {
		writeFile(t, filepath.Join(notes, fmt.Sprintf("n%d.md", i)), fmt.Sprintf("# Note %d\n\nThe quartz key %d is under the blue flowerpot.\n", i, i))
	}
	cli := func(args ...string) string {
		t.Helper()
		out, stderr, code := runAsMain(t, "", append([]string{"--dir", dir}, args...)...)
		if code != 0 {
			t.Fatalf("ragmem %s: exit %d: %s%s", strings.Join(args, " "), code, out, stderr)
		}
		return out
	}
	cli("--namespace", "alice", "index", notes, "--attr", "team=red")
	search := func(token string, headers ...string) []string {
		t.Helper()
		s.mu.Lock()
		saved := s.token
		s.token = token
		s.mu.Unlock()
		defer func() { s.mu.Lock(); s.token = saved; s.mu.Unlock() }()
		r := s.call("POST", "/v1/search", []byte(`{"query":"quartz key flowerpot","topK":20}`), false, headers...)
		if r.status != http.StatusOK {
			t.Fatalf("search: %d %s", r.status, r.body)
		}
		var out rag.SearchJSON
		if err := json.Unmarshal(r.body, &out); err != nil {
			t.Fatal(err)
		}
		var us []string
		for _, x := range out.Results {
			us = append(us, x.URL)
		}
		return us
	}
	if got := search(alice); len(got) != 4 {
		t.Fatalf("alice's token finds %v, want the 4 notes", got)
	}
	if got := search(bob); len(got) != 0 {
		t.Fatalf("bob's token sees alice's notes: %v", got)
	}
	if got := search(s.token); len(got) != 0 {
		t.Fatalf("the default namespace sees alice's notes: %v", got)
	}
	if got := search(s.token, server.NamespaceHeader, "alice"); len(got) != 4 {
		t.Fatalf("the main token with the header finds %v", got)
	}
	if out := cli("--namespace", "bob", "search", "quartz key flowerpot", "--json"); strings.Contains(out, "n0.md") {
		t.Fatalf("--namespace bob sees alice's notes: %s", out)
	}

	// attrs set and rm --filter, through the owner, in alice's namespace.
	n1 := filepath.Join(notes, "n1.md")
	cli("--namespace", "alice", "attrs", "set", n1, "team=blue")
	dry := cli("--namespace", "alice", "rm", "--filter", `team = "red"`, "--dry-run", "--json")
	var d, r rmFilterJSON
	if err := json.Unmarshal([]byte(dry), &d); err != nil {
		t.Fatal(err, dry)
	}
	if err := json.Unmarshal([]byte(cli("--namespace", "alice", "rm", "--filter", `team = "red"`, "--json")), &r); err != nil {
		t.Fatal(err)
	}
	urls := func(x rmFilterJSON) []string {
		var us []string
		for _, s := range x.Sources {
			us = append(us, s.URL)
		}
		return us
	}
	if !d.DryRun || d.Removed != 3 || !slices.Equal(urls(d), urls(r)) || slices.Contains(urls(r), ingest.FileURL(n1)) {
		t.Fatalf("dry run %+v, removal %+v", d, r)
	}
	if got := search(alice); !slices.Equal(got, []string{ingest.FileURL(n1)}) {
		t.Fatalf("after rm --filter alice finds %v", got)
	}
	if out := cli("--namespace", "alice", "check", "--json"); !strings.Contains(out, `"consistent": true`) {
		t.Fatalf("check: %s", out)
	}
	var list []ownerd.NamespaceInfo
	if err := json.Unmarshal([]byte(cli("namespaces", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) < 2 || list[1].Name != "alice" || list[1].Sources != 1 {
		t.Fatalf("namespaces through the owner: %+v", list)
	}

	// MCP launched in a namespace: its tools reach that one only.
	ma := startMCP(t, dir, "--namespace", "alice")
	res := ma.mustCall("search_memory", map[string]any{"query": "quartz key flowerpot"})
	if b, _ := json.Marshal(res); !strings.Contains(string(b), "n1.md") {
		t.Fatalf("mcp --namespace alice: %s", b)
	}
	mb := startMCP(t, dir, "--namespace", "bob")
	mb.mustCall("index_text", map[string]any{"text": "Bob keeps the amber ledger in the attic.", "url": "https://bob.example/ledger"})
	if b, _ := json.Marshal(mb.mustCall("search_memory", map[string]any{"query": "quartz key flowerpot"})); strings.Contains(string(b), "n1.md") {
		t.Fatalf("mcp --namespace bob sees alice's notes: %s", b)
	}
	if got := search(alice); slices.Contains(got, "https://bob.example/ledger") {
		t.Fatal("bob's MCP write reached alice")
	}
	if out := cli("--namespace", "bob", "sources"); !strings.Contains(out, "https://bob.example/ledger") {
		t.Fatalf("bob's MCP write is not in bob's namespace: %s", out)
	}
	// The namespace tools of the MCP session: forget_sources and
	// set_source_attrs, with the rules of the API.
	mb.mustCall("index_text", map[string]any{"text": "Bob's bicycle is in the shed.", "url": "https://bob.example/bicycle"})
	out := mb.mustCall("set_source_attrs", map[string]any{"url": "https://bob.example/ledger", "set": map[string]string{"room": "attic"}})
	if out["changed"].(float64) < 1 {
		t.Fatalf("set_source_attrs: %v", out)
	}
	dryOut := mb.mustCall("forget_sources", map[string]any{"filter": `room = "attic"`, "dryRun": true})
	if dryOut["removed"].(float64) != 1 {
		t.Fatalf("forget_sources dry run: %v", dryOut)
	}
	for _, args := range []map[string]any{{}, {"filter": `source STARTS WITH "https://bob.example/"`, "dryRun": true}} {
		if _, err := mb.call(t.Context(), "forget_sources", args); err == nil || !strings.Contains(err.Error(), "all: true") {
			t.Fatalf("forget_sources %v matching everything without all: %v", args, err)
		}
	}
	mb.mustCall("forget_sources", map[string]any{"filter": `room = "attic"`})
	if out := cli("--namespace", "bob", "sources"); strings.Contains(out, "https://bob.example/ledger") || !strings.Contains(out, "https://bob.example/bicycle") {
		t.Fatalf("forget_sources removed other than the ledger: %s", out)
	}
}
