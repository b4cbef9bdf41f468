package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

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
