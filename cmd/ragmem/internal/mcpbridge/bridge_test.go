package mcpbridge

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// fakeConn records what the bridge writes to the MCP client.
type fakeConn struct {
	mu  sync.Mutex
	out []jsonrpc.Message
}

func (f *fakeConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
func (f *fakeConn) Write(_ context.Context, m jsonrpc.Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.out = append(f.out, m)
	return nil
}
func (f *fakeConn) Close() error      { return nil }
func (f *fakeConn) SessionID() string { return "" }

// TestBridgeResendsOnlySafeCalls: after the owner went away, the bridge
// sends again a call that never reached it, and a call that did only when
// repeating it is harmless (any method but tools/call, and tools the
// server marks read-only or idempotent); it answers the others with an
// error saying they may or may not have been done.
func TestBridgeResendsOnlySafeCalls(t *testing.T) {
	down := &fakeConn{}
	b := &bridge{down: down, inflight: map[jsonrpc.ID]*pendingCall{}, safeTools: map[string]bool{}, gen: 2}
	b.learnTools(json.RawMessage(`{"tools":[
		{"name":"search_memory","annotations":{"readOnlyHint":true}},
		{"name":"index_text","annotations":{"idempotentHint":true}},
		{"name":"add_preference","annotations":{"destructiveHint":false}},
		{"name":"remember"}]}`))
	call := func(id int64, method, tool string, delivered bool) {
		params := json.RawMessage(`{}`)
		if tool != "" {
			params = json.RawMessage(`{"name":"` + tool + `","arguments":{}}`)
		}
		jid, _ := jsonrpc.MakeID(float64(id))
		b.inflight[jid] = &pendingCall{req: &jsonrpc.Request{ID: jid, Method: method, Params: params}, since: time.Now(), delivered: delivered, gen: 1}
	}
	call(1, "tools/call", "search_memory", true)
	call(2, "tools/call", "index_text", true)
	call(3, "tools/call", "add_preference", true)
	call(4, "tools/call", "remember", true)
	call(5, "tools/call", "add_preference", false) // never reached the owner
	call(6, "tools/list", "", true)
	call(7, "tools/call", "unknown_tool", true)
	b.answerUnsafe(2)
	var answered []string
	for _, m := range down.out {
		r := m.(*jsonrpc.Response)
		if r.Error == nil || !strings.Contains(r.Error.Error(), "may or may not have been done") {
			t.Errorf("answer %+v", r)
		}
		answered = append(answered, strings.TrimPrefix(strings.Split(r.Error.Error(), "during ")[1], "the call of tool "))
	}
	want := map[string]bool{"add_preference; it may or may not have been done (check before calling it again)": true,
		"remember; it may or may not have been done (check before calling it again)": true, "unknown_tool; it may or may not have been done (check before calling it again)": true}
	if len(answered) != 3 {
		t.Fatalf("answered %v", answered)
	}
	for _, a := range answered {
		if !want[a] {
			t.Errorf("answered %q", a)
		}
	}
	if len(b.inflight) != 4 {
		t.Errorf("%d calls left to send again, want 4 (search_memory, index_text, the undelivered add_preference, tools/list)", len(b.inflight))
	}
}
