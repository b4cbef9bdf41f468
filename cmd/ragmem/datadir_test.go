package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/settings"
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
			_, listed := settings.DirPolicies[p]
			if listed == settings.DirNoPolicy[p] {
				t.Errorf("%s: listed in settings.DirPolicies %v and in settings.DirNoPolicy %v; want exactly one", p, listed, settings.DirNoPolicy[p])
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd())
	for p := range settings.DirPolicies {
		if !seen[p] {
			t.Errorf("settings.DirPolicies names %q, which is no command", p)
		}
	}
	for p := range settings.DirNoPolicy {
		if !seen[p] {
			t.Errorf("settings.DirNoPolicy names %q, which is no command", p)
		}
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
	if err == nil || errors.Is(err, settings.ErrNoStore) || strings.Contains(err.Error()+stderr, "no store") {
		t.Fatalf("stats on weaviate: %v\n%s", err, stderr)
	}
	if fi, err := os.Stat(filepath.Join(home, "ragmem")); err != nil || !fi.IsDir() {
		t.Fatalf("data directory: %v", err)
	}
}
