package memmcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/internal/memory"
	"github.com/ragmem/ragmem/internal/memory/internal/memtest"
	"github.com/ragmem/ragmem/rag"
)

var bg = context.Background()

func connect(t *testing.T, readOnly bool) (*mcp.ClientSession, *memory.Store) {
	return connectWith(t, &Options{ReadOnly: readOnly})
}

func connectWith(t *testing.T, opts *Options) (*mcp.ClientSession, *memory.Store) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ix, err := engine.Open(bg, t.TempDir(), &engine.Options{Logger: quiet})
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
			if !strings.Contains(string(b), `"enum":["low","medium","high","critical"]`) || !strings.Contains(string(b), `"whenToUse"`) {
				t.Errorf("remember schema: %s", b)
			}
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{ToolCiteMemories, ToolFindMemories, ToolMemoryStats, ToolRecallMemories, ToolRemember, ToolSupersedeMemory}) {
		t.Fatalf("tools %v", names)
	}
	out, text, isErr := call(t, cs, ToolRemember, map[string]any{
		"title": "Express middleware pattern", "content": "# Express middleware\n\nWrap in try/catch, return 401 on auth failure, call next().",
		"whenToUse": []string{"middleware|interceptor", "writing Express handlers"}, "tags": []string{"patterns"}, "importance": "high", "agent": "developer",
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
		{"title": "x", "content": "c", "whenToUse": []string{"a"}, "importance": "urgent"},
		{"title": " ", "content": "c", "whenToUse": []string{"a"}},
		{"title": "x", "content": "c", "whenToUse": []string{}},
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
		if tool.Name == ToolRemember || tool.Name == ToolCiteMemories || tool.Name == ToolSupersedeMemory {
			t.Errorf("%s offered read-only", tool.Name)
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
	out, text, isErr := call(t, cs, ToolExtractMemory, map[string]any{"agent": "developer", "task": "Fix uploads", "agentOutput": "proxy_read_timeout 60s"})
	if isErr || out["slug"] != "uploads-time-out-behind-the-proxy" || out["shouldCreateMemory"] != true || !strings.HasPrefix(text, "Saved memory uploads-time-out-behind-the-proxy") {
		t.Fatalf("extract: %v %q", out, text)
	}
	if m, err := st.Get(bg, "uploads-time-out-behind-the-proxy"); err != nil || m.DiscoveredBy != "developer" {
		t.Fatalf("written memory: %+v, %v", m, err)
	}
	if _, text, isErr := call(t, cs, ToolExtractMemory, map[string]any{"agent": "a", "task": "t", "agentOutput": "o", "result": "maybe"}); !isErr {
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

// Memory over time through the tools: a restatement is merged, a
// conflicting value flagged and then superseded, find_memories and
// recall_memories filter by time and history, cite_memories feeds the
// counts memory_stats shows.
func TestHistoryTools(t *testing.T) {
	cs, _ := connect(t, false)
	out, text, isErr := call(t, cs, ToolRemember, map[string]any{"title": "Search indexes nightly", "content": "The search service rebuilds its index every night at 02:00.",
		"whenToUse": []string{"search|index"}, "occurredAt": "2025-05-04"})
	if isErr || out["slug"] != "search-indexes-nightly" {
		t.Fatalf("remember: %v %s", out, text)
	}
	out, text, isErr = call(t, cs, ToolRemember, map[string]any{"title": "Nightly index rebuild", "content": "Every night at 02:00 the search service rebuilds its index.",
		"whenToUse": []string{"search|index"}})
	if isErr || out["consolidatedInto"] != "search-indexes-nightly" || !strings.HasPrefix(text, "Already known: merged into memory search-indexes-nightly") {
		t.Fatalf("restatement: %v %s", out, text)
	}
	out, text, isErr = call(t, cs, ToolRemember, map[string]any{"title": "Index rebuild time", "content": "The search service rebuilds its index every night at 04:30.",
		"whenToUse": []string{"search|index"}})
	if isErr || fmt.Sprint(out["conflicts"]) != "[search-indexes-nightly]" || !strings.Contains(text, "may contradict search-indexes-nightly") {
		t.Fatalf("conflict: %v %s", out, text)
	}
	if _, text, isErr := call(t, cs, ToolSupersedeMemory, map[string]any{"newer": "index-rebuild-time", "older": "search-indexes-nightly", "provenance": "cron checked"}); isErr {
		t.Fatal(text)
	}
	out, _, _ = call(t, cs, ToolFindMemories, map[string]any{"query": "search index rebuild"})
	if ms := out["memories"].([]any); len(ms) != 1 || ms[0].(map[string]any)["slug"] != "index-rebuild-time" {
		t.Fatalf("find: %v", out)
	}
	out, text, _ = call(t, cs, ToolFindMemories, map[string]any{"query": "search index rebuild", "when": "in May 2025"})
	if ms := out["memories"].([]any); len(ms) != 1 || ms[0].(map[string]any)["supersededBy"] != "index-rebuild-time" || !strings.Contains(text, "superseded on") {
		t.Fatalf("find in May: %v %s", out, text)
	}
	out, text, _ = call(t, cs, ToolRecallMemories, map[string]any{"task": "change the search index schedule", "includeSuperseded": true})
	if ms := out["memories"].([]any); len(ms) != 2 || !strings.Contains(text, "Changed on") {
		t.Fatalf("recall with history: %v\n%s", out, text)
	}
	if _, text, isErr := call(t, cs, ToolRecallMemories, map[string]any{"task": "x", "when": "the day after never"}); !isErr {
		t.Errorf("bad time accepted: %s", text)
	}
	out, _, isErr = call(t, cs, ToolCiteMemories, map[string]any{"answer": "At 04:30 [memory:index-rebuild-time]."})
	if isErr || fmt.Sprint(out["cited"]) != "[index-rebuild-time]" {
		t.Fatalf("cite: %v", out)
	}
	out, text, _ = call(t, cs, ToolMemoryStats, map[string]any{})
	if out["citations"].(float64) != 1 || out["injections"].(float64) != 2 || out["superseded"].(float64) != 1 {
		t.Fatalf("stats: %v %s", out, text)
	}
}

// TestToolArgumentsAreCamelCase: the memory tools' arguments and results
// are named as every other surface names its JSON (camelCase: whenToUse,
// agentTags), never snake_case.
func TestToolArgumentsAreCamelCase(t *testing.T) {
	cs, _ := connect(t, false)
	n := 0
	for tool, err := range cs.Tools(bg, nil) {
		if err != nil {
			t.Fatal(err)
		}
		for _, schema := range []any{tool.InputSchema, tool.OutputSchema} {
			b, _ := json.Marshal(schema)
			var s struct {
				Properties map[string]json.RawMessage `json:"properties"`
			}
			_ = json.Unmarshal(b, &s)
			for name := range s.Properties {
				n++
				if strings.Contains(name, "_") {
					t.Errorf("%s: property %q is not camelCase", tool.Name, name)
				}
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d properties seen", n)
	}
	// The camelCase name is the one taken; the snake_case one is refused.
	if _, msg, isErr := call(t, cs, ToolRemember, map[string]any{"title": "Use WAL mode", "content": "# Use WAL mode\n\nSQLite in WAL mode lets readers run during writes.", "whenToUse": []string{"sqlite|wal"}}); isErr {
		t.Errorf("remember with whenToUse: %s", msg)
	}
	if _, _, isErr := call(t, cs, ToolRemember, map[string]any{"title": "Use WAL", "content": "x", "when_to_use": []string{"sqlite"}}); !isErr {
		t.Error("remember with when_to_use was accepted")
	}
}
