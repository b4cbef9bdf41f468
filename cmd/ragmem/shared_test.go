package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/ingest"
	"github.com/ragmem/ragmem/rag"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/owner"
	"github.com/ragmem/ragmem/internal/server"
)

// mcpProc is a `ragmem mcp` process with a go-sdk client session over its
// stdio, as an MCP client (Claude Desktop, an IDE) runs it.
type mcpProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	cs     *mcp.ClientSession
	stderr *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func startMCP(t *testing.T, dir string, args ...string) *mcpProc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.Command(os.Args[0], append([]string{"--dir", dir, "mcp"}, args...)...)
	cmd.Env = append(os.Environ(), "RAGMEM_TEST_AS_MAIN=1", "RAGMEM_EMBEDDER=lexical")
	p := &mcpProc{t: t, cmd: cmd, stderr: &lockedBuffer{}}
	cmd.Stderr = p.stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "ragmem-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to ragmem mcp: %v\n%s", err, p.stderr.String())
	}
	p.cs = cs
	t.Cleanup(func() { p.close() })
	return p
}

func (p *mcpProc) close() {
	if p.cs != nil {
		_ = p.cs.Close()
		p.cs = nil
	}
}

// call calls a tool and returns its structured result, or the error (a
// protocol error or a tool error) as text.
func (p *mcpProc) call(ctx context.Context, name string, args map[string]any) (map[string]any, error) {
	res, err := p.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, err
	}
	if res.IsError {
		return nil, fmt.Errorf("%s: %s", name, textOf(res))
	}
	var out map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &out)
	return out, nil
}

func (p *mcpProc) mustCall(name string, args map[string]any) map[string]any {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := p.call(ctx, name, args)
	if err != nil {
		p.t.Fatalf("%s: %v\n%s", name, err, p.stderr.String())
	}
	return out
}

