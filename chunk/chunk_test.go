package chunk

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ragmem/ragmem/internal/tokens"
)

func TestFormatString(t *testing.T) {
	cases := map[Format]string{Text: "text", Markdown: "markdown", HTML: "html", Format(9): "Format(9)"}
	for f, want := range cases {
		if got := f.String(); got != want {
			t.Errorf("Format(%d).String() = %q, want %q", int(f), got, want)
		}
	}
}

func TestParseFormat(t *testing.T) {
	cases := []struct {
		in   string
		want Format
		ok   bool
	}{
		{"text", Text, true}, {"txt", Text, true}, {"plain", Text, true}, {" TEXT ", Text, true},
		{"text/plain; charset=utf-8", Text, true},
		{"markdown", Markdown, true}, {"md", Markdown, true}, {"MD", Markdown, true}, {"text/markdown", Markdown, true},
		{"html", HTML, true}, {"htm", HTML, true}, {"Html", HTML, true}, {"text/html;charset=UTF-8", HTML, true},
		{"", Text, false}, {"pdf", Text, false}, {"markdow", Text, false}, {"text/csv", Text, false},
	}
	for _, c := range cases {
		got, err := ParseFormat(c.in)
		if c.ok {
			if err != nil || got != c.want {
				t.Errorf("ParseFormat(%q) = %v, %v; want %v", c.in, got, err, c.want)
			}
			// Round trip through String.
			if back, err := ParseFormat(got.String()); err != nil || back != got {
				t.Errorf("ParseFormat(%q.String()) = %v, %v", got, back, err)
			}
			continue
		}
		if !errors.Is(err, ErrUnknownFormat) {
			t.Errorf("ParseFormat(%q) error = %v, want ErrUnknownFormat", c.in, err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "chunk: ") {
			t.Errorf("error %q lacks the package prefix", err)
		}
	}
}

func TestFormatForPath(t *testing.T) {
	cases := []struct {
		path string
		want Format
		ok   bool
	}{
		{"notes.txt", Text, true}, {"a/b/README.TEXT", Text, true},
		{"doc.md", Markdown, true}, {"/x/y.Markdown", Markdown, true},
		{"index.html", HTML, true}, {"page.HTM", HTML, true},
		{"data.json", Text, false}, {"Makefile", Text, false}, {"archive.md.gz", Text, false}, {".md", Markdown, true},
	}
	for _, c := range cases {
		got, ok := FormatForPath(c.path)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("FormatForPath(%q) = %v, %v; want %v, %v", c.path, got, ok, c.want, c.ok)
		}
	}
}

func TestSettings(t *testing.T) {
	cases := []struct {
		opts         *Options
		max, overlap int
	}{
		{nil, 400, 50},
		{&Options{}, 400, 50},
		{&Options{MaxTokens: -3}, 400, 50},
		{&Options{MaxTokens: 100, Overlap: -1}, 100, 0},
		{&Options{MaxTokens: 100, Overlap: 10}, 100, 10},
		{&Options{MaxTokens: 100, Overlap: 50}, 100, 49},
		{&Options{MaxTokens: 101, Overlap: 500}, 101, 50},
		{&Options{MaxTokens: 60}, 60, 29},
		{&Options{MaxTokens: 1}, 1, 0},
		{&Options{MaxTokens: 2}, 2, 0},
	}
	for _, c := range cases {
		st := c.opts.settings()
		if st.max != c.max || st.overlap != c.overlap || st.count == nil {
			t.Errorf("%+v: max %d overlap %d (count nil: %v); want %d, %d", c.opts, st.max, st.overlap, st.count == nil, c.max, c.overlap)
		}
		if st.overlap > 0 && 2*st.overlap >= st.max {
			t.Errorf("%+v: overlap %d not below max/2", c.opts, st.overlap)
		}
	}
}

func TestSplitEmpty(t *testing.T) {
	for _, f := range []Format{Text, Markdown, HTML, Format(7)} {
		for _, src := range []string{"", " ", "\n\n\t \r\n", "\u00a0\u3000"} {
			if got := Split(src, f, nil); len(got) != 0 {
				t.Errorf("Split(%q, %v) = %d chunks, want none", src, f, len(got))
			}
		}
	}
	for _, src := range []string{"<script>alert(1)</script>", "<html><head><title>T</title></head><body> </body></html>", "<!-- only a comment -->", "<nav>menu</nav>"} {
		if got := Split(src, HTML, nil); len(got) != 0 {
			t.Errorf("Split(%q, HTML) = %+v, want no chunks", src, got)
		}
	}
}

