package agent

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
)

// dialServer serves a fresh data directory with the real HTTP server on a
// loopback port and returns a rag.Client of it: the memory over the wire.
func dialServer(t *testing.T) *rag.Client {
	t.Helper()
	dir := t.TempDir()
	tok, _, err := server.EnsureToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(bg, dir, &server.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, server.Listener{Listener: ln, Local: true}) }()
	c, err := rag.Dial("http://"+ln.Addr().String(), tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Close()
		cancel()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
		if err := srv.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return c
}

// The loop takes any rag.Memory: over a client of a served directory it
// sends the knowledge context, runs the memory tools and queues the page,
// all through the contract.
func TestRunOverTheWire(t *testing.T) {
	c := dialServer(t)
	if _, err := c.Index(bg, rag.DocumentsRequest{Documents: []rag.DocumentRequest{
		{URL: rrfURL, Title: "Reciprocal Rank Fusion", Content: rrfText},
		{URL: goURL, Title: "Goroutines", Content: goText},
	}}); err != nil {
		t.Fatal(err)
	}
	f := newFakeLLM(t, func(n int, req capturedRequest) reply {
		if n == 0 {
			return reply{toolCalls: []toolReply{
				{"call_a", toolSearchMemory, `{"query":"goroutines"}`},
				{"call_b", toolRememberPreference, `{"type":"style","content":"User prefers short answers"}`},
			}}
		}
		return reply{content: "RRF sums reciprocal ranks [1]."}
	})
	page := &Page{URL: "https://blog.example/fusion", Title: "Fusion", Content: "Hybrid search fuses two rankings. It works well."}
	res, err := Run(bg, "How does reciprocal rank fusion work?", Config{LLM: f.llm("gpt-4o"), Memory: c, Logger: quiet(), Page: page})
	if err != nil {
		t.Fatal(err)
	}
	ms := f.requests()[0].messages()
	if len(ms) != 3 || !strings.Contains(str(ms[1], "content"), rrfURL) {
		t.Fatalf("%d messages; want the knowledge context, naming %s, second", len(ms), rrfURL)
	}
	if res.Context == nil || res.Context.Message.Content != str(ms[1], "content") || res.Budgets.KnowledgeBudget == 0 {
		t.Errorf("result context %+v, budgets %+v", res.Context, res.Budgets)
	}
	if len(res.ToolCalls) != 2 || res.ToolCalls[0].Err != "" || !strings.Contains(res.ToolCalls[0].Result, goURL) || res.ToolCalls[1].Err != "" {
		t.Fatalf("tool calls %+v", res.ToolCalls)
	}
	ps, err := c.Preferences(bg)
	if err != nil || len(ps) != 1 || ps[0].Content != "User prefers short answers" {
		t.Errorf("preferences %+v, %v", ps, err)
	}
	if res.IndexJob == "" {
		t.Fatalf("page not queued: %v", res.Warnings)
	}
	if _, err := c.Job(bg, res.IndexJob); err != nil {
		t.Errorf("job %s: %v", res.IndexJob, err)
	}
}
