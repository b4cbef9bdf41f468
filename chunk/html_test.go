package chunk

import (
	"reflect"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

func TestExtractHTML(t *testing.T) {
	cases := []struct {
		name, src   string
		text, title string
	}{
		{"empty", "", "", ""},
		{"plain text", "just text", "just text", ""},
		{"title and body", "<html><head><title> My  &amp; Page </title></head><body><p>Hi</p></body></html>", "Hi", "My & Page"},
		{"title falls back to h1", "<h2>Sub</h2><h1>Main <em>Title</em></h1><p>x</p>", "Sub\n\nMain Title\n\nx", "Main Title"},
		{"script style noscript template", "<p>a</p><script>var s = '<p>no</p>';</script><style>p { color: red }</style><noscript>enable js</noscript><template><p>tpl</p></template><p>b</p>", "a\n\nb", ""},
		{"nav aside form iframe svg", "<nav><a>Home</a></nav><p>a</p><aside>ad</aside><form><label>Name</label><input></form><iframe src=x>frame</iframe><svg><text>svg</text><title>svgt</title></svg><p>b</p>", "a\n\nb", ""},
		{"page header keeps headings only", "<header><a>Logo</a><h1>Site</h1><nav>menu</nav></header><main><p>body</p></main>", "Site\n\nbody", "Site"},
		{"article header kept", "<article><header><h1>Post</h1><p>by me</p></header><p>text</p><footer>tags</footer></article>", "Post\n\nby me\n\ntext\n\ntags", "Post"},
		{"page footer dropped", "<p>main</p><footer><p>copyright</p></footer>", "main", ""},
		{"hidden and roles", `<p>a</p><div hidden>h</div><div aria-hidden="true">ah</div><div role="navigation">nav</div><div role=Banner>ban</div><div aria-hidden="false">shown</div>`, "a\n\nshown", ""},
		{"entities", "<p>&lt;b&gt; &amp;amp; &copy; &#x1F600; &eacute;t&eacute; caf&#233;</p>", "<b> &amp; © 😀 été café", ""},
		{"whitespace collapsed", "<p>  lots\n\tof   <b>space</b>  here </p>", "lots of space here", ""},
		{"inline joins", "<p>Hel<b>lo</b> <i>wor</i>ld</p>", "Hello world", ""},
		{"blocks break", "<div>one<div>two</div>three</div><p>four<br>five</p><ul><li>six<li>seven</ul>", "one\n\ntwo\n\nthree\n\nfour\n\nfive\n\nsix\n\nseven", ""},
		{"pre keeps whitespace", "<p>x</p><pre>\n  indented\n\n    more  spaces\n</pre><p>y</p>", "x\n\nindented\n\n    more  spaces\n\ny", ""},
		{"pre entities and br", "<pre><code>a &lt; b<br>c</code></pre>", "a < b\nc", ""},
		{"table cells", "<table><tr><th>Name</th><th>Age</th></tr><tr><td>Ann</td><td>30</td></tr></table>", "Name\tAge\n\nAnn\t30", ""},
		{"headings on their own lines", "text<h2>Head</h2>more", "text\n\nHead\n\nmore", ""},
		{"heading with br stays one line", "<h2>Two<br>Lines</h2><p>x</p>", "Two Lines\n\nx", ""},
		{"unclosed heading ends at a paragraph", "<h2>Head<p>para</p>", "Head\n\npara", ""},
		{"nbsp only paragraph", "<p>a</p><p>&nbsp;</p><p>b</p>", "a\n\nb", ""},
		{"head text moves to body", "<head><title>T</title>stray text<p>p</p>", "stray text\n\np", "T"},
		{"comments and doctype", "<!DOCTYPE html><!-- hidden --><p>ok</p><?xml x?>", "ok", ""},
		{"unclosed aside closed by parent", "<div><aside>ad</div><p>after</p>", "after", ""},
		{"nested skip", "<nav><nav>x</nav>still nav</nav><p>out</p>", "out", ""},
		{"nul bytes", "<p>a\x00b</p>", "ab", ""},
		{"xmp is raw", "<xmp><b>&amp;</b></xmp>", "<b>&amp;</b>", ""},
		{"text after body", "<body><p>a</p></body><p>b</p>", "a\n\nb", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text, title := ExtractHTML(c.src)
			if text != c.text || title != c.title {
				t.Errorf("ExtractHTML(%q)\n got %q, %q\nwant %q, %q", c.src, text, title, c.text, c.title)
			}
		})
	}
}

