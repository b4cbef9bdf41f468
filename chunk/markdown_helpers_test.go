package chunk

import (
	"testing"
	"unicode"
)

// isASCIIPunct is CommonMark's ASCII punctuation: the ASCII characters Go
// files under punctuation or symbols.
func TestIsASCIIPunct(t *testing.T) {
	for c := 0; c < 256; c++ {
		want := c < 0x80 && (unicode.IsPunct(rune(c)) || unicode.IsSymbol(rune(c)))
		if got := isASCIIPunct(byte(c)); got != want {
			t.Errorf("isASCIIPunct(%q) = %v", rune(c), got)
		}
		if got := isASCIISpaceOrPunct(byte(c)); got != (want || c == ' ' || c == '\t') {
			t.Errorf("isASCIISpaceOrPunct(%q) = %v", rune(c), got)
		}
	}
}

// startsItem recognises list and table lines: bullets followed by a space,
// a tab or nothing, "•", a table row or a quotation, and ordered markers of
// one to nine digits and "." or ")".
func TestStartsItem(t *testing.T) {
	for in, want := range map[string]bool{
		"": false, "|a|": true, "> quoted": true,
		"-": true, "- x": true, "-\tx": true, "-x": false, "* x": true, "+ x": true, "+x": false,
		"• x":  true,
		"1. x": true, "1) x": true, "1.\tx": true, "1.": true, "1.x": false, "0. x": true, "9. x": true,
		"123456789. x": true, "1234567890. x": false, "12": false, ". x": false, "a. x": false, "1: x": false,
	} {
		if got := startsItem(in); got != want {
			t.Errorf("startsItem(%q) = %v, want %v", in, got, want)
		}
	}
}
