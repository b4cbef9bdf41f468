package embed

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ragmem/ragmem/internal/wal"
)

// Errors of PullModel.
var (
	// ErrOffline: the hub could not be reached at all (no network, DNS
	// failure, refused connection, timeout).
	ErrOffline = errors.New("embed: cannot reach the model hub")
	// ErrModelNotFound: the hub has no such repository or revision.
	ErrModelNotFound = errors.New("embed: model not found on the hub")
	// ErrHub: the hub refused the request or answered something unusable.
	ErrHub = errors.New("embed: model hub error")
	// ErrChecksum: a downloaded file's size or hash differs from what the
	// hub announced; the file is discarded.
	ErrChecksum = errors.New("embed: checksum mismatch")
)

// DefaultHubEndpoint is the Hugging Face hub.
const DefaultHubEndpoint = "https://huggingface.co"

// PullOptions configure PullModel. A nil *PullOptions means all defaults.
type PullOptions struct {
	// Endpoint is the hub's base URL. Default $HF_ENDPOINT, else
	// https://huggingface.co.
	Endpoint string
	// Revision is a branch, tag or commit. Default "main".
	Revision string
	// Token authenticates to the hub (gated or private models). Default
	// $HF_TOKEN.
	Token string
	// CacheDir is where models are stored. Default ModelCacheDir().
	CacheDir string
	// Client makes the requests. Default: an http.Client with a 30 s
	// connection and response-header timeout and no overall timeout (ctx
	// bounds the whole pull).
	Client *http.Client
	// Force downloads again even when the cached copy is current.
	Force bool
	// Progress, when set, is called as each file downloads (total is -1
	// when unknown).
	Progress func(file string, done, total int64)
}

// PullResult describes a pull.
type PullResult struct {
	Dir      string   // the model directory, for "model2vec:DIR"
	Repo     string   // "minishlab/potion-base-8M"
	Revision string   // the commit pulled
	Files    []string // files downloaded (none when the cache was current)
	Bytes    int64    // bytes downloaded
}

// modelFiles are the files of a Model2Vec model ragmem downloads; README.md
// (the model card, with its license) is taken when the repository has one.
var modelFiles = []string{"config.json", "tokenizer.json", "model.safetensors"}

const optionalModelFile = "README.md"

type hubSibling struct {
	Name   string `json:"rfilename"`
	Size   *int64 `json:"size"`
	BlobID string `json:"blobId"`
	LFS    *struct {
		SHA256 string `json:"sha256"`
		Size   int64  `json:"size"`
	} `json:"lfs"`
}

type hubInfo struct {
	ID       string       `json:"id"`
	SHA      string       `json:"sha"`
	Siblings []hubSibling `json:"siblings"`
}

// PullModel downloads a Model2Vec model (config.json, tokenizer.json,
// model.safetensors and the model card) from a Hugging Face hub into the
// model cache, verifying each file against the hub's metadata: the sha256
// of LFS files (model.safetensors) and the git blob hash of the others, plus
// every size. The files are written to a staging directory, the model is
// loaded once to check it really is a Model2Vec model, and only then does it
// replace the cached copy, with a ragmem-model.json manifest recording the
// revision and each file's sha256. A cache already at the hub's revision is
// left as is unless opts.Force is set.
//
// repo is "owner/name", e.g. "minishlab/potion-base-8M".
func PullModel(ctx context.Context, repo string, opts *PullOptions) (*PullResult, error) {
	if err := validRepo(repo); err != nil {
		return nil, err
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	h := &hub{o: &o, repo: repo}

	info, err := h.info(ctx)
	if err != nil {
		return nil, err
	}
	files, want, err := modelSiblings(repo, info)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(o.CacheDir, filepath.FromSlash(repo))
	res := &PullResult{Dir: dir, Repo: repo, Revision: info.SHA}
	if !o.Force {
		if m, err := readManifest(dir); err == nil && m.Revision == info.SHA && m.Repo == repo && current(dir, m, want) {
			return res, nil
		}
	}

	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("embed: model cache: %w", err)
	}
	stage, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".pull-")
	if err != nil {
		return nil, fmt.Errorf("embed: model cache: %w", err)
	}
	defer os.RemoveAll(stage) // nothing left behind on failure; renamed away on success
	man := &modelManifest{Repo: repo, Revision: info.SHA, Endpoint: o.Endpoint, Files: map[string]string{}}
	for _, name := range want {
		sum, n, err := h.download(ctx, info.SHA, files[name], filepath.Join(stage, name))
		if err != nil {
			return nil, err
		}
		man.Files[name] = sum
		res.Files = append(res.Files, name)
		res.Bytes += n
	}
	if _, err := LoadModel2Vec(stage, nil); err != nil {
		return nil, fmt.Errorf("embed: %s downloaded but does not load: %w", repo, err)
	}
	if err := installModel(stage, dir, man); err != nil {
		return nil, fmt.Errorf("embed: model cache: %w", err)
	}
	return res, nil
}

