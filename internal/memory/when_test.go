package memory

import (
	"errors"
	"testing"
	"time"
)

// Time expressions resolve against the clock into [from, to); weeks start
// on Monday; a month alone is the latest one that has begun.
func TestResolveTime(t *testing.T) {
	now := time.Date(2026, 2, 11, 15, 30, 0, 0, time.UTC) // a Wednesday
	d := func(y int, m time.Month, day int) time.Time { return time.Date(y, m, day, 0, 0, 0, 0, time.UTC) }
	var zero time.Time
	for _, c := range []struct {
		expr     string
		from, to time.Time
	}{
		{"today", d(2026, 2, 11), d(2026, 2, 12)},
		{"Yesterday", d(2026, 2, 10), d(2026, 2, 11)},
		{"this week", d(2026, 2, 9), d(2026, 2, 16)},
		{"last week", d(2026, 2, 2), d(2026, 2, 9)},
		{"last month", d(2026, 1, 1), d(2026, 2, 1)},
		{"this year", d(2026, 1, 1), d(2027, 1, 1)},
		{"last year", d(2025, 1, 1), d(2026, 1, 1)},
		{"in May", d(2025, 5, 1), d(2025, 6, 1)}, // May 2026 has not begun
		{"in January", d(2026, 1, 1), d(2026, 2, 1)},
		{"May 2024", d(2024, 5, 1), d(2024, 6, 1)},
		{"in 2024", d(2024, 1, 1), d(2025, 1, 1)},
		{"2025-12", d(2025, 12, 1), d(2026, 1, 1)},
		{"2025-12-24", d(2025, 12, 24), d(2025, 12, 25)},
		{"3 days ago", d(2026, 2, 8), d(2026, 2, 9)},
		{"2 weeks ago", d(2026, 1, 26), d(2026, 2, 2)},
		{"last 7 days", now.AddDate(0, 0, -7), now.Add(time.Nanosecond)},
		{"since March 2025", d(2025, 3, 1), zero},
		{"before 2026", zero, d(2026, 1, 1)},
		{"after last week", d(2026, 2, 9), zero},
		{"until yesterday", zero, d(2026, 2, 11)},
		{"between May 2025 and 2025-07", d(2025, 5, 1), d(2025, 8, 1)},
		{"from last month to this week", d(2026, 1, 1), d(2026, 2, 16)},
		// periods read by search/when
		{"3 May 2025", d(2025, 5, 3), d(2025, 5, 4)},
		{"on May 3, 2025", d(2025, 5, 3), d(2025, 5, 4)},
		{"last Friday", d(2026, 2, 6), d(2026, 2, 7)},
		{"since 24 December 2025", d(2025, 12, 24), zero},
	} {
		f, to, err := ResolveTime(c.expr, now)
		if err != nil || !f.Equal(c.from) || !to.Equal(c.to) {
			t.Errorf("%q: [%v, %v) %v, want [%v, %v)", c.expr, f, to, err, c.from, c.to)
		}
	}
	for _, bad := range []string{"", "soon", "last fortnight", "between May and", "May 99999", "0 days ago", "between 2026 and 2025", "-3 days ago"} {
		if _, _, err := ResolveTime(bad, now); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: %v, want ErrInvalid", bad, err)
		}
	}
	// Range intersects a time expression with explicit bounds.
	r, err := Range(d(2026, 2, 5), time.Time{}, "last week", now)
	if err != nil || !r.Since.Equal(d(2026, 2, 5)) || !r.Until.Equal(d(2026, 2, 9)) {
		t.Errorf("range %+v %v", r, err)
	}
	if _, err := Range(d(2026, 2, 10), time.Time{}, "last week", now); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty range: %v", err)
	}
}

// FuzzResolveTime: any expression resolves to an ordered range or fails
// with ErrInvalid, without panicking.
func FuzzResolveTime(f *testing.F) {
	for _, s := range []string{"last week", "in May", "since 2026-03-01", "between May and June", "3 days ago", "2026-13", "last 99999999999 days", "from  to ", "in in May"} {
		f.Add(s)
	}
	now := time.Date(2026, 2, 11, 15, 30, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		from, to, err := ResolveTime(s, now)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		if !from.IsZero() && !to.IsZero() && !to.After(from) {
			t.Fatalf("%q: [%v, %v)", s, from, to)
		}
	})
}
