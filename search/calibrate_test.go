package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/internal/proptest"
)

// hiddenLexical embeds as the lexical embedder does but does not say that it
// matches words: calibration must not need to know.
type hiddenLexical struct{ lex *embed.Lexical }

func (h hiddenLexical) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return h.lex.Embed(ctx, texts)
}
func (h hiddenLexical) Identity() string { return "hidden-" + h.lex.Identity() }
func (h hiddenLexical) Dimension() int   { return h.lex.Dimension() }

// noise embeds every text as a pseudo-random unit vector seeded by the
// text: deterministic, and unrelated to what the text says.
type noise struct{}

func (noise) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		h := fnv.New64a()
		io.WriteString(h, t)
		rng := rand.New(rand.NewPCG(h.Sum64(), 7))
		v := make([]float32, 32)
		var n float64
		for j := range v {
			v[j] = float32(rng.NormFloat64())
			n += float64(v[j]) * float64(v[j])
		}
		for j := range v {
			v[j] /= float32(math.Sqrt(n))
		}
		out[i] = v
	}
	return out, nil
}
func (noise) Identity() string { return "noise/d32" }
func (noise) Dimension() int   { return 32 }

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// corpus returns n documents of 30 words each drawn from a vocabulary of
// 400 made-up words, so that a span of 12 of a document's words identifies
// it.
func corpus(n, seed int) []index.Document {
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	vocab := make([]string, 400)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%dq%c", i, 'a'+rune(i%26))
	}
	docs := make([]index.Document, n)
	for i := range docs {
		words := make([]string, 30)
		for j := range words {
			words[j] = vocab[rng.IntN(len(vocab))]
		}
		docs[i] = index.Document{SourceURL: fmt.Sprintf("https://example.test/%d-%d", seed, i), Content: strings.Join(words, " ") + "."}
	}
	return docs
}

func openStore(t *testing.T, dir string, emb embed.Embedder, docs []index.Document) *engine.Index {
	t.Helper()
	ix, err := engine.Open(context.Background(), dir, &engine.Options{Embedder: emb, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) > 0 {
		if _, err := ix.AddMany(context.Background(), docs); err != nil {
			t.Fatal(err)
		}
	}
	return ix
}

// knowledgeCal returns the knowledge type's calibration of c.
func knowledgeCal(t *testing.T, c Calibration) TypeCalibration {
	t.Helper()
	tc, ok := c.Types[index.DocKnowledge]
	if !ok {
		t.Fatalf("no knowledge calibration in %+v", c)
	}
	return tc
}

// Calibration tells an embedder that finds the store's texts from one that
// does not (the grid's smallest weight for noise, a larger one for an
// embedder that finds as well as BM25), whatever the embedder declares,
// records the weight in the store, and the weight survives a reopen.
func TestCalibrate(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name       string
		emb        embed.Embedder
		minV, maxV float64 // MRR@10 of the vector ranking
	}{
		{"finds its texts", hiddenLexical{embed.NewLexical(nil)}, 0.5, 1},
		{"matches words, and says so", embed.NewLexical(nil), 0.5, 1},
		{"finds nothing", noise{}, 0, 0.1},
	}
	for _, c := range cases {
		dir := t.TempDir()
		ix := openStore(t, dir, c.emb, corpus(120, 1))
		if _, ok := StoredCalibration(ctx, ix); ok {
			t.Fatalf("%s: calibrated before Calibrate", c.name)
		}
		cal, err := Calibrate(ctx, ix, &CalibrateOptions{Samples: 80})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		tc := knowledgeCal(t, cal)
		if tc.Samples != 80 || tc.Chunks != 120 || tc.From != FromChunks || tc.MRRFullText < 0.5 || tc.MRRVector < c.minV || tc.MRRVector > c.maxV ||
			tc.MRRFused < max(tc.MRRFullText, tc.MRRVector)-0.05 || cal.Embedder != c.emb.Identity() || cal.At.IsZero() || len(cal.Types) != 1 {
			t.Errorf("%s: %+v %+v", c.name, cal, tc)
		}
		if c.maxV < 0.5 && tc.Alpha != calibrationGrid[0] {
			t.Errorf("%s: alpha %v, want the smallest, %v", c.name, tc.Alpha, calibrationGrid[0])
		}
		if tc.MRRFused < tc.MRRFullText-1.0/80 {
			t.Errorf("%s: fused %v below BM25's %v by more than a question", c.name, tc.MRRFused, tc.MRRFullText)
		}
		if w, src := weight(ctx, ix, nil); w != tc.Alpha || src != WeightCalibrated {
			t.Errorf("%s: Weight = %v %v, want %v calibrated", c.name, w, src, tc.Alpha)
		}
		// Memories were not measured: their searches get the default.
		if w, src := weight(ctx, ix, []string{index.DocMemory}); w != DefaultAlpha || src != WeightDefault {
			t.Errorf("%s: memories' Weight = %v %v", c.name, w, src)
		}
		// The same store content gives the same questions.
		again, err := Calibrate(ctx, ix, &CalibrateOptions{Samples: 80})
		if err != nil || knowledgeCal(t, again) != tc {
			t.Errorf("%s: second calibration %+v, %v", c.name, again, err)
		}
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
		ix = openStore(t, dir, c.emb, nil)
		if got, ok := StoredCalibration(ctx, ix); !ok || got.Types[index.DocKnowledge] != tc {
			t.Errorf("%s: after reopening: %+v %v", c.name, got, ok)
		}
		ix.Close()
	}
}

