// Package tokens counts tokens with OpenAI's tiktoken BPE encodings.
//
// The BPE tables come from tiktoken-go-loader's embedded files, so no
// download and no network is ever needed. Encodings are loaded once per
// process and shared; an *Encoding is safe for concurrent use.
//
// The tokenizer is ragmem's own: a hand-written pre-tokenizer for each
// encoding's splitting pattern (pretok.go) feeding the same byte-pair ranks
// and merge rule as tiktoken. It gives exactly the ids of tiktoken-go
// (github.com/pkoukk/tiktoken-go), which the tests use as the reference on
// large varied corpora and in a differential fuzz target, at about ten times
// its speed: tiktoken-go matches its pattern with the backtracking regexp2
// engine over a rune copy of the text, which was most of the cost of
// chunking and of budget selection.
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
	bpe  *bpe
}

var (
	mu     sync.Mutex
	loaded = map[string]*entry{}
)

// The encodings' files (as named by tiktoken-go-loader), special tokens and
// patterns, as tiktoken defines them.
var specs = map[string]struct {
	file    string
	special map[string]int
	pat     pattern
}{
	O200K:  {"o200k_base.tiktoken", map[string]int{"<|endoftext|>": 199999, "<|endofprompt|>": 200018}, patO200K},
	CL100K: {"cl100k_base.tiktoken", map[string]int{"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}, patCL100K},
	P50K:   {"p50k_base.tiktoken", map[string]int{"<|endoftext|>": 50256}, patP50K},
	R50K:   {"r50k_base.tiktoken", map[string]int{"<|endoftext|>": 50256}, patP50K},
}

func load(name string) (*bpe, error) {
	sp := specs[name]
	ranks, err := tiktoken_loader.NewOfflineLoader().LoadTiktokenBpe(sp.file)
	if err != nil {
		return nil, err
	}
	maxID := 0
	for _, id := range ranks {
		maxID = max(maxID, id)
	}
	b := &bpe{ranks: ranks, decoder: make([]string, maxID+1), special: map[int]string{}, pat: sp.pat}
	for tok, id := range ranks {
		if id < 0 {
			return nil, fmt.Errorf("negative rank %d", id)
		}
		b.decoder[id] = tok
	}
	for tok, id := range sp.special {
		b.special[id] = tok
	}
	return b, nil
}

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
	mu.Lock()
	e, ok := loaded[name]
	if !ok {
		e = &entry{}
		loaded[name] = e
	}
	mu.Unlock()
	e.once.Do(func() {
		b, err := load(name)
		if err != nil {
			e.err = fmt.Errorf("tokens: load %s: %w", name, err)
			return
		}
		e.enc = &Encoding{name: name, bpe: b}
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
		return e.bpe.encode(make([]int, 0, len(s)/4+1), s)
	}
	var ids []int
	start := 0
	for _, c := range append(cut, len(s)) {
		ids = e.bpe.encode(ids, s[start:c])
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
	if len(s) <= maxRun {
		return nil
	}
	var cuts []int
	class, runStart := 0, 0
	for i := 0; i < len(s); {
		var c, n int
		if b := s[i]; b < utf8.RuneSelf {
			c, n = int(asciiRunClass[b]), 1
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			c, n = runClass(r), size
		}
		if c != class {
			class, runStart = c, i
		} else if i-runStart >= maxRun {
			cuts = append(cuts, i)
			runStart = i
		}
		i += n
	}
	return cuts
}

var asciiRunClass = func() (t [utf8.RuneSelf]uint8) {
	for r := range t {
		t[r] = uint8(runClass(rune(r)))
	}
	return t
}()

// Decode turns token ids back into text; unknown ids decode to nothing.
func (e *Encoding) Decode(ids []int) string {
	var sb strings.Builder
	for _, id := range ids {
		if id >= 0 && id < len(e.bpe.decoder) && e.bpe.decoder[id] != "" {
			sb.WriteString(e.bpe.decoder[id])
		} else {
			sb.WriteString(e.bpe.special[id])
		}
	}
	return sb.String()
}

// Count returns the number of tokens in s: len(Encode(s)), without
// building the ids.
func (e *Encoding) Count(s string) int {
	if s == "" {
		return 0
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	cut := longRunCuts(s)
	if cut == nil {
		return e.bpe.count(s)
	}
	n, start := 0, 0
	for _, c := range append(cut, len(s)) {
		n += e.bpe.count(s[start:c])
		start = c
	}
	return n
}
