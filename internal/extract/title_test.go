package extract

import (
	"strings"
	"testing"
)

func TestArticleTitle(t *testing.T) {
	cases := []struct{ found, raw, h1, want string }{
		// Readability cut a hyphenated word: the <title> is kept, then its h1.
		{"State Concurrency - My Book", "Shared-State Concurrency - My Book", "Shared-State Concurrency", "Shared-State Concurrency"},
		{"State Concurrency - My Book", "Shared-State Concurrency - My Book", "", "Shared-State Concurrency - My Book"},
		// A site name after the separator is not the article's name.
		{"Introduction - The Book", "Introduction - The Book", "The Book", "Introduction - The Book"},
		// "Site | Article": Readability's choice stands.
		{"How Otters Sleep", "Otter News | How Otters Sleep", "How Otters Sleep", "How Otters Sleep"},
		// "Article | Site" with the article's h1.
		{"How Otters Sleep | Otter News", "How Otters Sleep | Otter News", "How Otters Sleep", "How Otters Sleep"},
		{"", "", "Only an h1", "Only an h1"},
		{"", "Only a title", "", "Only a title"},
	}
	for _, c := range cases {
		if got := articleTitle(c.found, c.raw, c.h1); got != c.want {
			t.Errorf("articleTitle(%q, %q, %q) = %q, want %q", c.found, c.raw, c.h1, got, c.want)
		}
	}
	// Through HTML: the title of an mdBook page survives.
	p, err := HTML(`<html><head><title>Shared-State Concurrency - The Rust Programming Language</title></head><body><nav>menu</nav><main><h1>Shared-State Concurrency</h1><p>`+strings.Repeat("Mutexes guard shared data. ", 20)+`</p></main></body></html>`, "", nil)
	if err != nil || p.Title != "Shared-State Concurrency" {
		t.Fatalf("title %q, %v", p.Title, err)
	}
}
