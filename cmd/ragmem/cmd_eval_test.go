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

const tinyBEIR = "../../internal/eval/testdata/tiny"

// copyDir copies the tree src to dst (os.CopyFS: files 0666 and folders
// 0777, less the umask).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
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
	src := "../../internal/embed/testdata/model2vec"
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
