// Package mcpbridge is `ragmem mcp`: MCP on stdin and stdout, forwarded to
// the MCP endpoint of the data directory's owner over its socket.
package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/ownerd"
	"github.com/ragmem/ragmem/cmd/ragmem/internal/settings"
	"github.com/ragmem/ragmem/internal/mcpserver"
	"github.com/ragmem/ragmem/internal/owner"
	"github.com/ragmem/ragmem/internal/server"
)

// The MCP bridge: `ragmem mcp` serves MCP on its stdin and stdout by
// forwarding every message to the MCP endpoint of the data directory's
// owner, over the owner's socket (a pump between the go-sdk's stdio
// transport and its streamable HTTP client transport). With no owner it
// starts a background one (`ragmem serve --background`), which exits after
// a grace period without clients. So any number of MCP clients, the CLI
// and `ragmem serve` share one memory.
//
// The owner may change under the bridge: it hands over to a `ragmem serve`
// started later, or dies. The bridge then finds the next owner (starting
// one if none comes), opens a new MCP session on it by replaying the
// client's initialize, and sends again the calls that were in flight when
// that is safe: a call that never reached the owner, or one the client may
// repeat (every method but tools/call, and the tools the server marks
// read-only or idempotent). Any other call in flight is answered with an
// error saying it may or may not have been done. An owner that says it is
// leaving finishes the requests it has (ownerd's Run.Stop): the bridge
// keeps its connection open (draining) until the calls it took are
// answered or it is gone, and only then judges what is left of them.

// bridgeCallTimeout bounds how long a call may wait for its answer.
const bridgeCallTimeout = 10 * time.Minute

// bridgeConnectWait bounds how long the bridge waits for an owner
// (starting one included) before it gives up.
const bridgeConnectWait = 2 * time.Minute

type bridge struct {
	g        *settings.Settings
	dir      string
	readOnly bool
	memories string // the agent-memory directory the user asked for ("" : the owner's)
	grace    time.Duration
	log      *slog.Logger

	down mcp.Connection // stdio, to the MCP client

	events chan upEvent
	wg     sync.WaitGroup // the goroutines of every upstream generation

	gen      int
	up       mcp.Connection
	upCtx    context.Context
	upCancel context.CancelFunc
	client   *owner.Client
	ownerPID int          // the process of the owner up connects to
	proto    atomic.Value // string: the negotiated protocol version
	replayID jsonrpc.ID
	toolsID  jsonrpc.ID // the bridge's own tools/list (see askTools)

	init        *jsonrpc.Request // the client's initialize
	initialized bool             // the client sent notifications/initialized
	logLevel    *jsonrpc.Request // the client's last logging/setLevel
	inflight    map[jsonrpc.ID]*pendingCall
	draining    map[int]*oldConn // by generation: leaving owners' connections, kept for their answers
	safeTools   map[string]bool
	daemon      <-chan error // the background owner this bridge started
	daemonPID   int
}

// pendingCall is a call sent upstream and not answered yet.
type pendingCall struct {
	req       *jsonrpc.Request
	since     time.Time
	delivered bool // the owner may have received it (it was written without error)
	gen       int
}

// oldConn is the connection of an owner that said it is leaving, kept
// open for the answers to the calls it took.
type oldConn struct {
	up     mcp.Connection
	cancel context.CancelFunc
	client *owner.Client
}

// errOwnerExited ends a drain: the leaving owner's process has exited (or
// the drain has waited drainLimit), so the calls it took and did not
// answer will get no answer.
var errOwnerExited = errors.New("the leaving owner exited")

// drainLimit bounds how long the bridge waits for a leaving owner's
// answers: the owner's server cuts the requests still in flight after
// server.DefaultShutdownTimeout, then exits.
const drainLimit = server.DefaultShutdownTimeout + 5*time.Second

