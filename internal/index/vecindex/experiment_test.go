package vecindex

import (
	"fmt"
	"math/bits"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/viterin/vek/vek32"
)

// BenchmarkDenseExperiment compares candidate structures for dense vectors
// on the data sets of dataset_test.go (RAGMEM_VEC_SETS, comma-separated,
// default randproj-100000-768,uselite):
//
//	exact        parallel float32 scan (the reference)
//	int8dm       the dimension-major int8 scan with exact rescoring
//	bin/C=…      1-bit codes with corrected estimates (binary.go), 4-bit
//	             query, the best C estimates rescored exactly (portable
//	             kernel, one estimate at a time)
//	ham/C=…      plain sign bits ranked by Hamming distance, C rescored
//	bound/eps=…  the 1-bit codes, candidates by error bound (portable)
//	index/…      the index's own 1-bit search (AVX-512 kernel where the CPU
//	             has it, bounds, budget, int8 rows or not)
//
// Each reports ns per top-100 query and recall@10 / recall@100 against the
// exact scan (k = 10 and k = 100 from the same C).
//
//	RAGMEM_VEC_SETS=randproj-100000-768 go test -run xxx -bench DenseExperiment -benchtime 100x ./internal/index/vecindex
func BenchmarkDenseExperiment(b *testing.B) {
	sets := os.Getenv("RAGMEM_VEC_SETS")
	if sets == "" {
		sets = "randproj-100000-768,uselite"
	}
	for _, name := range strings.Split(sets, ",") {
		s := loadDenseSet(b, name)
		runDenseExperiment(b, s)
	}
}

type truth struct{ top10, top100 []map[int32]bool }

func exactTruth(s *denseSet) truth {
	var t truth
	t.top10 = make([]map[int32]bool, len(s.queries))
	t.top100 = make([]map[int32]bool, len(s.queries))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for qi, q := range s.queries {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var top topK
			top.init(100, nil)
			for i, v := range s.base {
				top.push(vek32.Dot(q, v), int32(i))
			}
			items := top.sorted()
			t.top10[qi], t.top100[qi] = map[int32]bool{}, map[int32]bool{}
			for i, it := range items {
				if i < 10 {
					t.top10[qi][it.slot] = true
				}
				t.top100[qi][it.slot] = true
			}
		}()
	}
	wg.Wait()
	return t
}

func recallOf(got []scored, want map[int32]bool, k int) float64 {
	hit := 0
	for i, it := range got {
		if i < k && want[it.slot] {
			hit++
		}
	}
	return float64(hit) / float64(len(want))
}

// parallelTop runs scan over [0, n) split across the cores and merges.
func parallelTop(n, k int, scan func(lo, hi int, top *topK)) *topK {
	workers := runtime.GOMAXPROCS(0)
	if n < 20000 {
		workers = 1
	}
	tops := make([]topK, workers)
	var wg sync.WaitGroup
	step := (n + workers - 1) / workers
	for w := range tops {
		tops[w].init(k, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			scan(w*step, min(n, (w+1)*step), &tops[w])
		}()
	}
	wg.Wait()
	var out topK
	out.init(k, nil)
	for w := range tops {
		for _, it := range tops[w].items {
			out.push(it.score, it.slot)
		}
	}
	return &out
}

func rescoreTop(s *denseSet, q []float32, cand *topK, k int) []scored {
	var top topK
	top.init(k, nil)
	for _, it := range cand.items {
		top.push(vek32.Dot(q, s.base[it.slot]), it.slot)
	}
	return top.sorted()
}

