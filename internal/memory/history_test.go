package memory

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ragmem/ragmem/internal/memory/internal/memtest"
)

// addAt writes a memory stored at `at` (and happened at `occurred`, when
// set), as its own memory.
func addAt(t *testing.T, s *Store, title, when, body string, at, occurred time.Time) Memory {
	t.Helper()
	res, err := s.Add(bg, NewMemory{Frontmatter: Frontmatter{Title: title, WhenToUse: []string{when}, Importance: High, DiscoveredAt: at, OccurredAt: occurred},
		Content: body, Separate: true})
	if err != nil {
		t.Fatal(err)
	}
	return res.Memory
}

// Memories carry when they happened and when they were stored; Match and
// Search take time ranges and expressions, and recency ranks search
// results; the new fields survive a reopen, and files without them load.
func TestTimeRangesAndRecency(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mem")
	s := openStore(t, dir)
	// testClock is Sunday 2026-02-01 12:00.
	addAt(t, s, "Deploy freeze for the release", "deploy|release", "The release had a deploy freeze on the gateway.", testClock, testClock.AddDate(0, 0, -10))
	addAt(t, s, "Gateway outage during deploy", "deploy|gateway", "A deploy took the gateway down for an hour.", testClock, testClock.AddDate(0, -9, 0))
	addAt(t, s, "Deploys need a canary", "deploy|canary", "Every deploy of the gateway goes through a canary first.", testClock.AddDate(0, 0, -1), time.Time{})

	m, err := s.Get(bg, "deploy-freeze-for-the-release")
	if err != nil || !m.OccurredAt.Equal(testClock.AddDate(0, 0, -10)) || !m.DiscoveredAt.Equal(testClock) || !m.ValidFrom.Equal(m.OccurredAt) {
		t.Fatalf("times: %+v %v", m, err)
	}
	raw, _ := s.Raw(bg, m.Slug)
	if !strings.Contains(string(raw), "occurredAt: 2026-01-22T12:00:00Z") {
		t.Errorf("occurredAt not in the file:\n%s", raw)
	}

	// "last week" (Mon 2026-01-19 to Mon 2026-01-26) holds only the freeze.
	ms, err := s.Match(bg, MatchRequest{Task: "deploy the gateway", When: "last week"})
	if err != nil || len(ms) != 1 || ms[0].Memory.Slug != "deploy-freeze-for-the-release" {
		t.Fatalf("match last week: %v %v", slugs(ms), err)
	}
	// "in May" is May 2025: the outage.
	found, err := s.Search(bg, SearchRequest{Query: "gateway deploy", When: "in May"})
	if err != nil || len(found) != 1 || found[0].Memory.Slug != "gateway-outage-during-deploy" {
		t.Fatalf("search in May: %+v %v", found, err)
	}
	// Explicit bounds.
	found, err = s.Search(bg, SearchRequest{Since: testClock.AddDate(0, 0, -2)})
	if err != nil || len(found) != 1 || found[0].Memory.Slug != "deploys-need-a-canary" {
		t.Fatalf("search since: %+v %v", found, err)
	}
	// Recency ranks: with equal relevance the newer memory comes first,
	// by the documented term RecencyWeight × 0.5^(age/30 days).
	found, err = s.Search(bg, SearchRequest{})
	if err != nil || len(found) != 3 {
		t.Fatal(found, err)
	}
	if found[0].Memory.Slug != "deploys-need-a-canary" || found[2].Memory.Slug != "gateway-outage-during-deploy" {
		t.Errorf("empty query order: %s %s %s", found[0].Memory.Slug, found[1].Memory.Slug, found[2].Memory.Slug)
	}
	if r := found[1].Recency; r < 0.15 || r > 0.16 { // 0.2 × 0.5^(10/30) = 0.159
		t.Errorf("recency of a 10-day-old memory: %v", r)
	}
	if _, err := s.Search(bg, SearchRequest{When: "whenever"}); err == nil {
		t.Error("a bad time expression was accepted")
	}
	// Reopened: the same.
	s2 := openStore(t, dir)
	m2, _ := s2.Get(bg, m.Slug)
	if !m2.OccurredAt.Equal(m.OccurredAt) {
		t.Errorf("occurredAt after reopen: %v", m2.OccurredAt)
	}
}

