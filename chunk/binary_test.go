package chunk

import (
	"os"
	"strings"
	"testing"
)

func TestBinary(t *testing.T) {
	exe, err := os.ReadFile("/bin/ls")
	if err != nil {
		t.Skip("no /bin/ls to read")
	}
	if !Binary(string(exe)) {
		t.Errorf("/bin/ls is not detected as binary")
	}
	cases := []struct {
		name, src string
		want      bool
	}{
		{"empty", "", false},
		{"ascii", "# Title\n\nSome text.\tTabbed.\r\n", false},
		{"utf8", "Grüße, 日本語, emoji 🎉 and \u00a0 spaces", false},
		{"bom", "\uFEFF# Heading", false},
		{"ansi colours", "\x1b[31mred\x1b[0m log line\n", false},
		{"latin1 accents", "caf\xe9 cr\xe8me br\xfbl\xe9e is a dessert made of cream and sugar", false},
		{"nuls", "text\x00more\x00\x00", true},
		{"a stray nul in text", strings.Repeat("plain words ", 20) + "\x00" + strings.Repeat("more words ", 20), false},
		{"many nuls", strings.Repeat("abcdefghij\x00", 40), true},
		{"utf16", "\xff\xfeh\x00e\x00l\x00l\x00o\x00", true},
		{"controls", strings.Repeat("\x01\x02\x03abcdefg", 20), true},
		{"random high bytes", strings.Repeat("\xc3\x28\xa0\xa1\xe2\x28\xa1", 30), true},
		{"nul after the sample", strings.Repeat("a", binarySample+10) + "\x00", false},
		{"rune cut at the sample's end", strings.Repeat("a", binarySample-1) + "é" + "rest", false},
	}
	for _, c := range cases {
		if got := Binary(c.src); got != c.want {
			t.Errorf("%s: Binary = %v, want %v", c.name, got, c.want)
		}
	}
}

// The edges of Binary's rules, each a step either side of a threshold of
// its documentation.
func TestBinaryEdges(t *testing.T) {
	bad := func(n int) string { return strings.Repeat("\x01", n) } // control characters
	// In a sample of exactly 8 KiB, 819 bad bytes are not more than one in
	// ten; 820 are. A rune cut at the sample's end is not counted.
	body := bad(819) + strings.Repeat("x", binarySample-819-4)
	cases := []struct {
		name, src string
		want      bool
	}{
		// 16 NULs or more, or more than one byte in a hundred.
		{"15 nuls in 2 KiB", strings.Repeat("x", 2048) + strings.Repeat("\x00", 15), false},
		{"16 nuls in 2 KiB", strings.Repeat("x", 2048) + strings.Repeat("\x00", 16), true},
		{"one nul in exactly 100 bytes", strings.Repeat("x", 99) + "\x00", false},
		{"one nul in 99 bytes", strings.Repeat("x", 98) + "\x00", true},
		// More than one byte in ten (and at least four) bad.
		{"3 bad bytes alone", bad(3), false},
		{"4 bad bytes alone", bad(4), true},
		{"4 bad bytes in exactly 40", bad(4) + strings.Repeat("x", 36), false},
		{"4 bad bytes in 39", bad(4) + strings.Repeat("x", 35), true},
		{"lone continuation bytes", strings.Repeat("ab\x80", 100), true},
		{"unit separator and delete", strings.Repeat("\x1f\x7fab", 50), true},
		{"space and tilde", strings.Repeat(" ~ab", 50), false},
		{"819 bad bytes in the sample, then a rune cut after 2 of its 3 bytes", body + "ab€z", false},
		{"819 bad bytes in the sample, then a rune cut after 1 of its 2 bytes", body + "abcé", false},
		{"819 bad bytes and a truncated rune ending exactly 8 KiB", body + "abc\xe2", true},
		{"820 bad bytes in the sample", bad(820) + strings.Repeat("x", binarySample), true},
	}
	for _, c := range cases {
		if got := Binary(c.src); got != c.want {
			t.Errorf("%s: Binary = %v, want %v", c.name, got, c.want)
		}
	}
}
