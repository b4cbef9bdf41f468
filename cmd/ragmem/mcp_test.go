package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPStdio builds the binary, starts `ragmem mcp` as an MCP client
// would, lists the tools and calls each one through the go-sdk client.
func TestMCPStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "ragmem")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	stopOwnerAtEnd(t, dir) // the background owner ragmem mcp starts
	mustRun(t, "--dir", dir, "prefs", "add", "style", "Prefers short answers")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.Command(bin, "--dir", dir, "mcp")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "ragmem-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	defer func() {
		if err := cs.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
			t.Errorf("ragmem mcp did not exit cleanly: %v\n%s", cmd.ProcessState, stderr.String())
		}
	}()

	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	want := []string{"add_preference", "cite_memories", "find_memories", "forget_source", "forget_sources", "get_context", "index_text", "list_preferences", "list_sources", "memory_stats", "recall_memories", "remember", "remove_preference", "search_memory", "set_source_attrs", "supersede_memory"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	callTool := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.IsError {
			t.Fatalf("%s failed: %+v", name, res.Content[0].(*mcp.TextContent).Text)
		}
		var out map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &out)
		return out
	}

	ix := callTool("index_text", map[string]any{"text": "# Axolotls\n\nAxolotls regrow lost limbs within weeks.", "url": "https://pond.example/axolotl", "title": "Axolotls", "format": "markdown"})
	if ix["url"] != "https://pond.example/axolotl" || ix["chunks"].(float64) < 1 {
		t.Errorf("index_text %v", ix)
	}
	sr := callTool("search_memory", map[string]any{"query": "axolotl limbs"})
	if rs, _ := sr["results"].([]any); len(rs) == 0 || rs[0].(map[string]any)["url"] != "https://pond.example/axolotl" {
		t.Errorf("search_memory %v", sr)
	}
	co := callTool("get_context", map[string]any{"query": "how do axolotls heal", "model": "gpt-4o-mini"})
	if msg, _ := co["message"].(map[string]any)["content"].(string); !strings.Contains(msg, "<knowledge_context>") || !strings.Contains(msg, "Prefers short answers") || !strings.Contains(msg, "pond.example") {
		t.Errorf("get_context %v", co)
	}
	if ls := callTool("list_sources", nil); ls["total"].(float64) != 1 {
		t.Errorf("list_sources %v", ls)
	}
	p := callTool("add_preference", map[string]any{"type": "domain", "content": "Works on amphibian conservation"})
	if pl := callTool("list_preferences", nil); len(pl["preferences"].([]any)) != 2 {
		t.Errorf("list_preferences %v", pl)
	}
	if rp := callTool("remove_preference", map[string]any{"id": p["id"]}); rp["removed"] != true {
		t.Errorf("remove_preference %v", rp)
	}
	if fo := callTool("forget_source", map[string]any{"url": "https://pond.example/axolotl"}); fo["removed"].(float64) < 1 {
		t.Errorf("forget_source %v", fo)
	}
	if ls := callTool("list_sources", nil); ls["total"].(float64) != 0 {
		t.Errorf("after forget_source: %v", ls)
	}
}