// A negative memory ("don't do X") is marked by its title or the field,
// kept in the file, and injected as a warning.
func TestNegativeMemory(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "mem"))
	res, err := s.Add(bg, NewMemory{Frontmatter: Frontmatter{Title: "Don't retry payment webhooks", WhenToUse: []string{"webhook|payment"}, Importance: High},
		Content: "Retrying payment webhooks charged customers twice."})
	if err != nil || !res.Memory.Negative {
		t.Fatalf("%+v %v", res.Memory, err)
	}
	raw, _ := s.Raw(bg, res.Memory.Slug)
	if !strings.Contains(string(raw), "negative: true") {
		t.Errorf("not in the file:\n%s", raw)
	}
	ms, err := s.Match(bg, MatchRequest{Task: "retry the payment webhook"})
	if err != nil || len(ms) != 1 {
		t.Fatal(ms, err)
	}
	ins, err := s.Load(bg, ms)
	if err != nil {
		t.Fatal(err)
	}
	text := FormatForPrompt(ins)
	if !strings.Contains(text, "*DON'T: this memory is a practice to avoid*") {
		t.Errorf("not injected as a warning:\n%s", text)
	}
	for _, title := range []string{"Do not use the v1 API", "never commit secrets", "Avoid global state", "Stop pinning Go 1.19"} {
		if !negativeTitle(title) {
			t.Errorf("%q is not negative", title)
		}
	}
	for _, title := range []string{"Donuts in the kitchen", "Use the v2 API", "Avoidance of doubt is a legal term"} {
		if negativeTitle(title) {
			t.Errorf("%q is negative", title)
		}
	}
}

// Decay: strength halves every half-life of the importance from the last
// reinforcement (newest entry or citation); below 0.25 a memory has
// decayed, and critical memories do not decay. A citation reinforces.
func TestDecay(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "mem"))
	add := func(title string, imp Importance, age time.Duration) {
		t.Helper()
		if _, err := s.Add(bg, NewMemory{Frontmatter: Frontmatter{Title: title, WhenToUse: []string{"x"}, Importance: imp, DiscoveredAt: testClock.Add(-age)},
			Content: title + ".", Separate: true}); err != nil {
			t.Fatal(err)
		}
	}
	add("Low and old", Low, 61*day)        // 0.5^(61/30) = 0.244: decayed
	add("Low and recent", Low, 30*day)     // 0.5
	add("Medium and old", Medium, 200*day) // 0.5^(200/90) = 0.214: decayed
	add("High and old", High, 200*day)     // 0.684
	add("Critical and ancient", Critical, 3000*day)
	want := map[string]float64{"low-and-old": 0.244, "low-and-recent": 0.5, "medium-and-old": 0.214, "high-and-old": 0.684, "critical-and-ancient": 1}
	all, err := s.List(bg)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range all {
		if m.Strength != want[m.Slug] || m.Decayed != (want[m.Slug] < DecayedBelow) {
			t.Errorf("%s: strength %v decayed %v, want %v", m.Slug, m.Strength, m.Decayed, want[m.Slug])
		}
	}
	// A citation now reinforces: strength 1 again.
	if res, err := s.Cite(bg, CiteRequest{Answer: "Per " + CiteID("low-and-old") + ", no."}); err != nil || len(res.Cited) != 1 {
		t.Fatal(res, err)
	}
	m, _ := s.Get(bg, "low-and-old")
	if m.Strength != 1 || m.Decayed {
		t.Errorf("after a citation: %v %v", m.Strength, m.Decayed)
	}
}