// upEvent is what an upstream generation's goroutines report.
type upEvent struct {
	gen int
	msg jsonrpc.Message
	err error // the generation broke (connection failed, owner leaving)
	id  *jsonrpc.ID
}

// Run serves MCP on the process's stdin and stdout until the client
// closes stdin or ctx ends: read-only when readOnly says so, on the agent
// memories in memories ("": the owner's), starting a background owner that
// exits after grace without clients when none answers.
func Run(ctx context.Context, g *settings.Settings, readOnly bool, memories string, grace time.Duration) error {
	dir, err := g.DataDir()
	if err != nil {
		return err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	down, err := (&mcpserver.StdioTransport{}).Connect(ctx) // malformed lines answered, the session goes on
	if err != nil {
		return err
	}
	b := &bridge{
		g: g, dir: dir, readOnly: readOnly, memories: memories, grace: grace, log: slog.Default(),
		down: down, events: make(chan upEvent, 64),
		inflight: map[jsonrpc.ID]*pendingCall{}, safeTools: map[string]bool{}, draining: map[int]*oldConn{},
	}
	b.proto.Store("")
	defer func() {
		b.closeUp()
		for _, d := range b.draining {
			d.close()
		}
		_ = b.down.Close() // unblocks the stdin reader
		b.wg.Wait()
	}()
	return b.run(ctx)
}

func (b *bridge) run(ctx context.Context) error {
	fromClient := make(chan jsonrpc.Message)
	clientErr := make(chan error, 1)
	// rctx ends when the client goes away, which also ends a wait for an
	// owner.
	rctx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			msg, err := b.down.Read(rctx)
			if err != nil {
				clientErr <- err
				stopReading()
				return
			}
			select {
			case fromClient <- msg:
			case <-rctx.Done():
				return
			}
		}
	}()
	if err := b.connect(rctx, false); err != nil {
		if rctx.Err() != nil && ctx.Err() == nil {
			return nil // the client left while the owner was starting
		}
		return err
	}
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-clientErr:
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil // the client closed stdin: a normal end
			}
			return err
		case msg := <-fromClient:
			b.fromClient(msg)
		case ev := <-b.events:
			if ev.gen != b.gen {
				b.fromDraining(ev) // or from a connection already replaced
				continue
			}
			switch {
			case ev.err != nil && ev.id != nil:
				b.writeFailed(rctx, *ev.id, ev.err)
			case ev.err != nil:
				b.reconnect(rctx, ev.err)
			default:
				b.fromOwner(ev.msg)
			}
		case <-tick.C:
			b.expire()
		}
	}
}

