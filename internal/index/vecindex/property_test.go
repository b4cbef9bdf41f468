package vecindex

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/ragmem/ragmem/internal/proptest"
)

// searchCase is one generated scenario: an index built by random adds,
// replacements and deletes (from seed), and one filtered top-k query.
type searchCase struct {
	Seed   int64
	N      int // adds before deletes
	Dim    int
	K      int
	Filter int // 0 none, 1 doc type, 2 source, 3 predicate, 4 type + predicate
	Self   bool
	Sparse bool // vectors with zeros (the int8 path for sparse queries)
}

func genSearchCase() gopter.Gen {
	return gopter.CombineGens(
		gen.Int64(), gen.IntRange(1, 2500), gen.IntRange(2, 96), gen.IntRange(1, 120), gen.IntRange(0, 4), gen.Bool(), gen.Bool(),
	).Map(func(v []any) searchCase {
		return searchCase{Seed: v[0].(int64), N: v[1].(int), Dim: v[2].(int), K: v[3].(int), Filter: v[4].(int), Self: v[5].(bool), Sparse: v[6].(bool)}
	})
}

// TestSearchProperties pins what Search guarantees whatever its
// approximation (ExactBelow is low, so the 1-bit scan, or for sparse data
// the int8 scan, answers): results are live vectors that pass the filter,
// in decreasing order of their exact cosine similarity (ties by id), as
// many as min(k, matching vectors); and a query equal to a stored vector
// that passes the filter finds a vector as similar (itself or an equal one)
// first (unless it is the zero vector, similar to nothing).
func TestSearchProperties(t *testing.T) {
	ps := gopter.NewProperties(proptest.Params(t, 100))
	ps.Property("results are exact-scored, ordered, filtered, live and complete", prop.ForAll(
		func(c searchCase) bool {
			r := rand.New(rand.NewSource(c.Seed))
			x := New(&Options{ExactBelow: 16})
			ref := map[string]Item{}
			types := []string{"knowledge", "memory", "preference"}
			vec := func() []float32 {
				v := gauss(r, c.Dim, 1)
				if c.Sparse {
					for j := range v {
						if r.Intn(3) == 0 {
							v[j] = 0
						}
					}
				}
				return v
			}
			for i := 0; i < c.N; i++ {
				id := fmt.Sprint("id", r.Intn(c.N+c.N/4+1)) // some ids come twice: replacements
				it := Item{ID: id, Vector: vec(), DocType: types[r.Intn(3)], Source: fmt.Sprint("s", r.Intn(40))}
				if err := x.Add([]Item{it}); err != nil {
					t.Log(err)
					return false
				}
				ref[id] = it
			}
			for i := 0; i < c.N/5; i++ {
				id := fmt.Sprint("id", r.Intn(c.N+1))
				x.Delete(id)
				delete(ref, id)
			}
			var f *Filter
			odd := func(id string) bool { return len(id)%2 == 1 }
			switch c.Filter {
			case 1:
				f = &Filter{DocTypes: []string{types[r.Intn(3)]}}
			case 2:
				f = &Filter{Source: fmt.Sprint("s", r.Intn(45))}
			case 3:
				f = &Filter{Accept: odd}
			case 4:
				f = &Filter{DocTypes: []string{"knowledge", "memory"}, Accept: odd}
			}
			q := vec()
			var self string
			if c.Self && len(ref) > 0 {
				ids := make([]string, 0, len(ref))
				for id := range ref {
					ids = append(ids, id)
				}
				sort.Strings(ids)
				self = ids[r.Intn(len(ids))]
				q = append([]float32(nil), ref[self].Vector...)
			}
			got, err := x.Search(q, c.K, f)
			if err != nil {
				t.Log(err)
				return false
			}
			want := brute(ref, q, len(ref), f) // every match, best first
			if len(got) != min(c.K, len(want)) {
				t.Logf("%d results, want %d (of %d matching)", len(got), min(c.K, len(want)), len(want))
				return false
			}
			qn := unit(append([]float32(nil), q...))
			for i, h := range got {
				it, ok := ref[h.ID]
				if !ok {
					t.Logf("result %s is deleted or unknown", h.ID)
					return false
				}
				if !passes(f, it) {
					t.Logf("result %s does not pass the filter", h.ID)
					return false
				}
				var exact float64
				vn := unit(append([]float32(nil), it.Vector...))
				for j := range qn {
					exact += float64(qn[j]) * float64(vn[j])
				}
				if math.Abs(exact-float64(h.Score)) > 1e-4 {
					t.Logf("result %s scored %v, exact %v", h.ID, h.Score, exact)
					return false
				}
				if i > 0 && (h.Score > got[i-1].Score || h.Score == got[i-1].Score && h.ID < got[i-1].ID) {
					t.Logf("results out of order at %d: %v", i, got)
					return false
				}
			}
			var selfNorm float64
			for _, v := range ref[self].Vector {
				selfNorm += float64(v) * float64(v)
			}
			if self != "" && selfNorm > 0 && passes(f, ref[self]) && (len(got) == 0 || got[0].Score < 1-1e-4) {
				t.Logf("query equal to %s: first result %v", self, got)
				return false
			}
			return true
		},
		genSearchCase(),
	))
	ps.TestingRun(t)
}

func passes(f *Filter, it Item) bool {
	if f == nil {
		return true
	}
	if len(f.DocTypes) > 0 {
		ok := false
		for _, t := range f.DocTypes {
			ok = ok || t == it.DocType
		}
		if !ok {
			return false
		}
	}
	if f.Source != "" && f.Source != it.Source {
		return false
	}
	return f.Accept == nil || f.Accept(it.ID)
}