// The weight picked: the smallest within one question of the best.
func TestPickWeight(t *testing.T) {
	for _, c := range []struct {
		fused []float64
		want  int
	}{
		{[]float64{10, 10.5, 12, 11.5}, 2},
		{[]float64{10, 10.5, 12, 11}, 2},
		{[]float64{10, 10.9, 10.5}, 0},
		{[]float64{10, 11, 10.5}, 0},
		{[]float64{10, 11.01, 10.5}, 1},
		{[]float64{0, 0, 0}, 0},
		{[]float64{3, 2, 1, 5.5}, 3},
	} {
		if got := pickWeight(c.fused); got != c.want {
			t.Errorf("pickWeight(%v) = %d, want %d", c.fused, got, c.want)
		}
	}
}

// Each document type is measured on its own chunks: a store of few
// knowledge chunks and enough memories calibrates the memories only, and
// a search of both takes the weight of the first type that has one.
func TestCalibrateByType(t *testing.T) {
	ctx := context.Background()
	ix := openStore(t, t.TempDir(), noise{}, corpus(10, 20))
	defer ix.Close()
	mem := corpus(70, 21)
	for i := range mem {
		mem[i].DocType = index.DocMemory
	}
	if _, err := ix.AddMany(ctx, mem); err != nil {
		t.Fatal(err)
	}
	cal, err := Calibrate(ctx, ix, nil)
	if err != nil {
		t.Fatal(err)
	}
	tc, ok := cal.Types[index.DocMemory]
	if _, kn := cal.Types[index.DocKnowledge]; kn || !ok || tc.Chunks != 70 || tc.Samples != 70 {
		t.Fatalf("%+v", cal)
	}
	if w, src := weight(ctx, ix, nil); w != DefaultAlpha || src != WeightDefault {
		t.Errorf("knowledge: %v %v", w, src)
	}
	if w, src := weight(ctx, ix, []string{index.DocKnowledge, index.DocMemory}); w != tc.Alpha || src != WeightCalibrated {
		t.Errorf("knowledge and memories: %v %v", w, src)
	}
	// A type asked for alone.
	only, err := Calibrate(ctx, ix, &CalibrateOptions{DocTypes: []string{index.DocMemory}, Samples: 30})
	if err != nil || len(only.Types) != 1 || only.Types[index.DocMemory].Samples != 30 {
		t.Errorf("memories only: %+v %v", only, err)
	}
}

