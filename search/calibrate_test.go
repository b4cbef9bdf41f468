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

	"github.com/ragmem/ragmem/embed"
	"github.com/ragmem/ragmem/index"
)

// hiddenLexical embeds as the lexical embedder does but does not say that it
// matches words, so search treats it as semantic (and calibrates it).
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

func openStore(t *testing.T, dir string, emb embed.Embedder, docs []index.Document) *index.Index {
	t.Helper()
	ix, err := index.Open(context.Background(), dir, &index.Options{Embedder: emb, Logger: quietLog()})
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

// Calibration tells an embedder that finds the store's texts from one that
// does not, records the weight in the store, and the weight survives a
// reopen.
func TestCalibrate(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name       string
		emb        embed.Embedder
		minV, maxV float64 // MRR@10 of the vector ranking
		alpha      float64 // 0: CalibrationScale × ratio
	}{
		{"finds its texts", hiddenLexical{embed.NewLexical(nil)}, 0.8, 1, 0},
		{"finds nothing", noise{}, 0, 0.1, MinCalibratedAlpha},
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
		want := c.alpha
		if want == 0 {
			want = math.Min(MaxCalibratedAlpha, CalibrationScale*cal.MRRVector/cal.MRRFullText)
		}
		if cal.Samples != 80 || cal.Chunks != 120 || cal.MRRFullText < 0.9 || cal.MRRVector < c.minV || cal.MRRVector > c.maxV ||
			math.Abs(cal.Alpha-want) > 1e-12 || cal.Embedder != c.emb.Identity() || cal.At.IsZero() {
			t.Errorf("%s: %+v (want alpha %v)", c.name, cal, want)
		}
		if w, src := Weight(ctx, ix); w != cal.Alpha || src != WeightCalibrated {
			t.Errorf("%s: Weight = %v %v, want %v calibrated", c.name, w, src, cal.Alpha)
		}
		// The same store content gives the same pseudo-queries.
		again, err := Calibrate(ctx, ix, &CalibrateOptions{Samples: 80})
		if err != nil || again.MRRVector != cal.MRRVector || again.MRRFullText != cal.MRRFullText {
			t.Errorf("%s: second calibration %+v, %v", c.name, again, err)
		}
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
		ix = openStore(t, dir, c.emb, nil)
		if got, ok := StoredCalibration(ctx, ix); !ok || got.Alpha != cal.Alpha || got.MRRVector != cal.MRRVector {
			t.Errorf("%s: after reopening: %+v %v", c.name, got, ok)
		}
		ix.Close()
	}
	// The lexical embedder can be calibrated (eval reports it), but its
	// declaration wins.
	ix := openStore(t, t.TempDir(), embed.NewLexical(nil), corpus(60, 2))
	defer ix.Close()
	cal, err := Calibrate(ctx, ix, nil)
	if err != nil || cal.Samples != 60 || cal.Alpha <= DefaultAlpha {
		t.Errorf("lexical: %+v %v", cal, err)
	}
	if w, src := Weight(ctx, ix); w != LexicalAlpha || src != WeightLexical {
		t.Errorf("lexical: Weight = %v %v", w, src)
	}
	if w, src := weight(ctx, ix, true, 0); w != cal.Alpha || src != WeightCalibrated {
		t.Errorf("lexical, calibration asked for: %v %v", w, src)
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
	// Memories and preferences do not count.
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
}

// The calibrator calibrates once the store is large enough, again when it
// has grown by a quarter, and never for an embedder that matches words.
func TestCalibrator(t *testing.T) {
	ctx := context.Background()
	ix := openStore(t, t.TempDir(), hiddenLexical{embed.NewLexical(nil)}, corpus(40, 5))
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
	wait := func() {
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
	wait()
	if _, ok := StoredCalibration(ctx, ix); ok {
		t.Fatal("calibrated a store of 40 chunks")
	}
	add(20, 6) // 60 chunks
	wait()
	cal, ok := StoredCalibration(ctx, ix)
	if !ok || cal.Chunks != 60 {
		t.Fatalf("after growing to 60 chunks: %+v %v", cal, ok)
	}
	add(10, 7) // 70: less than a quarter more
	wait()
	if cal, _ := StoredCalibration(ctx, ix); cal.Chunks != 60 {
		t.Errorf("recalibrated after 10 more chunks: %+v", cal)
	}
	add(10, 8) // 80: a third more than 60
	wait()
	if cal, _ := StoredCalibration(ctx, ix); cal.Chunks != 80 {
		t.Errorf("not recalibrated at 80 chunks: %+v", cal)
	}
	// A bulk import is measured once, when it is over; Close runs a check
	// that is still due.
	c.mu.Lock()
	c.quiet = time.Hour
	c.mu.Unlock()
	add(30, 9)  // 110
	add(30, 10) // 140
	if cal, _ := StoredCalibration(ctx, ix); cal.Chunks != 80 {
		t.Errorf("calibrated while the store was busy: %+v", cal)
	}
	c.Close()
	if cal, _ := StoredCalibration(ctx, ix); cal.Chunks != 140 {
		t.Errorf("Close did not run the due check: %+v", cal)
	}
	add(40, 11)
	if cal, _ := StoredCalibration(ctx, ix); cal.Chunks != 140 {
		t.Errorf("calibrated after Close: %+v", cal)
	}

	lex := openStore(t, t.TempDir(), embed.NewLexical(nil), corpus(80, 12))
	defer lex.Close()
	lc := NewCalibrator(lex, quietLog())
	lc.Changed(100)
	lc.Close()
	if _, ok := StoredCalibration(ctx, lex); ok {
		t.Error("calibrated a lexical store")
	}
}

// AlphaFor clamps to [MinCalibratedAlpha, MaxCalibratedAlpha], and a BM25
// that finds nothing gives the smallest weight, whatever the vector found.
func TestAlphaForEdges(t *testing.T) {
	for _, c := range []struct{ scale, text, vec, want float64 }{
		{0.4, 0, 0, MinCalibratedAlpha},
		{0.4, 0, 0.7, MinCalibratedAlpha},
		{0.4, 1, 1, 0.4},
		{0.4, 0.5, 0.25, 0.2},
		{0.4, 1, 0.01, MinCalibratedAlpha},
		{2, 1, 1, MaxCalibratedAlpha},
	} {
		if got := AlphaFor(c.scale, c.text, c.vec); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("AlphaFor(%v, %v, %v) = %v, want %v", c.scale, c.text, c.vec, got, c.want)
		}
	}
}

// The smallest store calibrated: exactly MinCalibrationChunks chunks, each
// of exactly minSpanWords words (the whole chunk is its pseudo-query).
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
	if cal.Chunks != MinCalibrationChunks || cal.Samples != MinCalibrationChunks || cal.MRRFullText < 0.9 {
		t.Errorf("%+v", cal)
	}
}

