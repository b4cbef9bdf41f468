package memory

// gopter properties of point-in-time recall (SearchRequest.AsOf,
// MatchRequest.AsOf): a fact superseded at T is found as of any time
// before T and not from T on, where its successor is instead; superseding
// never loses the old text; without AsOf the results are today's. Each
// runs at least 100 cases and logs its seed (replay with
// RAGMEM_PROPERTY_SEED).

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/ragmem/ragmem/internal/proptest"
)

func runAsOfProp(t *testing.T, name string, p gopter.Prop) {
	t.Helper()
	ps := gopter.NewProperties(proptest.Params(t, 100))
	ps.Property(name, p)
	ps.TestingRun(t)
}

// version is one statement of the fact: what it says and when it became
// true.
type version struct {
	text string
	at   time.Time
}

// writeChain writes the versions of one fact in a fresh store, each
// stored an hour after it became true and superseding the one before
// (Store.Supersede), and returns the store and the slugs, oldest first.
func writeChain(dir string, vs []version) (*Store, []string, error) {
	last := vs[len(vs)-1].at
	s, err := Open(bg, dir, &Options{Logger: quiet(), Now: func() time.Time { return last.Add(24 * time.Hour) }})
	if err != nil {
		return nil, nil, err
	}
	var slugs []string
	for i, v := range vs {
		res, err := s.Add(bg, NewMemory{Frontmatter: Frontmatter{Title: fmt.Sprintf("Gateway port, version %d", i+1), WhenToUse: []string{"gateway"},
			Importance: High, DiscoveredAt: v.at.Add(time.Hour), OccurredAt: v.at}, Content: v.text, Separate: true})
		if err != nil {
			return nil, nil, fmt.Errorf("add %d: %w", i, err)
		}
		slugs = append(slugs, res.Memory.Slug)
		if i > 0 {
			if _, err := s.Supersede(bg, res.Memory.Slug, slugs[i-1], "property"); err != nil {
				return nil, nil, fmt.Errorf("supersede %d: %w", i, err)
			}
		}
	}
	return s, slugs, nil
}

// searchSlugs returns the slugs a search finds, sorted.
func searchSlugs(s *Store, req SearchRequest) ([]string, error) {
	res, err := s.Search(bg, req)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range res {
		out = append(out, f.Memory.Slug)
	}
	sort.Strings(out)
	return out, nil
}

// matchSlugs returns the slugs Match selects for a task about the
// gateway, sorted.
func matchSlugs(s *Store, asOf time.Time) ([]string, error) {
	ms, err := s.Match(bg, MatchRequest{Task: "change the gateway port", AsOf: asOf})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.Memory.Slug)
	}
	sort.Strings(out)
	return out, nil
}

// A fact superseded at T is returned as of any time before T (and not
// before it began), and not as of T or later, where the superseding fact
// is returned instead; by Search (with and without a query) and by Match.
// The old fact comes back with its old text.
func TestPropertyAsOfSupersededAtT(t *testing.T) {
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	runAsOfProp(t, "a fact superseded at T is found before T and not after", prop.ForAll(
		func(startH, gapH, offH int, withQuery bool) string {
			dir, err := os.MkdirTemp("", "prop-asof-")
			if err != nil {
				return err.Error()
			}
			defer os.RemoveAll(dir)
			from := base.Add(time.Duration(startH) * time.Hour)
			T := from.Add(time.Duration(gapH) * time.Hour)
			asOf := T.Add(time.Duration(offH) * time.Minute)
			oldText, newText := "The gateway listens on port 8080.", "The gateway listens on port 9090."
			s, slugs, err := writeChain(dir, []version{{oldText, from}, {newText, T}})
			if err != nil {
				return err.Error()
			}
			old, cur := slugs[0], slugs[1]
			var want []string
			switch {
			case asOf.Before(from):
			case asOf.Before(T):
				want = []string{old}
			default:
				want = []string{cur}
			}
			q := ""
			if withQuery {
				q = "gateway port"
			}
			got, err := searchSlugs(s, SearchRequest{Query: q, AsOf: asOf})
			if err != nil {
				return err.Error()
			}
			if !slices.Equal(got, want) {
				return fmt.Sprintf("search as of %s (T %s, from %s): %v, want %v", asOf, T, from, got, want)
			}
			if got, err = matchSlugs(s, asOf); err != nil {
				return err.Error()
			} else if !slices.Equal(got, want) {
				return fmt.Sprintf("match as of %s (T %s): %v, want %v", asOf, T, got, want)
			}
			// At the boundary itself: the old fact up to T's last
			// instant before, the new one from T on.
			for _, b := range []struct {
				at   time.Time
				want string
			}{{T.Add(-time.Nanosecond), old}, {T, cur}} {
				got, err := searchSlugs(s, SearchRequest{Query: q, AsOf: b.at})
				if err != nil {
					return err.Error()
				}
				if !slices.Equal(got, []string{b.want}) {
					return fmt.Sprintf("search as of %s (T %s): %v, want [%s]", b.at, T, got, b.want)
				}
			}
			if slices.Contains(want, old) {
				es, err := s.Entries(bg, old)
				if err != nil || len(es) == 0 || es[0].Body != oldText {
					return fmt.Sprintf("the old fact's text: %v %v", es, err)
				}
			}
			return ""
		},
		gen.IntRange(0, 24*400), gen.IntRange(1, 24*200), gen.IntRange(-60*24*30, 60*24*30), gen.Bool(),
	))
}