func runDenseExperiment(b *testing.B, s *denseSet) {
	n := len(s.base)
	tr := exactTruth(s)
	b.Logf("%s: %d vectors, %d queries, %d dimensions", s.name, n, len(s.queries), s.dim)
	measure := func(name string, search func(q []float32, k int) []scored) {
		var r10, r100 float64
		for qi, q := range s.queries {
			r10 += recallOf(search(q, 10), tr.top10[qi], 10)
			r100 += recallOf(search(q, 100), tr.top100[qi], 100)
		}
		r10 /= float64(len(s.queries))
		r100 /= float64(len(s.queries))
		b.Run(fmt.Sprintf("%s/%s", s.name, name), func(b *testing.B) {
			i := 0
			for b.Loop() {
				search(s.queries[i%len(s.queries)], 100)
				i++
			}
			b.ReportMetric(r10, "recall@10")
			b.ReportMetric(r100, "recall@100")
		})
	}

	measure("exact", func(q []float32, k int) []scored {
		return parallelTop(n, k, func(lo, hi int, top *topK) {
			for i := lo; i < hi; i++ {
				top.push(vek32.Dot(q, s.base[i]), int32(i))
			}
		}).sorted()
	})

	// The existing dimension-major int8 scan.
	x := New(&Options{Sparse: SparseAlways})
	items := make([]Item, n)
	for i, v := range s.base {
		items[i] = Item{ID: fmt.Sprint(i), Vector: v, DocType: "knowledge"}
	}
	if err := x.Add(items); err != nil {
		b.Fatal(err)
	}
	measure("int8dm", func(q []float32, k int) []scored {
		var top topK
		top.init(k, nil)
		x.mu.RLock()
		x.quantSearch(q, sparsify(q), &compiled{all: true, src: -1}, &top)
		x.mu.RUnlock()
		return top.sorted()
	})
	x.Close()
	x = nil
	items = nil

	// 1-bit codes, centred on the mean (or not).
	for _, centred := range []bool{true, false} {
		var centre []float32
		if centred {
			centre = make([]float32, s.dim)
			for _, v := range s.base {
				vek32.Add_Inplace(centre, v)
			}
			vek32.MulNumber_Inplace(centre, 1/float32(n))
		}
		c := newBinCoder(s.dim, 1, centre)
		codes := make([]uint64, n*c.words)
		fac := make([]binFactor, n)
		t0 := time.Now()
		scratch := make([]float32, c.pd)
		for i, v := range s.base {
			fac[i] = c.encode(codes[i*c.words:(i+1)*c.words], v, scratch)
		}
		b.Logf("%s: encoded %d vectors in %v (%.1f µs each), centred %v", s.name, n, time.Since(t0), float64(time.Since(t0).Microseconds())/float64(n), centred)
		cs := []int{100, 200, 400, 800}
		if !centred {
			cs = []int{200, 800}
		}
		for _, C := range cs {
			measure(fmt.Sprintf("bin-centred=%v/C=%d", centred, C), func(q []float32, k int) []scored {
				bq := c.prepare(q, make([]float32, c.pd))
				cand := parallelTop(n, max(C, k), func(lo, hi int, top *topK) {
					expScanRange(codes, fac, c.words, &bq, lo, hi, top)
				})
				return rescoreTop(s, q, cand, k)
			})
		}
		if centred {
			// Adaptive: candidates by upper bound est + eps·err, rescored in
			// that order until the next bound is below the k-th exact score.
			for _, eps := range []float32{1, 1.5, 2, 3} {
				var rescored, queries int
				search := func(q []float32, k int) []scored {
					bq := c.prepare(q, make([]float32, c.pd))
					cand := parallelTop(n, 20*k+2000, func(lo, hi int, top *topK) {
						for i := lo; i < hi; i++ {
							v := bq.estimate(codes[i*c.words:(i+1)*c.words], fac[i]) + eps*fac[i].err
							if len(top.items) == top.k && v <= top.items[0].score {
								continue
							}
							top.push(v, int32(i))
						}
					}).sorted()
					var top topK
					top.init(k, nil)
					for _, it := range cand {
						if top.len() == k && it.score < top.min().score {
							break
						}
						top.push(vek32.Dot(q, s.base[it.slot]), it.slot)
						rescored++
					}
					queries++
					return top.sorted()
				}
				measure(fmt.Sprintf("bound/eps=%.1f", eps), search)
				b.Logf("%s: bound eps=%.1f: %.0f vectors rescored per query", s.name, eps, float64(rescored)/float64(queries))
			}
		}
		if !centred {
			// Plain sign bits (of the rotated, uncentred vectors), Hamming.
			for _, C := range []int{400, 1600} {
				measure(fmt.Sprintf("ham/C=%d", C), func(q []float32, k int) []scored {
					sc := make([]float32, c.pd)
					c.rot.rotate(sc, q)
					qs := make([]uint64, c.words)
					for i, f := range sc {
						if f > 0 {
							qs[i/64] |= 1 << (i % 64)
						}
					}
					cand := parallelTop(n, max(C, k), func(lo, hi int, top *topK) {
						for i := lo; i < hi; i++ {
							code := codes[i*c.words : (i+1)*c.words]
							h := 0
							for w, cw := range code {
								h += bits.OnesCount64(cw ^ qs[w])
							}
							v := float32(-h)
							if len(top.items) == top.k && v <= top.items[0].score {
								continue
							}
							top.push(v, int32(i))
						}
					})
					return rescoreTop(s, q, cand, k)
				})
			}
		}
	}

	// The index itself (1-bit scan with bounds, Options.Confidence), with
	// and without its int8 rows.
	for _, o := range []Options{{Confidence: 1.5}, {Confidence: 2}, {Confidence: 2, NoRows: true}} {
		conf := o.Confidence
		x := New(&o)
		items := make([]Item, n)
		for i, v := range s.base {
			items[i] = Item{ID: fmt.Sprint(i), Vector: v, DocType: "knowledge"}
		}
		t0 := time.Now()
		if err := x.Add(items); err != nil {
			b.Fatal(err)
		}
		b.Logf("%s: Add of %d vectors took %v (%+v)", s.name, n, time.Since(t0), x.Stats())
		before := x.Stats().Rescored
		measure(fmt.Sprintf("index/confidence=%.1f/rows=%v", conf, !o.NoRows), func(q []float32, k int) []scored {
			var top topK
			top.init(k, nil)
			x.mu.RLock()
			c := x.compile(&Filter{DocTypes: []string{"knowledge"}})
			x.binSearch(q, &c, &top)
			x.mu.RUnlock()
			return top.sorted()
		})
		b.Logf("%s: index (confidence %.1f, rows %v): %d float32 vectors read in all", s.name, conf, !o.NoRows, x.Stats().Rescored-before)
	}
}

