package pattern

import (
	"strings"
	"testing"
)

func TestKinds(t *testing.T) {
	cases := []struct {
		pattern string
		kind    Kind
	}{
		{"auth", Substring},
		{"auth|login|security", Alternatives},
		{"implement*auth", Wildcard},
		{"auth?", Wildcard},
		{"implement.*auth", Regex},
		{`\bapi\b`, Regex},
		{"oauth|social.*auth", Regex},
		{"When implementing security features", Natural},
		{"C++ (templates", Natural}, // looks like a regex, does not compile: read as text
		{"node.js", Substring},
	}
	for _, c := range cases {
		p, err := Compile(c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if p.Kind() != c.kind {
			t.Errorf("%q: kind %s, want %s", c.pattern, p.Kind(), c.kind)
		}
	}
	for _, bad := range []string{"", "   ", strings.Repeat("x", MaxLen+1)} {
		if _, err := Compile(bad); err == nil {
			t.Errorf("%q compiled", bad)
		}
	}
}

// The table of seed 001 ("Pattern Matching", Examples) for the literal
// forms, plus the seed 000 forms.
func TestLexical(t *testing.T) {
	cases := []struct {
		pattern, text string
		want          bool
	}{
		{"auth|login|security", "add login page", true},
		{"auth|login|security", "add user page", false},
		{"implement.*auth", "implement authentication", true},
		{"implement.*auth", "auth module", false},
		{"implement*auth", "implement the oauth flow", true},
		{"implement.{0,5}auth", "implement  auth", true},
		{"implement.{0,5}auth", "implement the whole auth", false},
		{"auth", "Add OAuth integration", true}, // substring, as the seed
		{"AUTH", "oauth", true},
		{"C++ (templates", "a c++ (templates) question", true},
		{"password reset", "build the password reset page", true},
	}
	for _, c := range cases {
		p, err := Compile(c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.MatchLexical(strings.ToLower(c.text)); got != c.want {
			t.Errorf("%q on %q: %v, want %v", c.pattern, c.text, got, c.want)
		}
	}
}

func TestCoverageWeights(t *testing.T) {
	cov := func(pat, task string) float64 {
		p, err := Compile(pat)
		if err != nil {
			t.Fatal(err)
		}
		return p.Coverage(Stems(task))
	}
	// implement and feature are generic task words: half weight each.
	if c := cov("When implementing security features", "Implement password reset feature"); c != 0.5 {
		t.Errorf("coverage %v, want 0.5", c)
	}
	if c := cov("When implementing security features", "security"); c != 0.5 {
		t.Errorf("coverage %v, want 0.5", c)
	}
	if c := cov("When implementing security features", "implementing security features now"); c != 1 {
		t.Errorf("coverage %v, want 1", c)
	}
	// "auth" in a pattern is found in "authentication" (prefix of a stem),
	// but "password" is not found in "pass".
	if c := cov("auth tokens", "authentication token expiry"); c != 1 {
		t.Errorf("coverage %v, want 1", c)
	}
	if c := cov("password rules", "pass the rules"); c != 0.5 {
		t.Errorf("coverage %v, want 0.5", c)
	}
}

func TestStemSetCoversAsCovered(t *testing.T) {
	set := Stems("authentication tokens and configuration of the passes")
	ss := NewStemSet(set)
	for _, p := range []string{"auth", "token", "config", "pass", "password", "xyz", "to", "configur"} {
		if ss.Covers(p) != Covered(p, set) {
			t.Errorf("%q: StemSet %v, Covered %v", p, ss.Covers(p), Covered(p, set))
		}
	}
}

// FuzzCompile: any pattern compiles or fails cleanly, and matching never
// panics.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{"auth|login", "implement.*auth", "implement*auth", "auth?", "When implementing security features", "(", "a{1000}{1000}", "|||", "C++ (templates"} {
		f.Add(s, "Add OAuth integration to existing auth system developer")
	}
	f.Fuzz(func(t *testing.T, pat, text string) {
		p, err := Compile(pat)
		if err != nil {
			return
		}
		p.MatchLexical(strings.ToLower(text))
		if c := p.Coverage(Stems(text)); c < 0 || c > 1 {
			t.Fatalf("coverage %v", c)
		}
	})
}
