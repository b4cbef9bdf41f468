// Package hftok is a pure-Go reader of Hugging Face tokenizer.json files and
// encoder for the two models static embedders use: WordPiece (BERT) and
// Unigram (SentencePiece-style, as in Model2Vec's vocabulary-quantized
// models).
//
// It implements the pipeline of the tokenizers library without special
// tokens (add_special_tokens = false, what Model2Vec encodes with): added
// tokens are split off the raw text first, then each remaining segment is
// normalised, pre-tokenised and tokenised by the model. The components
// supported are:
//
//   - normalizers: BertNormalizer, Sequence, Lowercase, Strip, StripAccents,
//     Replace (string or regex pattern), NFC, NFD, NFKC, NFKD, Prepend;
//   - pre-tokenizers: BertPreTokenizer, Metaspace, Whitespace,
//     WhitespaceSplit, Sequence;
//   - models: WordPiece, Unigram (without byte fallback).
//
// Any other component is reported by Parse as an error wrapping
// ErrUnsupported; a tokenizer is never silently approximated. A *Tokenizer is
// read-only after Parse and safe for concurrent use.
package hftok

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"unicode/utf8"
)

// Errors.
var (
	ErrFormat      = errors.New("hftok: malformed tokenizer.json")
	ErrUnsupported = errors.New("hftok: unsupported tokenizer component")
)

// maxFile bounds the size of a tokenizer.json read by Load.
const maxFile = 256 << 20

// Tokenizer encodes text into token ids.
type Tokenizer struct {
	norm  normalizer
	pre   preTokenizer
	model model
	added []addedToken // longest content first
	vocab map[string]int
	size  int // one more than the largest id
	unk   int // -1 when the model has no unknown token
}

type addedToken struct {
	content string
	id      int
}

