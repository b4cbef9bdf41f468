package prefs

import (
	"regexp"
	"sync"
)

// lazyRE is a regular expression compiled on first use, so that the many
// ragmem processes that never detect a preference (a search, a client of
// the owner) do not compile it at start. It is safe for concurrent use.
type lazyRE struct {
	expr string
	get  func() *regexp.Regexp
}

func lazyRegexp(expr string) *lazyRE {
	return &lazyRE{expr: expr, get: sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })}
}

// MatchString is regexp.Regexp.MatchString.
func (l *lazyRE) MatchString(s string) bool { return l.get().MatchString(s) }

// FindStringIndex is regexp.Regexp.FindStringIndex.
func (l *lazyRE) FindStringIndex(s string) []int { return l.get().FindStringIndex(s) }

// FindStringSubmatchIndex is regexp.Regexp.FindStringSubmatchIndex.
func (l *lazyRE) FindStringSubmatchIndex(s string) []int { return l.get().FindStringSubmatchIndex(s) }

// SubexpNames is regexp.Regexp.SubexpNames.
func (l *lazyRE) SubexpNames() []string { return l.get().SubexpNames() }

// ReplaceAllString is regexp.Regexp.ReplaceAllString.
func (l *lazyRE) ReplaceAllString(src, repl string) string {
	return l.get().ReplaceAllString(src, repl)
}