func TestCalibrateTooSmall(t *testing.T) {
	ix := openStore(t, t.TempDir(), noise{}, corpus(MinCalibrationChunks-1, 3))
	defer ix.Close()
	if _, err := Calibrate(context.Background(), ix, nil); !errors.Is(err, ErrTooSmall) {
		t.Errorf("err = %v, want ErrTooSmall", err)
	}
	if _, ok := StoredCalibration(context.Background(), ix); ok {
		t.Error("a failed calibration was recorded")
	}
	// Too few of each type: preferences and a few memories do not add up.
	mem := corpus(10, 4)
	for i := range mem {
		mem[i].DocType = index.DocMemory
	}
	if _, err := ix.AddMany(context.Background(), mem); err != nil {
		t.Fatal(err)
	}
	if _, err := Calibrate(context.Background(), ix, nil); !errors.Is(err, ErrTooSmall) {
		t.Errorf("with memories: err = %v, want ErrTooSmall", err)
	}
	// An empty store: no calibration, the default weight.
	empty := openStore(t, t.TempDir(), noise{}, nil)
	defer empty.Close()
	if _, err := Calibrate(context.Background(), empty, nil); !errors.Is(err, ErrTooSmall) {
		t.Errorf("empty store: %v", err)
	}
	if w, src := weight(context.Background(), empty, nil); w != DefaultAlpha || src != WeightDefault {
		t.Errorf("empty store: %v %v", w, src)
	}
}

// conversation returns sessions of turns as memories, two speakers in turn:
// every even turn a question about a topic of made-up words, answered by the
// next turn with the same topic's words and others.
func conversation(sessions, turns int) []index.Document {
	var docs []index.Document
	for s := range sessions {
		for i := range turns {
			topic := fmt.Sprintf("t%ds%dx t%ds%dy t%ds%dz", s, i/2, s, i/2, s, i/2)
			text := "What about " + topic + " then?"
			speaker := "Ann"
			if i%2 == 1 {
				text = fmt.Sprintf("The %s was settled by Bob on day %d, with filler%d and extra%d words.", topic, i, i, s)
				speaker = "Bob"
			}
			docs = append(docs, index.Document{
				SourceURL: fmt.Sprintf("memory://chat/%d/%d", s, i), DocType: index.DocMemory, Content: text,
				Attrs: map[string]string{index.AttrSpeaker: speaker, index.AttrSession: fmt.Sprint(s), index.AttrTurn: fmt.Sprint(i)},
			})
		}
	}
	return docs
}

// A store of conversations asks its own questions: each question turn,
// with the next turn (another speaker's) as the one to find, its own turn
// left out of the rankings.
func TestCalibrateAsksTheStoresQuestions(t *testing.T) {
	ctx := context.Background()
	ix := openStore(t, t.TempDir(), noise{}, conversation(8, 12))
	defer ix.Close()
	cal, err := Calibrate(ctx, ix, &CalibrateOptions{DocTypes: []string{index.DocMemory}})
	if err != nil {
		t.Fatal(err)
	}
	tc := cal.Types[index.DocMemory]
	// 48 questions, each answered at rank 1 by BM25: the question itself
	// (which BM25 would rank first) is left out.
	if tc.From != FromConversations || tc.Samples != 48 || tc.MRRFullText != 1 || tc.Alpha != calibrationGrid[0] {
		t.Errorf("%+v", tc)
	}
	// Without the turns' places, the chunks' pseudo-questions.
	plain := conversation(8, 12)
	for i := range plain {
		delete(plain[i].Attrs, index.AttrTurn)
	}
	ix2 := openStore(t, t.TempDir(), noise{}, plain)
	defer ix2.Close()
	cal, err = Calibrate(ctx, ix2, &CalibrateOptions{DocTypes: []string{index.DocMemory}})
	if err != nil || cal.Types[index.DocMemory].From != FromChunks {
		t.Errorf("no places: %+v %v", cal, err)
	}
}

