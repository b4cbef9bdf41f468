package local

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2/index/scorch"
	bleveindex "github.com/blevesearch/bleve_index_api"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
)

var fctx = context.Background()

// plain is a full-text configuration without analysis beyond lower-casing,
// so that hand computations stay simple.
var plain = &FullTextOptions{K1: 1.2, B: 0.75, StopWords: StopNone, Stemmer: StemNone, TitleWeight: -1}

func rec(id, title, content, docType string) index.Record {
	return index.Record{ID: id, SourceURL: "src://" + id, Title: title, Content: content, DocType: docType, Vector: []float32{1, 0}}
}

func openFT(t *testing.T, dir string, o *FullTextOptions, recs ...index.Record) *Backend {
	t.Helper()
	b, err := Open(fctx, dir, &Options{FullText: o})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) > 0 {
		if err := b.Apply(fctx, &driver.Batch{Put: recs}); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func searchText(t *testing.T, b *Backend, q string, k int, f index.Filter) ([]string, []float64) {
	t.Helper()
	hits, err := b.SearchText(fctx, q, k, f)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(hits))
	scores := make([]float64, len(hits))
	for i, h := range hits {
		ids[i], scores[i] = h.Record.ID, h.Score
	}
	return ids, scores
}

func approx(a, b float64) bool { return math.Abs(a-b) < 1e-4 }

