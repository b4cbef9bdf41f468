package chunk

import (
	"strings"
	"unicode/utf8"
)

// binarySample is how much of a source Binary looks at.
const binarySample = 8 << 10

// Binary reports whether src looks like binary data rather than text: its
// first 8 KiB hold 16 NUL bytes or more (or more than one in a hundred
// bytes), or more than one byte in ten of them (and at least four) is part
// of an invalid UTF-8 sequence or a control character other than tab, line
// feed, carriage return, form feed, vertical tab and escape. A stray NUL in
// text is not enough. Text in other
// encodings than UTF-8 (Latin-1 with a few accents, say) stays text; UTF-16
// (full of NULs) and executables, images and archives do not. A leading
// UTF-8 byte-order mark is ignored. Binary is safe for concurrent use.
func Binary(src string) bool {
	s := strings.TrimPrefix(src, "\uFEFF")
	if len(s) > binarySample {
		s = s[:binarySample]
		// Do not count a rune cut at the end of the sample.
		for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
			if utf8.RuneStart(s[i]) {
				if !utf8.FullRuneInString(s[i:]) {
					s = s[:i]
				}
				break
			}
		}
	}
	if nuls := strings.Count(s, "\x00"); nuls >= 16 || nuls*100 > len(s) {
		return true
	}
	bad := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v' && c != 0x1b || c == 0x7f {
				bad++
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			bad++
		}
		i += n
	}
	return bad > 3 && bad*10 > len(s)
}
