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
		p, err := HTML(src, "", nil)
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