// visibleWithin polls found until it reports true, failing the test after
// limit; it returns how long that took.
func visibleWithin(t *testing.T, what string, limit time.Duration, found func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !found() {
		if time.Since(start) > limit {
			t.Errorf("%s not visible within %s", what, limit)
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// TestOutsideScenario is the check from outside: `ragmem serve` on
// a directory, then at the same time on that directory `ragmem index FILE`,
// `ragmem search`, `ragmem sources`, `ragmem prefs add` and `ragmem mcp`
// over stdio (tools list, index_text, search_memory) all succeed, and each
// write is visible to every other client (the CLI, MCP, the HTTP API of
// the extension) within a second.
func TestOutsideScenario(t *testing.T) {
	dir := processTestDir(t, true)
	s := startServe(t, dir)
	defer s.stop()
	files := t.TempDir()
	file := filepath.Join(files, "zanzibar.md")
	writeFile(t, file, "# Zanzibar\n\nZanzibar is an archipelago famous for cloves and spice farms.\n")

	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	fail := func(f string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(f, args...))
		mu.Unlock()
	}
	cli := func(stdin string, args ...string) {
		defer wg.Done()
		out, stderr, code := runAsMain(t, stdin, append([]string{"--dir", dir}, args...)...)
		if code != 0 {
			fail("ragmem %s: exit %d: %s%s", strings.Join(args, " "), code, out, stderr)
		}
	}
	var m *mcpProc
	wg.Add(5)
	go cli("", "index", file)
	go cli("", "search", "spice farms")
	go cli("", "sources")
	go cli("", "prefs", "add", "domain", "Works on island biogeography")
	go func() {
		defer wg.Done()
		m = startMCP(t, dir)
		var names []string
		for tool, err := range m.cs.Tools(context.Background(), nil) {
			if err != nil {
				fail("tools list: %v", err)
				return
			}
			names = append(names, tool.Name)
		}
		if !slices.Contains(names, "index_text") || !slices.Contains(names, "search_memory") {
			fail("tools %v", names)
		}
		if _, err := m.call(context.Background(), "index_text", map[string]any{"text": "Quasars are the luminous cores of distant galaxies.", "url": "https://sky.example/quasar", "title": "Quasars"}); err != nil {
			fail("index_text: %v", err)
		}
		if _, err := m.call(context.Background(), "search_memory", map[string]any{"query": "luminous galaxies"}); err != nil {
			fail("search_memory: %v", err)
		}
	}()
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	if t.Failed() {
		t.FailNow()
	}

	// Every write, by every client, is visible to every other client.
	mcpFinds := func(q, url string) func() bool {
		return func() bool {
			out, err := m.call(context.Background(), "search_memory", map[string]any{"query": q})
			return err == nil && strings.Contains(fmt.Sprint(out), url)
		}
	}
	apiFinds := func(q, url string) func() bool {
		return func() bool {
			r := s.call("POST", "/v1/search", jsonBody(t, map[string]any{"query": q}), false)
			return r.status == 200 && strings.Contains(string(r.body), url)
		}
	}
	cliFinds := func(q, url string) func() bool {
		return func() bool {
			out, _, code := runAsMain(t, "", "--dir", dir, "search", q)
			return code == 0 && strings.Contains(out, url)
		}
	}
	fileURL := ingest.FileURL(file)
	limit := time.Second
	visibleWithin(t, "the CLI's file to MCP", limit, mcpFinds("cloves", fileURL))
	visibleWithin(t, "the CLI's file to the HTTP API", limit, apiFinds("cloves", fileURL))
	visibleWithin(t, "MCP's text to the CLI", limit, cliFinds("quasars", "https://sky.example/quasar"))
	visibleWithin(t, "MCP's text to the HTTP API", limit, apiFinds("quasars", "https://sky.example/quasar"))
	visibleWithin(t, "the CLI's preference to MCP", limit, func() bool {
		out, err := m.call(context.Background(), "list_preferences", nil)
		return err == nil && strings.Contains(fmt.Sprint(out), "island biogeography")
	})
	visibleWithin(t, "the CLI's preference to the HTTP API", limit, func() bool {
		r := s.call("GET", "/v1/preferences", nil, false)
		return strings.Contains(string(r.body), "island biogeography")
	})
	// A page the extension sends is visible to the CLI and to MCP.
	r := s.call("POST", "/v1/pages", jsonBody(t, map[string]any{"url": "https://reef.example/nudibranch", "text": "Nudibranchs are colourful sea slugs."}), false)
	if r.status != http.StatusAccepted {
		t.Fatalf("POST /v1/pages: %d %s", r.status, r.body)
	}
	visibleWithin(t, "the extension's page to MCP", limit, mcpFinds("sea slugs", "https://reef.example/nudibranch"))
	visibleWithin(t, "the extension's page to the CLI", limit, cliFinds("nudibranchs", "https://reef.example/nudibranch"))

	// ragmem mcp joined the server instead of starting an owner of its own.
	st, _, _ := runAsMain(t, "", "--dir", dir, "status")
	if !strings.Contains(st, "ragmem serve") || !strings.Contains(st, "1 attached: mcp pid "+fmt.Sprint(m.cmd.Process.Pid)) {
		t.Errorf("status:\n%s", st)
	}
	if _, err := os.Stat(owner.LogPath(dir)); err == nil {
		t.Error("ragmem mcp started a background owner while serve owned the store")
	}
	m.close() // before the server stops: its clients would look for a new owner
}

// TestMixedWorkload runs serve, two MCP stdio clients, the CLI and the HTTP
// API together for a few seconds, each writing and reading, then stops the
// server and checks the store: consistent, and every acknowledged write in
// it.
func TestMixedWorkload(t *testing.T) {
	dir := processTestDir(t, true)
	s := startServe(t, dir)
	m1, m2 := startMCP(t, dir), startMCP(t, dir)
	files := t.TempDir()
	// The clients run for 3 s, and on until each has done 3 rounds (a
	// loaded machine, -race), within 2 minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const workers, minRounds = 4, 3
	var rounds [workers]atomic.Int64
	go func() {
		start := time.Now()
		for ctx.Err() == nil {
			enough := time.Since(start) >= 3*time.Second
			for i := range rounds {
				enough = enough && rounds[i].Load() >= minRounds
			}
			if enough {
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()

	var mu sync.Mutex
	acked := map[string]bool{} // source URLs whose write was acknowledged
	var prefsAcked []string
	var errs []string
	ack := func(u string) { mu.Lock(); acked[u] = true; mu.Unlock() }
	bad := func(f string, a ...any) { mu.Lock(); errs = append(errs, fmt.Sprintf(f, a...)); mu.Unlock() }
	var ops atomic.Int64
	var wg sync.WaitGroup
	worker := 0
	run := func(name string, f func(i int) error) {
		w := worker
		worker++
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				err := f(i)
				if err != nil && ctx.Err() == nil {
					bad("%s %d: %v", name, i, err)
				}
				if err == nil {
					rounds[w].Add(1)
				}
				ops.Add(1)
			}
		}()
	}
	run("mcp1", func(i int) error {
		u := fmt.Sprintf("https://mcp1.example/%d", i)
		if _, err := m1.call(ctx, "index_text", map[string]any{"text": fmt.Sprintf("Note %d from the first agent about heron number %d.", i, i), "url": u}); err != nil {
			return err
		}
		ack(u)
		_, err := m1.call(ctx, "search_memory", map[string]any{"query": "heron"})
		return err
	})
	run("mcp2", func(i int) error {
		c := fmt.Sprintf("Likes topic %d", i)
		if _, err := m2.call(ctx, "add_preference", map[string]any{"type": "custom", "content": c}); err != nil {
			return err
		}
		mu.Lock()
		prefsAcked = append(prefsAcked, c)
		mu.Unlock()
		_, err := m2.call(ctx, "get_context", map[string]any{"query": "herons and topics"})
		return err
	})
	run("cli", func(i int) error {
		f := filepath.Join(files, fmt.Sprintf("note%d.md", i))
		writeFile(t, f, fmt.Sprintf("# Note %d\n\nA note about egret %d written by the CLI.\n", i, i))
		out, stderr, code := runAsMain(t, "", "--dir", dir, "index", f)
		if code != 0 {
			return fmt.Errorf("index: %s %s", out, stderr)
		}
		ack(ingest.FileURL(f))
		if out, stderr, code := runAsMain(t, "", "--dir", dir, "search", "egret"); code != 0 {
			return fmt.Errorf("search: %s %s", out, stderr)
		}
		return nil
	})
	run("http", func(i int) error {
		time.Sleep(250 * time.Millisecond) // an extension, well within the HTTP rate limit
		u := fmt.Sprintf("https://web.example/%d", i)
		r := s.call("POST", "/v1/documents", jsonBody(t, map[string]any{"documents": []map[string]any{{"url": u, "content": fmt.Sprintf("Web page %d about ibises.", i)}}}), false)
		if r.status != 200 {
			return fmt.Errorf("%d %s", r.status, r.body)
		}
		ack(u)
		if r := s.call("POST", "/v1/search", jsonBody(t, map[string]any{"query": "ibises"}), false); r.status != 200 {
			return fmt.Errorf("search %d", r.status)
		}
		return nil
	})
	wg.Wait()
	for _, e := range errs {
		t.Error(e)
	}
	m1.close()
	m2.close()
	s.stop()
	t.Logf("%d operations, %d sources and %d preferences acknowledged", ops.Load(), len(acked), len(prefsAcked))

	// The store: consistent, with every acknowledged write.
	out, stderr, code := runAsMain(t, "", "--dir", dir, "check")
	if code != 0 || !strings.Contains(out, "consistent") {
		t.Errorf("check: %d\n%s%s", code, out, stderr)
	}
	out, stderr, code = runAsMain(t, "", "--dir", dir, "sources", "--json", "--limit", "0")
	var srcs struct {
		Total   int
		Sources []index.SourceInfo
	}
	if code != 0 || json.Unmarshal([]byte(out), &srcs) != nil {
		t.Fatalf("sources: %s %s", out, stderr)
	}
	have := map[string]bool{}
	for _, s := range srcs.Sources {
		have[s.SourceURL] = true
	}
	for u := range acked {
		if !have[u] {
			t.Errorf("acknowledged %s is not in the store", u)
		}
	}
	out, _, _ = runAsMain(t, "", "--dir", dir, "prefs", "list")
	for _, p := range prefsAcked {
		if !strings.Contains(out, p+"\n") {
			t.Errorf("acknowledged preference %q is not in the store", p)
		}
	}
	for w := range rounds {
		if n := rounds[w].Load(); n < minRounds {
			t.Errorf("client %d did %d rounds in 2 minutes, want %d", w, n, minRounds)
		}
	}
	if len(acked) < 3*minRounds || len(prefsAcked) < minRounds {
		t.Errorf("too little work done: %d sources, %d preferences", len(acked), len(prefsAcked))
	}
}

// TestKillOwnerMidWrite kills the owner (kill -9) while clients write: the
// Go client, an MCP client and the CLI. Requests in flight fail at once
// with an error or are retried (never hang); the next command takes over
// the store; nothing acknowledged is lost.
func TestKillOwnerMidWrite(t *testing.T) {
	dir := processTestDir(t, true)
	s := startServe(t, dir)
	in := waitOwner(t, dir, owner.KindServe)
	m := startMCP(t, dir)

	var mu sync.Mutex
	acked := map[string]bool{}
	ack := func(u string) { mu.Lock(); acked[u] = true; mu.Unlock() }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var goAcked, cliAcked, cliAfter atomic.Int64
	killed := make(chan struct{})
	lastReturn := make([]time.Time, 4)
	// Go clients of the owner's socket: one document per request.
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := owner.NewClient(dir, in, &owner.ClientOptions{Timeout: 10 * time.Second})
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			for i := 0; ctx.Err() == nil; i++ {
				u := fmt.Sprintf("https://w%d.example/%d", w, i)
				rs, err := c.Index(ctx, rag.DocumentsRequest{Documents: []rag.DocumentRequest{{URL: u, Content: fmt.Sprintf("Writer %d note %d about storks.", w, i)}}})
				lastReturn[w] = time.Now()
				if err != nil {
					return // the owner is gone: a GoneError at once
				}
				if rs.Results[0].Err() == nil {
					ack(u)
					goAcked.Add(1)
				}
			}
		}()
	}
	// The CLI keeps indexing, one process per document: a command whose
	// owner dies sends the document again to the next owner (or becomes
	// it), since indexing is safe to repeat; exit 0 is an acknowledgement.
	cliDone := make(chan struct{})
	go func() {
		defer close(cliDone)
		for i := 0; ctx.Err() == nil; i++ {
			u := fmt.Sprintf("https://cli.example/%d", i)
			cmd := exec.CommandContext(ctx, os.Args[0], "--dir", dir, "index", "-", "--url", u)
			cmd.Env = append(os.Environ(), "RAGMEM_TEST_AS_MAIN=1", "RAGMEM_EMBEDDER=lexical")
			cmd.Stdin = strings.NewReader(fmt.Sprintf("CLI note %d about herons.", i))
			if cmd.Run() == nil {
				ack(u)
				cliAcked.Add(1)
				select {
				case <-killed:
					cliAfter.Add(1)
				default:
				}
			}
		}
	}()
	// An MCP client keeps writing through its bridge, before and after.
	mcpDone := make(chan struct{})
	var mcpAfter atomic.Int64
	go func() {
		defer close(mcpDone)
		for i := 0; ctx.Err() == nil; i++ {
			u := fmt.Sprintf("https://agent.example/%d", i)
			cctx, ccancel := context.WithTimeout(ctx, 60*time.Second)
			start := time.Now()
			_, err := m.call(cctx, "index_text", map[string]any{"text": fmt.Sprintf("Agent note %d about cranes.", i), "url": u})
			ccancel()
			if time.Since(start) > 45*time.Second {
				t.Errorf("an MCP call took %s", time.Since(start))
			}
			if err == nil {
				ack(u)
				select {
				case <-killed:
					mcpAfter.Add(1)
				default:
				}
			}
		}
	}()
	// Kill in the middle of the writes: once the Go clients and the CLI
	// have had writes acknowledged (a loaded machine may take long to
	// start processes), at least 700 ms in.
	start := time.Now()
	for time.Since(start) < 700*time.Millisecond || goAcked.Load() < 3 || cliAcked.Load() < 1 {
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("after 2 minutes, %d Go client and %d CLI writes acknowledged", goAcked.Load(), cliAcked.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s.exited
	killedAt := time.Now()
	close(killed)
	wgDone := make(chan struct{})
	go func() { wg.Wait(); close(wgDone) }()
	select {
	case <-wgDone:
	case <-time.After(15 * time.Second):
		t.Fatal("Go clients hung after the owner was killed")
	}
	for w := range 3 {
		if d := lastReturn[w].Sub(killedAt); d > 5*time.Second {
			t.Errorf("writer %d returned %s after the kill", w, d)
		}
	}
	// The CLI takes over (or joins the owner the MCP bridge started).
	for deadline := time.Now().Add(2 * time.Minute); mcpAfter.Load() < 2 || cliAfter.Load() < 1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("writes did not resume after the owner was killed (MCP %d, CLI %d):\n%s", mcpAfter.Load(), cliAfter.Load(), m.stderr.String())
		}
	}
	cancel()
	<-mcpDone
	<-cliDone
	out, stderr, code := runAsMain(t, "", "--dir", dir, "sources", "--json", "--limit", "0")
	if code != 0 {
		t.Fatalf("sources after the kill: %s %s", out, stderr)
	}
	var srcs struct{ Sources []index.SourceInfo }
	if err := json.Unmarshal([]byte(out), &srcs); err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, s := range srcs.Sources {
		have[s.SourceURL] = true
	}
	lost := 0
	for u := range acked {
		if !have[u] {
			lost++
			t.Errorf("acknowledged %s was lost", u)
		}
	}
	t.Logf("%d writes acknowledged (%d by the CLI), %d lost; %d MCP writes after the kill", len(acked), cliAcked.Load(), lost, mcpAfter.Load())
	m.close()
	out, stderr, code = runAsMain(t, "", "--dir", dir, "check")
	if code != 0 {
		t.Errorf("check after the kill: %d %s %s", code, out, stderr)
	}
}

// TestStaleOwnerCLI: an owner killed with -9 leaves its socket and owner
// file; status says so, and the next command cleans them and owns.
func TestStaleOwnerCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	dir := t.TempDir()
	s := startServe(t, dir)
	in := waitOwner(t, dir, owner.KindServe)
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
	if _, err := os.Lstat(in.Socket); err != nil {
		t.Fatalf("the killed owner left no socket: %v", err)
	}
	out, _, _ := runAsMain(t, "", "--dir", dir, "status")
	if !strings.Contains(out, "state           stale: pid "+fmt.Sprint(in.PID)+" is gone") {
		t.Errorf("status after the kill:\n%s", out)
	}
	start := time.Now()
	out, stderr, code := runAsMain(t, "", "--dir", dir, "search", "anything")
	if code != 0 || !strings.Contains(out, "no results") {
		t.Fatalf("search after the kill: %d %s %s", code, out, stderr)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("search took %s", d)
	}
	for _, p := range []string{in.Socket, owner.InfoPath(dir)} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", p, err)
		}
	}
	out, _, _ = runAsMain(t, "", "--dir", dir, "status")
	if !strings.Contains(out, "state           none") {
		t.Errorf("status after cleaning:\n%s", out)
	}
}

