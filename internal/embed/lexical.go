package embed

import (
	"context"
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

const (
	lexicalVersion = "lexical-v1"

	defaultLexicalDim   = 768
	maxLexicalDim       = 1 << 16
	defaultMinN         = 3
	defaultMaxN         = 5
	maxNGram            = 8
	defaultWordWeight   = 1.0
	defaultCharWeight   = 0.35
	defaultBigramWeight = 0 // off

	// maxWordRunes splits longer letter runs (base64 blobs, CJK sentences
	// without spaces) into pieces so that one "word" never grows without bound.
	maxWordRunes = 64
	// Bounds of the per-call feature table (slots). A text with more distinct
	// features than half the largest table is folded into the vector in
	// several passes; term frequencies then count per pass, which only matters
	// for texts far longer than a chunk.
	minTableSlots = 1 << 10
	maxTableSlots = 1 << 18

	bowRune = 0x02 // word-boundary markers for character n-grams
	eowRune = 0x03
)

// Feature families, kept in bits 16-17 of a feature key.
const (
	famWord   = 1
	famChar   = 2
	famBigram = 3
)

// LexicalOptions tunes a [Lexical] embedder. A nil *LexicalOptions, and every
// zero field, means the documented default. Every field changes the vectors
// and is therefore part of Identity.
type LexicalOptions struct {
	// Dimension is the vector length (number of hash buckets).
	// Default 768: fewer hash collisions than 384 lift vector-only nDCG@10
	// on SciFact (train) from 0.497 to 0.557 for twice the memory
	// (docs/evaluation.md). Values above 65536 are clamped to 65536.
	Dimension int
	// MinN and MaxN bound the lengths, in runes, of the character n-grams taken
	// from each word padded with begin and end markers (so "<ab" counts 3).
	// Defaults 3 and 5; MaxN is at most 8 and at least MinN.
	MinN, MaxN int
	// WordWeight scales word unigram features. Default 1; negative switches them off.
	WordWeight float64
	// CharWeight scales character n-gram features. Default 0.35 (a word yields
	// about a dozen n-grams, so each weighs less than the word; weight 1
	// measured 0.02 nDCG@10 worse in vector search, docs/evaluation.md);
	// negative switches them off.
	CharWeight float64
	// BigramWeight scales bigrams of consecutive content words. Default 0, off:
	// at a few hundred dimensions their extra hash collisions cost more
	// retrieval quality than they add (measured on SciFact and Cranfield);
	// from about 1536 dimensions on, 0.25-0.5 helps slightly.
	BigramWeight float64
	// NoStemming turns off the English plural folding of word and bigram
	// features ("studies" -> "study", "cells" -> "cell"). Default: folding on.
	NoStemming bool
	// KeepStopWords keeps about 150 common English function words ("the",
	// "of", "which", ...) as features. Default: they are dropped, because without
	// corpus statistics they would otherwise make every English text similar.
	KeepStopWords bool
}

// Lexical is the offline default embedder. It is safe for concurrent use.
//
// It is LEXICAL, NOT SEMANTIC. Each text is lower-cased and split into words
// (runs of Unicode letters, digits and combining marks); stop words are
// dropped; each word contributes its (plural-folded) unigram and its
// character n-grams (3 to 5 runes, with word-boundary markers), and optionally
// a bigram with the previous content word. Every distinct feature is hashed (64-bit FNV-1a over
// runes, then a murmur3 finaliser) to one of Dimension buckets with a hash
// sign bit, weighted by its family weight times the sublinear term frequency
// 1+ln(tf), and the sum is L2-normalised.
//
// So two texts are close when they share words and sub-words: it is robust to
// typos, inflection and compound words, and works for any script, but it does
// not know that "car" and "automobile" mean the same thing. For semantic
// search use an OpenAI-compatible endpoint ([NewOpenAI]; Ollama and llama.cpp
// serve good local models).
//
// Vectors are deterministic across runs, machines and Go versions. A text
// with no features at all (empty, punctuation, only stop words) gets a fixed
// unit vector (1 in bucket 0), never NaN or a zero vector. Embedding never
// fails except when ctx is done.
type Lexical struct {
	dim        int
	minN, maxN int // 0, 0 when character n-grams are off
	weights    [4]float32
	stem       bool
	dropStop   bool
	identity   string
	scratch    sync.Pool // *lexScratch
}

// NewLexical returns a lexical embedder; nil opts means every default.
// Out-of-range options are clamped to the nearest valid value, as documented on
// [LexicalOptions]; if every feature family is switched off, word features are
// switched back on.
func NewLexical(opts *LexicalOptions) *Lexical {
	var o LexicalOptions
	if opts != nil {
		o = *opts
	}
	l := &Lexical{dim: o.Dimension, minN: o.MinN, maxN: o.MaxN, stem: !o.NoStemming, dropStop: !o.KeepStopWords}
	if l.dim <= 0 {
		l.dim = defaultLexicalDim
	}
	l.dim = min(l.dim, maxLexicalDim)
	if l.minN <= 0 {
		l.minN = defaultMinN
	}
	l.minN = min(l.minN, maxNGram)
	if l.maxN <= 0 {
		l.maxN = max(defaultMaxN, l.minN)
	}
	l.maxN = min(max(l.maxN, l.minN), maxNGram)

	ww := weightOrDefault(o.WordWeight, defaultWordWeight)
	cw := weightOrDefault(o.CharWeight, defaultCharWeight)
	bw := weightOrDefault(o.BigramWeight, defaultBigramWeight)
	if ww == 0 && cw == 0 && bw == 0 {
		ww = defaultWordWeight
	}
	if cw == 0 {
		l.minN, l.maxN = 0, 0
	}
	l.weights = [4]float32{0, float32(ww), float32(cw), float32(bw)}

	var b strings.Builder
	b.WriteString(lexicalVersion)
	b.WriteString("/d")
	b.WriteString(strconv.Itoa(l.dim))
	b.WriteString("/w")
	b.WriteString(formatWeight(ww))
	b.WriteString("/c")
	if cw == 0 {
		b.WriteString("0")
	} else {
		b.WriteString(strconv.Itoa(l.minN) + "-" + strconv.Itoa(l.maxN) + "x" + formatWeight(cw))
	}
	b.WriteString("/b")
	b.WriteString(formatWeight(bw))
	if l.stem {
		b.WriteString("/stem")
	}
	if l.dropStop {
		b.WriteString("/stop")
	}
	l.identity = b.String()
	return l
}

func weightOrDefault(w, def float64) float64 {
	switch {
	case w < 0:
		return 0
	case w == 0 || math.IsNaN(w) || math.IsInf(w, 0):
		return def
	case w > 1e6:
		return 1e6
	}
	// Round to float32 so that Identity names exactly the weight used.
	return float64(float32(w))
}

func formatWeight(w float64) string { return strconv.FormatFloat(w, 'g', -1, 32) }

// Identity encodes the algorithm version and every parameter, e.g.
// "lexical-v1/d768/w1/c3-5x0.35/b0/stem/stop".
func (l *Lexical) Identity() string { return l.identity }

// Dimension returns the vector length.
func (l *Lexical) Dimension() int { return l.dim }

// MatchesWords implements [WordMatcher]: lexical vectors encode words.
func (l *Lexical) MatchesWords() bool { return true }

// Embed returns one unit vector per text. It fails only if ctx is done.
func (l *Lexical) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	s := l.getScratch()
	defer l.scratch.Put(s)
	for i, t := range texts {
		if i%16 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		out[i] = l.embedOne(s, t)
	}
	return out, nil
}

