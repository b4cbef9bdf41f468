package chunk

import (
	"fmt"
	"math/bits"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/ragmem/ragmem/internal/proptest"
	"github.com/ragmem/ragmem/internal/tokens"
)

// Counters with the shapes a tokenizer can have, all monotone (a longer
// string never counts fewer): one token per rune, a few bytes per token (a
// long word of letters), and several tokens per rune (emoji, rare scripts).
var packCounters = []struct {
	name  string
	count func(string) int
}{
	{"rune", runeCount},
	{"8 bytes", func(s string) int { return (len(s) + 7) / 8 }},
	{"3 per rune", func(s string) int { return 3 * utf8.RuneCountInString(s) }},
}

// gapStart is where the count of a unit starting at start after the
// whitespace from gap begins: at most gapContext bytes before start, on a
// rune boundary.
func gapStart(text string, gap, start int) int {
	g := max(gap, start-gapContext)
	for g < start && !utf8.RuneStart(text[g]) {
		g++
	}
	return g
}

// A unit's count covers its text with at most gapContext bytes of the
// whitespace before it, starting on a rune boundary; the rest of the
// whitespace is estimated at one token per byte. And a word over the budget
// is cut where the longest prefix that fits ends (at least one rune).
// Checked against a linear scan of every rune boundary.
func TestFitPrefixIsTheLongestFit(t *testing.T) {
	runes := []rune{'a', 'é', '中', '😀', '.'}
	spaces := []string{" ", "\u3000", "\n", "\u00a0"}
	ps := gopter.NewProperties(proptest.Params(t, 300))
	ps.Property("countFrom and fitPrefix agree with a linear scan", prop.ForAll(
		func(word []int, gap []int, budget, counter int) string {
			var b strings.Builder
			b.WriteString("x")
			for _, k := range gap {
				b.WriteString(spaces[k])
			}
			start := b.Len()
			for _, k := range word {
				b.WriteRune(runes[k])
			}
			end := b.Len()
			b.WriteString(" y")
			text := b.String()
			count := packCounters[counter].count
			sp := &splitter{text: text, st: settings{max: budget, count: count}}

			g := gapStart(text, 1, start)
			if tok, extra := sp.countFrom(1, start, end); tok != count(text[g:end]) || extra != g-1 {
				return fmt.Sprintf("countFrom = %d, %d; want %d, %d", tok, extra, count(text[g:end]), g-1)
			}
			// The longest rune boundary n in (start, end] that fits, or the
			// first rune alone.
			_, first := utf8.DecodeRuneInString(text[start:end])
			want := start + first
			for n := start + first; n <= end; {
				if count(text[g:n]) <= budget {
					want = n
				}
				if n == end {
					break
				}
				_, size := utf8.DecodeRuneInString(text[n:end])
				n += size
			}
			n, tok, extra := sp.fitPrefix(1, start, end)
			if n != want || tok != count(text[g:n]) || extra != g-1 {
				return fmt.Sprintf("fitPrefix = %d, %d, %d; want %d, %d, %d (start %d, end %d)",
					n, tok, extra, want, count(text[g:want]), g-1, start, end)
			}
			return ""
		},
		gen.SliceOf(gen.IntRange(0, len(runes)-1)).SuchThat(func(v []int) bool { return len(v) > 0 }),
		gen.SliceOf(gen.IntRange(0, len(spaces)-1)),
		gen.IntRange(1, 60),
		gen.IntRange(0, len(packCounters)-1),
	))
	ps.TestingRun(t)
}

// The same, deterministically and for every length and budget of an ASCII
// word, so that a gallop probe or an interpolation step landing exactly on
// the budget is always among the cases (the property above draws them by
// chance).
func TestFitPrefixEveryLength(t *testing.T) {
	word := strings.Repeat("abcdefghijklmnopqrstuvwxyz", 12)
	for _, c := range packCounters[:2] { // one token per byte, per 8 bytes
		for budget := 1; budget <= 40; budget++ {
			for n := 1; n <= len(word); n++ {
				text := "x " + word[:n] + " y"
				sp := &splitter{text: text, st: settings{max: budget, count: c.count}}
				want := 3 // the first rune at least
				for m := 3; m <= 2+n; m++ {
					if c.count(text[1:m]) <= budget {
						want = m
					}
				}
				if got, tok, _ := sp.fitPrefix(1, 2, 2+n); got != want || tok != c.count(text[1:want]) {
					t.Fatalf("%s, budget %d, %d-byte word: fitPrefix = %d (%d tokens), want %d", c.name, budget, n, got, tok, want)
				}
			}
		}
	}
}