// Feedback: Load counts injections, Cite counts citations of injected
// memories by their ids, both persist in .feedback.json (shared with other
// processes), Stats shows them, and a memory injected many times and never
// cited sinks below one that is cited.
func TestFeedbackLoop(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mem")
	s := openStore(t, dir)
	for _, title := range []string{"Cache the catalog pages", "Cache the catalog images"} {
		if _, err := s.Add(bg, NewMemory{Frontmatter: Frontmatter{Title: title, WhenToUse: []string{"catalog|cache"}, Importance: High, DiscoveredAt: testClock},
			Content: title + " for an hour.", Separate: true}); err != nil {
			t.Fatal(err)
		}
	}
	ms, err := s.Match(bg, MatchRequest{Task: "speed up the catalog"})
	if err != nil || len(ms) != 2 {
		t.Fatalf("%v %v", describe(ms), err)
	}
	// The answers cite the memory that ranks second before any feedback.
	cited, other := ms[1].Memory.Slug, ms[0].Memory.Slug
	for range 10 {
		ms, _ := s.Match(bg, MatchRequest{Task: "speed up the catalog"})
		ins, err := s.Load(bg, ms)
		if err != nil {
			t.Fatal(err)
		}
		text := FormatForPrompt(ins)
		if !strings.Contains(text, CiteID(cited)) {
			t.Fatalf("no ids in the block:\n%s", text)
		}
		// The answer cites one memory (and an invented one).
		res, err := s.Cite(bg, CiteRequest{Answer: "Cache them " + CiteID(cited) + " " + CiteID("made-up"),
			Injected: []string{cited, other}})
		if err != nil || len(res.Cited) != 1 || len(res.Unknown) != 1 {
			t.Fatal(res, err)
		}
	}
	// A memory that was not injected is not counted.
	if res, err := s.Cite(bg, CiteRequest{Answer: CiteID(other), Injected: []string{cited}}); err != nil || len(res.Cited) != 0 || len(res.Unknown) != 1 {
		t.Fatalf("not injected: %+v %v", res, err)
	}
	ms, err = s.Match(bg, MatchRequest{Task: "speed up the catalog"})
	if err != nil || len(ms) != 2 {
		t.Fatal(err)
	}
	if ms[0].Memory.Slug != cited || ms[0].Feedback <= 0 || ms[1].Feedback >= 0 {
		t.Errorf("the cited memory does not rank first: %s %v / %s %v", ms[0].Memory.Slug, ms[0].Feedback, ms[1].Memory.Slug, ms[1].Feedback)
	}
	// Another store on the directory (another process) sees the counts.
	s2 := openStore(t, dir)
	rep, err := s2.Stats(bg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Injections != 20 || rep.Citations != 10 || rep.Items[0].Slug != cited || rep.Items[0].Feedback.Injected != 10 ||
		rep.Items[1].Feedback.Cited != 0 || rep.Items[1].CiteRate == nil || *rep.Items[1].CiteRate != 0 ||
		rep.Items[0].CiteRate == nil || *rep.Items[0].CiteRate != 1 {
		t.Errorf("stats %+v", rep)
	}
	if _, err := os.Stat(filepath.Join(dir, feedbackName)); err != nil {
		t.Error(err)
	}
	// A broken counts file is ignored (and replaced by the next record),
	// never fatal; the memories are untouched.
	os.WriteFile(filepath.Join(dir, feedbackName), []byte("{not json"), 0o600)
	if rep, err := s2.Stats(bg); err != nil || rep.Memories != 2 || rep.Injections != 0 {
		t.Errorf("broken counts: %+v %v", rep, err)
	}
	if _, err := s2.Cite(bg, CiteRequest{Cited: []string{other}}); err != nil {
		t.Fatal(err)
	}
	if rep, _ := s2.Stats(bg); rep.Citations != 1 {
		t.Errorf("after replacing the broken file: %+v", rep)
	}
}

// ParseCitations reads [memory:slug] ids, each once, and nothing else.
func TestParseCitations(t *testing.T) {
	got := ParseCitations("Use JWT [memory:project-uses-jwt] and [memory:project-uses-jwt], see [memory:x.md]; not [memory:../etc] or [memory: a] or [2].")
	if strings.Join(got, ",") != "project-uses-jwt,x" {
		t.Errorf("%v", got)
	}
}

// FuzzParseCitations: never panics; every id is a valid memory name.
func FuzzParseCitations(f *testing.F) {
	for _, s := range []string{"[memory:a]", "[memory:]", "[memory:a/b]", "[[memory:x]]", "[memory:" + strings.Repeat("a", 300) + "]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, id := range ParseCitations(s) {
			if !validName(id) {
				t.Fatalf("%q from %q", id, s)
			}
		}
	})
}

