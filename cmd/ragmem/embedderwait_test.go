package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/embed/embedtest"
	"github.com/ragmem/ragmem/internal/index/local"
)

// TestStoreWaitsForTheRightEmbedder is issue 25's check from the command
// line: `ragmem stats` on a new folder creates nothing, and `ragmem index
// --embedder randproj:dim=64` then works; a first index that failed
// because the embedder was down binds nothing; a store an earlier version
// bound while empty takes the embedder named; once records are written,
// another embedder is refused.
func TestStoreWaitsForTheRightEmbedder(t *testing.T) {
	docs := t.TempDir()
	writeFile(t, filepath.Join(docs, "heron.md"), "# Herons\n\nThe grey heron wades in shallow water.\n")

	dir := filepath.Join(t.TempDir(), "new")
	if _, _, err := runCLI(t, "--dir", dir, "stats"); err == nil {
		t.Fatal("stats on a new folder succeeded")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("stats created %s", dir)
	}
	mustRun(t, "--dir", dir, "index", "--embedder", "randproj:dim=64", docs)
	if out := mustRun(t, "--dir", dir, "stats"); !strings.Contains(out, "embedder config      randproj:dim=64 (recorded in the store)") {
		t.Errorf("stats after the first index:\n%s", out)
	}
	if _, _, err := runCLI(t, "--dir", dir, "index", "--embedder", "lexical", docs); err == nil || !strings.Contains(err.Error(), "embedder") {
		t.Errorf("another embedder on a store with records: %v", err)
	}

	// The embedder is down for the first index: nothing is bound.
	down := embedtest.New(t, 16)
	down.Set(embedtest.Refused)
	dir2 := filepath.Join(t.TempDir(), "down")
	if _, _, err := runCLI(t, "--dir", dir2, "index", "--embedder", "openai:test-embed,dim=16,retries=0", "--base-url", down.BaseURL(), docs); err == nil {
		t.Fatal("index with the embedder down succeeded")
	}
	out := mustRun(t, "--dir", dir2, "stats")
	if !strings.Contains(out, "chunks               0") || !strings.Contains(out, "none recorded") {
		t.Errorf("stats after a failed first index:\n%s", out)
	}
	mustRun(t, "--dir", dir2, "index", "--embedder", "randproj:dim=64", docs)
	if out := mustRun(t, "--dir", dir2, "search", "--json", "grey heron"); !strings.Contains(out, `"mode": "hybrid"`) {
		t.Errorf("search after the second index:\n%s", out)
	}

	// A store that an earlier ragmem bound to the default while empty.
	dir3 := t.TempDir()
	be, err := local.Open(context.Background(), dir3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := be.SetMeta(context.Background(), "embedder", embed.Default().Identity()); err != nil {
		t.Fatal(err)
	}
	be.Close()
	mustRun(t, "--dir", dir3, "index", "--embedder", "randproj:dim=64", docs)
	if out := mustRun(t, "--dir", dir3, "stats"); !strings.Contains(out, "randproj:dim=64 (recorded in the store)") {
		t.Errorf("stats of the rebound store:\n%s", out)
	}

	// A server that owns an empty store writes with its own embedder: a
	// command naming another is told, rather than ignored.
	if testing.Short() {
		return
	}
	dir4 := t.TempDir()
	srv := startServe(t, dir4)
	defer srv.stop()
	_, stderr, code := runAsMain(t, "", "--dir", dir4, "index", "--embedder", "randproj:dim=64", docs)
	if code == 0 || !strings.Contains(stderr, "owned by pid") || !strings.Contains(stderr, "randproj:dim=64") {
		t.Errorf("index --embedder through a server with another embedder: exit %d\n%s", code, stderr)
	}
}
