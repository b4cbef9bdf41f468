// Package wvtest starts real Weaviate servers on loopback for tests: one
// node, or a cluster whose nodes each have their own HTTP, gRPC, gossip,
// data and Raft ports.
//
// GraphQL is out of reach of every test: the servers run with
// DISABLE_GRAPHQL=true, and the URL a test opens a backend with (Node.Backend,
// URL) leads to a loopback proxy that answers 410 Gone to /v1/graphql and
// fails the test that sent such a request, and forwards the rest of the
// REST API. The gRPC API is reached directly; the URL names it with its
// grpc parameter (http://127.0.0.1:P?grpc=127.0.0.1:G).
//
// The server binary comes from $RAGMEM_WEAVIATE_BIN (scripts/weaviate.sh
// sets it after installing the server), else from the cache that script
// fills ($HOME/.cache/ragmem/weaviate-v1.35.2/bin/weaviate-server). Without
// a binary a test is skipped with a message saying how to get one, except
// in CI ($CI set), where a missing server is a failure: a skipped check
// must never pass for a green one.
package wvtest

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Version is the Weaviate server version the tests run against.
const Version = "v1.35.2"

// Binary returns the path of the weaviate-server binary, skipping t (or
// failing it in CI) when there is none.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("RAGMEM_WEAVIATE_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("RAGMEM_WEAVIATE_BIN=%s: %v", p, err)
		}
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cache", "ragmem", "weaviate-"+Version, "bin", "weaviate-server")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	msg := "no Weaviate server binary: run scripts/weaviate.sh install (go install github.com/weaviate/weaviate/cmd/weaviate-server@" +
		Version + ") or set RAGMEM_WEAVIATE_BIN"
	if os.Getenv("CI") != "" {
		t.Fatal(msg + " (CI is set, so this is a failure, not a skip)")
	}
	t.Skip(msg)
	return ""
}

// URL returns the URL to open a backend on a single Weaviate server for t:
// the one named by $RAGMEM_WEAVIATE_URL (started by scripts/weaviate.sh,
// its gRPC API at the URL's grpc parameter, else on port 50051), else one
// started for t and stopped when t ends. Either way the REST API is reached
// through a proxy that refuses GraphQL (see the package comment).
func URL(t testing.TB) string {
	t.Helper()
	if raw := os.Getenv("RAGMEM_WEAVIATE_URL"); raw != "" {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil || u.Host == "" {
			t.Fatalf("RAGMEM_WEAVIATE_URL=%q is not a URL", raw)
		}
		grpcAddr := u.Query().Get("grpc")
		if grpcAddr == "" {
			grpcAddr = net.JoinHostPort(u.Hostname(), "50051")
		}
		return Front(t, u.Scheme+"://"+u.Host, grpcAddr)
	}
	return Start(t, 1)[0].Backend
}

// Node is one running server. A Node is safe for concurrent use.
type Node struct {
	Name                                    string
	URL                                     string // http://127.0.0.1:PORT, the REST API itself
	Backend                                 string // what a backend opens: see Front
	HTTP, GRPC, Gossip, Data, Raft, RaftRPC int
	Dir                                     string // data directory
	LogPath                                 string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	env  []string
	bin  string
}

// Options configure StartWith. The zero value is Start's: anonymous access.
type Options struct {
	// APIKey, when set, turns anonymous access off and lets requests in
	// with this API key only (AUTHENTICATION_APIKEY_ALLOWED_KEYS).
	APIKey string
}

// Start starts an n-node cluster (n = 1: a single server) on loopback and
// waits until every node is ready. The nodes are killed when t ends.
func Start(t testing.TB, n int) []*Node {
	t.Helper()
	return StartWith(t, n, Options{})
}

