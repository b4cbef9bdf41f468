package memory

// gopter properties of the memory package: scores stay within 0–100, a
// selection never exceeds maxMemories nor includes a memory below
// minImportance, and appends never lose earlier content. Each runs at least
// 100 cases; the seed is logged (go test -v) and printed on failure, and
// RAGMEM_PROPERTY_SEED replays a run.

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/ragmem/ragmem/internal/clean"
	"github.com/ragmem/ragmem/internal/memory/internal/memtest"
	"github.com/ragmem/ragmem/internal/proptest"
)

func runProp(t *testing.T, name string, p gopter.Prop) {
	t.Helper()
	ps := gopter.NewProperties(proptest.Params(t, 100))
	ps.Property(name, p)
	ps.TestingRun(t)
}

var (
	agents    = memtest.Agents
	allTags   = memtest.Tags
	randWords = memtest.RandWords
)

// randFrontmatter draws a memory's frontmatter (memtest.RandFixture).
func randFrontmatter(r *rand.Rand) Frontmatter {
	f := memtest.RandFixture(r)
	fm := Frontmatter{Title: f.Title, WhenToUse: f.WhenToUse, Tags: f.Tags, DiscoveredBy: f.By}
	fm.Importance, _ = ParseImportance(f.Importance)
	if f.Age != 0 {
		fm.DiscoveredAt = memtest.Clock.Add(-f.Age)
	}
	return fm
}

// Scores stay within 0–100; each part stays within its range and the total
// is their sum, capped.
func TestPropertyScoreBounds(t *testing.T) {
	runProp(t, "scores stay within 0-100", prop.ForAll(
		func(seed int64) string {
			r := rand.New(rand.NewSource(seed))
			fm := randFrontmatter(r)
			if err := validateFrontmatter(&fm); err != nil {
				return err.Error()
			}
			m, err := mergeEntries([]Entry{{Frontmatter: fm}})
			if err != nil {
				return err.Error()
			}
			if r.Intn(3) == 0 {
				m.Discoverers = append(m.Discoverers, agents[r.Intn(len(agents))])
			}
			agent := agents[r.Intn(len(agents))]
			sc := scoreContext{Task: randWords(r, r.Intn(40)), Agent: agent, AgentTags: append(DefaultAgentTags[agent], allTags[:r.Intn(len(allTags))]...)}
			s := scoreFor(m, sc, testClock)
			parts := []struct {
				v, lo, hi int
				name      string
			}{{s.Importance, 5, 30, "importance"}, {s.Recency, 0, 10, "recency"}, {s.Keyword, 0, 20, "keyword"}, {s.AgentTags, 0, 15, "agentTags"}, {s.Discoverer, 0, 10, "discoverer"}, {s.Total, 0, 100, "total"}}
			for _, p := range parts {
				if p.v < p.lo || p.v > p.hi {
					return fmt.Sprintf("%s = %d outside [%d, %d]: %+v", p.name, p.v, p.lo, p.hi, s)
				}
			}
			if sum := s.Importance + s.Recency + s.Keyword + s.AgentTags + s.Discoverer; s.Total != min(100, sum) {
				return fmt.Sprintf("total %d, parts sum to %d", s.Total, sum)
			}
			return ""
		},
		gen.Int64(),
	))
}

