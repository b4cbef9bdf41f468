package extract

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

func treeNodes(src string) int {
	doc, err := html.Parse(strings.NewReader(src))
	if err != nil {
		return -1
	}
	n := 0
	walk(doc, func(*html.Node) bool { n++; return true })
	return n
}

// TestEstimateMatchesTheParser: on ordinary pages and on amplifying ones
// the estimate is the parser's node count or more.
func TestEstimateMatchesTheParser(t *testing.T) {
	article, err := os.ReadFile("testdata/article.html")
	if err != nil {
		t.Fatal(err)
	}
	var attrs strings.Builder
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&attrs, "<p><b id=%d>x", i)
	}
	for name, src := range map[string]string{
		"article":          string(article),
		"paragraphs":       strings.Repeat("<p>word word</p>", 500),
		"amplifying":       strings.Repeat("<p><b><i><u>x", 500),
		"distinct attrs":   attrs.String(),
		"table":            "<table>" + strings.Repeat("<tr><td>a<td>b", 300) + "</table>",
		"stray end tags":   strings.Repeat("</p></br>x", 300),
		"misnested":        strings.Repeat("<b><i>x</b>y</i>", 300),
		"links":            strings.Repeat("<a href=1>x<a href=2>y", 300),
		"cells formatting": "<table><tr>" + strings.Repeat("<td><b>x</td>", 300) + "</table>",
	} {
		real, est := treeNodes(src), estimateNodes(src, 1<<40, true)
		if est < real {
			t.Errorf("%s: estimate %d < the parser's %d nodes", name, est, real)
		}
		t.Logf("%s: estimate %d, parser %d", name, est, real)
	}
}

// TestAmplifyingPagesAreBounded: pages whose formatting tags make the
// parser clone them are read without those tags, fast and in little
// memory; pages too large even so are refused with ErrTooComplex; the
// text always survives.
func TestAmplifyingPagesAreBounded(t *testing.T) {
	var attrs strings.Builder
	for i := 0; attrs.Len() < 256<<10; i++ {
		fmt.Fprintf(&attrs, "<p><b id=%d>x", i)
	}
	for name, src := range map[string]string{
		"nested formatting": strings.Repeat("<p><b><i><u>x", (512<<10)/14),
		"distinct attrs":    attrs.String(),
	} {
		var a, b runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&a)
		start := time.Now()
		// The allocation bound is under test, not the time bound
		// (TestExtractionTimeout): under -race on a busy machine these pages
		// can take longer than the default 10 s.
		p, err := HTML(src, "", &Options{Timeout: 5 * time.Minute})
		took := time.Since(start)
		runtime.ReadMemStats(&b)
		if err != nil || !strings.Contains(p.Text, "x") {
			t.Fatalf("%s: %v", name, err)
		}
		// Parsed as it is, the nested page makes 4 million nodes (about
		// 2 GB of allocations) and the distinct one billions.
		if alloc := b.TotalAlloc - a.TotalAlloc; alloc > 200<<20 {
			t.Errorf("%s: %d MB allocated", name, alloc>>20)
		}
		t.Logf("%s (%d KiB): %s, %d bytes of text in %v", name, len(src)>>10, p.Method, len(p.Text), took)
	}
	_, err := HTML(strings.Repeat("<h1>t</h1>", 300_000), "", nil)
	if !errors.Is(err, ErrTooComplex) {
		t.Fatalf("300,000 headings: %v", err)
	}
	_, err = HTML(strings.Repeat("<p>t</p>", 1000), "", &Options{MaxNodes: 1500})
	if !errors.Is(err, ErrTooComplex) || !strings.Contains(err.Error(), "1500") {
		t.Fatalf("MaxNodes 1500: %v", err)
	}
	if _, err := HTML(strings.Repeat("<p>t</p>", 700), "", &Options{MaxNodes: 1500}); err != nil {
		t.Fatalf("under MaxNodes: %v", err)
	}
}

// TestExtractionTimeout: a page not extracted within Options.Timeout fails
// with ErrTooComplex, and so does a cancelled context.
func TestExtractionTimeout(t *testing.T) {
	src := strings.Repeat("<div><p>Some text here about herons and storks.</p></div>", 20000)
	_, err := HTML(src, "", &Options{Timeout: time.Millisecond})
	if !errors.Is(err, ErrTooComplex) || !strings.Contains(err.Error(), "1ms") {
		t.Fatalf("1 ms timeout: %v", err)
	}
	ctx, cancel := contextWithCancel()
	cancel()
	if _, err := HTMLContext(ctx, src, "", nil); !errors.Is(err, ErrTooComplex) {
		t.Fatalf("cancelled: %v", err)
	}
}

