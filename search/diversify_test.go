package search

import (
	"context"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/proptest"
)

func res(id, src, text string, score float64) Result {
	return Result{Record: index.Record{ID: id, SourceURL: src, Content: text}, Score: score}
}

// words returns a distinct text of n words for seed.
func words(seed, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = fmt.Sprintf("w%dx%d", seed, i)
	}
	return strings.Join(ws, " ")
}

func TestDiversifyIdenticalText(t *testing.T) {
	body := words(1, 50)
	in := []Result{
		res("a1", "https://a/", body, 0.9),
		res("b1", "https://b/?copy", "  "+strings.ReplaceAll(body, " ", "\n")+" ", 0.8), // same words, other white space
		res("c1", "https://c/", words(2, 50), 0.7),
		res("a2", "https://a/", body, 0.6), // the same text twice in one source
	}
	out := Diversify(in, &Options{TopK: 10})
	if got := ids(out); !slices.Equal(got, []string{"a1", "c1"}) {
		t.Fatalf("results %v, want [a1 c1]", got)
	}
	if !slices.Equal(out[0].AlsoAt, []string{"https://b/?copy"}) {
		t.Fatalf("AlsoAt %v", out[0].AlsoAt)
	}
	if got := ids(Diversify(in, &Options{TopK: 10, KeepDuplicates: true})); len(got) != 4 {
		t.Fatalf("KeepDuplicates dropped results: %v", got)
	}
}

func TestDiversifyNearDuplicatePages(t *testing.T) {
	// Page m is a mirror of page p with a changed sentence; once one of
	// its chunks is seen to copy p, its other chunks collapse too.
	p1, p2 := words(1, 60), words(2, 60)
	m1 := p1 + " share this on social media please"
	in := []Result{
		res("p1", "https://p/", p1, 0.9),
		res("m1", "https://mirror/p", m1, 0.85),
		res("x1", "https://x/", words(3, 60), 0.8),
		res("m2", "https://mirror/p", words(9, 60), 0.75), // a part of the mirror the original's top hit did not show
		res("p2", "https://p/", p2, 0.7),
	}
	out := Diversify(in, &Options{TopK: 10})
	if got := ids(out); !slices.Equal(got, []string{"p1", "x1", "p2"}) {
		t.Fatalf("results %v, want [p1 x1 p2]", got)
	}
	if !slices.Equal(out[0].AlsoAt, []string{"https://mirror/p"}) {
		t.Fatalf("AlsoAt %v", out[0].AlsoAt)
	}
	// Short chunks are not compared: a few shared words are no copy.
	short := []Result{res("s1", "https://s/", "thanks a lot", 0.9), res("t1", "https://t/", "thanks a lot!", 0.8)}
	if got := ids(Diversify(short, &Options{TopK: 10})); len(got) != 2 {
		t.Fatalf("short chunks collapsed: %v", got)
	}
	// Chunks that share half their words are not near duplicates.
	half := words(1, 30) + " " + words(5, 30)
	in2 := []Result{res("p1", "https://p/", p1, 0.9), res("h1", "https://h/", half, 0.8)}
	if got := ids(Diversify(in2, &Options{TopK: 10})); len(got) != 2 {
		t.Fatalf("half-overlapping chunks collapsed: %v", got)
	}
}

func TestDiversifyCapAndGroups(t *testing.T) {
	var in []Result
	score := 1.0
	add := func(id, src string) {
		n := len(in)
		in = append(in, res(id, src, words(100+n, 20), score))
		score -= 0.01
	}
	for i := 0; i < 5; i++ {
		add(fmt.Sprintf("a%d", i), "https://a/")
	}
	add("b0", "https://b/")
	add("a5", "https://a/")
	add("c0", "https://c/")
	add("b1", "https://b/")
	out := Diversify(in, &Options{TopK: 5, MaxPerSource: 2})
	if got := ids(out); !slices.Equal(got, []string{"a0", "a1", "b0", "c0", "b1"}) {
		t.Fatalf("capped %v", got)
	}
	if got := ids(Diversify(in, &Options{TopK: 5})); !slices.Equal(got, []string{"a0", "a1", "a2", "b0", "c0"}) {
		t.Fatalf("default cap (3): %v", got)
	}
	if got := ids(Diversify(in, &Options{TopK: 5, MaxPerSource: -1})); !slices.Equal(got, []string{"a0", "a1", "a2", "a3", "a4"}) {
		t.Fatalf("no cap: %v", got)
	}
	grouped := Diversify([]Result{in[0], in[5], in[1], in[7], in[8]}, &Options{TopK: 5, GroupBySource: true})
	if got := ids(grouped); !slices.Equal(got, []string{"a0", "a1", "b0", "b1", "c0"}) {
		t.Fatalf("grouped %v", got)
	}
}

