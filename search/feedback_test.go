package search

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/index"
)

// topicEmbedder maps a text to the vector of the first marker it contains
// (a made-up semantic model with known geometry), the query to its own.
type topicEmbedder map[string][]float32

func (e topicEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{0, 0, 0, 1} // unrelated to everything below
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range e {
				if !yield(k) {
					return
				}
			}
		}) {
			if strings.Contains(t, k) {
				out[i] = append([]float32(nil), e[k]...)
				break
			}
		}
	}
	return out, nil
}
func (topicEmbedder) Identity() string { return "topic/d4" }
func (topicEmbedder) Dimension() int   { return 4 }

// The geometry: the query leans to axis 0; the three passages that match
// its words lean to axis 1; "cider" sits near them but far from the query;
// "banana" sits near the query but away from them.
var (
	fbQuery  = []float32{1, 0.2, 0, 0}
	fbOnTop  = []float32{0.6, 0.8, 0, 0}
	fbCider  = []float32{0.2, 1, 0, 0}
	fbBanana = []float32{1, -0.3, 0.3, 0}
)

func feedbackStore(t *testing.T) *index.Index {
	t.Helper()
	emb := topicEmbedder{
		"apple orchard": fbQuery, // the query itself (and nothing else holds these words together)
		"docA":          fbOnTop, "docB": fbOnTop, "docC": fbOnTop,
		"cider": fbCider, "banana": fbBanana,
	}
	docs := []index.Document{
		{SourceURL: "https://t.test/a", Title: "docA", Content: "docA: an apple tree in the orchard."},
		{SourceURL: "https://t.test/b", Title: "docB", Content: "docB: apple harvest at the orchard."},
		{SourceURL: "https://t.test/c", Title: "docC", Content: "docC: orchard apple varieties."},
		{SourceURL: "https://t.test/d", Title: "cider", Content: "cider pressing in autumn."},
		{SourceURL: "https://t.test/e", Title: "banana", Content: "banana split with chocolate."},
	}
	return openStore(t, t.TempDir(), emb, docs)
}

func unit64(v []float32) []float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x) / math.Sqrt(s)
	}
	return out
}

