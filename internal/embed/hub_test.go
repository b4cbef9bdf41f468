package embed

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeHub mimics the two Hugging Face hub endpoints PullModel uses:
//
//	GET /api/models/{owner}/{name}/revision/{rev}?blobs=true  model info, with
//	    each file's size and git blob id, and for LFS files their sha256
//	GET /{owner}/{name}/resolve/{sha}/{file}  the file (LFS files through a
//	    302 to a CDN path, as the hub does)
type fakeHub struct {
	repo   string
	sha    string
	files  map[string][]byte
	lfs    map[string]bool
	tamper map[string]bool // serve altered bytes for these files
	token  string          // when set, required as a bearer token

	mu       sync.Mutex
	requests []string
}

func newFakeHub(t *testing.T, modelDir string) *fakeHub {
	h := &fakeHub{
		repo: "minishlab/potion-test", sha: "0123456789abcdef0123456789abcdef01234567",
		files: map[string][]byte{}, lfs: map[string]bool{"model.safetensors": true}, tamper: map[string]bool{},
	}
	for _, f := range []string{"config.json", "tokenizer.json", "model.safetensors", "modules.json"} {
		b, err := os.ReadFile(filepath.Join(modelDir, f))
		if err != nil {
			t.Fatal(err)
		}
		h.files[f] = b
	}
	h.files["README.md"] = []byte("---\nlicense: mit\n---\n# test model\n")
	return h
}