// expScanRange pushes the estimates of slots [lo, hi) into cand (no filter,
// no deletions).
func expScanRange(codes []uint64, fac []binFactor, words int, q *binQuery, lo, hi int, cand *topK) {
	for slot := lo; slot < hi; slot++ {
		v := q.estimate(codes[slot*words:(slot+1)*words], fac[slot])
		if len(cand.items) == cand.k && v <= cand.items[0].score {
			continue
		}
		cand.push(v, int32(slot))
	}
}

// BenchmarkIndexSearch is the index's own Search (top 10 and top 100, the
// hybrid candidate pool) on the data sets of RAGMEM_VEC_SETS (default
// randproj-100000-768), with a document-type filter as the local backend
// sends it.
func BenchmarkIndexSearch(b *testing.B) {
	sets := os.Getenv("RAGMEM_VEC_SETS")
	if sets == "" {
		sets = "randproj-100000-768"
	}
	for _, name := range strings.Split(sets, ",") {
		s := loadDenseSet(b, name)
		var opt Options
		fmt.Sscan(os.Getenv("RAGMEM_VEC_RESCORE"), &opt.Rescore)
		fmt.Sscan(os.Getenv("RAGMEM_VEC_CONFIDENCE"), &opt.Confidence)
		x := New(&opt)
		items := make([]Item, len(s.base))
		for i, v := range s.base {
			items[i] = Item{ID: fmt.Sprint(i), Vector: v, DocType: "knowledge"}
		}
		if err := x.Add(items); err != nil {
			b.Fatal(err)
		}
		f := &Filter{DocTypes: []string{"knowledge"}}
		for _, k := range []int{10, 100} {
			rec, _ := x.Recall(s.queries[:min(100, len(s.queries))], k, f)
			b.Run(fmt.Sprintf("%s/k=%d", s.name, k), func(b *testing.B) {
				i := 0
				cpu0 := cpuTime()
				for b.Loop() {
					x.Search(s.queries[i%len(s.queries)], k, f)
					i++
				}
				b.ReportMetric((cpuTime()-cpu0).Seconds()*1000/float64(b.N), "cpu-ms/op")
				b.ReportMetric(rec, fmt.Sprintf("recall@%d", k))
			})
		}
	}
}

// cpuTime is the process's user + system CPU time: on a shared machine it
// moves less with the load than wall time does.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