func cos64(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func byURL(rs []Result) map[string]Result {
	m := map[string]Result{}
	for _, r := range rs {
		m[r.Record.SourceURL] = r
	}
	return m
}

// Feedback moves the query toward the centroid of the first fused results:
// a passage on their topic rises above one that only resembles the query,
// each result's explanation keeps its similarity to the query and gives the
// refined one, and the method says so. The expected similarities are
// computed here from the geometry (Rocchio with weight 1), not by search.
func TestFeedbackRefinesTheVectorSide(t *testing.T) {
	ix := feedbackStore(t)
	defer ix.Close()
	ctx := context.Background()
	opts := Options{Mode: Hybrid, Alpha: 0.5, TopK: 5, SimilarityThreshold: -1, MaxPerSource: -1}
	res, err := Search(ctx, ix, "apple orchard", &opts)
	if err != nil {
		t.Fatal(err)
	}
	got := byURL(res)
	cider, banana := got["https://t.test/d"], got["https://t.test/e"]
	if cider.Record.ID == "" || banana.Record.ID == "" {
		t.Fatalf("results %v", ids(res))
	}
	if cider.Score <= banana.Score || cider.Explanation.VectorRank >= banana.Explanation.VectorRank {
		t.Fatalf("feedback did not lift the on-topic passage: cider %+v, banana %+v", cider.Explanation, banana.Explanation)
	}
	// Every candidate is scored again: the refined list ranks all five by
	// their refined similarity.
	ranks := make([]int, 0, len(res))
	for _, r := range res {
		ranks = append(ranks, r.Explanation.VectorRank)
		for _, o := range res {
			if o.Explanation.VectorRank > r.Explanation.VectorRank && o.Explanation.FeedbackSimilarity > r.Explanation.FeedbackSimilarity {
				t.Errorf("vector rank %d (%.4f) below rank %d (%.4f)", o.Explanation.VectorRank, o.Explanation.FeedbackSimilarity, r.Explanation.VectorRank, r.Explanation.FeedbackSimilarity)
			}
		}
	}
	if slices.Sort(ranks); !slices.Equal(ranks, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("vector ranks %v", ranks)
	}
	q := unit64(fbQuery)
	c := unit64(fbOnTop) // the three feedback results share one vector
	moved := make([]float32, 4)
	for i := range moved {
		moved[i] = float32(q[i] + FeedbackWeight*c[i])
	}
	m := unit64(moved)
	for _, tc := range []struct {
		r   Result
		vec []float32
	}{{cider, fbCider}, {banana, fbBanana}, {got["https://t.test/a"], fbOnTop}} {
		v := unit64(tc.vec)
		e := tc.r.Explanation
		if math.Abs(e.VectorSimilarity-cos64(q, v)) > 1e-5 || math.Abs(e.FeedbackSimilarity-cos64(m, v)) > 1e-5 {
			t.Errorf("%s: similarity %.4f (want %.4f), refined %.4f (want %.4f)", tc.r.Record.SourceURL,
				e.VectorSimilarity, cos64(q, v), e.FeedbackSimilarity, cos64(m, v))
		}
		if !strings.HasSuffix(e.Method, ", feedback=3)") {
			t.Errorf("method %q does not name the feedback", e.Method)
		}
	}

	// Without feedback, the passage that resembles the query comes first,
	// and the results are exactly plain fusion's.
	off := opts
	off.Feedback = -1
	plain, err := Search(ctx, ix, "apple orchard", &off)
	if err != nil {
		t.Fatal(err)
	}
	p := byURL(plain)
	if p["https://t.test/e"].Score <= p["https://t.test/d"].Score {
		t.Fatalf("the geometry does not test anything: without feedback %+v", plain)
	}
	text, _ := ix.FullText(ctx, "apple orchard", 100, index.Filter{DocTypes: []string{index.DocKnowledge}})
	vec, _ := ix.Vector(ctx, "apple orchard", 100, index.Filter{DocTypes: []string{index.DocKnowledge}})
	want := Fuse(text, vec, &off)
	if !eq(ids(plain), ids(want)) {
		t.Fatalf("feedback off: %v, plain fusion %v", ids(plain), ids(want))
	}
	for _, r := range plain {
		if r.Explanation.FeedbackSimilarity != 0 || strings.Contains(r.Explanation.Method, "feedback") {
			t.Fatalf("feedback off, yet %+v", r.Explanation)
		}
	}
}

// The threshold tests a result's similarity to the query itself, not to the
// refined query: "cider" is close to the refined query (0.69) but not to
// the query (0.38) and matches none of its words, so a threshold of 0.5
// drops it; "banana" (0.85 to the query) stays.
func TestFeedbackThresholdUsesTheQuery(t *testing.T) {
	ix := feedbackStore(t)
	defer ix.Close()
	res, err := Search(context.Background(), ix, "apple orchard", &Options{Mode: Hybrid, Alpha: 0.5, TopK: 5, SimilarityThreshold: 0.5, MaxPerSource: -1})
	if err != nil {
		t.Fatal(err)
	}
	got := byURL(res)
	if _, ok := got["https://t.test/d"]; ok {
		t.Fatalf("cider passed the threshold on its refined similarity: %+v", got["https://t.test/d"].Explanation)
	}
	if _, ok := got["https://t.test/e"]; !ok {
		t.Fatalf("banana was dropped: %v", ids(res))
	}
}

// gone wraps a store whose record id vanishes between retrieval and
// scoring, as a concurrent delete makes it.
type gone struct {
	*index.Index
	id string
}

func (g gone) Similarities(ctx context.Context, vecs [][]float32, ids []string) ([][]float64, error) {
	sims, err := g.Index.Similarities(ctx, vecs, ids)
	for i, id := range ids {
		if id == g.id {
			for j := range sims {
				sims[j][i] = math.NaN()
			}
		}
	}
	return sims, err
}

// A candidate deleted while the query runs is left out of the refined list
// rather than ranked on a NaN.
func TestFeedbackSkipsVanishedRecords(t *testing.T) {
	ix := feedbackStore(t)
	defer ix.Close()
	ctx := context.Background()
	vec, _ := ix.Vector(ctx, "apple orchard", 10, index.Filter{DocTypes: []string{index.DocKnowledge}})
	var cider string
	for _, h := range vec {
		if h.Record.SourceURL == "https://t.test/d" {
			cider = h.Record.ID
		}
	}
	res, err := Search(ctx, gone{ix, cider}, "apple orchard", &Options{Mode: Hybrid, Alpha: 0.5, TopK: 5, SimilarityThreshold: -1, MaxPerSource: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Record.ID == cider || math.IsNaN(r.Score) {
			t.Fatalf("vanished record ranked: %+v", r)
		}
	}
	if len(res) != 4 {
		t.Fatalf("results %v", ids(res))
	}
}

// The refined list keeps the vector pool's length: with pools of two, the
// three or four candidates are scored again and the best two keep vector
// ranks 1 and 2.
func TestFeedbackKeepsThePoolSize(t *testing.T) {
	ix := feedbackStore(t)
	defer ix.Close()
	res, err := Search(context.Background(), ix, "apple orchard", &Options{Mode: Hybrid, Alpha: 0.5, TopK: 2, CandidatePool: 2, SimilarityThreshold: -1, MaxPerSource: -1, KeepDuplicates: true})
	if err != nil {
		t.Fatal(err)
	}
	var ranks []int
	for _, r := range res {
		if r.Explanation.VectorRank > 0 {
			ranks = append(ranks, r.Explanation.VectorRank)
		}
	}
	if slices.Sort(ranks); !slices.Equal(ranks, []int{1, 2}) || len(res) != 2 {
		t.Fatalf("results %+v", res)
	}
}