// Without a model a likely contradiction is flagged, both memories stay
// current and the context block names the conflict; Supersede confirms it
// (and refuses the wrong direction); a model that fails changes nothing
// but the flagging.
func TestSupersedeConfirmsAFlaggedConflict(t *testing.T) {
	for _, failingModel := range []bool{false, true} {
		opts := &Options{Index: openIndex(t), Logger: quiet(), Now: clock}
		if failingModel {
			l := memtest.NewChat(t, func(int, map[string]any) (int, string) { return http.StatusInternalServerError, "down" }).LLM()
			opts.LLM = &l
		}
		s, err := Open(bg, filepath.Join(t.TempDir(), "mem"), opts)
		if err != nil {
			t.Fatal(err)
		}
		old := addAt(t, s, "The API listens on port 8080", "api|port", "The API server listens on port 8080.", testClock.AddDate(0, 0, -30), time.Time{})
		res, err := s.Add(bg, NewMemory{Frontmatter: Frontmatter{Title: "API port", WhenToUse: []string{"api|port"}, DiscoveredAt: testClock},
			Content: "The API server listens on port 9090."})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Conflicts) != 1 || res.Conflicts[0].Slug != old.Slug || len(res.Superseded) != 0 || res.Consolidated != nil {
			t.Fatalf("model failing %v: %+v", failingModel, res)
		}
		ms, err := s.Match(bg, MatchRequest{Task: "which port does the api use"})
		if err != nil || len(ms) != 2 {
			t.Fatalf("both stay current: %v %v", slugs(ms), err)
		}
		ins, _ := s.Load(bg, ms)
		if text := FormatForPrompt(ins); !strings.Contains(text, "*May contradict \"The API listens on port 8080\"") {
			t.Errorf("the conflict is not shown:\n%s", text)
		}
		if _, err := s.Supersede(bg, old.Slug, "api-port", ""); !errors.Is(err, ErrInvalid) {
			t.Errorf("an older memory superseded a newer one: %v", err)
		}
		if _, err := s.Supersede(bg, "api-port", old.Slug, "confirmed by the on-call"); err != nil {
			t.Fatal(err)
		}
		o, _ := s.Get(bg, old.Slug)
		if o.SupersededBy != "api-port" || !o.ValidTo.Equal(testClock) {
			t.Errorf("not superseded: %+v", o)
		}
		if n, _ := s.Get(bg, "api-port"); len(n.Conflicts) != 0 || n.Confirmations != 0 {
			t.Errorf("the conflict is still open after the supersession: %+v", n)
		}
		ms, _ = s.Match(bg, MatchRequest{Task: "which port does the api use"})
		if len(ms) != 1 || ms[0].Memory.Slug != "api-port" {
			t.Errorf("after supersession: %v", slugs(ms))
		}
		ins, _ = s.Load(bg, ms)
		text := FormatForPrompt(ins)
		if !strings.Contains(text, "*Changed on 2026-02-01: this replaces \"The API listens on port 8080\", held since 2026-01-02, which said: The API server listens on port 8080.*") ||
			strings.Contains(text, "Updated") || strings.Contains(text, "Confirmed") || strings.Contains(text, "May contradict") ||
			!strings.Contains(text, "The API server listens on port 9090.") {
			t.Errorf("context block:\n%s", text)
		}
		ms, _ = s.Match(bg, MatchRequest{Task: "which port does the api use", IncludeSuperseded: true})
		if len(ms) != 2 {
			t.Errorf("with history: %v", slugs(ms))
		}
		ins, _ = s.Load(bg, ms)
		if text := FormatForPrompt(ins); !strings.Contains(text, "*Superseded on 2026-02-01 by \"API port\" [memory:api-port]; shown for history, no longer current*") ||
			strings.Contains(text, "May contradict") {
			t.Errorf("history block:\n%s", text)
		}
		raw, _ := s.Raw(bg, "api-port")
		if !strings.Contains(string(raw), "supersedes: [the-api-listens-on-port-8080]") || !strings.Contains(string(raw), "provenance: confirmed by the on-call") {
			t.Errorf("file:\n%s", raw)
		}
	}
}