// FuzzBound: after bound, the parser makes no more than about MaxNodes
// nodes (twice, with margin, since the estimate is not exact), and bound
// never panics.
func FuzzBound(f *testing.F) {
	f.Add("<p><b><i><u>x<p><b><i><u>x", 50)
	f.Add("<table><tr><td>a<td>b</table>", 10)
	f.Add("</p></p><b><i>x</b></i>", 5)
	f.Fuzz(func(t *testing.T, src string, limit int) {
		if len(src) > 1<<14 || limit < 1 || limit > 5000 {
			return
		}
		out, err := bound(src, limit)
		if err != nil {
			if !errors.Is(err, ErrTooComplex) {
				t.Fatal(err)
			}
			return
		}
		if n := treeNodes(out); n > 2*limit+8 {
			t.Fatalf("bound let through a page of %d nodes with a limit of %d", n, limit)
		}
	})
}

func contextWithCancel() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

// TestManyAttributesAreRefused: attributes cost the parser, Readability
// and the cleaning about as much as small nodes, and the tokenizer drops no
// distinct one, so a page whose tags carry more attributes than MaxNodes
// (one tag with hundreds of thousands: 1.3 million in 7.7 MB took 3 GB of
// allocations and 8 s) is refused with ErrTooComplex, fast, before it is
// parsed. Ordinary pages pass.
func TestManyAttributesAreRefused(t *testing.T) {
	var one strings.Builder
	one.WriteString("<p ")
	for i := 0; i < 300_000; i++ {
		fmt.Fprintf(&one, "a%x ", i)
	}
	one.WriteString(">text survives</p>")
	spread := strings.Repeat(`<p class="c" id="i" title='t' data-x=1>text</p>`, 1000)
	for name, c := range map[string]struct {
		src string
		max int
	}{
		"one tag":      {one.String(), 0},
		"spread":       {spread, 3000},
		"spread, dups": {strings.Repeat(`<p a=1 a=2 a=3 a=4 a=5>x</p>`, 1000), 3000},
	} {
		var a, b runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&a)
		_, err := HTML(c.src, "", &Options{MaxNodes: c.max})
		runtime.ReadMemStats(&b)
		if !errors.Is(err, ErrTooComplex) || !strings.Contains(err.Error(), "attributes") {
			t.Errorf("%s: %v, want ErrTooComplex for its attributes", name, err)
		}
		if alloc := b.TotalAlloc - a.TotalAlloc; alloc > 4*uint64(len(c.src))+(1<<20) {
			t.Errorf("%s: %d MB allocated for a page of %d KB", name, alloc>>20, len(c.src)>>10)
		}
	}
	// Under the limit, and attributes inside scripts, styles and comments
	// (which the count skips) do not count.
	for name, src := range map[string]string{
		"spread":  spread,
		"script":  "<p>kept text</p><script>" + strings.Repeat("if(a<b c d e f g)x=1;", 2000) + "</script>",
		"style":   "<p>kept text</p><STYLE>" + strings.Repeat("p<x a b c d{}", 2000) + "</STYLE >",
		"comment": "<p>kept text</p><!--" + strings.Repeat("<b a b c d e>", 2000) + "-->",
	} {
		if p, err := HTML(src, "", &Options{MaxNodes: 5000}); err != nil || !strings.Contains(p.Text, "text") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// tokenAttrs is the number of attributes the tokenizer gives src's tags.
func tokenAttrs(src string) int {
	z := html.NewTokenizer(strings.NewReader(src))
	n := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return n
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			n += len(z.Token().Attr)
		}
	}
}

// FuzzCountAttrs: the count from the bytes is never below the tokenizer's.
func FuzzCountAttrs(f *testing.F) {
	for _, s := range []string{`<p a=1 b="2>" c='x' d>t</p>`, `<script>x<y a b</script><p q r>`, `<!-- <a b c> --><i j k>`, `<a/b/c =d e = "f">`, `<title><b a></title><u v w>`, `</p a b>`, "<p\ta\nb\fc\rd>", `<textarea><x y z></TEXTAREA><a b>`, `<plaintext><a b c>`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if got, want := countAttrs(src, 1<<30), tokenAttrs(src); got < want {
			t.Fatalf("countAttrs %d < the tokenizer's %d", got, want)
		}
	})
}