// Documents that score exactly alike are cut by external id: the top k of
// six identical records written in descending id order, one batch each
// (so bleve numbers them in the opposite order), are the k smallest ids,
// the same set that a deeper search lists first.
func TestTiesCutByID(t *testing.T) {
	b := openFT(t, t.TempDir(), plain)
	defer b.Close()
	ids := []string{"t6", "t5", "t4", "t3", "t2", "t1"}
	for _, id := range ids {
		if err := b.Apply(fctx, &driver.Batch{Put: []index.Record{rec(id, "", "apple orchard", index.DocKnowledge)}}); err != nil {
			t.Fatal(err)
		}
	}
	all, scores := searchText(t, b, "apple", 10, index.Filter{})
	if !slices.Equal(all, []string{"t1", "t2", "t3", "t4", "t5", "t6"}) || scores[0] != scores[5] {
		t.Fatalf("all: %v %v", all, scores)
	}
	for k := 1; k < 6; k++ {
		got, _ := searchText(t, b, "apple", k, index.Filter{})
		if !slices.Equal(got, all[:k]) {
			t.Errorf("top %d: %v, want %v", k, got, all[:k])
		}
	}
	// A better document keeps its place above the tie.
	if err := b.Apply(fctx, &driver.Batch{Put: []index.Record{rec("t9", "", "apple apple orchard", index.DocKnowledge)}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := searchText(t, b, "apple", 3, index.Filter{}); !slices.Equal(got, []string{"t9", "t1", "t2"}) {
		t.Errorf("top 3 with a better document: %v", got)
	}
}

// Every top k is the first k of the full ranking, over 60 records of four
// texts (so four groups that tie) written in a shuffled order in batches of
// one to seven, whatever segments bleve made and merged of them.
func TestTopKIsAPrefixOfTheRanking(t *testing.T) {
	b := openFT(t, t.TempDir(), plain)
	defer b.Close()
	texts := []string{"apple", "apple orchard", "apple orchard trees", "apple apple orchard"}
	rng := rand.New(rand.NewPCG(7, 7))
	order := rng.Perm(60)
	for i := 0; i < len(order); {
		var bt driver.Batch
		for n := 1 + rng.IntN(7); n > 0 && i < len(order); n-- {
			id := fmt.Sprintf("r%02d", order[i])
			bt.Put = append(bt.Put, rec(id, "", texts[order[i]%len(texts)], index.DocKnowledge))
			i++
		}
		if err := b.Apply(fctx, &bt); err != nil {
			t.Fatal(err)
		}
	}
	all, scores := searchText(t, b, "apple", 100, index.Filter{})
	if len(all) != 60 {
		t.Fatalf("%d hits", len(all))
	}
	for i := 1; i < len(all); i++ {
		if scores[i] > scores[i-1] || scores[i] == scores[i-1] && all[i] < all[i-1] {
			t.Fatalf("the ranking is not by score, then id, at %d: %v %v", i, all, scores)
		}
	}
	for k := 1; k < len(all); k++ {
		if got, _ := searchText(t, b, "apple", k, index.Filter{}); !slices.Equal(got, all[:k]) {
			t.Errorf("top %d: %v, want %v", k, got, all[:k])
		}
	}
}

// Three documents of lengths 3, 2 and 4 (average 3), query "apple cherry":
//
//	idf(apple)  = ln(1 + (3−1+0.5)/(1+0.5)) = ln(2.6667) = 0.98083
//	idf(cherry) = ln(1 + (3−2+0.5)/(2+0.5)) = ln(1.6)    = 0.47000
//	d1: apple×2, |d|=3:  0.98083 · 2/(2 + 1.2·(0.25 + 0.75·3/3)) = 0.98083 · 0.625  = 0.61302
//	d3: cherry×3, |d|=4: 0.47000 · 3/(3 + 1.2·(0.25 + 0.75·4/3)) = 0.47000 · 0.6667 = 0.31333
//	d2: cherry×1, |d|=2: 0.47000 · 1/(1 + 1.2·(0.25 + 0.75·2/3)) = 0.47000 · 0.5263 = 0.24737
func TestBM25HandComputed(t *testing.T) {
	b := openFT(t, t.TempDir(), plain,
		rec("d1", "", "Apple banana apple", index.DocKnowledge),
		rec("d2", "", "banana cherry", index.DocKnowledge),
		rec("d3", "", "cherry cherry cherry date", index.DocKnowledge))
	defer b.Close()
	ids, scores := searchText(t, b, "apple cherry", 10, index.Filter{})
	want := []struct {
		id    string
		score float64
	}{{"d1", 0.61302}, {"d3", 0.31333}, {"d2", 0.24737}}
	if len(ids) != len(want) {
		t.Fatalf("hits %v", ids)
	}
	for i, w := range want {
		if ids[i] != w.id || !approx(scores[i], w.score) {
			t.Errorf("hit %d = %s %.5f, want %s %.5f", i, ids[i], scores[i], w.id, w.score)
		}
	}
	// A repeated query term counts twice (Anserini's bag of words).
	_, s2 := searchText(t, b, "apple apple", 1, index.Filter{})
	if !approx(s2[0], 2*0.61302) {
		t.Errorf("apple apple: %.5f, want %.5f", s2[0], 2*0.61302)
	}
	// After a delete the statistics follow: N = 2, lengths 2 and 4,
	//	idf(cherry) = ln(1 + 0.5/2.5) = 0.18232; d3: 0.18232 · 3/(3 + 1.2·1.25) = 0.12155.
	if err := b.Apply(fctx, &driver.Batch{DeleteIDs: []string{"d1"}}); err != nil {
		t.Fatal(err)
	}
	ids, scores = searchText(t, b, "apple cherry", 10, index.Filter{})
	if len(ids) != 2 || ids[0] != "d3" || !approx(scores[0], 0.12155) {
		t.Errorf("after delete: %v %v", ids, scores)
	}
	// Nothing matches: no hits, no error; a blank or stop-word query too.
	for _, q := range []string{"zebra", "", "   ", "\x00"} {
		if ids, _ := searchText(t, b, q, 10, index.Filter{}); len(ids) != 0 {
			t.Errorf("%q: %v", q, ids)
		}
	}
}

// BM25-VA, the default normalisation (B = 0), by hand: d1 repeats one word
// four times (verbosity v = 4), d2 says four things once (v = 1), d3 two
// (v = 1); mv = (4+1+1)/3 = 2, avgdl = 10/3, idf(apple) = ln(1.6) = 0.470004.
//
//	d1: B = 4/2² + (1−1/2)·4/(10/3) = 1.6;  0.470004 · 4/(4 + 1.2·1.6)  = 0.317570
//	d2: B = 1/2² + (1−1/2)·4/(10/3) = 0.85; 0.470004 · 1/(1 + 1.2·0.85) = 0.232675
//
// Lucene's b = 0.75 gives both the same B (1.15): 0.349444 and 0.197481.
// The two are as long; VA discounts the one that only repeats itself.
func TestBM25VAHandComputed(t *testing.T) {
	recs := []index.Record{
		rec("d1", "", "apple apple apple apple", index.DocKnowledge),
		rec("d2", "", "apple banana cherry date", index.DocKnowledge),
		rec("d3", "", "banana cherry", index.DocKnowledge),
	}
	auto := *plain
	auto.B = 0
	for _, c := range []struct {
		o            *FullTextOptions
		want1, want2 float64
	}{{&auto, 0.317570, 0.232675}, {plain, 0.349444, 0.197481}} {
		b := openFT(t, t.TempDir(), c.o, recs...)
		ids, scores := searchText(t, b, "apple", 10, index.Filter{})
		if len(ids) != 2 || ids[0] != "d1" || ids[1] != "d2" || !approx(scores[0], c.want1) || !approx(scores[1], c.want2) {
			t.Errorf("b=%s: %v %v, want d1 %.6f, d2 %.6f", bString(newFullText(c.o).b), ids, scores, c.want1, c.want2)
		}
		b.Close()
	}
	// Memories are normalised by their own field's statistics: the same
	// texts as memories score the same among themselves.
	var mems []index.Record
	for _, r := range recs {
		r.DocType = index.DocMemory
		mems = append(mems, r)
	}
	b := openFT(t, t.TempDir(), &auto, append(mems, rec("k", "", "apple apple apple orchard pie", index.DocKnowledge))...)
	defer b.Close()
	ids, scores := searchText(t, b, "apple", 10, index.Filter{DocTypes: []string{index.DocMemory}})
	if len(ids) != 2 || !approx(scores[0], 0.317570) || !approx(scores[1], 0.232675) {
		t.Errorf("memories: %v %v", ids, scores)
	}
}

// Filters are applied before the top k is cut: the best knowledge chunk is
// found even when preferences score higher.
func TestFullTextFilters(t *testing.T) {
	var recs []index.Record
	for _, id := range []string{"p1", "p2", "p3"} {
		recs = append(recs, rec(id, "", "kiwi kiwi kiwi", index.DocPreference))
	}
	recs = append(recs, rec("k1", "", "kiwi and a lot of other words here", index.DocKnowledge))
	recs = append(recs, rec("m1", "", "kiwi kiwi", index.DocMemory))
	b := openFT(t, t.TempDir(), plain, recs...)
	defer b.Close()
	if ids, _ := searchText(t, b, "kiwi", 1, index.Filter{DocTypes: []string{index.DocKnowledge}}); len(ids) != 1 || ids[0] != "k1" {
		t.Errorf("knowledge only: %v", ids)
	}
	// The scorer itself applies the filter (SearchText would otherwise have
	// to ask again for more).
	for _, f := range []index.Filter{{DocTypes: []string{index.DocKnowledge}}, {SourceURL: "src://k1"}} {
		if ids, _, err := b.ft.search(fctx, b.bl, "kiwi", 1, &f, nil); err != nil || len(ids) != 1 || ids[0] != "k1" {
			t.Errorf("scorer with filter %+v: %v %v", f, ids, err)
		}
	}
	if ids, _ := searchText(t, b, "kiwi", 10, index.Filter{DocTypes: []string{index.DocKnowledge, index.DocMemory}}); len(ids) != 2 || ids[0] != "m1" {
		t.Errorf("knowledge and memory: %v", ids)
	}
	if ids, _ := searchText(t, b, "kiwi", 10, index.Filter{SourceURL: "src://p2"}); len(ids) != 1 || ids[0] != "p2" {
		t.Errorf("one source: %v", ids)
	}
	if ids, _ := searchText(t, b, "kiwi", 10, index.Filter{DocTypes: []string{"none-such"}}); len(ids) != 0 {
		t.Errorf("unknown doc type: %v", ids)
	}
}

// The title field adds TitleWeight times its own BM25 score: of two chunks
// with the same text, the one whose title matches ranks first, and by
// exactly the title's share.
func TestTitleWeight(t *testing.T) {
	recs := []index.Record{
		rec("a", "Solar panels", "how to clean them", index.DocKnowledge),
		rec("b", "Wind turbines", "how to clean them", index.DocKnowledge),
	}
	o := *plain
	off := openFT(t, t.TempDir(), &o, recs...)
	_, base := searchText(t, off, "clean solar", 2, index.Filter{})
	off.Close()
	o.TitleWeight = 0.5
	on := openFT(t, t.TempDir(), &o, recs...)
	defer on.Close()
	ids, with := searchText(t, on, "clean solar", 2, index.Filter{})
	if ids[0] != "a" || with[0] <= base[0] || !approx(with[1], base[1]) {
		t.Errorf("with title field: %v %v, without %v", ids, with, base)
	}
}

// Proximity lifts the chunk where the query's words stand together.
func TestProximity(t *testing.T) {
	recs := []index.Record{
		rec("apart", "", "heat flows in one direction while exchange of mass goes the other way", index.DocKnowledge),
		rec("together", "", "mass goes one direction while heat exchange flows the other way in it", index.DocKnowledge),
	}
	o := *plain
	b := openFT(t, t.TempDir(), &o, recs...)
	ids, s := searchText(t, b, "heat exchange", 2, index.Filter{})
	b.Close()
	if !approx(s[0], s[1]) {
		t.Fatalf("the two chunks should tie without proximity: %v %v", ids, s)
	}
	o.Proximity = 1
	b = openFT(t, t.TempDir(), &o, recs...)
	defer b.Close()
	if ids, s := searchText(t, b, "heat exchange", 2, index.Filter{}); ids[0] != "together" || s[0] <= s[1] {
		t.Errorf("with proximity: %v %v", ids, s)
	}
}

// RM3 brings in a chunk that shares no word with the query but many with
// the chunks the query finds.
func TestRM3Expansion(t *testing.T) {
	recs := []index.Record{
		rec("q1", "", "myocardial infarction treated with thrombolysis and aspirin", index.DocKnowledge),
		rec("q2", "", "myocardial infarction outcomes after thrombolysis and aspirin", index.DocKnowledge),
		rec("x", "", "thrombolysis aspirin thrombolysis aspirin regimen", index.DocKnowledge),
	}
	for i := 0; i < 40; i++ { // background, so that expansion terms are not too common
		recs = append(recs, rec("bg"+string(rune('a'+i%26))+string(rune('a'+i/26)), "", "unrelated text about gardening and soil", index.DocKnowledge))
	}
	o := *plain
	b := openFT(t, t.TempDir(), &o, recs...)
	ids, _ := searchText(t, b, "myocardial infarction", 10, index.Filter{})
	b.Close()
	for _, id := range ids {
		if id == "x" {
			t.Fatalf("x found without feedback: %v", ids)
		}
	}
	o.Feedback = &Feedback{Docs: 2, Terms: 5}
	b = openFT(t, t.TempDir(), &o, recs...)
	defer b.Close()
	ids, _ = searchText(t, b, "myocardial infarction", 10, index.Filter{})
	if len(ids) != 3 || ids[2] != "x" {
		t.Errorf("with RM3: %v, want q1/q2 then x", ids)
	}
}

// A store whose full-text index was built with another analysis (or before
// ragmem recorded one) is rebuilt on open; a query-time change is not.
func TestAnalysisChangeRebuilds(t *testing.T) {
	dir := t.TempDir()
	recs := []index.Record{rec("a", "", "the running dogs", index.DocKnowledge), rec("b", "", "a cat", index.DocKnowledge)}
	b := openFT(t, dir, &FullTextOptions{Stemmer: StemNone}, recs...)
	if ids, _ := searchText(t, b, "dog", 5, index.Filter{}); len(ids) != 0 {
		t.Fatalf("without stemming, dog matched %v", ids)
	}
	b.Close()

	b = openFT(t, dir, &FullTextOptions{Stemmer: StemNone, K1: 2})
	if b.Recovery().BleveRebuilt {
		t.Error("a query-time change rebuilt the index")
	}
	b.Close()

	b = openFT(t, dir, nil) // Porter stemming
	if !b.Recovery().BleveRebuilt {
		t.Error("an analysis change did not rebuild the index")
	}
	if ids, _ := searchText(t, b, "dog", 5, index.Filter{}); len(ids) != 1 || ids[0] != "a" {
		t.Errorf("after rebuild, dog: %v", ids)
	}
	// An index from before analysis versions (no key) is rebuilt too.
	if err := b.bl.DeleteInternal([]byte(analysisKey)); err != nil {
		t.Fatal(err)
	}
	b.Close()
	b = openFT(t, dir, nil)
	defer b.Close()
	if !b.Recovery().BleveRebuilt {
		t.Error("an unversioned index was not rebuilt")
	}
	if probs, err := b.Check(fctx); err != nil || len(probs) != 0 {
		t.Errorf("check: %v %v", probs, err)
	}
}

// The length marker never matches a query and is not counted in lengths.
func TestLengthMarker(t *testing.T) {
	b := openFT(t, t.TempDir(), plain, rec("a", "", "one two three", index.DocKnowledge), rec("b", "", "four", index.DocKnowledge))
	defer b.Close()
	adv, _ := b.bl.Advanced()
	r, _ := adv.Reader()
	defer r.Close()
	st, err := readFieldStats(fctx, r, fieldBody)
	if err != nil || st.docs != 2 || st.sumLen != 4 || st.texts != 2 || st.sumVerb != 2 || st.meanVerbosity() != 1 {
		t.Errorf("stats %+v, %v; want 2 documents of 4 tokens, each word once", st, err)
	}
	if ids, _ := searchText(t, b, markerTerm, 5, index.Filter{}); len(ids) != 0 {
		t.Errorf("the marker matched %v", ids)
	}
}

func TestParseFullTextOptions(t *testing.T) {
	o, err := ParseFullTextOptions("k1=0.9, b=0, stem=Snowball, stop=lucene, title=0, prox=0.5@50, rm3=5/20/0.6")
	if err != nil {
		t.Fatal(err)
	}
	want := FullTextOptions{K1: 0.9, B: -1, Stemmer: StemSnowball, StopWords: StopLucene, TitleWeight: -1,
		Proximity: 0.5, ProximityDepth: 50, Feedback: &Feedback{Docs: 5, Terms: 20, OriginalWeight: 0.6}}
	if o.K1 != want.K1 || o.B != want.B || o.Stemmer != want.Stemmer || o.StopWords != want.StopWords ||
		o.TitleWeight != want.TitleWeight || o.Proximity != want.Proximity || o.ProximityDepth != want.ProximityDepth ||
		*o.Feedback != *want.Feedback {
		t.Errorf("got %+v", o)
	}
	ft := newFullText(o)
	if ft.b != 0 || ft.titleWeight != 0 || !strings.Contains(ft.String(), "rm3(docs=5,terms=20,orig=0.6)") {
		t.Errorf("resolved %s", ft)
	}
	if o, err := ParseFullTextOptions(""); o != nil || err != nil {
		t.Errorf("empty: %v %v", o, err)
	}
	if o, _ := ParseFullTextOptions("rm3=1"); o.Feedback == nil || newFullText(o).fb.Docs != 10 {
		t.Errorf("rm3=1: %+v", o)
	}
	if o, err := ParseFullTextOptions("mb=0,context=0"); err != nil || o.MemoryB != -1 || o.ContextWeight != -1 {
		t.Errorf("mb=0,context=0: %+v %v", o, err)
	} else if ft := newFullText(o); ft.mb != 0 || ft.ctxWeight != 0 || strings.Contains(ft.analysisVersion(), "context") {
		t.Errorf("mb=0,context=0 resolved %s", ft)
	}
	if o, err := ParseFullTextOptions("mb=0.5,context=0.7"); err != nil || newFullText(o).mb != 0.5 || newFullText(o).ctxWeight != 0.7 {
		t.Errorf("mb=0.5,context=0.7: %+v %v", o, err)
	}
	for _, bad := range []string{"mb=2", "mb=-0.1", "context=-1", "context=x", "k1", "k1=x", "k1=-1", "b=2", "stem=lancaster", "stop=french", "rm3=1/2", "rm3=0/10/0.5",
		"k1=1,k1=2", "foo=1", "prox=1@0", "title=NaN"} {
		if _, err := ParseFullTextOptions(bad); !errors.Is(err, ErrBadFullTextSpec) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func FuzzParseFullTextOptions(f *testing.F) {
	for _, s := range []string{"k1=1.2,b=0.75", "stem=none,stop=none,title=0.3", "prox=0.2@10,rm3=10/10/0.5", "rm3=1", ",=,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseFullTextOptions(s)
		if err != nil {
			return
		}
		ft := newFullText(o)
		badB := func(b float64) bool { return b != bAuto && (b < 0 || b > 1) }
		if !(ft.k1 > 0) || badB(ft.b) || ft.titleWeight < 0 || ft.proximity < 0 || ft.proxDepth <= 0 ||
			badB(ft.mb) || ft.ctxWeight < 0 {
			t.Fatalf("%q resolved to %s", s, ft)
		}
	})
}

// Sanity of the defaults: a fresh store reports them.
func TestFullTextDefaults(t *testing.T) {
	b := openFT(t, filepath.Join(t.TempDir(), "s"), nil)
	defer b.Close()
	want := "bm25-v2/unicode/possessive/lower/stop=english/stem=porter/memory/title/context k1=1.2 b=auto memory.b=auto title=0.3 context=0.7"
	if got := b.FullTextConfig(); got != want {
		t.Errorf("FullTextConfig() = %q, want %q", got, want)
	}
}

// TestSegmentedStatsMatchTheWalk checks the per-segment collection
// statistics against a walk of the whole index after every write of a
// sequence of puts, replacements and deletes (many small segments, some
// merged away), and that the statistics of unchanged segments are reused.
func TestSegmentedStatsMatchTheWalk(t *testing.T) {
	b := openFT(t, t.TempDir(), nil)
	defer b.Close()
	reader := func() (bleveindex.IndexReader, func()) {
		adv, err := b.bl.Advanced()
		if err != nil {
			t.Fatal(err)
		}
		r, err := adv.Reader()
		if err != nil {
			t.Fatal(err)
		}
		return r, func() { r.Close() }
	}
	check := func(step int) (recounted, segments int) {
		r, done := reader()
		defer done()
		before := map[segKey]bool{}
		for k := range b.ft.segStats {
			before[k] = true
		}
		got, err := b.ft.segmentedStats(r.(*scorch.IndexSnapshot))
		if err != nil {
			t.Fatal(err)
		}
		want, err := b.ft.walkStats(fctx, r)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []struct {
			name      string
			got, want fieldStats
		}{{"body", got.body, want.body}, {"title", got.title, want.title}} {
			g, w := f.got, f.want
			if g.docs != w.docs || g.sumLen != w.sumLen || g.texts != w.texts || math.Abs(g.sumVerb-w.sumVerb) > 1e-9*w.sumVerb {
				t.Fatalf("step %d: %s: segmented %d/%d/%d/%g, walk %d/%d/%d/%g", step, f.name, g.docs, g.sumLen, g.texts, g.sumVerb, w.docs, w.sumLen, w.texts, w.sumVerb)
			}
			for id, u := range w.byID {
				if d := g.distinctOf(bleveindex.IndexInternalID(id)); d != u {
					t.Fatalf("step %d: %s: document %x has %d distinct terms by segment, %d by the walk", step, f.name, id, d, u)
				}
			}
		}
		for k := range b.ft.segStats {
			if !before[k] {
				recounted++
			}
		}
		return recounted, len(r.(*scorch.IndexSnapshot).Segments())
	}
	words := strings.Fields("otter badger heron marten stoat vole shrew weasel ferret mink")
	maxSegs, reused := 0, 0
	for i := 0; i < 60; i++ {
		var bt driver.Batch
		for j := 0; j < 3; j++ {
			n := (i*3 + j) % 70 // ids repeat: later steps replace earlier records
			content := strings.Repeat(words[(i+j)%len(words)]+" ", 1+(i*7+j)%11)
			bt.Put = append(bt.Put, rec(fmt.Sprint("r", n), words[j%len(words)], content, index.DocKnowledge))
		}
		if i%7 == 6 {
			bt.DeleteIDs = []string{fmt.Sprint("r", i%70), fmt.Sprint("r", (i+30)%70)}
		}
		if err := b.Apply(fctx, &bt); err != nil {
			t.Fatal(err)
		}
		// A step can recount every segment when a background merge has
		// just replaced them; over the sequence most statistics are reused.
		recounted, segs := check(i)
		maxSegs = max(maxSegs, segs)
		reused += segs - recounted
	}
	t.Logf("up to %d segments; %d segment statistics reused", maxSegs, reused)
	if maxSegs < 2 || reused == 0 {
		t.Errorf("the sequence made %d segments at most and reused %d: it no longer tests the cache", maxSegs, reused)
	}
}

// Memories are scored in a field of their own, with MemoryB: knowledge
// chunks neither change their statistics nor their length normalisation.
//
// Two memories of lengths 1 and 3 (average 2), query "apple", df 2 of 2:
//
//	idf = ln(1 + 0.5/2.5) = 0.18232
//	m1: 0.18232 · 1/(1 + 1.2·(0.7 + 0.3·1/2)) = 0.18232 · 0.49505 = 0.09026
//	m2: 0.18232 · 1/(1 + 1.2·(0.7 + 0.3·3/2)) = 0.18232 · 0.42017 = 0.07661
//
// (with the knowledge b of 0.75, m1 would score 0.10418 and m2 0.07293).
func TestMemoryField(t *testing.T) {
	o := *plain
	o.MemoryB = 0.3
	o.ContextWeight = -1
	b := openFT(t, t.TempDir(), &o,
		rec("m1", "", "apple", index.DocMemory),
		rec("m2", "", "apple banana cherry", index.DocMemory))
	defer b.Close()
	mem := index.Filter{DocTypes: []string{index.DocMemory}}
	check := func(when string) {
		t.Helper()
		ids, scores := searchText(t, b, "apple", 10, mem)
		if len(ids) != 2 || ids[0] != "m1" || !approx(scores[0], 0.09026) || !approx(scores[1], 0.07661) {
			t.Errorf("%s: %v %v, want m1 0.09026, m2 0.07661", when, ids, scores)
		}
	}
	check("memories alone")
	// Long knowledge chunks full of apples change nothing for memories.
	if err := b.Apply(fctx, &driver.Batch{Put: []index.Record{
		rec("k1", "", "apple orchard apple harvest in the autumn with many kinds of apple", index.DocKnowledge),
		rec("k2", "", "an apple a day keeps the doctor away, as the saying goes", index.DocKnowledge),
	}}); err != nil {
		t.Fatal(err)
	}
	check("with knowledge")
	// And memories change nothing for knowledge: k2 alone in its field.
	_, ks := searchText(t, b, "doctor", 1, index.Filter{DocTypes: []string{index.DocKnowledge}})
	kb := openFT(t, t.TempDir(), &o, rec("k1", "", "apple orchard apple harvest in the autumn with many kinds of apple", index.DocKnowledge),
		rec("k2", "", "an apple a day keeps the doctor away, as the saying goes", index.DocKnowledge))
	defer kb.Close()
	if _, alone := searchText(t, kb, "doctor", 1, index.Filter{}); len(ks) != 1 || !approx(ks[0], alone[0]) {
		t.Errorf("knowledge score %v with memories, %v without", ks, alone)
	}
	if got := newFullText(&FullTextOptions{}).mb; got != bAuto {
		t.Errorf("default memory b %v", got)
	}
	if got := newFullText(&FullTextOptions{MemoryB: -1}).mb; got != 0 {
		t.Errorf("MemoryB -1: %v", got)
	}
}

// A record's context attribute is searched in a field of its own at
// ContextWeight, never as its text: a turn is found by the words of the
// turn before it, at exactly that share; a record without context is
// scored as before; with the weight off the context is not indexed.
func TestContextField(t *testing.T) {
	recs := func() []index.Record {
		ask := rec("ask", "", "what did you bake", index.DocMemory)
		answer := rec("answer", "", "banana bread", index.DocMemory)
		answer.Attrs = map[string]string{index.AttrContext: "what did you bake"}
		page := rec("page", "", "a page", index.DocKnowledge)
		page.Attrs = map[string]string{index.AttrContext: "bake"} // only memories are found by their context
		return []index.Record{ask, answer, rec("other", "", "bake sale", index.DocMemory), page}
	}
	scores := map[float64]map[string]float64{}
	for _, w := range []float64{-1, 0.3, 0.6} {
		o := *plain
		o.ContextWeight = w
		b := openFT(t, t.TempDir(), &o, recs()...)
		ids, sc := searchText(t, b, "bake", 10, index.Filter{})
		scores[w] = map[string]float64{}
		for i, id := range ids {
			scores[w][id] = sc[i]
		}
		if w > 0 {
			if !strings.Contains(b.FullTextConfig(), "/context") {
				t.Errorf("config %q", b.FullTextConfig())
			}
			if s, _ := b.bodyText("answer"); strings.Contains(s, "bake") {
				t.Errorf("the context is in the text: %q", s)
			}
		}
		b.Close()
	}
	if _, ok := scores[0.3]["page"]; ok {
		t.Errorf("knowledge found by its context attribute: %v", scores[0.3])
	}
	if _, ok := scores[-1]["answer"]; ok {
		t.Errorf("context off, yet found by it: %v", scores[-1])
	}
	a3, a6 := scores[0.3]["answer"], scores[0.6]["answer"]
	if !(a3 > 0) || !approx(a6, 2*a3) {
		t.Errorf("context share: %v at 0.3, %v at 0.6", a3, a6)
	}
	for _, id := range []string{"ask", "other"} {
		if !approx(scores[0.3][id], scores[-1][id]) || !approx(scores[0.6][id], scores[-1][id]) {
			t.Errorf("%s without context changed: %v %v %v", id, scores[-1][id], scores[0.3][id], scores[0.6][id])
		}
	}
}
