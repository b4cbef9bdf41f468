package ragmem_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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
	{"agent", "mcpserver"},                 // bindings of rag.Memory
	{"server"},
	{"owner"}, // one owner per data directory, its socket, its clients (over the server's API)
	{"cmd", "examples", "clients"},
}

const module = "github.com/ragmem/ragmem"

// behindTheDoor are the stages and bindings that live under internal/ (Go
// keeps them out of other modules' reach): internal/server is the server
// binding, internal/index/local the local backend, internal/when search's
// reading of time expressions. Their place in the data flow is that of the
// name without internal/.
var behindTheDoor = map[string]string{
	"embed": "embed", "memory": "memory", "owner": "owner", "server": "server", "mcpserver": "mcpserver",
	"extract": "extract", "export": "export", "eval": "eval", "index/local": "index/local",
	"index/vecindex": "index/vecindex", "index/weaviate": "index/weaviate", "index/engine": "index/engine", "when": "search/when", "rerank": "search/rerank",
}

// logical returns the data-flow name of a module-relative package path:
// the path itself, or for a package behind the door, its name without
// internal/.
func logical(rel string) string {
	r, ok := strings.CutPrefix(rel, "internal/")
	if !ok {
		return rel
	}
	for dir, name := range behindTheDoor {
		if r == dir || strings.HasPrefix(r, dir+"/") {
			return name + r[len(dir):]
		}
	}
	return rel
}

