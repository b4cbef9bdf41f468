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
