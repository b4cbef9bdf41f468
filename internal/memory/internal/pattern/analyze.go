package pattern

import (
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/registry"

	"github.com/ragmem/ragmem/internal/clean"
)

// Text analysis shared by pattern matching, keyword scoring, relevance and
// the layers' word search: the English analyzer of ragmem's BM25 index
// (bleve's "en": Unicode word tokens, possessives stripped, lower case,
// English stop words removed, Porter stems). Matching with the index's own
// analysis means a word counts as shared exactly when BM25 would count it.

var (
	analyzerOnce sync.Once
	analyzer     analysis.Analyzer
)

func englishAnalyzer() analysis.Analyzer {
	analyzerOnce.Do(func() {
		a, err := registry.NewCache().AnalyzerNamed(en.AnalyzerName)
		if err != nil {
			// The analyzer is compiled in; failing to build it is a bug.
			panic("pattern: building the English analyzer: " + err.Error())
		}
		analyzer = a
	})
	return analyzer
}

// maxAnalyzedBytes bounds the text analysed for matching: a task or a
// pattern longer than this is matched on its first 64 KiB.
const maxAnalyzedBytes = 64 << 10

// Term is one analysed word: its lower-cased surface form and its stem.
type Term struct {
	Word string
	Stem string
}

// Analyze returns the content words of s (stop words removed) in order,
// each once.
func Analyze(s string) []Term {
	s = clean.Clip(s, maxAnalyzedBytes)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, " ")
	}
	seen := map[string]bool{}
	var out []Term
	for _, tk := range englishAnalyzer().Analyze([]byte(s)) {
		if tk.Start < 0 || tk.End > len(s) || tk.Start >= tk.End {
			continue
		}
		stem := string(tk.Term)
		word := strings.ToLower(s[tk.Start:tk.End])
		if strings.HasSuffix(word, "'s") || strings.HasSuffix(word, "’s") {
			word = strings.TrimSuffix(strings.TrimSuffix(word, "'s"), "’s")
		}
		if seen[stem] || stem == "" {
			continue
		}
		seen[stem] = true
		out = append(out, Term{Word: word, Stem: stem})
	}
	return out
}

// Stems returns the set of stems of s.
func Stems(s string) map[string]bool {
	m := map[string]bool{}
	for _, t := range Analyze(s) {
		m[t.Stem] = true
	}
	return m
}

// Covered reports whether the stem p (a word that must be found) occurs in
// set (the stems of the text searched): equal, or, when p has at least 4
// letters, as the prefix of a longer stem ("auth" is found in
// "authentication", "config" in "configuration"; "password" is not found in
// "pass").
func Covered(p string, set map[string]bool) bool {
	if set[p] {
		return true
	}
	if utf8.RuneCountInString(p) < 4 {
		return false
	}
	for t := range set {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// StemSet is a set of stems that answers Covered in O(log n): for the stems
// of chunks, which are checked against every task. It is immutable and safe
// for concurrent use.
type StemSet struct {
	sorted []string
}

// NewStemSet returns the set of m's keys.
func NewStemSet(m map[string]bool) *StemSet {
	ss := &StemSet{sorted: make([]string, 0, len(m))}
	for s := range m {
		ss.sorted = append(ss.sorted, s)
	}
	sort.Strings(ss.sorted)
	return ss
}

// Covers is Covered over the set.
func (ss *StemSet) Covers(p string) bool {
	i := sort.SearchStrings(ss.sorted, p)
	if i == len(ss.sorted) {
		return false
	}
	if ss.sorted[i] == p {
		return true
	}
	return utf8.RuneCountInString(p) >= 4 && strings.HasPrefix(ss.sorted[i], p)
}

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

// HasSpecific reports whether ts has a stem that is not a generic task word
// (add, implement, fix, feature, ...).
func HasSpecific(ts []Term) bool {
	for _, t := range ts {
		if !genericStems[t.Stem] {
			return true
		}
	}
	return false
}

// Specific returns the terms of ts that are not generic task words; all of
// them when every one is generic.
func Specific(ts []Term) []Term {
	var out []Term
	for _, t := range ts {
		if !genericStems[t.Stem] {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return ts
	}
	return out
}
