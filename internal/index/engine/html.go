package engine

import (
	"fmt"
	"strings"

	"golang.org/x/net/html"
)

// tooManyHeadings reports, in one pass of the HTML tokenizer and before
// the page is parsed and extracted, whether src has more than limit h1–h6
// elements: each would start a chunk, so such a page fails the chunk limit
// whatever extraction keeps, and is refused at the cost of reading it once.
func tooManyHeadings(src string, limit int) error {
	if limit <= 0 || len(src) < 9*limit { // "<h1></h1>" is 9 bytes
		return nil
	}
	z := html.NewTokenizer(strings.NewReader(src))
	n := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return nil
		case html.StartTagToken:
			name, _ := z.TagName()
			if len(name) == 2 && (name[0] == 'h' || name[0] == 'H') && name[1] >= '1' && name[1] <= '6' {
				if n++; n > limit {
					return fmt.Errorf("%w: it has more than %d headings, each of which starts a chunk; the limit is %d chunks per document",
						ErrTooManyChunks, limit, limit)
				}
			}
		}
	}
}
