package memory

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// benchDir writes n random memories (the property tests' generator, fixed
// seed) and opens them over a fresh index.
func benchDir(b *testing.B, n int) *Store {
	b.Helper()
	r := rand.New(rand.NewSource(42))
	dir := filepath.Join(b.TempDir(), "m")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i++ {
		fm := randFrontmatter(r)
		if err := validateFrontmatter(&fm); err != nil {
			b.Fatal(err)
		}
		body := "# " + fm.Title + "\n\n" + randWords(r, 150+r.Intn(250))
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("m%04d.md", i)), FormatEntry(fm, body), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	s, err := Open(bg, dir, &Options{Index: openIndex(b), Logger: quiet(), Now: clock})
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
				if _, err := s.Match(bg, MatchRequest{Task: randWords(r, 8), Agent: "developer"}); err != nil {
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

// BenchmarkInjector: GetMemoryContext for the same query, from the cache
// and without it (TTL disabled).
func BenchmarkInjector(b *testing.B) {
	s := benchDir(b, 100)
	q := Query{Task: "fix the flaky upload timeout in the proxy config", Agent: "developer"}
	for _, c := range []struct {
		name string
		ttl  time.Duration
	}{{"cached", time.Hour}, {"uncached", -1}} {
		b.Run(c.name, func(b *testing.B) {
			in := NewInjector(&InjectorOptions{Store: s, TTL: c.ttl, Logger: quiet()})
			in.GetMemoryContext(bg, q)
			b.ResetTimer()
			for b.Loop() {
				if mc := in.GetMemoryContext(bg, q); mc.Err != nil {
					b.Fatal(mc.Err)
				}
			}
		})
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
