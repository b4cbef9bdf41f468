package memory

// gopter properties of memory over time: no memory text is ever lost,
// whatever is written, merged, superseded or cited; and the current memory
// of a superseded chain is its newest. Each runs at least 100 cases, shrinks
// the operation list, logs its seed and replays one with
// RAGMEM_PROPERTY_SEED.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/internal/proptest"
)

// op is one write of a property's history.
type op struct {
	Kind   int // 0..5: a statement; 6: supersede; 7: cite; 8: a hand-written file
	Fact   int // which fact (component and attribute)
	Phrase int // which phrasing
	Value  int // which value
	Target int // which earlier memory (supersede, cite)
}

func (o op) String() string {
	return fmt.Sprintf("{k%d f%d p%d v%d t%d}", o.Kind, o.Fact, o.Phrase, o.Value, o.Target)
}

var opGen = gopter.CombineGens(gen.IntRange(0, 8), gen.IntRange(0, 5), gen.IntRange(0, 3), gen.IntRange(0, 2), gen.IntRange(0, 20)).
	Map(func(v []any) op { return op{v[0].(int), v[1].(int), v[2].(int), v[3].(int), v[4].(int)} })

// opsGen draws histories of up to 25 operations (runHistoryProp's
// MaxSize), shrinking by dropping operations.
var opsGen = gen.SliceOf(opGen)

// runHistoryProp runs a property over histories of at most 25 operations.
func runHistoryProp(t *testing.T, name string, p gopter.Prop) {
	t.Helper()
	params := proptest.Params(t, 100)
	params.MaxSize = 25
	if raceEnabled {
		params.MaxSize = 8
	}
	ps := gopter.NewProperties(params)
	ps.Property(name, p)
	ps.TestingRun(t)
}

func (o op) fact() streamFact {
	a := streamAttrs[o.Fact%len(streamAttrs)]
	return streamFact{component: streamComponents[o.Fact], attr: o.Fact % len(streamAttrs), value: a.values[o.Value%len(a.values)]}
}

// No memory text is ever lost: after any history of statements (new,
// restated, contradicting), supersessions, citations and hand-written
// files, every body ever written is still the body of an entry of some
// memory, and every memory ever listed is still listed.
func TestPropertyNoMemoryTextIsLost(t *testing.T) {
	runHistoryProp(t, "no memory text is ever lost", prop.ForAll(
		func(ops []op) string {
			dir, err := os.MkdirTemp("", "prop-mem-")
			if err != nil {
				return err.Error()
			}
			defer os.RemoveAll(dir)
			i := 0
			now := func() time.Time { return testClock.Add(time.Duration(i) * time.Minute) }
			// With an index, so that restatements merge by similarity.
			ix, err := engine.Open(bg, filepath.Join(dir, ".index"), &engine.Options{Logger: quiet(), Now: clock})
			if err != nil {
				return err.Error()
			}
			defer ix.Close()
			s, err := Open(bg, filepath.Join(dir, "mem"), &Options{Index: ix, Logger: quiet(), Now: now})
			if err != nil {
				return err.Error()
			}
			dir = filepath.Join(dir, "mem")
			var texts []string
			seen := map[string]bool{}
			for n, o := range ops {
				i = n
				all, err := s.List(bg)
				if err != nil {
					return err.Error()
				}
				for _, m := range all {
					seen[m.Slug] = true
				}
				switch {
				case o.Kind <= 5:
					f := o.fact()
					w := streamWrite{fact: f, text: f.say(o.Phrase)}
					if _, err := s.Add(bg, streamMemory(w, n)); err != nil {
						return fmt.Sprintf("op %d: %v", n, err)
					}
					texts = append(texts, w.text)
				case o.Kind == 6 && len(all) >= 2:
					a, b := all[o.Target%len(all)], all[(o.Target+1)%len(all)]
					if newer(&b, &a) {
						a, b = b, a
					}
					if _, err := s.Supersede(bg, a.Slug, b.Slug, "property"); err != nil {
						return fmt.Sprintf("op %d: supersede %s %s: %v", n, a.Slug, b.Slug, err)
					}
				case o.Kind == 7 && len(all) > 0:
					if _, err := s.Cite(bg, CiteRequest{Answer: "as " + CiteID(all[o.Target%len(all)].Slug) + " says"}); err != nil {
						return fmt.Sprintf("op %d: cite: %v", n, err)
					}
				case o.Kind == 8:
					body := fmt.Sprintf("Hand-written note %d about the %s service.", n, streamComponents[o.Fact])
					file := fmt.Sprintf("---\ntitle: Note %d\nwhenToUse: %s\n---\n\n%s\n", n, streamComponents[o.Fact], body)
					if err := os.MkdirAll(dir, 0o700); err != nil {
						return err.Error()
					}
					if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("note-%d.md", n)), []byte(file), 0o600); err != nil {
						return err.Error()
					}
					if _, err := s.Refresh(bg); err != nil {
						return err.Error()
					}
					texts = append(texts, body)
				}
			}
			all, err := s.List(bg)
			if err != nil {
				return err.Error()
			}
			bodies := map[string]bool{}
			listed := map[string]bool{}
			for _, m := range all {
				listed[m.Slug] = true
				es, err := s.Entries(bg, m.Slug)
				if err != nil {
					return err.Error()
				}
				for _, e := range es {
					bodies[e.Body] = true
				}
			}
			for _, tx := range texts {
				if !bodies[tx] {
					return "lost: " + tx
				}
			}
			for sl := range seen {
				if !listed[sl] {
					return "memory gone: " + sl
				}
			}
			if len(s.Problems()) > 0 {
				return fmt.Sprintf("problems: %v", s.Problems())
			}
			return ""
		},
		opsGen,
	))
}