// Search ranks more than TopK when diversification drops results, so that a
// source with many matching chunks does not leave the list short.
func TestSearchRefillsAfterDiversification(t *testing.T) {
	var text []driver.Hit
	for i := 0; i < 40; i++ {
		h := hit(fmt.Sprintf("a%d", i), 100-float64(i))
		h.Record.SourceURL = "https://a/"
		h.Record.Content = words(i, 20)
		text = append(text, h)
	}
	for i := 0; i < 3; i++ {
		h := hit(fmt.Sprintf("o%d", i), 50-float64(i))
		h.Record.Content = words(1000+i, 20)
		text = append(text, h)
	}
	f := &fakeRetriever{text: text}
	out, err := Search(context.Background(), f, "q", &Options{Mode: FullText, TopK: 5, MaxPerSource: 2, SimilarityThreshold: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(out); !slices.Equal(got, []string{"a0", "a1", "o0", "o1", "o2"}) {
		t.Fatalf("results %v", got)
	}
	if f.textN != 2 || f.textK != 60 {
		t.Fatalf("%d searches, the last for %d; want 2: for 15, then 60", f.textN, f.textK)
	}
}

// Properties of Diversify on random result lists: the results are a
// subsequence of the input (so still in descending score), at most TopK, no
// two with the same non-empty text, no source over its cap, and every input
// result that is not shown is a duplicate of a shown one or beyond the cap.
func TestDiversifyProperties(t *testing.T) {
	type input struct {
		Texts, Sources []int
		TopK, Cap      int
	}
	genInput := gopter.CombineGens(
		gen.SliceOfN(30, gen.IntRange(0, 12)), gen.SliceOfN(30, gen.IntRange(0, 4)),
		gen.IntRange(1, 12), gen.IntRange(-1, 4),
	).Map(func(v []any) input {
		return input{v[0].([]int), v[1].([]int), v[2].(int), v[3].(int)}
	})
	props := gopter.NewProperties(proptest.Params(t, 200))
	props.Property("diversified results keep order, bounds and distinct texts", prop.ForAll(func(in input) string {
		var rs []Result
		for i := range in.Texts {
			rs = append(rs, res(fmt.Sprint(i), fmt.Sprintf("https://s/%d", in.Sources[i]), words(in.Texts[i], 15), 1-float64(i)/100))
		}
		out := Diversify(rs, &Options{TopK: in.TopK, MaxPerSource: in.Cap})
		limit := in.Cap // the effective cap: 0 is the default, negative none
		if limit == 0 {
			limit = DefaultMaxPerSource
		}
		if len(out) > in.TopK {
			return "more than TopK"
		}
		pos, texts, per := 0, map[string]bool{}, map[string]int{}
		for _, r := range out {
			for pos < len(rs) && rs[pos].Record.ID != r.Record.ID {
				pos++
			}
			if pos == len(rs) {
				return "not a subsequence of the input"
			}
			if texts[r.Record.Content] {
				return "a text shown twice"
			}
			texts[r.Record.Content] = true
			per[r.Record.SourceURL]++
			if limit > 0 && per[r.Record.SourceURL] > limit {
				return "a source over its cap"
			}
		}
		if len(out) < in.TopK {
			// Every result not shown must have a reason.
			for _, r := range rs {
				if !slices.ContainsFunc(out, func(o Result) bool { return o.Record.ID == r.Record.ID }) &&
					!texts[r.Record.Content] && !(limit > 0 && per[r.Record.SourceURL] >= limit) {
					return "dropped " + r.Record.ID + " for no reason"
				}
			}
		}
		return ""
	}, genInput))
	props.TestingRun(t)
}

// BenchmarkDiversify600 is the step on what eval asks of it: 600 ranked
// chunks of 300 words, 200 kept, their fingerprints cached by the runs
// before (as an eval's queries over one collection find them).
func BenchmarkDiversify600(b *testing.B) {
	var in []Result
	for i := 0; i < 600; i++ {
		in = append(in, res(fmt.Sprint(i), fmt.Sprintf("https://s/%d", i%150), words(i, 300), 1-float64(i)/1000))
	}
	o := &Options{TopK: 200}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Diversify(in, o)
	}
}

// The edges of the near-duplicate test: a Jaccard similarity of exactly
// NearDuplicate collapses, a chunk of exactly nearDupMinWords words is
// compared, the same words in another order are no copy, and a copy is
// found across the length from which the sketch samples a chunk's grams.
func TestDiversifyNearDuplicateEdges(t *testing.T) {
	collapses := func(shownText, copyText string) bool {
		t.Helper()
		in := []Result{res("a", "https://a/", shownText, 0.9), res("b", "https://b/", copyText, 0.8)}
		out := Diversify(in, &Options{TopK: 10})
		return len(out) == 1 && slices.Equal(out[0].AlsoAt, []string{"https://b/"})
	}
	// 42 words are 40 3-grams; the first 34 words are 32 of them: 32/40.
	if j := jaccard(shingles(words(1, 42)), shingles(words(1, 34))); j != NearDuplicate {
		t.Fatalf("jaccard %v, want exactly %v", j, NearDuplicate)
	}
	if !collapses(words(1, 42), words(1, 34)) {
		t.Error("a chunk at exactly the near-duplicate threshold was kept")
	}
	if collapses(words(1, 42), words(1, 33)) {
		t.Error("a chunk below the near-duplicate threshold collapsed")
	}
	// Twelve words, the same up to punctuation and case (so not the same
	// text): compared, and collapsed.
	twelve := words(2, nearDupMinWords)
	if !collapses(twelve, strings.ToUpper(strings.ReplaceAll(twelve, " ", ", "))) {
		t.Error("a chunk of exactly nearDupMinWords words was not compared")
	}
	eleven := words(2, nearDupMinWords-1)
	if collapses(eleven, strings.ToUpper(eleven)) {
		t.Error("a chunk under nearDupMinWords words was compared")
	}
	// The same 60 words reversed share no 3-gram.
	ws := strings.Fields(words(3, 60))
	slices.Reverse(ws)
	if collapses(words(3, 60), strings.Join(ws, " ")) {
		t.Error("the same words in another order collapsed")
	}
	// Two texts over the same eight words in unrelated orders share few
	// 3-grams.
	rng := rand.New(rand.NewPCG(1, 2))
	draw := func() string {
		ws := make([]string, 200)
		for i := range ws {
			ws[i] = fmt.Sprintf("v%d", rng.IntN(8))
		}
		return strings.Join(ws, " ")
	}
	if a, b := draw(), draw(); collapses(a, b) {
		t.Errorf("two texts over the same words collapsed (jaccard %.2f)", jaccard(shingles(a), shingles(b)))
	}
	// A shown chunk of 64 or more 3-grams is in the sketch by a sample of
	// its grams; a shorter copy is still found, and the other way round.
	for _, c := range [][2]int{{66, 62}, {72, 62}, {66, 65}, {62, 66}, {80, 66}, {200, 180}} {
		if !collapses(words(4, c[0]), words(4, c[1])) {
			t.Errorf("a copy of %d words of a chunk of %d was kept", c[1], c[0])
		}
	}
}

// A chunk that nearly copies two shown chunks (which are not copies of each
// other) collapses into the first.
func TestDiversifyNearDuplicateOfTwo(t *testing.T) {
	core := words(5, 82)           // 80 3-grams
	a := core + " " + words(6, 15) // J(a, core) = 80/95
	b := words(7, 15) + " " + core // J(b, core) = 80/95, J(a, b) = 80/110
	for range 20 {                 // nearest visits the candidates in map order
		in := []Result{res("a", "https://a/", a, 0.9), res("b", "https://b/", b, 0.85), res("c", "https://c/", core, 0.8)}
		out := Diversify(in, &Options{TopK: 10})
		if got := ids(out); !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("results %v, want [a b]", got)
		}
		if !slices.Equal(out[0].AlsoAt, []string{"https://c/"}) || out[1].AlsoAt != nil {
			t.Fatalf("AlsoAt %v and %v, want the copy in the first only", out[0].AlsoAt, out[1].AlsoAt)
		}
	}
}