// connect finds the owner (starting a background one when none answers)
// and opens an upstream connection to its MCP endpoint. After a handover
// it waits for the successor before starting anything.
func (b *bridge) connect(ctx context.Context, handover bool) error {
	deadline := time.Now().Add(bridgeConnectWait)
	patience := time.Time{}
	if handover {
		patience = time.Now().Add(ownerd.HandoverPatience)
	}
	delay := 10 * time.Millisecond
	for {
		info, _, err := owner.Join(ctx, b.dir, &owner.JoinOptions{NoClaim: true})
		if err == nil {
			if err := b.open(ctx, info); err == nil {
				if info.Kind == owner.KindCLI && !b.daemonRunning() {
					// A command owns the store only while it runs: a
					// background owner takes it over (the command hands
					// it over, and this bridge follows), so that the
					// store stays open between commands.
					if err := b.startDaemon(); err != nil {
						b.log.Warn("could not start a background owner to take the store over from a command; staying with the command", "err", err)
					}
				}
				return nil
			} else if !errors.Is(err, owner.ErrGone) {
				return err
			}
		} else if !errors.Is(err, owner.ErrNoOwner) {
			return err
		} else if held, _ := owner.LockHeld(b.dir); !held && time.Now().After(patience) && !b.daemonRunning() {
			if err := b.startDaemon(); err != nil {
				return err
			}
		}
		if b.daemon != nil {
			select {
			case err := <-b.daemon:
				b.daemon = nil
				if err == nil {
					// It stepped aside: another process owns the store,
					// or is taking it over. Look for that one.
					break
				}
				return fmt.Errorf("the background owner (pid %d) exited before answering (%v); its log is %s%s", b.daemonPID, err, owner.LogPath(b.dir), logTail(b.dir))
			default:
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no owner of %s answered within %s (see ragmem status and %s)", b.dir, bridgeConnectWait, owner.LogPath(b.dir))
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

func (b *bridge) daemonRunning() bool {
	if b.daemon == nil {
		return false
	}
	select {
	case <-b.daemon:
		b.daemon = nil
		return false
	default:
		return true
	}
}

// startDaemon starts a background owner of the data directory with this
// process's settings. Secrets go through its environment, never its
// command line.
func (b *bridge) startDaemon() error {
	g := b.g
	args := []string{"--dir", b.dir}
	env := []string{}
	if g.ConfigPath != "" {
		if p, err := filepath.Abs(g.ConfigPath); err == nil {
			args = append(args, "--config", p)
		}
	}
	if g.Embedder != "" {
		args = append(args, "--embedder", g.Embedder)
	}
	if g.BaseURL != "" {
		args = append(args, "--base-url", g.BaseURL)
	}
	if g.APIKey != "" {
		keyEnv := "OPENAI_API_KEY"
		if v, ok := g.Cfg.Get("openai.api_key_env"); ok && v.Scalar != "" {
			keyEnv = v.Scalar
		}
		env = append(env, keyEnv+"="+g.APIKey)
	}
	for _, fl := range []struct {
		key, flag, val string
	}{
		{"backend", "--backend", g.Backend.Name}, {"weaviate.url", "--weaviate-url", g.Backend.URL},
		{"weaviate.namespace", "--weaviate-namespace", g.Backend.Namespace}, {"weaviate.consistency", "--weaviate-consistency", g.Backend.Consistency},
		{"reranker", "--reranker", g.Rerank.URL}, {"reranker_api", "--reranker-api", g.Rerank.API}, {"reranker_model", "--reranker-model", g.Rerank.Model},
		{"reranker_top", "--reranker-top", strconv.Itoa(g.Rerank.Top)}, {"reranker_timeout", "--reranker-timeout", g.Rerank.Timeout.String()},
	} {
		if g.Sources[fl.key] == fl.flag {
			args = append(args, fl.flag, fl.val)
		}
	}
	if g.Sources["weaviate.api_key"] == "--weaviate-api-key" {
		env = append(env, "WEAVIATE_API_KEY="+g.Backend.APIKey)
	}
	if g.Sources["reranker_api_key"] == "--reranker-api-key" {
		env = append(env, "RAGMEM_RERANKER_API_KEY="+g.Rerank.APIKey)
	}
	if g.Verbose {
		args = append(args, "--verbose")
	}
	args = append(args, "serve", "--background", "--idle-exit", b.grace.String())
	if b.memories != "" {
		args = append(args, "--memories", b.memories)
	}
	p, done, err := owner.Spawn(b.dir, args, env)
	if err != nil {
		return err
	}
	b.daemon, b.daemonPID = done, p.Pid
	b.log.Info("started a background owner", "pid", p.Pid, "dir", b.dir, "log", owner.LogPath(b.dir))
	return nil
}

// logTail returns the last lines of the background owner's log, for an
// error message.
func logTail(dir string) string {
	b, err := os.ReadFile(owner.LogPath(dir))
	if err != nil || len(b) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return ":\n  " + strings.Join(lines, "\n  ")
}

// open makes the upstream connection to the owner info names: a new
// generation, with its reader and its attach stream, then the session
// replayed (initialize, initialized, log level) and the calls in flight
// sent again or answered.
func (b *bridge) open(ctx context.Context, info owner.Info) error {
	c, err := owner.NewClient(b.dir, info, b.g.ClientOptions())
	if err != nil {
		return err
	}
	if b.memories != "" && b.gen == 0 {
		if err := b.checkMemories(ctx, c); err != nil {
			c.Close()
			return err
		}
	}
	endpoint := "http://localhost/mcp"
	if b.readOnly {
		endpoint += "?readOnly=1"
	}
	hc := &http.Client{Transport: &mcpAuth{base: c.HTTPClient().Transport, token: c.Token(), namespace: c.Namespace(), proto: &b.proto}}
	t := &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}
	upCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	up, err := t.Connect(upCtx)
	if err != nil {
		cancel()
		c.Close()
		return err
	}
	b.gen++
	gen := b.gen
	b.up, b.upCtx, b.upCancel, b.client, b.ownerPID = up, upCtx, cancel, c, info.PID
	b.wg.Add(2)
	go func() {
		defer b.wg.Done()
		for {
			msg, err := up.Read(upCtx)
			ev := upEvent{gen: gen, msg: msg, err: err}
			if err != nil && upCtx.Err() != nil {
				return
			}
			select {
			case b.events <- ev:
			case <-upCtx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	attached := make(chan struct{})
	go func() {
		defer b.wg.Done()
		err := c.Attach(upCtx, "mcp", func() { close(attached) })
		if upCtx.Err() != nil {
			return
		}
		select {
		case b.events <- upEvent{gen: gen, err: fmt.Errorf("attach: %w", err)}:
		case <-upCtx.Done():
		}
	}()
	if b.init != nil {
		if err := b.replay(ctx, gen); err != nil {
			b.closeUp()
			return &owner.GoneError{Owner: info, Sent: true, Err: err}
		}
	}
	b.resend(gen)
	return nil
}

// checkMemories refuses to bridge to an owner that serves other agent
// memories than the ones the user asked for.
func (b *bridge) checkMemories(ctx context.Context, c *owner.Client) error {
	st, err := c.Status(ctx)
	if err != nil {
		return err
	}
	var ex ownerd.Extra
	_ = json.Unmarshal(st.Extra, &ex)
	if ex.Memories != "" && filepath.Clean(ex.Memories) != filepath.Clean(b.memories) {
		return fmt.Errorf("--memories %s: the store in %s is owned by pid %d (%s), which serves the agent memories in %s; stop it, or drop --memories",
			b.memories, b.dir, st.Owner.PID, ownerd.DescribeKind(st.Owner.Kind, st.Owner.Command), ex.Memories)
	}
	return nil
}

// replay opens the MCP session on a new owner with the client's own
// initialize (its answer is not passed on: the client has had one), then
// its initialized notification, the bridge's own tools/list (so that it
// knows which tools are safe to send again before it judges the calls in
// flight) and the client's log level. When the client's initialize is
// itself still in flight, the replay's answer is its answer: sending it
// again would be a second initialize on one session, which the server
// refuses.
func (b *bridge) replay(ctx context.Context, gen int) error {
	b.replayID, _ = jsonrpc.MakeID(fmt.Sprintf("ragmem-bridge-%d", gen))
	req := &jsonrpc.Request{ID: b.replayID, Method: b.init.Method, Params: b.init.Params}
	if err := b.up.Write(b.upCtx, req); err != nil {
		return err
	}
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	var held []upEvent
	defer func() {
		for _, ev := range held { // anything else the owners said meanwhile
			if ev.gen == gen {
				b.fromOwner(ev.msg)
			} else {
				b.fromDraining(ev)
			}
		}
	}()
	r, err := b.await(ctx, gen, b.replayID, timeout.C, &held)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if r.Error != nil {
		return fmt.Errorf("initialize: %w", r.Error)
	}
	b.learnInitialize(r.Result)
	if p, ok := b.inflight[b.init.ID]; ok && p.req == b.init {
		delete(b.inflight, b.init.ID)
		if err := b.down.Write(context.Background(), &jsonrpc.Response{ID: b.init.ID, Result: r.Result}); err != nil {
			b.log.Debug("writing to the MCP client failed", "err", err)
		}
	}
	if b.initialized {
		n := &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage("{}")}
		if err := b.up.Write(b.upCtx, n); err != nil {
			return err
		}
		b.toolsID = toolsID(gen)
		if err := b.up.Write(b.upCtx, &jsonrpc.Request{ID: b.toolsID, Method: "tools/list", Params: json.RawMessage("{}")}); err != nil {
			return err
		}
		r, err := b.await(ctx, gen, b.toolsID, timeout.C, &held)
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		if r.Error != nil {
			b.log.Warn("the owner did not list its tools; calls of tools cut off by a reconnection are not sent again", "err", r.Error)
		} else {
			b.learnTools(r.Result)
		}
	}
	if b.logLevel != nil {
		b.sendUp(gen, &jsonrpc.Request{Method: b.logLevel.Method, Params: b.logLevel.Params})
	}
	return nil
}

// toolsID is the ID of the bridge's own tools/list on generation gen.
func toolsID(gen int) jsonrpc.ID {
	id, _ := jsonrpc.MakeID(fmt.Sprintf("ragmem-bridge-tools-%d", gen))
	return id
}

// await waits for generation gen's answer to the bridge's own call id,
// keeping in held whatever else the owner says meanwhile.
func (b *bridge) await(ctx context.Context, gen int, id jsonrpc.ID, timeout <-chan time.Time, held *[]upEvent) (*jsonrpc.Response, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timeout:
			return nil, errors.New("the new owner did not answer")
		case ev := <-b.events:
			if ev.gen != gen {
				if b.draining[ev.gen] != nil {
					*held = append(*held, ev)
				}
				continue
			}
			if ev.err != nil {
				return nil, ev.err
			}
			if r, ok := ev.msg.(*jsonrpc.Response); ok && r.ID == id {
				return r, nil
			}
			*held = append(*held, ev)
		}
	}
}

// resend sends the calls in flight on the new generation, after
// answering those it must not send again (answerUnsafe).
func (b *bridge) resend(gen int) {
	b.answerUnsafe(gen)
	ids := make([]jsonrpc.ID, 0, len(b.inflight))
	for id := range b.inflight {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return b.inflight[ids[i]].since.Before(b.inflight[ids[j]].since) })
	for _, id := range ids {
		p := b.inflight[id]
		if p.gen == gen || b.awaited(p) {
			continue
		}
		p.gen, p.delivered = gen, false
		b.sendCall(gen, p)
	}
}

// answerUnsafe answers with an error the calls of earlier connections that
// may have reached the owner and are not safe to send again: they may or
// may not have been done.
func (b *bridge) answerUnsafe(gen int) {
	for id, p := range b.inflight {
		if p.gen != gen && p.delivered && !b.safe(p.req) && !b.awaited(p) {
			b.answerLost(id, p)
		}
	}
}

// answerLost answers call p, which the owner may have done and will not
// answer, with an error saying so.
func (b *bridge) answerLost(id jsonrpc.ID, p *pendingCall) {
	delete(b.inflight, id)
	b.answerError(id, fmt.Sprintf("ragmem: the memory's owner went away during %s; it may or may not have been done (check before calling it again)", describeCall(p.req)))
}

// reconnect replaces a broken upstream connection.
func (b *bridge) reconnect(ctx context.Context, cause error) {
	handover := errors.Is(cause, owner.ErrHandingOver)
	b.log.Info("the owner's connection ended; finding the next owner", "cause", cause)
	if errors.Is(cause, owner.ErrLeaving) || isRejected(cause) {
		// The owner said it is leaving, or refused a request (it may be
		// shutting down before its attach stream says so): the connection
		// still works for the calls it took.
		b.drain()
	}
	b.closeUp()
	for ctx.Err() == nil {
		err := b.connect(ctx, handover)
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			return
		}
		// No owner: every call in flight fails now, rather than hang.
		for id, p := range b.inflight {
			delete(b.inflight, id)
			b.answerError(id, fmt.Sprintf("ragmem: %s failed: the memory has no owner: %v", describeCall(p.req), err))
		}
		b.log.Error("no owner for the memory; trying again", "err", err)
		t := time.NewTimer(time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		handover = false
	}
}

// awaited reports whether call p waits for its answer on a draining
// connection.
func (b *bridge) awaited(p *pendingCall) bool {
	return p.delivered && b.draining[p.gen] != nil
}

// drain keeps the current connection, whose owner is leaving, open for
// the answers to the calls it took, until they have come, the connection
// fails, or the owner's process exits (a watcher reports errOwnerExited).
func (b *bridge) drain() {
	if b.up == nil {
		return
	}
	n := 0
	for _, p := range b.inflight {
		if p.gen == b.gen && p.delivered {
			n++
		}
	}
	if n == 0 {
		return
	}
	gen, pid, ctx := b.gen, b.ownerPID, b.upCtx
	b.draining[gen] = &oldConn{up: b.up, cancel: b.upCancel, client: b.client}
	b.up, b.client = nil, nil
	b.log.Info("waiting for the leaving owner's answers", "pid", pid, "calls", n)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if waitExit(ctx, pid) {
			select {
			case b.events <- upEvent{gen: gen, err: errOwnerExited}:
			case <-ctx.Done():
			}
		}
	}()
}

// waitExit waits until process pid has exited (and a moment more: an
// answer it wrote just before may still be on its way through the
// connection's reader) or drainLimit has passed; false if ctx ended first.
func waitExit(ctx context.Context, pid int) bool {
	limit := time.NewTimer(drainLimit)
	defer limit.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for processAlive(pid) {
		select {
		case <-ctx.Done():
			return false
		case <-limit.C:
			return true
		case <-tick.C:
		}
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(200 * time.Millisecond):
		return true
	}
}

// fromDraining handles what a draining connection reports: an answer to
// a call it took is passed on; a failure, or its owner's exit, ends the
// drain. Reports of connections replaced without a drain are dropped.
func (b *bridge) fromDraining(ev upEvent) {
	if b.draining[ev.gen] == nil {
		return
	}
	switch {
	case ev.err != nil && ev.id != nil: // a call written as the owner left
		if p, ok := b.inflight[*ev.id]; ok && p.gen == ev.gen {
			if isRejected(ev.err) {
				p.delivered = false
			}
			b.retry(p)
		}
	case ev.err != nil:
		b.log.Info("the leaving owner's connection ended", "cause", ev.err)
		b.endDrain(ev.gen)
		return
	default:
		switch m := ev.msg.(type) {
		case *jsonrpc.Response:
			if p, ok := b.inflight[m.ID]; ok && p.gen == ev.gen {
				b.fromOwner(m)
			}
		case *jsonrpc.Request:
			if !m.IsCall() { // progress and log notifications of the calls it finishes
				if err := b.down.Write(context.Background(), m); err != nil {
					b.log.Debug("writing to the MCP client failed", "err", err)
				}
			}
		}
	}
	for _, p := range b.inflight {
		if p.gen == ev.gen {
			return
		}
	}
	b.endDrain(ev.gen)
}

// endDrain closes a draining connection and judges the calls it took and
// did not answer: sent again on the current connection when that is safe,
// answered "may or may not have been done" otherwise.
func (b *bridge) endDrain(gen int) {
	d := b.draining[gen]
	if d == nil {
		return
	}
	delete(b.draining, gen)
	for _, p := range b.inflight {
		if p.gen == gen {
			b.retry(p)
		}
	}
	// Closing ends the session with a request the leaving owner may no
	// longer answer: not on the bridge's loop.
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		d.close()
	}()
}

