package chunk

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ragmem/ragmem/internal/tokens"
)

// runeCount is a cheap monotone token counter for tests: one token per rune.
func runeCount(s string) int { return utf8.RuneCountInString(s) }

// wordCount counts whitespace-separated fields plus punctuation runs: cheap,
// monotone only roughly, like a real tokenizer.
func wordCount(s string) int {
	n := 0
	prevPunct := false
	inWord := false
	for _, r := range s {
		switch {
		case isSpaceRune(r, 2):
			inWord, prevPunct = false, false
		case r == '.' || r == ',' || r == '!' || r == '?' || r == '#' || r == '`':
			if !prevPunct {
				n++
			}
			prevPunct, inWord = true, false
		default:
			if !inWord {
				n++
			}
			inWord, prevPunct = true, false
		}
	}
	return n
}

// isSpaceByteAt reports whether the rune at src[i] is whitespace as the
// package defines it (invalid bytes are not).
func spaceOnly(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isSpaceRune(r, size) {
			return false
		}
		i += size
	}
	return true
}

// checkVerbatim checks the invariants of chunks that are slices of text
// (Text and Markdown sources, or HTML chunks before offset mapping).
func checkVerbatim(text string, chunks []Chunk, st settings) error {
	if spaceOnly(text) {
		if len(chunks) != 0 {
			return fmt.Errorf("whitespace-only input gave %d chunks", len(chunks))
		}
		return nil
	}
	if len(chunks) == 0 {
		return fmt.Errorf("no chunks for non-blank input")
	}
	if !spaceOnly(text[:chunks[0].Start]) {
		return fmt.Errorf("non-space before first chunk: %q", text[:chunks[0].Start])
	}
	if last := chunks[len(chunks)-1]; !spaceOnly(text[last.End:]) {
		return fmt.Errorf("non-space after last chunk: %q", text[last.End:])
	}
	for i, c := range chunks {
		if c.Index != i {
			return fmt.Errorf("chunk %d has Index %d", i, c.Index)
		}
		if c.Start < 0 || c.End > len(text) || c.Start >= c.End {
			return fmt.Errorf("chunk %d: bad range [%d,%d) of %d", i, c.Start, c.End, len(text))
		}
		if c.Text != text[c.Start:c.End] {
			return fmt.Errorf("chunk %d: Text %q != src[%d:%d] %q", i, c.Text, c.Start, c.End, text[c.Start:c.End])
		}
		if spaceOnly(c.Text) {
			return fmt.Errorf("chunk %d is blank: %q", i, c.Text)
		}
		if r, size := utf8.DecodeLastRuneInString(c.Text); isSpaceRune(r, size) {
			return fmt.Errorf("chunk %d ends with whitespace: %q", i, c.Text)
		}
		// Only a code line's indentation may start a chunk.
		if r, size := utf8.DecodeRuneInString(c.Text); isSpaceRune(r, size) && c.Start > 0 && text[c.Start-1] != '\n' {
			return fmt.Errorf("chunk %d starts with whitespace inside a line: %q", i, c.Text)
		}
		if err := checkTokens(i, c, st); err != nil {
			return err
		}
		if i == 0 {
			continue
		}
		p := chunks[i-1]
		if c.Start <= p.Start {
			return fmt.Errorf("chunk %d: Start %d not after previous %d", i, c.Start, p.Start)
		}
		if c.End <= p.End {
			return fmt.Errorf("chunk %d: End %d not after previous %d", i, c.End, p.End)
		}
		if c.Start > p.End && !spaceOnly(text[p.End:c.Start]) {
			return fmt.Errorf("chunk %d: gap %q after previous chunk is not whitespace", i, text[p.End:c.Start])
		}
		if c.Start < p.End && !slices.Equal(c.HeadingPath, p.HeadingPath) {
			return fmt.Errorf("chunk %d overlaps chunk %d across headings %q / %q", i, i-1, p.HeadingPath, c.HeadingPath)
		}
		if c.Start < p.End {
			// The overlap repeats at most Overlap tokens.
			ov := text[c.Start:p.End]
			if n := st.count(ov); n > st.overlap {
				return fmt.Errorf("chunk %d repeats %d tokens (%q), overlap is %d", i, n, ov, st.overlap)
			}
			if st.overlap == 0 {
				return fmt.Errorf("chunk %d overlaps with overlap disabled", i)
			}
		}
	}
	return nil
}