// Files written before these fields existed load as before: no
// supersession, no feedback, ValidFrom from discoveredAt.
func TestOldFilesStillLoad(t *testing.T) {
	dir := writeFixture(t, example1)
	s := openStore(t, dir)
	all, err := s.List(bg)
	if err != nil || len(all) != 4 || len(s.Problems()) != 0 {
		t.Fatal(all, err, s.Problems())
	}
	for _, m := range all {
		if m.Superseded() || m.Negative || m.Confirmations != 0 || !m.ValidFrom.Equal(m.DiscoveredAt) || m.Feedback != (Feedback{}) {
			t.Errorf("%+v", m)
		}
	}
}

// A merged restatement keeps the memory's shown body (its current entry)
// and counts as a confirmation in the context block; its own text is kept
// as an entry and indexed.
func TestConsolidationKeepsTheCurrentBody(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "mem"))
	if _, err := s.Add(bg, NewMemory{Frontmatter: Frontmatter{Title: "Thumbnails are cached for a day", WhenToUse: []string{"thumbnail|cache"}},
		Content: "The thumbnail service caches thumbnails for one day."}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Add(bg, NewMemory{Frontmatter: Frontmatter{Title: "Thumbnail cache lifetime", WhenToUse: []string{"thumbnail"}},
		Content: "For one day, the thumbnail service caches thumbnails."})
	if err != nil || res.Consolidated == nil || res.Memory.Confirmations != 1 || res.Memory.Entries != 2 || !res.Appended {
		t.Fatalf("%+v %v", res, err)
	}
	es, _ := s.Entries(bg, res.Memory.Slug)
	if len(es) != 2 || !es[1].Merged || es[1].Title != "Thumbnail cache lifetime" || !strings.HasPrefix(es[1].Provenance, "restates thumbnails-are-cached-for-a-day (similarity 0.") {
		t.Fatalf("entries %+v", es)
	}
	ms, _ := s.Match(bg, MatchRequest{Task: "tune the thumbnail cache"})
	ins, _ := s.Load(bg, ms)
	text := FormatForPrompt(ins)
	if len(ins) != 1 || ins[0].Body != "The thumbnail service caches thumbnails for one day." || !strings.Contains(text, "*Confirmed in other words: 1 more time(s)*") || strings.Contains(text, "Updated") {
		t.Fatalf("context block:\n%s", text)
	}
	found, _ := s.Search(bg, SearchRequest{Query: "For one day, the thumbnail service caches thumbnails."})
	if len(found) != 1 || found[0].Memory.Slug != res.Memory.Slug {
		t.Errorf("the restatement is not found: %+v", found)
	}
	// Separate writes a copy on purpose.
	res, err = s.Add(bg, NewMemory{Frontmatter: Frontmatter{Title: "Thumbnail caching", WhenToUse: []string{"thumbnail"}},
		Content: "The thumbnail service caches thumbnails for one day.", Separate: true})
	if err != nil || res.Consolidated != nil || res.Memory.Slug != "thumbnail-caching" {
		t.Errorf("separate: %+v %v", res, err)
	}
}

