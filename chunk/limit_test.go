package chunk

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// bombs are sources whose size is no guide to the chunks they yield: a
// piece (heading, paragraph, sentence, line, run of text) every few bytes.
var bombs = []struct {
	name, unit string
	f          Format
}{
	{"markdown headings", "# t\n", Markdown},
	{"setext headings", "t\n=\n", Markdown},
	{"html headings", "<h1>t</h1>", HTML},
	{"html paragraphs", "<p>t</p>", HTML},
	{"html inline runs", "<b>t</b>&amp;", HTML},
	{"html nesting", "<div>", HTML},
	{"text paragraphs", "t\n\n", Text},
	{"text sentences", "t. ", Text},
	{"text lines", "t\n", Text},
	{"text words", "t ", Text},
	{"markdown list", "- t\n", Markdown},
	{"markdown fences", "```\nt\n```\n", Markdown},
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestSplitLimitBombs: a source over MaxChunks fails with ErrTooManyChunks,
// having allocated in proportion to MaxChunks, not to the source (4 MiB
// here, a few hundred thousand pieces).
func TestSplitLimitBombs(t *testing.T) {
	const size = 4 << 20
	const maxChunks = 20
	opts := &Options{MaxChunks: maxChunks}
	Split("warm the tokenizer up", Text, nil)
	for _, b := range bombs {
		t.Run(b.name, func(t *testing.T) {
			src := strings.Repeat(b.unit, size/len(b.unit))
			if b.name == "html nesting" {
				src += "t"
			}
			var out []Chunk
			var err error
			n := allocated(func() { out, err = SplitLimit(src, b.f, opts) })
			if b.name == "html nesting" {
				// Deep nesting is not many pieces: it is one paragraph,
				// read in one pass (the tokenizer's garbage is linear).
				if err != nil || len(out) != 1 {
					t.Fatalf("nesting: %d chunks, %v", len(out), err)
				}
				if n > 8*size {
					t.Errorf("allocated %d bytes for %d bytes of nesting", n, size)
				}
				return
			}
			if !errors.Is(err, ErrTooManyChunks) {
				t.Fatalf("err = %v (%d chunks); want ErrTooManyChunks", err, len(out))
			}
			if len(out) > maxChunks {
				t.Errorf("%d chunks returned with the error; at most %d", len(out), maxChunks)
			}
			// The whole work of a source this size is hundreds of MB of
			// allocations; bounded work is a small fraction of the source.
			if n > size/2 {
				t.Errorf("allocated %d bytes for a %d-byte source with MaxChunks %d; want bounded by the limit", n, size, maxChunks)
			}
			t.Logf("%s: %v after %d KiB allocated", b.name, err, n>>10)
		})
	}
}

// TestSplitLimitKeepsOrdinaryDocuments: under the limit SplitLimit is Split.
func TestSplitLimitKeepsOrdinaryDocuments(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "## Section %d\n\nHerons wade in shallow water. They stalk fish with patience, %d times a day.\n\n", i, i)
	}
	src := b.String()
	want := Split(src, Markdown, nil)
	got, err := SplitLimit(src, Markdown, &Options{MaxChunks: len(want)})
	if err != nil || len(got) != len(want) {
		t.Fatalf("at the limit: %d chunks, %v; want %d", len(got), err, len(want))
	}
	for i := range want {
		if got[i].Text != want[i].Text || got[i].Start != want[i].Start {
			t.Fatalf("chunk %d differs", i)
		}
	}
	got, err = SplitLimit(src, Markdown, &Options{MaxChunks: len(want) - 1})
	if !errors.Is(err, ErrTooManyChunks) || len(got) > len(want)-1 {
		t.Fatalf("one under: %d chunks, %v", len(got), err)
	}
	if s := Split(src, Markdown, &Options{MaxChunks: 5}); len(s) > 5 {
		t.Fatalf("Split with MaxChunks 5 returned %d chunks", len(s))
	}
}

// TestHTMLTextRunsMerge: words separated as they are in the source take one
// offset segment, not one each, so an article costs segments per run of
// text between tags, not per word.
func TestHTMLTextRunsMerge(t *testing.T) {
	d := extractHTML("<p>"+strings.Repeat("heron stork crane ", 1000)+"</p>", nil)
	if len(d.segs) != 1 {
		t.Fatalf("%d segments for one run of text", len(d.segs))
	}
	d = extractHTML("<p>a  b</p><p>c &amp; d <b>e</b></p>", nil)
	if len(d.segs) < 4 {
		t.Fatalf("%d segments: runs whose source and text differ must stay apart", len(d.segs))
	}
}

// TestSplitLimitPiecesExactly: with MaxChunks 1, a source of exactly
// PiecesPerChunk pieces (paragraphs, list items, runs of HTML text) is
// split, and one more piece fails with ErrTooManyChunks, however small the
// pieces.
func TestSplitLimitPiecesExactly(t *testing.T) {
	cases := []struct {
		name, unit    string
		f             Format
		piecesPerUnit int
	}{
		{"text paragraphs", "t\n\n", Text, 1},
		{"html paragraphs", "<p>t</p>", HTML, 1},
		{"markdown list items", "- t\n", Markdown, 1},
		{"html runs of text", "<b>t</b>&amp;", HTML, 2},
	}
	opts := &Options{MaxChunks: 1, MaxTokens: 8000}
	for _, c := range cases {
		n := PiecesPerChunk / c.piecesPerUnit
		if out, err := SplitLimit(strings.Repeat(c.unit, n), c.f, opts); err != nil || len(out) != 1 {
			t.Errorf("%s: %d pieces gave %d chunks, %v; want one chunk", c.name, n*c.piecesPerUnit, len(out), err)
		}
		if _, err := SplitLimit(strings.Repeat(c.unit, n+1), c.f, opts); !errors.Is(err, ErrTooManyChunks) {
			t.Errorf("%s: %d pieces: err = %v, want ErrTooManyChunks", c.name, (n+1)*c.piecesPerUnit, err)
		}
	}
}

// TestSplitLimitSaysSections: a source of too many headings fails for its
// sections (each of which starts a chunk), while it is parsed, not later
// for its number of blocks.
func TestSplitLimitSaysSections(t *testing.T) {
	for _, c := range []struct {
		src string
		f   Format
	}{
		{strings.Repeat("# t\n", 10000), Markdown},
		{strings.Repeat("<h2>t</h2>", 10000), HTML},
	} {
		_, err := SplitLimit(c.src, c.f, &Options{MaxChunks: 20})
		if !errors.Is(err, ErrTooManyChunks) || !strings.Contains(err.Error(), "more than 20 sections") {
			t.Errorf("%v: err = %v, want too many sections", c.f, err)
		}
	}
	// Exactly one section too many fails at the heading that starts it,
	// before the paragraphs after it are counted.
	for _, c := range []struct {
		src string
		f   Format
	}{
		{strings.Repeat("# t\n\np\n\n", 20) + "# t\n\n" + strings.Repeat("p\n\n", 20*PiecesPerChunk), Markdown},
		{strings.Repeat("<h2>t</h2><p>p</p>", 20) + "<h2>t</h2>" + strings.Repeat("<p>p</p>", 20*PiecesPerChunk), HTML},
	} {
		_, err := SplitLimit(c.src, c.f, &Options{MaxChunks: 20})
		if !errors.Is(err, ErrTooManyChunks) || !strings.Contains(err.Error(), "more than 20 sections") {
			t.Errorf("%v, 21 sections: err = %v, want too many sections", c.f, err)
		}
	}
}
