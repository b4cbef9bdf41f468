package search

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/embed"
)

type fakeRetriever struct {
	text, vec      []driver.Hit
	terr, verr     error
	textK, vecK    int
	textF, vecF    index.Filter
	textQ, vecQ    string
	textN, vectorN int
}

func (f *fakeRetriever) FullText(_ context.Context, q string, k int, fl index.Filter) ([]driver.Hit, error) {
	f.textQ, f.textK, f.textF = q, k, fl
	f.textN++
	if f.terr != nil {
		return nil, f.terr
	}
	return trim(f.text, k), nil
}

func (f *fakeRetriever) Vector(_ context.Context, q string, k int, fl index.Filter) ([]driver.Hit, error) {
	f.vecQ, f.vecK, f.vecF = q, k, fl
	f.vectorN++
	if f.verr != nil {
		return nil, f.verr
	}
	return trim(f.vec, k), nil
}

func trim(h []driver.Hit, k int) []driver.Hit {
	if len(h) > k {
		return h[:k]
	}
	return h
}

func hit(id string, score float64) driver.Hit {
	return driver.Hit{Record: index.Record{ID: id, SourceURL: "https://x/" + id}, Score: score}
}

func ids(rs []Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Record.ID
	}
	return out
}

func eq(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRRFHandComputed(t *testing.T) {
	// BM25: a, b, c.  Vector: c, a, d.
	// RRF k=60: a = 1/61 + 1/62, c = 1/63 + 1/61, b = 1/62, d = 1/63.
	f := &fakeRetriever{
		text: []driver.Hit{hit("a", 12), hit("b", 9), hit("c", 3)},
		vec:  []driver.Hit{hit("c", 0.9), hit("a", 0.8), hit("d", 0.7)},
	}
	rs, err := Search(context.Background(), f, "q", &Options{TopK: 10, SimilarityThreshold: -1, Fusion: RRF})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a", "c", "b", "d"}
	if !eq(ids(rs), want) {
		t.Fatalf("order = %v, want %v", ids(rs), want)
	}
	exp := map[string]float64{"a": 1.0/61 + 1.0/62, "c": 1.0/63 + 1.0/61, "b": 1.0 / 62, "d": 1.0 / 63}
	for _, r := range rs {
		if math.Abs(r.Score-exp[r.Record.ID]) > 1e-12 {
			t.Errorf("%s score %v, want %v", r.Record.ID, r.Score, exp[r.Record.ID])
		}
		if r.Explanation.Fused != r.Score || r.Explanation.Method != "rrf(k=60)" {
			t.Errorf("%s explanation %+v", r.Record.ID, r.Explanation)
		}
	}
	a := rs[0].Explanation
	if a.BM25Rank != 1 || a.BM25Score != 12 || a.VectorRank != 2 || a.VectorSimilarity != 0.8 {
		t.Fatalf("explanation of a = %+v", a)
	}
	if rs[3].Explanation.BM25Rank != 0 {
		t.Fatalf("d was never in the BM25 list: %+v", rs[3].Explanation)
	}
}

// Weighted RRF, alpha 0.2: BM25 ranks weigh 1.6, vector ranks 0.4.
// a = 1.6/61 + 0.4/62 = .03268, c = 1.6/63 + 0.4/61 = .03195,
// b = 1.6/62 = .02581, d = 0.4/63 = .00635.
func TestWeightedRRFHandComputed(t *testing.T) {
	f := &fakeRetriever{
		text: []driver.Hit{hit("a", 12), hit("b", 9), hit("c", 3)},
		vec:  []driver.Hit{hit("c", 0.9), hit("a", 0.8), hit("d", 0.7)},
	}
	rs, err := Search(context.Background(), f, "q", &Options{TopK: 10, SimilarityThreshold: -1, Fusion: RRF, Alpha: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	exp := map[string]float64{"a": 1.6/61 + 0.4/62, "b": 1.6 / 62, "c": 1.6/63 + 0.4/61, "d": 0.4 / 63}
	if !eq(ids(rs), []string{"a", "c", "b", "d"}) {
		t.Fatalf("order = %v", ids(rs))
	}
	for _, r := range rs {
		if math.Abs(r.Score-exp[r.Record.ID]) > 1e-12 || r.Explanation.Method != "rrf(k=60,alpha=0.20)" {
			t.Errorf("%s = %v (%s), want %v", r.Record.ID, r.Score, r.Explanation.Method, exp[r.Record.ID])
		}
	}
}

// withEmbedder is a retriever that says which embedder it uses.
type withEmbedder struct {
	*fakeRetriever
	emb embed.Embedder
}

func (w withEmbedder) Embedder() embed.Embedder { return w.emb }

type semanticStub struct{}

func (semanticStub) Embed(context.Context, []string) ([][]float32, error) { return nil, nil }
func (semanticStub) Identity() string                                     { return "stub/d2" }
func (semanticStub) Dimension() int                                       { return 2 }

// withSettings is a retriever with an embedder and store settings, as
// *engine.Index has.
type withSettings struct {
	withEmbedder
	settings map[string]string
}

func (w withSettings) Setting(_ context.Context, key string) (string, bool, error) {
	v, ok := w.settings[key]
	return v, ok, nil
}

// calibrated is a store's settings with a calibration of knowledge at alpha
// (and of memories at memAlpha, when positive).
func calibrated(alpha, memAlpha float64) map[string]string {
	c := Calibration{Version: calibrationVersion, Types: map[string]TypeCalibration{
		index.DocKnowledge: {Chunks: 100, Samples: 100, MRRFullText: 1, MRRVector: 0.5, Alpha: alpha}}}
	if memAlpha > 0 {
		c.Types[index.DocMemory] = TypeCalibration{Chunks: 100, Samples: 100, Alpha: memAlpha}
	}
	b, _ := json.Marshal(c)
	return map[string]string{CalibrationKey: string(b)}
}

// The automatic vector weight: the store's calibration of the document
// type searched, else the default, whatever the embedder; an explicit alpha
// always wins, and the explanation says which.
func TestAutomaticWeight(t *testing.T) {
	lists := func() *fakeRetriever {
		return &fakeRetriever{text: []driver.Hit{hit("a", 10), hit("b", 5)}, vec: []driver.Hit{hit("b", 0.9), hit("a", 0.1)}}
	}
	with := func(emb embed.Embedder, settings map[string]string) Retriever {
		return withSettings{withEmbedder{lists(), emb}, settings}
	}
	sem := func(settings map[string]string) Retriever { return with(semanticStub{}, settings) }
	mem := []string{index.DocMemory}
	cases := []struct {
		name   string
		r      Retriever
		opts   Options
		method string
	}{
		{"unknown embedder", lists(), Options{}, "relative(alpha=0.10, default)"},
		{"lexical, not calibrated", withEmbedder{lists(), embed.NewLexical(nil)}, Options{}, "relative(alpha=0.10, default)"},
		{"lexical, calibrated", with(embed.NewLexical(nil), calibrated(0.3, 0)), Options{}, "relative(alpha=0.30, calibrated)"},
		{"randproj, calibrated", with(embed.NewRandProj(&embed.RandProjOptions{Dimension: 8}), calibrated(0.15, 0)), Options{}, "relative(alpha=0.15, calibrated)"},
		{"semantic, not calibrated", withEmbedder{lists(), semanticStub{}}, Options{}, "relative(alpha=0.10, default)"},
		{"semantic, calibrated", sem(calibrated(0.12, 0)), Options{}, "relative(alpha=0.12, calibrated)"},
		{"memories, calibrated", sem(calibrated(0.12, 0.4)), Options{DocTypes: mem}, "relative(alpha=0.40, calibrated)"},
		{"memories, knowledge only calibrated", sem(calibrated(0.12, 0)), Options{DocTypes: mem}, "relative(alpha=0.10, default)"},
		{"broken calibration", sem(map[string]string{CalibrationKey: "{"}), Options{}, "relative(alpha=0.10, default)"},
		{"old calibration", sem(map[string]string{CalibrationKey: `{"v":1,"alpha":0.3}`}), Options{}, "relative(alpha=0.10, default)"},
		{"explicit", sem(calibrated(0.12, 0)), Options{Alpha: 0.3}, "relative(alpha=0.30)"},
		{"auto with rrf", sem(calibrated(0.12, 0)), Options{Fusion: RRF, Alpha: AlphaAuto}, "rrf(k=60,alpha=0.12, calibrated)"},
		{"plain rrf", sem(calibrated(0.12, 0)), Options{Fusion: RRF}, "rrf(k=60)"},
		{"dbsf", sem(calibrated(0.12, 0)), Options{Fusion: DBSF}, "dbsf(alpha=0.12, calibrated)"},
	}
	for _, c := range cases {
		o := c.opts
		o.TopK, o.SimilarityThreshold = 2, -1
		rs, err := Search(context.Background(), c.r, "q", &o)
		if err != nil || len(rs) != 2 || rs[0].Explanation.Method != c.method {
			t.Errorf("%s: %+v %v, want method %s", c.name, rs, err, c.method)
		}
	}
	// a: 0.88·1 + 0.12·0 against b: 0.88·0 + 0.12·1 with the calibrated
	// weight.
	rs, _ := Search(context.Background(), sem(calibrated(0.12, 0)), "q", &Options{TopK: 2, SimilarityThreshold: -1})
	if rs[0].Record.ID != "a" || math.Abs(rs[0].Score-0.88) > 1e-12 || math.Abs(rs[1].Score-0.12) > 1e-12 {
		t.Errorf("calibrated: %v", rs)
	}
	if w, src := weight(context.Background(), sem(calibrated(0.5, 0.2)), []string{index.DocMemory, index.DocKnowledge}); w != 0.2 || src != WeightCalibrated {
		t.Errorf("Weight = %v %v", w, src)
	}
}

func TestDefaults(t *testing.T) {
	o := (*Options)(nil).withDefaults()
	if o.Mode != Hybrid || o.Fusion != Relative || o.Alpha != DefaultAlpha || o.weightedBy != WeightDefault || o.RRFK != 60 || o.TopK != 5 || o.CandidatePool != 100 {
		t.Errorf("defaults %+v", o)
	}
	if o := (&Options{Fusion: RRF}).withDefaults(); o.Alpha != 0.5 {
		t.Errorf("RRF alpha %v, want 0.5 (plain RRF)", o.Alpha)
	}
	if o := (&Options{TopK: 200}).withDefaults(); o.CandidatePool != 2000 {
		t.Errorf("pool for top 200: %d", o.CandidatePool)
	}
	if f, err := ParseFusion(""); err != nil || f != DefaultFusion {
		t.Errorf("ParseFusion(\"\") = %v %v", f, err)
	}
}

func TestRelativeFusionHandComputed(t *testing.T) {
	// BM25 10, 5, 0 -> 1, .5, 0.  Vector .9, .5 -> 1, 0.  alpha = .25.
	f := &fakeRetriever{
		text: []driver.Hit{hit("a", 10), hit("b", 5), hit("c", 0.0001)},
		vec:  []driver.Hit{hit("b", 0.9), hit("d", 0.5)},
	}
	rs, _ := Search(context.Background(), f, "q", &Options{TopK: 10, Fusion: Relative, Alpha: 0.25, SimilarityThreshold: -1})
	tmin := 0.0001
	exp := map[string]float64{
		"a": 0.75 * 1,
		"b": 0.75*((5-tmin)/(10-tmin)) + 0.25*1,
		"c": 0,
		"d": 0,
	}
	// a = .75, b = .75·(5−tmin)/(10−tmin) + .25 ≈ .625; c and d tie at 0 and
	// d wins the tie with its better best rank (2 against 3).
	if !eq(ids(rs), []string{"a", "b", "d", "c"}) {
		t.Fatalf("order = %v", ids(rs))
	}
	for _, r := range rs {
		if math.Abs(r.Score-exp[r.Record.ID]) > 1e-9 {
			t.Errorf("%s = %v, want %v", r.Record.ID, r.Score, exp[r.Record.ID])
		}
	}
}

func TestTopKAndDescending(t *testing.T) {
	var text, vec []driver.Hit
	for i := 0; i < 40; i++ {
		text = append(text, hit(string(rune('A'+i)), float64(40-i)))
		vec = append(vec, hit(string(rune('A'+39-i)), 1-float64(i)/100))
	}
	for _, mode := range []Mode{Hybrid, FullText, Vector} {
		for _, k := range []int{1, 3, 7, 100} {
			f := &fakeRetriever{text: text, vec: vec}
			rs, err := Search(context.Background(), f, "q", &Options{Mode: mode, TopK: k, SimilarityThreshold: -1})
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) > k {
				t.Fatalf("%s k=%d: %d results", mode, k, len(rs))
			}
			for i := 1; i < len(rs); i++ {
				if rs[i].Score > rs[i-1].Score {
					t.Fatalf("%s k=%d: not descending at %d", mode, k, i)
				}
			}
		}
	}
}

func TestDefaultsAndFilters(t *testing.T) {
	f := &fakeRetriever{}
	if _, err := Search(context.Background(), f, "query", nil); err != nil {
		t.Fatal(err)
	}
	if f.textK != 100 || f.vecK != 100 {
		t.Fatalf("default candidate pool = %d/%d, want 100", f.textK, f.vecK)
	}
	if len(f.textF.DocTypes) != 1 || f.textF.DocTypes[0] != index.DocKnowledge {
		t.Fatalf("default doc types = %v, want knowledge only", f.textF.DocTypes)
	}
	f = &fakeRetriever{}
	Search(context.Background(), f, "query", &Options{TopK: 12, DocTypes: []string{index.DocMemory}, SourceURL: "u"})
	if f.textK != 120 || f.vecF.DocTypes[0] != index.DocMemory || f.vecF.SourceURL != "u" {
		t.Fatalf("options not passed through: k=%d filter=%+v", f.textK, f.vecF)
	}
	f = &fakeRetriever{}
	Search(context.Background(), f, "query", &Options{Mode: FullText, TopK: 3, KeepDuplicates: true, MaxPerSource: -1})
	if f.vectorN != 0 || f.textK != 3 {
		t.Fatalf("fulltext mode ran vector search or asked for %d", f.textK)
	}
	f = &fakeRetriever{}
	Search(context.Background(), f, "query", &Options{Mode: FullText, TopK: 3})
	if f.vectorN != 0 || f.textK != 9 {
		t.Fatalf("diversified fulltext search asked for %d, want 3×TopK", f.textK)
	}
	f = &fakeRetriever{}
	rs, err := Search(context.Background(), f, "   ", nil)
	if err != nil || len(rs) != 0 || f.textN+f.vectorN != 0 {
		t.Fatalf("blank query searched")
	}
	if _, err := Search(context.Background(), f, "q", &Options{Mode: "nope"}); !errors.Is(err, ErrBadMode) {
		t.Fatalf("bad mode: %v", err)
	}
}

func TestThresholdPerMode(t *testing.T) {
	text := []driver.Hit{hit("a", 10), hit("b", 4), hit("c", 2)}      // normalised 1, .4, .2
	vec := []driver.Hit{hit("d", 0.8), hit("c", 0.35), hit("e", 0.1)} // .8 .35 .1
	cases := []struct {
		mode Mode
		want []string
	}{
		{FullText, []string{"a", "b"}},
		{Vector, []string{"d", "c"}},
		{Hybrid, []string{"c", "a", "d", "b"}}, // RRF order; e fails both tests
	}
	for _, c := range cases {
		f := &fakeRetriever{text: text, vec: vec}
		rs, _ := Search(context.Background(), f, "q", &Options{Mode: c.mode, TopK: 10, Fusion: RRF})
		if !eq(ids(rs), c.want) {
			t.Errorf("%s: %v, want %v", c.mode, ids(rs), c.want)
		}
	}
}

func TestErrorsPropagate(t *testing.T) {
	boom := errors.New("boom")
	f := &fakeRetriever{verr: boom}
	if _, err := Search(context.Background(), f, "q", nil); !errors.Is(err, boom) {
		t.Fatalf("vector error lost: %v", err)
	}
	f = &fakeRetriever{terr: boom}
	if _, err := Search(context.Background(), f, "q", &Options{Mode: FullText}); !errors.Is(err, boom) {
		t.Fatalf("text error lost: %v", err)
	}
}

func TestParse(t *testing.T) {
	for in, want := range map[string]Mode{"": Hybrid, "HYBRID": Hybrid, "bm25": FullText, "vector": Vector} {
		if m, err := ParseMode(in); err != nil || m != want {
			t.Errorf("ParseMode(%q) = %v, %v", in, m, err)
		}
	}
	if _, err := ParseMode("fuzzy"); err == nil {
		t.Error("ParseMode(fuzzy) accepted")
	}
	if f, err := ParseFusion("relative"); err != nil || f != Relative {
		t.Errorf("ParseFusion(relative) = %v %v", f, err)
	}
	if _, err := ParseFusion("max"); err == nil {
		t.Error("ParseFusion(max) accepted")
	}
}

// An alpha the caller gives is clamped to [0, 1].
func TestGivenAlphaClamped(t *testing.T) {
	text := []driver.Hit{hit("a", 2), hit("b", 1)}
	vec := []driver.Hit{hit("b", 0.9), hit("a", 0.1)}
	for _, c := range []struct {
		alpha  float64
		method string
		first  string
	}{{2, "relative(alpha=1.00)", "b"}, {-0.5, "relative(alpha=0.00)", "a"}} {
		out := Fuse(text, vec, &Options{Alpha: c.alpha, SimilarityThreshold: -1})
		if len(out) != 2 || out[0].Record.ID != c.first || out[0].Explanation.Method != c.method || out[0].Score != 1 {
			t.Errorf("alpha %v: %+v", c.alpha, out)
		}
	}
}

// One-mode searches: the threshold passes a result at exactly it, a BM25
// list whose best score is 0 matched nothing, and each result's
// explanation carries its 1-based rank in its list.
func TestSingleModeEdges(t *testing.T) {
	text := []driver.Hit{hit("a", 10), hit("b", 3), hit("c", 2.9)}    // 1, .3, .29
	vec := []driver.Hit{hit("d", 0.8), hit("e", 0.3), hit("f", 0.29)} // .8, .3, .29
	opts := &Options{TopK: 10, KeepDuplicates: true, MaxPerSource: -1}
	opts.Mode = FullText
	rs, err := Search(context.Background(), &fakeRetriever{text: text}, "q", opts)
	if err != nil || !eq(ids(rs), []string{"a", "b"}) {
		t.Fatalf("full text: %v %v", ids(rs), err)
	}
	if rs[0].Explanation.BM25Rank != 1 || rs[1].Explanation.BM25Rank != 2 || rs[1].Explanation.VectorRank != 0 {
		t.Errorf("full-text ranks: %+v", rs)
	}
	opts.Mode = Vector
	rs, err = Search(context.Background(), &fakeRetriever{vec: vec}, "q", opts)
	if err != nil || !eq(ids(rs), []string{"d", "e"}) {
		t.Fatalf("vector: %v %v", ids(rs), err)
	}
	if rs[0].Explanation.VectorRank != 1 || rs[1].Explanation.VectorRank != 2 || rs[1].Explanation.BM25Rank != 0 {
		t.Errorf("vector ranks: %+v", rs)
	}
	opts.Mode = FullText
	zero := []driver.Hit{hit("z1", 0), hit("z2", 0)}
	if rs, _ := Search(context.Background(), &fakeRetriever{text: zero}, "q", opts); len(rs) != 0 {
		t.Errorf("BM25 scores of 0 passed the threshold: %v", ids(rs))
	}
	opts.SimilarityThreshold = -1
	if rs, _ := Search(context.Background(), &fakeRetriever{text: zero}, "q", opts); len(rs) != 2 {
		t.Errorf("no threshold: %v", ids(rs))
	}
}

// Each option's default, and what a negative value (off) or NaN becomes.
func TestDefaultsPerField(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name  string
		in    Options
		check func(o Options) bool
	}{
		{"feedback default", Options{}, func(o Options) bool { return o.Feedback == defaultFeedback }},
		{"feedback off", Options{Feedback: -2}, func(o Options) bool { return o.Feedback == 0 }},
		{"feedback kept", Options{Feedback: 7}, func(o Options) bool { return o.Feedback == 7 }},
		{"per source default", Options{}, func(o Options) bool { return o.MaxPerSource == DefaultMaxPerSource }},
		{"per source off", Options{MaxPerSource: -5}, func(o Options) bool { return o.MaxPerSource == -1 }},
		{"per source kept", Options{MaxPerSource: 2}, func(o Options) bool { return o.MaxPerSource == 2 }},
		{"speaker NaN", Options{SpeakerWeight: nan}, func(o Options) bool { return o.SpeakerWeight == DefaultSpeakerWeight }},
		{"speaker off", Options{SpeakerWeight: -1}, func(o Options) bool { return o.SpeakerWeight == 0 }},
		{"speaker kept", Options{SpeakerWeight: 0.7}, func(o Options) bool { return o.SpeakerWeight == 0.7 }},
		{"time default", Options{}, func(o Options) bool { return o.TimeWeight == DefaultTimeWeight }},
		{"time off", Options{TimeWeight: -0.1}, func(o Options) bool { return o.TimeWeight == 0 }},
		{"question NaN", Options{QuestionWeight: nan}, func(o Options) bool { return o.QuestionWeight == DefaultQuestionWeight }},
		{"question kept", Options{QuestionWeight: 3}, func(o Options) bool { return o.QuestionWeight == 3 }},
		{"slack default", Options{}, func(o Options) bool { return o.TimeSlack == DefaultTimeSlack }},
		{"slack none", Options{TimeSlack: -time.Hour}, func(o Options) bool { return o.TimeSlack == 0 }},
		{"slack kept", Options{TimeSlack: time.Hour}, func(o Options) bool { return o.TimeSlack == time.Hour }},
		{"pool at least topK", Options{TopK: 50, CandidatePool: 20}, func(o Options) bool { return o.CandidatePool == 50 }},
		{"pool kept", Options{TopK: 5, CandidatePool: 20}, func(o Options) bool { return o.CandidatePool == 20 }},
		{"alpha clamped", Options{Alpha: 1.5}, func(o Options) bool { return o.Alpha == 1 && o.auto == autoNone }},
		{"alpha NaN is auto", Options{Alpha: nan}, func(o Options) bool { return o.auto == autoAny && o.Alpha == DefaultAlpha }},
		{"alpha with RRF", Options{Fusion: RRF, Alpha: 0.3}, func(o Options) bool { return o.Alpha == 0.3 && o.weightedBy == "" }},
		{"agreement negative", Options{Agreement: -1}, func(o Options) bool { return o.Agreement == 0 }},
		{"agreement NaN", Options{Agreement: nan}, func(o Options) bool { return o.Agreement == 0 }},
		{"threshold kept", Options{SimilarityThreshold: -1}, func(o Options) bool { return o.SimilarityThreshold == -1 }},
		{"threshold default", Options{}, func(o Options) bool { return o.SimilarityThreshold == DefaultThreshold }},
		{"doc types default", Options{}, func(o Options) bool { return len(o.DocTypes) == 1 && o.DocTypes[0] == index.DocKnowledge }},
		{"mode kept", Options{Mode: FullText}, func(o Options) bool { return o.Mode == FullText }},
	}
	for _, c := range cases {
		if o := c.in.withDefaults(); !c.check(o) {
			t.Errorf("%s: %+v", c.name, o)
		}
	}
}
