// Package when finds the times a text names — "on 7 July, 2023", "in May
// 2023", "last week", "three days ago", "the week before August 3, 2023" —
// and resolves each to a half-open range of time [From, To) against a
// reference time (when the text was written or asked).
//
// It is deliberately small and English-only: explicit dates (day, month and
// year in the usual orders, ISO 8601), months and years, and the common
// relative expressions (yesterday, today, last/this/next week, weekend,
// month or year, N units ago, last Friday). Vague words ("recently",
// "lately", "the summer") name no range. A day without a year ("on 3
// June"), and a month without one ("in May"), is the latest such day or
// month that does not start after the reference time.
//
// Find is linear in the length of its input and bounded: it reads at most
// MaxText bytes and returns at most MaxRanges ranges. It is safe for
// concurrent use.
package when

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Bounds of Find.
const (
	MaxText   = 4096 // bytes of text read; the rest is ignored
	MaxRanges = 8    // ranges returned, in order of appearance
)

// Unit is the granularity of a range.
type Unit string

const (
	Day   Unit = "day"
	Week  Unit = "week"
	Month Unit = "month"
	Year  Unit = "year"
)

// Range is a time a text names: [From, To), in the reference time's
// location.
type Range struct {
	From, To time.Time
	Unit     Unit
	Text     string // the words that named it, as written (a non-breaking space as a space)
}

// Contains reports whether t is in [From, To).
func (r Range) Contains(t time.Time) bool { return !t.Before(r.From) && t.Before(r.To) }

var months = map[string]time.Month{
	"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
	"may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
	"september": 9, "sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11, "nov": 11,
	"december": 12, "dec": 12,
}

var weekdays = map[string]time.Weekday{
	"sunday": 0, "monday": 1, "tuesday": 2, "wednesday": 3, "thursday": 4, "friday": 5, "saturday": 6,
}

var numbers = map[string]int{
	"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
	"eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2,
}

const (
	monthRE = `(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?`
	dayRE   = `([0-9]{1,2})(?:st|nd|rd|th)?`
	yearRE  = `((?:19|20)[0-9]{2})`
	numRE   = `([0-9]{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|couple of)`
	unitRE  = `(day|week|weekend|month|year)s?`
)

// A pattern turns a match (lower-cased text, submatch indices) into a range.
type pattern struct {
	re      *regexp.Regexp
	resolve func(m []string, now time.Time) (Range, bool)
}