// Load reads and parses a tokenizer.json file.
func Load(path string) (*Tokenizer, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Size() > maxFile {
		return nil, fmt.Errorf("%w: %s is %d bytes", ErrFormat, path, st.Size())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

type rawTokenizer struct {
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
	} `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	Model         json.RawMessage `json:"model"`
	PostProcessor json.RawMessage `json:"post_processor"` // special tokens only: not applied
}

// Parse parses the contents of a tokenizer.json file.
func Parse(b []byte) (*Tokenizer, error) {
	var raw rawTokenizer
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	t := &Tokenizer{unk: -1}
	var err error
	if t.norm, err = parseNormalizer(raw.Normalizer); err != nil {
		return nil, err
	}
	if t.pre, err = parsePreTokenizer(raw.PreTokenizer); err != nil {
		return nil, err
	}
	if t.model, err = parseModel(raw.Model, t); err != nil {
		return nil, err
	}
	for _, a := range raw.AddedTokens {
		if a.Content == "" || a.ID < 0 {
			continue
		}
		t.added = append(t.added, addedToken{a.Content, a.ID})
		if a.ID >= t.size {
			t.size = a.ID + 1
		}
	}
	sort.SliceStable(t.added, func(i, j int) bool { return len(t.added[i].content) > len(t.added[j].content) })
	return t, nil
}

// VocabSize is one more than the largest token id.
func (t *Tokenizer) VocabSize() int { return t.size }

// UnknownID is the id of the model's unknown token, or -1.
func (t *Tokenizer) UnknownID() int { return t.unk }

// ID returns the id of a vocabulary entry.
func (t *Tokenizer) ID(token string) (int, bool) {
	id, ok := t.vocab[token]
	return id, ok
}

// Tokens returns every vocabulary entry (added tokens included) by id; ids
// with no entry are "".
func (t *Tokenizer) Tokens() []string {
	out := make([]string, t.size)
	for s, id := range t.vocab {
		out[id] = s
	}
	for _, a := range t.added {
		out[a.id] = a.content
	}
	return out
}

// Encode returns the token ids of text, without special tokens. Invalid
// UTF-8 is read as U+FFFD (which BERT normalisation then drops).
func (t *Tokenizer) Encode(text string) []int {
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	var ids []int
	first := true
	for text != "" {
		at, tok := t.nextAdded(text)
		seg := text[:at]
		if seg != "" {
			ids = t.encodeSegment(seg, first, ids)
		}
		first = false
		if tok == nil {
			break
		}
		ids = append(ids, tok.id)
		text = text[at+len(tok.content):]
	}
	return ids
}

// nextAdded finds the first occurrence of an added token (the longest at a
// position); it returns len(text), nil when there is none.
func (t *Tokenizer) nextAdded(text string) (int, *addedToken) {
	best, bestAt := -1, len(text)
	for i := range t.added {
		if at := strings.Index(text[:min(len(text), bestAt+len(t.added[i].content))], t.added[i].content); at >= 0 && at < bestAt {
			best, bestAt = i, at
		}
	}
	if best < 0 {
		return len(text), nil
	}
	return bestAt, &t.added[best]
}

func (t *Tokenizer) encodeSegment(seg string, first bool, ids []int) []int {
	if t.norm != nil {
		seg = t.norm.normalize(seg)
	}
	words := []string{seg}
	if t.pre != nil {
		words = t.pre.split(seg, first)
	}
	for _, w := range words {
		if w != "" {
			ids = t.model.tokenize(w, ids)
		}
	}
	return ids
}

// model tokenizes one pre-tokenized word, appending ids.
type model interface {
	tokenize(word string, ids []int) []int
}

func parseModel(raw json.RawMessage, t *Tokenizer) (model, error) {
	var head struct {
		Type string `json:"type"`
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil, fmt.Errorf("%w: no model", ErrFormat)
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("%w: model: %v", ErrFormat, err)
	}
	switch head.Type {
	case "WordPiece":
		return parseWordPiece(raw, t)
	case "Unigram":
		return parseUnigram(raw, t)
	case "":
		return nil, fmt.Errorf("%w: model has no type", ErrFormat)
	}
	return nil, fmt.Errorf("%w: model %q (want WordPiece or Unigram)", ErrUnsupported, clip(head.Type))
}

// WordPiece: greedy longest-match-first over each word, continuation pieces
// prefixed with "##"; a word with any unmatched rest, or longer than
// max_input_chars_per_word, is one unknown token.
type wordPiece struct {
	vocab    map[string]int
	unk      int
	prefix   string
	maxChars int
}

func parseWordPiece(raw json.RawMessage, t *Tokenizer) (model, error) {
	var m struct {
		UnkToken  string         `json:"unk_token"`
		Prefix    *string        `json:"continuing_subword_prefix"`
		MaxChars  int            `json:"max_input_chars_per_word"`
		Vocab     map[string]int `json:"vocab"`
		ByteLevel bool           `json:"byte_fallback"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%w: WordPiece: %v", ErrFormat, err)
	}
	if len(m.Vocab) == 0 {
		return nil, fmt.Errorf("%w: WordPiece has no vocabulary", ErrFormat)
	}
	wp := &wordPiece{vocab: m.Vocab, unk: -1, prefix: "##", maxChars: m.MaxChars}
	if m.Prefix != nil {
		wp.prefix = *m.Prefix
	}
	if wp.maxChars <= 0 {
		wp.maxChars = 100
	}
	if err := setVocab(t, m.Vocab); err != nil {
		return nil, err
	}
	id, ok := m.Vocab[m.UnkToken]
	if !ok {
		return nil, fmt.Errorf("%w: WordPiece unknown token %q is not in the vocabulary", ErrFormat, clip(m.UnkToken))
	}
	wp.unk, t.unk = id, id
	return wp, nil
}

func setVocab(t *Tokenizer, v map[string]int) error {
	seen := make(map[int]bool, len(v))
	for s, id := range v {
		if id < 0 || id > 1<<24 {
			return fmt.Errorf("%w: token %q has id %d", ErrFormat, clip(s), id)
		}
		if seen[id] {
			return fmt.Errorf("%w: id %d is given to two tokens", ErrFormat, id)
		}
		seen[id] = true
		if id >= t.size {
			t.size = id + 1
		}
	}
	t.vocab = v
	return nil
}

func (wp *wordPiece) tokenize(word string, ids []int) []int {
	if utf8.RuneCountInString(word) > wp.maxChars {
		return append(ids, wp.unk)
	}
	mark := len(ids)
	var key strings.Builder
	for start := 0; start < len(word); {
		end := len(word)
		found := -1
		for end > start {
			sub := word[start:end]
			if start > 0 {
				key.Reset()
				key.WriteString(wp.prefix)
				key.WriteString(sub)
				sub = key.String()
			}
			if id, ok := wp.vocab[sub]; ok {
				found = id
				break
			}
			_, size := utf8.DecodeLastRuneInString(word[start:end])
			end -= size
		}
		if found < 0 {
			return append(ids[:mark], wp.unk)
		}
		ids = append(ids, found)
		start = end
	}
	return ids
}

