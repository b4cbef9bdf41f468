package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ragmem/ragmem/rag"
)

var bg = context.Background()

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newEngine(t *testing.T) *rag.Engine {
	t.Helper()
	e, err := rag.Open(bg, t.TempDir(), &rag.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// connect returns a client session to srv over in-memory transports.
func connect(t *testing.T, srv *Server) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(bg, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(bg, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and decodes its structured output into out (if non-nil).
// It returns the text content and whether the result is an error.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(bg, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if out != nil && !res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: structured output %s: %v", name, b, err)
		}
	}
	return text.String(), res.IsError
}

var allTools = []string{toolAddPreference, toolForgetSource, toolForgetSources, toolGetContext, toolIndexText, toolListPreferences, toolListSources, toolRemovePreference, toolSearchMemory, toolSetSourceAttrs}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(bg, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Description == "" || tool.InputSchema == nil {
			t.Errorf("tool %s lacks a description or input schema", tool.Name)
		}
		// Every filter argument is described by the one filterSyntax.
		b, _ := json.Marshal(tool.InputSchema)
		if strings.Contains(string(b), `"filter"`) && !strings.Contains(string(b), "TIME (2025-01-31, now-7d), combined with AND, OR, NOT") {
			t.Errorf("tool %s: its filter is not described by filterSyntax: %s", tool.Name, b)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// exercise calls every tool once with sensible arguments and checks the
// answers. It is shared by the in-memory and the HTTP tests.
func exercise(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	if got := toolNames(t, cs); !slices.Equal(got, allTools) {
		t.Fatalf("tools %v, want %v", got, allTools)
	}
	if ins := cs.InitializeResult().Instructions; !strings.Contains(ins, "untrusted") {
		t.Errorf("instructions %q", ins)
	}

	var ix indexOutput
	page := `<html><head><title>Otters</title></head><body><nav>Home | About</nav><article><h1>Otters</h1><p>Sea otters hold hands while they sleep so they do not drift apart.</p></article></body></html>`
	if txt, isErr := call(t, cs, toolIndexText, map[string]any{"text": page, "url": "https://zoo.example/otters", "format": "html"}, &ix); isErr {
		t.Fatalf("index_text: %s", txt)
	}
	if ix.SourceURL != "https://zoo.example/otters" || ix.Chunks == 0 || ix.Unchanged {
		t.Errorf("index_text %+v", ix)
	}
	var again indexOutput
	call(t, cs, toolIndexText, map[string]any{"text": page, "url": "https://zoo.example/otters", "format": "html"}, &again)
	if !again.Unchanged {
		t.Errorf("re-indexing the same page: %+v", again)
	}
	var note indexOutput
	call(t, cs, toolIndexText, map[string]any{"text": "Remember: the quetzal service listens on port 7437."}, &note)
	if !strings.HasPrefix(note.SourceURL, "text://sha256/") || note.Chunks != 1 {
		t.Errorf("note %+v", note)
	}

	var sr searchOutput
	txt, isErr := call(t, cs, toolSearchMemory, map[string]any{"query": "why do otters hold hands", "topK": 3}, &sr)
	if isErr || len(sr.Results) == 0 || sr.Results[0].URL != "https://zoo.example/otters" || sr.Results[0].Title != "Otters" {
		t.Fatalf("search_memory: %s %+v", txt, sr)
	}
	if !strings.HasPrefix(txt, rag.UntrustedPrefix) || strings.Contains(txt, "Home | About") {
		t.Errorf("search text %q", txt)
	}

	var pref struct{ ID, Type, Content string }
	if txt, isErr := call(t, cs, toolAddPreference, map[string]any{"type": "expertise", "content": "User is a marine biologist"}, &pref); isErr || pref.ID == "" || pref.Type != "expertise" {
		t.Fatalf("add_preference: %s %+v", txt, pref)
	}
	var pl preferencesOutput
	call(t, cs, toolListPreferences, map[string]any{}, &pl)
	if len(pl.Preferences) != 1 || pl.Preferences[0].ID != pref.ID {
		t.Errorf("list_preferences %+v", pl)
	}

	var co contextOutput
	txt, isErr = call(t, cs, toolGetContext, map[string]any{"query": "otters sleeping", "model": "gpt-4o", "modelContextLimit": 8000}, &co)
	if isErr || !strings.HasPrefix(co.Message.Content, rag.UntrustedPrefix+"\n<knowledge_context>") || co.Message.Content != txt || co.Message.Role != "assistant" ||
		!strings.Contains(co.Message.Content, "marine biologist") || !strings.Contains(co.Message.Content, "https://zoo.example/otters") ||
		co.Tokens.Knowledge > co.Budgets.KnowledgeBudget || co.ReferenceRule != rag.ReferenceRule || len(co.Sources) == 0 {
		t.Errorf("get_context: %s\n%+v", txt, co)
	}

	var ls listSourcesOutput
	call(t, cs, toolListSources, map[string]any{"limit": 10}, &ls)
	if ls.Total != 2 || len(ls.Sources) != 2 {
		t.Errorf("list_sources %+v", ls)
	}

	var fo forgetOutput
	if txt, isErr := call(t, cs, toolForgetSource, map[string]any{"url": "https://zoo.example/otters"}, &fo); isErr || fo.RemovedChunks != ix.Chunks {
		t.Errorf("forget_source: %s %+v", txt, fo)
	}
	call(t, cs, toolSearchMemory, map[string]any{"query": "otters hold hands", "mode": "fulltext"}, &sr)
	for _, r := range sr.Results {
		if r.URL == "https://zoo.example/otters" {
			t.Error("forgotten source still found")
		}
	}

	var rp removePreferenceOutput
	if txt, isErr := call(t, cs, toolRemovePreference, map[string]any{"id": pref.ID}, &rp); isErr || !rp.Removed {
		t.Errorf("remove_preference: %s", txt)
	}
	call(t, cs, toolListPreferences, map[string]any{}, &pl)
	if len(pl.Preferences) != 0 {
		t.Errorf("preference not removed: %+v", pl)
	}
}

func TestToolsInMemory(t *testing.T) {
	exercise(t, connect(t, New(newEngine(t), &Options{Logger: quiet()})))
}

func TestToolErrorsAreClear(t *testing.T) {
	cs := connect(t, New(newEngine(t), &Options{Logger: quiet(), MaxTextBytes: 100}))
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{toolSearchMemory, map[string]any{"query": "  "}, "query is empty"},
		{toolSearchMemory, map[string]any{"query": strings.Repeat("x", 9000)}, "longer than"},
		{toolSearchMemory, map[string]any{"query": "x", "mode": "psychic"}, "mode"},
		{toolSearchMemory, map[string]any{}, "query"},
		{toolIndexText, map[string]any{"text": strings.Repeat("long ", 30)}, "more than the 100 allowed"},
		{toolIndexText, map[string]any{"text": " \n "}, "text is empty"},
		{toolIndexText, map[string]any{"text": "x", "format": "pdf"}, "format"},
		{toolIndexText, map[string]any{"text": "x", "url": "preference://user"}, "reserved"},
		{toolForgetSource, map[string]any{"url": "https://never.example"}, "no page https://never.example in the memory"},
		{toolForgetSource, map[string]any{"url": "preference://user"}, "remove_preference"},
		{toolAddPreference, map[string]any{"type": "mood", "content": "x"}, "type"},
		{toolAddPreference, map[string]any{"type": "style", "content": "\u200b \x01"}, "empty"},
		{toolRemovePreference, map[string]any{"id": "pref_nope"}, "no preference"},
		{toolListSources, map[string]any{"types": []string{"secrets"}}, "types"},
		{toolGetContext, map[string]any{"query": "x", "modelContextLimit": -5}, "modelContextLimit"},
	}
	for _, c := range cases {
		txt, isErr := call(t, cs, c.tool, c.args, nil)
		if !isErr || !strings.Contains(txt, c.want) {
			t.Errorf("%s %v: error=%v %q, want an error mentioning %q", c.tool, c.args, isErr, txt, c.want)
		}
	}
	// Invalid UTF-8 is repaired, not refused.
	if txt, isErr := call(t, cs, toolIndexText, map[string]any{"text": "caf\xe9 au lait", "url": "https://x.example/\xff"}, nil); isErr {
		t.Errorf("invalid UTF-8: %s", txt)
	}
}

func TestReadOnly(t *testing.T) {
	cs := connect(t, New(newEngine(t), &Options{Logger: quiet(), ReadOnly: true}))
	want := []string{toolGetContext, toolListPreferences, toolListSources, toolSearchMemory}
	if got := toolNames(t, cs); !slices.Equal(got, want) {
		t.Errorf("read-only tools %v, want %v", got, want)
	}
}

func TestExtraToolsRegister(t *testing.T) {
	srv := New(newEngine(t), &Options{Logger: quiet()})
	type in struct {
		Text string `json:"text" jsonschema:"what to echo"`
	}
	type out struct {
		Echo string `json:"echo"`
	}
	mcp.AddTool(srv.MCP(), &mcp.Tool{Name: "echo", Description: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, i in) (*mcp.CallToolResult, out, error) {
		return nil, out{Echo: i.Text}, nil
	})
	cs := connect(t, srv)
	var o out
	if _, isErr := call(t, cs, "echo", map[string]any{"text": "hi"}, &o); isErr || o.Echo != "hi" {
		t.Errorf("echo %+v", o)
	}
	if n := len(toolNames(t, cs)); n != len(allTools)+1 {
		t.Errorf("%d tools", n)
	}
}

func TestHTTPHandler(t *testing.T) {
	srv := New(newEngine(t), &Options{Logger: quiet()})
	const token = "s3cret"
	// The HTTP server mounts the handler behind its own authentication;
	// this stands in for it.
	mux := http.NewServeMux()
	mux.Handle("/mcp", requireToken(token, srv.HTTPHandler(nil)))
	hs := httptest.NewServer(mux)
	defer hs.Close()

	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	exercise(t, cs)

	if _, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp", MaxRetries: -1}, nil); err == nil {
		t.Error("connected without the token")
	}
	// DNS rebinding: a loopback request naming another host is refused.
	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`))
	req.Host = "evil.example"
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host: status %d, want 403", resp.StatusCode)
	}
}

func requireToken(token string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
