package memory

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/ragmem/ragmem/internal/memory/internal/memtest"
)

// benchDir opens n random memories (memtest.RandomDir) over a fresh index.
func benchDir(b *testing.B, n int) *Store {
	b.Helper()
	s, err := Open(bg, memtest.RandomDir(b, n), &Options{Index: openIndex(b), Logger: quiet(), Now: clock})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkMatch: one Match (refresh check, hybrid search over the
// directory's records, patterns, scores) for a random task.
func BenchmarkMatch(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("memories=%d", n), func(b *testing.B) {
			s := benchDir(b, n)
			r := rand.New(rand.NewSource(1))
			b.ResetTimer()
			for b.Loop() {
				if _, err := s.Match(bg, MatchRequest{Task: memtest.RandWords(r, 8), Agent: "developer"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRefreshUnchanged: checking a directory nothing changed in (one
// stat per file).
func BenchmarkRefreshUnchanged(b *testing.B) {
	s := benchDir(b, 1000)
	time.Sleep(racyWindow + 100*time.Millisecond) // files older than the racy window
	if _, err := s.Refresh(bg); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Refresh(bg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseFile: parsing the seed's memory file.
func BenchmarkParseFile(b *testing.B) {
	data := []byte(seedFile)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseFile(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAddConsolidating: writing a new memory into a directory of n
// memories: the similar ones are found (hybrid search, whole-memory
// embeddings), compared, and the memory is written (a new file, or merged
// into an existing one) and indexed.
func BenchmarkAddConsolidating(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("memories=%d", n), func(b *testing.B) {
			s := benchDir(b, n)
			r := rand.New(rand.NewSource(1))
			i := 0
			b.ResetTimer()
			for b.Loop() {
				i++
				if _, err := s.Add(bg, NewMemory{Frontmatter: Frontmatter{Title: fmt.Sprintf("Bench memory %d %s", i, memtest.RandWords(r, 3)), WhenToUse: []string{memtest.RandWords(r, 2)}},
					Content: memtest.RandWords(r, 40)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSearchWhen: a memory search with a query and a time expression.
func BenchmarkSearchWhen(b *testing.B) {
	s := benchDir(b, 1000)
	r := rand.New(rand.NewSource(1))
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Search(bg, SearchRequest{Query: memtest.RandWords(r, 6), When: "last month"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkView: what every read adds for memory over time (copies of the
// memories with supersession, feedback and strength derived).
func BenchmarkView(b *testing.B) {
	s := benchDir(b, 1000)
	b.ResetTimer()
	for b.Loop() {
		if len(s.view()) != 1000 {
			b.Fatal("memories")
		}
	}
}