func (d *oldConn) close() {
	_ = d.up.Close()
	d.cancel()
	if d.client != nil {
		d.client.Close()
	}
}

// retry sends call p, taken by a connection that will not answer it,
// again on the current connection when it never reached the owner or is
// safe to repeat, and answers it with an error otherwise.
func (b *bridge) retry(p *pendingCall) {
	if p.delivered && !b.safe(p.req) {
		b.answerLost(p.req.ID, p)
		return
	}
	p.gen, p.delivered = 0, false // sent by the next resend when there is no connection now
	if b.up != nil {
		p.gen = b.gen
		b.sendCall(b.gen, p)
	}
}

// processAlive reports whether process pid still runs.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

// closeUp closes the current upstream connection.
func (b *bridge) closeUp() {
	if b.up == nil {
		return
	}
	(&oldConn{up: b.up, cancel: b.upCancel, client: b.client}).close()
	b.up, b.client = nil, nil
}

func (b *bridge) fromClient(msg jsonrpc.Message) {
	switch m := msg.(type) {
	case *jsonrpc.Request:
		switch m.Method {
		case "initialize":
			b.init = m
		case "notifications/initialized":
			b.initialized = true
		case "logging/setLevel":
			b.logLevel = m
		}
		if m.IsCall() {
			p := &pendingCall{req: m, since: time.Now(), gen: b.gen}
			b.inflight[m.ID] = p
			if b.up != nil {
				b.sendCall(b.gen, p)
			}
			return
		}
		if b.up != nil {
			if m.Method == "notifications/initialized" {
				b.askTools(b.gen, m)
				return
			}
			b.sendUp(b.gen, m)
		}
	case *jsonrpc.Response: // to a request the owner made
		if b.up != nil {
			b.sendUp(b.gen, m)
		}
	}
}

