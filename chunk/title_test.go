package chunk

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Heading titles in a chunk's HeadingPath have their white space collapsed
// and are cut to at most 200 bytes plus an ellipsis: at the last space when
// it lies in the second half of those bytes, else at the last whole rune.
func TestHeadingTitleCap(t *testing.T) {
	words := func(n int) string { return strings.Repeat("x", n) }
	cases := []struct {
		name, title, want string
	}{
		{"exactly 200 bytes", words(200), words(200)},
		{"201 bytes without a space", words(201), words(200) + "…"},
		{"white space collapsed to 200 bytes", words(100) + " \t  " + words(99), words(100) + " " + words(99)},
		{"the last space at byte 150", words(150) + " " + words(80), words(150) + "…"},
		{"the last space at byte 100, the half", words(100) + " " + words(130), words(100) + " " + words(99) + "…"},
		{"the last space at byte 101", words(101) + " " + words(130), words(101) + "…"},
		{"a rune across byte 200", words(199) + "é" + words(10), words(199) + "…"},
		// No rune starts in the first 200 bytes: nothing whole to keep.
		{"invalid bytes only", strings.Repeat("\x80", 300), "…"},
		{"a very long title of words", strings.Repeat("word ", 400), strings.TrimSpace(strings.Repeat("word ", 40)) + "…"},
	}
	for _, c := range cases {
		for _, src := range []string{"# " + c.title + "\n\nBody text.\n", "<h1>" + c.title + "</h1><p>Body text.</p>"} {
			format := Markdown
			if strings.HasPrefix(src, "<") {
				format = HTML
			}
			chunks := Split(src, format, nil)
			if len(chunks) == 0 || len(chunks[0].HeadingPath) != 1 {
				t.Fatalf("%s (%s): chunks %+v", c.name, format, chunks)
			}
			got := chunks[0].HeadingPath[0]
			if got != c.want || !utf8.ValidString(got) {
				t.Errorf("%s (%s): title of %d bytes %.40q…, want %d bytes %.40q…", c.name, format, len(got), got, len(c.want), c.want)
			}
		}
	}
}

// HTML headings are h1 to h6; h7 (not an HTML element) is not one.
func TestHTMLHeadingLevels(t *testing.T) {
	for _, c := range []struct {
		tag  string
		want []string
	}{{"h1", []string{"Deep"}}, {"h6", []string{"Deep"}}, {"h7", nil}} {
		chunks := Split("<"+c.tag+">Deep</"+c.tag+"><p>Body text.</p>", HTML, nil)
		if len(chunks) == 0 || len(chunks[0].HeadingPath) != len(c.want) || len(c.want) > 0 && chunks[0].HeadingPath[0] != c.want[0] {
			t.Errorf("<%s>: chunks %+v, want heading path %q", c.tag, chunks, c.want)
		}
	}
}
