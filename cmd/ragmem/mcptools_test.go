package main

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/ragmem/ragmem/cmd/ragmem/internal/ownerd"
)

// toolTable reads the MCP tool tables of a Markdown file: rows "| `name` |
// `input`, ... | what |" that follow a "| tool | input | ..." header.
func toolTable(t *testing.T, path string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([a-z_]+)` \\|([^|]*)\\|")
	code := regexp.MustCompile("`([A-Za-z_]+)`")
	out := map[string][]string{}
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "| tool | input |"):
			in = true
		case !strings.HasPrefix(line, "|"):
			in = false
		case in:
			if m := row.FindStringSubmatch(line); m != nil {
				var inputs []string
				for _, c := range code.FindAllStringSubmatch(m[2], -1) {
					inputs = append(inputs, c[1])
				}
				out[m[1]] = inputs
			}
		}
	}
	return out
}

// properties returns the names of a tool's input properties.
func properties(t *testing.T, tool *mcp.Tool) []string {
	b, err := json.Marshal(tool.InputSchema)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	var ps []string
	for p := range s.Properties {
		ps = append(ps, p)
	}
	return ps
}

// TestMCPToolsListedEverywhere: `ragmem mcp --help` names every tool
// served (it is made from the registered tools), docs/mcp.md's tool table
// lists exactly them, and every input it and docs/memory.md name is one
// the tool takes.
func TestMCPToolsListedEverywhere(t *testing.T) {
	set, err := ownerd.RegisteredMCPTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	all := set.All()
	if len(all) < 14 || len(set.ReadOnly) == 0 || len(set.Writes) == 0 || len(set.WithLLM) != 1 {
		t.Fatalf("tools: %d read-only, %d writes, %d with a chat model", len(set.ReadOnly), len(set.Writes), len(set.WithLLM))
	}
	byName := map[string]*mcp.Tool{}
	for _, tool := range all {
		byName[tool.Name] = tool
	}
	out, _, err := runCLI(t, "mcp", "--help")
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for name := range byName {
		if !strings.Contains(flat, name) {
			t.Errorf("ragmem mcp --help does not name %s:\n%s", name, out)
		}
	}
	table := toolTable(t, "../../docs/mcp.md")
	for name := range byName {
		if _, ok := table[name]; !ok {
			t.Errorf("docs/mcp.md's tool table lacks %s", name)
		}
	}
	for _, doc := range []string{"../../docs/mcp.md", "../../docs/memory.md"} {
		for name, inputs := range toolTable(t, doc) {
			tool, ok := byName[name]
			if !ok {
				t.Errorf("%s lists a tool %s that is not served", doc, name)
				continue
			}
			props := properties(t, tool)
			for _, in := range inputs {
				if !slices.Contains(props, in) {
					t.Errorf("%s: %s takes no input %q (it takes %v)", doc, name, in, props)
				}
			}
		}
	}
}
