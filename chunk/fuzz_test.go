package chunk

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ragmem/ragmem/internal/tokens"
)

// Seed corpora live in testdata/fuzz/FuzzXxx (Go's corpus format); the
// golden inputs are added here as well.
func goldenInputs(f *testing.F) []string {
	var out []string
	for _, name := range []string{"guide.md", "page.html", "notes.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", "golden", name))
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

func FuzzSplit(f *testing.F) {
	for i, s := range goldenInputs(f) {
		f.Add(s, uint8(i), uint16(60), int16(10), true)
	}
	f.Add("# a\n\n```\n# b\n```\n\nc\n===\n", uint8(Markdown), uint16(3), int16(1), false)
	f.Add("<h1>x</h1><pre>\n a\n</pre><p>b&amp;c</p>", uint8(HTML), uint16(2), int16(5), true)
	f.Add("Dr. Smith paid 3.14. 日本語です。\xff", uint8(Text), uint16(1), int16(-1), true)
	f.Fuzz(func(t *testing.T, src string, format uint8, max uint16, overlap int16, real bool) {
		if len(src) > 1<<16 {
			return
		}
		opts := &Options{MaxTokens: 1 + int(max%500), Overlap: int(overlap), Count: runeCount}
		if real {
			opts.Count = tokens.Default().Count
		}
		if err := checkSplit(src, Format(format%3), opts); err != nil {
			t.Fatalf("%v: %v", Format(format%3), err)
		}
		checkLimit(t, src, Format(format%3), opts, 1+int(max%7))
	})
}

// checkLimit checks SplitLimit against Split: under the limit the same
// chunks, over it ErrTooManyChunks with at most the limit's worth of
// chunks, each one Split made too.
func checkLimit(t *testing.T, src string, f Format, opts *Options, limit int) {
	all := Split(src, f, opts)
	lo := *opts
	lo.MaxChunks = limit
	got, err := SplitLimit(src, f, &lo)
	// Pieces (blocks, units, runs) are at least a byte each, counted at
	// most a few times over when a unit is split again: a source this short
	// can only pass the chunk limit, not the piece limit.
	short := 4*len(src) <= PiecesPerChunk*limit
	switch {
	case err != nil && !errors.Is(err, ErrTooManyChunks):
		t.Fatalf("SplitLimit: %v", err)
	case len(all) <= limit && err == nil && len(got) != len(all):
		t.Fatalf("%d chunks under a limit of %d: SplitLimit gave %d", len(all), limit, len(got))
	case len(all) <= limit && err != nil && short:
		t.Fatalf("%d chunks under a limit of %d, %d bytes: SplitLimit failed: %v", len(all), limit, len(src), err)
		t.Fatalf("%d chunks under a limit of %d: SplitLimit gave %d, %v", len(all), limit, len(got), err)
	case len(all) > limit && !errors.Is(err, ErrTooManyChunks):
		t.Fatalf("%d chunks over a limit of %d: SplitLimit gave %d, %v", len(all), limit, len(got), err)
	case len(got) > limit:
		t.Fatalf("SplitLimit returned %d chunks over a limit of %d", len(got), limit)
	}
	for i := range got {
		if got[i].Text != all[i].Text || got[i].Start != all[i].Start || got[i].End != all[i].End {
			t.Fatalf("chunk %d of SplitLimit differs from Split's", i)
		}
	}
}

func FuzzSentences(f *testing.F) {
	for _, s := range goldenInputs(f) {
		f.Add(s)
	}
	for _, s := range []string{"", "a. b", "Dr. X. Y", "3.14.", "...", "…a", "「行く。」と", "\"Stop.\" he", "e.g.\xff. A", "1.\n2.", " . . . "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if err := checkSentences(text); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzExtractHTML(f *testing.F) {
	for _, s := range goldenInputs(f) {
		f.Add(s)
	}
	for _, s := range []string{"", "<p>a<p>b", "<h1><h2>x</h1>", "<pre>\r\n a</pre>", "<nav><nav></nav>x", "&nGt;&#0;&#x110000;", "<table><td>a<td>b", "<head>t<title>x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		text, title := ExtractHTML(src)
		if len(text) > 2*len(src)+8 {
			t.Fatalf("text of %d bytes from %d bytes of HTML", len(text), len(src))
		}
		if utf8.ValidString(src) && (!utf8.ValidString(text) || !utf8.ValidString(title)) {
			t.Fatalf("invalid UTF-8 out of valid input: %q %q", text, title)
		}
		if strings.ContainsAny(title, "\n\t") || title != strings.TrimSpace(title) {
			t.Fatalf("title not collapsed: %q", title)
		}
		// Whitespace is collapsed outside code blocks (unless a character
		// reference spells a newline).
		d := extractHTML(src, nil)
		if d.text != text {
			t.Fatal("ExtractHTML and the chunker see different text")
		}
		for _, sec := range d.sections {
			for _, b := range sec.blocks {
				if b.kind != blockCode && strings.Contains(d.text[b.start:b.end], "\n") && !strings.Contains(src, "&") {
					t.Fatalf("newline inside a paragraph: %q", d.text[b.start:b.end])
				}
			}
		}
		opts := &Options{MaxTokens: 20, Overlap: 5, Count: runeCount}
		if err := checkHTML(src, Split(src, HTML, opts), opts.settings()); err != nil {
			t.Fatal(err)
		}
	})
}
