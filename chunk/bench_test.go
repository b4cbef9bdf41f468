package chunk

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/internal/tokens"
)

// proseWords is a small English vocabulary for realistic benchmark text.
var proseWords = strings.Fields(`the of and to in is that for it as with was on be by this are
from or at an which have not but they all were their has can more one also will been would
its other when there into only some these than such may system data model memory search
index chunk token budget query vector retrieval context agent user page document result score
time first new used two use each between most over how where after through about should well
language embedding engine hybrid ranking relevance sentence paragraph heading section`)

// benchDoc returns a deterministic document of about size bytes in the
// given format: headings, paragraphs of sentences, lists and code blocks.
func benchDoc(f Format, size int) string {
	rng := rand.New(rand.NewSource(1))
	var b strings.Builder
	sentence := func() string {
		n := 6 + rng.Intn(20)
		ws := make([]string, n)
		for i := range ws {
			ws[i] = proseWords[rng.Intn(len(proseWords))]
		}
		ws[0] = strings.ToUpper(ws[0][:1]) + ws[0][1:]
		if rng.Intn(8) == 0 {
			ws[n/2] = fmt.Sprintf("%d.%d", rng.Intn(100), rng.Intn(100))
		}
		if rng.Intn(10) == 0 {
			ws[n/3] = "e.g."
		}
		return strings.Join(ws, " ") + []string{".", ".", ".", "?", "!"}[rng.Intn(5)]
	}
	paragraph := func() string {
		n := 2 + rng.Intn(7)
		ss := make([]string, n)
		for i := range ss {
			ss[i] = sentence()
		}
		return strings.Join(ss, " ")
	}
	sec := 0
	for b.Len() < size {
		sec++
		switch f {
		case Markdown:
			fmt.Fprintf(&b, "%s Section %d\n\n", strings.Repeat("#", 1+sec%3), sec)
			for p := 1 + rng.Intn(5); p > 0; p-- {
				switch rng.Intn(6) {
				case 0:
					for i := 2 + rng.Intn(5); i > 0; i-- {
						b.WriteString("- " + sentence() + "\n")
					}
					b.WriteString("\n")
				case 1:
					b.WriteString("```go\n// comment\n")
					for i := 3 + rng.Intn(20); i > 0; i-- {
						fmt.Fprintf(&b, "\tx%d := f(%d) // %s\n", i, rng.Intn(100), proseWords[rng.Intn(len(proseWords))])
					}
					b.WriteString("```\n\n")
				default:
					b.WriteString(paragraph() + "\n\n")
				}
			}
		case HTML:
			if sec == 1 {
				b.WriteString("<!doctype html><html><head><title>Bench</title><style>p{margin:0}</style></head><body><nav><a href=/>Home</a> <a href=/docs>Docs</a></nav>\n")
			}
			fmt.Fprintf(&b, "<h%d>Section %d</h%d>\n", 1+sec%3, sec, 1+sec%3)
			for p := 1 + rng.Intn(5); p > 0; p-- {
				switch rng.Intn(6) {
				case 0:
					b.WriteString("<ul>")
					for i := 2 + rng.Intn(5); i > 0; i-- {
						b.WriteString("<li>" + sentence() + "</li>")
					}
					b.WriteString("</ul>\n")
				case 1:
					b.WriteString("<pre><code>")
					for i := 3 + rng.Intn(20); i > 0; i-- {
						fmt.Fprintf(&b, "\tx%d := f(%d) &amp;&amp; y\n", i, rng.Intn(100))
					}
					b.WriteString("</code></pre>\n")
				default:
					b.WriteString("<p>" + strings.ReplaceAll(paragraph(), " and ", " <b>and</b> ") + "</p>\n")
				}
			}
		default:
			b.WriteString(paragraph() + "\n\n")
		}
	}
	return b.String()
}

func benchSplit(b *testing.B, f Format) {
	tokens.Default() // load the BPE tables outside the timing
	benchOver(b, f, func(src string) { Split(src, f, nil) })
}

func BenchmarkSplitMarkdown(b *testing.B) { benchSplit(b, Markdown) }
func BenchmarkSplitText(b *testing.B)     { benchSplit(b, Text) }
func BenchmarkSplitHTML(b *testing.B)     { benchSplit(b, HTML) }

func BenchmarkSentences(b *testing.B)   { benchOver(b, Text, func(src string) { Sentences(src) }) }
func BenchmarkExtractHTML(b *testing.B) { benchOver(b, HTML, func(src string) { ExtractHTML(src) }) }

// benchOver measures f over a 100 KiB document of the format.
func benchOver(b *testing.B, format Format, f func(string)) {
	src := benchDoc(format, 100<<10)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f(src)
	}
}

// TestSplitMegabyteMarkdown checks the invariants on a 1 MiB document; its
// speed is measured by BenchmarkSplitMarkdown.
func TestSplitMegabyteMarkdown(t *testing.T) {
	if testing.Short() {
		t.Skip("1 MiB input")
	}
	src := benchDoc(Markdown, 1<<20)
	chunks := Split(src, Markdown, nil)
	if err := checkVerbatim(src, chunks, (*Options)(nil).settings()); err != nil {
		t.Fatal(err)
	}
}
