package prefs

import (
	"strings"
	"testing"
)

// Unit tests of the detector's parts, pinning the boundaries that mutation
// testing found untested (docs/testing.md): clause splitting, quote masks,
// normalisation, pronoun rewriting and verb conjugation.

func TestClauses(t *testing.T) {
	for in, want := range map[string][]string{
		"a;b":               {"a", "b"},
		"a: b":              {"a", "b"},
		"at 12:30 ok":       {"at 12:30 ok"},
		"see http://x.y ok": {"see http://x.y ok"},
		"a - b":             {"a", "b"},
		"a-b":               {"a-b"},
		"a -b":              {"a -b"},
		"1,000 and more":    {"1,000 and more"},
		"tea, i think":      {"tea", "i think"},
		"tea,i think":       {"tea", "i think"},
		"2,i think":         {"2", "i think"},
		"tea and i do":      {"tea", "and i do"},
		"tea and cheese":    {"tea and cheese"},
		"nurse ; ok":        {"nurse", "ok"},
		"x (y) z":           {"x", "y", "z"},
		"x — y":             {"x", "y"},
		"so, i think":       {"so", "i think"},
		"a:":                {"a"},
		":b":                {"b"},
		"7:x":               {"7", "x"},
		"a:5":               {"a", "5"},
		":5":                {"5"},
		",i think":          {"i think"},
		"5,":                {"5,"},
		"1,2 and i think":   {"1,2", "and i think"},
		"a -":               {"a -"},
		"- x":               {"- x"},
	} {
		var got []string
		for _, sp := range clauses(in) {
			got = append(got, in[sp.start:sp.end])
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("clauses(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestQuoteMask(t *testing.T) {
	for in, want := range map[string]string{
		`a "b" c`:     "0011100",
		"a `b` c":     "0011100",
		"a “b” c":     "00111111100",
		"a ” b":       "0000000",
		`x "y`:        "0011",
		"a `\"b\"` c": "001111100",
		"“a “b” c” d": "1111111111111111100",
	} {
		m := quoteMask(in)
		if len(m) != len(in)+1 {
			t.Fatalf("quoteMask(%q) has %d entries", in, len(m))
		}
		var b strings.Builder
		for i := range len(in) {
			if m[i] {
				b.WriteByte('1')
			} else {
				b.WriteByte('0')
			}
		}
		if b.String() != want {
			t.Errorf("quoteMask(%q) = %s, want %s", in, b.String(), want)
		}
	}
	// An invalid byte at the end of a line: the mask stays in bounds.
	if m := quoteMask("\"a\xff"); !m[1] || !m[2] {
		t.Errorf("quoteMask with a trailing invalid byte: %v", m)
	}
}

func TestNormalizeKeepsTheMapBack(t *testing.T) {
	msg := "a \n b\u00a0 c\x00d"
	n := normalize(msg)
	if n.s != "a\nb c d" {
		t.Fatalf("normalize(%q) = %q", msg, n.s)
	}
	if len(n.start) != len(n.s) || len(n.end) != len(n.s) {
		t.Fatalf("map of %d and %d entries for %d bytes", len(n.start), len(n.end), len(n.s))
	}
	for i, want := range []string{"a", "\n", "b", "\u00a0", "c", "\x00", "d"} {
		if got := n.original(i, i+1); got != want {
			t.Errorf("byte %d of %q maps back to %q, want %q", i, n.s, got, want)
		}
	}
	if n.original(2, 2) != "" || n.original(-1, 1) != "" || n.original(0, 99) != "" {
		t.Error("an empty or out-of-range span maps back to text")
	}
	if in := DetectPreferenceIntent("Hello \nI'm a nurse"); in == nil || in.Match != "I'm a nurse" {
		t.Errorf("match after a space before a line break: %+v", in)
	}
}

func TestPronounsAndVerbs(t *testing.T) {
	for in, want := range map[string][2]string{
		"i am tired":     {"they are tired", "the user is tired"},
		"I was there":    {"they were there", "the user was there"},
		"so do I":        {"so do they", "so do the user"},
		"i, am":          {"they, am", "the user, am"},
		"my team and me": {"their team and them", "the user's team and the user"},
	} {
		if got := thirdPerson(in); got != want[0] {
			t.Errorf("thirdPerson(%q) = %q, want %q", in, got, want[0])
		}
		if got := imperativePronouns(in); got != want[1] {
			t.Errorf("imperativePronouns(%q) = %q, want %q", in, got, want[1])
		}
	}
	for in, want := range map[string]string{
		"bake": "bakes", "fix": "fixes", "buzz": "buzzes", "fly": "flies", "play": "plays", "go": "goes",
		"Zip": "Zips", "naïve": "naïve", "a": "as", "z": "zes", "can": "can", "walked": "walked",
		"re-use": "re-uses", "double-check": "double-checks", "-x": "-x", "x-": "x-", "3d-print": "3d-print", "y": "ys",
	} {
		if got := conjugate3(in); got != want {
			t.Errorf("conjugate3(%q) = %q, want %q", in, got, want)
		}
	}
	if in := DetectPreferenceIntent("Remember that I do not eat meat"); in == nil || in.Content != "User does not eat meat" {
		t.Errorf("remember … do not: %+v", in)
	}
	if in := DetectPreferenceIntent("Remember that I do eat meat"); in == nil || in.Content != "User does eat meat" {
		t.Errorf("remember … do: %+v", in)
	}
	for msg, want := range map[string]string{
		"Remember that I do":                      "User does",
		"Remember that I do.":                     "User does",
		"Remember that I cook!":                   "User cooks",
		"Remember that I fly, mostly.":            "User flies, mostly",
		"Remember that I can not swim":            "User can not swim",
		"Remember that I re-use my notes":         "User re-uses their notes",
		"Remember that I ❤️ Go":                   "User ❤ Go",
		"Remember that my wife codes more than I": "User's wife codes more than they",
	} {
		if in := DetectPreferenceIntent(msg); in == nil || in.Content != want {
			t.Errorf("%q: %+v, want %q", msg, in, want)
		}
	}
}

func TestDetectorEdges(t *testing.T) {
	for msg, want := range map[string]string{
		"🎉":                                                     "",
		"🎉 I'm a nurse":                                         "User is a nurse",
		"Translate this:\nI'm a nurse.":                         "",
		"Translate this:":                                       "",
		"Translate item 5: I'm a nurse.":                        "",
		"Meeting at 10:30: I'm a nurse.":                        "User is a nurse",
		"um uh hmm lol yo oh ah I'm a nurse":                    "User is a nurse",
		"um uh hmm lol yo oh ah yeah I'm a nurse":               "", // at most seven fillers before a statement
		"um uh hmm lol yo oh ah yeah yes sure fwiw I'm a nurse": "",
		"I'm a big data engineer":                               "User is a big data engineer",
		"I'm a big":                                             "",
		"I'm a big deal":                                        "User is a big deal",
		"5 is my age":                                           "",
		"Summarize http://example.com; I'm a nurse.":            "User is a nurse",
	} {
		in := DetectPreferenceIntent(msg)
		got := ""
		if in != nil {
			got = in.Content
		}
		if got != want {
			t.Errorf("DetectPreferenceIntent(%q) = %q, want %q", msg, got, want)
		}
	}
	for _, c := range []byte("/0:9a") {
		if isDigit(c) != (c >= '0' && c <= '9') {
			t.Errorf("isDigit(%q)", c)
		}
	}
	if nextWord("abc", 0) != "abc" || nextWord("  I'm x", 0) != "i'm" || nextWord("ab", 2) != "" {
		t.Error("nextWord")
	}
}

// A greeting and its comma before a statement whose first word does not
// start a clause after a comma ("don't", "speak", "bear"): the lead-in takes
// the comma, so the statement is found with exactly its words.
func TestGreetingBeforeStatement(t *testing.T) {
	for _, tc := range []struct{ msg, content, match string }{
		{"Hello, don't forget that I live in Berlin", "User lives in Berlin", "don't forget that I live in Berlin"},
		{"Hello, never forget that I live in Berlin", "User lives in Berlin", "never forget that I live in Berlin"},
		{"Hi, do not forget that I have two cats.", "User has two cats", "do not forget that I have two cats"},
		{"Hey there, bear in mind that I work night shifts!", "User works night shifts", "bear in mind that I work night shifts"},
		{"Dear Sam, don’t forget that I’m colour-blind", "User is colour-blind", "don’t forget that I’m colour-blind"},
		{"Hi, speak to me like I'm 5", "Explain like the user is 5 years old", "speak to me like I'm 5"},
		{"Okay, so, in the future always answer in French", "Always answer in French", "in the future always answer in French"},
		{"Just so you know, don't forget that I cook", "User cooks", "don't forget that I cook"},
		{"So you know, bear in mind that I'm colour-blind", "User is colour-blind", "bear in mind that I'm colour-blind"},
		{"Got it. , don't forget that I cook", "User cooks", "don't forget that I cook"},
	} {
		in := DetectPreferenceIntent(tc.msg)
		if in == nil || in.Content != tc.content || in.Match != tc.match {
			t.Errorf("DetectPreferenceIntent(%q) = %+v, want content %q, match %q", tc.msg, in, tc.content, tc.match)
		}
	}
	for msg, want := range map[string]string{
		"I'm a nurse -":                 "User is a nurse",
		"I'm a nurse —":                 "User is a nurse",
		"I prefer short answers –":      "User prefers short answers",
		"I'm a front- and back-end dev": "User is a front- and back-end dev",
	} {
		if in := DetectPreferenceIntent(msg); in == nil || in.Content != want {
			t.Errorf("DetectPreferenceIntent(%q) = %+v, want content %q", msg, in, want)
		}
	}
	for _, msg := range []string{"Hello, don't forget the milk", "Hi, speak slowly please", "Hello, I'm a bit lost"} {
		if in := DetectPreferenceIntent(msg); in != nil {
			t.Errorf("DetectPreferenceIntent(%q) = %+v, want nil", msg, in)
		}
	}
}

// A statement after a comma that ends words which are no lead-in ("Thanks
// for tips 1 and 2, …"): the comma starts a clause before "don't", "bear"
// and "speak" as it does before "never" or "keep", so the statement is found
// with exactly its words.
func TestStatementAfterACommaClause(t *testing.T) {
	for _, tc := range []struct{ msg, content, match string }{
		{"Thanks for tips 1 and 2, don't forget that I live in Berlin", "User lives in Berlin", "don't forget that I live in Berlin"},
		{"Thanks for the tips, don’t forget that I’m colour-blind", "User is colour-blind", "don’t forget that I’m colour-blind"},
		{"Thanks for tips 1 and 2, bear in mind that I work night shifts!", "User works night shifts", "bear in mind that I work night shifts"},
		{"That helped a lot, speak to me like I'm 5", "Explain like the user is 5 years old", "speak to me like I'm 5"},
		{"Thanks for tips 1 and 2, I'm a nurse", "User is a nurse", "I'm a nurse"},
	} {
		in := DetectPreferenceIntent(tc.msg)
		if in == nil || in.Content != tc.content || in.Match != tc.match {
			t.Errorf("DetectPreferenceIntent(%q) = %+v, want content %q, match %q", tc.msg, in, tc.content, tc.match)
		}
	}
	for _, msg := range []string{"Thanks for tips 1 and 2, don't forget the milk", "Thanks, speak slowly please"} {
		if in := DetectPreferenceIntent(msg); in != nil {
			t.Errorf("DetectPreferenceIntent(%q) = %+v, want nil", msg, in)
		}
	}
}

func TestContentCapExact(t *testing.T) {
	word := strings.Repeat("x", 9) + " " // 10 runes
	exact := strings.TrimSpace(strings.Repeat(word, 30))
	exact += strings.Repeat("y", MaxIntentContent-len([]rune(exact)))
	if got := finish(exact); got != exact {
		t.Errorf("content of exactly %d runes was cut to %d", MaxIntentContent, len([]rune(got)))
	}
	over := strings.Repeat(word, 31)
	if got := finish(over); len([]rune(got)) > MaxIntentContent || strings.HasSuffix(got, " ") || len(got)%10 != 9 {
		t.Errorf("content of %d runes cut to %q (%d runes): want a cut at a word boundary", len([]rune(over)), got, len([]rune(got)))
	}
	shifted := "ab " + strings.Repeat(word, 31) // the 300th rune falls inside a word
	if got := finish(shifted); got != strings.TrimRight(shifted[:strings.LastIndexByte(shifted[:300], ' ')], " ") {
		t.Errorf("a cut inside a word moves back to the space before it: got %d runes", len([]rune(got)))
	}
	half := strings.Repeat("x", 150) + " " + strings.Repeat("y", 200) // the only space at half the cut
	if got := finish(half); len([]rune(got)) != MaxIntentContent {
		t.Errorf("a space at exactly half the cut: cut to %d runes, want %d (inside the word)", len([]rune(got)), MaxIntentContent)
	}
	fits := strings.Repeat(word, 29) + strings.Repeat("x", 10) + " more" // 300 runes of whole words, then more
	if got := finish(fits); got != fits[:300] {
		t.Errorf("whole words of exactly %d runes before a space: cut to %d runes", MaxIntentContent, len([]rune(got)))
	}
	long := "a " + strings.Repeat("z", 400)
	if got := finish(long); len([]rune(got)) != MaxIntentContent {
		t.Errorf("one long word: cut to %d runes, want %d (inside the word)", len([]rune(got)), MaxIntentContent)
	}
}