// Unigram: the segmentation of the word that maximises the sum of its
// pieces' log probabilities (Viterbi), as the tokenizers library computes
// it: a character no piece covers becomes the unknown token with score
// min − 10, and consecutive unknown tokens are fused into one.
type unigram struct {
	pieces   map[string]int
	scores   []float64 // by id
	maxLen   int       // longest piece, in bytes
	unk      int
	unkScore float64
}

const unkPenalty = 10.0

func parseUnigram(raw json.RawMessage, t *Tokenizer) (model, error) {
	var m struct {
		UnkID        *int                `json:"unk_id"`
		Vocab        [][]json.RawMessage `json:"vocab"`
		ByteFallback bool                `json:"byte_fallback"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%w: Unigram: %v", ErrFormat, err)
	}
	if m.ByteFallback {
		return nil, fmt.Errorf("%w: Unigram with byte_fallback", ErrUnsupported)
	}
	if len(m.Vocab) == 0 {
		return nil, fmt.Errorf("%w: Unigram has no vocabulary", ErrFormat)
	}
	u := &unigram{pieces: make(map[string]int, len(m.Vocab)), scores: make([]float64, len(m.Vocab)), unk: -1}
	minScore := math.Inf(1)
	for id, e := range m.Vocab {
		var piece string
		var score float64
		if len(e) != 2 || json.Unmarshal(e[0], &piece) != nil || json.Unmarshal(e[1], &score) != nil {
			return nil, fmt.Errorf("%w: Unigram vocabulary entry %d is not [piece, score]", ErrFormat, id)
		}
		if _, dup := u.pieces[piece]; dup {
			return nil, fmt.Errorf("%w: Unigram piece %q appears twice", ErrFormat, clip(piece))
		}
		u.pieces[piece] = id
		u.scores[id] = score
		u.maxLen = max(u.maxLen, len(piece))
		minScore = math.Min(minScore, score)
	}
	u.unkScore = minScore - unkPenalty
	if m.UnkID != nil {
		if *m.UnkID < 0 || *m.UnkID >= len(m.Vocab) {
			return nil, fmt.Errorf("%w: Unigram unk_id %d is outside the vocabulary", ErrFormat, *m.UnkID)
		}
		u.unk = *m.UnkID
	}
	if err := setVocab(t, u.pieces); err != nil {
		return nil, err
	}
	t.unk = u.unk
	return u, nil
}

func (u *unigram) tokenize(word string, ids []int) []int {
	n := len(word)
	type node struct {
		id    int
		score float64
		start int // -1: not reached yet
	}
	best := make([]node, n+1)
	for i := 1; i <= n; i++ {
		best[i].start = -1
	}
	// Every character boundary is reached: from each one, the next is
	// reached by a one-character piece or by the unknown token.
	for start := 0; start < n; {
		_, mblen := utf8.DecodeRuneInString(word[start:])
		base := best[start].score
		single := false
		for end := start + 1; end <= min(n, start+u.maxLen); end++ {
			if end < n && !utf8.RuneStart(word[end]) {
				continue // not a character boundary
			}
			id, ok := u.pieces[word[start:end]]
			if !ok {
				continue
			}
			if c := base + u.scores[id]; best[end].start < 0 || c > best[end].score {
				best[end] = node{id: id, score: c, start: start}
			}
			if end-start == mblen {
				single = true
			}
		}
		if !single {
			end := start + mblen
			if c := base + u.unkScore; best[end].start < 0 || c > best[end].score {
				best[end] = node{id: u.unk, score: c, start: start}
			}
		}
		start += mblen
	}
	var rev []int
	for at := n; at > 0; at = best[at].start {
		rev = append(rev, best[at].id)
	}
	prevUnk := false
	for i := len(rev) - 1; i >= 0; i-- {
		id := rev[i]
		isUnk := id == u.unk
		switch {
		case id < 0: // no unknown token defined: the character is dropped
		case isUnk && prevUnk: // consecutive unknown tokens are fused
		default:
			ids = append(ids, id)
		}
		prevUnk = isUnk
	}
	return ids
}

func clip(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= 60 {
		return s
	}
	cut := 60
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
