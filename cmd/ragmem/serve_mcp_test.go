package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// headerRT adds headers to every request (the bearer token, a namespace).
type headerRT struct{ h map[string]string }

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func connectMCP(t *testing.T, s *served, headers map[string]string) (*mcp.ClientSession, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "serve-mcp-test", Version: "1"}, nil)
	return client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: s.base + "/mcp", HTTPClient: &http.Client{Transport: headerRT{headers}}, MaxRetries: -1,
	}, nil)
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestServeMCP starts `ragmem serve --mcp` and uses the go-sdk client over
// streamable HTTP: the token is required, tools work, and a namespace's MCP
// endpoint sees only that namespace's memory.
func TestServeMCP(t *testing.T) {
	s := startServe(t, t.TempDir(), "--mcp")
	defer s.stop()
	// The banner's last lines may still be on their way when serving starts.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(s.outText(), "/mcp"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("banner does not mention /mcp:\n%s", s.outText())
		}
	}
	if _, err := connectMCP(t, s, nil); err == nil {
		t.Fatal("MCP without the token connected")
	}
	ctx := context.Background()
	def, err := connectMCP(t, s, map[string]string{"Authorization": "Bearer " + s.token})
	if err != nil {
		t.Fatal(err)
	}
	defer def.Close()
	tools, err := def.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) < 8 {
		t.Fatalf("tools: %v %v", err, tools)
	}
	res, err := def.CallTool(ctx, &mcp.CallToolParams{Name: "index_text", Arguments: map[string]any{
		"text": "Axolotls regrow their limbs.", "url": "https://mcp.example/axolotl", "title": "Axolotl",
	}})
	if err != nil || res.IsError {
		t.Fatalf("index_text: %v %s", err, textOf(res))
	}
	res, err = def.CallTool(ctx, &mcp.CallToolParams{Name: "search_memory", Arguments: map[string]any{"query": "axolotls regrow limbs"}})
	if err != nil || res.IsError || !strings.Contains(textOf(res), "https://mcp.example/axolotl") {
		t.Fatalf("search_memory: %v %s", err, textOf(res))
	}
	// The page indexed over MCP is visible to the HTTP API of the same namespace.
	if r := s.call("POST", "/v1/search", jsonBody(t, map[string]any{"query": "axolotls regrow limbs"}), false); !strings.Contains(string(r.body), "mcp.example/axolotl") {
		t.Fatalf("HTTP search does not see the MCP write: %d %s", r.status, r.body)
	}
	// Another namespace sees nothing of it.
	other, err := connectMCP(t, s, map[string]string{"Authorization": "Bearer " + s.token, "X-Ragmem-Namespace": "team-b"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	res, err = other.CallTool(ctx, &mcp.CallToolParams{Name: "search_memory", Arguments: map[string]any{"query": "axolotls regrow limbs"}})
	if err != nil || res.IsError {
		t.Fatalf("search in namespace team-b: %v %s", err, textOf(res))
	}
	if strings.Contains(textOf(res), "mcp.example/axolotl") {
		t.Fatalf("namespace team-b sees the default namespace's memory: %s", textOf(res))
	}
}

// TestServeMemories checks /v1/memories behind the server's token, per
// namespace, and the memory tools over MCP on the same server.
func TestServeMemories(t *testing.T) {
	s := startServe(t, t.TempDir(), "--mcp")
	defer s.stop()
	if r := s.call("GET", "/v1/memories", nil, true); r.status != http.StatusUnauthorized {
		t.Fatalf("memories without a token: %d %s", r.status, r.body)
	}
	add := map[string]any{
		"title": "OAuth scopes must be narrow", "content": "# OAuth scopes\n\nRequesting all scopes got the app rejected.",
		"whenToUse": []string{"oauth|scope"}, "importance": "high", "discoveredBy": "developer",
	}
	if r := s.call("POST", "/v1/memories", jsonBody(t, add), false); r.status != http.StatusCreated && r.status != http.StatusOK {
		t.Fatalf("add memory: %d %s", r.status, r.body)
	}
	r := s.call("POST", "/v1/memories/match", jsonBody(t, map[string]any{"task": "Add OAuth login with Google", "agent": "developer"}), false)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), "OAuth scopes must be narrow") {
		t.Fatalf("match: %d %s", r.status, r.body)
	}
	r = s.call("GET", "/v1/memories", nil, false, "X-Ragmem-Namespace", "team-b")
	if r.status != http.StatusOK || strings.Contains(string(r.body), "OAuth scopes") {
		t.Fatalf("namespace team-b sees the default namespace's memories: %d %s", r.status, r.body)
	}
	sess, err := connectMCP(t, s, map[string]string{"Authorization": "Bearer " + s.token})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "recall_memories", Arguments: map[string]any{"task": "Implement OAuth login", "agent": "developer"}})
	if err != nil || res.IsError || !strings.Contains(textOf(res), "OAuth scopes must be narrow") {
		t.Fatalf("recall_memories over HTTP MCP: %v %s", err, textOf(res))
	}
}