// chain is a fact's history: gaps (hours) between its versions, and the
// offset (hours from the first version) of the time asked about.
type chain struct {
	Gaps []int
	Ask  int
}

var chainGen = gopter.CombineGens(gen.SliceOfN(5, gen.IntRange(1, 24*90)), gen.IntRange(1, 5), gen.IntRange(-24*10, 24*500)).
	Map(func(v []any) chain {
		gaps := v[0].([]int)[:v[1].(int)]
		return chain{Gaps: gaps, Ask: v[2].(int)}
	})

// Over a chain of versions, each superseding the one before: as of any
// time, exactly the version that held then is found (none before the
// first); no version's text is ever lost (each is listed, with its text,
// and found with IncludeSuperseded); and without AsOf the results are
// today's, the newest version alone, the same as asking as of a time after
// every version.
func TestPropertyAsOfChain(t *testing.T) {
	base := time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC)
	runAsOfProp(t, "as of any time, the version that held then; nothing lost; without asOf, today's", prop.ForAll(
		func(c chain) string {
			dir, err := os.MkdirTemp("", "prop-asof-chain-")
			if err != nil {
				return err.Error()
			}
			defer os.RemoveAll(dir)
			vs := []version{{"The gateway listens on port 8000.", base}}
			for i, g := range c.Gaps {
				vs = append(vs, version{fmt.Sprintf("The gateway listens on port %d.", 8001+i), vs[len(vs)-1].at.Add(time.Duration(g) * time.Hour)})
			}
			s, slugs, err := writeChain(dir, vs)
			if err != nil {
				return err.Error()
			}
			asOf := base.Add(time.Duration(c.Ask) * time.Hour)
			var want []string
			for i, v := range vs {
				if !v.at.After(asOf) {
					want = []string{slugs[i]}
				}
			}
			got, err := searchSlugs(s, SearchRequest{AsOf: asOf})
			if err != nil {
				return err.Error()
			}
			if !slices.Equal(got, want) {
				return fmt.Sprintf("as of %s: %v, want %v", asOf, got, want)
			}
			// Nothing lost.
			for i, sl := range slugs {
				es, err := s.Entries(bg, sl)
				if err != nil || len(es) == 0 || es[0].Body != vs[i].text {
					return fmt.Sprintf("version %d's text: %v %v", i, es, err)
				}
			}
			all, err := searchSlugs(s, SearchRequest{IncludeSuperseded: true})
			if err != nil {
				return err.Error()
			}
			if want := slices.Sorted(slices.Values(slugs)); !slices.Equal(all, want) {
				return fmt.Sprintf("with superseded: %v, want every version %v", all, want)
			}
			// Without asOf: today's, the newest alone, as after the last.
			today, err := searchSlugs(s, SearchRequest{})
			if err != nil {
				return err.Error()
			}
			after, err := searchSlugs(s, SearchRequest{AsOf: vs[len(vs)-1].at.Add(time.Hour)})
			if err != nil {
				return err.Error()
			}
			if !slices.Equal(today, []string{slugs[len(slugs)-1]}) || !slices.Equal(today, after) {
				return fmt.Sprintf("today %v, after the last %v, want [%s]", today, after, slugs[len(slugs)-1])
			}
			return ""
		},
		chainGen,
	))
}

func TestParseAsOf(t *testing.T) {
	now := time.Date(2026, 6, 15, 10, 0, 0, 0, time.UTC)
	cases := map[string]time.Time{
		"2026-05-01T12:30:00Z":      time.Date(2026, 5, 1, 12, 30, 0, 0, time.UTC),
		"2026-05-01T12:30:00+02:00": time.Date(2026, 5, 1, 10, 30, 0, 0, time.UTC),
		"2026-05-01":                time.Date(2026, 5, 2, 0, 0, 0, 0, time.UTC).Add(-time.Nanosecond),
		"last March":                time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC).Add(-time.Nanosecond),
		"in May 2025":               time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC).Add(-time.Nanosecond),
		"yesterday":                 time.Date(2026, 6, 15, 0, 0, 0, 0, time.UTC).Add(-time.Nanosecond),
	}
	for in, want := range cases {
		got, err := ParseAsOf(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseAsOf(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "whenever", "since May", "2026-13-45"} {
		if _, err := ParseAsOf(in, now); err == nil {
			t.Errorf("ParseAsOf(%q) accepted", in)
		}
	}
}