// Cutting a word over the budget costs few counts (each one a tokenizer
// pass over up to 1 KiB): on these words, whatever the counter's shape and
// wherever the word starts, no more than a bisection over the word's bytes
// and two more (the whole word, and the gallop's probe past the cut); and
// with a counter proportional to the length, where interpolation lands on
// the cut, fewer than a bisection.
func TestFitPrefixCountsFew(t *testing.T) {
	counters := append(packCounters[:len(packCounters):len(packCounters)],
		struct {
			name  string
			count func(string) int
		}{"cl100k", tokens.Default().Count})
	words := []string{
		strings.Repeat("abcdefghij", 100),
		strings.Repeat("x", 1024),
		strings.Repeat("ab中😀é.", 60),
		strings.Repeat("😀", 256),
		strings.Repeat("0123456789abcdef", 13),
	}
	for _, c := range counters {
		for _, w := range words {
			for _, before := range []string{"x ", strings.Repeat("p ", 3000)} {
				text := before + w + " y"
				start, end := len(before), len(before)+len(w)
				bisection := bits.Len(uint(len(w) - 1))
				for budget := 1; budget <= 1000; budget = budget*5/4 + 1 {
					calls := 0
					sp := &splitter{text: text, st: settings{max: budget, count: func(s string) int {
						calls++
						return c.count(s)
					}}}
					sp.fitPrefix(start-1, start, end)
					if calls > bisection+2 {
						t.Errorf("%s, %d-byte word %q… at %d, budget %d: %d counts, more than a bisection's %d and two",
							c.name, len(w), w[:8], start, budget, calls, bisection)
					}
					if c.name == "rune" && utf8.RuneCountInString(w) == len(w) && calls >= bisection {
						t.Errorf("one token per byte, %d-byte word %q… at %d, budget %d: %d counts, not fewer than a bisection's %d",
							len(w), w[:8], start, budget, calls, bisection)
					}
				}
			}
		}
	}
}

func TestAlignRuneAndNextRune(t *testing.T) {
	text := "aé中😀b" // runes at 0, 1, 3, 6, 10; len 11
	for _, c := range []struct{ p, min, end, want int }{
		{11, 0, 11, 11}, // at or past the end: the end
		{12, 0, 11, 11},
		{7, 0, 11, 6}, // inside 😀: back to its start
		{9, 0, 11, 6},
		{2, 0, 11, 1}, // inside é
		{5, 0, 11, 3}, // inside 中
		{6, 0, 11, 6}, // a boundary stays
		{9, 7, 11, 7}, // never below min
		{4, 4, 11, 4},
		{1, 4, 11, 4}, // below min: min
		{3, 1, 3, 3},
	} {
		if got := alignRune(text, c.p, c.min, c.end); got != c.want {
			t.Errorf("alignRune(%d, min %d, end %d) = %d, want %d", c.p, c.min, c.end, got, c.want)
		}
	}
	for _, c := range []struct{ p, end, want int }{
		{0, 11, 1}, {1, 11, 3}, {3, 11, 6}, {6, 11, 10}, {10, 11, 11},
		{11, 11, 11}, // at the end: the end
		{6, 8, 7},    // a rune cut by end is one invalid byte, then the next
	} {
		if got := nextRune(text, c.p, c.end); got != c.want {
			t.Errorf("nextRune(%d, end %d) = %d, want %d", c.p, c.end, got, c.want)
		}
	}
}