// EmbedText embeds a single text; it is Embed without the context and the slice.
func (l *Lexical) EmbedText(text string) []float32 {
	s := l.getScratch()
	defer l.scratch.Put(s)
	return l.embedOne(s, text)
}

func (l *Lexical) getScratch() *lexScratch {
	if s, ok := l.scratch.Get().(*lexScratch); ok {
		return s
	}
	return &lexScratch{}
}

// lexScratch is the per-goroutine working memory of one Embed call.
type lexScratch struct {
	// table is an open-addressing hash table of feature slots: the high 48
	// bits of a slot are the feature's key (see featureKey), the low 16 bits
	// its count, saturating at 65535; 0 is an empty slot.
	table   []uint64
	mask    uint64
	n       int        // occupied slots
	limit   int        // fold into vec when n reaches this
	word    []rune     // bowRune, then the current word's lower-cased runes
	vec     []float32  // output being accumulated
	weights [4]float32 // per family, from the embedder
	prev    uint64     // hash of the previous content word, for bigrams
	hasPrv  bool
}

func (s *lexScratch) reset(l *Lexical, textLen int) {
	s.weights = l.weights
	// A byte of text yields at most ~3 distinct features with the defaults
	// (measured: 1.8 to 2.5 for English), so most texts fit at load <= 1/2.
	// The size must depend on the text alone: it decides when a huge text is
	// folded and in which order floats are summed, so vectors stay bit-identical.
	size := nextPow2(min(max(6*textLen, minTableSlots), maxTableSlots))
	if cap(s.table) < size {
		s.table = make([]uint64, size)
	}
	s.table = s.table[:size]
	s.mask = uint64(size - 1)
	s.n = 0
	s.limit = size / 2
	s.word = append(s.word[:0], bowRune)
	s.hasPrv = false
}

func nextPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

func (l *Lexical) embedOne(s *lexScratch, text string) []float32 {
	s.reset(l, len(text))
	vec := make([]float32, l.dim)
	s.vec = vec

	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			i++
			if lc := asciiFold[c]; lc != 0 {
				s.word = append(s.word, rune(lc))
				if len(s.word) > maxWordRunes {
					l.word(s)
				}
			} else if len(s.word) > 1 {
				l.word(s)
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			// invalid UTF-8: a separator
		case unicode.IsLetter(r) || unicode.IsDigit(r) || (len(s.word) > 1 && unicode.IsMark(r)):
			s.word = append(s.word, unicode.ToLower(r))
			if len(s.word) > maxWordRunes {
				l.word(s)
			}
			continue
		}
		if len(s.word) > 1 {
			l.word(s)
		}
	}
	if len(s.word) > 1 {
		l.word(s)
	}
	s.flushInto()
	s.vec = nil

	var sum float64
	for _, v := range vec {
		sum += float64(v) * float64(v)
	}
	if sum == 0 || math.IsNaN(sum) || math.IsInf(sum, 0) {
		// No features, or features that cancelled out exactly.
		clear(vec)
		vec[0] = 1
		return vec
	}
	inv := 1 / math.Sqrt(sum)
	for i, v := range vec {
		vec[i] = float32(float64(v) * inv)
	}
	return vec
}

// word consumes the word in s.word[1:] and resets s.word to the marker.
func (l *Lexical) word(s *lexScratch) {
	l.wordFeatures(s)
	s.word = s.word[:1]
}

// wordFeatures counts the features of the word in s.word[1:].
func (l *Lexical) wordFeatures(s *lexScratch) {
	w := s.word[1:]

	h := hashRunes(fnvOffset, w)
	if l.dropStop && len(w) <= maxStopWordLen && stopWords[h] {
		return
	}
	if l.weights[famWord] != 0 || l.weights[famBigram] != 0 {
		uh := h
		if l.stem {
			if n, y := pluralStem(w); n != len(w) {
				uh = hashRunes(fnvOffset, w[:n])
				if y {
					uh = fnvStep(uh, 'y')
				}
			}
		}
		if l.weights[famWord] != 0 {
			s.add(featureKey(uh, famWord))
		}
		if l.weights[famBigram] != 0 {
			if s.hasPrv {
				s.add(featureKey(fnvStep(fnvStep(s.prev, 0x1F), rune(uh)^rune(uh>>32)), famBigram))
			}
			s.prev, s.hasPrv = uh, true
		}
	}
	if l.maxN == 0 {
		return
	}
	// Character n-grams of bow + w + eow, hashed incrementally per start.
	s.word = append(s.word, eowRune)
	p := s.word
	for start := 0; start+l.minN <= len(p); start++ {
		g := uint64(fnvOffset)
		end := min(start+l.maxN, len(p))
		for j := start; j < end; j++ {
			g = fnvStep(g, p[j])
			if j-start+1 >= l.minN {
				s.add(featureKey(g, famChar))
			}
		}
	}
}