// TestServeTakesOver: `ragmem mcp` finds no owner and starts a background
// one; `ragmem serve` started later takes the store over (the background
// owner finishes and exits), and the MCP client goes on through the server
// without noticing. Then a command that owns the store hands it over too.
func TestServeTakesOver(t *testing.T) {
	dir := processTestDir(t, true)
	m := startMCP(t, dir)
	m.mustCall("index_text", map[string]any{"text": "Pangolins are covered in scales.", "url": "https://zoo.example/pangolin"})
	daemon := waitOwner(t, dir, owner.KindDaemon)
	if b, _ := os.ReadFile(owner.LogPath(dir)); !strings.Contains(string(b), "background owner started") {
		t.Errorf("owner log:\n%s", b)
	}
	s := startServe(t, dir)
	defer s.stop()
	if !strings.Contains(s.errText(), fmt.Sprintf("pid %d (the background owner started by ragmem mcp) is handing", daemon.PID)) {
		t.Errorf("serve said:\n%s", s.errText())
	}
	for deadline := time.Now().Add(30 * time.Second); !processGone(daemon.PID); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the background owner did not exit after handing over")
		}
	}
	out := m.mustCall("search_memory", map[string]any{"query": "pangolin scales"})
	if !strings.Contains(fmt.Sprint(out), "https://zoo.example/pangolin") {
		t.Errorf("search after the handover: %v", out)
	}
	m.mustCall("index_text", map[string]any{"text": "Okapis are related to giraffes.", "url": "https://zoo.example/okapi"})
	if r := s.call("POST", "/v1/search", jsonBody(t, map[string]any{"query": "okapi giraffes"}), false); !strings.Contains(string(r.body), "okapi") {
		t.Errorf("the server does not see what MCP wrote after the handover: %s", r.body)
	}
	st, _, _ := runAsMain(t, "", "--dir", dir, "status")
	if !strings.Contains(st, "ragmem serve") || !strings.Contains(st, "1 attached: mcp") {
		t.Errorf("status:\n%s", st)
	}
	// The bridge waited for serve: it started no second background owner.
	if b, _ := os.ReadFile(owner.LogPath(dir)); strings.Count(string(b), "background owner started") != 1 || strings.Contains(string(b), "not needed") {
		t.Errorf("owner log:\n%s", b)
	}
	m.close()
}

