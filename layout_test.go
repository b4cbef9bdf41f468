package ragmem_test

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// stages is the data flow, left to right. A package may import packages of
// its own stage or of stages to its left (and internal/...), never to its
// right. A package belongs to the stage of the longest name here that is
// its path or a parent of it ("memory/layers" before "memory"). A new
// package must be placed here, which keeps the layout a deliberate
// decision.
var stages = [][]string{
	{"extract"},
	{"chunk"},
	{"embed"},
	{"index"},
	{"search"},
	{"budget"},
	{"prefs"},
	{"rag", "eval", "export"},              // eval measures search and index from beside the facade; export is the facade's portable file
	{"ragmemtest"},                         // test support: generators, checkers and an in-memory engine over the facade
	{"memory"},                             // agent memory: memory files, matching, ranking, the prompt block (and memory/internal/...)
	{"memory/layers", "memory/extraction"}, // the four layers (library); extraction of memories by a chat model
	{"memory/inject"},                      // the injector (library): memory files, rules and episodes in one message
	{"memory/memhttp", "memory/memmcp"},    // agent memory over HTTP and MCP
	{"agent", "mcpserver"},                 // adapters over rag.Engine
	{"server"},
	{"owner"}, // one owner per data directory, its socket, its clients (over the server's API)
	{"cmd", "examples"},
}

const module = "github.com/ragmem/ragmem"

// stageOf returns the stage of a module package ("" path is the module root),
// -1 for internal packages (importable by all) and -2 for unknown ones.
func stageOf(pkg string) int {
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
	if rel == "internal" || strings.HasPrefix(rel, "internal/") {
		return -1
	}
	stage, longest := -2, 0
	for i, st := range stages {
		for _, name := range st {
			if (rel == name || strings.HasPrefix(rel, name+"/")) && len(name) > longest {
				stage, longest = i, len(name)
			}
		}
	}
	return stage
}

func TestImportsFollowTheDataFlow(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	checked := 0
	for {
		var p struct {
			ImportPath string
			Imports    []string
			Name       string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.ImportPath == module {
			continue // the root holds only tests
		}
		from := stageOf(p.ImportPath)
		if from == -2 {
			t.Errorf("package %s is not placed in the data flow; add it to stages in layout_test.go", p.ImportPath)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			to := stageOf(imp)
			if from == -1 && to >= 0 {
				t.Errorf("internal package %s imports stage package %s", p.ImportPath, imp)
			}
			if from >= 0 && to > from {
				t.Errorf("%s imports %s, which is to its right in the data flow", p.ImportPath, imp)
			}
			checked++
		}
	}
	if checked < 10 {
		t.Fatalf("only %d imports checked; go list output was not what this test expects", checked)
	}
}

func TestStageOf(t *testing.T) {
	cases := map[string]int{
		module + "/extract":                 0,
		module + "/chunk":                   1,
		module + "/index/local":             3,
		module + "/internal/tokens":         -1,
		module + "/ragmemtest":              8,
		module + "/memory":                  9,
		module + "/memory/internal/pattern": 9,
		module + "/memory/layers":           10,
		module + "/memory/extraction":       10,
		module + "/memory/inject":           11,
		module + "/memory/memhttp":          12,
		module + "/agent":                   13,
		module + "/server":                  14,
		module + "/owner":                   15,
		module + "/cmd/ragmem":              16,
		module + "/memoryless":              -2,
		module + "/nonsense":                -2,
	}
	for pkg, want := range cases {
		if got := stageOf(pkg); got != want {
			t.Errorf("stageOf(%s) = %d, want %d", pkg, got, want)
		}
	}
}