// add counts one occurrence of a feature key.
func (s *lexScratch) add(key uint64) {
	i := (key >> keySlotShift) & s.mask
	for {
		k := s.table[i]
		if k&^countMask == key {
			if k&countMask != countMask {
				s.table[i] = k + 1
			}
			return
		}
		if k == 0 {
			s.table[i] = key | 1
			s.n++
			if s.n >= s.limit {
				s.flushInto()
			}
			return
		}
		i = (i + 1) & s.mask
	}
}

// flushInto adds every counted feature to s.vec and empties the table.
func (s *lexScratch) flushInto() {
	if s.n == 0 {
		return
	}
	dim := uint64(len(s.vec))
	w := &s.weights
	for i, k := range s.table {
		if k == 0 {
			continue
		}
		s.table[i] = 0
		x := w[(k>>keyFamShift)&3] * tfWeight(uint32(k&countMask))
		if k&keySignBit != 0 {
			x = -x
		}
		s.vec[((k>>32)*dim)>>32] += x
	}
	s.n = 0
}

// tfWeight is the sublinear term frequency 1+ln(tf).
func tfWeight(c uint32) float32 {
	if int(c) < len(tfTable) {
		return tfTable[c]
	}
	return float32(1 + math.Log(float64(c)))
}

var tfTable = func() (t [256]float32) {
	for i := 1; i < len(t); i++ {
		t[i] = float32(1 + math.Log(float64(i)))
	}
	return t
}()

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvStep(h uint64, r rune) uint64 { return (h ^ uint64(uint32(r))) * fnvPrime }

func hashRunes(h uint64, rs []rune) uint64 {
	for _, r := range rs {
		h = fnvStep(h, r)
	}
	return h
}

// Layout of a feature key in a table slot.
const (
	countMask    = 0xFFFF  // bits 0-15: count (in the table; 0 in a key)
	keyFamShift  = 16      // bits 16-17: family (never 0, so a key is never 0)
	keySignBit   = 1 << 18 // bit 18: the sign of the feature's contribution
	keySlotShift = 19      // bits 19..: the table slot
	// bits 32-63 pick the bucket: ((key>>32) * dim) >> 32
)

// featureKey mixes a feature hash with its family (murmur3's 64-bit
// finaliser) and returns the key: 48 mixed bits with the family in bits 16-17.
func featureKey(h uint64, fam uint64) uint64 {
	h ^= fam * 0x9E3779B97F4A7C15
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h&^(countMask|3<<keyFamShift) | fam<<keyFamShift
}

// asciiFold maps an ASCII byte to its lower-case form if it is a letter or
// digit, and to 0 if it separates words.
var asciiFold = func() (t [128]byte) {
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c)
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = byte(c)
		t[c-'a'+'A'] = byte(c)
	}
	return t
}()

// pluralStem folds English plurals (Harman's S-stemmer, slightly guarded):
// "ies" -> "y" (studies -> study), "es" -> "e" (horses -> horse), "s" -> ""
// (cells -> cell), but not "ss", "us", "is" (glass, virus, analysis) and not in
// words of three runes or fewer. It returns the new length and whether a 'y'
// is appended.
func pluralStem(w []rune) (n int, y bool) {
	L := len(w)
	if L <= 3 || w[L-1] != 's' {
		return L, false
	}
	a, b := w[L-3], w[L-2]
	switch {
	case a == 'i' && b == 'e' && L > 4 && w[L-4] != 'e' && w[L-4] != 'a':
		return L - 3, true
	case b == 'e' && a != 'a' && a != 'e' && a != 'o':
		return L - 1, false
	case b == 's' || b == 'u' || b == 'i':
		return L, false
	}
	return L - 1, false
}