func TestSplitUnknownFormatIsText(t *testing.T) {
	src := "# Not a heading in text\n\nBody."
	got := Split(src, Format(42), nil)
	want := Split(src, Text, nil)
	if !reflect.DeepEqual(got, want) || len(got) != 1 || got[0].HeadingPath != nil {
		t.Fatalf("Split(Format(42)) = %+v, want %+v", got, want)
	}
}

type sectionWant struct {
	path  []string
	first string // first line of the chunk
}

func sectionsOf(chunks []Chunk) []sectionWant {
	var out []sectionWant
	for _, c := range chunks {
		first, _, _ := strings.Cut(c.Text, "\n")
		out = append(out, sectionWant{c.HeadingPath, first})
	}
	return out
}

func TestMarkdownHeadingPaths(t *testing.T) {
	src := `---
title: Front
---

Intro paragraph before any heading.

# Install

How to install.

## Linux

Use the package manager.

` + "```sh" + `
# update the index (a comment, not a heading)
apt-get update
` + "```" + `

### Debian

Debian notes.

## macOS ##

Use Homebrew.

Setext Title
============

Under setext one.

Sub *setext*
------------

Under setext two.

<!--
# commented out heading
-->

#hashtag is not a heading

    # indented code is not a heading

####### seven hashes is not a heading

# ` + "`Split`" + ` and [links](http://x) #

Last.
`
	chunks := Split(src, Markdown, &Options{MaxTokens: 1000})
	got := sectionsOf(chunks)
	want := []sectionWant{
		{nil, "---"},
		{[]string{"Install"}, "# Install"},
		{[]string{"Install", "Linux"}, "## Linux"},
		{[]string{"Install", "Linux", "Debian"}, "### Debian"},
		{[]string{"Install", "macOS"}, "## macOS ##"},
		{[]string{"Setext Title"}, "Setext Title"},
		{[]string{"Setext Title", "Sub setext"}, "Sub *setext*"},
		{[]string{"Split and links"}, "# `Split` and [links](http://x) #"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sections:\n got %q\nwant %q", got, want)
	}
	if !strings.Contains(chunks[2].Text, "# update the index") {
		t.Errorf("the fenced '#' comment left its section: %q", chunks[2].Text)
	}
	if err := checkVerbatim(src, chunks, (&Options{MaxTokens: 1000}).settings()); err != nil {
		t.Fatal(err)
	}
}

func TestNoMergeAcrossHeadings(t *testing.T) {
	src := "# A\n\nalpha\n\n# B\n\nbeta\n\n## C\n\ngamma"
	got := sectionsOf(Split(src, Markdown, nil))
	want := []sectionWant{
		{[]string{"A"}, "# A"},
		{[]string{"B"}, "# B"},
		{[]string{"B", "C"}, "## C"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestHeadingPathIsCopied(t *testing.T) {
	src := "# A\n\n" + strings.Repeat("Some words here. ", 200)
	chunks := Split(src, Markdown, &Options{MaxTokens: 50})
	if len(chunks) < 2 {
		t.Fatalf("want several chunks, got %d", len(chunks))
	}
	chunks[0].HeadingPath[0] = "changed"
	if chunks[1].HeadingPath[0] != "A" {
		t.Fatal("chunks share their HeadingPath backing array")
	}
}

// numbered returns n distinct sentences of about the same size.
func numbered(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("Sentence number %d talks about topic %d in some detail.", i, i*7)
	}
	return out
}

func TestOverlap(t *testing.T) {
	src := strings.Join(numbered(80), " ")
	opts := &Options{MaxTokens: 60, Overlap: 15}
	chunks := Split(src, Text, opts)
	if len(chunks) < 5 {
		t.Fatalf("want several chunks, got %d", len(chunks))
	}
	count := tokens.Default().Count
	for i := 1; i < len(chunks); i++ {
		p, c := chunks[i-1], chunks[i]
		if c.Start >= p.End {
			t.Fatalf("chunk %d does not overlap chunk %d", i, i-1)
		}
		rep := src[c.Start:p.End]
		if !strings.HasSuffix(p.Text, rep) || !strings.HasPrefix(c.Text, rep) {
			t.Fatalf("chunk %d does not start with the tail of chunk %d", i, i-1)
		}
		if n := count(rep); n > opts.Overlap {
			t.Errorf("chunk %d repeats %d tokens, overlap %d: %q", i, n, opts.Overlap, rep)
		}
		// These sentences are shorter than the overlap: it starts on one.
		if !strings.HasPrefix(rep, "Sentence number") {
			t.Errorf("overlap %q does not start at a sentence", rep)
		}
		// And chunks end at sentence ends.
		if !strings.HasSuffix(p.Text, ".") {
			t.Errorf("chunk %d ends mid-sentence: %q", i-1, p.Text)
		}
	}
	// Without overlap, chunks only touch whitespace.
	for i, c := range Split(src, Text, &Options{MaxTokens: 60, Overlap: -1})[1:] {
		if prev := Split(src, Text, &Options{MaxTokens: 60, Overlap: -1})[i]; c.Start < prev.End {
			t.Fatalf("chunk %d overlaps with overlap disabled", i+1)
		}
	}
}

func TestOverlapFallsBackToWords(t *testing.T) {
	// One long sentence per paragraph: the overlap must start at a word.
	long := "This very long sentence keeps going with many words " + strings.Repeat("and more words ", 30) + "until it ends."
	src := long + " " + long
	chunks := Split(src, Text, &Options{MaxTokens: 80, Overlap: 10})
	if len(chunks) < 2 {
		t.Fatalf("got %d chunks", len(chunks))
	}
	for i := 1; i < len(chunks); i++ {
		p, c := chunks[i-1], chunks[i]
		if c.Start >= p.End {
			t.Fatalf("chunk %d has no overlap", i)
		}
		if c.Start > 0 && src[c.Start-1] != ' ' {
			t.Errorf("chunk %d starts inside a word: %q", i, c.Text[:20])
		}
		if n := tokens.Default().Count(src[c.Start:p.End]); n > 10 || n < 5 {
			t.Errorf("chunk %d repeats %d tokens, want about 10", i, n)
		}
	}
}

func TestParagraphBoundaryPreferred(t *testing.T) {
	s := numbered(30)
	para := func(a, b int) string { return strings.Join(s[a:b], " ") }
	// Three paragraphs of ~130 tokens each (13 tokens per sentence).
	src := para(0, 10) + "\n\n" + para(10, 20) + "\n\n" + para(20, 30)
	chunks := Split(src, Text, &Options{MaxTokens: 300, Overlap: -1})
	if len(chunks) != 2 {
		t.Fatalf("got %d chunks, want 2: %q", len(chunks), sectionsOf(chunks))
	}
	if want := para(0, 10) + "\n\n" + para(10, 20); chunks[0].Text != want {
		t.Errorf("first chunk does not end at the paragraph break:\n%q", chunks[0].Text)
	}
	if chunks[1].Text != para(20, 30) {
		t.Errorf("second chunk is not the third paragraph:\n%q", chunks[1].Text)
	}
}

func TestListItemsAreBoundaries(t *testing.T) {
	var items []string
	for i := 0; i < 40; i++ {
		items = append(items, fmt.Sprintf("- item %d has a few words but no full stop", i))
	}
	src := strings.Join(items, "\n")
	for _, f := range []Format{Text, Markdown} {
		chunks := Split(src, f, &Options{MaxTokens: 50, Overlap: -1})
		if len(chunks) < 4 {
			t.Fatalf("%v: got %d chunks", f, len(chunks))
		}
		for _, c := range chunks {
			if !strings.HasPrefix(c.Text, "- item ") || !strings.HasSuffix(c.Text, "full stop") {
				t.Errorf("%v: chunk cuts inside a list item: %q", f, c.Text)
			}
		}
	}
}

func TestCodeFenceKeptWhole(t *testing.T) {
	fence := "```python\n# compute\n" + strings.Repeat("x = compute(x)  # step\n", 8) + "```"
	src := "# Code\n\n" + strings.Join(numbered(12), " ") + "\n\n" + fence + "\n\nAfter the code."
	chunks := Split(src, Markdown, &Options{MaxTokens: 120, Overlap: 20})
	found := false
	for _, c := range chunks {
		if strings.Contains(c.Text, "```python") {
			if !strings.Contains(c.Text, fence) {
				t.Errorf("fence split although it fits:\n%s", c.Text)
			}
			found = true
		}
		if n := strings.Count(c.Text, "```"); n%2 != 0 {
			t.Errorf("chunk holds half a fence:\n%s", c.Text)
		}
	}
	if !found {
		t.Fatal("fence missing")
	}
}

func TestCodeFenceTooLargeSplitByLines(t *testing.T) {
	var lines []string
	for i := 0; i < 200; i++ {
		lines = append(lines, fmt.Sprintf("    call(%d, \"argument\")", i))
	}
	src := "```go\n" + strings.Join(lines, "\n") + "\n```\n"
	chunks := Split(src, Markdown, &Options{MaxTokens: 100, Overlap: 10})
	if len(chunks) < 5 {
		t.Fatalf("got %d chunks", len(chunks))
	}
	for i, c := range chunks {
		if c.Tokens > 100 {
			t.Errorf("chunk %d has %d tokens", i, c.Tokens)
		}
		// Every chunk starts at the start of a line (its indentation kept)
		// and ends at the end of one.
		if c.Start > 0 && src[c.Start-1] != '\n' {
			t.Errorf("chunk %d starts mid-line: %q", i, c.Text[:10])
		}
		if c.End < len(src) && src[c.End] != '\n' {
			t.Errorf("chunk %d ends mid-line", i)
		}
	}
}

func TestLongWordHardCut(t *testing.T) {
	word := strings.Repeat("abcé0123", 2000)
	src := "start " + word + " end"
	opts := &Options{MaxTokens: 100, Overlap: 20}
	chunks := Split(src, Text, opts)
	if err := checkVerbatim(src, chunks, opts.settings()); err != nil {
		t.Fatal(err)
	}
	if len(chunks) < 10 {
		t.Fatalf("got %d chunks", len(chunks))
	}
	if chunks[0].Text != "start" {
		t.Errorf("first chunk %q: the word before the long one is its own unit", chunks[0].Text)
	}
	for i, c := range chunks[1 : len(chunks)-1] {
		if !utf8.ValidString(c.Text) {
			t.Errorf("chunk %d cut inside a rune", i)
		}
		// Chunks are filled: a hard cut takes as much as fits.
		if c.Tokens < 80 {
			t.Errorf("chunk %d has only %d tokens", i, c.Tokens)
		}
	}
}

func TestTokensWithinMax(t *testing.T) {
	src := benchDoc(Markdown, 40<<10)
	for _, max := range []int{16, 64, 400} {
		opts := &Options{MaxTokens: max}
		chunks := Split(src, Markdown, opts)
		if err := checkVerbatim(src, chunks, opts.settings()); err != nil {
			t.Fatalf("max %d: %v", max, err)
		}
		// Chunks are reasonably full: the average is at least a third.
		total := 0
		for _, c := range chunks {
			total += c.Tokens
		}
		if avg := total / len(chunks); avg < max/3 {
			t.Errorf("max %d: average chunk %d tokens", max, avg)
		}
	}
}

func TestSplitInvalidUTF8(t *testing.T) {
	src := "Bad \xff\xfe bytes. " + strings.Repeat("\xc3", 500) + " more\xe2\x82 text.\n\n# H\xff\n\nok"
	for _, f := range []Format{Text, Markdown, HTML} {
		opts := &Options{MaxTokens: 20, Count: tokens.Default().Count}
		if err := checkSplit(src, f, opts); err != nil {
			t.Errorf("%v: %v", f, err)
		}
	}
}

func TestCustomCounter(t *testing.T) {
	src := strings.Join(numbered(20), " ")
	calls := 0
	count := func(s string) int { calls++; return utf8.RuneCountInString(s) }
	chunks := Split(src, Text, &Options{MaxTokens: 200, Count: count})
	for _, c := range chunks {
		if c.Tokens != utf8.RuneCountInString(c.Text) || c.Tokens > 200 {
			t.Fatalf("chunk counted with the wrong counter: %d for %d runes", c.Tokens, utf8.RuneCountInString(c.Text))
		}
	}
	if calls == 0 {
		t.Fatal("custom counter never called")
	}
}

// TestCountIsLinear checks that the counter sees about twice the input, not
// a quadratic amount (units once, chunks once, plus overlap).
func TestCountIsLinear(t *testing.T) {
	src := benchDoc(Markdown, 200<<10)
	counted := 0
	count := func(s string) int { counted += len(s); return tokens.Default().Count(s) }
	Split(src, Markdown, &Options{Count: count})
	if ratio := float64(counted) / float64(len(src)); ratio > 2.6 {
		t.Fatalf("counted %.2f× the input", ratio)
	}
}

func TestSplitConcurrent(t *testing.T) {
	docs := []struct {
		src string
		f   Format
	}{
		{benchDoc(Markdown, 8<<10), Markdown},
		{benchDoc(HTML, 8<<10), HTML},
		{benchDoc(Text, 8<<10), Text},
	}
	want := make([][]Chunk, len(docs))
	for i, d := range docs {
		want[i] = Split(d.src, d.f, &Options{MaxTokens: 100})
	}
	done := make(chan error)
	for g := 0; g < 6; g++ {
		go func(g int) {
			d := docs[g%len(docs)]
			got := Split(d.src, d.f, &Options{MaxTokens: 100})
			if !reflect.DeepEqual(got, want[g%len(docs)]) {
				done <- fmt.Errorf("goroutine %d: different chunks", g)
				return
			}
			done <- nil
		}(g)
	}
	for g := 0; g < 6; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func TestMarkdownCRLF(t *testing.T) {
	lf := "# A\n\ntext one.\n\n```\n# code\n```\n\nB\n---\n\nmore text.\n"
	crlf := strings.ReplaceAll(lf, "\n", "\r\n")
	a, b := Split(lf, Markdown, nil), Split(crlf, Markdown, nil)
	if len(a) != len(b) || len(a) != 2 {
		t.Fatalf("LF gave %d chunks, CRLF %d", len(a), len(b))
	}
	for i := range a {
		if !reflect.DeepEqual(a[i].HeadingPath, b[i].HeadingPath) {
			t.Errorf("chunk %d: path %q with LF, %q with CRLF", i, a[i].HeadingPath, b[i].HeadingPath)
		}
		if strings.ReplaceAll(b[i].Text, "\r\n", "\n") != a[i].Text {
			t.Errorf("chunk %d: %q vs %q", i, a[i].Text, b[i].Text)
		}
	}
}

func TestLongHeadingTitleIsCapped(t *testing.T) {
	long := strings.Repeat("word ", 500)
	for _, c := range []struct {
		src string
		f   Format
	}{
		{long + "\n===\n\nbody", Markdown},
		{"# " + long + "\n\nbody", Markdown},
		{"<h1>" + long + "</h1><p>body</p>", HTML},
	} {
		chunks := Split(c.src, c.f, nil)
		if len(chunks) == 0 || len(chunks[0].HeadingPath) != 1 {
			t.Fatalf("%v: no heading path", c.f)
		}
		title := chunks[0].HeadingPath[0]
		if len(title) > maxTitle+len("…") || !strings.HasSuffix(title, "word…") || !strings.HasPrefix(title, "word word") {
			t.Errorf("%v: title of %d bytes: %q", c.f, len(title), title)
		}
	}
	if _, title := ExtractHTML("<title>" + long + "</title>"); len(title) > maxTitle+len("…") {
		t.Errorf("document title of %d bytes", len(title))
	}
}

// longestRun returns the length of the longest run of whitespace or of
// non-whitespace in s.
func longestRun(s string) int {
	best, run, space := 0, 0, false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if sp := isSpaceRune(r, size); sp != space {
			run, space = 0, sp
		}
		run += size
		if run > best {
			best = run
		}
		i += size
	}
	return best
}

// TestCounterNeverSeesLongRuns pins the guard against BPE's quadratic cost:
// whatever the input, no string handed to the counter holds a run of
// letters, punctuation or whitespace longer than a few kilobytes.
func TestCounterNeverSeesLongRuns(t *testing.T) {
	inputs := map[string]string{
		"long word":        "start " + strings.Repeat("x", 30000) + " end.",
		"long punctuation": strings.Repeat("=", 30000),
		"long whitespace":  "a" + strings.Repeat(" ", 30000) + "b. c" + strings.Repeat("\u3000\t", 8000) + "d",
		"indented code":    "```\n" + strings.Repeat(" ", 30000) + "x\n" + strings.Repeat("y", 30000) + "\n```",
		"cjk":              strings.Repeat("日本語", 10000),
		"html":             "<p>" + strings.Repeat("&amp;", 10000) + "</p><pre>" + strings.Repeat(" ", 30000) + "z</pre>",
	}
	for name, src := range inputs {
		for _, f := range []Format{Text, Markdown, HTML} {
			longest := 0
			count := func(s string) int {
				if n := longestRun(s); n > longest {
					longest = n
				}
				return tokens.Default().Count(s)
			}
			opts := &Options{Count: count}
			if err := checkSplit(src, f, opts); err != nil {
				t.Fatalf("%s/%v: %v", name, f, err)
			}
			if longest > 8<<10 {
				t.Errorf("%s/%v: the counter saw a run of %d bytes", name, f, longest)
			}
		}
	}
}

func TestCodeLineIndentationNeverStartsABlankChunk(t *testing.T) {
	// Regression: a code line's unit starts on its indentation; cutting a
	// long word on it between runes once produced whitespace-only chunks.
	src := "```\n" + strings.Repeat("    "+strings.Repeat("w", 40)+"\n", 20) + "```"
	for max := 1; max < 12; max++ {
		opts := &Options{MaxTokens: max, Overlap: 1}
		if err := checkSplit(src, Markdown, opts); err != nil {
			t.Fatalf("max %d: %v", max, err)
		}
	}
}

// TestHeadingOnlySectionsOpenTheirChild: a heading followed directly by a
// nested heading is not a chunk of its own (it would carry no information,
// and BM25 would rank its few words first); it opens the nested section's
// chunk. A heading followed by a sibling or by nothing keeps its own chunk,
// since no other chunk's heading path would name it.
func TestHeadingOnlySectionsOpenTheirChild(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      [][]string // heading path of each chunk
		first     string     // prefix of the first chunk's text
	}{
		{"nested", "# Install\n\n## Linux\n\nUnpack the tarball.\n\n## macOS\n\nUse brew.\n",
			[][]string{{"Install", "Linux"}, {"Install", "macOS"}}, "# Install\n\n## Linux\n\nUnpack"},
		{"chain", "# A\n## B\n### C\nBody text here.\n",
			[][]string{{"A", "B", "C"}}, "# A\n## B\n### C\nBody"},
		{"setext parent", "Guide\n=====\n\n## Start\n\nRun it.\n",
			[][]string{{"Guide", "Start"}}, "Guide\n=====\n\n## Start"},
		{"sibling", "# A\n\n# B\n\nText of B.\n",
			[][]string{{"A"}, {"B"}}, "# A"},
		{"trailing", "Intro text.\n\n# End\n",
			[][]string{nil, {"End"}}, "Intro text."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := Split(tc.src, Markdown, nil)
			if len(cs) != len(tc.want) {
				t.Fatalf("%d chunks, want %d: %+v", len(cs), len(tc.want), cs)
			}
			for i, c := range cs {
				if strings.Join(c.HeadingPath, "/") != strings.Join(tc.want[i], "/") {
					t.Errorf("chunk %d: heading path %q, want %q", i, c.HeadingPath, tc.want[i])
				}
				if c.Text != tc.src[c.Start:c.End] {
					t.Errorf("chunk %d: text is not source[%d:%d]", i, c.Start, c.End)
				}
			}
			if !strings.HasPrefix(cs[0].Text, tc.first) || cs[0].Start != 0 {
				t.Errorf("first chunk %q at %d, want it to start with %q at 0", cs[0].Text, cs[0].Start, tc.first)
			}
		})
	}
}
