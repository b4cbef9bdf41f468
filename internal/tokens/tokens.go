// Package tokens counts tokens with OpenAI's tiktoken BPE encodings.
//
// The BPE tables come from tiktoken-go-loader's embedded files, so no
// download and no network is ever needed. Encodings are loaded once per
// process and shared; an *Encoding is safe for concurrent use.
//
// Special tokens such as "<|endoftext|>" inside counted text are treated as
// ordinary text: retrieved pages are untrusted and must never be able to make
// the tokenizer panic or emit control tokens.
package tokens

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// Encoding names understood by Get.
const (
	O200K  = "o200k_base"
	CL100K = "cl100k_base"
	P50K   = "p50k_base"
	R50K   = "r50k_base"
)

// DefaultEncoding is used for models this package does not recognise.
// cl100k_base is chosen because it yields slightly more tokens than o200k_base
// for most non-English text, so budgets computed with it err on the safe side
// for models whose own tokenizer is unknown (Llama, Mistral, Qwen, ...).
const DefaultEncoding = CL100K

// ErrUnknownEncoding is returned by Get for an encoding name it does not know.
var ErrUnknownEncoding = errors.New("tokens: unknown encoding")

// Encoding is a loaded BPE encoding. It is safe for concurrent use.
type Encoding struct {
	name string
	tk   *tiktoken.Tiktoken
}

var (
	loaderOnce sync.Once
	mu         sync.Mutex
	loaded     = map[string]*entry{}
)

type entry struct {
	once sync.Once
	enc  *Encoding
	err  error
}

// Get returns the named encoding, loading it on first use.
func Get(name string) (*Encoding, error) {
	switch name {
	case O200K, CL100K, P50K, R50K:
	default:
		return nil, fmt.Errorf("%w %q (known: %s, %s, %s, %s)", ErrUnknownEncoding, name, O200K, CL100K, P50K, R50K)
	}
	loaderOnce.Do(func() { tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader()) })
	mu.Lock()
	e, ok := loaded[name]
	if !ok {
		e = &entry{}
		loaded[name] = e
	}
	mu.Unlock()
	e.once.Do(func() {
		tk, err := tiktoken.GetEncoding(name)
		if err != nil {
			e.err = fmt.Errorf("tokens: load %s: %w", name, err)
			return
		}
		e.enc = &Encoding{name: name, tk: tk}
	})
	return e.enc, e.err
}

// MustGet is Get for the encodings compiled into the binary; it panics only
// if the embedded BPE tables are broken, which is a build defect.
func MustGet(name string) *Encoding {
	e, err := Get(name)
	if err != nil {
		panic(err)
	}
	return e
}

// Default returns the DefaultEncoding.
func Default() *Encoding { return MustGet(DefaultEncoding) }

// EncodingNameForModel maps a chat or embedding model name to its encoding:
// o200k_base for the gpt-4o, gpt-4.1, gpt-4.5, gpt-5 and o-series families,
// cl100k_base for gpt-4, gpt-3.5 and the text-embedding models, and
// DefaultEncoding for anything else (including the empty name).
func EncodingNameForModel(model string) string {
	m := strings.ToLower(strings.TrimSpace(model))
	// Strip a provider prefix such as "openai/" or "azure/".
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	switch {
	case m == "":
		return DefaultEncoding
	case strings.HasPrefix(m, "gpt-4o"), strings.HasPrefix(m, "chatgpt-4o"),
		strings.HasPrefix(m, "gpt-4.1"), strings.HasPrefix(m, "gpt-4.5"),
		strings.HasPrefix(m, "gpt-5"), strings.HasPrefix(m, "gpt-oss"),
		isOSeries(m):
		return O200K
	case strings.HasPrefix(m, "gpt-4"), strings.HasPrefix(m, "gpt-3.5"),
		strings.HasPrefix(m, "gpt-35"), strings.HasPrefix(m, "text-embedding-"):
		return CL100K
	case strings.HasPrefix(m, "text-davinci-00"), strings.HasPrefix(m, "code-"):
		return P50K
	case m == "davinci", m == "curie", m == "babbage", m == "ada":
		return R50K
	}
	return DefaultEncoding
}

// isOSeries reports whether m names an OpenAI reasoning model (o1, o3, o4-mini, ...).
func isOSeries(m string) bool {
	if len(m) < 2 || m[0] != 'o' || m[1] < '1' || m[1] > '9' {
		return false
	}
	return len(m) == 2 || m[2] == '-'
}

// ForModel returns the encoding for a model name (see EncodingNameForModel).
func ForModel(model string) *Encoding { return MustGet(EncodingNameForModel(model)) }

// Name returns the encoding's name, e.g. "cl100k_base".
func (e *Encoding) Name() string { return e.name }

// Encode returns the token ids of s. Invalid UTF-8 is replaced by U+FFFD
// first, exactly as it would be when the text is sent to a model.
//
// tiktoken's byte-pair merge is quadratic in the length of one pre-token, so
// a long unbroken run (a megabyte of "x", a base64 blob) could take minutes.
// Runs of one character class longer than maxRun bytes are therefore encoded
// in maxRun-byte pieces. Ordinary text never has such runs and is encoded
// exactly as tiktoken does; for the pathological runs the count may differ
// from a whole-run encoding by about one token per piece.
func (e *Encoding) Encode(s string) []int {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	cut := longRunCuts(s)
	if cut == nil {
		return e.tk.EncodeOrdinary(s)
	}
	var ids []int
	start := 0
	for _, c := range append(cut, len(s)) {
		ids = append(ids, e.tk.EncodeOrdinary(s[start:c])...)
		start = c
	}
	return ids
}

// maxRun bounds the bytes of one same-class run passed to the BPE merge.
const maxRun = 256

// runClass groups runes the way tiktoken's pre-tokenizer separates them.
func runClass(r rune) int {
	switch {
	case unicode.IsLetter(r) || unicode.IsMark(r):
		return 1
	case unicode.IsNumber(r):
		return 2
	case unicode.IsSpace(r):
		return 3
	}
	return 4
}

// longRunCuts returns the byte offsets at which runs of one class longer
// than maxRun are cut, or nil when there are none (the common case).
func longRunCuts(s string) []int {
	var cuts []int
	class, runStart := 0, 0
	for i, r := range s {
		c := runClass(r)
		if c != class {
			class, runStart = c, i
			continue
		}
		if i-runStart >= maxRun {
			cuts = append(cuts, i)
			runStart = i
		}
	}
	return cuts
}

// Decode turns token ids back into text.
func (e *Encoding) Decode(ids []int) string { return e.tk.Decode(ids) }

// Count returns the number of tokens in s.
func (e *Encoding) Count(s string) int {
	if s == "" {
		return 0
	}
	return len(e.Encode(s))
}