func checkTokens(i int, c Chunk, st settings) error {
	if n := st.count(c.Text); n != c.Tokens {
		return fmt.Errorf("chunk %d: Tokens %d, Count(Text) %d", i, c.Tokens, n)
	}
	if c.Tokens > st.max && utf8.RuneCountInString(c.Text) > 1 {
		return fmt.Errorf("chunk %d: %d tokens over max %d: %q", i, c.Tokens, st.max, c.Text)
	}
	return nil
}

// checkHTML checks HTML chunks: the verbatim invariants on the extracted
// text, and monotone source offsets within the document.
func checkHTML(src string, chunks []Chunk, st settings) error {
	d := extractHTML(src, nil)
	d.segs = nil
	plain := d.split(st, nil)
	if err := checkVerbatim(d.text, plain, st); err != nil {
		return fmt.Errorf("extracted text: %w", err)
	}
	if len(plain) != len(chunks) {
		return fmt.Errorf("%d chunks, %d before mapping", len(chunks), len(plain))
	}
	for i, c := range chunks {
		if c.Text != plain[i].Text || c.Tokens != plain[i].Tokens || !slices.Equal(c.HeadingPath, plain[i].HeadingPath) {
			return fmt.Errorf("chunk %d differs from its unmapped twin", i)
		}
		if c.Start < 0 || c.End > len(src) || c.Start >= c.End {
			return fmt.Errorf("chunk %d: bad source range [%d,%d) of %d", i, c.Start, c.End, len(src))
		}
		if i > 0 && c.Start <= chunks[i-1].Start {
			return fmt.Errorf("chunk %d: Start %d not after previous %d", i, c.Start, chunks[i-1].Start)
		}
		if i > 0 && c.End < chunks[i-1].End {
			return fmt.Errorf("chunk %d: End %d before previous %d", i, c.End, chunks[i-1].End)
		}
	}
	return nil
}

// checkSplit runs Split and checks the invariants for its format.
func checkSplit(src string, f Format, opts *Options) error {
	st := opts.settings()
	chunks := Split(src, f, opts)
	if f == HTML {
		return checkHTML(src, chunks, st)
	}
	return checkVerbatim(src, chunks, st)
}

// checkSentences checks the Span invariants of Sentences(text).
func checkSentences(text string) error {
	spans := Sentences(text)
	valid := utf8.ValidString(text)
	prev := 0
	for i, s := range spans {
		if s.Start < prev || s.End <= s.Start || s.End > len(text) {
			return fmt.Errorf("span %d %v out of order or bounds (prev end %d, len %d)", i, s, prev, len(text))
		}
		if !spaceOnly(text[prev:s.Start]) {
			return fmt.Errorf("span %d: non-space %q between sentences", i, text[prev:s.Start])
		}
		r, size := utf8.DecodeRuneInString(text[s.Start:])
		if isSpaceRune(r, size) {
			return fmt.Errorf("span %d starts on whitespace", i)
		}
		if valid && (!utf8.RuneStart(text[s.Start]) || (s.End < len(text) && !utf8.RuneStart(text[s.End]))) {
			return fmt.Errorf("span %d %v not on rune boundaries", i, s)
		}
		prev = s.End
	}
	if !spaceOnly(text[prev:]) {
		return fmt.Errorf("non-space %q after the last sentence", text[prev:])
	}
	return nil
}

