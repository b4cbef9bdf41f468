package agent

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func checkWebResults(t *testing.T, res []WebResult, limit int) {
	t.Helper()
	if len(res) > webLimit(limit) {
		t.Fatalf("%d results for limit %d", len(res), limit)
	}
	seen := map[string]bool{}
	for _, r := range res {
		if cleanURL(r.URL) != r.URL || r.URL == "" || seen[r.URL] {
			t.Fatalf("bad or duplicate URL %q", r.URL)
		}
		seen[r.URL] = true
		for _, s := range []string{r.Title, r.Snippet, r.Engine} {
			if !utf8.ValidString(s) || strings.ContainsAny(s, "\x00\n\t\r") {
				t.Fatalf("unclean text %q", s)
			}
		}
		if utf8.RuneCountInString(r.Snippet) > maxSnippetRunes+1 || r.Title == "" {
			t.Fatalf("snippet too long or empty title: %+v", r)
		}
	}
}

func FuzzParseSearXNG(f *testing.F) {
	f.Add([]byte(searxngBody), 3)
	f.Add([]byte(`{"results":[{"url":"http://a","title":"<b","content":"&#0;","publishedDate":"2024-01-02"}]}`), 0)
	f.Fuzz(func(t *testing.T, body []byte, limit int) {
		res, err := parseSearXNG(body, limit)
		if err == nil {
			checkWebResults(t, res, limit)
		}
	})
}

func FuzzParseBrave(f *testing.F) {
	f.Add([]byte(braveBody), 2)
	f.Add([]byte(`{"web":{"results":[{"url":"https://x","description":"<strong>a</strong>\u0000","page_age":"x"}]}}`), -1)
	f.Fuzz(func(t *testing.T, body []byte, limit int) {
		res, err := parseBrave(body, limit)
		if err == nil {
			checkWebResults(t, res, limit)
		}
	})
}

var anyMarker = regexp.MustCompile(`\[(\d{1,3})\]`)

// FuzzParseSynthesis checks that any model output yields an answer whose
// citations name only retrieved sources.
func FuzzParseSynthesis(f *testing.F) {
	f.Add(synthesisJSON("a [1] b [2][9]", []int{1, 3}, true, "x"), 2)
	f.Add("```json\n{\"answer\":\"[1, 2, 0]\",\"cited\":[\"2\"]}\n```", 1)
	f.Add("no json [3]", 3)
	f.Fuzz(func(t *testing.T, content string, nsrc int) {
		nsrc = max(0, min(nsrc, 50))
		srcs := make([]Source, nsrc)
		for i := range srcs {
			k := WebSource
			if i%2 == 0 {
				k = MemorySource
			}
			srcs[i] = Source{Index: i + 1, Kind: k, URL: "u" + strconv.Itoa(i)}
		}
		syn, _ := parseSynthesis(content)
		if !utf8.ValidString(syn.Answer) {
			t.Fatal("invalid UTF-8 answer")
		}
		answer, cits, dropped := resolveCitations(syn.Answer, syn.Cited, srcs)
		valid := map[int]bool{}
		for _, c := range cits {
			if c.Index < 1 || c.Index > nsrc || c.Label != srcs[c.Index-1].Kind.Label() || c.Source != srcs[c.Index-1].Kind {
				t.Fatalf("citation %+v of %d sources", c, nsrc)
			}
			valid[c.Index] = true
		}
		for _, d := range dropped {
			if d >= 1 && d <= nsrc {
				t.Fatalf("dropped a valid index %d", d)
			}
		}
		for _, m := range anyMarker.FindAllStringSubmatch(answer, -1) {
			if n, _ := strconv.Atoi(m[1]); !valid[n] {
				// A marker left in the answer must be a kept citation,
				// unless it was glued to digits ("1[2]" is not a marker
				// boundary issue: markerRE matches it too).
				t.Fatalf("answer %q keeps marker %s that is not a citation", answer, m[0])
			}
		}
	})
}
