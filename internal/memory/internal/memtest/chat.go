package memtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ragmem/ragmem/rag"
)

// Chat is an httptest server speaking the OpenAI chat-completions protocol
// (POST /v1/chat/completions, bearer key "test-key", chat.completion
// answers or OpenAI error bodies). Reply decides each answer. It is safe
// for concurrent use.
type Chat struct {
	srv   *httptest.Server
	mu    sync.Mutex
	reqs  []map[string]any
	reply func(n int, req map[string]any) (status int, content string)
}

// NewChat starts a chat server, closed when the test ends. reply gets the
// request's number (from 0) and body, and returns the status and the
// answer's content (the error message when the status is not 200).
func NewChat(t testing.TB, reply func(n int, req map[string]any) (status int, content string)) *Chat {
	f := &Chat{reply: reply}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer test-key" {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`)
			return
		}
		var req map[string]any
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`)
			return
		}
		f.mu.Lock()
		n := len(f.reqs)
		f.reqs = append(f.reqs, req)
		f.mu.Unlock()
		status, content := f.reply(n, req)
		w.Header().Set("Content-Type", "application/json")
		if status != http.StatusOK {
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error"}}`, content)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": req["model"],
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": content}}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
		})
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// LLM is the chat model of the server (model gpt-4o-mini).
func (f *Chat) LLM() rag.LLM {
	cfg := openai.DefaultConfig("test-key")
	cfg.BaseURL = f.srv.URL + "/v1"
	return rag.LLM{Client: openai.NewClientWithConfig(cfg), Model: "gpt-4o-mini"}
}

// Requests returns the request bodies received so far.
func (f *Chat) Requests() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.reqs...)
}
