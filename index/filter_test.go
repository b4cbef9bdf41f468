package index

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

var filterNow = time.Date(2025, 6, 15, 12, 0, 0, 0, time.UTC)

func TestParseFilter(t *testing.T) {
	day := 24 * time.Hour
	cases := []struct {
		in   string
		want *Expr
	}{
		{`lang = en`, &Expr{Op: OpEq, Field: "lang", Values: []string{"en"}}},
		{`lang == "en"`, &Expr{Op: OpEq, Field: "lang", Values: []string{"en"}}},
		{`lang != 'e\'n'`, &Expr{Op: OpNe, Field: "lang", Values: []string{"e'n"}}},
		{`team IN [search, "infra ops"]`, &Expr{Op: OpIn, Field: "team", Values: []string{"search", "infra ops"}}},
		{`source starts with https://docs.rs/`, &Expr{Op: OpPrefix, Field: "source", Values: []string{"https://docs.rs/"}}},
		{`draft EXISTS`, &Expr{Op: OpExists, Field: "draft"}},
		{`attr.type = x`, &Expr{Op: OpEq, Field: "attr.type", Values: []string{"x"}}},
		{`"my key" = x`, &Expr{Op: OpEq, Field: "my key", Values: []string{"x"}}},
		{`created >= 2025-01-31`, &Expr{Op: OpGe, Field: "created", Time: time.Date(2025, 1, 31, 0, 0, 0, 0, time.UTC)}},
		{`created < 2025-01-31T12:00:00+02:00`, &Expr{Op: OpLt, Field: "created", Time: time.Date(2025, 1, 31, 10, 0, 0, 0, time.UTC)}},
		{`created > now-7d`, &Expr{Op: OpGt, Field: "created", Time: filterNow.Add(-7 * day)}},
		{`created <= NOW`, &Expr{Op: OpLe, Field: "created", Time: filterNow}},
		{`a = 1 AND b = 2 OR c = 3`, &Expr{Op: OpOr, Args: []*Expr{
			{Op: OpAnd, Args: []*Expr{{Op: OpEq, Field: "a", Values: []string{"1"}}, {Op: OpEq, Field: "b", Values: []string{"2"}}}},
			{Op: OpEq, Field: "c", Values: []string{"3"}},
		}}},
		{`a = 1 and (b = 2 or not c exists)`, &Expr{Op: OpAnd, Args: []*Expr{
			{Op: OpEq, Field: "a", Values: []string{"1"}},
			{Op: OpOr, Args: []*Expr{
				{Op: OpEq, Field: "b", Values: []string{"2"}},
				{Op: OpNot, Args: []*Expr{{Op: OpExists, Field: "c"}}},
			}},
		}}},
		{`a=1 AND b=2 AND c=3`, &Expr{Op: OpAnd, Args: []*Expr{
			{Op: OpEq, Field: "a", Values: []string{"1"}}, {Op: OpEq, Field: "b", Values: []string{"2"}}, {Op: OpEq, Field: "c", Values: []string{"3"}},
		}}},
	}
	for _, c := range cases {
		got, err := parseFilter(c.in, filterNow)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q:\n got %s\nwant %s", c.in, got, c.want)
		}
		back, err := parseFilter(got.String(), filterNow)
		if err != nil || !reflect.DeepEqual(back, got) {
			t.Errorf("%q: String %q does not read back: %v", c.in, got.String(), err)
		}
	}
}

func TestParseFilterErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{``, "empty"},
		{`   `, "empty"},
		{`lang`, "column 5: expected an operator"},
		{`lang =`, "column 7: expected a value"},
		{`lang = AND`, "expected a value"},
		{`= en`, "column 1: expected a field name"},
		{`AND = x`, "keyword AND"},
		{`lang = en AND`, "expected a field name"},
		{`lang = en lang = de`, "column 11: expected AND, OR"},
		{`(lang = en`, "expected \")\" to close the \"(\" at column 1"},
		{`lang = en)`, "column 10: expected AND, OR"},
		{`lang IN en`, "expected \"[\" after IN"},
		{`lang IN []`, "set after IN is empty"},
		{`lang IN [a b]`, "expected \",\" or \"]\""},
		{`lang IN [a,`, "expected a value"},
		{`lang STARTS x`, "expected WITH"},
		{`lang > 3`, "only works on created"},
		{`created = 2025-01-01`, "created takes <, <=, > or >="},
		{`created IN [1]`, "not IN"},
		{`created EXISTS`, "EXISTS does not apply"},
		{`created > yesterday`, "is not a time"},
		{`created > now-7y`, "is not a time"},
		{`lang ! en`, "must be followed by \"=\""},
		{`lang = "en`, "unterminated string"},
		{`lang = "\q"`, "unknown escape"},
		{`lang = $x`, "unexpected character '$'"},
		{`attr. = x`, "attr. must be followed"},
		{`"" = x`, "field name is empty"},
		{strings.Repeat("(", 40) + "a = 1" + strings.Repeat(")", 40), "nests deeper than 32"},
		{strings.Repeat("NOT ", 40) + "a = 1", "nests deeper than 32"},
		{strings.Repeat("a=1 OR ", 520) + "a=1", "more than 512 parts"},
		{"a = " + strings.Repeat("x", 5000), "longer than 4096 bytes"},
		{"a = \xff", "not valid UTF-8"},
	}
	for _, c := range cases {
		_, err := parseFilter(c.in, filterNow)
		if err == nil {
			t.Errorf("%q: no error", c.in)
			continue
		}
		if !errors.Is(err, ErrBadFilter) {
			t.Errorf("%q: error %v does not wrap ErrBadFilter", c.in, err)
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %q does not say %q", c.in, err, c.want)
		}
	}
}

func TestFilterMatch(t *testing.T) {
	r := &Record{
		SourceURL: "https://docs.rs/serde/latest/", Title: "Serde", DocType: DocKnowledge,
		CreatedAt: time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC),
		Attrs:     map[string]string{"lang": "en", "team": "infra", "source": "crawler"},
	}
	cases := []struct {
		expr string
		want bool
	}{
		{`lang = en`, true},
		{`lang = de`, false},
		{`lang != de`, true},
		{`missing != x`, true},
		{`missing = x`, false},
		{`team IN [search, infra]`, true},
		{`team IN [search]`, false},
		{`missing IN [x]`, false},
		{`source STARTS WITH "https://docs.rs/"`, true},
		{`source STARTS WITH "https://crates.io/"`, false},
		{`source = crawler`, false},
		{`attr.source = crawler`, true},
		{`type = knowledge`, true},
		{`type IN [memory, preference]`, false},
		{`title = Serde`, true},
		{`lang EXISTS`, true},
		{`draft EXISTS`, false},
		{`NOT draft EXISTS`, true},
		{`created >= 2025-06-01`, true},
		{`created > 2025-06-01`, false},
		{`created < 2025-06-02 AND created > 2025-05-31`, true},
		{`created <= 2025-05-31`, false},
		{`created > now-30d`, true},
		{`created > now-1d`, false},
		{`lang = de OR team = infra`, true},
		{`lang = de OR team = search`, false},
		{`lang = en AND (team = search OR title = Serde)`, true},
		{`lang = en AND NOT (team = search OR title = Serde)`, false},
	}
	for _, c := range cases {
		e, err := parseFilter(c.expr, filterNow)
		if err != nil {
			t.Fatalf("%q: %v", c.expr, err)
		}
		if got := e.Match(r); got != c.want {
			t.Errorf("%q: Match = %v, want %v", c.expr, got, c.want)
		}
		f := Filter{Where: e}
		if got := f.Match(r); got != c.want {
			t.Errorf("%q: Filter.Match = %v, want %v", c.expr, got, c.want)
		}
	}
}

func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{
		`lang = en AND (team IN [search, infra] OR NOT draft EXISTS)`,
		`source STARTS WITH "https://docs.rs/" AND created >= 2025-01-01`,
		`type = memory AND created > now-7d`, `"a\u00e9\x01" != 'b\n'`, `created <= 2025-01-31T12:00:00.5+02:00`,
		`((a=1))`, `NOT NOT a EXISTS`, `a IN [1,2,3]`, `attr.source = x`, `a = "`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := parseFilter(s, filterNow)
		if err != nil {
			if !errors.Is(err, ErrBadFilter) {
				t.Fatalf("%q: error %v does not wrap ErrBadFilter", s, err)
			}
			return
		}
		out := e.String()
		back, err := parseFilter(out, filterNow)
		if err != nil {
			t.Fatalf("%q: String %q does not parse: %v", s, out, err)
		}
		if !reflect.DeepEqual(back, e) {
			t.Fatalf("%q: String %q reads back as %s", s, out, back)
		}
		e.Match(&Record{Attrs: map[string]string{"a": "1"}})
	})
}