// Patterns are tried at every position in this order; the first that
// matches there wins and its text is consumed. They are compiled on first
// use, not when a program that never reads a date starts.
var patterns = sync.OnceValue(func() []pattern {
	return []pattern{
		{regexp.MustCompile(`\b([0-9]{4})-([0-9]{2})-([0-9]{2})\b`), func(m []string, now time.Time) (Range, bool) {
			y, _ := strconv.Atoi(m[1])
			mo, _ := strconv.Atoi(m[2])
			d, _ := strconv.Atoi(m[3])
			return day(y, time.Month(mo), d, now)
		}},
		{regexp.MustCompile(`\b` + dayRE + `(?: of)? ` + monthRE + `,? ` + yearRE + `\b`), func(m []string, now time.Time) (Range, bool) {
			d, _ := strconv.Atoi(m[1])
			y, _ := strconv.Atoi(m[3])
			return day(y, months[m[2]], d, now)
		}},
		{regexp.MustCompile(`\b` + monthRE + ` ` + dayRE + `,? ` + yearRE + `\b`), func(m []string, now time.Time) (Range, bool) {
			d, _ := strconv.Atoi(m[2])
			y, _ := strconv.Atoi(m[3])
			return day(y, months[m[1]], d, now)
		}},
		{regexp.MustCompile(`\b` + monthRE + `,? (?:of )?` + yearRE + `\b`), func(m []string, now time.Time) (Range, bool) {
			y, _ := strconv.Atoi(m[2])
			return month(y, months[m[1]], now)
		}},
		{regexp.MustCompile(`\b` + dayRE + `(?: of)? ` + monthRE + `\b`), func(m []string, now time.Time) (Range, bool) {
			d, _ := strconv.Atoi(m[1])
			return latestDay(months[m[2]], d, now)
		}},
		{regexp.MustCompile(`\b(?:on|since|by|until|from|before|after) ` + monthRE + ` ` + dayRE + `\b`), func(m []string, now time.Time) (Range, bool) {
			d, _ := strconv.Atoi(m[2])
			return latestDay(months[m[1]], d, now)
		}},
		// A month without a year only after a word that makes it one: "may"
		// is also a verb.
		{regexp.MustCompile(`\b(in|during|since|by|until|from|early|late|mid|last|this|next|of) ` + monthRE + `\b`), func(m []string, now time.Time) (Range, bool) {
			mo := months[m[2]]
			y := now.Year()
			switch m[1] {
			case "next":
				if mo <= now.Month() {
					y++
				}
			case "this":
			case "last":
				if mo >= now.Month() {
					y--
				}
			default:
				if mo > now.Month() {
					y--
				}
			}
			return month(y, mo, now)
		}},
		{regexp.MustCompile(`\b(?:in|during|since|by|until|from|of|early|late|mid|throughout|year) ` + yearRE + `\b`), func(m []string, now time.Time) (Range, bool) {
			y, _ := strconv.Atoi(m[1])
			return year(y, now)
		}},
		{regexp.MustCompile(`\b(yesterday|today|tonight|last night|this morning|this afternoon|this evening)\b`), func(m []string, now time.Time) (Range, bool) {
			d := midnight(now)
			if m[1] == "yesterday" || m[1] == "last night" {
				d = d.AddDate(0, 0, -1)
			}
			return Range{From: d, To: d.AddDate(0, 0, 1), Unit: Day}, true
		}},
		{regexp.MustCompile(`\b(last|this|next|past) (week|weekend|month|year)\b`), func(m []string, now time.Time) (Range, bool) {
			off := map[string]int{"last": -1, "past": -1, "this": 0, "next": 1}[m[1]]
			return relative(m[2], off, now), true
		}},
		{regexp.MustCompile(`\b` + numRE + ` ` + unitRE + ` ago\b`), func(m []string, now time.Time) (Range, bool) {
			n, ok := count(m[1])
			if !ok {
				return Range{}, false
			}
			return relative(m[2], -n, now), true
		}},
		{regexp.MustCompile(`\b(?:last|on|this past) (sunday|monday|tuesday|wednesday|thursday|friday|saturday)\b`), func(m []string, now time.Time) (Range, bool) {
			d := midnight(now)
			back := (int(d.Weekday()) - int(weekdays[m[1]]) + 7) % 7
			if back == 0 {
				back = 7
			}
			d = d.AddDate(0, 0, -back)
			return Range{From: d, To: d.AddDate(0, 0, 1), Unit: Day}, true
		}},
	}
})

