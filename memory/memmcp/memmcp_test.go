package memmcp

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/memory"
	"github.com/ragmem/ragmem/memory/internal/memtest"
	"github.com/ragmem/ragmem/rag"
)

var bg = context.Background()

func connect(t *testing.T, readOnly bool) (*mcp.ClientSession, *memory.Store) {
	return connectWith(t, &Options{ReadOnly: readOnly})
}

func connectWith(t *testing.T, opts *Options) (*mcp.ClientSession, *memory.Store) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ix, err := index.Open(bg, t.TempDir(), &index.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	st, err := memory.Open(bg, filepath.Join(t.TempDir(), "memories"), &memory.Options{Index: ix, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	Register(srv, st, opts)
	ct, stt := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(bg, stt, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(bg, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, st
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (map[string]any, string, bool) {
	t.Helper()
	res, err := cs.CallTool(bg, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &out)
	return out, res.Content[0].(*mcp.TextContent).Text, res.IsError
}

func TestRememberAndRecall(t *testing.T) {
	cs, st := connect(t, false)
	var names []string
	for tool, err := range cs.Tools(bg, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
		if tool.Name == ToolRemember {
			b, _ := json.Marshal(tool.InputSchema)
			if !strings.Contains(string(b), `"enum":["low","medium","high","critical"]`) || !strings.Contains(string(b), `"when_to_use"`) {
				t.Errorf("remember schema: %s", b)
			}
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{ToolRecallMemories, ToolRemember}) {
		t.Fatalf("tools %v", names)
	}
	out, text, isErr := call(t, cs, ToolRemember, map[string]any{
		"title": "Express middleware pattern", "content": "# Express middleware\n\nWrap in try/catch, return 401 on auth failure, call next().",
		"when_to_use": []string{"middleware|interceptor", "writing Express handlers"}, "tags": []string{"patterns"}, "importance": "high", "agent": "developer",
	})
	if isErr || out["slug"] != "express-middleware-pattern" || out["appended"] != false || !strings.Contains(text, "Saved memory") {
		t.Fatalf("remember: %v %q", out, text)
	}
	out, text, isErr = call(t, cs, ToolRecallMemories, map[string]any{"task": "Fix the Express handler for uploads", "agent": "developer"})
	if isErr {
		t.Fatalf("recall: %s", text)
	}
	ms := out["memories"].([]any)
	if len(ms) != 1 || ms[0].(map[string]any)["slug"] != "express-middleware-pattern" {
		t.Fatalf("recall: %v", out)
	}
	if !strings.HasPrefix(text, rag.UntrustedPrefix) || !strings.Contains(text, "### Express middleware pattern") || out["message"] != text {
		t.Errorf("recall text:\n%s", text)
	}
	if _, text, _ := call(t, cs, ToolRecallMemories, map[string]any{"task": "Add email notifications"}); text != "No memories match this task." {
		t.Errorf("no match: %q", text)
	}
	// Bad input is a tool error, not a protocol error; nothing is written.
	for _, args := range []map[string]any{
		{"title": "x", "content": "c", "when_to_use": []string{"a"}, "importance": "urgent"},
		{"title": " ", "content": "c", "when_to_use": []string{"a"}},
		{"title": "x", "content": "c", "when_to_use": []string{}},
	} {
		if _, text, isErr := call(t, cs, ToolRemember, args); !isErr {
			t.Errorf("%v accepted: %s", args, text)
		}
	}
	if ls, _ := st.List(bg); len(ls) != 1 {
		t.Errorf("%d memories", len(ls))
	}
}

func TestReadOnly(t *testing.T) {
	cs, _ := connect(t, true)
	for tool, err := range cs.Tools(bg, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name == ToolRemember {
			t.Error("remember offered read-only")
		}
	}
}

// With a chat model, extract_memory writes what the model proposes, says
// so, and refuses bad input as a tool error; without one, or read-only, it
// is not offered.
func TestExtractMemory(t *testing.T) {
	answer := `{"shouldCreateMemory":true,"reasoning":"an error and its cause","title":"Uploads time out behind the proxy","whenToUse":["upload|timeout"],"tags":["uploads"],"importance":"high","content":"# Uploads time out\n\nnginx cuts requests after 60 s.","duplicateOf":""}`
	chat := memtest.NewChat(t, func(int, map[string]any) (int, string) { return 200, answer })
	llm := chat.LLM()
	cs, st := connectWith(t, &Options{LLM: &llm, Logger: memtest.Quiet()})
	out, text, isErr := call(t, cs, ToolExtractMemory, map[string]any{"agent": "developer", "task": "Fix uploads", "agent_output": "proxy_read_timeout 60s"})
	if isErr || out["slug"] != "uploads-time-out-behind-the-proxy" || out["should_create_memory"] != true || !strings.HasPrefix(text, "Saved memory uploads-time-out-behind-the-proxy") {
		t.Fatalf("extract: %v %q", out, text)
	}
	if m, err := st.Get(bg, "uploads-time-out-behind-the-proxy"); err != nil || m.DiscoveredBy != "developer" {
		t.Fatalf("written memory: %+v, %v", m, err)
	}
	if _, text, isErr := call(t, cs, ToolExtractMemory, map[string]any{"agent": "a", "task": "t", "agent_output": "o", "result": "maybe"}); !isErr {
		t.Errorf("bad result accepted: %s", text)
	}
	if n := len(chat.Requests()); n != 1 {
		t.Errorf("%d model requests", n)
	}
	for _, o := range []*Options{{}, {ReadOnly: true, LLM: &llm}} {
		cs, _ := connectWith(t, o)
		for tool, err := range cs.Tools(bg, nil) {
			if err != nil {
				t.Fatal(err)
			}
			if tool.Name == ToolExtractMemory {
				t.Errorf("extract_memory offered with %+v", o)
			}
		}
	}
}
