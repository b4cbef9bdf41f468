package budget

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ragmem/ragmem/chunk"
)

// Item is a candidate for the knowledge budget, typically a retrieved chunk.
// It is a plain value, safe to copy and share.
type Item struct {
	Text  string
	Score float64
	// Overhead is the number of tokens of markup the caller wraps around
	// Text (for example a <source ...> element). It is counted against the
	// budget together with Text. A negative value counts as 0.
	Overhead int
}

// Selected is an item chosen by Select.
type Selected struct {
	Item      int    // index of the item in the slice given to Select
	Text      string // Item.Text without trailing whitespace, or its truncation
	Tokens    int    // Count(Text) + Overhead
	Truncated bool   // Text is a sentence-boundary prefix of Item.Text
}

// Select chooses items for a token budget (Properties 7 and 8).
//
// Items are taken in order of descending Score (ties keep their input order;
// NaN scores sort after every number) while Count(Text)+Overhead fits in what
// is left of budget. Trailing whitespace is trimmed from every Text first: it
// carries no content and would only cost tokens. The first item that does not
// fit ends the selection: it is cut with TruncateAtSentence to the tokens left
// after its Overhead and included if at least one whole sentence fits,
// dropped otherwise. Hence no lower-scoring item is ever included while a
// higher-scoring one is excluded, and the Tokens of the result sum to at most
// budget (nothing is selected when budget <= 0).
//
// Each candidate up to the first that does not fit is counted once; the
// truncation costs about three more counts of the part that fits. Select does
// not modify items. It is safe for concurrent use when c is.
func Select(items []Item, budget int, c Counter) []Selected {
	if budget <= 0 || len(items) == 0 {
		return nil
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return compareScores(items[a].Score, items[b].Score)
	})

	var out []Selected
	left := budget
	for _, idx := range order {
		it := items[idx]
		overhead := nonNeg(it.Overhead)
		if overhead > left {
			break // not even the markup fits
		}
		avail := left - overhead
		whole := strings.TrimRightFunc(it.Text, unicode.IsSpace)
		n := c.Count(whole)
		if n <= avail {
			out = append(out, Selected{Item: idx, Text: whole, Tokens: n + overhead})
			left -= n + overhead
			continue
		}
		if text, tokens := truncate(whole, avail, c); text != "" {
			out = append(out, Selected{Item: idx, Text: text, Tokens: tokens + overhead, Truncated: true})
		}
		break
	}
	return out
}

// compareScores orders scores descending with NaN last; equal scores (and
// two NaNs) compare equal so that a stable sort keeps their input order.
func compareScores(a, b float64) int {
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an || bn:
		if an && bn {
			return 0
		}
		if an {
			return 1
		}
		return -1
	}
	return cmp.Compare(b, a)
}

// TruncateAtSentence cuts text to at most maxTokens tokens at a sentence
// boundary (Property 8). It returns the longest prefix of text made of whole
// sentences (as chunk.Sentences splits them) whose token count is at most
// maxTokens, with trailing whitespace trimmed, and whether anything but
// trailing whitespace was cut. The end of the text counts as a boundary: if
// the whole text fits it is returned (trimmed) with truncated == false. A
// truncated result always ends with sentence-final punctuation, optionally
// followed by closing quotes, brackets or Markdown emphasis; it is "" when not
// even the first sentence fits. A negative maxTokens counts as 0.
//
// The cut is estimated from one pass of per-sentence counts that stops as
// soon as the budget is exceeded, then verified with exact counts of
// prefixes (BPE counts are not exactly additive across sentences), using a
// binary search when the estimate was off. A long text thus costs one count
// of the whole text and about three counts of the returned prefix, not one
// count per sentence prefix. TruncateAtSentence is safe for concurrent use when c is.
func TruncateAtSentence(text string, maxTokens int, c Counter) (string, bool) {
	whole := strings.TrimRightFunc(text, unicode.IsSpace)
	if whole == "" || c.Count(whole) <= nonNeg(maxTokens) {
		return whole, false
	}
	s, _ := truncate(whole, nonNeg(maxTokens), c)
	return s, true
}

// truncate returns the longest proper sentence prefix of whole (which has no
// trailing whitespace and is known not to fit) with at most maxTokens >= 0
// tokens, and its token count; "" if there is none.
func truncate(whole string, maxTokens int, c Counter) (string, int) {
	// Candidate ends: sentence ends strictly inside whole whose prefix ends
	// in sentence-final punctuation. The checks keep Property 8 true even if
	// a splitter returned something unexpected.
	var ends []int
	prev := 0
	for _, sp := range chunk.Sentences(whole) {
		e := sp.End
		if e <= prev || e >= len(whole) {
			continue
		}
		if endsWithTerminator(whole[:e]) {
			ends = append(ends, e)
			prev = e
		}
	}
	if len(ends) == 0 {
		return "", 0
	}

	exact := make(map[int]int, 4) // candidate index -> exact token count
	countPrefix := func(i int) int {
		if v, ok := exact[i]; ok {
			return v
		}
		v := c.Count(whole[:ends[i]]) // ends in punctuation: nothing to trim
		exact[i] = v
		return v
	}
	fits := func(i int) bool { return i < 0 || countPrefix(i) <= maxTokens }

	// Estimate: sum the counts of the pieces between candidate ends and stop
	// at the first piece that overflows. For i == 0 the piece is the prefix
	// itself, so its count is exact.
	k, sum := -1, 0
	for i, e := range ends {
		start := 0
		if i > 0 {
			start = ends[i-1]
		}
		piece := c.Count(whole[start:e])
		if i == 0 {
			exact[0] = piece
		}
		sum += piece
		if sum > maxTokens {
			break
		}
		k = i
	}

	// Verify with exact counts, assuming prefix counts are monotone (true in
	// practice; the result fits in any case because it is counted exactly).
	// lo fits and hi does not; index -1 is the empty prefix and len(ends) the
	// whole text, both known.
	lo, hi := k, len(ends)
	if !fits(k) {
		// The estimate was optimistic: search below it.
		lo, hi = -1, k
	} else if k+1 < len(ends) && fits(k+1) {
		// The estimate was pessimistic: gallop upwards, then search.
		lo = k + 1
		for step := 1; lo+step < len(ends); step *= 2 {
			if !fits(lo + step) {
				hi = lo + step
				break
			}
			lo += step
		}
	} else {
		hi = k + 1
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	if lo < 0 {
		return "", 0
	}
	return whole[:ends[lo]], countPrefix(lo)
}

// endsWithTerminator reports whether s ends with sentence-final punctuation,
// optionally followed by closing quotes, brackets or Markdown emphasis.
func endsWithTerminator(s string) bool {
	for s != "" {
		r, size := utf8.DecodeLastRuneInString(s)
		switch {
		case chunk.IsSentenceTerminator(r):
			return true
		case chunk.IsSentenceCloser(r):
			s = s[:len(s)-size]
		default:
			return false
		}
	}
	return false
}
