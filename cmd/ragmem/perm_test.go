package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIRefusesOpenDataDirectories is item 5 of issue 25 from the command
// line: a data directory others may write, or one in such a directory, is
// refused by every command that opens it, with the path and the fix, and
// nothing is written there; so are a configuration file and an export key
// another user could have changed. A data directory of the user's that
// others may only read is made private and used.
func TestCLIRefusesOpenDataDirectories(t *testing.T) {
	t.Setenv("RAGMEM_EMBEDDER", "lexical")
	base := t.TempDir()
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777)
	notes := filepath.Join(t.TempDir(), "n.md")
	writeFile(t, notes, "# Herons\n\nHerons wade.\n")
	for _, args := range [][]string{
		{"--dir", open, "stats"},
		{"--dir", open, "index", notes},
		{"--dir", open, "search", "herons"},
		{"--dir", open, "prefs", "list"},
		{"--dir", open, "token", "show"},
		{"--dir", filepath.Join(open, "inner"), "stats"},
	} {
		_, _, err := runCLI(t, args...)
		if err == nil || !strings.Contains(err.Error(), "other users may write") || !strings.Contains(err.Error(), "chmod go-w "+open) {
			t.Errorf("ragmem %s: %v", strings.Join(args, " "), err)
		}
	}
	if ents, _ := os.ReadDir(open); len(ents) != 0 {
		t.Errorf("files were written in the refused directory: %v", ents)
	}
	// Readable by others only: made private, then used.
	shown := filepath.Join(base, "shown")
	if err := os.Mkdir(shown, 0o755); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "--dir", shown, "index", notes)
	if fi, _ := os.Stat(shown); fi.Mode().Perm() != 0o700 {
		t.Errorf("the data directory is %04o, want 0700", fi.Mode().Perm())
	}
	// A configuration file others may write.
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, cfg, "embedder: lexical\n")
	os.Chmod(cfg, 0o666)
	if _, _, err := runCLI(t, "--config", cfg, "--dir", shown, "stats"); err == nil || !strings.Contains(err.Error(), "chmod go-w "+cfg) {
		t.Errorf("a 0666 config file: %v", err)
	}
	// An export key others may write.
	key := filepath.Join(t.TempDir(), "ragmem.key")
	writeFile(t, key, strings.Repeat("ab", 32))
	os.Chmod(key, 0o622)
	out := filepath.Join(t.TempDir(), "backup.ragmem")
	if _, _, err := runCLI(t, "--dir", shown, "export", "--key-file", key, out); err == nil || !strings.Contains(err.Error(), "--key-file") || !strings.Contains(err.Error(), "other users may write") {
		t.Errorf("a 0622 key file: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("files of another user need root")
	}
	// Another user's data directory (0700, theirs) and configuration file.
	theirs := filepath.Join(base, "theirs")
	if err := os.Mkdir(theirs, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chown(theirs, 65534, 65534)
	if _, _, err := runCLI(t, "--dir", theirs, "stats"); err == nil || !strings.Contains(err.Error(), "belongs to another user (uid 65534") {
		t.Errorf("another user's data directory: %v", err)
	}
	os.Chmod(cfg, 0o644)
	os.Chown(cfg, 65534, 65534)
	if _, _, err := runCLI(t, "--config", cfg, "--dir", shown, "stats"); err == nil || !strings.Contains(err.Error(), "belongs to another user") {
		t.Errorf("another user's config file: %v", err)
	}
}
