package vecindex

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// TestTiesAtTheCutByID: when a top-k cut falls inside a group of records
// with the same score (duplicate texts have the same vector; a sparse query
// shares nothing with most records, which all score 0), the records kept
// are those with the lowest ids, on every search path and whatever order
// the records were added in. Before, the lower slot won: a store reopened
// (whose slots follow its snapshot, not the order of writes) kept other
// records, and hybrid fusion, which normalises over the whole pool, then
// scored even the first results differently.
func TestTiesAtTheCutByID(t *testing.T) {
	const dim = 16
	r := rand.New(rand.NewSource(7))
	q := make([]float32, dim)
	q[0] = 1 // sparse: one component of sixteen
	var items []Item
	// 20 records that score between 0.55 and 0.95 against q.
	for i := 0; i < 20; i++ {
		v := make([]float32, dim)
		v[0] = 0.55 + 0.4*float32(i)/20
		v[1+r.Intn(dim-1)] = 0.5
		items = append(items, Item{ID: fmt.Sprintf("good-%02d", i), Vector: unit(v), Source: "s"})
	}
	// 30 copies of one vector (score 0.2) and 30 that share no component
	// with q (score exactly 0).
	dup := make([]float32, dim)
	dup[0], dup[2] = 0.2, 0.9797959
	for i := 0; i < 30; i++ {
		items = append(items, Item{ID: fmt.Sprintf("dup-%02d", i), Vector: dup, Source: "s"})
		z := make([]float32, dim)
		z[1+i%(dim-1)], z[1+(i+3)%(dim-1)] = 0.6, 0.8
		items = append(items, Item{ID: fmt.Sprintf("zero-%02d", i), Vector: z, Source: "s"})
	}
	lowest := func(prefix string, n int) []string {
		var ids []string
		for _, it := range items {
			if strings.HasPrefix(it.ID, prefix) {
				ids = append(ids, it.ID)
			}
		}
		slices.Sort(ids)
		return ids[:n]
	}
	paths := []struct {
		name   string
		opts   Options
		filter *Filter
	}{
		{"exact scan", Options{}, nil},
		{"one source", Options{}, &Filter{Source: "s"}},
		{"int8 sparse scan", Options{ExactBelow: 1, Sparse: SparseAlways}, nil},
		{"1-bit scan", Options{ExactBelow: 1, Sparse: SparseNever}, nil},
		{"1-bit scan without rows", Options{ExactBelow: 1, Sparse: SparseNever, NoRows: true}, nil},
	}
	for _, p := range paths {
		for _, order := range []string{"in id order", "in reverse id order", "shuffled"} {
			add := slices.Clone(items)
			switch order {
			case "in reverse id order":
				slices.SortFunc(add, func(a, b Item) int { return strings.Compare(b.ID, a.ID) })
			case "shuffled":
				r.Shuffle(len(add), func(i, j int) { add[i], add[j] = add[j], add[i] })
			default:
				slices.SortFunc(add, func(a, b Item) int { return strings.Compare(a.ID, b.ID) })
			}
			opts := p.opts
			x := New(&opts)
			for i := 0; i < len(add); i += 7 { // several batches
				if err := x.Add(add[i:min(len(add), i+7)]); err != nil {
					t.Fatal(err)
				}
			}
			for _, c := range []struct {
				k      int
				prefix string
				tied   int
			}{{25, "dup-", 5}, {57, "zero-", 7}} {
				res, err := x.Search(q, c.k, p.filter)
				if err != nil {
					t.Fatal(err)
				}
				if len(res) != c.k {
					t.Fatalf("%s, %s: %d results for k=%d", p.name, order, len(res), c.k)
				}
				var got []string
				for _, h := range res {
					if strings.HasPrefix(h.ID, c.prefix) {
						got = append(got, h.ID)
					}
				}
				if want := lowest(c.prefix, c.tied); !slices.Equal(got, want) {
					t.Errorf("%s, added %s, k=%d: kept %v of the tied records, want the lowest ids %v", p.name, order, c.k, got, want)
				}
			}
			x.Close()
		}
	}
}
