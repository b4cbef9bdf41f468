package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
)

// localPair serves one server on a TCP listener and on a local (Unix
// socket) listener, and returns clients for both.
func localPair(t *testing.T, opts *server.Options) (srv *server.Server, tcpURL string, tcp, local *http.Client, token string) {
	t.Helper()
	dir := t.TempDir()
	tok, _, err := server.EnsureToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	srv, err = server.New(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "s.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- srv.Serve(ctx, server.Listener{Listener: tl}, server.Listener{Listener: ul, Local: true})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	local = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	return srv, "http://" + tl.Addr().String(), &http.Client{}, local, tok
}

func send(t *testing.T, c *http.Client, method, url, token string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestLocalListener checks what a local listener changes: the same
// authentication, but no rate limit, a larger body limit, and the routes
// registered with HandleLocal, which do not exist on TCP.
func TestLocalListener(t *testing.T) {
	srv, tcpURL, tcp, local, tok := localPair(t, &server.Options{RateLimit: 1, RateBurst: 2, MaxBodyBytes: 1 << 10, LocalMaxBodyBytes: 1 << 20})
	if err := srv.HandleLocal("GET /v1/owner", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !server.IsLocal(r) {
			t.Error("a local route served a request that is not local")
		}
		w.Write([]byte(`{"ok":true}`))
	})); err != nil {
		t.Fatal(err)
	}
	const lurl = "http://localhost"

	// Authentication is the same on both.
	if code, _ := send(t, local, "GET", lurl+"/v1/stats", "wrong", nil); code != http.StatusUnauthorized {
		t.Errorf("local listener without a valid token: %d", code)
	}
	// Local routes: found on the socket, unknown on TCP (with or without a token).
	if code, b := send(t, local, "GET", lurl+"/v1/owner", tok, nil); code != 200 || !strings.Contains(string(b), "ok") {
		t.Errorf("local route on the socket: %d %s", code, b)
	}
	if code, _ := send(t, tcp, "GET", tcpURL+"/v1/owner", tok, nil); code != http.StatusNotFound {
		t.Errorf("local route on TCP: %d, want 404", code)
	}
	if code, _ := send(t, tcp, "GET", tcpURL+"/v1/owner", "", nil); code != http.StatusUnauthorized {
		t.Errorf("local route on TCP without a token: %d, want 401 like any unknown /v1 route", code)
	}
	// No rate limit on the socket, nor are its requests counted against
	// the token's; TCP is limited (burst 2).
	for i := range 20 {
		if code, _ := send(t, local, "GET", lurl+"/v1/stats", tok, nil); code != 200 {
			t.Fatalf("local request %d: %d", i, code)
		}
	}
	if code, _ := send(t, tcp, "GET", tcpURL+"/v1/stats", tok, nil); code != 200 {
		t.Errorf("the first TCP request after 20 local ones: %d", code)
	}
	limited := false
	for range 5 {
		if code, _ := send(t, tcp, "GET", tcpURL+"/v1/stats", tok, nil); code == http.StatusTooManyRequests {
			limited = true
		}
	}
	if !limited {
		t.Error("TCP requests were not rate limited")
	}
	// Body limits: 1 KiB on TCP, 1 MiB on the socket.
	big := map[string]any{"documents": []map[string]any{{"url": "file:///big.txt", "content": strings.Repeat("word ", 2000)}}}
	if code, b := send(t, local, "POST", lurl+"/v1/documents", tok, big); code != 200 {
		t.Errorf("10 KB document on the socket: %d %s", code, b)
	}
	time.Sleep(1100 * time.Millisecond) // let the TCP bucket refill a token
	if code, _ := send(t, tcp, "POST", tcpURL+"/v1/documents", tok, big); code != http.StatusRequestEntityTooLarge {
		t.Errorf("10 KB document on TCP: %d, want 413", code)
	}
}

