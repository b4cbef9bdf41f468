package chunk

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// What ExtractHTML keeps at the edges of the HTML rules it follows: implied
// end tags (a hidden element's content ends where the element implicitly
// ends, and not before), the head, pre and raw text ending, a NUL anywhere,
// and the bounds on nesting and on the search for an implied end.
func TestExtractHTMLEdges(t *testing.T) {
	deep := func(n int, tag string) string { return strings.Repeat("<"+tag+">", n) }
	for _, c := range []struct{ name, src, text string }{
		{"spaces after the head", "<head><title>T</title></head><b>a</b> <i>b</i>", "a b"},
		{"li ends a hidden li", "<ul><li hidden>secret<li>shown</ul>", "shown"},
		{"a nested list stays in its item", "<ul><li hidden>secret<ul><li>inner</ul><li>shown</ul>", "shown"},
		{"dd ends a hidden dt", "<dl><dt hidden>term<dd>shown</dl>", "shown"},
		{"dt ends a hidden dd", "<dl><dd hidden>def<dt>shown</dl>", "shown"},
		{"a nested dl stays in its item", "<dl><dd hidden>def<dl><dt>inner</dl><dt>shown</dl>", "shown"},
		{"a block ends a hidden p", "<p hidden>secret<div>shown</div>", "shown"},
		{"br does not end a p", "<p hidden>a<br>b</p><p>c</p>", "c"},
		{"inline elements in a heading", "<h2>Title <b>bold</b> more</h2><p>x</p>", "Title bold more\n\nx"},
		{"text after xmp is unescaped", "<xmp>a &amp; b</xmp><p>&amp;</p>", "a &amp; b\n\n&"},
		{"whitespace after pre collapses", "<pre>a  b</pre><p>c   d</p>", "a  b\n\nc d"},
		{"a pre keeps a space before &nbsp; and the &nbsp;", "<pre>a &nbsp;\nb</pre>", "a  \nb"},
		{"a pre keeps a space a tag separates from a line break", "<pre>a<span> </span>\nb</pre>", "a \nb"},
		{"&nbsp;s outside a pre collapse with the spaces around them", "<p>a &nbsp; &nbsp; b</p>", "a b"},
		{"pre ends its block", "<pre>a</pre>b", "a\n\nb"},
		{"a hidden pre breaks nothing", "a<span hidden><pre>x</span>b", "ab"},
		{"a body element ends the head and what is open in it", "<head><template><p>Shown</p>", "Shown"},
		{"a stray heading end tag closes nothing", "<h1>A</h1><div hidden>x</h3>y</div><p>z</p>", "A\n\nz"},
		{"a heading ends at any heading end tag", "<h2>Title</h3>more", "Title\n\nmore"},
		{"a first dt closes nothing", "<div><div hidden>secret<dt>hidden too</div></div><p>x</p>", "x"},
		{"a first li closes nothing", "<div><div hidden>secret<li>hidden too</div></div><p>x</p>", "x"},
		{"li without a list", "<li hidden>secret<li>shown", "shown"},
		{"dd without a list", "<dt hidden>term<dd>shown", "shown"},
		{"a NUL first", "<p>\x00ab</p>", "ab"},
		{"hidden below the deepest tracked element is kept", deep(maxOpen, "div") + "<span hidden>kept</span>", "kept"},
		{"hidden at the deepest tracked element", deep(maxOpen-1, "div") + "<span hidden>dropped</span>", ""},
		{"li found within the scan", "<ul><li hidden>secret" + deep(maxScopeScan-1, "span") + "<li>shown", "shown"},
		{"li beyond the scan", "<ul><li hidden>secret" + deep(maxScopeScan, "span") + "<li>dropped", ""},
		{"dd found within the scan", "<dl><dt hidden>term" + deep(maxScopeScan-1, "span") + "<dd>shown", "shown"},
		{"dd beyond the scan", "<dl><dt hidden>term" + deep(maxScopeScan, "span") + "<dd>dropped", ""},
	} {
		if text, _ := ExtractHTML(c.src); text != c.text {
			t.Errorf("%s: ExtractHTML = %q, want %q", c.name, text, c.text)
		}
	}
	// The heading's title holds its inline elements too.
	chunks := Split("<h2>Title <b>bold</b> more</h2><p>x</p>", HTML, nil)
	if len(chunks) != 1 || !reflect.DeepEqual(chunks[0].HeadingPath, []string{"Title bold more"}) {
		t.Errorf("heading path: %+v", chunks)
	}
}

// A run of plain text is one piece against Options.MaxChunks however many
// words it has: words that map byte for byte to the source share a
// segment.
func TestSplitHTMLPlainRunIsOnePiece(t *testing.T) {
	src := "<p>Intro.</p><p>" + strings.TrimSpace(strings.Repeat("word ", 700)) + "</p>"
	chunks, err := SplitLimit(src, HTML, &Options{MaxTokens: 4000, MaxChunks: 1})
	if err != nil || len(chunks) != 1 {
		t.Fatalf("SplitLimit: %d chunks, %v", len(chunks), err)
	}
	// Many separate runs are many pieces.
	src = strings.Repeat("<p>w</p><b>x</b>", 100)
	if _, err := SplitLimit(src, HTML, &Options{MaxTokens: 4000, MaxChunks: 1}); !errors.Is(err, ErrTooManyChunks) {
		t.Fatalf("200 runs of text, MaxChunks 1: %v", err)
	}
}
