package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// chatServer speaks the OpenAI chat-completions protocol and always
// proposes the same memory.
func chatServer(t *testing.T) *httptest.Server {
	answer := `{"shouldCreateMemory":true,"reasoning":"an error and its cause","title":"Uploads time out behind the proxy","whenToUse":["upload|timeout"],"tags":["uploads"],"importance":"high","content":"# Uploads time out\n\nnginx cuts requests after 60 s.","duplicateOf":""}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer test-key" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "x", "object": "chat.completion", "model": "m",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": answer}}}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// With $RAGMEM_LLM_MODEL, `serve` answers POST /v1/memories/extract and
// `mcp` offers extract_memory; without it, extraction is not configured
// (503, no tool).
func TestExtractionIsServed(t *testing.T) {
	chat := chatServer(t)
	env := []string{"RAGMEM_EMBEDDER=lexical", "RAGMEM_LLM_MODEL=gpt-4o-mini", "OPENAI_BASE_URL=" + chat.URL + "/v1", "OPENAI_API_KEY=test-key"}
	body := jsonBody(t, map[string]any{"agent": "developer", "task": "Fix uploads", "agentOutput": "proxy_read_timeout 60s"})

	s := startServeEnv(t, t.TempDir(), env)
	if r := s.call("POST", "/v1/memories/extract", body, false); r.status != http.StatusCreated {
		t.Fatalf("extract with a model: %d %s", r.status, r.body)
	}
	s.stop()
	s = startServe(t, t.TempDir())
	if r := s.call("POST", "/v1/memories/extract", body, false); r.status != http.StatusServiceUnavailable {
		t.Fatalf("extract without a model: %d %s", r.status, r.body)
	}
	s.stop()

	for _, withModel := range []bool{true, false} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		dir := t.TempDir()
		stopOwnerAtEnd(t, dir) // the background owner mcp starts
		cmd := exec.Command(os.Args[0], "--dir", dir, "mcp")
		cmd.Env = append(os.Environ(), "RAGMEM_TEST_AS_MAIN=1", "RAGMEM_EMBEDDER=lexical")
		if withModel {
			cmd.Env = append(cmd.Env, env...)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "ragmem-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			cancel()
			t.Fatalf("connect: %v", err)
		}
		offered := false
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			offered = offered || tool.Name == "extract_memory"
		}
		if offered != withModel {
			t.Errorf("model %v: extract_memory offered %v", withModel, offered)
		}
		if withModel {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "extract_memory", Arguments: map[string]any{"agent": "developer", "task": "Fix uploads", "agentOutput": "proxy_read_timeout 60s"}})
			if err != nil || res.IsError {
				t.Errorf("extract_memory: %v %+v", err, res)
			}
		}
		cs.Close()
		cancel()
	}
}