// The cap applies when duplicates are kept too.
func TestDiversifyCapKeepingDuplicates(t *testing.T) {
	in := []Result{
		res("a1", "https://a/", "same text", 0.9),
		res("a2", "https://a/", "same text", 0.8),
		res("b1", "https://b/", "same text", 0.7),
	}
	if got := ids(Diversify(in, &Options{TopK: 10, KeepDuplicates: true, MaxPerSource: 1})); !slices.Equal(got, []string{"a1", "b1"}) {
		t.Fatalf("results %v, want [a1 b1]", got)
	}
}

func TestJaccard(t *testing.T) {
	for _, c := range []struct {
		a, b []uint64
		want float64
	}{
		{nil, nil, 0},
		{[]uint64{1}, []uint64{2, 3}, 0},
		{[]uint64{2, 3}, []uint64{1}, 0},
		{[]uint64{1, 2, 3, 9}, []uint64{2, 3, 4}, 2.0 / 5},
		{[]uint64{5}, []uint64{5}, 1},
	} {
		if got := jaccard(c.a, c.b); got != c.want {
			t.Errorf("jaccard(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// Every mode refills when diversification leaves fewer than TopK and the
// candidates it had were a full list: vector, hybrid, and hybrid or vector
// answered by BM25 while the embedder is down. The pool of 15 is exactly
// the first fetch (3 × TopK), so that the lists come back full.
func TestEveryModeRefills(t *testing.T) {
	var text, vec []driver.Hit
	add := func(id, src string, i int) {
		h := hit(id, 100-float64(i))
		h.Record.SourceURL, h.Record.Content = src, words(i, 20)
		text = append(text, h)
		h.Score = 1 - float64(i)/100
		vec = append(vec, h)
	}
	for i := range 40 {
		add(fmt.Sprintf("a%d", i), "https://a/", i)
	}
	for i := range 3 {
		add(fmt.Sprintf("o%d", i), fmt.Sprintf("https://o/%d", i), 40+i)
	}
	for _, c := range []struct {
		mode  Mode
		verr  error
		short string // a list that holds only a's first 10 chunks
	}{{Vector, nil, ""}, {Hybrid, nil, ""}, {Hybrid, nil, "text"}, {Hybrid, nil, "vector"}, {Hybrid, errOutage, ""}, {Vector, errOutage, ""}, {FullText, nil, ""}} {
		f := &fakeRetriever{text: text, vec: vec, verr: c.verr}
		switch c.short {
		case "text":
			f.text = text[:10]
		case "vector":
			f.vec = vec[:10]
		}
		out, err := Search(context.Background(), f, "q", &Options{Mode: c.mode, TopK: 5, MaxPerSource: 2, SimilarityThreshold: -1, CandidatePool: 15})
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(out); !slices.Equal(got, []string{"a0", "a1", "o0", "o1", "o2"}) {
			t.Errorf("%s (embedder error %v, short list %q): results %v", c.mode, c.verr, c.short, got)
		}
	}
}

// endless holds more chunks of one source than any search ranks.
type endless struct{ calls int }

func (e *endless) FullText(_ context.Context, _ string, k int, _ index.Filter) ([]driver.Hit, error) {
	e.calls++
	if e.calls > 20 {
		return nil, fmt.Errorf("asked %d times", e.calls)
	}
	hs := make([]driver.Hit, k)
	for i := range hs {
		hs[i] = driver.Hit{Record: index.Record{ID: fmt.Sprint(i), SourceURL: "https://a/", Content: fmt.Sprint("chunk ", i)}, Score: float64(k - i)}
	}
	return hs, nil
}

func (e *endless) Vector(ctx context.Context, q string, k int, f index.Filter) ([]driver.Hit, error) {
	return e.FullText(ctx, q, k, f)
}

// Refilling stops at maxFetch results ranked, however many the store holds.
func TestRefillStopsAtMaxFetch(t *testing.T) {
	e := &endless{}
	out, err := Search(context.Background(), e, "q", &Options{Mode: FullText, TopK: 2, MaxPerSource: 1, SimilarityThreshold: -1})
	if err != nil {
		t.Fatal(err)
	}
	// 6, 24, 96, 384, 1536, 6144, then 10000.
	if len(out) != 1 || e.calls != 7 {
		t.Fatalf("%d results after %d searches", len(out), e.calls)
	}
}

// fingerprint is normalizeText's hash and shingles, in one pass: the same
// values for texts of every kind (white space of every kind, case, letters
// and digits of other scripts, invalid UTF-8, long and short).
func TestFingerprintMatchesItsDefinition(t *testing.T) {
	texts := []string{"", " ", "a", "\t\n\u00a0 ", "Hello,  World!\n\nHello again.", words(3, 40), words(4, 11), words(5, 12),
		"ÉCOLE  école ÉCOLE école: İstanbul ﬁne naïve café 東京 タワー ١٢٣ x\xffy z", strings.Repeat("word ", 70), " lead\u2003and\u2028trail\u3000 "}
	for i := 0; i < 200; i++ {
		texts = append(texts, strings.Repeat(words(i, i%50+1)+"\u00a0", 1+i%3))
	}
	var scratch []uint64
	for _, s := range texts {
		norm := normalizeText(s)
		h, empty, grams := fingerprint(s, &scratch)
		if h != hash64(norm) || empty != (norm == "") || !slices.Equal(grams, shingles(norm)) {
			t.Errorf("%q: fingerprint %x %v %d grams; want %x %v %d", s, h, empty, len(grams), hash64(norm), norm == "", len(shingles(norm)))
		}
	}
}

// BenchmarkDiversify600Cold is BenchmarkDiversify600 on texts never seen
// before: every chunk fingerprinted.
func BenchmarkDiversify600Cold(b *testing.B) {
	o := &Options{TopK: 200}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		var in []Result
		for j := 0; j < 600; j++ {
			in = append(in, res(fmt.Sprint(j), fmt.Sprintf("https://s/%d", j%150), words(i*600+j+1_000_000, 300), 1-float64(j)/1000))
		}
		b.StartTimer()
		Diversify(in, o)
	}
}

// The fingerprint cache answers what fingerprint computes, holds at most
// fpCacheSize texts (the oldest dropped first), and is safe for concurrent
// use.
func TestFingerprintCache(t *testing.T) {
	c := &fpCache{seed: maphash.MakeSeed(), m: map[uint64]fp{}}
	var scratch []uint64
	text := func(i int) string { return words(i, 20+i%7) }
	for i := 0; i < fpCacheSize+10; i++ {
		got := c.get(text(i), &scratch)
		h, empty, grams := fingerprint(text(i), &scratch)
		if got.hash != h || got.empty != empty || !slices.Equal(got.grams, grams) {
			t.Fatalf("text %d: cached %+v", i, got)
		}
	}
	if len(c.m) != fpCacheSize || len(c.order) != fpCacheSize {
		t.Fatalf("%d cached, %d in order; want %d", len(c.m), len(c.order), fpCacheSize)
	}
	// The first ten were dropped; the eleventh and the last are kept.
	for i, want := range map[int]bool{0: false, 9: false, 10: true, fpCacheSize + 9: true} {
		if _, ok := c.m[maphash.String(c.seed, text(i))]; ok != want {
			t.Errorf("text %d cached: %v, want %v", i, ok, want)
		}
	}
	// A cached value is never the scratch: later fingerprints leave it be.
	first := c.get(text(fpCacheSize+9), &scratch)
	keep := slices.Clone(first.grams)
	fingerprint(text(3), &scratch)
	if !slices.Equal(first.grams, keep) {
		t.Error("a cached fingerprint changed with the scratch")
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			var s []uint64
			for i := 0; i < 500; i++ {
				c.get(text(g*1000+i), &s)
			}
		}(g)
	}
	wg.Wait()
	if len(c.m) > fpCacheSize {
		t.Errorf("%d cached after concurrent use", len(c.m))
	}
}
