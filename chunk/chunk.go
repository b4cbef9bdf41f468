// Package chunk splits plain text, Markdown and HTML into token-sized chunks
// for retrieval.
//
// # Algorithm
//
// A source is first turned into sections and blocks. Markdown sections start
// at ATX ("## Title") and setext (underlined) headings; lines inside fenced
// code blocks and YAML front matter are never headings. HTML is reduced to
// its visible text by ExtractHTML, whose h1–h6 elements start the sections.
// Plain text is one section. Every section carries its heading path, the
// titles of the enclosing headings, outermost first.
//
// Each section is then cut into units, each with its token count (counted
// once, together with the whitespace that precedes it): the sentences of its
// paragraphs (see Sentences), list items and table rows, and whole code
// blocks. A unit larger than the budget is split again, at lines, then at
// words; only a single word longer than the budget is cut between runes. A
// code block that fits the budget is never split; one that does not is split
// at its lines.
//
// Units are packed greedily into a chunk while their summed counts fit
// Options.MaxTokens. When the next unit does not fit, the chunk ends at the
// strongest boundary (paragraph, then list item or line, then sentence, then
// word) that leaves the chunk at least a third full. The text of every chunk
// is counted once more, exactly; if the sum was too optimistic the chunk gives
// back units until it fits. The next chunk repeats up to Options.Overlap
// tokens of the previous chunk's tail, starting at a sentence boundary or,
// when the last sentence alone is longer, at a word boundary (code is only
// repeated by whole lines). Chunks never span two sections: every heading
// starts a new chunk, overlap never crosses a heading, and small sections are
// not merged, so a heading directly followed by a subheading is a chunk of
// its own. The heading line itself is the start of its section's first chunk.
//
// The work is linear in the size of the input: each byte is tokenized about
// twice (once in its unit, once in its chunk, plus the overlap). Because BPE
// tokenizers are quadratic in the length of a run of letters, punctuation or
// whitespace, no such run longer than a few kilobytes is ever handed to the
// counter: a longer word is cut into pieces, and a long run of whitespace
// between units ends a chunk (it then belongs to no chunk).
//
// # Offsets
//
// For Text and Markdown a chunk is a verbatim slice of the source:
// Chunk.Text == src[Chunk.Start:Chunk.End]. For HTML, Chunk.Text is extracted
// text and [Start, End) spans the raw HTML it came from, from the first to
// the last contributing text.
//
// Chunk, Span, Format and Options are plain values. Split, Sentences and
// ExtractHTML keep no state and are safe for concurrent use (provided
// Options.Count is).
package chunk

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ragmem/ragmem/internal/tokens"
)

// ErrUnknownFormat is returned by ParseFormat for a name it does not know.
var ErrUnknownFormat = errors.New("chunk: unknown format")

// Format is the markup of a source. The zero value is Text.
type Format int

// Formats understood by Split.
const (
	Text Format = iota
	Markdown
	HTML
)

// String returns "text", "markdown" or "html" ("Format(n)" for other values).
func (f Format) String() string {
	switch f {
	case Text:
		return "text"
	case Markdown:
		return "markdown"
	case HTML:
		return "html"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// ParseFormat parses a format name, case-insensitively: "text", "txt" or
// "plain" for Text; "markdown" or "md" for Markdown; "html" or "htm" for
// HTML. The media types text/plain, text/markdown and text/html (parameters
// such as "; charset=utf-8" ignored) are accepted too. Any other name yields
// an error wrapping ErrUnknownFormat.
func ParseFormat(s string) (Format, error) {
	name, _, _ := strings.Cut(s, ";") // media type parameters
	name = strings.ToLower(strings.TrimSpace(name))
	switch name {
	case "text", "txt", "plain", "text/plain":
		return Text, nil
	case "markdown", "md", "text/markdown", "text/x-markdown":
		return Markdown, nil
	case "html", "htm", "text/html", "application/xhtml+xml":
		return HTML, nil
	}
	return Text, fmt.Errorf("%w %q (known: text, markdown, html)", ErrUnknownFormat, s)
}

// FormatForPath returns the format for a file name by its extension,
// case-insensitively: .txt and .text are Text, .md and .markdown are
// Markdown, .html and .htm are HTML. It returns false for any other name.
func FormatForPath(path string) (Format, bool) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".txt", ".text":
		return Text, true
	case ".md", ".markdown":
		return Markdown, true
	case ".html", ".htm":
		return HTML, true
	}
	return Text, false
}