// randomDoc builds a document from fragments that exercise every path:
// headings of both kinds, fences with '#' lines, lists, tables, long words,
// abbreviations, CJK, HTML junk, invalid UTF-8.
func randomDoc(rng *rand.Rand, f Format, n int) string {
	words := []string{"alpha", "beta", "Dr.", "e.g.", "3.14", "v1.2.3", "U.S.", "etc.", "https://example.com/a.b",
		"bob@example.com", "said", "\"Stop.\"", "Then", "日本語です。", "次！", "…", "...", "wait", "Mr.", "No.", "5",
		"a", "the", "quick", "brown", "fox", "jumps", "über", "naïve", "😀", "\xff", "\xe2\x80", "(see", "Fig.", "2)",
		"i.e.", "Inc.", "vs.", "&amp;", "&lt;b&gt;", "x\x00y", "\u00a0", "\u3000", "tab\there"}
	var b strings.Builder
	sentence := func() {
		k := 1 + rng.Intn(14)
		for i := 0; i < k; i++ {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[rng.Intn(len(words))])
		}
		switch rng.Intn(5) {
		case 0:
			b.WriteString(". ")
		case 1:
			b.WriteString("? ")
		case 2:
			b.WriteString("! ")
		case 3:
			b.WriteString("。")
		default:
			b.WriteString(" ")
		}
	}
	for i := 0; i < n; i++ {
		switch f {
		case Markdown:
			switch rng.Intn(12) {
			case 0:
				b.WriteString(strings.Repeat("#", 1+rng.Intn(6)) + " Heading " + words[rng.Intn(len(words))] + "\n\n")
			case 1:
				b.WriteString("Setext " + words[rng.Intn(len(words))] + "\n" + []string{"===", "---"}[rng.Intn(2)] + "\n\n")
			case 2:
				b.WriteString("```sh\n# comment, not a heading\n")
				for k := rng.Intn(30); k > 0; k-- {
					b.WriteString(strings.Repeat("  ", rng.Intn(3)) + "echo " + words[rng.Intn(len(words))] + "\n")
					if rng.Intn(5) == 0 {
						b.WriteString("\n")
					}
				}
				if rng.Intn(8) > 0 {
					b.WriteString("```\n\n")
				}
			case 3:
				for k := 1 + rng.Intn(8); k > 0; k-- {
					b.WriteString("- item ")
					sentence()
					b.WriteString("\n")
				}
				b.WriteString("\n")
			case 4:
				b.WriteString("| a | b |\n|---|---|\n| 1 | 2 |\n| " + words[rng.Intn(len(words))] + " | x |\n\n")
			case 5:
				b.WriteString(strings.Repeat("x", rng.Intn(3000)) + "\n\n")
				if rng.Intn(2) == 0 {
					b.WriteString("a " + strings.Repeat("=", rng.Intn(6000)) + strings.Repeat(" ", rng.Intn(3000)) + "b.\n\n")
				}
			default:
				for k := 1 + rng.Intn(8); k > 0; k-- {
					sentence()
					if rng.Intn(6) == 0 {
						b.WriteString("\n")
					}
				}
				b.WriteString("\n\n")
			}
		case HTML:
			switch rng.Intn(12) {
			case 0:
				fmt.Fprintf(&b, "<h%d>Heading %s</h%d>\n", 1+rng.Intn(6), words[rng.Intn(len(words))], 1+rng.Intn(6))
			case 1:
				b.WriteString("<nav><a href=/>Home</a><h2>Menu</h2></nav><script>var x = '<p>';</script><style>p{}</style>")
			case 2:
				b.WriteString("<pre>\n  code &amp; more\n\n    indented\n</pre>")
			case 3:
				b.WriteString("<ul><li>one<li>two <b>bold</b><li>three</ul>")
			case 4:
				b.WriteString("<table><tr><th>a<th>b<tr><td>1<td>2</table>")
			case 5:
				b.WriteString("<p>" + strings.Repeat("y", rng.Intn(3000)) + "</p>")
			case 6:
				b.WriteString([]string{"<div>", "</div>", "<p>", "<br>", "<span hidden>", "</span>", "<aside>", "</aside>", "<header>", "</header>", "<article>", "<footer>", "</footer>", "<!-- c -->", "<h3>", "</h2>"}[rng.Intn(16)])
			default:
				b.WriteString("<p>")
				for k := 1 + rng.Intn(8); k > 0; k-- {
					sentence()
				}
				b.WriteString("</p>\n")
			}
		default:
			for k := 1 + rng.Intn(8); k > 0; k-- {
				sentence()
				if rng.Intn(5) == 0 {
					b.WriteString("\n")
				}
			}
			if rng.Intn(10) == 0 {
				b.WriteString(strings.Repeat("z", rng.Intn(2000)))
			}
			if rng.Intn(10) == 0 {
				b.WriteString(strings.Repeat(" \u3000", rng.Intn(1500)) + "w")
			}
			b.WriteString("\n\n")
		}
	}
	return b.String()
}

func TestSplitInvariantsRandom(t *testing.T) {
	seed := rand.Int63()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	iters := 300
	if testing.Short() {
		iters = 60
	}
	counters := []struct {
		name  string
		count func(string) int
	}{
		{"runes", runeCount},
		{"words", wordCount},
		{"cl100k", tokens.Default().Count},
	}
	for it := 0; it < iters; it++ {
		f := Format(rng.Intn(3))
		src := randomDoc(rng, f, 1+rng.Intn(25))
		c := counters[rng.Intn(len(counters))]
		opts := &Options{MaxTokens: 1 + rng.Intn(300), Overlap: rng.Intn(80) - 10, Count: c.count}
		if err := checkSplit(src, f, opts); err != nil {
			t.Fatalf("seed %d iteration %d (%s, %s, max %d, overlap %d): %v\nsource: %q",
				seed, it, f, c.name, opts.MaxTokens, opts.Overlap, err, src)
		}
		if err := checkSentences(src); err != nil {
			t.Fatalf("seed %d iteration %d Sentences: %v\ntext: %q", seed, it, err, src)
		}
	}
}
