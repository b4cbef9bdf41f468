// Package clients_test runs the test suites of the Python and TypeScript
// clients (python/, typescript/) from `go test ./...`, in a package of its
// own so that they have their own time budget.
package clients_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ragmem/ragmem/rag"
	"github.com/ragmem/ragmem/search"
)

// The Python and TypeScript clients (clients/) are tested by their own
// suites against a real `ragmem serve`; TestClients runs both, so that
// `go test ./...` exercises them, and then checks that one search gives the
// same ids and scores through every surface.
//
// Without python3, or without node and clients/typescript/node_modules
// (`npm ci` there), a suite is skipped; with CI set it fails instead
// (.ci/run installs both). $RAGMEM_PYTHON names the Python to use.

func inCI() bool {
	v := os.Getenv("CI")
	return v != "" && v != "0" && v != "false"
}

// missing skips the test, or fails it in CI.
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	if inCI() {
		t.Fatalf(format+" (CI is set: .ci/run installs it)", args...)
	}
	t.Skipf(format, args...)
}

// buildRagmem builds the ragmem binary into a temporary folder.
func buildRagmem(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ragmem")
	build := exec.Command("go", "build", "-o", bin, "./cmd/ragmem")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func pythonPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("RAGMEM_PYTHON"); p != "" {
		return p
	}
	p, err := exec.LookPath("python3")
	if err != nil {
		missing(t, "no python3 on the PATH")
	}
	return p
}

// nodeReady reports whether the TypeScript suite can run: node, npm and
// the package's dev dependencies.
func nodeReady(t *testing.T) (node, npm string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, "no node on the PATH")
	}
	npm, err = exec.LookPath("npm")
	if err != nil {
		missing(t, "no npm on the PATH")
	}
	if _, err := os.Stat("typescript/node_modules/typescript"); err != nil {
		missing(t, "clients/typescript/node_modules is not installed (npm ci in clients/typescript)")
	}
	return node, npm
}

// clientEnv is the environment of a client suite: the binary to start
// servers from, and no server of the user's.
func clientEnv(bin string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RAGMEM_URL=") && !strings.HasPrefix(kv, "RAGMEM_TOKEN=") && !strings.HasPrefix(kv, "RAGMEM_NAMESPACE=") {
			env = append(env, kv)
		}
	}
	return append(env, "RAGMEM_BIN="+bin)
}

func run(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	t.Logf("%s %s: passed in %s", filepath.Base(name), strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
}

func TestClients(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the client suites")
	}
	bin := buildRagmem(t)
	t.Run("python", func(t *testing.T) {
		run(t, "..", clientEnv(bin), pythonPath(t), "-m", "unittest", "discover", "clients/python")
	})
	t.Run("typescript", func(t *testing.T) {
		_, npm := nodeReady(t)
		run(t, "typescript", clientEnv(bin), npm, "test")
	})
	t.Run("same results everywhere", func(t *testing.T) { sameResultsEverywhere(t, bin) })
}

// hit is a result as every surface reports it.
type hit struct {
	ID    string  `json:"id"`
	Score float64 `json:"score"`
}

