// Package pattern reads whenToUse patterns (and the conditions of
// procedural rules) and tells whether they fire for a task: literally (a
// substring, alternatives, a wildcard, a regular expression, a phrase) or,
// for natural language, by the content words the pattern shares with the
// task. It holds the English analysis that matching, scoring and the
// layers' word search share, and the similarity thresholds of matching by
// meaning. It is internal to agent memory.
package pattern

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"unicode"

	"github.com/ragmem/ragmem/internal/clean"
	"github.com/ragmem/ragmem/internal/index/engine"
)

// MaxLen bounds one pattern, in bytes.
const MaxLen = 500

// MinCoverage is the share of a natural-language pattern's content words
// (by weight) that must occur in the task for it to fire by its words.
const MinCoverage = 0.5

// Embedding similarity at which a natural-language pattern fires by
// meaning: measured on the worked examples' tasks with the offline lexical
// embedder (docs/memory.md); the other value is for other embedders, where
// no model is available offline to measure it.
const (
	LexicalThreshold  = 0.3
	SemanticThreshold = 0.5
)

// Lexical reports whether ix embeds with ragmem's lexical embedder, which
// sees shared words and sub-words rather than meaning.
func Lexical(ix *engine.Index) bool {
	return ix != nil && strings.HasPrefix(ix.Embedder().Identity(), "lexical")
}

// Threshold is the similarity threshold for ix's embedder.
func Threshold(ix *engine.Index) float64 {
	if Lexical(ix) {
		return LexicalThreshold
	}
	return SemanticThreshold
}

// Cosine is the cosine similarity of a and b (0 when their lengths differ
// or one is zero).
func Cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// Kind says how a pattern is read. Kinds are plain values.
type Kind string

// Pattern kinds.
const (
	// Substring: one word, matched as a case-insensitive substring of the
	// task and agent name ("auth" matches "OAuth").
	Substring Kind = "substring"
	// Alternatives: "auth|login|security", any alternative matches; each
	// alternative is itself a substring, wildcard or natural-language
	// pattern.
	Alternatives Kind = "alternatives"
	// Wildcard: '*' for any text, '?' for one character ("implement*auth").
	Wildcard Kind = "wildcard"
	// Regex: a Go (RE2) regular expression, case-insensitive, used when the
	// pattern looks like one (".*", "\\b", "[...]", "(...)", "{n}", "^",
	// "$", "+"), e.g. "implement.*auth"; one that does not compile is read
	// as text instead.
	Regex Kind = "regex"
	// Natural: several words ("When implementing security features"). It
	// matches as a phrase, or by meaning: when at least half of its content
	// words (by weight, stems of the index's English analyzer, generic task
	// words counting half) occur in the task, or when the embedder finds it
	// close enough to the task.
	Natural Kind = "natural"
)

// Pattern is a compiled pattern. It is immutable and safe for concurrent
// use.
type Pattern struct {
	raw     string
	kind    Kind
	lex     []lexMatcher
	phrases []*Phrase
}

// lexMatcher matches the lower-cased task-and-agent text.
type lexMatcher struct {
	lit string         // substring, when re is nil
	re  *regexp.Regexp // regex or wildcard
}

func (m lexMatcher) match(text string) bool {
	if m.re != nil {
		return m.re.MatchString(text)
	}
	return m.lit != "" && strings.Contains(text, m.lit)
}

// Phrase is a natural-language pattern or alternative. It is immutable and
// safe for concurrent use.
type Phrase struct {
	// Raw is the alternative as written.
	Raw string
	// Text is its content words: what is embedded and indexed.
	Text   string
	stems  []string  // its content stems, filler removed
	weight []float64 // weight of each stem: 1, or 0.5 for generic task words
}

// Raw returns the pattern as written.
func (p *Pattern) Raw() string { return p.raw }

// Kind returns how the pattern is read.
func (p *Pattern) Kind() Kind { return p.kind }

// Phrases returns the natural-language alternatives of the pattern, which
// also match by meaning.
func (p *Pattern) Phrases() []*Phrase { return p.phrases }

// looksLikeRegex reports whether a pattern uses regular-expression syntax
// beyond '|' (handled as alternatives) and a lone '*' or '?' (wildcards).
func looksLikeRegex(s string) bool {
	if strings.Contains(s, ".*") || strings.Contains(s, ".+") || strings.Contains(s, ".?") || strings.Contains(s, ".{") {
		return true
	}
	return strings.ContainsAny(s, `\[](){}^$+`)
}

