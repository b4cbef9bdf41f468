package vecindex

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// persistFixture is an index with replaced and deleted vectors, and the
// order (ids and vectors) a store would write its codes in.
func persistFixture(t testing.TB, sparse int, n, dim int) (*Index, []Item) {
	r := rand.New(rand.NewSource(11))
	x := New(&Options{Sparse: sparse, ExactBelow: 64})
	items := make([]Item, n)
	vecs := clustered(r, n, dim)
	for i := range items {
		v := vecs[i]
		if sparse == SparseAlways {
			for j := range v {
				if j%3 == 0 {
					v[j] = 0
				}
			}
			v = unit(v)
		}
		items[i] = Item{ID: fmt.Sprint("id", i), Vector: v, DocType: []string{"knowledge", "memory"}[i%2], Source: fmt.Sprint("s", i%50)}
	}
	if err := x.Add(items[:n/2]); err != nil {
		t.Fatal(err)
	}
	if err := x.Add(items[n/2:]); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 17 {
		x.Delete(items[i].ID)
	}
	// The store's order: sorted by id, deleted ones absent.
	var order []Item
	for _, it := range items {
		if _, ok := x.slotOf[it.ID]; ok {
			order = append(order, it)
		}
	}
	slices.SortFunc(order, func(a, b Item) int {
		if a.ID < b.ID {
			return -1
		}
		if a.ID > b.ID {
			return 1
		}
		return 0
	})
	return x, order
}

