package driver

import (
	"strings"

	"github.com/ragmem/ragmem/index"
)

// SearchText is what is searched of a record, by meaning and by words: its
// title, then each heading of its path that differs from the title, each on
// its own line, then its content. The embedder embeds it (index) and both
// BM25 backends index it (index/local, index/weaviate), so that the vector
// and the full-text side of a hybrid search always see the same text; a
// chunk's title and headings give it the context of where it sits.
//
// The text ends with r.Content unchanged, so
// SearchText(r)[:len(SearchText(r))-len(r.Content)] is the title and
// headings part.
func SearchText(r *index.Record) string {
	var b strings.Builder
	b.Grow(len(r.Title) + len(r.Content) + 64)
	if r.Title != "" {
		b.WriteString(r.Title)
		b.WriteByte('\n')
	}
	for _, h := range r.HeadingPath {
		if h != r.Title {
			b.WriteString(h)
			b.WriteByte('\n')
		}
	}
	b.WriteString(r.Content)
	return b.String()
}
