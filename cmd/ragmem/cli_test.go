package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runCLI runs the command in-process and returns stdout, stderr and the error.
func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetIn(strings.NewReader(""))
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, err := runCLI(t, args...)
	if err != nil {
		t.Fatalf("ragmem %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCLIWorkflow(t *testing.T) {
	dir := t.TempDir()
	docs := t.TempDir()
	writeFile(t, filepath.Join(docs, "install.md"), "# Install\n\n## Linux\n\nUnpack the tarball into /usr/local/bin and run the quetzal service.\n")
	writeFile(t, filepath.Join(docs, "sub", "notes.txt"), "Notes about otters. Otters hold hands while they sleep.\n")
	writeFile(t, filepath.Join(docs, "page.html"), "<html><head><title>Zebra page</title><script>evil()</script></head><body><p>Zebras have stripes.</p></body></html>")
	writeFile(t, filepath.Join(docs, "ignored.bin"), "%PDF")
	writeFile(t, filepath.Join(docs, ".hidden", "secret.md"), "# Secret\n\nnever indexed")

	out := mustRun(t, "--dir", dir, "index", docs)
	if !strings.Contains(out, "indexed 3 documents") {
		t.Fatalf("index output: %q", out)
	}
	out = mustRun(t, "--dir", dir, "index", docs)
	if !strings.Contains(out, "indexed 0 documents") || !strings.Contains(out, "3 unchanged") {
		t.Fatalf("re-index output: %q", out)
	}

	for _, mode := range []string{"hybrid", "vector", "fulltext"} {
		out := mustRun(t, "--dir", dir, "search", "--mode", mode, "--threshold", "-1", "--json", "quetzal tarball")
		var res struct {
			Results []struct {
				URL         string         `json:"url"`
				HeadingPath []string       `json:"headingPath"`
				Explanation map[string]any `json:"explanation"`
			} `json:"results"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%s: %v\n%s", mode, err, out)
		}
		if len(res.Results) == 0 || !strings.HasSuffix(res.Results[0].URL, "/install.md") {
			t.Fatalf("%s search: %s", mode, out)
		}
		if strings.Join(res.Results[0].HeadingPath, "/") != "Install/Linux" {
			t.Fatalf("%s heading path: %v", mode, res.Results[0].HeadingPath)
		}
	}
	human := mustRun(t, "--dir", dir, "search", "otters")
	if !strings.Contains(human, "notes.txt") || !strings.Contains(human, "relative(alpha=0.10, default, feedback=3)") || !strings.Contains(human, "(refined ") || !strings.Contains(human, "in this list; raw bm25 ") {
		t.Fatalf("human search output: %s", human)
	}

	out = mustRun(t, "--dir", dir, "prefs", "add", "expertise", "Senior Go developer")
	prefID := strings.Fields(out)[0]
	if !strings.HasPrefix(prefID, "pref_") {
		t.Fatalf("prefs add: %q", out)
	}
	if out := mustRun(t, "--dir", dir, "prefs", "detect", "I'm a marine biologist"); !strings.Contains(out, "expertise") {
		t.Fatalf("prefs detect: %q", out)
	}
	if out := mustRun(t, "--dir", dir, "prefs", "list"); !strings.Contains(out, "Senior Go developer") {
		t.Fatalf("prefs list: %q", out)
	}

	ctxOut := mustRun(t, "--dir", dir, "context", "how do I install on linux")
	if !strings.HasPrefix(ctxOut, "[REFERENCE DATA") || !strings.Contains(ctxOut, "<user_profile>") || !strings.Contains(ctxOut, "install.md") {
		t.Fatalf("context output: %s", ctxOut)
	}
	jsonOut := mustRun(t, "--dir", dir, "context", "--json", "how do I install on linux")
	var msgs struct {
		Messages []struct{ Role, Content string } `json:"messages"`
		Budgets  map[string]int                   `json:"budgets"`
	}
	if err := json.Unmarshal([]byte(jsonOut), &msgs); err != nil {
		t.Fatal(err)
	}
	if len(msgs.Messages) != 3 || msgs.Messages[0].Role != "system" || msgs.Messages[1].Role != "assistant" || msgs.Messages[2].Role != "user" {
		t.Fatalf("messages: %+v", msgs.Messages)
	}
	if strings.Contains(msgs.Messages[0].Content, "<knowledge_context>\n") || !strings.Contains(msgs.Messages[1].Content, "<knowledge_context>") {
		t.Fatal("knowledge context placed in the system prompt")
	}

	// Re-index of a changed file: old chunks gone.
	writeFile(t, filepath.Join(docs, "install.md"), "# Install\n\n## Linux\n\nUse the axolotl installer instead.\n")
	out = mustRun(t, "--dir", dir, "index", filepath.Join(docs, "install.md"))
	if !strings.Contains(out, "indexed 1 documents") || !strings.Contains(out, "old chunks replaced") {
		t.Fatalf("changed re-index: %q", out)
	}
	if out := mustRun(t, "--dir", dir, "search", "--mode", "fulltext", "quetzal"); !strings.Contains(out, "no results") {
		t.Fatalf("old content still found: %s", out)
	}
	if out := mustRun(t, "--dir", dir, "search", "--mode", "fulltext", "axolotl"); !strings.Contains(out, "install.md") {
		t.Fatalf("new content not found: %s", out)
	}

	// rm removes a source; removing it again is an error.
	url := fileURL(filepath.Join(docs, "sub", "notes.txt"))
	if out := mustRun(t, "--dir", dir, "rm", url); !strings.Contains(out, "removed") {
		t.Fatalf("rm: %q", out)
	}
	if _, _, err := runCLI(t, "--dir", dir, "rm", url); err == nil {
		t.Fatal("removing a missing source succeeded")
	}
	if out := mustRun(t, "--dir", dir, "prefs", "rm", prefID); !strings.Contains(out, "removed") {
		t.Fatalf("prefs rm: %q", out)
	}

	var st map[string]any
	if err := json.Unmarshal([]byte(mustRun(t, "--dir", dir, "stats", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if st["documentCount"].(float64) != 2 || st["preferenceCount"].(float64) != 0 {
		t.Fatalf("stats: %v", st)
	}

	// A different embedder is refused with a clear message.
	_, _, err := runCLI(t, "--dir", dir, "--embedder", "lexical:dim=128", "search", "x")
	if err == nil || !strings.Contains(err.Error(), "embedder mismatch") || !strings.Contains(err.Error(), "--embedder") {
		t.Fatalf("different embedder: %v", err)
	}
}

func TestCLIStdin(t *testing.T) {
	dir := t.TempDir()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetIn(strings.NewReader("<html><body><h1>Stdin page</h1><p>Piped capybara content.</p></body></html>"))
	root.SetArgs([]string{"--dir", dir, "index", "-", "--url", "https://stdin.example/", "--format", "html"})
	if err := root.Execute(); err != nil {
		t.Fatal(err, out.String())
	}
	if s := mustRun(t, "--dir", dir, "search", "--mode", "fulltext", "capybara"); !strings.Contains(s, "https://stdin.example/") {
		t.Fatalf("stdin document not found: %s", s)
	}
	if _, _, err := runCLI(t, "--dir", dir, "index", "-"); err == nil || !strings.Contains(err.Error(), "--url") {
		t.Fatalf("stdin without --url: %v", err)
	}
	// Knowledge read from stdin gets the page rules of HTTP and MCP: the
	// schemes of memories and preferences are refused, in any case.
	for _, u := range []string{"memory:x", "Preference:style", "not a url"} {
		if _, _, err := runCLIStdin(t, "Some text.", "--dir", dir, "index", "-", "--url", u); err == nil || !strings.Contains(err.Error(), "URL") {
			t.Errorf("index - --url %q: %v", u, err)
		}
	}
	// Memories are written by the memory store (ragmem memory add), never
	// by index.
	if _, _, err := runCLIStdin(t, "Lemurs sunbathe.", "--dir", dir, "index", "-", "--url", "memory:lemurs", "--type", "memory"); err == nil || !strings.Contains(err.Error(), "ragmem memory add") {
		t.Errorf("index --type memory: %v", err)
	}
}

// TestBinaryErrorsAreOneLine builds the binary and checks that a failure is
// one clear line on stderr and a non-zero exit status.
func TestBinaryErrorsAreOneLine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "ragmem")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--dir", dir, "index", "/nonexistent/path"},
		{"--dir", dir, "search", "--mode", "psychic", "q"},
		{"--dir", dir, "prefs", "add", "mood", "happy"},
		{"--dir", dir, "rm", "https://never.example/"},
	} {
		cmd := exec.Command(bin, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() == 0 {
			t.Fatalf("%v: exit %v", args, err)
		}
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if len(lines) != 1 || !strings.HasPrefix(lines[0], "ragmem: ") {
			t.Fatalf("%v: stderr %q", args, stderr.String())
		}
	}
	// The demo runs offline from the repository root.
	cmd := exec.Command(bin, "demo", "--corpus", "../../internal/sample/corpus")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("demo: %v", err)
	}
	if !strings.Contains(string(out), "<knowledge_context>") || !strings.Contains(string(out), "hybrid-search.md") {
		t.Fatalf("demo output: %s", out)
	}
}
