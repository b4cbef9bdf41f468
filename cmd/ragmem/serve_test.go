package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/ragmem/ragmem/internal/sandbox"
	"github.com/ragmem/ragmem/internal/server"
)

// TestMain lets the test binary act as the ragmem binary, so that the
// black-box test below starts `ragmem serve` as a real, separate process
// (built from this package, race detector included when the tests use it).
func TestMain(m *testing.M) {
	// A child reading a document (internal/docread) for a test's index.
	sandbox.Main()
	if os.Getenv("RAGMEM_TEST_AS_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	// The scripts of testdata/script run this binary as "ragmem"
	// (testscript.Main copies it under that name into their $PATH, and
	// runs main when it is started so).
	testscript.Main(isolatedRun{m}, map[string]func(){"ragmem": main})
}

// isolatedRun runs the tests with a config home and a data home of their
// own, and fails the run when a test wrote the default data directory.
type isolatedRun struct{ m *testing.M }

func (r isolatedRun) Run() int {
	// The user's own config file must not reach the tests.
	cfgHome, err := os.MkdirTemp("", "ragmem-test-config-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", cfgHome)
	os.Unsetenv("RAGMEM_CONFIG")
	// Nor may a test reach the user's own data directory: one that forgets
	// --dir gets an empty one of its own, and the run fails.
	dataHome, err := os.MkdirTemp("", "ragmem-test-data-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_DATA_HOME", dataHome)
	os.Unsetenv("RAGMEM_DIR")
	code := r.m.Run()
	if left, _ := os.ReadDir(filepath.Join(dataHome, "ragmem")); len(left) > 0 && code == 0 {
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		fmt.Fprintf(os.Stderr, "a test wrote the default data directory (it must pass --dir or its own XDG_DATA_HOME): %v\n", names)
		code = 1
	}
	os.RemoveAll(cfgHome)
	os.RemoveAll(dataHome)
	return code
}

// served is a running `ragmem serve` process.
type served struct {
	t     *testing.T
	cmd   *exec.Cmd
	base  string
	token string
	// printedToken is the token the banner printed (first start only).
	printedToken string
	mu           sync.Mutex
	stdout       bytes.Buffer
	stderr       bytes.Buffer
	exited       chan error
}

var (
	listenLine = regexp.MustCompile(`ragmem: serving .* on (http://127\.0\.0\.1:\d+)`)
	tokenLine  = regexp.MustCompile(`^    (rgm_[A-Za-z0-9_-]+)$`)
)

// startServe starts `ragmem --dir dir serve --addr 127.0.0.1:0 args...` and
// waits until it listens. The token is read from its first-start banner.
func startServe(t *testing.T, dir string, args ...string) *served {
	t.Helper()
	return startServeEnv(t, dir, []string{"RAGMEM_EMBEDDER=lexical"}, args...)
}

// startServeEnv is startServe with env added to the process's environment.
func startServeEnv(t *testing.T, dir string, env []string, args ...string) *served {
	t.Helper()
	full := append([]string{"--dir", dir, "serve", "--addr", "127.0.0.1:0"}, args...)
	cmd := exec.Command(os.Args[0], full...)
	cmd.Env = append(append(os.Environ(), "RAGMEM_TEST_AS_MAIN=1"), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &served{t: t, cmd: cmd, exited: make(chan error, 1)}
	cmd.Stderr = &lockedWriter{mu: &s.mu, w: &s.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.stdout.WriteString(line + "\n")
			if m := listenLine.FindStringSubmatch(line); m != nil {
				s.base = m[1]
			}
			if m := tokenLine.FindStringSubmatch(line); m != nil {
				s.token, s.printedToken = m[1], m[1]
			}
			// The banner ends with the web UI login link and its hint.
			if !signalled && s.base != "" && strings.Contains(line, "for a new link)") {
				signalled = true
				close(ready)
			}
			s.mu.Unlock()
		}
		if !signalled {
			close(ready)
		}
		s.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-s.exited
		}
	})
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		t.Fatalf("ragmem serve did not start; stderr:\n%s", s.errText())
	}
	if s.base == "" {
		t.Fatalf("ragmem serve exited without listening; stdout:\n%s\nstderr:\n%s", s.outText(), s.errText())
	}
	if s.token == "" { // not the first start: the token is in the token file
		toks, err := server.Tokens(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, tok := range toks {
			if tok.Namespace == "" {
				s.token = tok.Secret
			}
		}
	}
	return s
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (s *served) outText() string { s.mu.Lock(); defer s.mu.Unlock(); return s.stdout.String() }
func (s *served) errText() string { s.mu.Lock(); defer s.mu.Unlock(); return s.stderr.String() }

// stop sends SIGTERM and waits for a clean exit.
func (s *served) stop() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		s.t.Fatal(err)
	}
	select {
	case err := <-s.exited:
		if err != nil {
			s.t.Fatalf("ragmem serve exited with %v; stderr:\n%s", err, s.errText())
		}
	case <-time.After(90 * time.Second):
		s.t.Fatalf("ragmem serve did not stop on SIGTERM")
	}
}

type httpResult struct {
	status int
	header http.Header
	body   []byte
}

