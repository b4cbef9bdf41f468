package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/internal/wvtest"
)

// TestMigrateToWeaviate indexes files and a preference into a local store,
// migrates it, and uses the Weaviate copy through the same commands.
func TestMigrateToWeaviate(t *testing.T) {
	url := wvtest.URL(t)
	ns := fmt.Sprintf("climigrate%d", os.Getpid())
	dir, docs := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(docs, "install.md"), "# Install\n\n## Linux\n\nUnpack the tarball into /usr/local/bin and run the quetzal service.\n")
	writeFile(t, filepath.Join(docs, "otters.txt"), "Notes about otters. Otters hold hands while they sleep.\n")
	mustRun(t, "--dir", dir, "index", docs)
	mustRun(t, "--dir", dir, "prefs", "add", "expertise", "User is a Go developer")
	wv := []string{"--dir", t.TempDir(), "--backend", "weaviate", "--weaviate-url", url, "--weaviate-namespace", ns}
	var before struct {
		ChunkCount, DocumentCount, PreferenceCount int
	}
	if err := json.Unmarshal([]byte(mustRun(t, "--dir", dir, "stats", "--json")), &before); err != nil {
		t.Fatal(err)
	}

	out := mustRun(t, "--dir", dir, "migrate", "--to", "weaviate", "--weaviate-url", url, "--weaviate-namespace", ns)
	for _, want := range []string{fmt.Sprintf("copied %d records", before.ChunkCount),
		fmt.Sprintf("knowledge   2 sources, %d chunks", before.ChunkCount-1), "preference  1 sources, 1 chunks", "embedder    lexical", "verified"} {
		if !strings.Contains(out, want) {
			t.Fatalf("migrate output lacks %q:\n%s", want, out)
		}
	}
	// Again: records keep their ids, so nothing is duplicated.
	mustRun(t, "--dir", dir, "migrate", "--to", "weaviate", "--weaviate-url", url, "--weaviate-namespace", ns)

	local := mustRun(t, "--dir", dir, "search", "--json", "otters sleeping")
	remote := mustRun(t, append(wv, "search", "--json", "otters sleeping")...)
	if !strings.Contains(remote, "otters.txt") || !strings.Contains(remote, "native relative") {
		t.Fatalf("search on Weaviate:\n%s", remote)
	}
	if !strings.Contains(local, "otters.txt") {
		t.Fatalf("local search:\n%s", local)
	}
	var after struct {
		ChunkCount, DocumentCount, PreferenceCount int
	}
	st := mustRun(t, append(wv, "stats", "--json")...)
	if err := json.Unmarshal([]byte(st), &after); err != nil || after != before {
		t.Fatalf("stats on Weaviate %+v, local %+v (%v)", after, before, err)
	}
	prefs := mustRun(t, append(wv, "prefs", "list")...)
	if !strings.Contains(prefs, "User is a Go developer") {
		t.Fatalf("prefs on Weaviate:\n%s", prefs)
	}

	// The local store is left as it was, and another embedder is refused.
	if out := mustRun(t, "--dir", dir, "stats", "--json"); !strings.Contains(out, fmt.Sprintf(`"chunkCount": %d`, before.ChunkCount)) {
		t.Fatalf("local store changed:\n%s", out)
	}
	other := t.TempDir()
	mustRun(t, "--dir", other, "--embedder", "lexical:dim=64", "index", docs)
	_, _, err := runCLI(t, "--dir", other, "--embedder", "lexical:dim=64", "migrate", "--to", "weaviate", "--weaviate-url", url, "--weaviate-namespace", ns)
	if err == nil || !strings.Contains(err.Error(), "embedder") {
		t.Fatalf("migrating another embedder's store into the namespace: %v", err)
	}
	// An unreachable server is one clear error.
	_, _, err = runCLI(t, "--dir", dir, "migrate", "--to", "weaviate", "--weaviate-url", "http://127.0.0.1:1")
	if err == nil || !strings.Contains(err.Error(), "cannot reach") {
		t.Fatalf("unreachable server: %v", err)
	}
}