// Chunk is one piece of a source. It is a plain value; Split gives every
// chunk its own HeadingPath slice.
type Chunk struct {
	Index       int      // 0-based position of the chunk in its source
	Text        string   // the chunk text
	HeadingPath []string // headings enclosing the chunk, outermost first; nil when none
	Start, End  int      // byte offsets [Start, End) into the source passed to Split
	Tokens      int      // token count of Text (Options.Count)
}

// Default option values.
const (
	DefaultMaxTokens = 400
	DefaultOverlap   = 50
)

// Options tunes Split. A nil *Options means all defaults.
type Options struct {
	// MaxTokens is the maximum number of tokens per chunk; 0 or less means
	// DefaultMaxTokens (400).
	MaxTokens int
	// Overlap is how many tokens of a chunk's tail are repeated at the start
	// of the next chunk of the same section. 0 means DefaultOverlap (50); a
	// negative value disables overlap. It is clamped below MaxTokens/2.
	Overlap int
	// Count counts the tokens of a string. nil means tokens.Default().Count
	// (cl100k_base). It must be safe for concurrent use if Split is called
	// concurrently with the same Options.
	Count func(string) int
	// MaxChunks is the most chunks one source may yield; 0 or less means no
	// limit. Over it SplitLimit fails with ErrTooManyChunks, and Split
	// returns the chunks made so far. Either stops as soon as the limit is
	// certain to be passed, so the memory and time a source costs are
	// bounded by MaxChunks rather than by its size: the parse also gives up
	// on a source of more than PiecesPerChunk·MaxChunks blocks (paragraphs,
	// headings, code blocks), sentences and lines, or runs of HTML text.
	MaxChunks int
}

// PiecesPerChunk bounds the structure a source may have for each chunk it is
// allowed (Options.MaxChunks): real documents hold a few dozen sentences
// and paragraphs per chunk of 400 tokens, pathological ones a piece per
// byte.
const PiecesPerChunk = 64

// ErrTooManyChunks is returned by SplitLimit for a source over
// Options.MaxChunks.
var ErrTooManyChunks = errors.New("chunk: source yields too many chunks")

// settings are Options with defaults applied.
type settings struct {
	max, overlap int
	count        func(string) int
	maxChunks    int
}

func (o *Options) settings() settings {
	s := settings{max: DefaultMaxTokens, overlap: DefaultOverlap}
	if o != nil {
		if o.MaxTokens > 0 {
			s.max = o.MaxTokens
		}
		switch {
		case o.Overlap < 0:
			s.overlap = 0
		case o.Overlap > 0:
			s.overlap = o.Overlap
		}
		s.count = o.Count
		s.maxChunks = max(o.MaxChunks, 0)
	}
	s.overlap = min(s.overlap, (s.max+1)/2-1) // strictly below MaxTokens/2
	if s.count == nil {
		s.count = tokens.Default().Count
	}
	return s
}

// Split cuts src into chunks of at most Options.MaxTokens tokens (see the
// package documentation for the algorithm). A Format other than the three
// defined is treated as Text.
//
// Tokens never exceeds MaxTokens, with one exception: a single rune (or, for
// a counter that is not monotone, a single unit) whose own count exceeds
// MaxTokens is emitted as a chunk of its own. With the default counter this
// needs MaxTokens below 4.
//
// Split never panics and never returns an error, whatever the input (invalid
// UTF-8 included). Empty or whitespace-only input yields no chunks. With
// Options.MaxChunks it stops where SplitLimit fails, returning the chunks
// made so far. Split is safe for concurrent use.
func Split(src string, f Format, opts *Options) []Chunk {
	out, _ := SplitLimit(src, f, opts)
	return out
}