// call sends a request with the token unless noAuth; extra headers are
// name, value pairs.
func (s *served) call(method, path string, body []byte, noAuth bool, headers ...string) httpResult {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if !noAuth {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return httpResult{status: res.StatusCode, header: res.Header, body: b}
}

func jsonBody(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decode(t *testing.T, r httpResult, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// TestServeBlackBox starts `ragmem serve` as its own process on a free
// loopback port and checks it from outside, as a browser extension would.
func TestServeBlackBox(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process")
	}
	const origin = "chrome-extension://abcdefghijklmnopabcdefghijklmnop"
	dir := t.TempDir()
	s := startServe(t, dir, "--allow-origin", origin)
	if s.token == "" || !strings.Contains(s.outText(), s.base+"/ui/login?code=") {
		t.Fatalf("no token or login link printed on first start:\n%s", s.outText())
	}
	for _, line := range strings.Split(s.outText(), "\n") {
		if strings.Contains(line, s.token) && strings.TrimSpace(line) != s.token {
			t.Fatalf("the token is printed inside a line (a URL?): %q", line)
		}
	}
	if fi, err := os.Stat(dir + "/server-tokens.json"); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}

	// Authentication.
	if r := s.call("GET", "/v1/stats", nil, true); r.status != http.StatusUnauthorized || !bytes.Contains(r.body, []byte(`"code":"unauthorized"`)) {
		t.Errorf("no token: %d %s", r.status, r.body)
	}
	if r := s.call("GET", "/v1/stats", nil, false); r.status != http.StatusOK {
		t.Errorf("with token: %d %s", r.status, r.body)
	}
	// CORS.
	q := jsonBody(t, map[string]any{"query": "anything"})
	if r := s.call("POST", "/v1/search", q, false, "Origin", "https://evil.example"); r.header.Get("Access-Control-Allow-Origin") != "" || r.status != http.StatusForbidden {
		t.Errorf("disallowed origin: %d, ACAO %q", r.status, r.header.Get("Access-Control-Allow-Origin"))
	}
	if r := s.call("POST", "/v1/search", q, false, "Origin", origin); r.header.Get("Access-Control-Allow-Origin") != origin || r.status != http.StatusOK {
		t.Errorf("allowed origin: %d, ACAO %q", r.status, r.header.Get("Access-Control-Allow-Origin"))
	}
	if r := s.call("OPTIONS", "/v1/pages", nil, true, "Origin", origin, "Access-Control-Request-Method", "POST"); r.status != http.StatusNoContent || r.header.Get("Access-Control-Allow-Origin") != origin {
		t.Errorf("preflight: %d %v", r.status, r.header)
	}
	// An 11 MiB body.
	big := jsonBody(t, map[string]any{"url": "https://big.example/", "text": strings.Repeat("a", 11<<20)})
	if r := s.call("POST", "/v1/pages", big, false); r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("11 MiB body: %d %s", r.status, r.body)
	}

	// Index a page, poll its job, find it, build a context with it, delete it.
	const url = "https://notes.example/heron"
	html := `<html><head><title>Grey herons</title></head><body><nav>Home</nav><article><h1>Grey herons</h1>
<p>The grey heron stands motionless in shallow water and strikes at fish with its dagger-like bill.
Herons nest in colonies called heronries, often high in tall trees near lakes.</p></article></body></html>`
	r := s.call("POST", "/v1/pages", jsonBody(t, map[string]any{"url": url, "html": html}), false)
	if r.status != http.StatusAccepted {
		t.Fatalf("POST /v1/pages: %d %s", r.status, r.body)
	}
	var acc struct{ JobID string }
	decode(t, r, &acc)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var job struct{ State, Error string }
		decode(t, s.call("GET", "/v1/jobs/"+acc.JobID, nil, false), &job)
		if job.State == "done" {
			break
		}
		if job.State == "failed" || time.Now().After(deadline) {
			t.Fatalf("job %s: %+v", acc.JobID, job)
		}
		time.Sleep(20 * time.Millisecond)
	}
	found := func() bool {
		var res struct{ Results []struct{ URL string } }
		decode(t, s.call("POST", "/v1/search", jsonBody(t, map[string]any{"query": "heron heronries colonies"}), false), &res)
		for _, x := range res.Results {
			if x.URL == url {
				return true
			}
		}
		return false
	}
	if !found() {
		t.Fatal("indexed page not found by /v1/search")
	}
	var ctx struct {
		Text    string
		Message struct{ Role, Content string }
		Tokens  struct{ Total int }
	}
	decode(t, s.call("POST", "/v1/context", jsonBody(t, map[string]any{"query": "Where do herons nest?", "model": "gpt-4o"}), false), &ctx)
	if !strings.Contains(ctx.Text, "heronries") || !strings.Contains(ctx.Text, url) || ctx.Message.Role != "assistant" || ctx.Tokens.Total == 0 {
		t.Errorf("context: %+v", ctx)
	}
	if r := s.call("DELETE", "/v1/pages?url="+url, nil, false); r.status != http.StatusOK {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	if found() {
		t.Error("deleted page still found")
	}

	// Probes; metrics need the token (--metrics-public lifts that).
	for _, p := range []string{"/healthz", "/readyz", "/"} {
		if r := s.call("GET", p, nil, true); r.status != http.StatusOK {
			t.Errorf("GET %s: %d", p, r.status)
		}
	}
	if r := s.call("GET", "/metrics", nil, true); r.status != http.StatusUnauthorized {
		t.Errorf("GET /metrics without the token: %d", r.status)
	}
	if r := s.call("GET", "/metrics", nil, false); r.status != http.StatusOK || !bytes.Contains(r.body, []byte("ragmem_http_requests_total")) {
		t.Errorf("GET /metrics with the token: %d", r.status)
	}
	// Pages queued just before SIGTERM are indexed before the process exits.
	for i := 0; i < 20; i++ {
		body := jsonBody(t, map[string]any{"url": fmt.Sprintf("https://queue.example/%d", i), "text": strings.Repeat(fmt.Sprintf("Queued page %d. ", i), 300)})
		if r := s.call("POST", "/v1/pages", body, false); r.status != http.StatusAccepted {
			t.Fatalf("queue %d: %d %s", i, r.status, r.body)
		}
	}
	s.stop()
	if !strings.Contains(s.outText(), "ragmem: stopped") || !strings.Contains(s.errText(), "requestId=") {
		t.Errorf("stdout:\n%s\nstderr (first 2000 bytes):\n%.2000s", s.outText(), s.errText())
	}
	out := mustRun(t, "--dir", dir, "sources", "--json")
	var srcs struct{ Total int }
	if err := json.Unmarshal([]byte(out), &srcs); err != nil || srcs.Total != 20 {
		t.Errorf("after shutdown, %d sources (want the 20 queued): %v", srcs.Total, err)
	}

	// The second start prints no token; token show prints it.
	s2 := startServe(t, dir)
	if s2.printedToken != "" || strings.Contains(s2.outText(), "rgm_") {
		t.Errorf("token printed again:\n%s", s2.outText())
	}
	s2.token = strings.TrimSpace(mustRun(t, "--dir", dir, "token", "show"))
	if s2.token != s.token {
		t.Errorf("token show: %q, want %q", s2.token, s.token)
	}
	if r := s2.call("GET", "/v1/stats", nil, false); r.status != http.StatusOK {
		t.Errorf("second start: %d %s", r.status, r.body)
	}
	s2.stop()
}

