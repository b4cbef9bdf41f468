package memory

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"github.com/ragmem/ragmem/internal/clean"
)

// PatternKind says how a whenToUse pattern (or a procedural rule's
// condition) is read.
type PatternKind string

// Pattern kinds.
const (
	// KindSubstring: one word, matched as a case-insensitive substring of
	// the task and agent name ("auth" matches "OAuth").
	KindSubstring PatternKind = "substring"
	// KindAlternatives: "auth|login|security", any alternative matches;
	// each alternative is itself a substring, wildcard or natural-language
	// pattern.
	KindAlternatives PatternKind = "alternatives"
	// KindWildcard: '*' for any text, '?' for one character
	// ("implement*auth").
	KindWildcard PatternKind = "wildcard"
	// KindRegex: a Go (RE2) regular expression, case-insensitive, used when
	// the pattern looks like one (".*", "\\b", "[...]", "(...)", "{n}", "^",
	// "$", "+"), e.g. "implement.*auth"; one that does not compile is read
	// as text instead.
	KindRegex PatternKind = "regex"
	// KindNatural: several words ("When implementing security features").
	// It matches as a phrase, or semantically: when at least half of its
	// content words (by weight, stems of the index's English analyzer,
	// generic task words counting half) occur in the task, or when the
	// store's embedder finds it close enough to the task (with the lexical
	// embedder, which only sees shared words and sub-words, the pattern
	// must also share a word other than a generic task word).
	KindNatural PatternKind = "natural"
)

// Pattern is a compiled whenToUse pattern. It is immutable and safe for
// concurrent use.
type Pattern struct {
	raw  string
	kind PatternKind
	lex  []lexMatcher
	nl   []*nlPart
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

// nlPart is a natural-language pattern (or alternative).
type nlPart struct {
	raw    string    // the alternative as written
	text   string    // its content words, what is embedded and indexed
	stems  []string  // its content stems, filler removed
	weight []float64 // weight of each stem: 1, or 0.5 for generic task words
}

// Raw returns the pattern as written.
func (p *Pattern) Raw() string { return p.raw }

// Kind returns how the pattern is read.
func (p *Pattern) Kind() PatternKind { return p.kind }

// fillerStems are dropped from natural-language patterns: they say "when"
// rather than "what" ("When the task mentions authentication").
var fillerStems = map[string]bool{
	"when": true, "whenev": true, "if": true, "while": true, "task": true, "mention": true,
	"involv": true, "relat": true, "regard": true, "concern": true, "deal": true,
	"someth": true, "anyth": true, "thing": true, "agent": true,
}

// genericStems are words of almost every task; in natural-language
// patterns they weigh half, and they never make a weak match on their own.
var genericStems = map[string]bool{
	"add": true, "build": true, "chang": true, "code": true, "creat": true, "delet": true,
	"featur": true, "fix": true, "get": true, "implement": true, "improv": true, "make": true,
	"modifi": true, "need": true, "new": true, "refactor": true, "remov": true, "run": true,
	"set": true, "support": true, "task": true, "updat": true, "us": true, "use": true,
	"work": true, "write": true,
}

// looksLikeRegex reports whether a pattern uses regular-expression syntax
// beyond '|' (handled as alternatives) and a lone '*' or '?' (wildcards).
func looksLikeRegex(s string) bool {
	if strings.Contains(s, ".*") || strings.Contains(s, ".+") || strings.Contains(s, ".?") || strings.Contains(s, ".{") {
		return true
	}
	return strings.ContainsAny(s, `\[](){}^$+`)
}

// CompilePattern reads a whenToUse pattern. It fails only for an empty or
// over-long pattern; a pattern that looks like a regular expression but does
// not compile is read as text, as the seed does.
func CompilePattern(s string) (*Pattern, error) {
	s = clean.Line(s)
	if s == "" {
		return nil, fmt.Errorf("%w: empty pattern", ErrInvalid)
	}
	if len(s) > MaxPatternLen {
		return nil, fmt.Errorf("%w: pattern is longer than %d bytes", ErrInvalid, MaxPatternLen)
	}
	p := &Pattern{raw: s}
	low := strings.ToLower(s)
	if looksLikeRegex(s) {
		if re, err := regexp.Compile("(?i)" + s); err == nil {
			p.kind = KindRegex
			p.lex = []lexMatcher{{re: re}}
			return p, nil
		}
	}
	if strings.Contains(s, "|") {
		p.kind = KindAlternatives
		for _, alt := range strings.Split(s, "|") {
			alt = strings.TrimSpace(alt)
			if alt == "" {
				continue
			}
			lex, nl := compileSimple(alt, strings.ToLower(alt))
			p.lex = append(p.lex, lex...)
			p.nl = append(p.nl, nl...)
		}
		if len(p.lex) == 0 && len(p.nl) == 0 {
			return nil, fmt.Errorf("%w: pattern %q has no alternatives", ErrInvalid, clean.Clip(s, 60))
		}
		return p, nil
	}
	p.lex, p.nl = compileSimple(s, low)
	switch {
	case len(p.nl) > 0:
		p.kind = KindNatural
	case len(p.lex) == 1 && p.lex[0].re != nil:
		p.kind = KindWildcard
	default:
		p.kind = KindSubstring
	}
	return p, nil
}

// compileSimple reads one alternative: a wildcard, a word or a phrase.
func compileSimple(raw, low string) ([]lexMatcher, []*nlPart) {
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
	part := &nlPart{raw: raw}
	var words []string
	for _, t := range analyze(raw) {
		if fillerStems[t.stem] {
			continue
		}
		words = append(words, t.word)
		part.stems = append(part.stems, t.stem)
		w := 1.0
		if genericStems[t.stem] {
			w = 0.5
		}
		part.weight = append(part.weight, w)
	}
	part.text = strings.Join(words, " ")
	return lex, []*nlPart{part}
}

// sharesSpecific reports whether one of the part's stems that is not a
// generic task word occurs in the task.
func (n *nlPart) sharesSpecific(task map[string]bool) bool {
	for _, s := range n.stems {
		if !genericStems[s] && stemCovered(s, task) {
			return true
		}
	}
	return false
}

// coverage is the weighted share of the part's content stems found in the
// task's stems; 0 when the part has none.
func (n *nlPart) coverage(task map[string]bool) float64 {
	var have, total float64
	for i, s := range n.stems {
		total += n.weight[i]
		if stemCovered(s, task) {
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

// NaturalParts returns the natural-language alternatives of the pattern
// (their content words), which are matched semantically.
func (p *Pattern) NaturalParts() []string {
	out := make([]string, len(p.nl))
	for i, n := range p.nl {
		out[i] = n.text
	}
	return out
}

// DefaultMinCoverage is the share of a natural-language pattern's content
// words (by weight) that must occur in the task for it to fire.
const DefaultMinCoverage = 0.5

// Coverage returns the best coverage of any natural-language alternative by
// the task, in [0, 1].
func (p *Pattern) Coverage(task string) float64 {
	return p.coverage(stems(task))
}

func (p *Pattern) coverage(task map[string]bool) float64 {
	best := 0.0
	for _, n := range p.nl {
		best = max(best, n.coverage(task))
	}
	return best
}
