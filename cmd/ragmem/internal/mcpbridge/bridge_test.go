package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os/exec"
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

// fakeOwner is an upstream connection that answers initialize and
// tools/list as the owner's MCP endpoint does, on the bridge's events of
// generation gen, and records every message the bridge writes to it.
type fakeOwner struct {
	b   *bridge
	gen int
	mu  sync.Mutex
	in  []jsonrpc.Message
}

func (f *fakeOwner) Read(ctx context.Context) (jsonrpc.Message, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
func (f *fakeOwner) Write(_ context.Context, m jsonrpc.Message) error {
	f.mu.Lock()
	f.in = append(f.in, m)
	f.mu.Unlock()
	req, ok := m.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return nil
	}
	var result string
	switch req.Method {
	case "initialize":
		result = `{"protocolVersion":"2025-06-18","serverInfo":{"name":"ragmem","version":"t"},"capabilities":{"tools":{}}}`
	case "tools/list":
		result = `{"tools":[{"name":"search_memory","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},
			{"name":"remember","inputSchema":{"type":"object"}}]}`
	default:
		return nil // a call the test leaves unanswered
	}
	f.b.events <- upEvent{gen: f.gen, msg: &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(result)}}
	return nil
}
func (f *fakeOwner) Close() error      { return nil }
func (f *fakeOwner) SessionID() string { return "s" }

// methods lists the methods of the requests the bridge wrote upstream.
func (f *fakeOwner) methods() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, m := range f.in {
		if r, ok := m.(*jsonrpc.Request); ok {
			out = append(out, r.Method)
		}
	}
	return out
}

// newTestBridge is a bridge on generation gen of fake, with down the MCP
// client.
func newTestBridge(t *testing.T, down *fakeConn, gen int) (*bridge, *fakeOwner) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	b := &bridge{down: down, inflight: map[jsonrpc.ID]*pendingCall{}, safeTools: map[string]bool{},
		events: make(chan upEvent, 64), gen: gen, upCtx: ctx, upCancel: cancel, log: slog.New(slog.DiscardHandler)}
	f := &fakeOwner{b: b, gen: gen}
	b.up = f
	b.proto.Store("")
	return b, f
}

func request(id any, method, params string) *jsonrpc.Request {
	jid, _ := jsonrpc.MakeID(id)
	return &jsonrpc.Request{ID: jid, Method: method, Params: json.RawMessage(params)}
}

// TestBridgeNeverInitializesTwice: when the owner changes while the
// client's initialize is still unanswered, the new session gets one
// initialize (the replay) and the client gets its answer, instead of the
// replay followed by the client's initialize sent again (which the server
// refuses: "duplicate initialize received").
func TestBridgeNeverInitializesTwice(t *testing.T) {
	down := &fakeConn{}
	b, up := newTestBridge(t, down, 2)
	b.init = request(float64(0), "initialize", `{"protocolVersion":"2025-06-18","clientInfo":{"name":"c","version":"1"},"capabilities":{}}`)
	b.inflight[b.init.ID] = &pendingCall{req: b.init, since: time.Now(), delivered: true, gen: 1}
	if err := b.replay(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	b.resend(2)
	b.wg.Wait()
	n := 0
	for _, m := range up.methods() {
		if m == "initialize" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the new session got %d initialize requests (%v), want 1", n, up.methods())
	}
	if len(down.out) != 1 {
		t.Fatalf("the client got %d messages, want the answer to its initialize: %+v", len(down.out), down.out)
	}
	if r, ok := down.out[0].(*jsonrpc.Response); !ok || r.ID != b.init.ID || r.Error != nil || !strings.Contains(string(r.Result), "protocolVersion") {
		t.Errorf("the client got %+v, want the answer to its initialize", down.out[0])
	}
	if len(b.inflight) != 0 {
		t.Errorf("still in flight: %v", b.inflight)
	}
}

// TestBridgeLearnsSafeToolsItself: a read-only tool's call cut off by a
// change of owner is sent again although the client never listed the
// tools, because the bridge asks the new owner for its tools (and their
// annotations) before it judges the calls in flight; a tool without such
// an annotation is still answered "may or may not have been done".
func TestBridgeLearnsSafeToolsItself(t *testing.T) {
	down := &fakeConn{}
	b, up := newTestBridge(t, down, 2)
	b.init = request(float64(0), "initialize", `{"protocolVersion":"2025-06-18","clientInfo":{"name":"c","version":"1"},"capabilities":{}}`)
	b.initialized = true
	for i, tool := range []string{"search_memory", "remember"} {
		req := request(float64(i+1), "tools/call", `{"name":"`+tool+`","arguments":{}}`)
		b.inflight[req.ID] = &pendingCall{req: req, since: time.Now(), delivered: true, gen: 1}
	}
	if err := b.replay(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	b.resend(2)
	b.wg.Wait()
	var resent []string
	up.mu.Lock()
	for _, m := range up.in {
		if r, ok := m.(*jsonrpc.Request); ok && r.Method == "tools/call" {
			resent = append(resent, string(r.Params))
		}
	}
	up.mu.Unlock()
	if len(resent) != 1 || !strings.Contains(resent[0], "search_memory") {
		t.Errorf("sent again: %v, want the search_memory call only", resent)
	}
	if len(down.out) != 1 {
		t.Fatalf("the client got %+v, want one error (for remember)", down.out)
	}
	if r := down.out[0].(*jsonrpc.Response); r.Error == nil || !strings.Contains(r.Error.Error(), "remember; it may or may not have been done") {
		t.Errorf("the client got %+v", r)
	}
}

// TestBridgeListsToolsAfterInitialized: on the first session the bridge
// follows the client's initialized notification with its own tools/list
// (after it: the server refuses calls before it), learns the annotations
// from the answer and does not pass that answer on to the client.
func TestBridgeListsToolsAfterInitialized(t *testing.T) {
	down := &fakeConn{}
	b, up := newTestBridge(t, down, 1)
	b.fromClient(&jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)})
	b.wg.Wait()
	if got := strings.Join(up.methods(), ","); got != "notifications/initialized,tools/list" {
		t.Fatalf("the bridge wrote upstream %s", got)
	}
	b.fromOwner((<-b.events).msg)
	if !b.safeTools["search_memory"] || b.safeTools["remember"] {
		t.Errorf("safe tools %v, want search_memory only", b.safeTools)
	}
	if len(down.out) != 0 {
		t.Errorf("the client got the bridge's own answer: %+v", down.out)
	}
}