func TestHasLongRun(t *testing.T) {
	for _, c := range []struct {
		s     string
		limit int
		want  bool
	}{
		{"abcd", 4, false}, // a run of exactly the limit is not longer
		{"abcde", 4, true},
		{"ab cd ef", 2, false},
		{"ab cde f", 2, true},
		{"a    b", 4, false}, // whitespace runs too
		{"a     b", 4, true},
		{"a\u3000\u3000b", 6, false}, // counted in bytes
		{"a\u3000\u3000\u3000b", 6, true},
		{"éé", 4, false},
		{"ééé", 4, true},
		{"", 0, false},
	} {
		if got := hasLongRun(c.s, c.limit); got != c.want {
			t.Errorf("hasLongRun(%q, %d) = %v, want %v", c.s, c.limit, got, c.want)
		}
	}
}

func TestForWords(t *testing.T) {
	for _, c := range []struct {
		s          string
		start, end int
		want       string
	}{
		{"abc", 0, 3, "[0,3)"},
		{"ab cd", 0, 5, "[0,2) [3,5)"},
		{"  ab\u3000cd\n", 0, 10, "[2,4) [7,9)"},
		{"ab cd ef", 1, 7, "[1,2) [3,5) [6,7)"},
		{"   ", 0, 3, ""},
	} {
		var got []string
		forWords(c.s, c.start, c.end, func(ws, we int) { got = append(got, fmt.Sprintf("[%d,%d)", ws, we)) })
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("forWords(%q, %d, %d) = %q, want %q", c.s, c.start, c.end, g, c.want)
		}
	}
}

// chooseCut ends a chunk at the strongest boundary that leaves it at least
// minFill tokens (the latest among equals), or at j. A chunk's first unit
// is counted without the whitespace before it when the chunk starts with
// it (bare), with it when the chunk starts with an overlap.
func TestChooseCut(t *testing.T) {
	u := func(tok, extra int, lvl int8) unit { return unit{tok: tok, extra: extra, lvl: lvl} }
	for _, c := range []struct {
		name          string
		us            []unit
		i, j          int
		base, minFill int
		bare          bool
		want          int
	}{
		{"a paragraph exactly minFill in", []unit{u(3, 0, lvlPara), u(3, 0, lvlPara), u(3, 0, lvlSentence), u(3, 0, lvlSentence)}, 0, 3, 0, 3, true, 1},
		{"a paragraph before minFill is not taken", []unit{u(2, 0, lvlPara), u(3, 0, lvlPara), u(3, 0, lvlSentence), u(3, 0, lvlSentence)}, 0, 3, 0, 3, true, 3},
		{"the strongest wins", []unit{u(3, 0, lvlPara), u(3, 0, lvlLine), u(3, 0, lvlPara), u(3, 0, lvlSentence), u(3, 0, lvlWord)}, 0, 4, 0, 3, true, 2},
		{"the latest among equals", []unit{u(3, 0, lvlPara), u(3, 0, lvlSentence), u(3, 0, lvlSentence), u(3, 0, lvlWord)}, 0, 3, 0, 3, true, 2},
		{"the unit that did not fit may be the boundary", []unit{u(3, 0, lvlPara), u(3, 0, lvlWord), u(3, 0, lvlWord), u(3, 0, lvlPara)}, 0, 3, 0, 3, true, 3},
		{"nothing reaches minFill: j", []unit{u(1, 0, lvlPara), u(1, 0, lvlPara), u(1, 0, lvlPara)}, 0, 2, 0, 5, true, 2},
		{"the overlap counts towards minFill", []unit{u(1, 0, lvlPara), u(1, 0, lvlPara), u(1, 0, lvlWord), u(1, 0, lvlWord)}, 0, 3, 2, 3, false, 1},
		{"a bare first unit without its whitespace", []unit{u(1, 5, lvlPara), u(1, 0, lvlPara), u(1, 0, lvlWord), u(1, 0, lvlWord)}, 0, 3, 0, 3, true, 3},
		{"a first unit after an overlap with its whitespace", []unit{u(1, 5, lvlPara), u(1, 0, lvlPara), u(1, 0, lvlWord), u(1, 0, lvlWord)}, 0, 3, 0, 3, false, 1},
		{"later units with their whitespace", []unit{u(1, 0, lvlPara), u(1, 5, lvlPara), u(1, 0, lvlSentence), u(1, 0, lvlWord)}, 0, 3, 0, 3, true, 2},
		{"from a later unit", []unit{u(9, 0, lvlPara), u(1, 0, lvlPara), u(1, 0, lvlPara), u(1, 0, lvlPara), u(1, 0, lvlWord)}, 1, 4, 0, 2, true, 3},
	} {
		if got := chooseCut(c.us, c.i, c.j, c.base, c.minFill, c.bare); got != c.want {
			t.Errorf("%s: chooseCut = %d, want %d", c.name, got, c.want)
		}
	}
}

