package vecindex

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"slices"
	"testing"

	"github.com/ragmem/ragmem/internal/benchdata"
	"github.com/ragmem/ragmem/internal/embed"
)

// TestQuantisedScanRecall embeds a synthetic corpus and known-item queries
// with the default lexical embedder (sparse queries: the quantised scan
// answers them) and requires recall@10 and @50 >= 0.98 against the exact
// float32 scan.
func TestQuantisedScanRecall(t *testing.T) {
	n := 5000
	emb := embed.Default()
	texts := make([]string, n)
	for i := range texts {
		d := benchdata.NewSynthDoc(int64(i), i, 110)
		texts[i] = d.Title + "\n" + d.Text
	}
	vecs, err := emb.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	qs := benchdata.NewSynth(9)
	var qv [][]float32
	for i := 0; i < 200; i++ {
		d := benchdata.NewSynthDoc(int64(i*23), i*23, 110)
		v, _ := emb.Embed(context.Background(), []string{qs.KnownItem("q", d).Text})
		qv = append(qv, v[0])
	}
	x := New(nil)
	defer x.Close()
	items := make([]Item, n)
	for i := range items {
		items[i] = Item{ID: fmt.Sprint(i), Vector: vecs[i], DocType: "knowledge"}
	}
	if err := x.Add(items); err != nil {
		t.Fatal(err)
	}
	if nz := len(sparsify(qv[0]).dims); nz > x.Dim()/2 {
		t.Fatalf("query has %d non-zero dimensions; the test needs sparse queries", nz)
	}
	for _, k := range []int{10, 50} {
		r, err := x.Recall(qv, k, &Filter{DocTypes: []string{"knowledge"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("recall@%d %.4f", k, r)
		if r < 0.98 {
			t.Errorf("recall@%d = %.4f, want >= 0.98", k, r)
		}
	}
	if st := x.Stats(); !st.Int8 {
		t.Errorf("lexical vectors did not keep int8 codes: %+v", st)
	}
}

// TestBulkAddMatchesIncremental checks that one large Add, which normalises
// and quantises over several goroutines, stores exactly the int8 codes many
// small Adds store, including an id added twice in the same call, and
// exactly the 1-bit codes of the same Add on one core.
func TestBulkAddMatchesIncremental(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4)) // the parallel path whatever the machine
	r := rand.New(rand.NewSource(5))
	n := 3*blockSize + 17
	items := make([]Item, n)
	for i := range items {
		v := gauss(r, 24, 1)
		for j := range v {
			v[j] *= 3 // not normalised: Add must normalise
		}
		items[i] = Item{ID: fmt.Sprint(i), Vector: v, DocType: "knowledge"}
	}
	items[n-1].ID = items[5].ID // replaced within the call

	bulk, small := New(&Options{Sparse: SparseAlways}), New(&Options{Sparse: SparseAlways})
	defer bulk.Close()
	defer small.Close()
	if err := bulk.Add(items); err != nil {
		t.Fatal(err)
	}
	for lo := 0; lo < n; lo += 1000 {
		if err := small.Add(items[lo:min(n, lo+1000)]); err != nil {
			t.Fatal(err)
		}
	}
	if len(bulk.vecs) != len(small.vecs) || len(bulk.quant.blocks) != len(small.quant.blocks) {
		t.Fatalf("slots %d vs %d, blocks %d vs %d", len(bulk.vecs), len(small.vecs), len(bulk.quant.blocks), len(small.quant.blocks))
	}
	live := 0
	for slot := range bulk.vecs {
		a, b := bulk.vecs[slot], small.vecs[slot]
		if (a == nil) != (b == nil) {
			t.Fatalf("slot %d: deleted in one index only", slot)
		}
		if a == nil {
			continue
		}
		live++
		var norm float64
		for d := range a {
			if a[d] != b[d] {
				t.Fatalf("slot %d dim %d: %v vs %v", slot, d, a[d], b[d])
			}
			norm += float64(a[d]) * float64(a[d])
		}
		if math.Abs(norm-1) > 1e-4 {
			t.Fatalf("slot %d not normalised: |v|² = %v", slot, norm)
		}
		if bulk.quant.scale[slot] != small.quant.scale[slot] || bulk.quant.scale[slot] == 0 {
			t.Fatalf("slot %d: scale %v vs %v", slot, bulk.quant.scale[slot], small.quant.scale[slot])
		}
		blk, off := slot/blockSize, slot%blockSize
		for d := 0; d < bulk.quant.dim; d++ {
			if bulk.quant.blocks[blk][d*blockSize+off] != small.quant.blocks[blk][d*blockSize+off] {
				t.Fatalf("slot %d dim %d: codes differ", slot, d)
			}
		}
	}
	if live != n-1 || bulk.Stats().Live != n-1 {
		t.Fatalf("%d live slots, stats %+v; want %d", live, bulk.Stats(), n-1)
	}
	prev := runtime.GOMAXPROCS(1)
	serial := New(&Options{Sparse: SparseAlways})
	if err := serial.Add(items); err != nil {
		t.Fatal(err)
	}
	runtime.GOMAXPROCS(prev)
	if !slices.Equal(serial.codes, bulk.codes) || !slices.Equal(serial.fac.a, bulk.fac.a) || !slices.Equal(serial.fac.err, bulk.fac.err) {
		t.Fatal("1-bit codes differ between a parallel and a serial Add")
	}
	q := unit(gauss(r, 24, 1))
	got, err := bulk.Search(q, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := small.Search(q, 10, nil)
	if !sameIDs(got, want) {
		t.Fatalf("search differs: %v vs %v", got, want)
	}
}

// TestSetRowsTransposes: the tiled transpose that loads persisted sparse
// codes stores exactly what storing each row alone does, for runs that
// start anywhere in a block, cross block ends and end in a partial tile.
func TestSetRowsTransposes(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	const dim = 37
	one := func(s *quantStore, slot int, scale float32, row []byte) {
		s.grow(slot + 1)
		b, off := s.blocks[slot/blockSize], slot%blockSize
		for d, c := range row[:s.dim] {
			b[d*blockSize+off] = int8(c)
		}
		s.scale[slot] = scale
	}
	for _, run := range [][2]int{{0, 1}, {0, 64}, {3, 130}, {blockSize - 70, 200}, {blockSize - 1, blockSize + 2}, {5000, 1024}} {
		first, n := run[0], run[1]
		var want, got quantStore
		want.reset(dim)
		got.reset(dim)
		rows := make([][]byte, n)
		scales := make([]float32, n)
		for i := range rows {
			rows[i] = make([]byte, dim+3) // persisted rows may be longer than dim
			r.Read(rows[i])
			scales[i] = r.Float32()
			one(&want, first+i, scales[i], rows[i])
		}
		got.setRows(first, scales, rows)
		if !slices.Equal(want.scale, got.scale) || len(want.blocks) != len(got.blocks) {
			t.Fatalf("run %v: scales or blocks differ", run)
		}
		for b := range want.blocks {
			if !slices.Equal(want.blocks[b], got.blocks[b]) {
				t.Fatalf("run %v: block %d differs", run, b)
			}
		}
	}
}