// TestServeTakesOverFromCommand: a command that owns the store (it waits
// for stdin) hands it over to a serve started meanwhile, and finishes its
// work as the server's client.
func TestServeTakesOverFromCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "--dir", dir, "index", "-", "--url", "https://slow.example/")
	cmd.Env = append(os.Environ(), "RAGMEM_TEST_AS_MAIN=1", "RAGMEM_EMBEDDER=lexical")
	stdin, _ := cmd.StdinPipe()
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cli := waitOwner(t, dir, owner.KindCLI)
	if cli.PID != cmd.Process.Pid {
		t.Fatalf("owner %+v", cli)
	}
	s := startServe(t, dir)
	defer s.stop()
	waitOwner(t, dir, owner.KindServe)
	stdin.Write([]byte("Axolotls regrow their limbs.\n"))
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the command: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "indexed 1 documents") {
		t.Errorf("the command said:\n%s", out.String())
	}
	r := s.call("POST", "/v1/search", jsonBody(t, map[string]any{"query": "axolotls limbs"}), false)
	if !strings.Contains(string(r.body), "https://slow.example/") {
		t.Errorf("the server does not have what the command wrote: %s", r.body)
	}
}

// TestBackgroundOwnerExitsWhenIdle: the background owner `ragmem mcp`
// starts exits after its grace period once no client is left, and removes
// its owner file and socket.
func TestBackgroundOwnerExitsWhenIdle(t *testing.T) {
	dir := processTestDir(t, true)
	m := startMCP(t, dir, "--owner-grace", "500ms")
	m.mustCall("list_sources", nil)
	daemon := waitOwner(t, dir, owner.KindDaemon)
	time.Sleep(time.Second)
	if processGone(daemon.PID) {
		t.Fatal("the background owner exited while a client was attached")
	}
	m.close()
	for deadline := time.Now().Add(20 * time.Second); !processGone(daemon.PID); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the background owner did not exit without clients")
		}
	}
	if _, err := os.Stat(owner.InfoPath(dir)); !os.IsNotExist(err) {
		t.Errorf("owner file after exit: %v", err)
	}
	if b, _ := os.ReadFile(owner.LogPath(dir)); !strings.Contains(string(b), "no client for the grace period") {
		t.Errorf("owner log:\n%s", b)
	}
}

