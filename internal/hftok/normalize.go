package hftok

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites a segment of text before pre-tokenisation.
type normalizer interface {
	normalize(s string) string
}

type normSeq []normalizer

func (ns normSeq) normalize(s string) string {
	for _, n := range ns {
		s = n.normalize(s)
	}
	return s
}

type normFunc func(string) string

func (f normFunc) normalize(s string) string { return f(s) }

// normalizerSpec is a normaliser of tokenizer.json; which fields count
// depends on its type.
type normalizerSpec struct {
	Type         string            `json:"type"`
	Normalizers  []json.RawMessage `json:"normalizers"`
	CleanText    *bool             `json:"clean_text"`
	Chinese      *bool             `json:"handle_chinese_chars"`
	StripAccents *bool             `json:"strip_accents"`
	Lowercase    *bool             `json:"lowercase"`
	Left         bool              `json:"strip_left"`
	Right        bool              `json:"strip_right"`
	Pattern      struct {
		String *string `json:"String"`
		Regex  *string `json:"Regex"`
	} `json:"pattern"`
	Content string `json:"content"`
	Prepend string `json:"prepend"`
}

// plainNormalizers are the normalisers without settings, by type.
var plainNormalizers = map[string]normFunc{
	"Lowercase":    lower,
	"StripAccents": stripAccents,
	"NFC":          norm.NFC.String,
	"NFD":          norm.NFD.String,
	"NFKC":         norm.NFKC.String,
	"NFKD":         norm.NFKD.String,
}

func parseNormalizer(raw json.RawMessage) (normalizer, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var n normalizerSpec
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("%w: normalizer: %v", ErrFormat, err)
	}
	if f, ok := plainNormalizers[n.Type]; ok {
		return f, nil
	}
	switch n.Type {
	case "Sequence":
		var seq normSeq
		for _, r := range n.Normalizers {
			x, err := parseNormalizer(r)
			if err != nil {
				return nil, err
			}
			if x != nil {
				seq = append(seq, x)
			}
		}
		return seq, nil
	case "BertNormalizer":
		return newBertNormalizer(&n), nil
	case "Strip":
		left, right := n.Left, n.Right
		return normFunc(func(s string) string {
			if left {
				s = strings.TrimLeftFunc(s, unicode.IsSpace)
			}
			if right {
				s = strings.TrimRightFunc(s, unicode.IsSpace)
			}
			return s
		}), nil
	case "Prepend":
		p := n.Prepend
		return normFunc(func(s string) string {
			if s == "" {
				return s
			}
			return p + s
		}), nil
	case "Replace":
		return replaceNormalizer(&n)
	case "":
		return nil, fmt.Errorf("%w: normalizer has no type", ErrFormat)
	}
	return nil, fmt.Errorf("%w: normalizer %q", ErrUnsupported, clip(n.Type))
}

// newBertNormalizer returns the BertNormalizer n describes: clean text,
// Chinese characters and lower case on unless turned off, accents stripped
// as lower case is unless strip_accents says otherwise (as in BERT
// uncased).
func newBertNormalizer(n *normalizerSpec) bertNormalizer {
	b := bertNormalizer{clean: true, chinese: true, lower: true}
	if n.CleanText != nil {
		b.clean = *n.CleanText
	}
	if n.Chinese != nil {
		b.chinese = *n.Chinese
	}
	if n.Lowercase != nil {
		b.lower = *n.Lowercase
	}
	b.strip = b.lower
	if n.StripAccents != nil {
		b.strip = *n.StripAccents
	}
	return b
}