// sendCall writes a call upstream; a failure is reported as an event.
func (b *bridge) sendCall(gen int, p *pendingCall) {
	up, ctx, req := b.up, b.upCtx, p.req
	id := req.ID
	p.delivered = true // until a write error says otherwise
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if err := up.Write(ctx, req); err != nil && ctx.Err() == nil {
			select {
			case b.events <- upEvent{gen: gen, err: err, id: &id}:
			case <-ctx.Done():
			}
		}
	}()
}

// askTools sends the client's initialized notification, then, once it
// is written (the server refuses other calls before it), the bridge's own
// tools/list: its answer (fromOwner) says which tools are safe to send
// again, whether or not the client ever lists the tools.
func (b *bridge) askTools(gen int, initialized *jsonrpc.Request) {
	up, ctx := b.up, b.upCtx
	b.toolsID = toolsID(gen)
	list := &jsonrpc.Request{ID: b.toolsID, Method: "tools/list", Params: json.RawMessage("{}")}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if err := up.Write(ctx, initialized); err != nil {
			if ctx.Err() == nil {
				b.log.Debug("a message to the owner was lost", "err", err)
			}
			return
		}
		if err := up.Write(ctx, list); err != nil && ctx.Err() == nil {
			b.log.Debug("the bridge's tools/list was lost", "err", err)
		}
	}()
}

