package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/ragmem/ragmem/rag"
	openai "github.com/sashabaranov/go-openai"
)

// fakeLLM is an httptest server speaking the OpenAI chat-completions
// protocol: POST /v1/chat/completions answered either as one JSON
// chat.completion or, for "stream": true, as server-sent events of
// chat.completion.chunk objects ending with "data: [DONE]", tool calls
// streamed in pieces the way OpenAI sends them. Each request is recorded, and
// script decides each reply.
type fakeLLM struct {
	srv    *httptest.Server
	mu     sync.Mutex
	reqs   []capturedRequest
	script func(n int, req capturedRequest) reply
}

// capturedRequest is a received request, decoded generically (so that the
// test sees exactly what went over the wire) and into go-openai's type.
type capturedRequest struct {
	Raw    map[string]any
	Parsed openai.ChatCompletionRequest
}

type toolReply struct{ id, name, args string }

type reply struct {
	content   string
	toolCalls []toolReply
	status    int    // non-200: an error response with errBody
	errBody   string // OpenAI error JSON
	hangAfter int    // > 0: stream this many content chunks, then block until the client goes away
	noUsage   bool
}

func newFakeLLM(t *testing.T, script func(n int, req capturedRequest) reply) *fakeLLM {
	t.Helper()
	f := &fakeLLM{script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeLLM) llm(model string) rag.LLM {
	cfg := openai.DefaultConfig("test-key")
	cfg.BaseURL = f.srv.URL + "/v1"
	return rag.LLM{Client: openai.NewClientWithConfig(cfg), Model: model}
}

func (f *fakeLLM) requests() []capturedRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]capturedRequest(nil), f.reqs...)
}

func (f *fakeLLM) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	if r.Header.Get("Authorization") != "Bearer test-key" {
		http.Error(w, `{"error":{"message":"bad key","type":"invalid_request_error"}}`, http.StatusUnauthorized)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var cr capturedRequest
	if err := json.Unmarshal(body, &cr.Raw); err != nil {
		http.Error(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	_ = json.Unmarshal(body, &cr.Parsed)
	f.mu.Lock()
	n := len(f.reqs)
	f.reqs = append(f.reqs, cr)
	f.mu.Unlock()
	rep := f.script(n, cr)
	if rep.status != 0 && rep.status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		io.WriteString(w, rep.errBody)
		return
	}
	model, _ := cr.Raw["model"].(string)
	if stream, _ := cr.Raw["stream"].(bool); !stream {
		writeCompletion(w, model, rep)
		return
	}
	includeUsage := false
	if so, ok := cr.Raw["stream_options"].(map[string]any); ok {
		includeUsage, _ = so["include_usage"].(bool)
	}
	f.writeStream(w, r, model, rep, includeUsage && !rep.noUsage)
}

func writeCompletion(w http.ResponseWriter, model string, rep reply) {
	msg := map[string]any{"role": "assistant", "content": rep.content}
	finish := "stop"
	if len(rep.toolCalls) > 0 {
		var calls []any
		for _, tc := range rep.toolCalls {
			calls = append(calls, map[string]any{"id": tc.id, "type": "function", "function": map[string]any{"name": tc.name, "arguments": tc.args}})
		}
		msg["tool_calls"] = calls
		finish = "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
}

func (f *fakeLLM) writeStream(w http.ResponseWriter, r *http.Request, model string, rep reply, usage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl := w.(http.Flusher)
	send := func(choices []any, extra map[string]any) {
		ev := map[string]any{"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": model, "choices": choices}
		for k, v := range extra {
			ev[k] = v
		}
		b, _ := json.Marshal(ev)
		fmt.Fprintf(w, "data: %s\n\n", b)
		fl.Flush()
	}
	choice := func(delta map[string]any, finish any) []any {
		return []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}}
	}
	send(choice(map[string]any{"role": "assistant", "content": ""}, nil), nil)
	// Content in pieces of about 4 bytes, cut at rune boundaries.
	var pieces []string
	cur := ""
	for _, r := range rep.content {
		cur += string(r)
		if len(cur) >= 4 {
			pieces = append(pieces, cur)
			cur = ""
		}
	}
	if cur != "" {
		pieces = append(pieces, cur)
	}
	for i, p := range pieces {
		send(choice(map[string]any{"content": p}, nil), nil)
		if rep.hangAfter > 0 && i+1 >= rep.hangAfter {
			<-r.Context().Done()
			return
		}
	}
	finish := "stop"
	for i, tc := range rep.toolCalls {
		finish = "tool_calls"
		send(choice(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": tc.id, "type": "function", "function": map[string]any{"name": tc.name, "arguments": ""}}}}, nil), nil)
		for a := tc.args; a != ""; {
			n := min(len(a), 7)
			send(choice(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": a[:n]}}}}, nil), nil)
			a = a[n:]
		}
	}
	send(choice(map[string]any{}, finish), nil)
	if usage {
		send([]any{}, map[string]any{"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	fl.Flush()
}

// messages returns the request's messages as sent: role and content.
func (c capturedRequest) messages() []map[string]any {
	ms, _ := c.Raw["messages"].([]any)
	out := make([]map[string]any, 0, len(ms))
	for _, m := range ms {
		mm, _ := m.(map[string]any)
		out = append(out, mm)
	}
	return out
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
