package chunk

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Span is a half-open byte range [Start, End) into a text. It is a plain
// value, safe to copy and share.
type Span struct{ Start, End int }

// Sentences returns the sentences of text in order. Each span starts at the
// first non-space byte of a sentence and ends just after its terminator and
// any closing quotes/brackets (or, for an unterminated last sentence, at the
// end of the text less any trailing whitespace). Whitespace between sentences
// belongs to no span, so the spans are ordered, non-overlapping and together
// cover every non-space byte of text.
//
// A sentence ends at '.', '!', '?', '…' (or a run of them such as "?!" or
// "...") followed by optional closing quotes, brackets or Markdown emphasis
// and then whitespace, or at the CJK terminators 。！？ (which need no
// following space, but do not end a sentence inside 「quotes」 that the
// sentence goes on after). A '.' does not end a sentence when it is part of a number
// or version (3.14, v1.2.3), a URL or e-mail address (no space follows it),
// a list marker at the start of a line ("1. "), a single-letter initial
// ("J. R. R."), or a known abbreviation: titles and references such as Dr.,
// Mr., Mrs., Prof., e.g., i.e., vs., Fig., U.S., U.K. never end a sentence;
// No. does not before a number; etc., Inc., Ltd., Jr., a.m., p.m. and dotted
// tokens end one only when the next word starts with an upper-case letter.
// An ellipsis, or a terminator followed by a closing quote, ends a sentence
// only when the next word does not start with a lower-case letter
// ("Wait... what?" and `"Stop!" he said.` are one sentence each).
//
// Whitespace is what unicode.IsSpace reports; bytes of invalid UTF-8 count
// as non-space. Sentences never panics and is safe for concurrent use.
func Sentences(text string) []Span {
	var spans []Span
	forSentences(text, func(s Span) { spans = append(spans, s) })
	return spans
}

// forSentences calls fn for each sentence of text, as Sentences describes.
func forSentences(text string, fn func(Span)) {
	start := -1 // start of the current sentence, -1 between sentences
	i := 0
	for i < len(text) {
		r, size := utf8.DecodeRuneInString(text[i:])
		if start < 0 {
			if isSpaceRune(r, size) {
				i += size
				continue
			}
			start = i
		}
		if !IsSentenceTerminator(r) {
			i += size
			continue
		}
		// A run of terminators ("?!", "...", "。").
		termStart := i
		cjk := false
		dots, ellipsis := 0, false
		j := i
		for j < len(text) {
			r2, s2 := utf8.DecodeRuneInString(text[j:])
			if !IsSentenceTerminator(r2) {
				break
			}
			switch r2 {
			case '.':
				dots++
			case '…':
				ellipsis = true
			case '。', '！', '？', '｡':
				cjk = true
			}
			j += s2
		}
		if dots >= 2 {
			ellipsis = true
		}
		single := j-termStart == 1 && text[termStart] == '.'

		// Closing quotes, brackets and emphasis right after the terminator.
		closed := false
		for j < len(text) {
			r2, s2 := utf8.DecodeRuneInString(text[j:])
			if !IsSentenceCloser(r2) {
				break
			}
			if isQuote(r2) {
				closed = true
			}
			j += s2
		}
		if j < len(text) {
			r2, s2 := utf8.DecodeRuneInString(text[j:])
			if cjk && closed && !isSpaceRune(r2, s2) {
				// 「行く。」と言った: a quoted sentence inside a sentence.
				i = j
				continue
			}
			if !cjk && !isSpaceRune(r2, s2) {
				// "3.14", "example.com", "Hello!World": not a boundary.
				i = j
				continue
			}
		}
		if !cjk && !endsSentence(text, start, termStart, j, single, ellipsis, closed) {
			i = j
			continue
		}
		fn(Span{start, j})
		start = -1
		i = j
	}
	if start >= 0 {
		end := len(text)
		for end > start {
			r, size := utf8.DecodeLastRuneInString(text[start:end])
			if !isSpaceRune(r, size) {
				break
			}
			end -= size
		}
		fn(Span{start, end})
	}
}

// endsSentence decides whether the terminator run text[term:after] (its
// closers included), followed by whitespace or the end of text, ends the
// sentence that began at start.
func endsSentence(text string, start, term, after int, single, ellipsis, closed bool) bool {
	next, ok := nextWordRune(text, after)
	if !ok {
		return true // end of text
	}
	if ellipsis || closed {
		return !unicode.IsLower(next)
	}
	if !single {
		return true // '!', '?', "?!", ...
	}
	// A single '.': look at the word it closes.
	w := wordBefore(text, start, term)
	if w == "" {
		return true
	}
	if isDigits(w) && atLineStart(text, term-len(w)) {
		return false // ordered list marker "1."
	}
	if utf8.RuneCountInString(w) == 1 {
		r, _ := utf8.DecodeRuneInString(w)
		if unicode.IsUpper(r) && r != 'I' {
			return false // an initial: "J. Smith"
		}
		if unicode.IsLetter(r) && atLineStart(text, term-len(w)) {
			return false // list marker "a."
		}
	}
	switch abbreviations[strings.ToLower(w)] {
	case abbrNever:
		return false
	case abbrNumber:
		return !unicode.IsDigit(next)
	case abbrMaybe:
		return unicode.IsUpper(next)
	}
	if strings.Contains(w, ".") || strings.Contains(w, "@") {
		// Dotted tokens (a.m., Ph.D., v1.2.3, example.com, e-mail): end a
		// sentence only before a capitalised word.
		return unicode.IsUpper(next)
	}
	return true
}

