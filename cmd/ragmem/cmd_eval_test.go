package main

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"unicode"
)

const tinyBEIR = "../../eval/testdata/tiny"

func TestCLIEval(t *testing.T) {
	out := mustRun(t, "eval", "--dataset", tinyBEIR, "--modes", "fulltext,hybrid", "--tmp", t.TempDir())
	for _, want := range []string{"tiny (test split): 9 documents indexed, 1 without text skipped", "mode", "nDCG@10", "R@5", "R@25", "R@100", "fulltext", "bm25", "hybrid", "indexing"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	out = mustRun(t, "eval", "--dataset", tinyBEIR, "--modes", "fulltext", "--bm25", "k1=0.9,b=0.4,stop=lucene,title=0", "--json", "--tmp", t.TempDir())
	var rep struct {
		FullText string `json:"fullText"`
		Results  []struct {
			Mode   string  `json:"mode"`
			NDCG10 float64 `json:"ndcg@10"`
			R100   float64 `json:"recall@100"`
			P50    float64 `json:"latencyP50Ms"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if len(rep.Results) != 1 || rep.Results[0].Mode != "fulltext" || rep.Results[0].NDCG10 != 1 || rep.Results[0].R100 != 1 {
		t.Errorf("results %+v", rep.Results)
	}
	if !strings.Contains(rep.FullText, "stop=lucene") || !strings.Contains(rep.FullText, "k1=0.9 b=0.4") || strings.Contains(rep.FullText, "title") {
		t.Errorf("fullText %q", rep.FullText)
	}
	for _, args := range [][]string{
		{"eval"},
		{"eval", "--dataset", tinyBEIR, "--fusion", "relative:alpha=2"},
		{"eval", "--dataset", tinyBEIR, "--dataset", t.TempDir()},
		{"eval", "--dataset", tinyBEIR, "--modes", "sideways"},
		{"eval", "--dataset", tinyBEIR, "--bm25", "k1=banana"},
		{"eval", "--dataset", tinyBEIR, "--fusion", "mean"},
		{"eval", "--dataset", tinyBEIR, "--split", "train"},
		{"eval", "--dataset", t.TempDir()},
	} {
		if _, _, err := runCLI(t, args...); err == nil {
			t.Errorf("ragmem %s: no error", strings.Join(args, " "))
		}
	}
}

// Several data sets give each one's table and their macro average; several
// fusions give a hybrid row each; --per-query lists every query's ranking.
func TestCLIEvalSeveral(t *testing.T) {
	// A folder of data sets stands for each of them.
	parent := t.TempDir()
	for _, name := range []string{"one", "two"} {
		copyDir(t, tinyBEIR, filepath.Join(parent, name))
	}
	if err := os.Mkdir(filepath.Join(parent, "raw"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, "eval", "--dataset", parent, "--modes", "fulltext,hybrid", "--fusion", "relative",
		"--fusion", "rrf:k=10", "--per-query", "--depth", "4", "--tmp", t.TempDir())
	for _, want := range []string{"data set   one (test split)", "data set   two (test split)", "macro average over 2 data sets (one, two)",
		"relative(alpha=0.10, default, feedback=3)", "rrf(k=10, feedback=3)", "rrf:k=10", "query  mode"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out = mustRun(t, "eval", "--dataset", tinyBEIR+","+tinyBEIR, "--modes", "fulltext,hybrid", "--fusion", "relative",
		"--fusion", "rrf:k=10", "--per-query", "--depth", "4", "--json", "--tmp", t.TempDir())
	var rep struct {
		Datasets []struct {
			Dataset string `json:"dataset"`
			Results []struct {
				Mode     string  `json:"mode"`
				Fusion   string  `json:"fusion"`
				NDCG10   float64 `json:"ndcg@10"`
				R5       float64 `json:"recall@5"`
				R25      float64 `json:"recall@25"`
				PerQuery []struct {
					ID      string   `json:"id"`
					Ranking []string `json:"ranking"`
				} `json:"perQuery"`
			} `json:"results"`
		} `json:"datasets"`
		Macro []struct {
			Mode     string  `json:"mode"`
			Fusion   string  `json:"fusion"`
			NDCG10   float64 `json:"ndcg@10"`
			Datasets int     `json:"datasets"`
		} `json:"macro"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Datasets) != 2 || len(rep.Macro) != 3 || rep.Macro[2].Fusion != "rrf:k=10" || rep.Macro[0].Datasets != 2 {
		t.Fatalf("report %+v", rep)
	}
	for i, m := range rep.Macro {
		if r := rep.Datasets[0].Results[i]; m.NDCG10 != r.NDCG10 || r.R5 == 0 || r.R25 == 0 {
			t.Errorf("macro row %d %+v against %+v", i, m, r)
		}
	}
	for _, q := range rep.Datasets[1].Results[2].PerQuery {
		if len(q.Ranking) == 0 || len(q.Ranking) > 4 {
			t.Errorf("%s: ranking %v, want 1 to 4 documents", q.ID, q.Ranking)
		}
	}
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// fakeEmbeddings speaks the OpenAI embeddings protocol: a hashed bag of
// lower-cased words in 64 dimensions, so that texts sharing words are close.
func fakeEmbeddings(t *testing.T, calls *atomic.Int64) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		calls.Add(1)
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var data []item
		for i, text := range req.Input {
			v := make([]float64, 64)
			for _, word := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) }) {
				h := fnv.New32a()
				h.Write([]byte(word))
				v[h.Sum32()%64]++
			}
			v[0] += 0.01
			var n float64
			for _, x := range v {
				n += x * x
			}
			e := make([]float32, 64)
			for j, x := range v {
				e[j] = float32(x / math.Sqrt(n))
			}
			data = append(data, item{Object: "embedding", Index: i, Embedding: e})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model,
			"usage": map[string]int{"prompt_tokens": 1, "total_tokens": 1}})
	}))
}