// sendUp writes a notification or a response upstream.
func (b *bridge) sendUp(gen int, msg jsonrpc.Message) {
	up, ctx := b.up, b.upCtx
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if err := up.Write(ctx, msg); err != nil && ctx.Err() == nil {
			b.log.Debug("a message to the owner was lost", "err", err)
		}
	}()
}

// writeFailed handles a call that could not be written: a rejected write
// (the owner never got it: it was unreachable, or leaving) is sent again on
// the next connection; any other failure breaks the connection.
func (b *bridge) writeFailed(ctx context.Context, id jsonrpc.ID, err error) {
	if p, ok := b.inflight[id]; ok && isRejected(err) {
		p.delivered = false
	}
	b.reconnect(ctx, err)
}

// codeRejected is the go-sdk's code for a message its transport could not
// deliver (the HTTP request failed, or was refused with 5xx or 429).
const codeRejected = -32005

// isRejected reports whether a write failed before the owner got it.
func isRejected(err error) bool {
	if err == nil {
		return false
	}
	if we, ok := err.(*jsonrpc.Error); ok && we.Code == codeRejected {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return isRejected(u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if isRejected(e) {
				return true
			}
		}
	}
	return false
}

func (b *bridge) fromOwner(msg jsonrpc.Message) {
	if r, ok := msg.(*jsonrpc.Response); ok {
		if r.ID == b.replayID && b.replayID.IsValid() {
			return // a late answer to a replayed initialize
		}
		if r.ID == b.toolsID && b.toolsID.IsValid() {
			if r.Error == nil { // the bridge's own tools/list
				b.learnTools(r.Result)
			}
			return
		}
		if p, ok := b.inflight[r.ID]; ok {
			delete(b.inflight, r.ID)
			if r.Error == nil {
				switch p.req.Method {
				case "initialize":
					b.learnInitialize(r.Result)
				case "tools/list":
					b.learnTools(r.Result)
				}
			}
		}
	}
	if err := b.down.Write(context.Background(), msg); err != nil {
		b.log.Debug("writing to the MCP client failed", "err", err)
	}
}

