package memory

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

// Text analysis shared by pattern matching, keyword scoring and relevance:
// the English analyzer of ragmem's BM25 index (bleve's "en": Unicode word
// tokens, possessives stripped, lower case, English stop words removed,
// Porter stems). Matching with the index's own analysis means a word counts
// as shared exactly when BM25 would count it.

var (
	analyzerOnce sync.Once
	analyzer     analysis.Analyzer
)

func englishAnalyzer() analysis.Analyzer {
	analyzerOnce.Do(func() {
		a, err := registry.NewCache().AnalyzerNamed(en.AnalyzerName)
		if err != nil {
			// The analyzer is compiled in; failing to build it is a bug.
			panic("memory: building the English analyzer: " + err.Error())
		}
		analyzer = a
	})
	return analyzer
}

// maxAnalyzedBytes bounds the text analysed for matching: a task or a
// pattern longer than this is matched on its first 64 KiB.
const maxAnalyzedBytes = 64 << 10

// term is one analysed word: its lower-cased surface form and its stem.
type term struct {
	word string
	stem string
}

// analyze returns the content words of s (stop words removed) in order,
// each once.
func analyze(s string) []term {
	s = clean.Clip(s, maxAnalyzedBytes)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, " ")
	}
	seen := map[string]bool{}
	var out []term
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
		out = append(out, term{word: word, stem: stem})
	}
	return out
}

// stems returns the set of stems of s.
func stems(s string) map[string]bool {
	m := map[string]bool{}
	for _, t := range analyze(s) {
		m[t.stem] = true
	}
	return m
}

// stemCovered reports whether the stem p (a word that must be found) occurs
// in set (the stems of the text searched): equal, or, when p has at least 4
// letters, as the prefix of a longer stem ("auth" is found in
// "authentication", "config" in "configuration"; "password" is not found in
// "pass").
func stemCovered(p string, set map[string]bool) bool {
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

// stemSet is a set of stems that answers prefix questions in O(log n):
// for the stems of chunks, which are checked against every task.
type stemSet struct {
	sorted []string
}

func newStemSet(m map[string]bool) *stemSet {
	ss := &stemSet{sorted: make([]string, 0, len(m))}
	for s := range m {
		ss.sorted = append(ss.sorted, s)
	}
	sort.Strings(ss.sorted)
	return ss
}

// covers is stemCovered over the set.
func (ss *stemSet) covers(p string) bool {
	i := sort.SearchStrings(ss.sorted, p)
	if i == len(ss.sorted) {
		return false
	}
	if ss.sorted[i] == p {
		return true
	}
	return utf8.RuneCountInString(p) >= 4 && strings.HasPrefix(ss.sorted[i], p)
}