// replaceNormalizer returns the Replace normaliser n describes: every match
// of its string or regex pattern replaced by its content.
func replaceNormalizer(n *normalizerSpec) (normalizer, error) {
	content := n.Content
	switch {
	case n.Pattern.String != nil:
		old := *n.Pattern.String
		if old == "" {
			return nil, fmt.Errorf("%w: Replace with an empty pattern", ErrFormat)
		}
		return normFunc(func(s string) string { return strings.ReplaceAll(s, old, content) }), nil
	case n.Pattern.Regex != nil:
		re, err := regexp.Compile(*n.Pattern.Regex)
		if err != nil {
			return nil, fmt.Errorf("%w: Replace regex %q: %v", ErrUnsupported, clip(*n.Pattern.Regex), err)
		}
		return normFunc(func(s string) string { return re.ReplaceAllLiteralString(s, content) }), nil
	}
	return nil, fmt.Errorf("%w: Replace without a pattern", ErrFormat)
}

// bertNormalizer is BERT's normaliser: drop control characters and map
// whitespace to spaces, surround CJK ideographs with spaces, strip accents,
// lower-case, in that order.
type bertNormalizer struct {
	clean, chinese, strip, lower bool
}

func (b bertNormalizer) normalize(s string) string {
	var sb strings.Builder
	sb.Grow(len(s) + 8)
	for _, r := range s {
		if b.clean {
			if r == 0 || r == unicode.ReplacementChar || isControl(r) {
				continue
			}
			if isBertSpace(r) {
				sb.WriteByte(' ')
				continue
			}
		}
		if b.chinese && isCJK(r) {
			sb.WriteByte(' ')
			sb.WriteRune(r)
			sb.WriteByte(' ')
			continue
		}
		sb.WriteRune(r)
	}
	out := sb.String()
	if b.strip {
		out = stripAccents(out)
	}
	if b.lower {
		out = lower(out)
	}
	return out
}

// lower lower-cases s as Unicode's full case mapping does for the letters
// that matter here: strings.ToLower, plus Greek capital sigma at the end of
// a word becoming final sigma (ς), as Rust's to_lowercase does.
func lower(s string) string {
	if !strings.ContainsRune(s, 'Σ') {
		return strings.ToLower(s)
	}
	rs := []rune(s)
	out := make([]rune, len(rs))
	for i, r := range rs {
		if r == 'Σ' && i > 0 && unicode.IsLetter(rs[i-1]) && (i+1 == len(rs) || !unicode.IsLetter(rs[i+1])) {
			out[i] = 'ς'
			continue
		}
		out[i] = unicode.ToLower(r)
	}
	return string(out)
}

// stripAccents decomposes (NFD) and drops combining marks (Mn).
func stripAccents(s string) string {
	d := norm.NFD.String(s)
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Mn, r) {
			return -1
		}
		return r
	}, d)
}

func isBertSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r':
		return true
	}
	return unicode.Is(unicode.Zs, r)
}

func isControl(r rune) bool {
	switch r {
	case '\t', '\n', '\r':
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs)
}

// isCJK reports the CJK Unified Ideograph blocks BERT pads with spaces.
func isCJK(r rune) bool {
	return r >= 0x4E00 && r <= 0x9FFF || r >= 0x3400 && r <= 0x4DBF || r >= 0x20000 && r <= 0x2A6DF ||
		r >= 0x2A700 && r <= 0x2B73F || r >= 0x2B740 && r <= 0x2B81F || r >= 0x2B820 && r <= 0x2CEAF ||
		r >= 0xF900 && r <= 0xFAFF || r >= 0x2F800 && r <= 0x2FA1F
}

// isBertPunct is BERT's punctuation: ASCII punctuation and Unicode P*.
func isBertPunct(r rune) bool {
	if r < 128 {
		return r >= 33 && r <= 47 || r >= 58 && r <= 64 || r >= 91 && r <= 96 || r >= 123 && r <= 126
	}
	return unicode.IsPunct(r)
}

// preTokenizer splits a normalised segment into words. first is true for
// the segment at the start of the text.
type preTokenizer interface {
	split(s string, first bool) []string
}

type preSeq []preTokenizer

func (ps preSeq) split(s string, first bool) []string {
	words := []string{s}
	for _, p := range ps {
		var next []string
		for i, w := range words {
			next = append(next, p.split(w, first && i == 0)...)
		}
		words = next
	}
	return words
}

