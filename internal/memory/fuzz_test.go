package memory

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/ragmem/ragmem/internal/clean"
)

// FuzzParseFile: ParseFile never panics, fails only with a *ParseError with
// a line inside the file, and what it accepts round-trips through
// FormatEntry.
func FuzzParseFile(f *testing.F) {
	f.Add([]byte(seedFile))
	f.Add([]byte("---\ntitle: x\nwhenToUse: a\n---\nbody\n\n---\n\n---\ntitle: y\nwhenToUse: [b, c]\n---\nmore"))
	f.Add([]byte("---\ntitle: &a x\nwhenToUse: *a\ntags: [*a, *a]\n---\n"))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("\uFEFF---\r\ntitle: crlf\r\nwhenToUse: a\r\n---\r\nbody\r\n"))
	f.Add(FormatEntry(Frontmatter{Title: "Sealed", WhenToUse: []string{"seal"}, Importance: Medium, Author: AuthorExtraction}, "An extracted body."))
	f.Add([]byte("---\ntitle: x\nwhenToUse: a\nauthor: extraction\nextractedHash: 00ff\n---\nbody\n"))
	f.Add([]byte("---\ntitle: x\nwhenToUse: a\nauthor: user\nextractedHash: [1, 2]\n---\nbody\n"))
	f.Add([]byte("---\ntitle: x\nwhenToUse: a\nauthor: Robot\n---\nbody\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := ParseFile(data)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *ParseError", err)
			}
			if pe.Line < 0 || pe.Line > strings.Count(string(data), "\n")+2 {
				t.Fatalf("line %d outside the file", pe.Line)
			}
			return
		}
		if len(es) == 0 {
			t.Fatal("no entries and no error")
		}
		for _, e := range es {
			fm := e.Frontmatter
			if validateFrontmatter(&fm) != nil {
				continue
			}
			out := FormatEntry(fm, e.Body)
			again, err := ParseFile(out)
			if err != nil {
				t.Fatalf("formatted entry does not parse: %v\n%s", err, out)
			}
			if len(again) != 1 {
				t.Fatalf("formatted entry parses as %d entries\n%s", len(again), out)
			}
			if !reflect.DeepEqual(again[0].Frontmatter, fm) {
				t.Fatalf("frontmatter changed:\n%+v\n%+v", again[0].Frontmatter, fm)
			}
			want := strings.TrimRightFunc(neutralizeBody(strings.Trim(clean.Text(e.Body), "\n")), unicode.IsSpace)
			if again[0].Body != want {
				t.Fatalf("body changed:\n%q\n%q", again[0].Body, want)
			}
		}
	})
}

// FuzzSlugify: a slug is always a safe, non-empty, single path element,
// and Slugify is idempotent.
func FuzzSlugify(f *testing.F) {
	for _, s := range []string{"OAuth2 Integration", "../../etc/passwd", "..", "CON", "a/b\\c", "", "\x00", "é\u0301", strings.Repeat("ab ", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, title string) {
		s := Slugify(title)
		if s == "" || len(s) > maxSlugLen+len("-memory") {
			t.Fatalf("slug %q has bad length", s)
		}
		if !utf8.ValidString(s) || strings.ContainsAny(s, "/\\.\x00:*?\"<>| ") || strings.HasPrefix(s, "-") || strings.HasSuffix(s, "-") {
			t.Fatalf("unsafe slug %q", s)
		}
		if filepath.Base(s) != s || !validName(s) {
			t.Fatalf("slug %q is not a plain file name", s)
		}
		if Slugify(s) != s {
			t.Fatalf("not idempotent: %q -> %q", s, Slugify(s))
		}
		if reservedNames[s] {
			t.Fatalf("reserved name %q", s)
		}
	})
}