// The smallest store calibrated: exactly MinCalibrationChunks chunks, each
// of exactly minQuestionWords distinct words.
func TestCalibrateSmallestStore(t *testing.T) {
	docs := make([]index.Document, MinCalibrationChunks)
	for i := range docs {
		docs[i] = index.Document{
			SourceURL: fmt.Sprintf("https://example.test/small-%d", i),
			Content:   fmt.Sprintf("alpha%dx beta%dy gamma%dz", i, i, i),
		}
	}
	ix := openStore(t, t.TempDir(), noise{}, docs)
	defer ix.Close()
	cal, err := Calibrate(context.Background(), ix, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tc := knowledgeCal(t, cal); tc.Chunks != MinCalibrationChunks || tc.Samples != MinCalibrationChunks || tc.MRRFullText < 0.9 {
		t.Errorf("%+v", tc)
	}
	// One word fewer each: nothing to ask.
	for i := range docs {
		docs[i].Content = fmt.Sprintf("alpha%dx beta%dy", i, i)
	}
	small := openStore(t, t.TempDir(), noise{}, docs)
	defer small.Close()
	if _, err := Calibrate(context.Background(), small, nil); !errors.Is(err, ErrTooSmall) {
		t.Errorf("two words a chunk: %v", err)
	}
}

// The sample's seed defaults to 1, and another seed draws another sample.
func TestCalibrateSeed(t *testing.T) {
	ctx := context.Background()
	ix := openStore(t, t.TempDir(), noise{}, corpus(150, 13))
	defer ix.Close()
	run := func(o *CalibrateOptions) TypeCalibration {
		t.Helper()
		c, err := Calibrate(ctx, ix, o)
		if err != nil {
			t.Fatal(err)
		}
		return knowledgeCal(t, c)
	}
	def, one, two := run(&CalibrateOptions{Samples: 60}), run(&CalibrateOptions{Samples: 60, Seed: 1}), run(&CalibrateOptions{Samples: 60, Seed: 2})
	if def != one {
		t.Errorf("default seed %+v, seed 1 %+v", def, one)
	}
	if two.MRRFullText == one.MRRFullText && two.MRRVector == one.MRRVector {
		t.Errorf("seeds 1 and 2 measured the same: %+v", two)
	}
}

// The calibrator calibrates once a type is large enough, again when it has
// grown by a quarter, whatever the embedder; a bulk import is measured once,
// at its end, and Close runs a check still due.
func TestCalibrator(t *testing.T) {
	ctx := context.Background()
	ix := openStore(t, t.TempDir(), embed.NewLexical(nil), corpus(40, 5))
	defer ix.Close()
	c := NewCalibrator(ix, quietLog())
	c.mu.Lock()
	c.quiet = 20 * time.Millisecond
	c.mu.Unlock()
	add := func(n, seed int) {
		t.Helper()
		res, err := ix.AddMany(ctx, corpus(n, seed))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			c.Changed(r.Chunks)
		}
	}
	chunks := func() int {
		cal, _ := StoredCalibration(ctx, ix)
		return cal.Types[index.DocKnowledge].Chunks
	}
	calibratorWait(t, c)
	if _, ok := StoredCalibration(ctx, ix); ok {
		t.Fatal("calibrated a store of 40 chunks")
	}
	add(20, 6) // 60 chunks
	calibratorWait(t, c)
	if n := chunks(); n != 60 {
		t.Fatalf("after growing to 60 chunks: calibrated at %d", n)
	}
	add(10, 7) // 70: less than a quarter more
	calibratorWait(t, c)
	if n := chunks(); n != 60 {
		t.Errorf("recalibrated after 10 more chunks: %d", n)
	}
	add(10, 8) // 80: a third more than 60
	calibratorWait(t, c)
	if n := chunks(); n != 80 {
		t.Errorf("not recalibrated at 80 chunks: %d", n)
	}
	c.mu.Lock()
	c.quiet = time.Hour
	c.mu.Unlock()
	add(30, 9)  // 110
	add(30, 10) // 140
	if n := chunks(); n != 80 {
		t.Errorf("calibrated while the store was busy: %d", n)
	}
	c.Close()
	if n := chunks(); n != 140 {
		t.Errorf("Close did not run the due check: %d", n)
	}
	add(40, 11)
	if n := chunks(); n != 140 {
		t.Errorf("calibrated after Close: %d", n)
	}
}

