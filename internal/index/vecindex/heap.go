package vecindex

import "sort"

type scored struct {
	score float32
	slot  int32
}

// worse orders by ascending score, then by descending id, so that among
// equal scores the record with the lower id is kept. Slots follow the order
// records were added in, which reopening a store or compacting the index
// changes; ids do not, so a search keeps the same records at a cut through
// tied scores (duplicate texts, or the many records a sparse query shares
// nothing with) however the index was built. With x nil (tests of the heap
// alone), slots stand in for ids.
func worse(a, b scored, x *Index) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	if x == nil {
		return a.slot > b.slot
	}
	return x.idLess(b.slot, a.slot)
}

// topK keeps the k best (score, slot) pairs in a min-heap, ordered by worse
// with x's ids.
type topK struct {
	k     int
	x     *Index
	items []scored
}

func (t *topK) init(k int, x *Index) {
	t.k = k
	t.x = x
	t.items = t.items[:0]
}

func (t *topK) len() int { return len(t.items) }

// min is the worst kept item; only valid when len() > 0.
func (t *topK) min() scored { return t.items[0] }

func (t *topK) push(score float32, slot int32) {
	it := scored{score, slot}
	if len(t.items) < t.k {
		t.items = append(t.items, it)
		up(t.items, len(t.items)-1, t.x)
		return
	}
	if !worse(t.items[0], it, t.x) {
		return
	}
	t.items[0] = it
	down(t.items, 0, t.x)
}

func (t *topK) sorted() []scored {
	out := append([]scored(nil), t.items...)
	sort.Slice(out, func(i, j int) bool { return worse(out[j], out[i], t.x) })
	return out
}

// up and down maintain a min-heap under worse.
func up(h []scored, i int, x *Index) {
	for i > 0 {
		p := (i - 1) / 2
		if !worse(h[i], h[p], x) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func down(h []scored, i int, x *Index) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && worse(h[r], h[l], x) {
			m = r
		}
		if !worse(h[m], h[i], x) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