// Compile reads a pattern. It fails only for an empty or over-long pattern
// (callers wrap the error in their own sentinel); a pattern that looks like
// a regular expression but does not compile is read as text.
func Compile(s string) (*Pattern, error) {
	s = clean.Line(s)
	if s == "" {
		return nil, errors.New("empty pattern")
	}
	if len(s) > MaxLen {
		return nil, fmt.Errorf("pattern is longer than %d bytes", MaxLen)
	}
	p := &Pattern{raw: s}
	low := strings.ToLower(s)
	if looksLikeRegex(s) {
		if re, err := regexp.Compile("(?i)" + s); err == nil {
			p.kind = Regex
			p.lex = []lexMatcher{{re: re}}
			return p, nil
		}
	}
	if strings.Contains(s, "|") {
		p.kind = Alternatives
		for _, alt := range strings.Split(s, "|") {
			alt = strings.TrimSpace(alt)
			if alt == "" {
				continue
			}
			lex, nl := compileSimple(alt, strings.ToLower(alt))
			p.lex = append(p.lex, lex...)
			p.phrases = append(p.phrases, nl...)
		}
		if len(p.lex) == 0 && len(p.phrases) == 0 {
			return nil, fmt.Errorf("pattern %q has no alternatives", clean.Clip(s, 60))
		}
		return p, nil
	}
	p.lex, p.phrases = compileSimple(s, low)
	switch {
	case len(p.phrases) > 0:
		p.kind = Natural
	case len(p.lex) == 1 && p.lex[0].re != nil:
		p.kind = Wildcard
	default:
		p.kind = Substring
	}
	return p, nil
}

// compileSimple reads one alternative: a wildcard, a word or a phrase.
func compileSimple(raw, low string) ([]lexMatcher, []*Phrase) {
	hasSpace := strings.IndexFunc(low, unicode.IsSpace) >= 0
	if strings.Contains(low, "*") || (strings.Contains(low, "?") && !hasSpace) {
		var b strings.Builder
		b.WriteString("(?i)")
		for _, r := range low {
			switch r {
			case '*':
				b.WriteString(".*")
			case '?':
				b.WriteString(".")
			default:
				b.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		if re, err := regexp.Compile(b.String()); err == nil {
			return []lexMatcher{{re: re}}, nil
		}
	}
	lex := []lexMatcher{{lit: low}}
	if !hasSpace {
		return lex, nil
	}
	part := &Phrase{Raw: raw}
	var words []string
	for _, t := range Analyze(raw) {
		if fillerStems[t.Stem] {
			continue
		}
		words = append(words, t.Word)
		part.stems = append(part.stems, t.Stem)
		w := 1.0
		if genericStems[t.Stem] {
			w = 0.5
		}
		part.weight = append(part.weight, w)
	}
	part.Text = strings.Join(words, " ")
	return lex, []*Phrase{part}
}

// SharesSpecific reports whether one of the phrase's stems that is not a
// generic task word occurs in the task's stems.
func (n *Phrase) SharesSpecific(task map[string]bool) bool {
	for _, s := range n.stems {
		if !genericStems[s] && Covered(s, task) {
			return true
		}
	}
	return false
}

// Coverage is the weighted share of the phrase's content stems found in
// the task's stems; 0 when the phrase has none.
func (n *Phrase) Coverage(task map[string]bool) float64 {
	var have, total float64
	for i, s := range n.stems {
		total += n.weight[i]
		if Covered(s, task) {
			have += n.weight[i]
		}
	}
	if total == 0 {
		return 0
	}
	return have / total
}

// MatchLexical reports whether the pattern matches text literally (its
// substring, wildcard, regex or phrase form); text should be lower-cased.
func (p *Pattern) MatchLexical(text string) bool {
	for _, m := range p.lex {
		if m.match(text) {
			return true
		}
	}
	return false
}

// Coverage returns the best coverage of any natural-language alternative by
// the task's stems, in [0, 1].
func (p *Pattern) Coverage(task map[string]bool) float64 {
	best := 0.0
	for _, n := range p.phrases {
		best = max(best, n.Coverage(task))
	}
	return best
}
