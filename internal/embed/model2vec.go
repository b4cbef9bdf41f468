package embed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/ragmem/ragmem/internal/hftok"
	"github.com/ragmem/ragmem/internal/safetensors"
)

// ErrModel is returned (wrapped) when a Model2Vec model directory cannot be
// loaded: a file is missing or malformed, or its parts disagree.
var ErrModel = errors.New("embed: cannot load model")

// Model2VecOptions tune a [Model2Vec] embedder. A nil *Model2VecOptions, and
// every zero field, means the default.
type Model2VecOptions struct {
	// MaxTokens truncates each text to its first MaxTokens tokens, as
	// Model2Vec's encode(max_length=512) does. Default 512.
	MaxTokens int
}

// DefaultModel2VecMaxTokens is Model2Vec's default max_length.
const DefaultModel2VecMaxTokens = 512

// maxModelFile bounds model.safetensors (the largest Model2Vec releases are
// a few hundred MB).
const maxModelFile = 4 << 30

// Model2Vec is a static embedder loaded from a Model2Vec model directory
// (https://github.com/MinishLab/model2vec), such as minishlab/potion-base-8M
// or minishlab/potion-retrieval-32M. It is semantic (it was distilled from a
// sentence transformer), runs on the CPU in pure Go with no network, and is
// safe for concurrent use.
//
// A text is tokenised with the model's tokenizer.json (WordPiece or
// Unigram, without special tokens; unknown tokens are dropped), truncated to
// MaxTokens tokens, and embedded as the mean of its tokens' rows of the
// embedding matrix, each row scaled by the token's weight when the model has
// per-token weights, and looked up through the token mapping in the
// vocabulary-quantized layout. The mean is L2-normalised. (Model2Vec
// normalises when config.json says "normalize": true, as every release does;
// ragmem normalises always, because its vectors are compared by cosine and
// direction is all that counts.) A text with no known token gets the fixed
// unit vector (1, 0, 0, ...).
type Model2Vec struct {
	tok       *hftok.Tokenizer
	emb       []float32 // rows × dim
	rows, dim int
	weights   []float32 // by token id; nil when the model has none
	mapping   []int32   // token id -> row; nil when ids are rows
	unk       int
	maxTokens int
	maxChars  int // texts are cut to this many characters before tokenising
	identity  string
	name      string
	source    string // what Spec reports: the absolute directory, or the owner/name it was loaded by
}