// Recency is a ranking signal of Search with its weight: with a large
// RecencyWeight a new memory outranks an old one that matches the query
// better; with none, relevance alone decides.
func TestSearchRecencyWeight(t *testing.T) {
	for _, c := range []struct {
		weight float64
		first  string
	}{{2, "gateway-rules"}, {-1, "gateway-canary-rules"}} {
		s, err := Open(bg, filepath.Join(t.TempDir(), "mem"), &Options{Index: openIndex(t), Logger: quiet(), Now: clock, RecencyWeight: c.weight})
		if err != nil {
			t.Fatal(err)
		}
		addAt(t, s, "Gateway canary rules", "gateway", "Gateway deploys go through a canary.", testClock.AddDate(-1, 0, 0), time.Time{})
		addAt(t, s, "Gateway rules", "gateway", "Gateway deploys go through review.", testClock, time.Time{})
		found, err := s.Search(bg, SearchRequest{Query: "gateway deploys canary"})
		if err != nil || len(found) != 2 {
			t.Fatal(found, err)
		}
		if found[0].Memory.Slug != c.first || found[0].Rank != round3(found[0].Relevance+found[0].Recency) {
			t.Errorf("weight %v: %+v first (rank %v = %v + %v), want %s", c.weight, found[0].Memory.Slug, found[0].Rank, found[0].Relevance, found[0].Recency, c.first)
		}
	}
}

// When several newer memories supersede one, the first of them (the oldest)
// ends its validity; links from older memories, or to missing ones, do
// nothing.
func TestDeriveSupersession(t *testing.T) {
	at := func(d int) time.Time { return testClock.AddDate(0, 0, d) }
	mk := func(slug string, d int, sup ...string) Memory {
		return Memory{Slug: slug, Frontmatter: Frontmatter{Supersedes: sup, DiscoveredAt: at(d), Importance: High}, ValidFrom: at(d), firstAt: at(d)}
	}
	ms := []Memory{mk("y", 0), mk("x2", 20, "y"), mk("x1", 10, "y", "missing"), mk("old", -5, "x1")}
	derive(ms, nil, at(30))
	by := map[string]Memory{}
	for _, m := range ms {
		by[m.Slug] = m
	}
	if y := by["y"]; y.SupersededBy != "x1" || !y.ValidTo.Equal(at(10)) {
		t.Errorf("y: %s %v", y.SupersededBy, y.ValidTo)
	}
	if by["x1"].Superseded() || by["x2"].Superseded() || by["old"].Superseded() {
		t.Errorf("%+v", by)
	}
	if cur, _ := Current(ms, "y"); cur.Slug != "x1" {
		t.Errorf("current of y: %s", cur.Slug)
	}
}

// Naming an older memory when writing supersedes it at once; naming one
// that does not exist is refused, and nothing is written.
func TestExplicitSupersedes(t *testing.T) {
	s := openStore(t, filepath.Join(t.TempDir(), "mem"))
	old := addAt(t, s, "Staging URL", "staging", "Staging is at staging.example.com.", testClock.AddDate(0, 0, -3), time.Time{})
	res, err := s.Add(bg, NewMemory{Frontmatter: Frontmatter{Title: "Staging moved", WhenToUse: []string{"staging"}, Supersedes: []string{old.Slug}},
		Content: "Staging is at stage.example.net."})
	if err != nil || len(res.Superseded) != 1 || res.Superseded[0].Title != "Staging URL" || res.Superseded[0].By != "user" {
		t.Fatalf("%+v %v", res, err)
	}
	if o, _ := s.Get(bg, old.Slug); o.SupersededBy != "staging-moved" {
		t.Errorf("%+v", o)
	}
	if _, err := s.Add(bg, NewMemory{Frontmatter: Frontmatter{Title: "Staging again", WhenToUse: []string{"staging"}, Supersedes: []string{"no-such-memory"}},
		Content: "x"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown supersedes: %v", err)
	}
	if _, err := s.Get(bg, "staging-again"); !errors.Is(err, ErrNotFound) {
		t.Errorf("written anyway: %v", err)
	}
}