// before matches "the week before", "two days before", "last weekend
// before" just ahead of a date: the range becomes the span that leads up
// to it.
var before = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\b(?:the |last |` + numRE + ` )?` + unitRE + ` (?:before|prior to)\s*$`)
})

// beforeReach is how far before a date Find looks for "... before".
const beforeReach = 40

// Find returns the ranges text names, in order of appearance, resolved
// against now.
func Find(text string, now time.Time) []Range {
	if len(text) > MaxText {
		text = text[:MaxText]
	}
	// Every word matched is ASCII, so only ASCII is lower-cased: the copy's
	// byte offsets are the text's.
	text = strings.ReplaceAll(text, "\u00a0", " ")
	low := asciiLower(text)
	type found struct {
		at, end int
		r       Range
	}
	var all []found
	taken := make([]bool, len(low)+1)
	for _, p := range patterns() {
		for _, loc := range p.re.FindAllStringSubmatchIndex(low, -1) {
			if overlaps(taken, loc[0], loc[1]) {
				continue
			}
			m := make([]string, len(loc)/2)
			for i := range m {
				if loc[2*i] >= 0 {
					m[i] = low[loc[2*i]:loc[2*i+1]]
				}
			}
			r, ok := p.resolve(m, now)
			if !ok {
				continue
			}
			start := loc[0]
			// "two weeks before" is short: look back a few words only, so
			// that Find stays linear.
			back := max(0, start-beforeReach)
			if b := before().FindStringSubmatchIndex(low[back:start]); b != nil && !overlaps(taken, back+b[0], start) {
				if span, ok := beforeSpan(low[back+b[0]:start], r); ok {
					r, start = span, back+b[0]
				}
			}
			r.Text = strings.TrimSpace(text[start:loc[1]])
			for i := start; i < loc[1]; i++ {
				taken[i] = true
			}
			all = append(all, found{start, loc[1], r})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].at < all[j].at })
	out := make([]Range, 0, min(len(all), MaxRanges))
	for _, f := range all {
		if len(out) == MaxRanges {
			break
		}
		out = append(out, f.r)
	}
	return out
}

func overlaps(taken []bool, from, to int) bool {
	for i := from; i < to; i++ {
		if taken[i] {
			return true
		}
	}
	return false
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// beforeSpan turns "the week before" + anchor into the span that ends where
// the anchor starts.
func beforeSpan(words string, anchor Range) (Range, bool) {
	m := before().FindStringSubmatch(words)
	if m == nil {
		return Range{}, false
	}
	n := 1
	if m[1] != "" {
		var ok bool
		if n, ok = count(m[1]); !ok {
			return Range{}, false
		}
	}
	from := anchor.From
	switch m[2] {
	case "day":
		from = from.AddDate(0, 0, -n)
	case "week", "weekend":
		from = from.AddDate(0, 0, -7*n)
	case "month":
		from = from.AddDate(0, -n, 0)
	case "year":
		from = from.AddDate(-n, 0, 0)
	}
	u := Unit(m[2])
	if u == "weekend" {
		u = Week
	}
	return Range{From: from, To: anchor.From, Unit: u}, true
}

func count(s string) (int, bool) {
	if n, ok := numbers[s]; ok {
		return n, true
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n > 0 && n <= 500
}

func midnight(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, t.Location())
}

func validYear(y int) bool { return y >= 1900 && y <= 2199 }

func day(y int, m time.Month, d int, now time.Time) (Range, bool) {
	if !validYear(y) || m < 1 || m > 12 || d < 1 || d > 31 {
		return Range{}, false
	}
	t := time.Date(y, m, d, 0, 0, 0, 0, now.Location())
	if t.Month() != m { // 31 June
		return Range{}, false
	}
	return Range{From: t, To: t.AddDate(0, 0, 1), Unit: Day}, true
}

func latestDay(m time.Month, d int, now time.Time) (Range, bool) {
	r, ok := day(now.Year(), m, d, now)
	if ok && r.From.After(now) {
		r, ok = day(now.Year()-1, m, d, now)
	}
	return r, ok
}

func month(y int, m time.Month, now time.Time) (Range, bool) {
	if !validYear(y) || m < 1 || m > 12 {
		return Range{}, false
	}
	t := time.Date(y, m, 1, 0, 0, 0, 0, now.Location())
	return Range{From: t, To: t.AddDate(0, 1, 0), Unit: Month}, true
}

func year(y int, now time.Time) (Range, bool) {
	if !validYear(y) {
		return Range{}, false
	}
	t := time.Date(y, 1, 1, 0, 0, 0, 0, now.Location())
	return Range{From: t, To: t.AddDate(1, 0, 0), Unit: Year}, true
}

// relative is the unit (week, weekend, month, year) off units from the one
// now is in: -1 the last, 0 this, 1 the next. Weeks start on Monday; a
// weekend is Saturday and Sunday.
func relative(unit string, off int, now time.Time) Range {
	d := midnight(now)
	switch unit {
	case "day":
		d = d.AddDate(0, 0, off)
		return Range{From: d, To: d.AddDate(0, 0, 1), Unit: Day}
	case "week":
		mon := d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7))
		from := mon.AddDate(0, 0, 7*off)
		return Range{From: from, To: from.AddDate(0, 0, 7), Unit: Week}
	case "weekend":
		mon := d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7))
		sat := mon.AddDate(0, 0, 5+7*off)
		if off == 0 && d.Weekday() == time.Sunday {
			sat = d.AddDate(0, 0, -1)
		}
		return Range{From: sat, To: sat.AddDate(0, 0, 2), Unit: Week}
	case "month":
		from := time.Date(d.Year(), d.Month()+time.Month(off), 1, 0, 0, 0, 0, d.Location())
		return Range{From: from, To: from.AddDate(0, 1, 0), Unit: Month}
	default: // year
		from := time.Date(d.Year()+off, 1, 1, 0, 0, 0, 0, d.Location())
		return Range{From: from, To: from.AddDate(1, 0, 0), Unit: Year}
	}
}