// TestTwoMCPClientsStartOneOwner starts two `ragmem mcp` at once on a data
// directory nobody owns: each starts a background owner, one wins, the
// other steps aside, and both clients share the winner's memory.
func TestTwoMCPClientsStartOneOwner(t *testing.T) {
	dir := processTestDir(t, true)
	var wg sync.WaitGroup
	ms := make([]*mcpProc, 2)
	for i := range ms {
		wg.Add(1)
		go func() { defer wg.Done(); ms[i] = startMCP(t, dir) }()
	}
	wg.Wait()
	ms[0].mustCall("index_text", map[string]any{"text": "Narwhals have one long tusk.", "url": "https://sea.example/narwhal"})
	out := ms[1].mustCall("search_memory", map[string]any{"query": "narwhal tusk"})
	if !strings.Contains(fmt.Sprint(out), "https://sea.example/narwhal") {
		t.Errorf("the second client does not see the first's write: %v", out)
	}
	in := waitOwner(t, dir, owner.KindDaemon)
	st, _, _ := runAsMain(t, "", "--dir", dir, "status")
	if !strings.Contains(st, fmt.Sprintf("pid %d", in.PID)) || !strings.Contains(st, "2 attached: mcp") {
		t.Errorf("status:\n%s", st)
	}
	for _, m := range ms {
		m.close()
	}
}