// genSentences draws a text of sentences (capitalised, a full stop after a
// word of at least three letters), separated by a space or, now and then, a
// blank line.
func genSentences(maxWords int) gopter.Gen {
	word := gen.IntRange(1, 7)
	sentence := gen.SliceOf(word).SuchThat(func(v []int) bool { return len(v) > 0 && len(v) <= maxWords })
	return gopter.CombineGens(
		gen.SliceOf(sentence).SuchThat(func(v [][]int) bool { return len(v) >= 2 }),
		gen.SliceOf(gen.IntRange(0, 5)),
	).Map(func(v []any) string {
		sents, seps := v[0].([][]int), v[1].([]int)
		var b strings.Builder
		for i, ws := range sents {
			if i > 0 {
				if i-1 < len(seps) && seps[i-1] == 0 {
					b.WriteString("\n\n")
				} else {
					b.WriteString(" ")
				}
			}
			for k, n := range ws {
				if k > 0 {
					b.WriteByte(' ')
				}
				w := strings.Repeat(string(rune('a'+(i+k)%26)), n)
				if k == 0 {
					w = strings.ToUpper(w[:1]) + w[1:]
				}
				if k == len(ws)-1 {
					w += strings.Repeat("z", max(0, 3-n)) + "."
				}
				b.WriteString(w)
			}
		}
		return b.String()
	})
}

// lastNonSpace returns the end of the text before the whitespace that ends
// src[:i].
func lastNonSpace(src string, i int) int {
	for i > 0 {
		r, size := utf8.DecodeLastRuneInString(src[:i])
		if !isSpaceRune(r, size) {
			break
		}
		i -= size
	}
	return i
}

// The overlap is the longest tail of whole sentences of the previous chunk
// that fits Options.Overlap, each counted with the whitespace before it (as
// units are estimated), and none that the previous chunk repeated already
// (a sentence is in at most two chunks); when not even the last sentence fits, the longest
// tail of its words that does (never its first word, never the chunk's
// start); when not even its last word fits, or the next sentence does not
// fit beside it, there is none. Sentences here are shorter than the budget,
// so each is one unit.
func TestOverlapIsTheLongestTailThatFits(t *testing.T) {
	ps := gopter.NewProperties(proptest.Params(t, 200))
	ps.Property("overlap", prop.ForAll(
		func(src string, budget, ov int) string {
			ov = 1 + ov%(budget/2-1)
			opts := &Options{MaxTokens: budget, Overlap: ov, Count: runeCount}
			chunks := Split(src, Text, opts)
			if err := checkVerbatim(src, chunks, opts.settings()); err != nil {
				return err.Error()
			}
			spans := Sentences(src)
			for i := 1; i < len(chunks); i++ {
				p, c := chunks[i-1], chunks[i]
				est := func(s int) int { return runeCount(src[lastNonSpace(src, s):p.End]) }
				// Text p repeats from the chunk before it is not repeated again.
				fresh := p.Start + 1
				if i >= 2 {
					fresh = max(fresh, chunks[i-2].End)
				}
				want := -1
				for _, s := range spans {
					if s.Start >= fresh && s.Start < p.End && est(s.Start) <= ov {
						want = s.Start
						break
					}
				}
				if want < 0 {
					// Words of the last sentence.
					var last Span
					for _, s := range spans {
						if s.Start < p.End {
							last = s
						}
					}
					forWords(src, last.Start, p.End, func(ws, we int) {
						if want < 0 && ws > last.Start && ws > p.Start && est(ws) <= ov {
							want = ws
						}
					})
				}
				// An overlap the next sentence does not fit beside is dropped.
				if want >= 0 {
					for _, s := range spans {
						if s.Start >= p.End {
							if runeCount(src[want:s.End]) > budget {
								want = -1
							}
							break
						}
					}
				}
				got := c.Start
				if got >= p.End {
					got = -1
				}
				if got != want {
					return fmt.Sprintf("chunk %d starts at %d (%q), want %d; previous chunk [%d,%d) %q",
						i, c.Start, c.Text, want, p.Start, p.End, p.Text)
				}
			}
			return ""
		},
		genSentences(8), gen.IntRange(70, 130), gen.IntRange(0, 1000),
	))
	ps.TestingRun(t)
}