// nextWordRune returns the first rune after the whitespace at text[i:], and
// false when only whitespace follows. Opening quotes and brackets are skipped
// so that `. "The` looks at 'T'.
func nextWordRune(text string, i int) (rune, bool) {
	sawOpener := false
	for i < len(text) {
		r, size := utf8.DecodeRuneInString(text[i:])
		if isSpaceRune(r, size) || isOpener(r) {
			sawOpener = sawOpener || isOpener(r)
			i += size
			continue
		}
		return r, true
	}
	return '"', sawOpener
}

// wordBefore returns the non-space token that ends at text[end] (exclusive),
// without leading opening quotes or brackets, never reaching before start.
func wordBefore(text string, start, end int) string {
	i := end
	for i > start {
		r, size := utf8.DecodeLastRuneInString(text[start:i])
		if isSpaceRune(r, size) {
			break
		}
		i -= size
	}
	w := text[i:end]
	for w != "" {
		r, size := utf8.DecodeRuneInString(w)
		if !isOpener(r) && !IsSentenceCloser(r) {
			break
		}
		w = w[size:]
	}
	return w
}

// atLineStart reports whether only spaces or tabs precede text[i] on its line.
func atLineStart(text string, i int) bool {
	for i > 0 {
		c := text[i-1]
		if c == '\n' || c == '\r' {
			return true
		}
		if c != ' ' && c != '\t' {
			return false
		}
		i--
	}
	return true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// isSpaceRune reports whether the rune decoded with the given size is
// whitespace. A byte of invalid UTF-8 (RuneError of size 1) is not.
func isSpaceRune(r rune, size int) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || r == '\n' || r == '\t' || r == '\r' || r == '\v' || r == '\f'
	}
	return size > 1 && unicode.IsSpace(r)
}

// IsSentenceTerminator reports runes that end a sentence: . ! ? … and their
// CJK and compound forms. budget cuts at sentence ends by the same rules.
func IsSentenceTerminator(r rune) bool {
	switch r {
	case '.', '!', '?', '…', '‼', '⁇', '⁈', '⁉', '。', '！', '？', '｡':
		return true
	}
	return false
}

// IsSentenceCloser reports runes that may follow a terminator and still
// belong to its sentence: closing quotes and brackets, and Markdown emphasis.
func IsSentenceCloser(r rune) bool {
	switch r {
	case '"', '\'', ')', ']', '}', '*', '_', '`',
		'”', '’', '»', '›', '」', '』', '）', '】', '〉', '》', '］', '｝', '〕', '〗', '〙', '〛':
		return true
	}
	return false
}

// isQuote reports the closers that mark the end of quoted speech.
func isQuote(r rune) bool {
	switch r {
	case '"', '\'', '”', '’', '»', '›', '」', '』':
		return true
	}
	return false
}

func isOpener(r rune) bool {
	switch r {
	case '"', '\'', '(', '[', '{', '*', '_', '`', '“', '‘', '«', '‹', '「', '『', '（', '【', '〈', '《', '¿', '¡':
		return true
	}
	return false
}

type abbrKind uint8

const (
	abbrNone   abbrKind = iota
	abbrNever           // never ends a sentence: titles, "e.g."
	abbrNumber          // does not end a sentence before a number: "No. 5"
	abbrMaybe           // ends a sentence only before a capitalised word
)

// abbreviations maps lower-cased abbreviations, without their final '.',
// to how they behave at the end of a sentence.
var abbreviations = map[string]abbrKind{
	// Titles and forms of address.
	"mr": abbrNever, "mrs": abbrNever, "ms": abbrNever, "mx": abbrNever, "dr": abbrNever,
	"prof": abbrNever, "rev": abbrNever, "hon": abbrNever, "gen": abbrNever, "gov": abbrNever,
	"sen": abbrNever, "rep": abbrNever, "capt": abbrNever, "col": abbrNever, "lt": abbrNever,
	"sgt": abbrNever, "messrs": abbrNever, "mme": abbrNever, "mlle": abbrNever, "fr": abbrNever,
	"mt": abbrNever,
	// Latin and references.
	"e.g": abbrNever, "i.e": abbrNever, "cf": abbrNever, "viz": abbrNever, "vs": abbrNever,
	"ca": abbrNever, "approx": abbrNever, "fig": abbrNever, "figs": abbrNever, "eq": abbrNever,
	"eqs": abbrNever, "ch": abbrNever, "vol": abbrNever, "pp": abbrNever,
	"ref": abbrNever, "refs": abbrNever, "dept": abbrNever,
	"u.s": abbrNever, "u.k": abbrNever, "u.n": abbrNever, "e.u": abbrNever, "u.s.a": abbrNever,
	// Numbered things.
	"no": abbrNumber, "nos": abbrNumber, "nr": abbrNumber, "sec": abbrNumber,
	// Often the last word of a sentence.
	"etc": abbrMaybe, "inc": abbrMaybe, "ltd": abbrMaybe, "co": abbrMaybe, "corp": abbrMaybe,
	"llc": abbrMaybe, "ft": abbrMaybe, "jr": abbrMaybe, "sr": abbrMaybe, "st": abbrMaybe, "al": abbrMaybe,
	"a.m": abbrMaybe, "p.m": abbrMaybe, "ph.d": abbrMaybe, "bros": abbrMaybe,
	"jan": abbrMaybe, "feb": abbrMaybe, "mar": abbrMaybe, "apr": abbrMaybe, "jun": abbrMaybe,
	"jul": abbrMaybe, "aug": abbrMaybe, "sep": abbrMaybe, "sept": abbrMaybe, "oct": abbrMaybe,
	"nov": abbrMaybe, "dec": abbrMaybe,
}