type preFunc func(s string, first bool) []string

func (f preFunc) split(s string, first bool) []string { return f(s, first) }

func parsePreTokenizer(raw json.RawMessage) (preTokenizer, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var p struct {
		Type          string            `json:"type"`
		PreTokenizers []json.RawMessage `json:"pretokenizers"`
		Replacement   *string           `json:"replacement"`
		PrependScheme string            `json:"prepend_scheme"`
		AddPrefix     *bool             `json:"add_prefix_space"`
		Split         *bool             `json:"split"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("%w: pre_tokenizer: %v", ErrFormat, err)
	}
	switch p.Type {
	case "Sequence":
		var seq preSeq
		for _, r := range p.PreTokenizers {
			x, err := parsePreTokenizer(r)
			if err != nil {
				return nil, err
			}
			if x != nil {
				seq = append(seq, x)
			}
		}
		return seq, nil
	case "BertPreTokenizer":
		return preFunc(bertPreTokenize), nil
	case "WhitespaceSplit":
		return preFunc(func(s string, _ bool) []string { return strings.Fields(s) }), nil
	case "Whitespace":
		return preFunc(whitespacePreTokenize), nil
	case "Metaspace":
		m := metaspace{repl: "▁", scheme: "always", doSplit: true}
		if p.Replacement != nil && *p.Replacement != "" {
			m.repl = *p.Replacement
		}
		if p.PrependScheme != "" {
			m.scheme = p.PrependScheme
		} else if p.AddPrefix != nil && !*p.AddPrefix {
			m.scheme = "never"
		}
		switch m.scheme {
		case "always", "never", "first":
		default:
			return nil, fmt.Errorf("%w: Metaspace prepend_scheme %q", ErrUnsupported, clip(m.scheme))
		}
		if p.Split != nil {
			m.doSplit = *p.Split
		}
		return m, nil
	case "":
		return nil, fmt.Errorf("%w: pre_tokenizer has no type", ErrFormat)
	}
	return nil, fmt.Errorf("%w: pre_tokenizer %q", ErrUnsupported, clip(p.Type))
}

// bertPreTokenize splits on whitespace (dropped) and around each
// punctuation character (kept as a word of its own).
func bertPreTokenize(s string, _ bool) []string {
	var out []string
	start := -1
	for i, r := range s {
		switch {
		case unicode.IsSpace(r):
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
		case isBertPunct(r):
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
			out = append(out, string(r))
		default:
			if start < 0 {
				start = i
			}
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

// whitespacePreTokenize is the regex \w+|[^\w\s]+.
func whitespacePreTokenize(s string, _ bool) []string {
	var out []string
	class := func(r rune) int {
		switch {
		case unicode.IsSpace(r):
			return 0
		case r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r):
			return 1
		}
		return 2
	}
	start, cur := -1, 0
	for i, r := range s {
		c := class(r)
		if start >= 0 && c != cur {
			out = append(out, s[start:i])
			start = -1
		}
		if c != 0 && start < 0 {
			start, cur = i, c
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

// metaspace replaces spaces by the replacement character, prepends one
// (scheme "always", or "first" for the start of the text) and, with split,
// cuts the text before each replacement character.
type metaspace struct {
	repl    string
	scheme  string
	doSplit bool
}

func (m metaspace) split(s string, first bool) []string {
	s = strings.ReplaceAll(s, " ", m.repl)
	if (m.scheme == "always" || m.scheme == "first" && first) && !strings.HasPrefix(s, m.repl) {
		s = m.repl + s
	}
	if !m.doSplit {
		return []string{s}
	}
	var out []string
	start := 0
	for i := 1; i < len(s); {
		j := strings.Index(s[i:], m.repl)
		if j < 0 {
			break
		}
		cut := i + j
		out = append(out, s[start:cut])
		start, i = cut, cut+len(m.repl)
	}
	return append(out, s[start:])
}