func writeCodes(t testing.TB, x *Index, order []Item, tag string) []byte {
	var buf bytes.Buffer
	cw, err := x.NewCodesWriter(&buf, len(order))
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range order {
		if err := cw.Add(it.ID, it.Vector); err != nil {
			t.Fatal(err)
		}
	}
	if err := cw.Finish([]byte(tag)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCodesRoundTrip writes the codes of an index in another order than its
// slots, reads them back, loads them with the same vectors in that order,
// and requires the same codes per id and the same search results, for dense
// and for sparse data (int8 codes included).
func TestCodesRoundTrip(t *testing.T) {
	for _, sparse := range []int{SparseAuto, SparseAlways} {
		x, order := persistFixture(t, sparse, 3000, 72)
		data := writeCodes(t, x, order, "tag-1")
		c, tag, err := ReadCodes(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		if string(tag) != "tag-1" || c.Len() != len(order) || c.Dim() != 72 {
			t.Fatalf("tag %q, %d vectors of %d dimensions", tag, c.Len(), c.Dim())
		}
		y := New(&Options{Sparse: sparse, ExactBelow: 64})
		if err := y.Load(order, c); err != nil {
			t.Fatal(err)
		}
		if xs, ys := x.Stats(), y.Stats(); xs.Live != ys.Live || xs.Centred != ys.Centred || xs.Int8 != ys.Int8 || xs.Rows != ys.Rows {
			t.Fatalf("stats %+v after load, %+v before", ys, xs)
		}
		w := x.coder.words
		a, b := make([]uint64, w), make([]uint64, w)
		for _, it := range order {
			sx, sy := x.slotOf[it.ID], y.slotOf[it.ID]
			blockCode(a, x.codes, w, int(sx))
			blockCode(b, y.codes, w, int(sy))
			if !slices.Equal(a, b) || x.fac.get(int(sx)) != y.fac.get(int(sy)) {
				t.Fatalf("%s: codes differ after the round trip", it.ID)
			}
			if x.sparse == 1 && x.quant.scale[sx] != y.quant.scale[sy] {
				t.Fatalf("%s: int8 scale differs after the round trip", it.ID)
			}
			if x.rows.on && (x.rows.scale[sx] != y.rows.scale[sy] || !slices.Equal(x.rows.row(int(sx)), y.rows.row(int(sy)))) {
				t.Fatalf("%s: int8 row differs after the round trip", it.ID)
			}
		}
		r := rand.New(rand.NewSource(12))
		for i := 0; i < 30; i++ {
			q := order[r.Intn(len(order))].Vector
			for _, f := range []*Filter{nil, {DocTypes: []string{"memory"}}} {
				got, err := y.Search(q, 10, f)
				if err != nil {
					t.Fatal(err)
				}
				want, _ := x.Search(q, 10, f)
				if !sameIDs(got, want) {
					t.Fatalf("sparse=%d query %d: loaded index returns %v, original %v", sparse, i, got, want)
				}
			}
		}
		// A new vector after the load is searchable at once.
		extra := Item{ID: "extra", Vector: order[0].Vector, DocType: "knowledge"}
		if err := y.Add([]Item{extra}); err != nil {
			t.Fatal(err)
		}
		if res, _ := y.Search(extra.Vector, 2, nil); len(res) != 2 || (res[0].ID != "extra" && res[1].ID != "extra") {
			t.Fatalf("vector added after Load not found: %v", res)
		}
	}
}

// TestCodesRejected: codes of other vectors, a damaged or truncated file,
// and a non-empty index are refused with ErrCodes.
func TestCodesRejected(t *testing.T) {
	x, order := persistFixture(t, SparseAuto, 800, 40)
	data := writeCodes(t, x, order, "t")
	c, _, err := ReadCodes(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	shuffled := append([]Item(nil), order...)
	rand.New(rand.NewSource(1)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	if err := New(nil).Load(shuffled, c); !errors.Is(err, ErrCodes) {
		t.Fatalf("Load with other vectors: %v", err)
	}
	if err := New(nil).Load(order[1:], c); !errors.Is(err, ErrCodes) {
		t.Fatalf("Load with one vector fewer: %v", err)
	}
	if err := x.Load(order, c); !errors.Is(err, ErrCodes) {
		t.Fatalf("Load into a non-empty index: %v", err)
	}
	for _, cut := range []int{0, 10, len(data) / 2, len(data) - 1} {
		if _, _, err := ReadCodes(bytes.NewReader(data[:cut]), int64(cut)); !errors.Is(err, ErrCodes) {
			t.Fatalf("truncated at %d: %v", cut, err)
		}
	}
	for _, at := range []int{9, 40, len(data) / 3, len(data) - 3} {
		bad := append([]byte(nil), data...)
		bad[at] ^= 0x40
		if _, _, err := ReadCodes(bytes.NewReader(bad), int64(len(bad))); !errors.Is(err, ErrCodes) {
			t.Fatalf("byte %d flipped: %v", at, err)
		}
	}
	if _, _, err := ReadCodes(bytes.NewReader(append(append([]byte(nil), data...), 0)), int64(len(data)+1)); !errors.Is(err, ErrCodes) {
		t.Fatalf("trailing byte: %v", err)
	}
	// The writer refuses a changed index and a wrong count.
	var buf bytes.Buffer
	cw, _ := x.NewCodesWriter(&buf, 2)
	cw.Add(order[0].ID, order[0].Vector)
	if err := cw.Finish(nil); !errors.Is(err, ErrCodes) {
		t.Fatalf("Finish after 1 of 2: %v", err)
	}
	y := New(nil)
	y.Add(order[:10])
	cw, _ = y.NewCodesWriter(&buf, 20)
	var more []Item
	r := rand.New(rand.NewSource(2))
	for i := 0; i < centreMin; i++ {
		more = append(more, Item{ID: fmt.Sprint("more", i), Vector: unit(gauss(r, 40, 1))})
	}
	y.Add(more) // re-centres the codes
	if err := cw.Add(order[0].ID, order[0].Vector); !errors.Is(err, ErrCodes) {
		t.Fatalf("Add after the codes were re-centred: %v", err)
	}
}

// FuzzReadCodes feeds mutations of valid codes (dense and sparse) to
// ReadCodes: it must fail cleanly or return codes that Load accepts or
// refuses without panicking.
func FuzzReadCodes(f *testing.F) {
	for _, sparse := range []int{SparseAuto, SparseAlways} {
		x, order := persistFixture(f, sparse, 40, 8)
		f.Add(writeCodes(f, x, order, "seed"))
	}
	f.Add([]byte("RGMVXC01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, _, err := ReadCodes(bytes.NewReader(data), int64(len(data)))
		// Knowing the size only refuses sooner and allocates once: the
		// verdict is the same without it.
		c2, _, err2 := ReadCodes(bytes.NewReader(data), -1)
		if (err == nil) != (err2 == nil) || err == nil && (c.Len() != c2.Len() || len(c.codes) != len(c2.codes) || len(c.rows.codes) != len(c2.rows.codes)) {
			t.Fatalf("with the size: %v, without: %v", err, err2)
		}
		if err != nil {
			if !errors.Is(err, ErrCodes) {
				t.Fatalf("error %v does not wrap ErrCodes", err)
			}
			return
		}
		if c.Len() > 100000 {
			return
		}
		r := rand.New(rand.NewSource(1))
		items := make([]Item, c.Len())
		for i := range items {
			items[i] = Item{ID: fmt.Sprint(i), Vector: unit(gauss(r, c.Dim(), 1))}
		}
		x := New(nil)
		if err := x.Load(items, c); err == nil {
			x.Search(items[0].Vector, 3, nil)
		}
	})
}
