package extract_test

import (
	"os"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/internal/extract"
)

// BenchmarkHTML extracts a ~100 KB article page (testdata/article.html with
// its body repeated) and reports MB/s.
func BenchmarkHTML(b *testing.B) {
	src, err := os.ReadFile("testdata/article.html")
	if err != nil {
		b.Fatal(err)
	}
	s := string(src)
	start, end := strings.Index(s, "<article>"), strings.Index(s, "</article>")
	body := s[start+len("<article>") : end]
	page := s[:end] + strings.Repeat(body, 100000/len(body)) + s[end:]
	b.SetBytes(int64(len(page)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := extract.HTML(page, "https://blog.example/bm25", nil); err != nil {
			b.Fatal(err)
		}
	}
}
