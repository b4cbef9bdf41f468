package main

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fieldPaths lists every field name of a JSON value with its path
// ("results[].explanation.method"); array elements share one path.
func fieldPaths(t *testing.T, raw []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	set := map[string]bool{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if prefix == "attrs" || strings.HasSuffix(prefix, ".attrs") {
					continue // attribute keys are data, not field names
				}
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				set[p] = true
				walk(p, e)
			}
		case []any:
			for _, e := range x {
				walk(prefix+"[]", e)
			}
		}
	}
	walk("", v)
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func without(paths []string, drop ...string) []string {
	return slices.DeleteFunc(slices.Clone(paths), func(p string) bool {
		for _, d := range drop {
			if p == d || strings.HasPrefix(p, d+".") || strings.HasPrefix(p, d+"[]") {
				return true
			}
		}
		return false
	})
}

func samePaths(t *testing.T, what string, want []string, surfaces map[string][]string) {
	t.Helper()
	for name, got := range surfaces {
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: %s field names differ from HTTP's\n got %v\nwant %v", what, name, got, want)
		}
	}
	for _, p := range want {
		last := p[strings.LastIndexByte(p, '.')+1:]
		if strings.ContainsAny(last, "_") || last != "" && last[0] >= 'A' && last[0] <= 'Z' {
			t.Errorf("%s: field %q is not camelCase", what, p)
		}
	}
}

// TestOneWireFormat performs the same search, context and source listing
// through the CLI's --json, the HTTP API and the MCP tools, and checks that
// all three answer with the same field names, camelCase.
func TestOneWireFormat(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, "--dir", dir, "--embedder", "lexical", "index", "--attr", "team=search", "../../internal/sample/corpus")
	mustRun(t, "--dir", dir, "prefs", "add", "style", "The user prefers short answers.")
	const q = "hybrid search with bm25 and vectors"
	cliSearch := fieldPaths(t, []byte(mustRun(t, "--dir", dir, "search", "--json", q)))
	cliContext := fieldPaths(t, []byte(mustRun(t, "--dir", dir, "context", "--json", q)))
	cliSources := fieldPaths(t, []byte(mustRun(t, "--dir", dir, "sources", "--json")))

	s := startServe(t, dir, "--mcp")
	defer s.stop()
	httpSearch := fieldPaths(t, s.call("POST", "/v1/search", jsonBody(t, map[string]any{"query": q}), false).body)
	httpContext := fieldPaths(t, s.call("POST", "/v1/context", jsonBody(t, map[string]any{"query": q}), false).body)
	httpSources := fieldPaths(t, s.call("GET", "/v1/sources?limit=50", nil, false).body)

	cs, err := connectMCP(t, s, map[string]string{"Authorization": "Bearer " + s.token})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tool := func(name string, args map[string]any) []string {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %s", name, err, textOf(res))
		}
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		return fieldPaths(t, raw)
	}
	mcpSearch := tool("search_memory", map[string]any{"query": q})
	mcpContext := tool("get_context", map[string]any{"query": q})
	mcpSources := tool("list_sources", nil)

	if !slices.Contains(httpSearch, "results[].explanation.method") || !slices.Contains(httpSearch, "results[].attrs") ||
		!slices.Contains(httpContext, "budgets.knowledge") || !slices.Contains(httpContext, "sources[].chunkId") ||
		!slices.Contains(httpSources, "sources[].docType") {
		t.Fatalf("the answers are not what this test expects:\n%v\n%v\n%v", httpSearch, httpContext, httpSources)
	}
	samePaths(t, "search", httpSearch, map[string][]string{"CLI": cliSearch, "MCP": mcpSearch})
	// Each surface may add one thing of its own: the CLI the chat messages
	// ready to send, MCP the rule for the system prompt.
	samePaths(t, "context", httpContext, map[string][]string{"CLI": without(cliContext, "messages"), "MCP": without(mcpContext, "referenceRule")})
	samePaths(t, "sources", httpSources, map[string][]string{"CLI": cliSources, "MCP": mcpSources})
	for _, p := range append(append(cliSearch, cliContext...), cliSources...) {
		if strings.EqualFold(p[strings.LastIndexByte(p, '.')+1:], "vector") {
			t.Errorf("a vector leaked into the CLI's JSON: %s", p)
		}
	}
}
