package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// seedExample1 writes the memories of seed 000, Example 1 with the CLI.
func seedExample1(t *testing.T, dir, mem string) {
	t.Helper()
	for _, args := range [][]string{
		{"--title", "Project uses JWT authentication", "--when", "auth|jwt|token|login", "--when", "When changing the authentication system",
			"--tag", "auth", "--tag", "jwt", "--importance", "high", "--by", "planner", "--at", "2020-01-10T00:00:00Z",
			"The project currently uses JWT tokens for authentication, verified by the auth middleware."},
		{"--title", "OAuth2 integration was considered too broad", "--when", "oauth|social.*auth", "--when", "considering auth approaches",
			"--tag", "auth", "--tag", "failures", "--importance", "high", "--by", "reviewer", "--at", "2020-01-11T00:00:00Z",
			"Earlier attempts at OAuth2 failed because the scope grew too broad. Stick with JWT-based authentication."},
		{"--title", "Express middleware pattern", "--when", "middleware|interceptor", "--when", "writing Express handlers",
			"--tag", "patterns", "--tag", "express", "--importance", "high", "--by", "planner", "--at", "2020-01-12T00:00:00Z",
			"The project follows this middleware pattern: wrap in try/catch, return 401 on auth failure, call next()."},
		{"--title", "Database schema version 2.1", "--when", "database|schema|migration", "--tag", "database", "--importance", "medium",
			"--by", "planner", "--at", "2020-01-13T00:00:00Z", "Tables users and sessions; migrations in db/migrations."},
	} {
		mustRun(t, append([]string{"--dir", dir, "memory", "add", "--memories", mem}, args...)...)
	}
}