// LoadModel2Vec loads the model in dir: config.json, tokenizer.json and
// model.safetensors with an "embeddings" tensor (F32, F16, BF16, F64 or I8,
// one row per token) and optionally "weights" (one per token) and "mapping"
// (token id to embeddings row, the vocabulary-quantized layout).
func LoadModel2Vec(dir string, opts *Model2VecOptions) (*Model2Vec, error) {
	var o Model2VecOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxTokens <= 0 {
		o.MaxTokens = DefaultModel2VecMaxTokens
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w %s: %s", ErrModel, dir, fmt.Sprintf(format, args...))
	}
	var cfg struct {
		ModelType string `json:"model_type"`
		Normalize *bool  `json:"normalize"`
	}
	cb, err := readLimited(filepath.Join(dir, "config.json"), 1<<20)
	if err != nil {
		return nil, fail("%v", err)
	}
	if err := json.Unmarshal(cb, &cfg); err != nil {
		return nil, fail("config.json: %v", err)
	}
	if cfg.ModelType != "" && cfg.ModelType != "model2vec" {
		return nil, fail("config.json says model_type %q, not model2vec", truncateForError(cfg.ModelType))
	}
	tb, err := readLimited(filepath.Join(dir, "tokenizer.json"), 256<<20)
	if err != nil {
		return nil, fail("%v", err)
	}
	tok, err := hftok.Parse(tb)
	if err != nil {
		return nil, fail("tokenizer.json: %v", err)
	}
	mb, err := readLimited(filepath.Join(dir, "model.safetensors"), maxModelFile)
	if err != nil {
		return nil, fail("%v", err)
	}
	st, err := safetensors.Parse(mb)
	if err != nil {
		return nil, fail("model.safetensors: %v", err)
	}
	m := &Model2Vec{tok: tok, unk: tok.UnknownID(), maxTokens: o.MaxTokens}
	et, err := st.Tensor("embeddings")
	if err != nil {
		if et, err = st.Tensor("0"); err != nil {
			return nil, fail("model.safetensors has no \"embeddings\" tensor (it has %s)", strings.Join(st.Names(), ", "))
		}
	}
	if len(et.Shape) != 2 || et.Shape[0] == 0 || et.Shape[1] == 0 {
		return nil, fail("the embeddings tensor has shape %v, want [rows, dimension]", et.Shape)
	}
	m.rows, m.dim = et.Shape[0], et.Shape[1]
	if m.emb, err = et.Float32(); err != nil {
		return nil, fail("%v", err)
	}
	vocab := tok.VocabSize()
	if wt, err := st.Tensor("weights"); err == nil {
		if m.weights, err = wt.Float32(); err != nil {
			return nil, fail("%v", err)
		}
		if len(m.weights) < vocab {
			return nil, fail("%d token weights for a vocabulary of %d", len(m.weights), vocab)
		}
	}
	if mt, err := st.Tensor("mapping"); err == nil {
		ids, err := mt.Int64()
		if err != nil {
			return nil, fail("%v", err)
		}
		if len(ids) < vocab {
			return nil, fail("a token mapping of %d entries for a vocabulary of %d", len(ids), vocab)
		}
		m.mapping = make([]int32, len(ids))
		for i, r := range ids {
			if r < 0 || r >= int64(m.rows) {
				return nil, fail("token %d maps to row %d of %d", i, r, m.rows)
			}
			m.mapping[i] = int32(r)
		}
	} else if vocab > m.rows {
		return nil, fail("the tokenizer has %d tokens but the embeddings only %d rows", vocab, m.rows)
	}
	m.maxChars = o.MaxTokens * medianTokenLength(tok)

	m.source = absDir(dir)
	m.name = filepath.Base(filepath.Clean(dir))
	if man, err := readManifest(dir); err == nil && man.Repo != "" {
		m.name = man.Repo
	}
	h := sha256.New()
	h.Write(mb)
	h.Write([]byte{0})
	h.Write(tb)
	m.identity = fmt.Sprintf("model2vec/%s/%s/d%d/t%d", sanitizeName(m.name), hex.EncodeToString(h.Sum(nil))[:12], m.dim, m.maxTokens)
	return m, nil
}

func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", filepath.Base(path), limit)
	}
	return b, nil
}

// medianTokenLength is the median length in characters of the vocabulary's
// tokens; Model2Vec cuts texts at max_length times it before tokenising.
func medianTokenLength(t *hftok.Tokenizer) int {
	var lens []int
	for _, s := range t.Tokens() {
		if s != "" {
			lens = append(lens, utf8.RuneCountInString(s))
		}
	}
	if len(lens) == 0 {
		return 1
	}
	sort.Ints(lens)
	return max(1, lens[len(lens)/2])
}

func sanitizeName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == ',' {
			return '_'
		}
		return r
	}, s)
	return truncateForError(s)
}

// Identity is "model2vec/NAME/HASH/dDIM/tMAXTOKENS": NAME is the Hugging Face
// repository of a pulled model (else the directory name) and HASH covers
// model.safetensors and tokenizer.json.
func (m *Model2Vec) Identity() string { return m.identity }

// Dimension is the model's embedding dimension.
func (m *Model2Vec) Dimension() int { return m.dim }

// Name is the model's Hugging Face repository, or its directory name.
func (m *Model2Vec) Name() string { return m.name }