// TestDocumentsAndSources covers POST /v1/documents (synchronous, any
// format, one result per document; memories and preferences refused), the
// chunk fields a client needs to rebuild records, DELETE /v1/sources and
// the context overrides.
func TestDocumentsAndSources(t *testing.T) {
	ts := newTestServer(t, nil)
	docs := map[string]any{"documents": []map[string]any{
		{"url": "file:///notes/otters.md", "title": "Otters", "content": "# Otters\n\nOtters hold hands while they sleep.", "format": "markdown"},
		{"url": "memo://tapirs", "content": "Tapirs snorkel with their noses.", "type": "knowledge"},
		{"url": "file:///page.html", "content": "<html><head><title>Zebras</title></head><body><p>Zebras have stripes.</p></body></html>", "format": "html"},
	}}
	var out rag.DocumentsJSON
	ts.must(200, "POST", "/v1/documents", docs).json(t, &out)
	if len(out.Results) != 3 {
		t.Fatalf("results %+v", out)
	}
	for i, r := range out.Results {
		if r.Error != "" || r.Chunks < 1 || r.ContentHash == "" || r.Unchanged {
			t.Errorf("result %d: %+v", i, r)
		}
	}
	// The same again: unchanged, nothing written.
	ts.must(200, "POST", "/v1/documents", docs).json(t, &out)
	for i, r := range out.Results {
		if !r.Unchanged {
			t.Errorf("second time, result %d: %+v", i, r)
		}
	}
	// Search returns offsets and the content hash.
	var sr rag.SearchJSON
	ts.must(200, "POST", "/v1/search", map[string]any{"query": "otters sleep"}).json(t, &sr)
	if len(sr.Results) == 0 || sr.Results[0].URL != "file:///notes/otters.md" || sr.Results[0].ContentHash != out.Results[0].ContentHash || sr.Results[0].End <= sr.Results[0].Start {
		t.Fatalf("search %+v", sr)
	}
	var srcs rag.SourcesJSON
	ts.must(200, "GET", "/v1/sources?type=knowledge,memory", nil).json(t, &srcs)
	if srcs.Total != 3 || srcs.Sources[0].ContentHash == "" {
		t.Fatalf("sources %+v", srcs)
	}
	// Bad documents fail the whole request, naming the field.
	for _, bad := range []map[string]any{
		{"documents": []map[string]any{}},
		{"documents": []map[string]any{{"url": "", "content": "x"}}},
		{"documents": []map[string]any{{"url": "a\nb", "content": "x"}}},
		{"documents": []map[string]any{{"url": "x", "content": "x", "type": "note"}}},
		{"documents": []map[string]any{{"url": "x", "content": "x", "format": "pdf"}}},
	} {
		r := ts.must(400, "POST", "/v1/documents", bad)
		if !strings.Contains(string(r.body), "documents") {
			t.Errorf("%v: %s", bad, r.body)
		}
	}
	// Memories and preferences are written through their own APIs: the
	// whole request is refused (403 reserved), nothing written.
	for _, bad := range []map[string]any{
		{"url": "x", "content": "x", "type": "memory"},
		{"url": "x", "content": "x", "type": "preference"},
		{"url": "x", "content": "x", "attrs": map[string]string{"memorySlug": "flaky-tests"}},
		{"url": "preference://user", "content": "x"},
	} {
		r := ts.must(403, "POST", "/v1/documents", map[string]any{"documents": []map[string]any{{"url": "file:///ok.md", "content": "fine"}, bad}})
		if r.errCode() != server.CodeReserved {
			t.Errorf("%v: %s", bad, r.body)
		}
	}
	ts.must(404, "DELETE", "/v1/sources?url=file:///ok.md", nil)
	// DELETE /v1/sources removes any source but the stores'.
	ts.must(403, "DELETE", "/v1/sources?url=preference://user", nil)
	var del struct{ Removed int }
	ts.must(200, "DELETE", "/v1/sources?url=memo://tapirs", nil).json(t, &del)
	if del.Removed != 1 {
		t.Errorf("removed %d", del.Removed)
	}
	ts.must(404, "DELETE", "/v1/sources?url=memo://tapirs", nil)
	// A source name need not be a URL (the CLI names stdin as --url says).
	ts.must(200, "POST", "/v1/documents", map[string]any{"documents": []map[string]any{{"url": "notes-without-scheme", "content": "Quokkas smile."}}})
	ts.must(200, "DELETE", "/v1/sources?url=notes-without-scheme", nil)

	// Context overrides: topK 1 keeps one source; a tiny knowledge budget
	// keeps it small; a bad mode is refused.
	var c rag.ContextJSON
	ts.must(200, "POST", "/v1/context", map[string]any{"query": "otters zebras stripes sleep", "topK": 1, "mode": "fulltext"}).json(t, &c)
	if len(c.Sources) != 1 || c.Found != 1 {
		t.Errorf("topK 1: %d sources, %d found", len(c.Sources), c.Found)
	}
	ts.must(200, "POST", "/v1/context", map[string]any{"query": "otters zebras stripes sleep", "knowledgeBudget": 30}).json(t, &c)
	if c.Budgets.KnowledgeBudget != 30 {
		t.Errorf("knowledge budget %d, want 30", c.Budgets.KnowledgeBudget)
	}
	ts.must(400, "POST", "/v1/context", map[string]any{"query": "x", "mode": "psychic"})
	ts.must(400, "POST", "/v1/context", map[string]any{"query": "x", "topK": 1000})
}