// withDefaults returns the options with what is not set filled in: the
// endpoint from HF_ENDPOINT or DefaultHubEndpoint, revision main, the token
// from HF_TOKEN, the model cache, and an HTTP client with timeouts.
func (opts *PullOptions) withDefaults() (PullOptions, error) {
	var o PullOptions
	if opts != nil {
		o = *opts
	}
	if o.Endpoint == "" {
		o.Endpoint = os.Getenv("HF_ENDPOINT")
	}
	if o.Endpoint == "" {
		o.Endpoint = DefaultHubEndpoint
	}
	o.Endpoint = strings.TrimRight(o.Endpoint, "/")
	if u, err := url.Parse(o.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return o, fmt.Errorf("%w: endpoint %q is not an http(s) URL", ErrInvalidOptions, truncateForError(o.Endpoint))
	}
	if o.Revision == "" {
		o.Revision = "main"
	}
	if o.Token == "" {
		o.Token = os.Getenv("HF_TOKEN")
	}
	if o.CacheDir == "" {
		d, err := ModelCacheDir()
		if err != nil {
			return o, err
		}
		o.CacheDir = d
	}
	if o.Client == nil {
		o.Client = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   30 * time.Second,
			ResponseHeaderTimeout: 30 * time.Second,
		}}
	}
	return o, nil
}

// modelSiblings returns the repository's files by name and the names to
// download: every file of modelFiles (an error names the first missing:
// not a Model2Vec model) and optionalModelFile when there is one.
func modelSiblings(repo string, info *hubInfo) (map[string]hubSibling, []string, error) {
	files := map[string]hubSibling{}
	for _, s := range info.Siblings {
		files[s.Name] = s
	}
	var want []string
	for _, f := range modelFiles {
		if _, ok := files[f]; !ok {
			return nil, nil, fmt.Errorf("%w: %s has no %s; it is not a Model2Vec model (those have %s)",
				ErrHub, repo, f, strings.Join(modelFiles, ", "))
		}
		want = append(want, f)
	}
	if _, ok := files[optionalModelFile]; ok {
		want = append(want, optionalModelFile)
	}
	return files, want, nil
}

// installModel writes the manifest into the staging directory and swaps
// the directory in place of dir's old copy (put back if the swap fails).
func installModel(stage, dir string, man *modelManifest) error {
	mb, _ := json.MarshalIndent(man, "", "  ")
	// The manifest is written last and synced with the staging directory, so
	// the directory is complete before it is swapped in.
	if err := wal.WriteFile(wal.OS{}, filepath.Join(stage, manifestName), &wal.WriteOptions{Perm: 0o644}, func(w io.Writer) error {
		_, err := w.Write(mb)
		return err
	}); err != nil {
		return err
	}
	old := ""
	if _, err := os.Stat(dir); err == nil {
		old = stage + ".old"
		if err := os.Rename(dir, old); err != nil {
			return err
		}
	}
	if err := os.Rename(stage, dir); err != nil {
		if old != "" {
			_ = os.Rename(old, dir)
		}
		return err
	}
	_ = wal.OS{}.SyncDir(filepath.Dir(dir))
	if old != "" {
		_ = os.RemoveAll(old)
	}
	return nil
}

// current reports whether dir holds every wanted file with the manifest's
// sha256.
func current(dir string, m *modelManifest, want []string) bool {
	for _, name := range want {
		sum, ok := m.Files[name]
		if !ok {
			return false
		}
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			return false
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil || hex.EncodeToString(h.Sum(nil)) != sum {
			return false
		}
	}
	return true
}

type hub struct {
	o    *PullOptions
	repo string
}

func (h *hub) get(ctx context.Context, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrHub, err)
	}
	req.Header.Set("User-Agent", "ragmem")
	if h.o.Token != "" {
		req.Header.Set("Authorization", "Bearer "+h.o.Token)
	}
	resp, err := h.o.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w at %s (%v); pulling a model needs the network once. Without it, copy a Model2Vec "+
			"model folder (config.json, tokenizer.json, model.safetensors) from another machine and use "+
			"--embedder model2vec:/path/to/folder", ErrOffline, h.o.Endpoint, err)
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		return resp, nil
	case resp.StatusCode == http.StatusNotFound:
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %s (revision %s) at %s", ErrModelNotFound, h.repo, h.o.Revision, h.o.Endpoint)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %s refused access to %s (HTTP %d); for a gated or private model set $HF_TOKEN",
			ErrHub, h.o.Endpoint, h.repo, resp.StatusCode)
	default:
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %s answered HTTP %d: %s", ErrHub, h.o.Endpoint, resp.StatusCode, truncateForError(strings.TrimSpace(string(msg))))
	}
}

