package when

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// now is a Wednesday.
var now = time.Date(2023, time.August, 16, 15, 4, 0, 0, time.UTC)

func d(y int, m time.Month, day int) time.Time { return time.Date(y, m, day, 0, 0, 0, 0, time.UTC) }

func TestFind(t *testing.T) {
	cases := []struct {
		text     string
		from, to time.Time
		unit     Unit
		said     string
	}{
		{"What did John do on 7 July, 2023?", d(2023, 7, 7), d(2023, 7, 8), Day, "7 July, 2023"},
		{"What did Jon find for his store on 1 February, 2023?", d(2023, 2, 1), d(2023, 2, 2), Day, "1 February, 2023"},
		{"What painting did Melanie show on October 13, 2023?", d(2023, 10, 13), d(2023, 10, 14), Day, "October 13, 2023"},
		{"the 3rd of March 2022", d(2022, 3, 3), d(2022, 3, 4), Day, "3rd of March 2022"},
		{"Who did Maria have dinner with on May 3, 2023?", d(2023, 5, 3), d(2023, 5, 4), Day, "May 3, 2023"},
		{"on 8\u00a0May\u00a02023", d(2023, 5, 8), d(2023, 5, 9), Day, "8 May 2023"},
		{"logged on 2023-05-08 at noon", d(2023, 5, 8), d(2023, 5, 9), Day, "2023-05-08"},
		{"What did Maria donate in December 2023?", d(2023, 12, 1), d(2024, 1, 1), Month, "December 2023"},
		{"What did they do in May, 2023?", d(2023, 5, 1), d(2023, 6, 1), Month, "May, 2023"},
		{"Sept 2021 was busy", d(2021, 9, 1), d(2021, 10, 1), Month, "Sept 2021"},
		{"How many times has Melanie gone to the beach in 2023?", d(2023, 1, 1), d(2024, 1, 1), Year, "in 2023"},
		// A month without a year is the latest that has begun; "this" is
		// this year's, "next" the coming one.
		{"When did Melanie go camping in June?", d(2023, 6, 1), d(2023, 7, 1), Month, "in June"},
		{"in August", d(2023, 8, 1), d(2023, 9, 1), Month, "in August"},
		{"plans in October", d(2022, 10, 1), d(2022, 11, 1), Month, "in October"},
		{"last August", d(2022, 8, 1), d(2022, 9, 1), Month, "last August"},
		{"next March", d(2024, 3, 1), d(2024, 4, 1), Month, "next March"},
		{"this December", d(2023, 12, 1), d(2024, 1, 1), Month, "this December"},
		{"since 3 June", d(2023, 6, 3), d(2023, 6, 4), Day, "3 June"},
		{"on 20 December", d(2022, 12, 20), d(2022, 12, 21), Day, "20 December"},
		{"by March 9", d(2023, 3, 9), d(2023, 3, 10), Day, "by March 9"},
		// Relative to now (Wednesday 16 August 2023); weeks start on Monday.
		{"What did I do yesterday?", d(2023, 8, 15), d(2023, 8, 16), Day, "yesterday"},
		{"today", d(2023, 8, 16), d(2023, 8, 17), Day, "today"},
		{"What happened last week?", d(2023, 8, 7), d(2023, 8, 14), Week, "last week"},
		{"this week", d(2023, 8, 14), d(2023, 8, 21), Week, "this week"},
		{"last weekend", d(2023, 8, 12), d(2023, 8, 14), Week, "last weekend"},
		{"last month", d(2023, 7, 1), d(2023, 8, 1), Month, "last month"},
		{"last year", d(2022, 1, 1), d(2023, 1, 1), Year, "last year"},
		{"three days ago", d(2023, 8, 13), d(2023, 8, 14), Day, "three days ago"},
		{"2 weeks ago", d(2023, 7, 31), d(2023, 8, 7), Week, "2 weeks ago"},
		{"a month ago", d(2023, 7, 1), d(2023, 8, 1), Month, "a month ago"},
		{"last Friday", d(2023, 8, 11), d(2023, 8, 12), Day, "last Friday"},
		{"last Wednesday", d(2023, 8, 9), d(2023, 8, 10), Day, "last Wednesday"},
		// A span before a date ends where the date begins.
		{"What did John do the week before August 3, 2023?", d(2023, 7, 27), d(2023, 8, 3), Week, "the week before August 3, 2023"},
		{"Maria's puppy she got two weeks before August 11, 2023", d(2023, 7, 28), d(2023, 8, 11), Week, "two weeks before August 11, 2023"},
		{"last weekend before April 10, 2023", d(2023, 4, 3), d(2023, 4, 10), Week, "last weekend before April 10, 2023"},
		{"the day before 9 June 2023", d(2023, 6, 8), d(2023, 6, 9), Day, "the day before 9 June 2023"},
		// The edges: January, the first and the 31st of a month, the year
		// 1900, 500 units ago, "next" in the month named, "past".
		{"on 5 January 2023", d(2023, 1, 5), d(2023, 1, 6), Day, "5 January 2023"},
		{"on 1 May 2023", d(2023, 5, 1), d(2023, 5, 2), Day, "1 May 2023"},
		{"on 31 July 2023", d(2023, 7, 31), d(2023, 8, 1), Day, "31 July 2023"},
		{"in January 2023", d(2023, 1, 1), d(2023, 2, 1), Month, "January 2023"},
		{"in 1900", d(1900, 1, 1), d(1901, 1, 1), Year, "in 1900"},
		{"500 days ago", d(2022, 4, 3), d(2022, 4, 4), Day, "500 days ago"},
		{"next August", d(2024, 8, 1), d(2024, 9, 1), Month, "next August"},
		{"the past week", d(2023, 8, 7), d(2023, 8, 14), Week, "past week"},
		{"this weekend", d(2023, 8, 19), d(2023, 8, 21), Week, "this weekend"},
		{"next weekend", d(2023, 8, 26), d(2023, 8, 28), Week, "next weekend"},
		// A day that does not exist leaves its month.
		{"on 31 June 2023", d(2023, 6, 1), d(2023, 7, 1), Month, "June 2023"},
		{"on 0 May 2023", d(2023, 5, 1), d(2023, 6, 1), Month, "May 2023"},
	}
	for _, c := range cases {
		rs := Find(c.text, now)
		if len(rs) != 1 {
			t.Errorf("%q: %d ranges %+v", c.text, len(rs), rs)
			continue
		}
		r := rs[0]
		if !r.From.Equal(c.from) || !r.To.Equal(c.to) || r.Unit != c.unit || r.Text != c.said {
			t.Errorf("%q: [%s, %s) %s %q, want [%s, %s) %s %q", c.text, r.From.Format(time.DateOnly), r.To.Format(time.DateOnly), r.Unit, r.Text,
				c.from.Format(time.DateOnly), c.to.Format(time.DateOnly), c.unit, c.said)
		}
	}
}