// The sample's seed defaults to 1, and another seed draws another sample.
func TestCalibrateSeed(t *testing.T) {
	ctx := context.Background()
	ix := openStore(t, t.TempDir(), noise{}, corpus(150, 13))
	defer ix.Close()
	run := func(o *CalibrateOptions) Calibration {
		t.Helper()
		c, err := Calibrate(ctx, ix, o)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	def, one, two := run(&CalibrateOptions{Samples: 60}), run(&CalibrateOptions{Samples: 60, Seed: 1}), run(&CalibrateOptions{Samples: 60, Seed: 2})
	if def.MRRVector != one.MRRVector || def.MRRFullText != one.MRRFullText {
		t.Errorf("default seed %+v, seed 1 %+v", def, one)
	}
	if two.MRRVector == one.MRRVector {
		t.Errorf("seeds 1 and 2 measured the same: %+v", two)
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
	if !errors.Is(err, index.ErrEmbedding) || !errors.Is(err, embed.ErrBadResponse) {
		t.Errorf("err = %v, want ErrEmbedding and ErrBadResponse", err)
	}
	if _, ok := StoredCalibration(context.Background(), ix); ok {
		t.Error("a failed calibration was recorded")
	}
}

// A stored calibration counts only with a weight within the calibrated
// range, bounds included, and the current version.
func TestStoredCalibrationBounds(t *testing.T) {
	ctx := context.Background()
	ix := openStore(t, t.TempDir(), noise{}, nil)
	defer ix.Close()
	for _, c := range []struct {
		version int
		alpha   float64
		ok      bool
	}{
		{calibrationVersion, MinCalibratedAlpha, true},
		{calibrationVersion, MaxCalibratedAlpha, true},
		{calibrationVersion, 0.2, true},
		{calibrationVersion, MinCalibratedAlpha - 1e-9, false},
		{calibrationVersion, MaxCalibratedAlpha + 1e-9, false},
		{calibrationVersion + 1, 0.2, false},
	} {
		b, err := json.Marshal(Calibration{Version: c.version, Alpha: c.alpha, Chunks: 80})
		if err != nil {
			t.Fatal(err)
		}
		if err := ix.SetSetting(ctx, CalibrationKey, string(b)); err != nil {
			t.Fatal(err)
		}
		got, ok := StoredCalibration(ctx, ix)
		if ok != c.ok || ok && got.Alpha != c.alpha {
			t.Errorf("version %d alpha %v: %+v %v, want ok %v", c.version, c.alpha, got, ok, c.ok)
		}
	}
	if err := ix.SetSetting(ctx, CalibrationKey, "{not json"); err != nil {
		t.Fatal(err)
	}
	if _, ok := StoredCalibration(ctx, ix); ok {
		t.Error("a malformed calibration counted")
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
	if cal, ok := StoredCalibration(ctx, ix); !ok || cal.Chunks != MinCalibrationChunks {
		t.Fatalf("a store of exactly %d chunks: %+v %v", MinCalibrationChunks, cal, ok)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), "calibrated the hybrid fusion weight") {
		t.Errorf("the calibrator's logger got %q", logged.String())
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

// A calibration is kept while the store's size moves by less than a
// quarter of the size it was measured at, and redone at exactly a quarter.
func TestCalibratorQuarter(t *testing.T) {
	ctx := context.Background()
	ix := openStore(t, t.TempDir(), hiddenLexical{embed.NewLexical(nil)}, corpus(60, 17))
	defer ix.Close()
	// A recorded calibration of these 60 chunks, recognisable by its MRR.
	b, err := json.Marshal(Calibration{Version: calibrationVersion, Chunks: 60, Samples: 60, MRRFullText: 1, MRRVector: 0.123, Alpha: 0.2})
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
	if cal, _ := StoredCalibration(ctx, ix); cal.MRRVector != 0.123 {
		t.Fatalf("recalibrated a store that has not changed: %+v", cal)
	}
	if _, err := ix.AddMany(ctx, corpus(15, 18)); err != nil {
		t.Fatal(err)
	}
	c.Changed(15) // exactly a quarter of 60, and what the check awaits
	calibratorWait(t, c)
	if cal, _ := StoredCalibration(ctx, ix); cal.Chunks != 75 {
		t.Fatalf("not recalibrated after a quarter more: %+v", cal)
	}
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