// Tokenize returns the token ids a text is embedded from (after truncation
// and with unknown tokens dropped).
func (m *Model2Vec) Tokenize(text string) []int {
	if n := m.maxChars; n > 0 && len(text) > n {
		// Cut at the n-th character, as Model2Vec does before tokenising.
		i := 0
		for c := 0; c < n && i < len(text); c++ {
			_, size := utf8.DecodeRuneInString(text[i:])
			i += size
		}
		text = text[:i]
	}
	ids := m.tok.Encode(text)
	out := ids[:0]
	for _, id := range ids {
		if id != m.unk {
			out = append(out, id)
		}
	}
	if len(out) > m.maxTokens {
		out = out[:m.maxTokens]
	}
	return out
}

// Embed returns one unit vector per text. It fails only if ctx is done.
func (m *Model2Vec) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	sum := make([]float64, m.dim)
	for i, t := range texts {
		if i%16 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		out[i] = m.embedOne(t, sum)
	}
	return out, nil
}

func (m *Model2Vec) embedOne(text string, sum []float64) []float32 {
	clear(sum)
	n := 0
	for _, id := range m.Tokenize(text) {
		row := id
		if m.mapping != nil {
			row = int(m.mapping[id])
		}
		if row < 0 || row >= m.rows {
			continue // an added token beyond the matrix: no embedding
		}
		w := 1.0
		if m.weights != nil {
			w = float64(m.weights[id])
		}
		r := m.emb[row*m.dim : (row+1)*m.dim]
		for j, x := range r {
			sum[j] += w * float64(x)
		}
		n++
	}
	vec := make([]float32, m.dim)
	var norm float64
	for _, x := range sum {
		norm += x * x // the mean's norm is this over n², irrelevant once normalised
	}
	if n == 0 || norm == 0 || math.IsNaN(norm) || math.IsInf(norm, 0) {
		vec[0] = 1
		return vec
	}
	inv := 1 / math.Sqrt(norm)
	for j, x := range sum {
		vec[j] = float32(x * inv)
	}
	return vec
}

// modelManifest is written by PullModel next to the files it downloaded.
type modelManifest struct {
	Repo     string            `json:"repo"`
	Revision string            `json:"revision"`
	Endpoint string            `json:"endpoint"`
	Files    map[string]string `json:"files"` // name -> sha256
}

const manifestName = "ragmem-model.json"

func readManifest(dir string) (*modelManifest, error) {
	b, err := readLimited(filepath.Join(dir, manifestName), 1<<20)
	if err != nil {
		return nil, err
	}
	var m modelManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// ModelCacheDir is where PullModel puts models: $RAGMEM_MODELS if set, else
// the "ragmem/models" folder of the user cache directory
// (~/.cache/ragmem/models on Linux).
func ModelCacheDir() (string, error) {
	if d := os.Getenv("RAGMEM_MODELS"); d != "" {
		return d, nil
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("embed: no user cache directory (set $RAGMEM_MODELS): %w", err)
	}
	return filepath.Join(c, "ragmem", "models"), nil
}

// CachedModelDir returns the directory of a model pulled with PullModel, by
// its Hugging Face repository ("minishlab/potion-base-8M").
func CachedModelDir(repo string) (string, error) {
	if err := validRepo(repo); err != nil {
		return "", err
	}
	root, err := ModelCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, filepath.FromSlash(repo))
	if _, err := readManifest(dir); err != nil {
		return "", fmt.Errorf("%s has not been pulled into %s", repo, root)
	}
	return dir, nil
}

// validRepo checks a Hugging Face repository id: owner/name of letters,
// digits, '-', '_' and '.', neither part "." or "..".
func validRepo(repo string) error {
	owner, name, ok := strings.Cut(repo, "/")
	bad := !ok || strings.Contains(name, "/") || len(repo) > 96
	for _, p := range []string{owner, name} {
		if p == "" || p == "." || p == ".." {
			bad = true
		}
		for _, r := range p {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
				bad = true
			}
		}
	}
	if bad {
		return fmt.Errorf("%w: %q is not a Hugging Face model id (want owner/name)", ErrBadSpec, truncateForError(repo))
	}
	return nil
}