func TestMemoryCLI(t *testing.T) {
	dir := t.TempDir()
	mem := filepath.Join(t.TempDir(), "project", ".ragmem", "memories")
	seedExample1(t, dir, mem)

	out := mustRun(t, "--dir", dir, "memory", "match", "--memories", mem, "--agent", "developer", "Add OAuth integration to existing auth system")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var ranked []string
	for _, l := range lines {
		if len(l) > 2 && l[0] >= '1' && l[0] <= '9' && l[1] == '.' {
			ranked = append(ranked, l)
		}
	}
	if len(ranked) != 3 ||
		!strings.HasPrefix(ranked[0], "1. oauth2-integration-was-considered-too-broad  score 40 (importance 25, keyword 15)") ||
		!strings.HasPrefix(ranked[1], "2. project-uses-jwt-authentication  score 35 (importance 25, keyword 10)") ||
		!strings.HasPrefix(ranked[2], "3. express-middleware-pattern  score 35 (importance 25, agent tags 10)") {
		t.Fatalf("match output:\n%s", out)
	}
	if !strings.Contains(out, "weak match") {
		t.Errorf("no reason for the weak match:\n%s", out)
	}
	out = mustRun(t, "--dir", dir, "memory", "match", "--memories", mem, "--agent", "developer", "Add email notifications")
	if strings.TrimSpace(out) != "no memories selected" {
		t.Errorf("example 2: %q", out)
	}
	out = mustRun(t, "--dir", dir, "memory", "match", "--memories", mem, "--agent", "developer", "--json", "--max", "2", "--min-importance", "high", "Add OAuth integration to existing auth system")
	var res struct {
		Matches []struct {
			Memory struct{ Slug, Importance string }
			Score  struct{ Total int }
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Matches) != 2 || res.Matches[0].Score.Total != 40 {
		t.Fatalf("json: %v\n%s", err, out)
	}
	out = mustRun(t, "--dir", dir, "memory", "match", "--memories", mem, "--agent", "developer", "--prompt", "Add OAuth integration to existing auth system")
	if !strings.HasPrefix(out, "[REFERENCE DATA") || !strings.Contains(out, "## Background Knowledge from Previous Runs") || !strings.Contains(out, "*Discovered by: reviewer*") {
		t.Errorf("prompt:\n%s", out)
	}

	// Append, list, show.
	out = mustRun(t, "--dir", dir, "memory", "add", "--memories", mem, "--title", "Project uses JWT authentication!", "--when", "jwt", "--by", "tester", "Keys rotate every 30 days.")
	if !strings.Contains(out, "appended entry 2 to") {
		t.Errorf("append: %q", out)
	}
	writeFile(t, filepath.Join(mem, "broken.md"), "---\ntitle: Broken\nwhenToUse: x\nimportance: urgent\n---\n")
	out, stderr, err := runCLI(t, "--dir", dir, "memory", "list", "--memories", mem)
	if err != nil || !strings.Contains(stderr, "warning: skipped broken.md:4: importance is \"urgent\"") || strings.Count(out, "when:") != 4 {
		t.Fatalf("list: %v\n%s\n%s", err, out, stderr)
	}
	out = mustRun(t, "--dir", dir, "memory", "show", "--memories", mem, "project-uses-jwt-authentication")
	if !strings.HasPrefix(out, "---\ntitle: Project uses JWT authentication\n") || !strings.Contains(out, "\n---\n\n---\ntitle: Project uses JWT authentication!\n") {
		t.Errorf("show:\n%s", out)
	}
	if _, _, err := runCLI(t, "--dir", dir, "memory", "show", "--memories", mem, "../../etc/passwd"); err == nil || !strings.Contains(err.Error(), "not a memory name") {
		t.Errorf("show traversal: %v", err)
	}
	if _, _, err := runCLI(t, "--dir", dir, "memory", "add", "--memories", mem, "--title", "x", "--when", "y", "--importance", "urgent", "body"); err == nil {
		t.Error("bad importance accepted")
	}
	if _, _, err := runCLI(t, "--dir", dir, "memory", "match", "--memories", mem, "task without agent"); err == nil {
		t.Error("match without --agent accepted")
	}
}

// The default memory directory is <data dir>/memories.
func TestMemoryDefaultDir(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("RAGMEM_MEMORIES", "")
	mustRun(t, "--dir", dir, "memory", "add", "--title", "Default place", "--when", "place", "here")
	if _, err := os.Stat(filepath.Join(dir, "memories", "default-place.md")); err != nil {
		t.Fatal(err)
	}
}

func TestMemoryExtractCLI(t *testing.T) {
	t.Setenv("RAGMEM_LLM_MODEL", "")
	answer := `{"shouldCreateMemory":true,"reasoning":"a constraint","title":"Build needs Go 1.26","whenToUse":["build|go version|toolchain"],"tags":["build"],"importance":"high","content":"# Build needs Go 1.26\n\nThe module uses range-over-func iterators.","duplicateOf":""}`
	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test" {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"message":"bad key"}}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "x", "object": "chat.completion", "model": "m",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": answer}}}})
	}))
	defer llm.Close()
	dir := t.TempDir()
	logf := filepath.Join(t.TempDir(), "run.log")
	writeFile(t, logf, "go: go.mod requires go >= 1.26 (running go 1.22)\n")
	out := mustRun(t, "--dir", dir, "--base-url", llm.URL+"/v1", "--api-key", "sk-test", "memory", "extract", "--agent", "developer", "--task", "Build the project", "--result", "failure", "--model", "m", logf)
	if !strings.Contains(out, "wrote ") || !strings.Contains(out, "build-needs-go-1-26.md") {
		t.Fatalf("extract: %q", out)
	}
	out = mustRun(t, "--dir", dir, "--base-url", llm.URL+"/v1", "--api-key", "sk-test", "memory", "extract", "--agent", "developer", "--task", "Build again", "--model", "m", "--json", logf)
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	// The same title again is an update, appended to the file.
	if w, _ := res["written"].(map[string]any); w == nil || w["appended"] != true {
		t.Errorf("second extract: %v", res)
	}
	if _, _, err := runCLI(t, "--dir", dir, "memory", "extract", "--agent", "a", "--task", "t", logf); err == nil || !strings.Contains(err.Error(), "no model") {
		t.Errorf("no model: %v", err)
	}
}
