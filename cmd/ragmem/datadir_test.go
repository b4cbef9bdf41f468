package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestEveryCommandHasADirPolicy: each command that runs says what it needs
// of the data directory, so a new command cannot create one by mistake.
func TestEveryCommandHasADirPolicy(t *testing.T) {
	var walk func(c *cobra.Command)
	seen := map[string]bool{}
	walk = func(c *cobra.Command) {
		if c.Runnable() && c.HasParent() {
			p := c.CommandPath()
			seen[p] = true
			_, listed := dirPolicies[p]
			if listed == dirNoPolicy[p] {
				t.Errorf("%s: listed in dirPolicies %v and in dirNoPolicy %v; want exactly one", p, listed, dirNoPolicy[p])
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd())
	for p := range dirPolicies {
		if !seen[p] {
			t.Errorf("dirPolicies names %q, which is no command", p)
		}
	}
	for p := range dirNoPolicy {
		if !seen[p] {
			t.Errorf("dirNoPolicy names %q, which is no command", p)
		}
	}
}

// TestMistypedDirIsAnError is issue 25's check of a data directory that
// does not exist: every command but index, import, serve and mcp fails and
// creates nothing; a read-only command on a directory without a store says
// there is none and creates nothing; index creates the directory and says
// so.
func TestMistypedDirIsAnError(t *testing.T) {
	base := t.TempDir()
	missing := filepath.Join(base, "notes-typo")
	for _, args := range [][]string{
		{"search", "herons"}, {"context", "herons"}, {"sources"}, {"stats"}, {"rm", "https://x.example/"},
		{"export", filepath.Join(base, "out.jsonl")}, {"check"}, {"prefs", "list"}, {"prefs", "add", "style", "Short answers"},
		{"jobs", "list"}, {"status"}, {"token", "show"}, {"memory", "list"},
	} {
		_, stderr, err := runCLI(t, append([]string{"--dir", missing}, args...)...)
		if err == nil || !strings.Contains(err.Error(), "no such data directory "+missing+" (from --dir)") {
			t.Errorf("%v: err %v\n%s", args, err, stderr)
		}
		if _, err := os.Stat(missing); !os.IsNotExist(err) {
			t.Fatalf("%v created the data directory", args)
		}
	}
	t.Setenv("RAGMEM_DIR", missing)
	if _, _, err := runCLI(t, "stats"); err == nil || !strings.Contains(err.Error(), "(from $RAGMEM_DIR)") {
		t.Errorf("stats with $RAGMEM_DIR missing: %v", err)
	}

	// An existing directory without a store: read-only commands say so.
	empty := filepath.Join(base, "empty")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"stats"}, {"search", "herons"}, {"sources"}, {"context", "herons"}} {
		_, _, err := runCLI(t, append([]string{"--dir", empty}, args...)...)
		if err == nil || !strings.Contains(err.Error(), "no store in "+empty+": nothing was indexed there yet") {
			t.Errorf("%v on an empty directory: %v", args, err)
		}
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("read-only commands left %d files in a directory without a store", len(ents))
	}

	// index creates it, and says so.
	docs := t.TempDir()
	writeFile(t, filepath.Join(docs, "heron.md"), "# Herons\n\nThe grey heron wades in shallow water.\n")
	_, stderr, err := runCLI(t, "--dir", missing, "index", docs)
	if err != nil || !strings.Contains(stderr, "created the data directory "+missing) {
		t.Fatalf("index into a new directory: %v\n%s", err, stderr)
	}
	if out := mustRun(t, "--dir", missing, "search", "grey heron"); !strings.Contains(out, "heron") {
		t.Errorf("search after index: %s", out)
	}
}

// TestRemoteBackendNeedsNoLocalStore: with a remote backend, a reading
// command on the default data directory that holds no store goes to the
// backend (here an address nothing answers) instead of stopping at "no
// store", and makes the directory for its owner files.
func TestRemoteBackendNeedsNoLocalStore(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_DATA_HOME", home)
	t.Setenv("RAGMEM_DIR", "")
	_, stderr, err := runCLI(t, "--backend", "weaviate", "--weaviate-url", "http://127.0.0.1:1", "stats")
	if err == nil || errors.Is(err, errNoStore) || strings.Contains(err.Error()+stderr, "no store") {
		t.Fatalf("stats on weaviate: %v\n%s", err, stderr)
	}
	if fi, err := os.Stat(filepath.Join(home, "ragmem")); err != nil || !fi.IsDir() {
		t.Fatalf("data directory: %v", err)
	}
}