// chainOp is one write of the chain property: a new statement of chain
// Chain that supersedes the chain's current memory (or, with Stray, also
// names an older memory of another chain, or, with Back, is hand-written
// to name a newer memory, which must have no effect).
type chainOp struct {
	Chain int
	Stray int // 0: none; otherwise also supersedes the first memory of chain Stray-1, if older
	Back  bool
}

var chainOpGen = gopter.CombineGens(gen.IntRange(0, 3), gen.IntRange(0, 4), gen.Bool()).
	Map(func(v []any) chainOp { return chainOp{v[0].(int), v[1].(int), v[2].(bool)} })

// The current memory of a superseded chain is the newest: writing a chain's
// statements one after another, each superseding the chain's current
// memory, Current of every memory of the chain is the newest statement,
// whatever other chains, stray links to older memories and hand-written
// links to newer ones say. Superseded memories stay listed.
func TestPropertyCurrentOfChainIsNewest(t *testing.T) {
	runHistoryProp(t, "the current fact of a superseded chain is the newest", prop.ForAll(
		func(ops []chainOp) string {
			dir, err := os.MkdirTemp("", "prop-chain-")
			if err != nil {
				return err.Error()
			}
			defer os.RemoveAll(dir)
			i := 0
			now := func() time.Time { return testClock.Add(time.Duration(i) * time.Minute) }
			s, err := Open(bg, dir, &Options{Logger: quiet(), Now: now})
			if err != nil {
				return err.Error()
			}
			chains := map[int][]string{} // chain -> its memories, oldest first
			for n, o := range ops {
				i = n
				nm := NewMemory{Frontmatter: Frontmatter{Title: fmt.Sprintf("Chain %d statement %d", o.Chain, n), WhenToUse: []string{fmt.Sprintf("chain%d", o.Chain)},
					DiscoveredAt: now()}, Content: fmt.Sprintf("Value %d of chain %d.", n, o.Chain), Separate: true}
				if c := chains[o.Chain]; len(c) > 0 {
					nm.Supersedes = []string{c[len(c)-1]}
				}
				if c := chains[o.Stray-1]; o.Stray > 0 && o.Stray-1 != o.Chain && len(c) > 0 {
					nm.Supersedes = append(nm.Supersedes, c[0])
				}
				res, err := s.Add(bg, nm)
				if err != nil {
					return fmt.Sprintf("op %d: %v", n, err)
				}
				chains[o.Chain] = append(chains[o.Chain], res.Memory.Slug)
				if o.Back && len(chains[o.Chain]) > 1 {
					// A hand-written older file naming a newer memory.
					older := chains[o.Chain][0]
					data, err := os.ReadFile(filepath.Join(dir, older+".md"))
					if err != nil {
						return err.Error()
					}
					patched := string(data)
					if strings.Contains(patched, "supersedes: [") {
						patched = strings.Replace(patched, "supersedes: [", "supersedes: ["+res.Memory.Slug+", ", 1)
					} else {
						patched = strings.Replace(patched, "importance:", "supersedes: ["+res.Memory.Slug+"]\nimportance:", 1)
					}
					if err := os.WriteFile(filepath.Join(dir, older+".md"), []byte(patched), 0o600); err != nil {
						return err.Error()
					}
					if _, err := s.Refresh(bg); err != nil {
						return err.Error()
					}
				}
			}
			all, err := s.List(bg)
			if err != nil {
				return err.Error()
			}
			total := 0
			for c, slugs := range chains {
				total += len(slugs)
				newest := slugs[len(slugs)-1]
				for _, sl := range slugs {
					cur, ok := Current(all, sl)
					if !ok {
						return "not listed: " + sl
					}
					// Stray links may carry a chain's first memory into another
					// chain; every other memory ends at its own chain's newest.
					if cur.Slug != newest && !(sl == slugs[0] && isStrayTarget(ops, c)) {
						return fmt.Sprintf("chain %d: current of %s is %s, want %s", c, sl, cur.Slug, newest)
					}
					if cur.Superseded() {
						return "current is superseded: " + cur.Slug
					}
				}
			}
			if len(all) != total {
				return fmt.Sprintf("%d memories listed, %d written", len(all), total)
			}
			return ""
		},
		gen.SliceOf(chainOpGen),
	))
}

// isStrayTarget reports whether some write names chain c's first memory as
// a stray link.
func isStrayTarget(ops []chainOp, c int) bool {
	for _, o := range ops {
		if o.Stray-1 == c && o.Chain != c {
			return true
		}
	}
	return false
}