func (h *fakeHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.requests = append(h.requests, r.URL.Path)
	h.mu.Unlock()
	if h.token != "" && r.Header.Get("Authorization") != "Bearer "+h.token && !strings.HasPrefix(r.URL.Path, "/cdn/") {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	infoPrefix := "/api/models/" + h.repo + "/revision/"
	resolvePrefix := "/" + h.repo + "/resolve/" + h.sha + "/"
	switch {
	case strings.HasPrefix(r.URL.Path, infoPrefix):
		if r.URL.Query().Get("blobs") != "true" {
			http.Error(w, "want blobs=true", http.StatusBadRequest)
			return
		}
		type lfs struct {
			SHA256      string `json:"sha256"`
			Size        int    `json:"size"`
			PointerSize int    `json:"pointerSize"`
		}
		type sib struct {
			Name   string `json:"rfilename"`
			BlobID string `json:"blobId"`
			Size   int    `json:"size"`
			LFS    *lfs   `json:"lfs,omitempty"`
		}
		var sibs []sib
		for name, b := range h.files {
			s := sib{Name: name, Size: len(b)}
			if h.lfs[name] {
				sum := sha256.Sum256(b)
				s.LFS = &lfs{SHA256: hex.EncodeToString(sum[:]), Size: len(b), PointerSize: 134}
				s.BlobID = strings.Repeat("ab", 20) // the pointer's blob id: not the content's
			} else {
				g := sha1.New()
				fmt.Fprintf(g, "blob %d\x00", len(b))
				g.Write(b)
				s.BlobID = hex.EncodeToString(g.Sum(nil))
			}
			sibs = append(sibs, s)
		}
		json.NewEncoder(w).Encode(map[string]any{"id": h.repo, "sha": h.sha, "siblings": sibs})
	case strings.HasPrefix(r.URL.Path, resolvePrefix):
		name := strings.TrimPrefix(r.URL.Path, resolvePrefix)
		if _, ok := h.files[name]; !ok {
			http.NotFound(w, r)
			return
		}
		if h.lfs[name] {
			http.Redirect(w, r, "/cdn/"+name, http.StatusFound)
			return
		}
		h.serve(w, name)
	case strings.HasPrefix(r.URL.Path, "/cdn/"):
		h.serve(w, strings.TrimPrefix(r.URL.Path, "/cdn/"))
	default:
		http.NotFound(w, r)
	}
}

func (h *fakeHub) serve(w http.ResponseWriter, name string) {
	b := h.files[name]
	if h.tamper[name] {
		b = append([]byte(nil), b...)
		b[len(b)/2] ^= 0x55
	}
	w.Write(b)
}

func TestPullModel(t *testing.T) {
	hub := newFakeHub(t, fixtureModel(t, "float32"))
	srv := httptest.NewServer(hub)
	defer srv.Close()
	cache := t.TempDir()
	var progressed sync.Map
	opts := &PullOptions{Endpoint: srv.URL, CacheDir: cache, Progress: func(f string, done, total int64) { progressed.Store(f, done) }}
	res, err := PullModel(context.Background(), hub.repo, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Dir != filepath.Join(cache, "minishlab", "potion-test") || res.Revision != hub.sha || len(res.Files) != 4 {
		t.Fatalf("result %+v", res)
	}
	for _, f := range []string{"config.json", "tokenizer.json", "model.safetensors", "README.md"} {
		got, err := os.ReadFile(filepath.Join(res.Dir, f))
		if err != nil || string(got) != string(hub.files[f]) {
			t.Fatalf("%s not downloaded intact (%v)", f, err)
		}
		if v, _ := progressed.Load(f); v != int64(len(hub.files[f])) {
			t.Errorf("progress of %s ended at %v", f, v)
		}
	}
	man, err := readManifest(res.Dir)
	if err != nil || man.Repo != hub.repo || man.Revision != hub.sha {
		t.Fatalf("manifest %+v, %v", man, err)
	}
	sum := sha256.Sum256(hub.files["model.safetensors"])
	if man.Files["model.safetensors"] != hex.EncodeToString(sum[:]) {
		t.Errorf("manifest sha256 %s", man.Files["model.safetensors"])
	}

	// The pulled model is usable by name, with its repository as identity.
	t.Setenv("RAGMEM_MODELS", cache)
	e, err := Parse("model2vec:" + hub.repo)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(e.Identity(), "model2vec/minishlab/potion-test/") {
		t.Errorf("identity %q", e.Identity())
	}
	if ms, err := PulledModels(); err != nil || len(ms) != 1 || ms[0].Repo != hub.repo {
		t.Errorf("PulledModels = %+v, %v", ms, err)
	}

	// A second pull at the same revision downloads nothing.
	n := len(hub.requests)
	res2, err := PullModel(context.Background(), hub.repo, opts)
	if err != nil || len(res2.Files) != 0 || len(hub.requests) != n+1 {
		t.Errorf("second pull: %+v, %v, %d requests", res2, err, len(hub.requests)-n)
	}
	// A damaged cached file is noticed and downloaded again.
	os.WriteFile(filepath.Join(res.Dir, "config.json"), []byte("{}"), 0o644)
	if res3, err := PullModel(context.Background(), hub.repo, opts); err != nil || len(res3.Files) != 4 {
		t.Errorf("repair pull: %+v, %v", res3, err)
	}
}

func TestPullModelChecksumMismatch(t *testing.T) {
	for _, file := range []string{"model.safetensors", "tokenizer.json"} { // LFS sha256, git blob sha1
		t.Run(file, func(t *testing.T) {
			hub := newFakeHub(t, fixtureModel(t, "float32"))
			hub.tamper[file] = true
			srv := httptest.NewServer(hub)
			defer srv.Close()
			cache := t.TempDir()
			_, err := PullModel(context.Background(), hub.repo, &PullOptions{Endpoint: srv.URL, CacheDir: cache})
			if !errors.Is(err, ErrChecksum) {
				t.Fatalf("err = %v, want ErrChecksum", err)
			}
			// Nothing is left in the cache: no model directory, no staging files.
			left, _ := filepath.Glob(filepath.Join(cache, "minishlab", "*"))
			if len(left) != 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

func TestPullModelErrors(t *testing.T) {
	model := fixtureModel(t, "float32")
	ctx := context.Background()

	// Offline: nothing listens on the port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	_, err = PullModel(ctx, "minishlab/potion-base-8M", &PullOptions{Endpoint: dead, CacheDir: t.TempDir()})
	if !errors.Is(err, ErrOffline) || !strings.Contains(err.Error(), "model2vec:/path/to/folder") {
		t.Errorf("offline: %v", err)
	}

	hub := newFakeHub(t, model)
	srv := httptest.NewServer(hub)
	defer srv.Close()
	if _, err := PullModel(ctx, "minishlab/no-such-model", &PullOptions{Endpoint: srv.URL, CacheDir: t.TempDir()}); !errors.Is(err, ErrModelNotFound) {
		t.Errorf("unknown model: %v", err)
	}
	hub.token = "secret"
	if _, err := PullModel(ctx, hub.repo, &PullOptions{Endpoint: srv.URL, CacheDir: t.TempDir()}); !errors.Is(err, ErrHub) || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Errorf("gated without token: %v", err)
	}
	if _, err := PullModel(ctx, hub.repo, &PullOptions{Endpoint: srv.URL, CacheDir: t.TempDir(), Token: "secret"}); err != nil {
		t.Errorf("gated with token: %v", err)
	}
	hub.token = ""
	delete(hub.files, "tokenizer.json")
	if _, err := PullModel(ctx, hub.repo, &PullOptions{Endpoint: srv.URL, CacheDir: t.TempDir()}); !errors.Is(err, ErrHub) {
		t.Errorf("not a Model2Vec repository: %v", err)
	}
	for _, bad := range []string{"", "potion", "a/b/c", "../x", "a/..", "a b/c"} {
		if _, err := PullModel(ctx, bad, &PullOptions{Endpoint: srv.URL, CacheDir: t.TempDir()}); !errors.Is(err, ErrBadSpec) {
			t.Errorf("repo %q: %v", bad, err)
		}
	}
	if _, err := PullModel(ctx, hub.repo, &PullOptions{Endpoint: "ftp://x", CacheDir: t.TempDir()}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("bad endpoint: %v", err)
	}
}
