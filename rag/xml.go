package rag

import (
	"strings"
	"unicode/utf8"
)

// Retrieved text is untrusted: a page may contain "</knowledge_context>",
// "<system>" or anything else. Everything placed in the block goes through
// these escapers, so the block is always well-formed XML whose structure no
// retrieved text can change.

// validXMLRune reports whether r may appear in an XML 1.0 document.
func validXMLRune(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' ||
		(r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
}

// EscapeText escapes XML character data: & < > (and CR), and drops bytes of
// invalid UTF-8 and the characters XML forbids (a genuine U+FFFD stays). Anything that wraps untrusted text in markup for a
// model should use it, so that no text can change the structure around it.
func EscapeText(s string) string { return escape(s, false) }

// EscapeAttr escapes a double-quoted XML attribute value: also quotes, and
// line breaks become spaces so the value stays on one line.
func EscapeAttr(s string) string { return escape(s, true) }

func escape(s string, attr bool) string {
	if !needsEscape(s, attr) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case attr && r == '"':
			b.WriteString("&quot;")
		case attr && r == '\'':
			b.WriteString("&apos;")
		case attr && (r == '\n' || r == '\r' || r == '\t'):
			b.WriteByte(' ')
		case r == '\r':
			b.WriteString("&#13;")
		case r == utf8.RuneError && n == 1, !validXMLRune(r):
			// dropped
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func needsEscape(s string, attr bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '&', c == '<', c == '>', c == '\r':
				return true
			case attr && (c == '"' || c == '\'' || c == '\n' || c == '\t'):
				return true
			case c < 0x20 && c != '\t' && c != '\n':
				return true
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || !validXMLRune(r) {
			return true
		}
		i += n
	}
	return false
}
