package vecindex

import (
	"math"
	"math/rand"
	"time"

	"github.com/viterin/vek/vek32"
)

// graph is an HNSW graph over slots [0, n) of its Index. Neighbour lists
// are slot numbers; layer 0 lists live in one flat array.
type graph struct {
	m, m0, efc int
	ml         float64
	rng        *rand.Rand

	n        int         // slots covered
	level    []uint8     // slot -> top layer
	nbr0     []int32     // slot*m0 ... : layer-0 neighbours
	cnt0     []uint8     // slot -> number of layer-0 neighbours
	upper    [][][]int32 // slot -> layers 1..level -> neighbours (nil for level 0)
	entry    int32
	maxLevel int
}

func newGraph(o Options) *graph {
	return &graph{m: o.M, m0: 2 * o.M, efc: o.EfConstruction, ml: 1 / math.Log(float64(o.M)), rng: rand.New(rand.NewSource(o.Seed)), entry: -1}
}

func (g *graph) neighbours(slot int32, layer int) []int32 {
	if layer == 0 {
		b := int(slot) * g.m0
		return g.nbr0[b : b+int(g.cnt0[slot])]
	}
	return g.upper[slot][layer-1]
}

func (g *graph) setNeighbours(slot int32, layer int, ns []int32) {
	if layer == 0 {
		b := int(slot) * g.m0
		copy(g.nbr0[b:b+g.m0], ns)
		g.cnt0[slot] = uint8(len(ns))
		return
	}
	g.upper[slot][layer-1] = append(g.upper[slot][layer-1][:0], ns...)
}

// visitedSet marks slots seen during one walk, by generation.
type visitedSet struct {
	gen  uint32
	mark []uint32
}

func (x *Index) getVisited(n int) *visitedSet {
	v, _ := x.visited.Get().(*visitedSet)
	if v == nil {
		v = &visitedSet{}
	}
	if len(v.mark) < n {
		v.mark = make([]uint32, n+n/4)
		v.gen = 0
	}
	v.gen++
	if v.gen == 0 {
		clear(v.mark)
		v.gen = 1
	}
	return v
}

// searchLayer is the beam search of HNSW on one layer: it returns up to ef
// best slots found from the entry points (all slots, tombstones included).
func (g *graph) searchLayer(x *Index, q []float32, eps []scored, ef, layer int, vis *visitedSet) []scored {
	var cand maxHeap
	var best topK
	best.init(ef)
	for _, e := range eps {
		if vis.mark[e.slot] == vis.gen {
			continue
		}
		vis.mark[e.slot] = vis.gen
		cand.push(e)
		best.push(e.score, e.slot)
	}
	for len(cand) > 0 {
		c := cand.pop()
		if best.len() >= ef && c.score < best.min().score {
			break
		}
		for _, nb := range g.neighbours(c.slot, layer) {
			if vis.mark[nb] == vis.gen {
				continue
			}
			vis.mark[nb] = vis.gen
			s := g.dist(x, q, nb)
			if best.len() < ef || s > best.min().score {
				cand.push(scored{s, nb})
				best.push(s, nb)
			}
		}
	}
	return best.items
}

// dist is the similarity of q to slot; a deleted slot keeps its vector in
// the graph's copy so that walks still pass through it.
func (g *graph) dist(x *Index, q []float32, slot int32) float32 {
	v := x.vecs[slot]
	if v == nil {
		v = x.graveyard[slot]
	}
	return vek32.Dot(q, v)
}

// greedy descends from the entry point to layer target+1.
func (g *graph) greedy(x *Index, q []float32, target int) scored {
	cur := scored{g.dist(x, q, g.entry), g.entry}
	for l := g.maxLevel; l > target; l-- {
		for changed := true; changed; {
			changed = false
			for _, nb := range g.neighbours(cur.slot, l) {
				if s := g.dist(x, q, nb); s > cur.score {
					cur, changed = scored{s, nb}, true
				}
			}
		}
	}
	return cur
}

// search walks the graph for q and pushes the matching live slots it finds
// into top.
func (g *graph) search(x *Index, q []float32, ef int, c *compiled, top *topK) {
	if g.entry < 0 {
		return
	}
	vis := x.getVisited(len(x.vecs))
	defer x.visited.Put(vis)
	ep := g.greedy(x, q, 0)
	found := g.searchLayer(x, q, []scored{ep}, ef, 0, vis)
	for _, it := range found {
		if x.vecs[it.slot] != nil && x.match(c, it.slot) {
			top.push(it.score, it.slot)
		}
	}
}