func TestServeRefusesNonLoopback(t *testing.T) {
	cases := []struct {
		flags serveFlags
		ok    bool
		want  string
	}{
		{serveFlags{addr: "127.0.0.1:7437"}, true, ""},
		{serveFlags{addr: "localhost:0"}, true, ""},
		{serveFlags{addr: "[::1]:7437"}, true, ""},
		{serveFlags{addr: "0.0.0.0:7437"}, false, "not a loopback"},
		{serveFlags{addr: ":7437"}, false, "not a loopback"},
		{serveFlags{addr: "192.168.1.5:7437"}, false, "not a loopback"},
		{serveFlags{addr: "0.0.0.0:7437", allowRemote: true}, false, "needs TLS"},
		{serveFlags{addr: "0.0.0.0:7437", allowRemote: true, insecureRemote: true}, true, ""},
		{serveFlags{addr: "0.0.0.0:7437", allowRemote: true, tlsCert: "c.pem"}, false, "both --tls-cert and --tls-key"},
		{serveFlags{addr: "nonsense"}, false, "host:port"},
	}
	for _, c := range cases {
		c.flags.logFormat = "text"
		_, err := c.flags.check()
		if c.ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v", c.flags, err)
		}
	}
	// And through the command line.
	_, _, err := runCLI(t, "--dir", t.TempDir(), "serve", "--addr", "0.0.0.0:0")
	if err == nil || !strings.Contains(err.Error(), "--allow-remote") {
		t.Errorf("serve on 0.0.0.0: %v", err)
	}
}

func TestTokenCommands(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := runCLI(t, "--dir", dir, "token", "show"); err == nil {
		t.Error("token show without a token succeeded")
	}
	tok := strings.TrimSpace(mustRun(t, "--dir", dir, "token", "rotate"))
	if !strings.HasPrefix(tok, "rgm_") || strings.TrimSpace(mustRun(t, "--dir", dir, "token", "show")) != tok {
		t.Fatalf("rotate/show: %q", tok)
	}
	alice := strings.TrimSpace(mustRun(t, "--dir", dir, "token", "rotate", "--namespace", "alice"))
	if alice == tok || strings.TrimSpace(mustRun(t, "--dir", dir, "token", "show", "--namespace", "alice")) != alice {
		t.Fatalf("namespace token %q", alice)
	}
	list := mustRun(t, "--dir", dir, "token", "list")
	if !strings.Contains(list, "alice") || !strings.Contains(list, "(main") || strings.Contains(list, "rgm_") {
		t.Errorf("list shows secrets or misses tokens:\n%s", list)
	}
	if _, _, err := runCLI(t, "--dir", dir, "token", "rotate", "--namespace", "../x"); err == nil {
		t.Error("bad namespace accepted")
	}
}