func TestSplitHTML(t *testing.T) {
	src := `<!doctype html>
<html><head><title>Guide</title><script>track()</script></head>
<body>
<nav><ul><li><a href="/">Home</a></li></ul></nav>
<main>
<h1>Install</h1>
<p>Intro to the install.</p>
<h2>Linux</h2>
<p>Use the package manager &amp; be happy.</p>
<pre>make
  install</pre>
<h2>macOS</h2>
<p>Use Homebrew.</p>
</main>
<footer>© 2026</footer>
</body></html>`
	chunks := Split(src, HTML, nil)
	type want struct {
		path []string
		text string
	}
	wants := []want{
		{[]string{"Install"}, "Install\n\nIntro to the install."},
		{[]string{"Install", "Linux"}, "Linux\n\nUse the package manager & be happy.\n\nmake\n  install"},
		{[]string{"Install", "macOS"}, "macOS\n\nUse Homebrew."},
	}
	if len(chunks) != len(wants) {
		t.Fatalf("got %d chunks: %+v", len(chunks), chunks)
	}
	for i, w := range wants {
		c := chunks[i]
		if !reflect.DeepEqual(c.HeadingPath, w.path) || c.Text != w.text {
			t.Errorf("chunk %d: %q %q, want %q %q", i, c.HeadingPath, c.Text, w.path, w.text)
		}
		// The source range runs from the first to the last text it holds.
		raw := src[c.Start:c.End]
		first := strings.Fields(w.text)[0]
		last := strings.Fields(w.text)[len(strings.Fields(w.text))-1]
		if !strings.HasPrefix(raw, first) || !strings.HasSuffix(html.UnescapeString(raw), last) {
			t.Errorf("chunk %d: source range %q does not span %q..%q", i, raw, first, last)
		}
	}
	if err := checkHTML(src, chunks, (*Options)(nil).settings()); err != nil {
		t.Fatal(err)
	}
}

func TestSplitHTMLOffsetsWithOverlap(t *testing.T) {
	var b strings.Builder
	b.WriteString("<h1>Long</h1>")
	for _, s := range numbered(60) {
		b.WriteString("<p>" + strings.Replace(s, "talks", "t&auml;lks", 1) + "</p>\n")
	}
	src := b.String()
	opts := &Options{MaxTokens: 60, Overlap: 20}
	chunks := Split(src, HTML, opts)
	if len(chunks) < 5 {
		t.Fatalf("got %d chunks", len(chunks))
	}
	if err := checkHTML(src, chunks, opts.settings()); err != nil {
		t.Fatal(err)
	}
	for i, c := range chunks {
		raw := html.UnescapeString(src[c.Start:c.End])
		fields := strings.Fields(c.Text)
		if !strings.HasPrefix(raw, fields[0]) || !strings.HasSuffix(raw, fields[len(fields)-1]) {
			t.Errorf("chunk %d: source %q does not span %q", i, raw, c.Text)
		}
	}
}

func TestSplitHTMLLongWordOffsetsIncrease(t *testing.T) {
	src := "<p>" + strings.Repeat("x&amp;y", 3000) + "</p>"
	opts := &Options{MaxTokens: 50, Overlap: 10}
	if err := checkHTML(src, Split(src, HTML, opts), opts.settings()); err != nil {
		t.Fatal(err)
	}
}