// selectNeighbours is the HNSW heuristic: candidates (best first) are kept
// when they are closer to the base than to every neighbour kept so far,
// which spreads the links in all directions; the rest fill up to m.
func (g *graph) selectNeighbours(x *Index, cands []scored, m int) []int32 {
	out := make([]int32, 0, m)
	var pruned []int32
	for _, c := range cands {
		if len(out) >= m {
			break
		}
		vc := g.vec(x, c.slot)
		good := true
		for _, s := range out {
			if vek32.Dot(vc, g.vec(x, s)) > c.score {
				good = false
				break
			}
		}
		if good {
			out = append(out, c.slot)
		} else {
			pruned = append(pruned, c.slot)
		}
	}
	for _, p := range pruned {
		if len(out) >= m {
			break
		}
		out = append(out, p)
	}
	return out
}

func (g *graph) vec(x *Index, slot int32) []float32 {
	if v := x.vecs[slot]; v != nil {
		return v
	}
	return x.graveyard[slot]
}

func sortBest(s []scored) {
	// insertion sort by descending score: lists are at most a few hundred long
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && worse(s[j-1], s[j]); j-- {
			s[j-1], s[j] = s[j], s[j-1]
		}
	}
}

// insert adds slot g.n to the graph.
func (g *graph) insert(x *Index) {
	slot := int32(g.n)
	g.n++
	lvl := int(math.Floor(-math.Log(1-g.rng.Float64()) * g.ml))
	if lvl > 30 {
		lvl = 30
	}
	g.level = append(g.level, uint8(lvl))
	g.cnt0 = append(g.cnt0, 0)
	g.nbr0 = append(g.nbr0, make([]int32, g.m0)...)
	var up [][]int32
	if lvl > 0 {
		up = make([][]int32, lvl)
	}
	g.upper = append(g.upper, up)
	if g.entry < 0 {
		g.entry, g.maxLevel = slot, lvl
		return
	}
	q := g.vec(x, slot)
	ep := scored{g.dist(x, q, g.entry), g.entry}
	for l := g.maxLevel; l > lvl; l-- {
		for changed := true; changed; {
			changed = false
			for _, nb := range g.neighbours(ep.slot, l) {
				if s := g.dist(x, q, nb); s > ep.score {
					ep, changed = scored{s, nb}, true
				}
			}
		}
	}
	eps := []scored{ep}
	vis := x.getVisited(g.n)
	defer x.visited.Put(vis)
	for l := min(lvl, g.maxLevel); l >= 0; l-- {
		vis.gen++
		if vis.gen == 0 {
			clear(vis.mark)
			vis.gen = 1
		}
		found := append([]scored(nil), g.searchLayer(x, q, eps, g.efc, l, vis)...)
		sortBest(found)
		mm := g.m
		if l == 0 {
			mm = g.m0
		}
		ns := g.selectNeighbours(x, found, g.m)
		g.setNeighbours(slot, l, ns)
		for _, nb := range ns {
			g.link(x, nb, slot, l, mm)
		}
		eps = found
	}
	if lvl > g.maxLevel {
		g.entry, g.maxLevel = slot, lvl
	}
}

// link adds a back link from nb to slot on layer l, pruning nb's list with
// the heuristic when it overflows.
func (g *graph) link(x *Index, nb, slot int32, l, mm int) {
	cur := g.neighbours(nb, l)
	if len(cur) < mm {
		ns := append(append(make([]int32, 0, len(cur)+1), cur...), slot)
		g.setNeighbours(nb, l, ns)
		return
	}
	base := g.vec(x, nb)
	cands := make([]scored, 0, len(cur)+1)
	for _, c := range cur {
		cands = append(cands, scored{vek32.Dot(base, g.vec(x, c)), c})
	}
	cands = append(cands, scored{vek32.Dot(base, g.vec(x, slot)), slot})
	sortBest(cands)
	g.setNeighbours(nb, l, g.selectNeighbours(x, cands, mm))
}

// builder extends the graph in the background, a few milliseconds of
// inserts at a time so that searches are never held up for long.
func (x *Index) builder() {
	defer close(x.done)
	for {
		select {
		case <-x.stop:
			return
		case <-x.wake:
		}
		for {
			select {
			case <-x.stop:
				return
			default:
			}
			x.mu.Lock()
			if x.opt.GraphThreshold < 0 || len(x.slotOf) < x.opt.GraphThreshold {
				x.running = false
				x.mu.Unlock()
				break
			}
			if x.g == nil {
				x.g = newGraph(x.opt)
			}
			x.running = true
			deadline := time.Now().Add(5 * time.Millisecond)
			for x.g.n < len(x.vecs) && time.Now().Before(deadline) {
				x.g.insert(x)
			}
			finished := x.g.n >= len(x.vecs)
			if finished {
				x.running = false
			}
			x.mu.Unlock()
			if finished {
				break
			}
		}
	}
}
