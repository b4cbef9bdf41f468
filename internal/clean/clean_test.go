package clean

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLine(t *testing.T) {
	for in, want := range map[string]string{
		"  a\tb\n\nc  ":                 "a b c",
		"ab\x00cd":                      "ab cd",
		"zero\u200dwidth\u202eoverride": "zero width override",
		"bad \xff utf8":                 "bad utf8",
		"":                              "",
		"\u00a0nbsp\u00a0":              "nbsp",
	} {
		if got := Line(in); got != want {
			t.Errorf("Line(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestText(t *testing.T) {
	for in, want := range map[string]string{
		"a\r\nb\rc":           "a\nb\nc",
		"\uFEFF# Title\n\tx":  "# Title\n\tx",
		"bell\a and \x00 nul": "bell and  nul",
		"keep\u200dzwj":       "keep\u200dzwj",
		"bad \xff":            "bad ",
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestClip(t *testing.T) {
	s := "héllo"
	for n := 0; n <= len(s)+1; n++ {
		got := Clip(s, n)
		if len(got) > n || !utf8.ValidString(got) || !strings.HasPrefix(s, got) || (n >= len(s) && got != s) {
			t.Errorf("Clip(%q, %d) = %q", s, n, got)
		}
	}
	if got := Clip(s, 2); got != "h" {
		t.Errorf("Clip in a rune = %q", got)
	}
}