// TestRetryOnlyWhatIsSafe puts a broken owner in front of the store: it
// takes each request and hangs up without answering, so a client cannot
// know whether a write was applied. A search (safe to repeat) is sent
// again, then fails with a clear error; adding a preference (not safe) is
// not repeated, and the error says the change may or may not have been
// made. Neither hangs.
func TestRetryOnlyWhatIsSafe(t *testing.T) {
	dir := t.TempDir()
	claim, err := owner.TryClaim(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer claim.Release()
	if _, _, err := server.EnsureToken(dir); err != nil {
		t.Fatal(err)
	}
	ln, err := claim.Listen(owner.Info{Kind: owner.KindServe})
	if err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				buf := make([]byte, 4096)
				if n, _ := c.Read(buf); n > 0 {
					requests.Add(1)
				}
				c.Close() // hang up without an answer
			}()
		}
	}()
	defer ln.Close()

	start := time.Now()
	_, stderr, err := runCLI(t, "--dir", dir, "search", "anything")
	if err == nil || !strings.Contains(err.Error(), "went away before answering") {
		t.Errorf("search through a broken owner: %v %s", err, stderr)
	}
	if n := requests.Load(); n != 3 {
		t.Errorf("the search was sent %d times, want 3 (two retries)", n)
	}
	requests.Store(0)
	_, stderr, err = runCLI(t, "--dir", dir, "prefs", "add", "style", "Short answers")
	if err == nil || !strings.Contains(err.Error(), "may or may not have been done") {
		t.Errorf("prefs add through a broken owner: %v %s", err, stderr)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("adding a preference was sent %d times, want once", n)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %s", d)
	}
}
