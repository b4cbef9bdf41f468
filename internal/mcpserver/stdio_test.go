package mcpserver

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

// TestStdioSurvivesMalformedFrames: over stdio, a line that is not JSON
// (or is too long) is answered with a JSON-RPC parse error and the session
// goes on; the go-sdk's own stdio transport ended the session (and the
// process) at the first such line.
func TestStdioSurvivesMalformedFrames(t *testing.T) {
	srv := New(newEngine(t), &Options{Logger: quiet()})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- srv.Run(bg, &StdioTransport{Reader: inR, Writer: outW, MaxLineBytes: 1 << 10}) }()
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	type reply struct {
		ID    any `json:"id"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		Result json.RawMessage `json:"result"`
	}
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatalf("write %.40q: %v", line, err)
		}
	}
	recv := func() reply {
		t.Helper()
		got := make(chan reply, 1)
		go func() {
			var r reply
			if lines.Scan() {
				_ = json.Unmarshal(lines.Bytes(), &r)
			}
			got <- r
		}()
		select {
		case r := <-got:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("no answer")
		}
		return reply{}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if r := recv(); r.Error != nil || r.Result == nil {
		t.Fatalf("initialize: %+v", r)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	id := 2
	for _, bad := range []string{
		`{not json}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/list"}{"jsonrpc":"2.0","id":10,"method":"tools/list"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"tools/list\",\"params\":{\"x\":\"\xff\"}}",
		`{"jsonrpc":"2.0","id":12,"method":"tools/list","params":{"x":"` + strings.Repeat("a", 2<<10) + `"}}`,
		`{"jsonrpc":"2.0","id":13,"method":"tools/list"`,
	} {
		send(bad)
		if r := recv(); r.Error == nil || r.Error.Code != -32700 || r.ID != nil {
			t.Fatalf("%.50q: answer %+v, want a parse error with a null id", bad, r)
		}
		send("") // blank lines are skipped
		send(`{"jsonrpc":"2.0","id":` + strings.Repeat(" ", 1) + itoa(id) + `,"method":"tools/list"}`)
		if r := recv(); r.Error != nil || !strings.Contains(string(r.Result), "search_memory") {
			t.Fatalf("after %.50q: tools/list answered %+v", bad, r)
		}
		id++
	}
	// JSON that is no JSON-RPC message, and batches (not allowed since
	// 2025-06-18): an invalid-request error, with the id when it has one.
	for bad, wantID := range map[string]any{
		`[{"jsonrpc":"2.0","id":20,"method":"tools/list"}]`: nil,
		`[]`: nil,
		`{"jsonrpc":"1.0","id":21,"method":"tools/list"}`:      float64(21),
		`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`: nil,
		`{}`:                                    nil,
		`"text"`:                                nil,
		`{"jsonrpc":"2.0","id":"s","method":7}`: "s",
	} {
		send(bad)
		if r := recv(); r.Error == nil || r.Error.Code != -32600 || r.ID != wantID {
			t.Fatalf("%.50q: answer %+v, want an invalid-request error with id %v", bad, r, wantID)
		}
		send(`{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"tools/list"}`)
		if r := recv(); r.Error != nil || !strings.Contains(string(r.Result), "search_memory") {
			t.Fatalf("after %.50q: tools/list answered %+v", bad, r)
		}
		id++
	}
	inW.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not end with its input")
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