func (h *hub) info(ctx context.Context) (*hubInfo, error) {
	u := h.o.Endpoint + "/api/models/" + h.repo + "/revision/" + url.PathEscape(h.o.Revision) + "?blobs=true"
	resp, err := h.get(ctx, u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var info hubInfo
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&info); err != nil {
		return nil, fmt.Errorf("%w: model info of %s: %v", ErrHub, h.repo, err)
	}
	if len(info.SHA) < 7 || strings.ContainsAny(info.SHA, "/\\?#%") {
		return nil, fmt.Errorf("%w: model info of %s has no commit sha", ErrHub, h.repo)
	}
	return &info, nil
}

// download fetches one file at revision sha into path, verifying it, and
// returns its sha256 and size.
func (h *hub) download(ctx context.Context, sha string, f hubSibling, path string) (string, int64, error) {
	var want string
	var wantSize int64 = -1
	var check hash.Hash
	switch {
	case f.LFS != nil && len(f.LFS.SHA256) == 64:
		want, wantSize = strings.ToLower(f.LFS.SHA256), f.LFS.Size
	case len(f.BlobID) == 40 && f.Size != nil:
		// A plain git file: the hub gives its git blob id,
		// sha1("blob <size>\x00" + content).
		want, wantSize = strings.ToLower(f.BlobID), *f.Size
		check = sha1.New()
		fmt.Fprintf(check, "blob %d\x00", wantSize)
	default:
		return "", 0, fmt.Errorf("%w: the hub gives no checksum for %s/%s; refusing an unverifiable download", ErrHub, h.repo, f.Name)
	}
	u := h.o.Endpoint + "/" + h.repo + "/resolve/" + sha + "/" + url.PathEscape(f.Name)
	resp, err := h.get(ctx, u)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	out, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return "", 0, fmt.Errorf("embed: model cache: %w", err)
	}
	defer out.Close()
	s256 := sha256.New()
	writers := []io.Writer{out, s256}
	if check != nil {
		writers = append(writers, check)
	}
	pw := &progressWriter{name: f.Name, total: wantSize, fn: h.o.Progress}
	writers = append(writers, pw)
	// Read at most one byte more than announced, to detect a longer body.
	n, err := io.Copy(io.MultiWriter(writers...), io.LimitReader(resp.Body, wantSize+1))
	if err != nil {
		if ctx.Err() != nil {
			return "", 0, ctx.Err()
		}
		return "", 0, fmt.Errorf("%w: downloading %s: %v", ErrHub, f.Name, err)
	}
	if n != wantSize {
		return "", 0, fmt.Errorf("%w: %s/%s is %d bytes, the hub announced %d", ErrChecksum, h.repo, f.Name, n, wantSize)
	}
	sum := hex.EncodeToString(s256.Sum(nil))
	got := sum
	if check != nil {
		got = hex.EncodeToString(check.Sum(nil))
	}
	if got != want {
		return "", 0, fmt.Errorf("%w: %s/%s hashes to %s, the hub announced %s", ErrChecksum, h.repo, f.Name, got, want)
	}
	if err := out.Sync(); err != nil {
		return "", 0, fmt.Errorf("embed: model cache: %w", err)
	}
	return sum, n, nil
}

type progressWriter struct {
	name  string
	done  int64
	total int64
	fn    func(string, int64, int64)
}

func (p *progressWriter) Write(b []byte) (int, error) {
	p.done += int64(len(b))
	if p.fn != nil {
		p.fn(p.name, p.done, p.total)
	}
	return len(b), nil
}

// PulledModel is one model in the cache.
type PulledModel struct {
	Repo     string
	Revision string
	Dir      string
	Bytes    int64
}

// PulledModels lists the models in the cache, by repository.
func PulledModels() ([]PulledModel, error) {
	root, err := ModelCacheDir()
	if err != nil {
		return nil, err
	}
	owners, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []PulledModel
	for _, ow := range owners {
		if !ow.IsDir() || strings.HasPrefix(ow.Name(), ".") {
			continue
		}
		names, err := os.ReadDir(filepath.Join(root, ow.Name()))
		if err != nil {
			continue
		}
		for _, nm := range names {
			if !nm.IsDir() || strings.HasPrefix(nm.Name(), ".") {
				continue
			}
			dir := filepath.Join(root, ow.Name(), nm.Name())
			m, err := readManifest(dir)
			if err != nil {
				continue
			}
			pm := PulledModel{Repo: m.Repo, Revision: m.Revision, Dir: dir}
			for f := range m.Files {
				if st, err := os.Stat(filepath.Join(dir, f)); err == nil {
					pm.Bytes += st.Size()
				}
			}
			out = append(out, pm)
		}
	}
	return out, nil
}