func TestCLIEvalOpenAICompatible(t *testing.T) {
	var calls atomic.Int64
	srv := fakeEmbeddings(t, &calls)
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("OPENAI_API_KEY", "test-key")
	out := mustRun(t, "--embedder", "openai:fake-embed", "--base-url", srv.URL+"/v1",
		"eval", "--dataset", tinyBEIR, "--modes", "vector,hybrid", "--json", "--tmp", t.TempDir())
	var rep struct {
		Embedder string `json:"embedder"`
		Results  []struct {
			Mode   string  `json:"mode"`
			NDCG10 float64 `json:"ndcg@10"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.HasPrefix(rep.Embedder, "openai/fake-embed") || !strings.Contains(rep.Embedder, "d64") {
		t.Errorf("embedder %q", rep.Embedder)
	}
	if len(rep.Results) != 2 || rep.Results[0].Mode != "vector" || rep.Results[0].NDCG10 < 0.5 {
		t.Errorf("results %+v", rep.Results)
	}
	// The corpus (10 texts) in one request, plus one per judged query: vector
	// and hybrid share the cached query embedding.
	if n := calls.Load(); n != 5 {
		t.Errorf("%d calls to the embeddings server, want 1 + 4", n)
	}
}

// TestCLIModelPull pulls the float32 fixture model from a fake hub and uses
// it by name.
func TestCLIModelPull(t *testing.T) {
	src := "../../embed/testdata/model2vec"
	files := map[string][]byte{}
	for name, path := range map[string]string{
		"config.json": "float32/config.json", "model.safetensors": "float32/model.safetensors", "tokenizer.json": "tokenizer.json",
	} {
		b, err := os.ReadFile(filepath.Join(src, path))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	const repo, sha = "minishlab/tiny", "89abcdef0123456789abcdef0123456789abcdef"
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/api/models/"+repo+"/revision/main":
			var sibs []map[string]any
			for name, b := range files {
				s := map[string]any{"rfilename": name, "size": len(b)}
				if name == "model.safetensors" {
					sum := sha256.Sum256(b)
					s["lfs"] = map[string]any{"sha256": hex.EncodeToString(sum[:]), "size": len(b)}
					s["blobId"] = strings.Repeat("0", 40)
				} else {
					h := sha1.New()
					fmt.Fprintf(h, "blob %d\x00", len(b))
					h.Write(b)
					s["blobId"] = hex.EncodeToString(h.Sum(nil))
				}
				sibs = append(sibs, s)
			}
			json.NewEncoder(w).Encode(map[string]any{"id": repo, "sha": sha, "siblings": sibs})
		case strings.HasPrefix(r.URL.Path, "/"+repo+"/resolve/"+sha+"/"):
			b, ok := files[strings.TrimPrefix(r.URL.Path, "/"+repo+"/resolve/"+sha+"/")]
			if !ok {
				http.NotFound(w, r)
				return
			}
			w.Write(b)
		default:
			http.NotFound(w, r)
		}
	}))
	defer hub.Close()
	cache := t.TempDir()
	t.Setenv("RAGMEM_MODELS", cache)
	out := mustRun(t, "model", "pull", repo, "--endpoint", hub.URL)
	if !strings.Contains(out, "pulled minishlab/tiny (revision 89abcdef0123): 3 files") || !strings.Contains(out, "--embedder model2vec:minishlab/tiny") {
		t.Errorf("pull output: %q", out)
	}
	if out := mustRun(t, "model", "pull", repo, "--endpoint", hub.URL); !strings.Contains(out, "up to date") {
		t.Errorf("second pull: %q", out)
	}
	if out := mustRun(t, "model", "list"); !strings.Contains(out, "minishlab/tiny") {
		t.Errorf("list: %q", out)
	}
	dir, docs := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(docs, "note.md"), "# Otters\n\nOtters hold hands while they sleep.\n")
	mustRun(t, "--dir", dir, "--embedder", "model2vec:"+repo, "index", docs)
	if out := mustRun(t, "--dir", dir, "--embedder", "model2vec:"+repo, "search", "--mode", "vector", "sleeping otters"); !strings.Contains(out, "Otters") {
		t.Errorf("search with the pulled model: %q", out)
	}
	if _, _, err := runCLI(t, "model", "pull", "minishlab/absent", "--endpoint", hub.URL); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("absent model: %v", err)
	}
}

// --locomo writes conversations as memories and reports each question
// category; a folder stands for its .json files.
func TestCLIEvalLoCoMo(t *testing.T) {
	const tiny = "../../eval/testdata/locomo/tiny.json"
	out, errOut, err := runCLI(t, "eval", "--locomo", tiny, "--modes", "fulltext,hybrid", "--tmp", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tiny (qa split): 7 documents", "memories   title=speaker+date context=2 next=1", "category", "2 temporal", "5 adversarial", "hybrid"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "2 evidence ids name no turn (1 questions left without evidence, skipped); 1 sessions without a readable date") {
		t.Errorf("stderr %q", errOut)
	}
	dir := t.TempDir()
	for _, name := range []string{"a.json", "b.JSON"} {
		b, err := os.ReadFile(tiny)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out = mustRun(t, "eval", "--locomo", dir, "--modes", "fulltext", "--turns", "context=0,next=0,title=none", "--signals", "speaker=0,time=1", "--tmp", t.TempDir())
	for _, want := range []string{"macro average over 2 data sets (a, b)", "memories   title=none context=0 next=0"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, args := range [][]string{
		{"eval", "--locomo", tiny, "--dataset", tinyBEIR},
		{"eval", "--dataset", tinyBEIR, "--turns", "context=1"},
		{"eval", "--locomo", tiny, "--turns", "context=99"},
		{"eval", "--locomo", tiny, "--signals", "speaker=-1"},
		{"eval", "--locomo", t.TempDir()},
		{"eval", "--locomo", filepath.Join(t.TempDir(), "none.json")},
		{"eval", "--locomo", tinyBEIR + "/corpus.jsonl"},
	} {
		if _, _, err := runCLI(t, args...); err == nil {
			t.Errorf("ragmem %s: no error", strings.Join(args, " "))
		}
	}
}
