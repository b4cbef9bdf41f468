package search

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"strings"
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