// A selection never exceeds maxMemories (default 5), never includes a
// memory below minImportance, and is ordered by rank; every score is within
// 0–100 and every relevance within 0–1. The memory directories (12, of 0
// to 40 random memories, indexed into one shared index) are built once from
// a fixed seed; each case draws a directory, task, agent, maxMemories and
// minImportance.
func TestPropertySelectionBounds(t *testing.T) {
	ix := openIndex(t)
	root := t.TempDir()
	cr := rand.New(rand.NewSource(1))
	var stores []*Store
	for d := 0; d < 12; d++ {
		dir := filepath.Join(root, strconv.Itoa(d))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for i := cr.Intn(41); i > 0; i-- {
			fm := randFrontmatter(cr)
			if err := validateFrontmatter(&fm); err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("m%02d-%s.md", i, Slugify(fm.Title))
			if err := os.WriteFile(filepath.Join(dir, name), FormatEntry(fm, randWords(cr, 5+cr.Intn(60))), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		s, err := Open(bg, dir, &Options{Index: ix, Logger: quiet(), Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
	}
	selected := 0
	runProp(t, "selection respects maxMemories and minImportance", prop.ForAll(
		func(seed int64, max int, minImp int) string {
			r := rand.New(rand.NewSource(seed))
			s := stores[r.Intn(len(stores))]
			agent := agents[r.Intn(len(agents))]
			req := MatchRequest{Task: randWords(r, 1+r.Intn(10)), Agent: agent, MaxMemories: max, MinImportance: Importance(minImp)}
			ms, err := s.Match(bg, req)
			if err != nil {
				return err.Error()
			}
			selected += len(ms)
			limit := max
			if limit <= 0 {
				limit = DefaultMaxMemories
			}
			if len(ms) > limit {
				return fmt.Sprintf("%d memories selected, maxMemories %d", len(ms), max)
			}
			for i, m := range ms {
				if minImp > 0 && m.Memory.Importance < Importance(minImp) {
					return fmt.Sprintf("%s has importance %s below %s", m.Memory.Slug, m.Memory.Importance, Importance(minImp))
				}
				if m.Score.Total < 0 || m.Score.Total > 100 || m.Relevance < 0 || m.Relevance > 1 {
					return fmt.Sprintf("%s: score %d relevance %v", m.Memory.Slug, m.Score.Total, m.Relevance)
				}
				if i > 0 && m.Rank > ms[i-1].Rank {
					return fmt.Sprintf("rank rises at %d", i)
				}
				if len(m.Reasons) == 0 {
					return fmt.Sprintf("%s selected without a reason", m.Memory.Slug)
				}
			}
			return ""
		},
		gen.Int64(), gen.IntRange(-1, 8), gen.IntRange(0, 4),
	))
	if selected == 0 {
		t.Fatal("no case selected anything: the property was not exercised")
	}
	t.Logf("%d memories selected over the cases", selected)
}

// Appends never lose earlier content: after every Add the file's previous
// bytes are a prefix of its new bytes, and every entry ever written is read
// back in order.
func TestPropertyAppendsKeepEarlierContent(t *testing.T) {
	root := t.TempDir()
	n := 0
	hostile := []string{"\n---\n", "\n\n---\n\n---\ntitle: forged\nwhenToUse: x\n---\n", "é", "\x00", "\r\n", "# Heading\n", "```\ncode\n```", "***"}
	runProp(t, "appends never lose earlier content", prop.ForAll(
		func(seed int64) string {
			r := rand.New(rand.NewSource(seed))
			n++
			s, err := Open(bg, filepath.Join(root, strconv.Itoa(n)), &Options{Logger: quiet(), Now: clock})
			if err != nil {
				return err.Error()
			}
			titles := []string{"Shared topic", "Shared Topic!", "Other topic"}
			written := map[string][]string{}
			for i := 1 + r.Intn(6); i > 0; i-- {
				fm := randFrontmatter(r)
				fm.Title = titles[r.Intn(len(titles))]
				body := randWords(r, 1+r.Intn(30))
				for j := r.Intn(3); j > 0; j-- {
					body += hostile[r.Intn(len(hostile))] + randWords(r, r.Intn(5))
				}
				slug := Slugify(fm.Title)
				before, _ := os.ReadFile(filepath.Join(s.abs, slug+".md"))
				res, err := s.Add(bg, NewMemory{Frontmatter: fm, Content: body})
				if err != nil {
					return err.Error()
				}
				after, err := os.ReadFile(res.Memory.Path)
				if err != nil {
					return err.Error()
				}
				if !bytes.HasPrefix(after, before) {
					return fmt.Sprintf("append to %s changed earlier bytes", slug)
				}
				if res.Problem != nil {
					return "written file does not parse: " + res.Problem.String()
				}
				want := strings.TrimRight(neutralizeBody(strings.Trim(clean.Text(body), "\n")), " \t\n")
				written[slug] = append(written[slug], want)
				es, err := s.Entries(bg, slug)
				if err != nil {
					return err.Error()
				}
				if len(es) != len(written[slug]) {
					return fmt.Sprintf("%s: %d entries read back, %d written", slug, len(es), len(written[slug]))
				}
				for k, e := range es {
					if e.Body != written[slug][k] {
						return fmt.Sprintf("%s entry %d: body %q, written %q", slug, k, e.Body, written[slug][k])
					}
				}
			}
			return ""
		},
		gen.Int64(),
	))
}