// Words that look like times but name none.
func TestFindNothing(t *testing.T) {
	for _, text := range []string{
		"", "What did Caroline research?", "May I ask what you painted?", "She may 2 go",
		"recently", "lately", "during the summer", "2000 steps",
		"in 1492", "in 1899", "0 days ago", "501 days ago", "15 mayonnaise jars", "the marchers", "a few weeks ago", "ago", "last", "before August",
	} {
		if rs := Find(text, now); len(rs) != 0 {
			t.Errorf("%q: %+v", text, rs)
		}
	}
}

func TestFindSeveralAndContains(t *testing.T) {
	rs := Find("Between 8 May 2023 and June 2023, and again last week", now)
	if len(rs) != 3 || rs[0].Unit != Day || rs[1].Unit != Month || rs[2].Unit != Week {
		t.Fatalf("ranges %+v", rs)
	}
	if !rs[0].Contains(time.Date(2023, 5, 8, 23, 59, 0, 0, time.UTC)) || rs[0].Contains(d(2023, 5, 9)) || rs[0].Contains(d(2023, 5, 7)) {
		t.Error("Contains is not [From, To)")
	}
	many := strings.Repeat("in 2020 ", 100)
	if rs := Find(many, now); len(rs) != MaxRanges {
		t.Errorf("%d ranges, want at most %d", len(rs), MaxRanges)
	}
	// Only MaxText bytes are read.
	if rs := Find(strings.Repeat(" ", MaxText)+"in 2020", now); len(rs) != 0 {
		t.Errorf("read past MaxText: %+v", rs)
	}
	// The reference's location is the ranges'.
	tz := time.FixedZone("X", 5*3600)
	if rs := Find("yesterday", now.In(tz)); len(rs) != 1 || rs[0].From.Location() != tz {
		t.Errorf("location: %+v", rs)
	}
}

// On a Sunday, this weekend is the one under way, and last weekend the one
// before.
func TestFindWeekendOnSunday(t *testing.T) {
	sunday := time.Date(2023, time.August, 20, 10, 0, 0, 0, time.UTC)
	for text, from := range map[string]time.Time{"this weekend": d(2023, 8, 19), "last weekend": d(2023, 8, 12), "next weekend": d(2023, 8, 26)} {
		rs := Find(text, sunday)
		if len(rs) != 1 || !rs[0].From.Equal(from) || !rs[0].To.Equal(from.AddDate(0, 0, 2)) {
			t.Errorf("%q on a Sunday: %+v, want from %s", text, rs, from.Format(time.DateOnly))
		}
	}
}

func FuzzFind(f *testing.F) {
	for _, s := range []string{"on 7 July, 2023", "the week before August 3, 2023", "last weekend", "3 days ago",
		"in May", "İSTANBUL in May 2023", "ẞİ on 8\u00a0May\u00a02023", "\xff in 2023", "99999 days ago", "on 2023-02-30"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		rs := Find(text, now)
		if len(rs) > MaxRanges {
			t.Fatalf("%d ranges", len(rs))
		}
		for _, r := range rs {
			if !r.From.Before(r.To) {
				t.Fatalf("%q: empty range %+v", text, r)
			}
			if r.To.Sub(r.From) > 366*24*time.Hour+time.Hour {
				t.Fatalf("%q: range longer than a year %+v", text, r)
			}
			if !utf8.ValidString(r.Text) && utf8.ValidString(text) {
				t.Fatalf("%q: text %q", text, r.Text)
			}
			if !strings.Contains(strings.ReplaceAll(text, "\u00a0", " "), r.Text) {
				t.Fatalf("%q: text %q is not from the input", text, r.Text)
			}
		}
	})
}