// sameResultsEverywhere indexes the sample corpus through the CLI (which goes
// through the server that owns the store), then runs the same searches over
// HTTP, through the Python and TypeScript clients, the CLI's --json and
// `ragmem mcp`'s search_memory, and through the Go API on the store once
// the server stopped: the ids and scores are the same, bit for bit.
func sameResultsEverywhere(t *testing.T, bin string) {
	dir := filepath.Join(t.TempDir(), "data")
	env := append(clientEnv(bin), "RAGMEM_EMBEDDER=lexical", "XDG_CONFIG_HOME="+t.TempDir(), "RAGMEM_CONFIG=", "RAGMEM_DIR=")
	srv := exec.Command(bin, "--dir", dir, "serve", "--addr", "127.0.0.1:0")
	srv.Env = env
	stdout, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	srv.Stderr = &stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() {
		_ = srv.Process.Kill()
		<-exited
	})
	listen := regexp.MustCompile(`ragmem: serving .* on (http://127\.0\.0\.1:\d+)`)
	var base string
	sc := bufio.NewScanner(stdout)
	for base == "" && sc.Scan() {
		if m := listen.FindStringSubmatch(sc.Text()); m != nil {
			base = m[1]
		}
	}
	go func() {
		_, _ = io.Copy(io.Discard, stdout)
		exited <- srv.Wait()
	}()
	if base == "" {
		t.Fatalf("ragmem serve did not start:\n%s", stderr.String())
	}
	cli := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--dir", dir}, args...)...)
		cmd.Env = env
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("ragmem %v: %v\n%s", args, err, errOut.String())
		}
		return out
	}
	token := strings.TrimSpace(string(cli("token", "show")))
	cli("index", "../internal/sample/corpus")

	queries := []string{"How does hybrid search combine BM25 and vectors?", "sourdough starter", "vector database embedded or server", "token budget for the context window"}
	q, _ := json.Marshal(queries)
	surfaces := map[string][][]hit{}

	for _, query := range queries {
		body, _ := json.Marshal(map[string]any{"query": query, "topK": 10})
		req, _ := http.NewRequest("POST", base+"/v1/search", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out struct{ Results []hit }
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("search: %d %v", resp.StatusCode, err)
		}
		surfaces["http"] = append(surfaces["http"], out.Results)

		var cliOut struct{ Results []hit }
		if err := json.Unmarshal(cli("search", "--json", "--top-k", "10", query), &cliOut); err != nil {
			t.Fatal(err)
		}
		surfaces["cli --json"] = append(surfaces["cli --json"], cliOut.Results)
	}

	// MCP: `ragmem mcp`, which goes through the server too, and its
	// search_memory tool's structured output.
	{
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.Command(bin, "--dir", dir, "mcp", "--read-only")
		cmd.Env = env
		var mcpErr bytes.Buffer
		cmd.Stderr = &mcpErr
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "clients-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("ragmem mcp: %v\n%s", err, mcpErr.String())
		}
		for _, query := range queries {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_memory", Arguments: map[string]any{"query": query, "topK": 10}})
			if err != nil || res.IsError {
				t.Fatalf("search_memory: %v %+v\n%s", err, res, mcpErr.String())
			}
			b, _ := json.Marshal(res.StructuredContent)
			var out struct{ Results []hit }
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatalf("search_memory: %v: %s", err, b)
			}
			surfaces["mcp"] = append(surfaces["mcp"], out.Results)
		}
		cs.Close()
	}

	decode := func(name string, out []byte) {
		var got [][]hit
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%s: %v: %s", name, err, out)
		}
		surfaces[name] = got
	}
	clientRun := func(name string, args ...string) []byte {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = append(clientEnv(bin), "RAGMEM_URL="+base, "RAGMEM_TOKEN="+token, "QUERIES="+string(q), "PYTHONPATH=python")
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, errOut.String())
		}
		return out
	}
	if py, err := exec.LookPath(firstNonEmpty(os.Getenv("RAGMEM_PYTHON"), "python3")); err == nil {
		decode("python", clientRun("python", py, "-c", `
import json, os, ragmem
c = ragmem.Client()
print(json.dumps([[{"id": r["id"], "score": r["score"]} for r in c.search(q, top_k=10)["results"]] for q in json.loads(os.environ["QUERIES"])]))
`))
	} else if inCI() {
		t.Fatal("no python3")
	}
	if node, err := exec.LookPath("node"); err == nil {
		if _, err := os.Stat("typescript/dist/index.js"); err == nil {
			abs, _ := filepath.Abs("typescript/dist/index.js")
			decode("typescript", clientRun("typescript", node, "--input-type=module", "-e", fmt.Sprintf(`
import { Client } from %q;
const c = new Client();
const out = [];
for (const q of JSON.parse(process.env.QUERIES)) out.push((await c.search(q, { topK: 10 })).results.map((r) => ({ id: r.id, score: r.score })));
console.log(JSON.stringify(out));
`, "file://"+abs)))
		} else if inCI() {
			t.Fatal("clients/typescript/dist is not built (npm test builds it)")
		}
	} else if inCI() {
		t.Fatal("no node")
	}

	// The Go API, on the store the server leaves.
	if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		exited <- nil // for the cleanup
	case <-time.After(60 * time.Second):
		t.Fatal("ragmem serve did not stop")
	}
	ctx := context.Background()
	eng, err := rag.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	for _, query := range queries {
		res, err := eng.Search(ctx, query, &search.Options{TopK: 10})
		if err != nil {
			t.Fatal(err)
		}
		var hs []hit
		for _, r := range res {
			hs = append(hs, hit{ID: r.Record.ID, Score: r.Score})
		}
		surfaces["go"] = append(surfaces["go"], hs)
	}

	want := surfaces["http"]
	total := 0
	for i, query := range queries {
		if len(want[i]) == 0 {
			t.Fatalf("%q: no results over HTTP", query)
		}
		total += len(want[i])
	}
	if total < 12 {
		t.Fatalf("only %d results over HTTP for %d queries", total, len(queries))
	}
	for name, got := range surfaces {
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s differs from HTTP:\n got  %v\n want %v", name, got, want)
		}
		for i := range got {
			for j := range got[i] {
				if got[i][j] != want[i][j] {
					t.Errorf("%s, %q, result %d: %+v, HTTP %+v", name, queries[i], j, got[i][j], want[i][j])
				}
			}
		}
	}
	if len(surfaces) < 6 && inCI() {
		t.Fatalf("only %d surfaces compared", len(surfaces))
	}
	t.Logf("%d surfaces, %d queries, %d results: the same ids and scores (%v)", len(surfaces), len(queries), total, keys(surfaces))
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func keys(m map[string][][]hit) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