// stageOf returns the stage of a module package ("" path is the module root),
// -1 for internal packages (importable by all) and -2 for unknown ones.
func stageOf(pkg string) int {
	rel := logical(strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/"))
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
		module + "/internal/server":         14,
		module + "/internal/index/local":    3,
		module + "/internal/index/engine":   3,
		module + "/internal/when":           4,
		module + "/internal/memory/memhttp": 12,
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

// facadeImports says what each adapter may import from the module, in its
// non-test files: the facade (rag) and a short list, each entry with its
// reason. The adapters reach the store through rag.Engine (or rag.Memory)
// and speak its vocabulary: the data model of package index (index.Document,
// index.Filter, index.Job), rag's errors (rag.ErrTooManyChunks); none
// imports the engine (internal/index/engine) or a backend, so that what an
// adapter may do with the store is what rag offers.
//
// index, search, prefs and chunk are on the lists rather than aliased: the
// engine's own methods take and return their types (Engine.IndexDocument
// takes an index.Document, Engine.Search takes a *search.Options,
// Engine.Preferences is a *prefs.Store, an index.Document's Format is a
// chunk.Format), and a second name for each would be noise, not a
// boundary. Every entry must be used (a stale entry fails), and every
// package under cmd/ must be listed.
var facadeImports = map[string]map[string]string{
	"server": {
		"rag":               "the facade: every handler of the API is a binding of rag.Memory",
		"index":             "the data model: rag's methods take and return its types",
		"extract":           "the server's limits on a page's extraction (rag.Options.Extract)",
		"memory":            "memory.AttrDir: a memory's directory is hidden from remote clients",
		"internal/jsonbody": "bounded JSON request bodies",
		"internal/wal":      "the token file is written atomically",
		"internal/pathless": "no error sent to a client names a file of the server",
		"internal/perm":     "the data directory and the token file are the user's (ssh's rule)",
	},
	"mcpserver": {
		"rag":                "the facade: every tool is a binding of rag.Memory",
		"index":              "the data model: rag's methods take and return its types",
		"prefs":              "the preference tools",
		"chunk":              "the formats of documents the tools accept",
		"internal/pathless":  "no tool error names a file of the server",
		"internal/mcpschema": "the tools' input schemas, inferred as memmcp's are",
	},
	"agent": {
		"rag":              "the facade",
		"prefs":            "the preference tool",
		"chunk":            "the formats of pages the loop reads, and HTML extraction of fetched pages",
		"budget":           "the loop sizes its own prompt to the model's window",
		"internal/clean":   "one line cleaner",
		"internal/llmchat": "one chat-model client",
	},
	"owner": {
		"rag":           "the facade: the owner's client is a rag.Client over its socket",
		"server":        "the owner speaks the server's API on its socket",
		"internal/wal":  "the ownership lock",
		"internal/perm": "the data directory is the user's (ssh's rule) before its owner file is trusted",
	},
	"memory/memhttp": {
		"rag":               "the facade",
		"memory":            "the memory store it serves",
		"memory/extraction": "extraction of memories from a conversation",
		"internal/clean":    "one line cleaner",
		"internal/jsonbody": "bounded JSON request bodies",
	},
	"memory/memmcp": {
		"rag":                "the facade",
		"memory":             "the memory store it serves",
		"memory/extraction":  "extraction of memories from a conversation",
		"internal/mcpschema": "the tools' input schemas, inferred as mcpserver's are",
	},
	// The composition root and admin tool. Its everyday commands (index,
	// search, sources, rm, jobs, prefs, context) go through rag (or the
	// owner's client, which mirrors it); what reads or builds a store
	// beneath the facade is confined to the files in facadeFileImports.
	"cmd/ragmem": {
		"rag":               "the facade",
		"index":             "the data model: rag's methods take and return its types",
		"search":            "search options and modes of ragmem search",
		"prefs":             "ragmem prefs",
		"embed":             "choosing and building the embedder (configuration, ragmem model)",
		"extract":           "HTML files are extracted before indexing",
		"export":            "ragmem export and import",
		"owner":             "one owner per data directory: the CLI becomes it or is its client",
		"server":            "ragmem serve",
		"mcpserver":         "ragmem mcp",
		"memory":            "ragmem memory",
		"memory/extraction": "ragmem memory extract",
		"memory/memhttp":    "ragmem memory extract asks the owner to refresh its memories",
		"internal/sample":   "ragmem demo indexes the sample corpus built into the binary",
		"internal/wal":      "configuration and export files are written atomically",
		"internal/perm":     "the config file, an export key and a new data directory are the user's (ssh's rule)",
		"internal/reserved": "ragmem search says who wrote a memory and what it may contradict (the memory store's attributes)",
		"internal/sandbox":  "a child process reading one document runs in main (sandbox.Main)",

		"cmd/ragmem/internal/docread":   "PDF, DOCX and EPUB files are read in a sandboxed child process",
		"cmd/ragmem/internal/bench":     "ragmem bench",
		"cmd/ragmem/internal/evalrun":   "ragmem eval",
		"cmd/ragmem/internal/settings":  "the flags, config file and environment every command resolves",
		"cmd/ragmem/internal/ownerd":    "the commands' memory: this process as the data directory's owner or its client",
		"cmd/ragmem/internal/mcpbridge": "ragmem mcp",
		"cmd/ragmem/internal/units":     "sizes in bytes, read from flags and printed",
		"cmd/ragmem/internal/interrupt": "Ctrl-C and SIGTERM stop a command",
		"cmd/ragmem/internal/ingest":    "ragmem index and demo read files and folders into the memory",
	},
	// ragmem index: files and folders read into documents and indexed
	// through the contract.
	"cmd/ragmem/internal/ingest": {
		"index":                       "the data model: rag's methods take and return its types",
		"rag":                         "the facade: documents are indexed through rag.Memory",
		"chunk":                       "the formats of the files it reads",
		"extract":                     "PDF, DOCX and EPUB readers' errors and limits",
		"internal/folder":             "folders are walked as git does (ignore files, excludes)",
		"internal/wal":                "a folder's remembered excludes are written atomically",
		"cmd/ragmem/internal/docread": "PDF, DOCX and EPUB files are read in a sandboxed child process",
	},
	// Signals; it imports nothing of the module.
	"cmd/ragmem/internal/interrupt": {},
	// Sizes in bytes; it imports nothing of the module.
	"cmd/ragmem/internal/units": {},
	// The configuration of every command: flags, the config file, the
	// environment and what the store records, and the engine opened with
	// them.
	"cmd/ragmem/internal/settings": {
		"index":         "the data model: rag's methods take and return its types",
		"rag":           "the facade: the engine opened with the settings",
		"embed":         "choosing and building the embedder",
		"owner":         "the options of the owner's client for the command's namespace",
		"server":        "namespace names and directories, as over HTTP",
		"internal/perm": "the config file and a new data directory are the user's (ssh's rule)",
	},
	// This process as the owner of the data directory (serve, the
	// background owner, a command that finds no owner) or as its client.
	"cmd/ragmem/internal/ownerd": {
		"index":                        "the data model: rag's methods take and return its types",
		"rag":                          "the facade: the commands hold a rag.Memory",
		"prefs":                        "the preferences of the contract the owned store forwards",
		"embed":                        "the store's embedder, in the owner's status; one query cache for a server's stores",
		"export":                       "the owner's export and import routes",
		"owner":                        "the owner's claim, socket and client",
		"server":                       "the owner serves the HTTP API on its socket (and TCP for serve)",
		"mcpserver":                    "MCP at /mcp on the owner",
		"memory":                       "the agent memories the owner serves",
		"memory/memhttp":               "the memory API mounted on the owner",
		"memory/memmcp":                "the memory tools mounted on MCP",
		"cmd/ragmem/internal/settings": "the settings the owner opens stores with",
	},
	"cmd/ragmem/internal/mcpbridge": {
		"owner":                        "it finds, starts and follows the owner of the data directory",
		"server":                       "the namespace header on the owner's MCP endpoint",
		"mcpserver":                    "the stdio transport that answers malformed lines",
		"cmd/ragmem/internal/settings": "the settings a background owner is started with",
		"cmd/ragmem/internal/ownerd":   "what the owner says of itself, and how long a handover may take",
	},
	// ragmem bench measures the index and its backends directly, beneath
	// the facade.
	"cmd/ragmem/internal/bench": {
		"chunk":                     "the chunking the index does, for embedding every chunk beforehand",
		"embed":                     "the embedders under benchmark, and a loopback OpenAI-compatible server for one",
		"index":                     "the documents and records the benchmarks index",
		"index/engine":              "the benchmarks measure the engine directly",
		"index/local":               "the local backend under benchmark",
		"index/driver":              "the text a record is embedded by",
		"search":                    "queries in each mode, as the CLI runs them",
		"internal/benchdata":        "the benchmarks' corpora",
		"cmd/ragmem/internal/units": "sizes printed as ragmem stats prints them",
	},
	// ragmem eval runs the eval package on BEIR data sets and LoCoMo
	// conversations.
	"cmd/ragmem/internal/evalrun": {
		"eval":        "the evaluation itself",
		"embed":       "the embedder the command builds",
		"search":      "the modes, fusions and signals an evaluation varies",
		"index/local": "the BM25 options an evaluation may vary",
	},
	"cmd/ragmem/internal/docread": {
		"extract":          "the document readers it runs in the child",
		"internal/sandbox": "the child process and its limits",
	},
	"cmd/ragmem-load": {
		"rag":             "the facade",
		"server":          "it loads a server",
		"server/loadtest": "the load generator",
	},
	"examples/agent": {
		"rag":   "the facade",
		"agent": "the agent loop it demonstrates",
		"chunk": "the format of the page it reads",
		"embed": "choosing the embedder",
	},
}

// storeAllowed are the adapters that may call rag.Engine.Store, which hands
// out the index: the composition root, which gives agent memory the
// engine's store (memory.Options.Index) and whose admin commands check it,
// and its owner (ownerd), which does the same for the stores it serves.
var storeAllowed = map[string]bool{"cmd/ragmem": true, "cmd/ragmem/internal/ownerd": true}

// facadeFileImports lets files of cmd/ragmem, matched by path.Match, import
// more: the admin commands that work on a store beneath the facade.
var facadeFileImports = map[string]map[string]string{
	"cmd/ragmem/internal/settings/backend.go": {
		"index/weaviate": "--backend weaviate: the composition root picks the backend",
		"index/driver":   "the backend it builds is rag.Options.Backend, a driver.Backend",
	},
	"cmd/ragmem/internal/ownerd/check.go": {
		"index/engine": "ragmem check verifies the store's files and queue, with no engine open, or the owner's live store",
		"index/local":  "the local backend's own consistency check",
	},
	"cmd/ragmem/cmd_jobs.go": {
		"index/engine": "ragmem jobs lists a closed store's queue, with no engine open",
	},
	"cmd/ragmem/cmd_config.go": {
		"index/engine": "reads the embedder a closed store records",
		"index/local":  "opens a closed store read-only to read it",
	},
	"cmd/ragmem/cmd_migrate.go": {
		"index/engine": "ragmem migrate copies one backend into another",
		"index/local":  "the local backend it copies from or to",
	},
}

func TestAdaptersImportOnlyTheFacade(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	usedFile := map[string]bool{}
	checked := map[string]bool{}
	for {
		var p struct {
			ImportPath     string
			Dir            string
			GoFiles        []string
			CgoFiles       []string
			IgnoredGoFiles []string // other platforms' files (sock_other.go)
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		rel := logical(strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/"))
		allowed, ok := facadeImports[rel]
		if !ok {
			if strings.HasPrefix(rel, "cmd/") {
				t.Errorf("command %s has no list in facadeImports in layout_test.go", rel)
			}
			continue
		}
		checked[rel] = true
		used := map[string]bool{}
		for _, name := range slices.Concat(p.GoFiles, p.CgoFiles, p.IgnoredGoFiles) {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			file := rel + "/" + name
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			if !storeAllowed[rel] {
				// The engine's Store() hands out the index itself: a way
				// round the import rule that the rule cannot see.
				ast.Inspect(f, func(n ast.Node) bool {
					if c, ok := n.(*ast.CallExpr); ok && len(c.Args) == 0 {
						if sel, ok := c.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Store" {
							t.Errorf("%s:%d calls .Store(): adapters use the engine's methods (add one to rag if one is missing)", file, fset.Position(c.Pos()).Line)
						}
					}
					return true
				})
			}
			for _, spec := range f.Imports {
				imp, _ := strconv.Unquote(spec.Path.Value)
				if !strings.HasPrefix(imp, module+"/") {
					continue
				}
				to := logical(strings.TrimPrefix(imp, module+"/"))
				if _, ok := allowed[to]; ok {
					used[to] = true
					continue
				}
				if pat := fileAllows(file, to); pat != "" {
					usedFile[pat] = true
					continue
				}
				t.Errorf("%s imports %s: adapters go through rag (add an Engine method if one is missing), or list it with its reason in layout_test.go", file, to)
			}
		}
		for imp := range allowed {
			if !used[imp] {
				t.Errorf("facadeImports[%q] allows %s, which no file imports: remove it", rel, imp)
			}
		}
	}
	for rel := range facadeImports {
		if !checked[rel] {
			t.Errorf("facadeImports lists %s, which go list does not know", rel)
		}
	}
	for pat := range facadeFileImports {
		if !usedFile[pat] {
			t.Errorf("facadeFileImports[%q] matches no file that needs it: remove it", pat)
		}
	}
}

// fileAllows returns the pattern of facadeFileImports that lets file
// import to ("" when none does).
func fileAllows(file, to string) string {
	for pat, allowed := range facadeFileImports {
		if ok, _ := path.Match(pat, file); ok {
			if _, ok := allowed[to]; ok {
				return pat
			}
		}
	}
	return ""
}

// TestTypesWithLocksSayIfSafeForConcurrentUse: an exported type that holds
// a lock or an atomic value has state shared between goroutines, and its
// doc comment says whether it is safe for concurrent use. Types without such
// state say nothing of it.
func TestTypesWithLocksSayIfSafeForConcurrentUse(t *testing.T) {
	saysConcurrency := regexp.MustCompile(`(?i)concurrent\s+use`)
	checked := 0
	err := filepath.WalkDir(".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") && name != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, s := range gd.Specs {
				ts := s.(*ast.TypeSpec)
				st, ok := ts.Type.(*ast.StructType)
				if !ok || !ts.Name.IsExported() || !holdsLock(st) {
					continue
				}
				checked++
				doc := ts.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				if doc == nil || !saysConcurrency.MatchString(doc.Text()) {
					t.Errorf("%s: type %s holds a lock or an atomic value; its doc comment does not say whether it is safe for concurrent use", name, ts.Name.Name)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no exported type with a lock found; is the walk looking at the tree?")
	}
}

// holdsLock reports whether a struct has a field of a sync lock or
// sync/atomic type.
func holdsLock(st *ast.StructType) bool {
	for _, f := range st.Fields.List {
		typ := f.Type
		if p, ok := typ.(*ast.StarExpr); ok {
			typ = p.X
		}
		if ix, ok := typ.(*ast.IndexExpr); ok {
			typ = ix.X
		}
		sel, ok := typ.(*ast.SelectorExpr)
		if !ok {
			continue
		}
		pkg, ok := sel.X.(*ast.Ident)
		if ok && (pkg.Name == "sync" && (sel.Sel.Name == "Mutex" || sel.Sel.Name == "RWMutex") || pkg.Name == "atomic") {
			return true
		}
	}
	return false
}
