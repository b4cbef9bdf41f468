package memory

import (
	"context"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/internal/memory/internal/memtest"
)

// The seeds' worked examples and the test clock live in memory/internal/memtest,
// shared with the tests of the other agent-memory packages.

var (
	bg        = context.Background()
	testClock = memtest.Clock
	clock     = memtest.Now
	quiet     = memtest.Quiet
	example1  = memtest.Example1
	example3  = memtest.Example3

	writeFixture = memtest.WriteDir
	openIndex    = memtest.OpenIndex
)

const day = memtest.Day

// openStore opens dir over a fresh index.
func openStore(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(bg, dir, &Options{Index: openIndex(t), Logger: quiet(), Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func slugs(ms []Match) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Memory.Slug)
	}
	return out
}

func describe(ms []Match) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.Memory.Slug)
		b.WriteString(" ")
		b.WriteString(strings.Join(m.Reasons, "; "))
		b.WriteString("\n")
	}
	return b.String()
}