func (b *bridge) learnInitialize(result json.RawMessage) {
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(result, &r) == nil && r.ProtocolVersion != "" {
		b.proto.Store(r.ProtocolVersion)
	}
}

// learnTools remembers which tools may be called again after a lost
// answer: those the server marks read-only or idempotent.
func (b *bridge) learnTools(result json.RawMessage) {
	var r struct {
		Tools []struct {
			Name        string `json:"name"`
			Annotations *struct {
				ReadOnlyHint   bool `json:"readOnlyHint"`
				IdempotentHint bool `json:"idempotentHint"`
			} `json:"annotations"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &r) != nil {
		return
	}
	for _, t := range r.Tools {
		b.safeTools[t.Name] = t.Annotations != nil && (t.Annotations.ReadOnlyHint || t.Annotations.IdempotentHint)
	}
}

// safe reports whether a call may be sent again after its answer was lost.
func (b *bridge) safe(req *jsonrpc.Request) bool {
	if req.Method != "tools/call" {
		return true
	}
	var p struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(req.Params, &p)
	return b.safeTools[p.Name]
}

func describeCall(req *jsonrpc.Request) string {
	if req.Method == "tools/call" {
		var p struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(req.Params, &p)
		return "the call of tool " + p.Name
	}
	return req.Method
}

// expire answers calls that have waited too long.
func (b *bridge) expire() {
	for id, p := range b.inflight {
		if time.Since(p.since) > bridgeCallTimeout {
			delete(b.inflight, id)
			b.answerError(id, fmt.Sprintf("ragmem: %s got no answer within %s", describeCall(p.req), bridgeCallTimeout))
		}
	}
}

func (b *bridge) answerError(id jsonrpc.ID, msg string) {
	r := &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}}
	if err := b.down.Write(context.Background(), r); err != nil {
		b.log.Debug("writing to the MCP client failed", "err", err)
	}
}

// mcpAuth adds the bearer token, the namespace and the negotiated protocol
// version to every request to the owner's MCP endpoint.
type mcpAuth struct {
	base      http.RoundTripper
	token     string
	namespace string // the launch flag's namespace: every tool call reaches it, whatever its arguments
	proto     *atomic.Value
}

func (a *mcpAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+a.token)
	if a.namespace != "" {
		r.Header.Set(server.NamespaceHeader, a.namespace)
	}
	if v, _ := a.proto.Load().(string); v != "" && r.Header.Get("Mcp-Protocol-Version") == "" {
		r.Header.Set("Mcp-Protocol-Version", v)
	}
	return a.base.RoundTrip(r)
}