// SplitLimit is Split that fails, with an error wrapping ErrTooManyChunks,
// for a source over Options.MaxChunks (see there); it then returns the
// chunks made so far. Without MaxChunks it is Split.
func SplitLimit(src string, f Format, opts *Options) (out []Chunk, err error) {
	st := opts.settings()
	var lim *limits
	if st.maxChunks > 0 {
		lim = &limits{maxChunks: st.maxChunks, maxPieces: PiecesPerChunk * st.maxChunks}
		defer func() {
			if v := recover(); v != nil {
				le, ok := v.(*limitError)
				if !ok {
					panic(v)
				}
				out, err = le.chunks, le
			}
		}()
	}
	var d *doc
	switch f {
	case Markdown:
		d = parseMarkdown(src, lim)
	case HTML:
		d = extractHTML(src, lim)
	default:
		d = parseText(src, lim)
	}
	return d.split(st, lim), nil
}

// limits counts what a Split makes against Options.MaxChunks; nil means no
// limit. Passing a limit panics with a *limitError, which SplitLimit
// recovers: the parsers and the packer stop wherever they are.
type limits struct {
	maxChunks, maxPieces int
	units                int
	chunks               []Chunk // made so far, for the error

	// The sections the blocks so far make, counted as sectionize cuts
	// them, so that a source of many headings fails as soon as it has
	// one too many rather than once it is all parsed.
	blocks        int
	sections      int  // sections complete before the current one
	cur           bool // a current section has blocks
	curOnlyTitles bool // ... and they are all headings
	curLevel      int  // ... the level of the last one
}

// limitError is ErrTooManyChunks with what was passed.
type limitError struct {
	msg    string
	chunks []Chunk
}

func (e *limitError) Error() string { return ErrTooManyChunks.Error() + ": " + e.msg }
func (e *limitError) Unwrap() error { return ErrTooManyChunks }

func (l *limits) fail(format string, args ...any) {
	panic(&limitError{msg: fmt.Sprintf(format, args...), chunks: l.chunks})
}

// section checks the number of sections sectionize made.
func (l *limits) section(n int) {
	if l != nil && n > l.maxChunks {
		l.tooManySections()
	}
}

func (l *limits) tooManySections() {
	l.fail("it has more than %d sections, each of which starts a chunk", l.maxChunks)
}

// chunk checks the number of chunks so far.
func (l *limits) chunk(out []Chunk) {
	if l != nil && len(out) > l.maxChunks {
		l.chunks = out[:l.maxChunks]
		l.fail("it has more than %d chunks", l.maxChunks)
	}
}

// block checks the blocks so far with one more, b: their number, and the
// sections they make (see sectionize).
func (l *limits) block(b *block) {
	if l == nil {
		return
	}
	if l.blocks++; l.blocks > l.maxPieces {
		l.fail("it has more than %d paragraphs, headings and code blocks (%d per chunk allowed)", l.maxPieces, PiecesPerChunk)
	}
	switch {
	case b.kind != blockHeading:
		if !l.cur {
			l.cur = true
		}
		l.curOnlyTitles = false
		return
	case l.cur && l.curOnlyTitles && l.curLevel < b.level:
		// Nested under the current headings: the same section.
	default:
		if l.cur {
			if l.sections++; l.sections+1 > l.maxChunks {
				l.tooManySections()
			}
		}
		l.cur, l.curOnlyTitles = true, true
	}
	l.curLevel = b.level
}

// piece checks the number of HTML text runs so far.
func (l *limits) piece(n int) {
	if l != nil && n > l.maxPieces {
		l.fail("it has more than %d separate runs of text (%d per chunk allowed)", l.maxPieces, PiecesPerChunk)
	}
}

// unit counts one more sentence, line or word made.
func (l *limits) unit() {
	if l == nil {
		return
	}
	if l.units++; l.units > l.maxPieces {
		l.fail("it has more than %d sentences, lines and list items (%d per chunk allowed)", l.maxPieces, PiecesPerChunk)
	}
}
