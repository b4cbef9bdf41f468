package memory

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ragmem/ragmem/internal/clean"
	"github.com/ragmem/ragmem/internal/when"
)

// Time expressions for memory searches ("last week", "in May", "since
// 2026-03-01"), resolved against a clock into a half-open range [from, to).
// ResolveTime is the one entry point; the periods themselves are read by
// search/when, the resolver questions use too.

// maxWhenBytes bounds a time expression.
const maxWhenBytes = 200

var units = map[string]string{
	"day": "day", "days": "day", "week": "week", "weeks": "week", "month": "month", "months": "month",
	"year": "year", "years": "year",
}

// ResolveTime resolves a time expression against now (in now's location)
// into [from, to); a zero bound is open. It understands:
//
//	today, yesterday, this/last week (weeks start on Monday), this/last month, this/last year
//	last|past N days|weeks|months|years   (up to now)
//	N days|weeks|months|years ago         (that day, week, month or year)
//	May, in May, May 2025, in May 2025    (a month alone is the latest May that has begun)
//	3 May 2025, May 3, 2025, last Friday  (and every other period search/when reads)
//	2025, in 2025, 2025-05, 2025-05-03, an ISO 8601 time
//	since X, after X, before X, until X, between X and Y, from X to Y
//
// Anything else is ErrInvalid.
func ResolveTime(expr string, now time.Time) (from, to time.Time, err error) {
	if len(expr) > maxWhenBytes {
		return from, to, fmt.Errorf("%w: the time expression is longer than %d bytes", ErrInvalid, maxWhenBytes)
	}
	e := strings.Join(strings.Fields(strings.ToLower(clean.Line(expr))), " ")
	e = strings.TrimSuffix(strings.TrimPrefix(e, "during "), ".")
	bad := func() (time.Time, time.Time, error) {
		return time.Time{}, time.Time{}, fmt.Errorf("%w: cannot read the time expression %q (try \"last week\", \"in May\", \"since 2026-03-01\")", ErrInvalid, clean.Clip(expr, 60))
	}
	if e == "" {
		return bad()
	}
	for _, p := range []struct{ a, b string }{{"between ", " and "}, {"from ", " to "}} {
		if rest, ok := strings.CutPrefix(e, p.a); ok {
			x, y, ok := strings.Cut(rest, p.b)
			if !ok {
				return bad()
			}
			f1, _, err1 := period(x, now)
			_, t2, err2 := period(y, now)
			if err1 != nil || err2 != nil || !t2.After(f1) {
				return bad()
			}
			return f1, t2, nil
		}
	}
	for _, p := range []string{"since ", "after ", "before ", "until "} {
		if rest, ok := strings.CutPrefix(e, p); ok {
			f, t, err := period(rest, now)
			if err != nil {
				return bad()
			}
			switch p {
			case "since ":
				return f, time.Time{}, nil
			case "after ":
				return t, time.Time{}, nil
			case "before ":
				return time.Time{}, f, nil
			default:
				return time.Time{}, t, nil
			}
		}
	}
	f, t, err := period(e, now)
	if err != nil {
		return bad()
	}
	return f, t, nil
}

// period resolves a single period ("last week", "May 2025", ...). The
// periods a question or a text can name are search/when's; this adds the
// forms only an expression typed as a filter has: a span up to now ("last 3
// days"), a bare year or year-month, and a timestamp.
func period(e string, now time.Time) (time.Time, time.Time, error) {
	e = strings.TrimSpace(e)
	for _, p := range []string{"in ", "on "} {
		e = strings.TrimPrefix(e, p)
	}
	loc := now.Location()
	f := strings.Fields(e)
	// last|past N units: from N units ago up to now
	if len(f) == 3 && (f[0] == "last" || f[0] == "past") {
		n, err := strconv.Atoi(f[1])
		if u, ok := units[f[2]]; ok && err == nil && n > 0 && n <= 10000 {
			var from time.Time
			switch u {
			case "day":
				from = now.AddDate(0, 0, -n)
			case "week":
				from = now.AddDate(0, 0, -7*n)
			case "month":
				from = now.AddDate(0, -n, 0)
			default:
				from = now.AddDate(-n, 0, 0)
			}
			return from, now.Add(time.Nanosecond), nil
		}
	}
	// A period search/when reads, when it is the whole expression ("in" is
	// how a text names a bare month).
	for _, text := range []string{e, "in " + e} {
		if rs := when.Find(text, now); len(rs) == 1 && strings.TrimPrefix(strings.ToLower(rs[0].Text), "in ") == e {
			return rs[0].From, rs[0].To, nil
		}
	}
	if len(f) == 1 {
		if len(e) == 4 {
			if y, err := strconv.Atoi(e); err == nil && y >= 1 {
				s := time.Date(y, 1, 1, 0, 0, 0, 0, loc)
				return s, s.AddDate(1, 0, 0), nil
			}
		}
		if t, err := time.ParseInLocation("2006-01", e, loc); err == nil {
			return t, t.AddDate(0, 1, 0), nil
		}
		if t, err := time.ParseInLocation("2006-01-02", e, loc); err == nil {
			return t, t.AddDate(0, 0, 1), nil
		}
	}
	if t, err := ParseTime(e); err == nil {
		return t, t.Add(time.Second), nil
	}
	return time.Time{}, time.Time{}, ErrInvalid
}

// TimeRange is a half-open range [Since, Until) of times; a zero bound is
// open.
type TimeRange struct {
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
}

// IsZero reports whether the range is open on both sides.
func (r TimeRange) IsZero() bool { return r.Since.IsZero() && r.Until.IsZero() }

// Contains reports whether t is in the range.
func (r TimeRange) Contains(t time.Time) bool {
	return (r.Since.IsZero() || !t.Before(r.Since)) && (r.Until.IsZero() || t.Before(r.Until))
}

// Range combines explicit bounds and a time expression (resolved at now)
// into one range: the intersection of both.
func Range(since, until time.Time, when string, now time.Time) (TimeRange, error) {
	r := TimeRange{Since: since, Until: until}
	if strings.TrimSpace(when) != "" {
		f, t, err := ResolveTime(when, now)
		if err != nil {
			return r, err
		}
		if !f.IsZero() && (r.Since.IsZero() || f.After(r.Since)) {
			r.Since = f
		}
		if !t.IsZero() && (r.Until.IsZero() || t.Before(r.Until)) {
			r.Until = t
		}
	}
	if !r.Since.IsZero() && !r.Until.IsZero() && !r.Until.After(r.Since) {
		return r, fmt.Errorf("%w: the time range is empty (since %s, until %s)", ErrInvalid, r.Since.Format(time.RFC3339), r.Until.Format(time.RFC3339))
	}
	return r, nil
}

// ParseAsOf reads the time of a point-in-time query (SearchRequest.AsOf):
// an RFC 3339 time is that instant; a date ("2026-05-01") or any period
// ResolveTime reads ("last March", "in May 2025", "yesterday") is its last
// instant, what held at the close of it. An expression with no end
// ("since May") is ErrInvalid.
func ParseAsOf(expr string, now time.Time) (time.Time, error) {
	e := strings.TrimSpace(expr)
	if t, err := time.Parse(time.RFC3339Nano, e); err == nil {
		return t, nil
	}
	_, to, err := ResolveTime(e, now)
	if err != nil {
		return time.Time{}, err
	}
	if to.IsZero() {
		return time.Time{}, fmt.Errorf("%w: %q names no end; as of takes a time, a date or a period (\"2026-05-01\", \"last March\")", ErrInvalid, clean.Clip(expr, 60))
	}
	return to.Add(-time.Nanosecond), nil
}
