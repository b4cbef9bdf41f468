// Package clean makes untrusted text safe to store, show and put into a
// prompt: valid UTF-8, without control or format characters, clipped at a
// rune boundary. Agent memories, preferences and web results are cleaned
// with it, so that they all follow one set of rules.
package clean

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Line makes s a single line: valid UTF-8 (invalid bytes dropped), control
// and format characters (Unicode Cc and Cf, such as zero-width joiners and
// bidirectional overrides) turned into spaces, runs of white space
// collapsed to one space, trimmed.
func Line(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "")
	}
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return ' '
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// Text makes s valid UTF-8 (invalid bytes dropped) without control
// characters other than newlines and tabs, with CRLF and lone CR line ends
// turned into LF and byte-order marks removed. Lines and their indentation
// are kept.
func Text(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "")
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r == '\r':
			return '\n'
		case unicode.IsControl(r), r == '\uFEFF':
			return -1
		}
		return r
	}, s)
}

// Clip cuts s to at most n bytes at a rune boundary.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
