package vecindex

import "sort"

type scored struct {
	score float32
	slot  int32
}

// worse orders by ascending score, then descending slot, so that among equal
// scores the lower slot is kept.
func worse(a, b scored) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.slot > b.slot
}

// topK keeps the k best (score, slot) pairs in a min-heap.
type topK struct {
	k     int
	items []scored
}

func (t *topK) init(k int) {
	t.k = k
	t.items = t.items[:0]
}

func (t *topK) len() int { return len(t.items) }

// min is the worst kept item; only valid when len() > 0.
func (t *topK) min() scored { return t.items[0] }

func (t *topK) push(score float32, slot int32) {
	it := scored{score, slot}
	if len(t.items) < t.k {
		t.items = append(t.items, it)
		up(t.items, len(t.items)-1)
		return
	}
	if !worse(t.items[0], it) {
		return
	}
	t.items[0] = it
	down(t.items, 0)
}

func (t *topK) sorted() []scored {
	out := append([]scored(nil), t.items...)
	sort.Slice(out, func(i, j int) bool { return worse(out[j], out[i]) })
	return out
}

// up and down maintain a min-heap under worse.
func up(h []scored, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !worse(h[i], h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func down(h []scored, i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && worse(h[r], h[l]) {
			m = r
		}
		if !worse(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