// Chunks fill up to exactly MaxTokens, by the packing rule of the package
// documentation: units are counted with the whitespace before them, except
// for the first chunk's first. With sentences of 10 runes and a space
// between them, the first chunk holds 10 + 11 + 11 = 32 tokens, a later one
// 11 + 11 + 11 = 33.
func TestChunksFillTheBudgetExactly(t *testing.T) {
	var sents []string
	for i := range 12 {
		sents = append(sents, fmt.Sprintf("%c%c%c%c%c yyy.", 'A'+i, 'a'+i, 'a'+i, 'a'+i, 'a'+i))
	}
	src := strings.Join(sents, " ")
	for _, c := range []struct {
		budget int
		per    []int
	}{
		{33, []int{3, 3, 3, 3}},
		{32, []int{3, 2, 2, 2, 2, 1}},
		{22, []int{2, 2, 2, 2, 2, 2}},
		{21, []int{2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
	} {
		chunks := Split(src, Text, &Options{MaxTokens: c.budget, Overlap: -1, Count: runeCount})
		var got []int
		for _, ch := range chunks {
			got = append(got, len(strings.Split(ch.Text, ". ")))
		}
		if fmt.Sprint(got) != fmt.Sprint(c.per) {
			t.Errorf("budget %d: sentences per chunk %v, want %v", c.budget, got, c.per)
		}
	}
}

// A code block over the budget is cut at its lines, and the overlap repeats
// whole lines only, also after a line whose count, with the line break
// before it, is exactly the budget (a line that does not fit is cut at its
// words; none here).
func TestCodeOverlapIsWholeLines(t *testing.T) {
	lines := []string{
		"x = alpha(beta)",
		"y = gamma + del(x)",
		"z = eps + zeta(y)",
		"w = eta + theta(z)",  // 18
		"v = iota + kappa(w)", // 19: with "\n" exactly 20
		"u = f(v)",            // short: an overlap would fit beside it
		"t = nu + xi(u)",
	}
	src := "```\n" + strings.Join(lines, "\n") + "\n```"
	for _, budget := range []int{20, 21, 25} {
		chunks := Split(src, Markdown, &Options{MaxTokens: budget, Overlap: 9, Count: runeCount})
		for i, c := range chunks {
			if c.Start > 0 && src[c.Start-1] != '\n' {
				t.Errorf("budget %d: chunk %d starts inside a line: %q", budget, i, c.Text)
			}
		}
	}
}

// A chunk holds at most maxWordRun bytes of one long word however large the
// budget (no longer run reaches the counter), and that much when the word
// is longer.
// A piece of a word longer than longWord never cuts a valid rune, even when
// stray continuation bytes follow it (there, a rune start is found only by
// going back to the rune the piece starts with).
func TestLongWordPieceKeepsAValidRune(t *testing.T) {
	for _, r := range []string{"é", "中", "😀"} {
		src := "x " + r + strings.Repeat("\x80", 1100)
		cs := Split(src, Text, &Options{MaxTokens: 1, Count: runeCount})
		var rebuilt strings.Builder
		for _, c := range cs {
			rebuilt.WriteString(c.Text)
			if strings.HasPrefix(c.Text, r[1:2]) {
				t.Errorf("%q: chunk %d starts inside %s: %q", r, c.Index, r, c.Text)
			}
		}
		if rebuilt.String() != strings.ReplaceAll(src, " ", "") {
			t.Errorf("%q: the chunks do not rebuild the text", r)
		}
		if len(cs) < 2 || cs[1].Text != r {
			t.Errorf("%q: second chunk %q, want the rune alone", r, cs[1].Text)
		}
	}
}

func TestLongWordRunPerChunk(t *testing.T) {
	word := strings.Repeat("abcdefghij", 1500)
	src := "Before the word " + word + " after it."
	chunks := Split(src, Text, &Options{MaxTokens: 10000, Overlap: -1, Count: runeCount})
	var inWord []int
	for _, c := range chunks {
		n := 0
		for _, f := range strings.Fields(c.Text) {
			if strings.HasPrefix(word, f) || strings.Contains(word, f) {
				n = max(n, len(f))
			}
		}
		inWord = append(inWord, n)
	}
	if len(inWord) < 4 {
		t.Fatalf("%d chunks: %v", len(chunks), inWord)
	}
	for i, n := range inWord[:len(inWord)-1] {
		if n != maxWordRun {
			t.Errorf("chunk %d holds %d bytes of the word, want %d (all: %v)", i, n, maxWordRun, inWord)
		}
	}
}

// A word over the budget is cut where the budget ends, wherever it is in
// the text; only a word of more than 1 KiB is first cut into pieces of 256
// bytes (which chunks then pack up to the budget).
func TestWordOverBudgetCutAtTheBudget(t *testing.T) {
	lead := strings.Repeat("Some words before it. ", 60) // 1320 bytes
	for _, c := range []struct {
		n    int
		want []int // runes of the word per chunk
	}{
		// The first piece is counted with the 3 bytes of whitespace before
		// the word.
		{600, []int{397, 203}},
		{1024, []int{397, 400, 227}},
		{1025, []int{256, 256, 256, 257}},
	} {
		word := strings.Repeat("x", c.n)
		src := lead + "\n\n" + word + "\n\nAfter."
		var got []int
		for _, ch := range Split(src, Text, &Options{MaxTokens: 400, Overlap: -1, Count: runeCount}) {
			if strings.Contains(ch.Text, "x") {
				got = append(got, strings.Count(ch.Text, "x"))
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("a word of %d bytes: chunks of %v, want %v", c.n, got, c.want)
		}
	}
}

// A sentence over the budget that spans lines is cut at its line breaks
// before its words.
func TestLongSentenceCutAtLines(t *testing.T) {
	var lines []string
	for i := range 8 {
		lines = append(lines, fmt.Sprintf("line %d of a sentence that goes on and on", i))
	}
	src := strings.Join(lines, "\n") + " until it ends."
	chunks := Split(src, Text, &Options{MaxTokens: 100, Overlap: -1, Count: runeCount})
	if len(chunks) < 3 {
		t.Fatalf("%d chunks", len(chunks))
	}
	for i, c := range chunks[:len(chunks)-1] {
		if c.End < len(src) && src[c.End] != '\n' {
			t.Errorf("chunk %d ends inside a line: %q", i, c.Text)
		}
	}
}

// The whitespace before a chunk is not in it, so it counts for nothing
// there, however long: after 500 spaces (a counter that counts no
// whitespace, so only the estimate of the long run could count), a chunk
// of 30 tokens holds a two-rune paragraph and the next one.
func TestLongWhitespaceBeforeAChunkIsNotCounted(t *testing.T) {
	count := func(s string) int { return utf8.RuneCountInString(strings.Join(strings.Fields(s), "")) }
	src := "Aaaa bbbb." + strings.Repeat(" ", 500) + "Ab.\n\nCccc dddd eeee ffff. Gggg hhhh iiii jjjj."
	chunks := Split(src, Text, &Options{MaxTokens: 30, Overlap: -1, Count: count})
	var got []string
	for _, c := range chunks {
		got = append(got, c.Text)
	}
	want := []string{"Aaaa bbbb.", "Ab.\n\nCccc dddd eeee ffff.", "Gggg hhhh iiii jjjj."}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("chunks %q, want %q", got, want)
	}
}

// A code block that fits the budget is never split: no chunk starts inside
// it, not even an overlap, also when it fits exactly or follows a long run
// of whitespace (which is estimated, not counted).
func TestCodeBlockThatFitsIsOneUnit(t *testing.T) {
	nonSpace := func(s string) int { return utf8.RuneCountInString(strings.Join(strings.Fields(s), "")) }
	block := "```\nab\ncd\n```"
	for _, c := range []struct {
		name    string
		src     string
		budget  int
		overlap int
		count   func(string) int
		want    []string
	}{
		// The block with the line breaks before each line: 5 + 3 + 3 + 4.
		{"exactly the budget", "Intro text.\n\n" + block + "\n\nAfter.", 15, 7, runeCount,
			[]string{"Intro text.", block, "After."}},
		{"after long whitespace", "Intro text.\n" + strings.Repeat(" ", 100) + "\n" + block + "\n\nAfter.", 12, 5, nonSpace,
			[]string{"Intro text.", block, "After."}},
		{"after long whitespace, with room", "Intro text.\n" + strings.Repeat(" ", 100) + "\n" + block + "\n\nAfter.", 100, 5, nonSpace,
			[]string{"Intro text.\n" + strings.Repeat(" ", 100) + "\n" + block + "\n\nAfter."}},
	} {
		var got []string
		for _, ch := range Split(c.src, Markdown, &Options{MaxTokens: c.budget, Overlap: c.overlap, Count: c.count}) {
			got = append(got, ch.Text)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: chunks %q, want %q", c.name, got, c.want)
		}
	}
}

// An overlap that repeats a long word's bytes counts them towards the
// chunk's maxWordRun: with a budget far above it and an overlap that
// repeats a whole chunk's share of the word, no chunk holds more than
// maxWordRun bytes of the word and one piece (the unit a chunk always
// takes).
func TestLongWordRunWithOverlap(t *testing.T) {
	word := strings.Repeat("abcdefghij", 3000)
	src := "Before the word " + word + " after it."
	opts := &Options{MaxTokens: 20000, Overlap: 9999, Count: runeCount}
	chunks := Split(src, Text, opts)
	if err := checkVerbatim(src, chunks, opts.settings()); err != nil {
		t.Fatal(err)
	}
	overlapped := false
	for i, c := range chunks {
		lo, hi := max(c.Start, 16), min(c.End, 16+len(word))
		if n := hi - lo; n > maxWordRun+wordPiece {
			t.Errorf("chunk %d holds %d bytes of the word", i, n)
		}
		if i > 0 && c.Start < chunks[i-1].End && c.Start >= 16 {
			overlapped = true
		}
	}
	if !overlapped {
		t.Error("no chunk repeats a part of the word: the test does not test")
	}
}

// The bound on one word's bytes in a chunk does not apply to a unit that
// starts a chunk: a sentence of more than maxWordRun bytes that fits the
// budget keeps the overlap before it.
func TestOverlapBeforeAVeryLongSentence(t *testing.T) {
	a := strings.TrimSpace(strings.Repeat("word ", 600)) + "."
	b := "Then " + strings.TrimSpace(strings.Repeat("more ", 1000)) + "."
	src := a + " " + b
	chunks := Split(src, Text, &Options{MaxTokens: 6000, Overlap: 100, Count: runeCount})
	if len(chunks) != 2 || chunks[0].Text != a || !strings.HasSuffix(chunks[1].Text, b) || chunks[1].Start >= chunks[0].End {
		t.Fatalf("want the first sentence, then the second after an overlap; got %d chunks", len(chunks))
	}
}

// Split counts each sentence once and each chunk once (its exact count),
// and no more: no overlap is sought when overlap is off, nor after a
// section's last chunk. (With runeCount a chunk's estimate is never under
// its exact count, so no chunk is counted twice.)
func TestSplitCountsOnce(t *testing.T) {
	var sentences []string
	for i := 0; i < 30; i++ {
		sentences = append(sentences, fmt.Sprintf("Sentence number %d has a few words.", i))
	}
	src := strings.Join(sentences, " ")
	for _, c := range []struct{ max, overlap int }{{40, -1}, {100, -1}, {2000, -1}, {2000, 10}} {
		calls := 0
		count := func(s string) int { calls++; return runeCount(s) }
		chunks := Split(src, Text, &Options{MaxTokens: c.max, Overlap: c.overlap, Count: count})
		if want := len(sentences) + len(chunks); calls != want {
			t.Errorf("max %d, overlap %d: %d counts for %d sentences and %d chunks, want %d",
				c.max, c.overlap, calls, len(sentences), len(chunks), want)
		}
	}
}

// A counter that answers differently for the same string (every other
// call says 100 times the runes) cannot make Split loop: a unit that
// refines into itself is not split again, and its chunk is emitted with the
// count it got (the exception Split documents for a counter that is not
// monotone). After 100,000 calls the counter answers runes only, so that a
// packer that loops ends and fails the test instead of hanging.
func TestSplitWithAnInconsistentCounter(t *testing.T) {
	for _, src := range []string{"Hello", "Aaaa. Bbbb. Cccc."} {
		for _, odd := range []int{0, 1} {
			calls := 0
			flaky := func(s string) int {
				if calls++; calls <= 100000 && calls%2 == odd {
					return 100 * runeCount(s)
				}
				return runeCount(s)
			}
			chunks := Split(src, Markdown, &Options{MaxTokens: 8, Overlap: -1, Count: flaky})
			if calls > 1000 {
				t.Errorf("%q (over on calls %% 2 == %d): %d counts", src, odd, calls)
			}
			var texts []string
			for _, c := range chunks {
				texts = append(texts, c.Text)
			}
			if want := strings.Fields(src); !reflect.DeepEqual(texts, want) {
				t.Errorf("%q (over on calls %% 2 == %d): chunks %q, want %q", src, odd, texts, want)
			}
		}
	}
}

// leadingSpaceDiscount counts runes, and 3 more for a string that does not
// start with whitespace: like a BPE tokenizer, where " word" can be fewer
// tokens than "word", it is not monotone, so a unit counted with the space
// before it can fit while the chunk it starts does not, which makes the
// packer split the unit again.
func leadingSpaceDiscount(s string) int {
	n := utf8.RuneCountInString(s)
	if r, size := utf8.DecodeRuneInString(s); s != "" && !isSpaceRune(r, size) {
		n += 3
	}
	return n
}

// With such a counter Split still ends, every chunk fits the budget (its
// single rune at least does: 1 + 3 tokens), and code is repeated by whole
// lines only.
func TestSplitWithANonMonotoneCounter(t *testing.T) {
	seed := rand.Int63()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for it := 0; it < 200; it++ {
		f := Format(rng.Intn(3))
		src := randomDoc(rng, f, 1+rng.Intn(20))
		opts := &Options{MaxTokens: 4 + rng.Intn(120), Overlap: rng.Intn(40) - 5, Count: leadingSpaceDiscount}
		if err := checkSplit(src, f, opts); err != nil {
			t.Fatalf("seed %d iteration %d (%s, max %d, overlap %d): %v\nsource: %q", seed, it, f, opts.MaxTokens, opts.Overlap, err, src)
		}
		for i, c := range Split(src, f, opts) {
			if c.Tokens > opts.MaxTokens {
				t.Fatalf("seed %d iteration %d: chunk %d has %d tokens, over %d: %q", seed, it, i, c.Tokens, opts.MaxTokens, c.Text)
			}
		}
	}
	// A code block that fits by its estimate (counted from the blank line
	// before it) but not exactly is split again, into lines that are still
	// code: the overlap does not start inside its long line.
	src := "Intro.\n\n```\naaaa bbbb cccc dddd eeee\n```\n\nAfter."
	chunks := Split(src, Markdown, &Options{MaxTokens: 34, Overlap: 16, Count: leadingSpaceDiscount})
	var got []string
	for _, c := range chunks {
		got = append(got, c.Text)
	}
	if want := []string{"Intro.", "```\naaaa bbbb cccc dddd eeee", "```\n\nAfter."}; !reflect.DeepEqual(got, want) {
		t.Errorf("chunks %q, want %q", got, want)
	}
}
