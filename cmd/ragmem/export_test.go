package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// ragmem export then ragmem import into an empty directory answers as
// before, takes the file's embedder, and refuses what it must.
func TestCLIExportImport(t *testing.T) {
	a, b, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	mustRun(t, "--dir", a, "--embedder", "randproj:dim=48", "index", "../../internal/sample/corpus")
	mustRun(t, "--dir", a, "prefs", "add", "style", "The user prefers short answers.")
	key := filepath.Join(tmp, "key")
	writeFile(t, key, base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))+"\n")
	file := filepath.Join(tmp, "mem.ragmem")
	out := mustRun(t, "--dir", a, "export", "--key-file", key, file)
	if !strings.Contains(out, "AES-256-GCM") {
		t.Fatalf("export: %s", out)
	}
	if _, _, err := runCLI(t, "--dir", b, "import", file); err == nil || !strings.Contains(err.Error(), "--key-file") {
		t.Fatalf("import without the key: %v", err)
	}
	t.Setenv(keyEnv, strings.Repeat("6b", 32)) // the same key, in hex, from the environment
	out = mustRun(t, "--dir", b, "import", file)
	if !strings.Contains(out, "knowledge   8 sources") || !strings.Contains(out, "preference  1 sources") {
		t.Fatalf("import: %s", out)
	}
	for _, q := range []string{"bm25 saturation", "goroutines and channels", "sourdough"} {
		for _, mode := range []string{"hybrid", "vector", "fulltext"} {
			want := withoutTime(mustRun(t, "--dir", a, "search", "--json", "--mode", mode, q))
			if got := withoutTime(mustRun(t, "--dir", b, "search", "--json", "--mode", mode, q)); got != want {
				t.Errorf("%s %q after import:\n%s\nwant\n%s", mode, q, got, want)
			}
		}
	}
	if st := mustRun(t, "--dir", b, "stats"); !strings.Contains(st, "randproj:dim=48") {
		t.Errorf("the imported store does not use the file's embedder:\n%s", st)
	}
	if _, _, err := runCLI(t, "--dir", b, "import", file); err == nil || !strings.Contains(err.Error(), "--merge") {
		t.Fatalf("import into a full store: %v", err)
	}
	mustRun(t, "--dir", b, "import", "--replace", file)
	if _, _, err := runCLI(t, "--dir", t.TempDir(), "--embedder", "lexical", "import", file); err == nil || !strings.Contains(err.Error(), "embedder mismatch") {
		t.Fatalf("import into a store of another embedder: %v", err)
	}
	bad := filepath.Join(tmp, "bad")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, bad, string(data[:len(data)/2]))
	if _, _, err := runCLI(t, "--dir", t.TempDir(), "import", bad); err == nil || !strings.Contains(err.Error(), "wrong key") {
		t.Fatalf("truncated encrypted file: %v", err)
	}
}

// withoutTime drops the "tookMs" line of a search's JSON.
func withoutTime(out string) string {
	return regexp.MustCompile(`(?m)^\s*"tookMs": .*$`).ReplaceAllString(out, "")
}