// A stored calibration counts only with the current version, and a type's
// weight only within the grid, bounds included.
func TestStoredCalibrationBounds(t *testing.T) {
	ctx := context.Background()
	ix := openStore(t, t.TempDir(), noise{}, nil)
	defer ix.Close()
	lo, hi := calibrationGrid[0], calibrationGrid[len(calibrationGrid)-1]
	for _, c := range []struct {
		version int
		alpha   float64
		ok      bool
	}{
		{calibrationVersion, lo, true},
		{calibrationVersion, hi, true},
		{calibrationVersion, 0.2, true},
		{calibrationVersion, lo - 1e-9, false},
		{calibrationVersion, hi + 1e-9, false},
		{calibrationVersion + 1, 0.2, false},
		{calibrationVersion - 1, 0.2, false},
	} {
		b, err := json.Marshal(Calibration{Version: c.version, Types: map[string]TypeCalibration{index.DocKnowledge: {Alpha: c.alpha, Chunks: 80}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := ix.SetSetting(ctx, CalibrationKey, string(b)); err != nil {
			t.Fatal(err)
		}
		got, ok := StoredCalibration(ctx, ix)
		if ok != c.ok || ok && got.Types[index.DocKnowledge].Alpha != c.alpha {
			t.Errorf("version %d alpha %v: %+v %v, want ok %v", c.version, c.alpha, got, ok, c.ok)
		}
	}
	// One type out of bounds is dropped; the other still counts.
	b, _ := json.Marshal(Calibration{Version: calibrationVersion, Types: map[string]TypeCalibration{
		index.DocKnowledge: {Alpha: 2}, index.DocMemory: {Alpha: 0.3}}})
	if err := ix.SetSetting(ctx, CalibrationKey, string(b)); err != nil {
		t.Fatal(err)
	}
	if got, ok := StoredCalibration(ctx, ix); !ok || len(got.Types) != 1 || got.Types[index.DocMemory].Alpha != 0.3 {
		t.Errorf("one bad type: %+v %v", got, ok)
	}
	if err := ix.SetSetting(ctx, CalibrationKey, "{not json"); err != nil {
		t.Fatal(err)
	}
	if _, ok := StoredCalibration(ctx, ix); ok {
		t.Error("a malformed calibration counted")
	}
}

// The calibrator's edges: a store of exactly MinCalibrationChunks is
// calibrated, a change of exactly the awaited size (in one call) causes a
// check, and the calibrator reports to the logger it was given.
func TestCalibratorEdges(t *testing.T) {
	ctx := context.Background()
	ix := openStore(t, t.TempDir(), hiddenLexical{embed.NewLexical(nil)}, corpus(MinCalibrationChunks-10, 15))
	defer ix.Close()
	var logged strings.Builder
	var mu sync.Mutex
	c := NewCalibrator(ix, slog.New(slog.NewTextHandler(lockedWriter{&mu, &logged}, nil)))
	defer c.Close()
	c.mu.Lock()
	c.quiet = 20 * time.Millisecond
	c.mu.Unlock()
	calibratorWait(t, c)
	if _, err := ix.AddMany(ctx, corpus(10, 16)); err != nil {
		t.Fatal(err)
	}
	c.Changed(10) // what the first check awaits: MinCalibrationChunks − 40
	calibratorWait(t, c)
	if cal, ok := StoredCalibration(ctx, ix); !ok || cal.Types[index.DocKnowledge].Chunks != MinCalibrationChunks {
		t.Fatalf("a store of exactly %d chunks: %+v %v", MinCalibrationChunks, cal, ok)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), "calibrated the hybrid fusion weight") {
		t.Errorf("the calibrator's logger got %q", logged.String())
	}
}

// A calibration is kept while a type's size moves by less than a quarter of
// the size it was measured at, and redone at exactly a quarter.
func TestCalibratorQuarter(t *testing.T) {
	ctx := context.Background()
	ix := openStore(t, t.TempDir(), hiddenLexical{embed.NewLexical(nil)}, corpus(60, 17))
	defer ix.Close()
	// A recorded calibration of these 60 chunks, recognisable by its MRR.
	b, err := json.Marshal(Calibration{Version: calibrationVersion, Types: map[string]TypeCalibration{
		index.DocKnowledge: {Chunks: 60, Samples: 60, MRRFullText: 1, MRRVector: 0.123, Alpha: 0.2}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.SetSetting(ctx, CalibrationKey, string(b)); err != nil {
		t.Fatal(err)
	}
	c := NewCalibrator(ix, quietLog())
	defer c.Close()
	c.mu.Lock()
	c.quiet = 20 * time.Millisecond
	c.mu.Unlock()
	calibratorWait(t, c)
	if cal, _ := StoredCalibration(ctx, ix); cal.Types[index.DocKnowledge].MRRVector != 0.123 {
		t.Fatalf("recalibrated a store that has not changed: %+v", cal)
	}
	if _, err := ix.AddMany(ctx, corpus(15, 18)); err != nil {
		t.Fatal(err)
	}
	c.Changed(15) // exactly a quarter of 60, and what the check awaits
	calibratorWait(t, c)
	if cal, _ := StoredCalibration(ctx, ix); cal.Types[index.DocKnowledge].Chunks != 75 {
		t.Fatalf("not recalibrated after a quarter more: %+v", cal)
	}
}

// miscount embeds as noise does, and once told to, answers one vector too
// many without an error.
type miscount struct {
	noise
	on *bool
}

func (m miscount) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out, err := m.noise.Embed(ctx, texts)
	if *m.on {
		out = append(out, out[0])
	}
	return out, err
}

// An embedder that answers the wrong number of vectors fails the
// calibration, which records nothing.
func TestCalibrateWrongVectorCount(t *testing.T) {
	on := false
	ix := openStore(t, t.TempDir(), miscount{on: &on}, corpus(60, 14))
	defer ix.Close()
	on = true
	_, err := Calibrate(context.Background(), ix, nil)
	if !errors.Is(err, engine.ErrEmbedding) || !errors.Is(err, embed.ErrBadResponse) {
		t.Errorf("err = %v, want ErrEmbedding and ErrBadResponse", err)
	}
	if _, ok := StoredCalibration(context.Background(), ix); ok {
		t.Error("a failed calibration was recorded")
	}
}

// calibratorWait waits until c has no check due or under way.
func calibratorWait(t *testing.T, c *Calibrator) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		c.mu.Lock()
		idle := !c.due && !c.running
		c.mu.Unlock()
		if idle {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the calibrator never went idle")
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A change of nothing (an identical re-index) does not keep a due check
// waiting: the store counts as quiet.
func TestCalibratorNothingChangedIsQuiet(t *testing.T) {
	ix := openStore(t, t.TempDir(), hiddenLexical{embed.NewLexical(nil)}, corpus(60, 19))
	defer ix.Close()
	c := NewCalibrator(ix, quietLog())
	defer c.Close()
	calibratorWait(t, c)
	c.mu.Lock()
	c.quiet = 100 * time.Millisecond
	c.mu.Unlock()
	c.Changed(1000) // due
	// Changes of nothing every 5 ms: the check must still start once the
	// quiet time has passed (a reset timer would wait for ever).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		c.Changed(0)
		c.mu.Lock()
		due := c.due
		c.mu.Unlock()
		if !due {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the due check still waits after 30 s of changes of nothing")
		}
	}
}

// calibrationCase is a question's two rankings over 60 records (30 in five
// sources of six, so that the fused list's end can come before its tenth
// source, and 30 sources of one), with scores drawn from a few values so
// that ties are common, and the source to find.
type calibrationCase struct {
	text, vec []driver.Hit
	source    string
	alpha     float64
}

func genCalibrationCase() gopter.Gen {
	return gopter.CombineGens(
		gen.SliceOfN(60, gen.IntRange(-1, 3)),
		gen.SliceOfN(60, gen.IntRange(-1, 3)),
		gen.IntRange(0, 36),
		gen.OneConstOf(0.1, 0.15, 0.3, 0.5, 0.9, 1.0), // the grid's weights and 1 (0 is Fuse's automatic weight)
	).Map(func(v []any) calibrationCase {
		rec := func(i int) index.Record {
			src := i / 6
			if i >= 30 {
				src = i - 25
			}
			return index.Record{ID: fmt.Sprintf("r%02d", i), SourceURL: fmt.Sprintf("s%d", src)}
		}
		var c calibrationCase
		for i, s := range v[0].([]int) {
			if s >= 0 { // -1 leaves the record out of the ranking
				c.text = append(c.text, driver.Hit{Record: rec(i), Score: float64(s)})
			}
		}
		for i, s := range v[1].([]int) {
			if s >= 0 {
				c.vec = append(c.vec, driver.Hit{Record: rec(i), Score: float64(s) / 3})
			}
		}
		sortHits(c.text)
		sortHits(c.vec)
		c.source, c.alpha = fmt.Sprintf("s%d", v[2].(int)), v[3].(float64)
		return c
	})
}

// The calibration grid ranks each question without building results
// (fusedReciprocalRank); it must find the source exactly where Fuse's
// ranking does, ties, truncation and all. A mutant that drops the
// truncation (the 3·calibrationDepth records Fuse returns) or the id
// tie-break fails it.
func TestFusedReciprocalRankIsFuses(t *testing.T) {
	ps := gopter.NewProperties(proptest.Params(t, 500))
	ps.Property("fusedReciprocalRank = reciprocalRank of Fuse", prop.ForAll(
		func(c calibrationCase) bool {
			want := reciprocalRank(resultSources(Fuse(c.text, c.vec, &Options{Alpha: c.alpha, TopK: 3 * calibrationDepth, SimilarityThreshold: -1})), c.source)
			got := fusedReciprocalRank(candidates(nil, c.text, c.vec), c.alpha, c.source)
			if got != want {
				t.Logf("alpha %.2f source %s: got %v, Fuse gives %v", c.alpha, c.source, got, want)
			}
			return got == want
		},
		genCalibrationCase(),
	))
	ps.TestingRun(t)
}

// Two cases the property above rarely draws: the fused list ends (at
// 3·calibrationDepth records) before the source's record, though fewer than
// calibrationDepth sources come before it; and a tie in fused score broken
// by each record's best rank in either list.
func TestFusedReciprocalRankEdges(t *testing.T) {
	rec := func(id, src string, score float64) driver.Hit {
		return driver.Hit{Record: index.Record{ID: id, SourceURL: src}, Score: score}
	}
	var long []driver.Hit // 30 records of five sources, then the one to find
	for i := range 30 {
		long = append(long, rec(fmt.Sprintf("r%02d", i), fmt.Sprintf("s%d", i/6), 10))
	}
	long = append(long, rec("t", "target", 5))
	// x and y tie at 0.625 with alpha 0.5; x is first in BM25's list, y
	// second in both.
	text := []driver.Hit{rec("x", "target", 8), rec("y", "other", 4), rec("z", "z", 0)}
	vec := []driver.Hit{rec("w", "w", 1), rec("y", "other", 0.75), rec("x", "target", 0.25), rec("z", "z", 0)}
	for _, c := range []struct {
		name      string
		text, vec []driver.Hit
		alpha     float64
		want      float64
	}{
		{"past the fused list's end", long, nil, 0.1, 0},
		{"tie broken by best rank", text, vec, 0.5, 1},
	} {
		want := reciprocalRank(resultSources(Fuse(c.text, c.vec, &Options{Alpha: c.alpha, TopK: 3 * calibrationDepth, SimilarityThreshold: -1})), "target")
		got := fusedReciprocalRank(candidates(nil, c.text, c.vec), c.alpha, "target")
		if want != c.want || got != c.want {
			t.Errorf("%s: fusedReciprocalRank %v, Fuse's %v, want %v", c.name, got, want, c.want)
		}
	}
}

// weight is the automatic vector weight search gives a hybrid search of
// docTypes, and where it came from.
func weight(ctx context.Context, r Retriever, docTypes []string) (float64, WeightSource) {
	if tc, ok := calibrationOf(ctx, r, docTypes); ok {
		return tc.Alpha, WeightCalibrated
	}
	return DefaultAlpha, WeightDefault
}

// In a chat (turns that say their role), the questions are drawn from the
// user's turns, not asked by the chat; the calibration still counts all the
// type's chunks, which its Calibrator compares with the store's to decide
// when to measure again.
func TestCalibrateChatAsksOfTheUsersTurns(t *testing.T) {
	ctx := context.Background()
	docs := conversation(10, 12)
	for i := range docs {
		docs[i].Attrs[index.AttrRole] = map[string]string{"Ann": "user", "Bob": "assistant"}[docs[i].Attrs[index.AttrSpeaker]]
	}
	ix := openStore(t, t.TempDir(), noise{}, docs)
	defer ix.Close()
	cal, err := Calibrate(ctx, ix, &CalibrateOptions{DocTypes: []string{index.DocMemory}})
	if err != nil {
		t.Fatal(err)
	}
	// 60 user turns, found by BM25 near the top (a question's words are its
	// own turn's, and the answer's after it).
	if tc := cal.Types[index.DocMemory]; tc.From != FromUserTurns || tc.Chunks != 120 || tc.Samples != 60 || tc.MRRFullText < 0.9 {
		t.Errorf("%+v", tc)
	}
}

// Search follows the feedback the calibration chose when it uses the
// calibrated weight and is not told otherwise; a caller's Feedback, or a
// weight of the caller's, leaves the default.
func TestCalibratedFeedback(t *testing.T) {
	ctx := context.Background()
	ix := openStore(t, t.TempDir(), hiddenLexical{embed.NewLexical(nil)}, corpus(60, 3))
	defer ix.Close()
	query := strings.Join(strings.Fields(corpus(60, 3)[7].Content)[:6], " ")
	for _, c := range []struct {
		stored int
		opts   Options
		want   string
	}{
		{0, Options{}, "relative(alpha=0.30, calibrated)"},
		{defaultFeedback, Options{}, "relative(alpha=0.30, calibrated, feedback=3)"},
		{0, Options{Feedback: 2}, "relative(alpha=0.30, calibrated, feedback=2)"},
		{0, Options{Alpha: 0.5}, "relative(alpha=0.50, feedback=3)"},
	} {
		b, _ := json.Marshal(Calibration{Version: calibrationVersion, Types: map[string]TypeCalibration{
			index.DocKnowledge: {Chunks: 60, Alpha: 0.3, Feedback: c.stored}}})
		if err := ix.SetSetting(ctx, CalibrationKey, string(b)); err != nil {
			t.Fatal(err)
		}
		rs, err := Search(ctx, ix, query, &c.opts)
		if err != nil || len(rs) == 0 {
			t.Fatalf("%+v: %v %v", c, rs, err)
		}
		if got := rs[0].Explanation.Method; got != c.want {
			t.Errorf("stored feedback %d, %+v: method %q, want %q", c.stored, c.opts, got, c.want)
		}
	}
}