// TestBridgeWaitsForLeavingOwnersAnswers: when the owner says it is
// leaving, the calls it took stay with its connection: none is sent again
// or answered "may or may not have been done" while it finishes them; its
// answers reach the client; when its process exits, a safe call it did
// not answer is sent again on the new connection and an unsafe one is
// answered with the error.
func TestBridgeWaitsForLeavingOwnersAnswers(t *testing.T) {
	leaving := exec.Command("sleep", "60") // the leaving owner's process
	if err := leaving.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = leaving.Process.Kill(); _ = leaving.Wait() })
	down := &fakeConn{}
	b, _ := newTestBridge(t, down, 1)
	b.draining = map[int]*oldConn{}
	b.ownerPID = leaving.Process.Pid
	b.safeTools = map[string]bool{"search_memory": true}
	for i, tool := range []string{"search_memory", "remember", "remember"} {
		req := request(float64(i+1), "tools/call", `{"name":"`+tool+`","arguments":{}}`)
		b.inflight[req.ID] = &pendingCall{req: req, since: time.Now(), delivered: true, gen: 1}
	}
	// What reconnect does on "leaving": keep the connection, then open
	// the next one and send again what is to be sent again.
	b.drain()
	b.closeUp()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	next := &fakeOwner{b: b, gen: 2}
	b.gen, b.up, b.upCtx, b.upCancel = 2, next, ctx, cancel
	b.resend(2)
	// (b.wg also counts the watcher of the leaving owner's process: the
	// calls' generations say whether any was sent again.)
	for id, p := range b.inflight {
		if p.gen != 1 {
			t.Errorf("call %v was sent again while the leaving owner finishes it", id)
		}
	}
	if len(b.inflight) != 3 || len(down.out) != 0 {
		t.Fatalf("while the leaving owner finishes, the bridge answered %+v", down.out)
	}
	// The leaving owner answers the first remember.
	id2, _ := jsonrpc.MakeID(float64(2))
	b.fromDraining(upEvent{gen: 1, msg: &jsonrpc.Response{ID: id2, Result: json.RawMessage(`{"content":[]}`)}})
	if len(down.out) != 1 || down.out[0].(*jsonrpc.Response).ID != id2 || down.out[0].(*jsonrpc.Response).Error != nil {
		t.Fatalf("the client got %+v, want the leaving owner's answer to call 2", down.out)
	}
	// It exits without answering the others.
	_ = leaving.Process.Kill()
	_ = leaving.Wait()
	select {
	case ev := <-b.events:
		if ev.gen != 1 || !errors.Is(ev.err, errOwnerExited) {
			t.Fatalf("event %+v, want the leaving owner's exit", ev)
		}
		b.fromDraining(ev)
	case <-time.After(10 * time.Second):
		t.Fatal("the bridge did not notice that the leaving owner exited")
	}
	b.wg.Wait()
	if got := next.methods(); len(got) != 1 || got[0] != "tools/call" {
		t.Errorf("sent again %v, want the search_memory call", got)
	}
	if len(down.out) != 2 || !strings.Contains(down.out[1].(*jsonrpc.Response).Error.Error(), "remember; it may or may not have been done") {
		t.Errorf("the client got %+v, want the answer to call 2, then an error for call 3", down.out)
	}
	if len(b.draining) != 0 {
		t.Errorf("%d connections still draining", len(b.draining))
	}
}
