// Package wvtest starts real Weaviate servers on loopback for tests: one
// node, or a cluster whose nodes each have their own HTTP, gRPC, gossip,
// data and Raft ports.
//
// The server binary comes from $RAGMEM_WEAVIATE_BIN (scripts/weaviate.sh
// sets it after installing the server), else from the cache that script
// fills ($HOME/.cache/ragmem/weaviate-v1.35.2/bin/weaviate-server). Without
// a binary a test is skipped with a message saying how to get one, except
// in CI ($CI set), where a missing server is a failure: a skipped check
// must never pass for a green one.
//
// A Node is safe for concurrent use.
package wvtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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

// URL returns the base URL of a single Weaviate server for t: the one named
// by $RAGMEM_WEAVIATE_URL (started by scripts/weaviate.sh), else one started
// for t and stopped when t ends.
func URL(t testing.TB) string {
	t.Helper()
	if u := os.Getenv("RAGMEM_WEAVIATE_URL"); u != "" {
		return strings.TrimRight(u, "/")
	}
	return Start(t, 1)[0].URL
}

// Node is one running server.
type Node struct {
	Name                                    string
	URL                                     string // http://127.0.0.1:PORT
	HTTP, GRPC, Gossip, Data, Raft, RaftRPC int
	Dir                                     string // data directory
	LogPath                                 string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	env  []string
	bin  string
}

// Start starts an n-node cluster (n = 1: a single server) on loopback and
// waits until every node is ready. The nodes are killed when t ends.
func Start(t testing.TB, n int) []*Node {
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
		nd.env = env(nd, nodes[0], strings.Join(join, ","), n)
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
		if err := WaitNodes(ctx, nodes[0].URL, n); err != nil {
			t.Fatalf("wvtest: cluster did not form: %v\n%s", err, nodes[0].Tail(40))
		}
	}
	return nodes
}

func env(nd, first *Node, raftJoin string, n int) []string {
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
	)
	if nd != first {
		e = append(e, fmt.Sprintf("CLUSTER_JOIN=127.0.0.1:%d", first.Gossip))
	}
	return e
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

// WaitNodes waits until the node at url sees n healthy nodes.
func WaitNodes(ctx context.Context, url string, n int) error {
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/v1/nodes", nil)
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