// StartWith is Start with options.
func StartWith(t testing.TB, n int, o Options) []*Node {
	t.Helper()
	bin := Binary(t)
	root := t.TempDir()
	ports, err := freePorts(n)
	if err != nil {
		t.Fatalf("wvtest: no free ports: %v", err)
	}
	nodes := make([]*Node, n)
	var join []string
	for i := range nodes {
		p := ports[i]
		nodes[i] = &Node{
			Name: fmt.Sprintf("node%d", i+1), HTTP: p[0], GRPC: p[1], Gossip: p[2], Data: p[2] + 1, Raft: p[3], RaftRPC: p[3] + 1,
			Dir: filepath.Join(root, fmt.Sprintf("node%d", i+1)), bin: bin,
		}
		nodes[i].URL = fmt.Sprintf("http://127.0.0.1:%d", p[0])
		nodes[i].LogPath = filepath.Join(root, fmt.Sprintf("node%d.log", i+1))
		join = append(join, fmt.Sprintf("%s:%d", nodes[i].Name, nodes[i].Raft))
	}
	t.Cleanup(func() {
		for _, nd := range nodes {
			nd.Kill()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for i, nd := range nodes {
		nd.env = env(nd, nodes[0], strings.Join(join, ","), n, o)
		if err := nd.start(); err != nil {
			t.Fatalf("wvtest: start %s: %v", nd.Name, err)
		}
		// The others join the first node's gossip: it must listen first,
		// since a node does not retry a failed join.
		if i == 0 && n > 1 {
			if err := waitListen(ctx, nd.Gossip); err != nil {
				t.Fatalf("wvtest: %s gossip port: %v\n%s", nd.Name, err, nd.Tail(40))
			}
		}
	}
	for _, nd := range nodes {
		if err := nd.WaitReady(ctx); err != nil {
			t.Fatalf("wvtest: %s not ready: %v\n%s", nd.Name, err, nd.Tail(40))
		}
	}
	if n > 1 {
		if err := WaitNodes(ctx, nodes[0].URL, n, o.APIKey); err != nil {
			t.Fatalf("wvtest: cluster did not form: %v\n%s", err, nodes[0].Tail(40))
		}
	}
	for _, nd := range nodes {
		if err := graphQLOff(ctx, nd.URL, o.APIKey); err != nil {
			t.Fatalf("wvtest: %s: %v", nd.Name, err)
		}
		nd.Backend = Front(t, nd.URL, fmt.Sprintf("127.0.0.1:%d", nd.GRPC))
	}
	return nodes
}

// graphQLOff checks that the server's own switch turned its GraphQL API
// off: it answers a query with "graphql api is disabled".
func graphQLOff(ctx context.Context, url, apiKey string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/graphql", strings.NewReader(`{"query":"{Get{RagmemMeta{key}}}"}`))
	req.Header.Set("Content-Type", "application/json")
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if !strings.Contains(string(body), "graphql api is disabled") {
		return fmt.Errorf("DISABLE_GRAPHQL=true did not turn GraphQL off: HTTP %d %s", resp.StatusCode, body)
	}
	return nil
}

func env(nd, first *Node, raftJoin string, n int, o Options) []string {
	e := append(os.Environ(),
		"AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED=true",
		"AUTHENTICATION_APIKEY_ENABLED=false",
		"PERSISTENCE_DATA_PATH="+nd.Dir,
		"DEFAULT_VECTORIZER_MODULE=none",
		"ENABLE_MODULES=",
		"API_BASED_MODULES_DISABLED=true",
		"DISABLE_TELEMETRY=true",
		"GO_PROFILING_DISABLE=true",
		"PROMETHEUS_MONITORING_ENABLED=false",
		"CLUSTER_ADVERTISE_ADDR=127.0.0.1",
		"CLUSTER_BIND_ADDR=127.0.0.1",
		"CLUSTER_IN_LOCALHOST=true",
		"CLUSTER_HOSTNAME="+nd.Name,
		"CLUSTER_GOSSIP_BIND_PORT="+strconv.Itoa(nd.Gossip),
		"CLUSTER_DATA_BIND_PORT="+strconv.Itoa(nd.Data),
		"GRPC_PORT="+strconv.Itoa(nd.GRPC),
		"RAFT_PORT="+strconv.Itoa(nd.Raft),
		"RAFT_INTERNAL_RPC_PORT="+strconv.Itoa(nd.RaftRPC),
		"RAFT_JOIN="+raftJoin,
		"RAFT_BOOTSTRAP_EXPECT="+strconv.Itoa(n),
		"GOMAXPROCS=1", // the test machine's cores are shared
		"LOG_LEVEL=warning",
		"DISABLE_GRAPHQL=true", // ragmem must not need it (see the package comment)
	)
	if nd != first {
		e = append(e, fmt.Sprintf("CLUSTER_JOIN=127.0.0.1:%d", first.Gossip))
	}
	if o.APIKey != "" {
		// Later entries win over the ones above.
		e = append(e, "AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED=false", "AUTHENTICATION_APIKEY_ENABLED=true",
			"AUTHENTICATION_APIKEY_ALLOWED_KEYS="+o.APIKey, "AUTHENTICATION_APIKEY_USERS=ragmem-test")
	}
	return e
}

// Front starts, for t, a loopback proxy to the REST API at restURL that
// answers 410 Gone to the GraphQL API (/v1/graphql and below) and forwards
// everything else, and returns the URL a backend opens: the proxy's, with
// grpcAddr as its grpc parameter. A GraphQL request fails t when t ends,
// even if the code that sent it ignored the 410. The proxy stops when t
// ends.
func Front(t testing.TB, restURL, grpcAddr string) string {
	t.Helper()
	ts := httptest.NewServer(newGate(t, restURL))
	t.Cleanup(ts.Close)
	return ts.URL + "?grpc=" + url.QueryEscape(grpcAddr)
}

// TLSFront is Front over TLS: an https proxy to the REST API and a TLS
// listener that forwards the gRPC API's bytes to grpcAddr, both with
// httptest's self-signed certificate for 127.0.0.1. It returns the https
// URL (with the TLS listener as its grpc parameter) and an HTTP client that
// trusts the certificate.
func TLSFront(t testing.TB, restURL, grpcAddr string) (string, *http.Client) {
	t.Helper()
	ts := httptest.NewTLSServer(newGate(t, restURL))
	t.Cleanup(ts.Close)
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: ts.TLS.Certificates, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatalf("wvtest: TLS listener: %v", err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	track := func(c net.Conn) {
		mu.Lock()
		open = append(open, c)
		mu.Unlock()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", grpcAddr)
			if err != nil {
				c.Close()
				continue
			}
			track(c)
			track(up)
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(up, c); up.Close() }()
			go func() { defer wg.Done(); _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ts.URL + "?grpc=" + url.QueryEscape(l.Addr().String()), ts.Client()
}

// gate is Front's handler.
type gate struct {
	rp    *httputil.ReverseProxy
	count atomic.Int64
	first atomic.Value // string: the first GraphQL request
}

func newGate(t testing.TB, restURL string) *gate {
	t.Helper()
	u, err := url.Parse(restURL)
	if err != nil || u.Host == "" {
		t.Fatalf("wvtest: REST URL %q: %v", restURL, err)
	}
	g := &gate{rp: httputil.NewSingleHostReverseProxy(u)}
	t.Cleanup(func() {
		if n := g.count.Load(); n > 0 {
			t.Errorf("wvtest: %d request(s) to the GraphQL API, the first %v: ragmem must not use GraphQL", n, g.first.Load())
		}
	})
	return g
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p := strings.ToLower(r.URL.Path); p == "/v1/graphql" || strings.HasPrefix(p, "/v1/graphql/") {
		g.first.CompareAndSwap(nil, r.Method+" "+r.URL.Path)
		g.count.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusGone)
		_, _ = io.WriteString(w, `{"error":[{"message":"the GraphQL API is out of reach in ragmem's tests (internal/wvtest)"}]}`)
		return
	}
	g.rp.ServeHTTP(w, r)
}

func (nd *Node) start() error {
	if err := os.MkdirAll(nd.Dir, 0o755); err != nil {
		return err
	}
	logf, err := os.OpenFile(nd.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(nd.bin, "--host", "127.0.0.1", "--port", strconv.Itoa(nd.HTTP), "--scheme", "http")
	cmd.Env = nd.env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}()
	nd.mu.Lock()
	nd.cmd, nd.done = cmd, done
	nd.mu.Unlock()
	return nil
}

// Kill stops the node at once (SIGKILL), as a crash would, and waits for it.
func (nd *Node) Kill() { nd.signal(syscall.SIGKILL) }

func (nd *Node) signal(sig syscall.Signal) {
	nd.mu.Lock()
	cmd, done := nd.cmd, nd.done
	nd.cmd = nil
	nd.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// WaitReady waits for GET /v1/.well-known/ready to answer 200.
func (nd *Node) WaitReady(ctx context.Context) error {
	for {
		nd.mu.Lock()
		done := nd.done
		nd.mu.Unlock()
		select {
		case <-done:
			return errors.New("the server exited")
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, nd.URL+"/v1/.well-known/ready", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func waitListen(ctx context.Context, port int) error {
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// WaitNodes waits until the node at url sees n healthy nodes; apiKey
// authenticates when the servers require it.
func WaitNodes(ctx context.Context, url string, n int, apiKey string) error {
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/v1/nodes", nil)
		if apiKey != "" {
			req.Header.Set("Authorization", "Bearer "+apiKey)
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			var body struct {
				Nodes []struct {
					Status string `json:"status"`
				} `json:"nodes"`
			}
			err = decodeJSON(resp, &body)
			healthy := 0
			for _, nd := range body.Nodes {
				if nd.Status == "HEALTHY" {
					healthy++
				}
			}
			if err == nil && healthy >= n {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("fewer than %d healthy nodes: %w", n, ctx.Err())
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// WaitLeader waits until the node at url reports a Raft leader among the
// cluster's live nodes, as it does again some seconds after the leader died.
// Schema requests made before that can hang until the old leader's
// connection times out.
func WaitLeader(ctx context.Context, url string) error {
	for {
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		req, _ := http.NewRequestWithContext(rctx, http.MethodGet, url+"/v1/cluster/statistics", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var body struct {
				Statistics []struct {
					Status string `json:"status"`
					Raft   struct {
						State string `json:"state"`
					} `json:"raft"`
				} `json:"statistics"`
			}
			if decodeJSON(resp, &body) == nil {
				for _, s := range body.Statistics {
					if s.Raft.State == "Leader" && s.Status == "HEALTHY" {
						cancel()
						return nil
					}
				}
			}
		}
		cancel()
		select {
		case <-ctx.Done():
			return fmt.Errorf("no Raft leader: %w", ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Tail returns the last lines of the node's log, for failure messages.
func (nd *Node) Tail(lines int) string {
	b, err := os.ReadFile(nd.LogPath)
	if err != nil {
		return ""
	}
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return nd.Name + " log:\n" + strings.Join(ls, "\n")
}

// freePorts returns, per node, an HTTP port, a gRPC port, a port p whose
// successor is free too (gossip, data) and another such pair (Raft, Raft RPC).
func freePorts(n int) ([][4]int, error) {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	one := func() (int, error) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		held = append(held, l)
		return l.Addr().(*net.TCPAddr).Port, nil
	}
	pair := func() (int, error) {
		for tries := 0; tries < 100; tries++ {
			p, err := one()
			if err != nil {
				return 0, err
			}
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+1))
			if err != nil {
				continue
			}
			// memberlist also needs UDP on the gossip port.
			u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				l.Close()
				continue
			}
			u.Close()
			held = append(held, l)
			return p, nil
		}
		return 0, errors.New("no two adjacent free ports")
	}
	out := make([][4]int, n)
	for i := range out {
		for j, f := range []func() (int, error){one, one, pair, pair} {
			p, err := f()
			if err != nil {
				return nil, err
			}
			out[i][j] = p
		}
	}
	return out, nil
}

func decodeJSON(resp *http.Response, v any) error {
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
