package search

import (
	"context"

	"github.com/ragmem/ragmem/embed"
)

// WeightSource says where the automatic vector weight of a hybrid search came
// from; the explanation's method names it, e.g. "relative(alpha=0.12,
// calibrated)".
type WeightSource string

const (
	// WeightLexical: the embedder declares that its vectors encode words
	// (embed.WordMatcher), so the vector ranking gets LexicalAlpha.
	WeightLexical WeightSource = "lexical"
	// WeightCalibrated: the weight the store measured for its embedder on
	// its own content (see Calibrate).
	WeightCalibrated WeightSource = "calibrated"
	// WeightDefault: neither is known (a semantic embedder on a store too
	// small or too new to be calibrated, or a retriever that cannot say),
	// so the vector ranking gets DefaultAlpha.
	WeightDefault WeightSource = "default"
)

// Automatic vector weights (Options.Alpha 0 or AlphaAuto).
const (
	// LexicalAlpha is the weight of an embedder whose vectors encode words
	// (the lexical default and randproj). Measured on SciFact train,
	// Cranfield and LoCoMo dev: such a ranking repeats BM25's less well,
	// and weights above about 0.2 cost nDCG@10 on SciFact.
	LexicalAlpha = 0.05
	// DefaultAlpha is the weight of an embedder nobody has measured on
	// this store yet: small enough that a weak model cannot make hybrid
	// search worse than BM25 alone on any collection measured.
	DefaultAlpha = 0.1
)

// embedderOf is implemented by retrievers that say which embedder they
// use, as *index.Index does.
type embedderOf interface {
	Embedder() embed.Embedder
}

// Weight returns the automatic vector weight for hybrid searches of r and
// where it came from: LexicalAlpha when r's embedder matches words, else the
// store's calibrated weight when r keeps a valid one (see Calibrate), else
// DefaultAlpha. It never fails: a calibration that cannot be read counts as
// none.
func Weight(ctx context.Context, r Retriever) (float64, WeightSource) {
	return weight(ctx, r, false, 0)
}

// weight is Weight, optionally ignoring what the embedder declares and with
// another calibration scale (scale <= 0: CalibrationScale).
func weight(ctx context.Context, r Retriever, calibrated bool, scale float64) (float64, WeightSource) {
	var emb embed.Embedder
	if e, ok := r.(embedderOf); ok {
		emb = e.Embedder()
	}
	if embed.MatchesWords(emb) && !calibrated {
		return LexicalAlpha, WeightLexical
	}
	if c, ok := StoredCalibration(ctx, r); ok {
		if scale > 0 {
			return AlphaFor(scale, c.MRRFullText, c.MRRVector), WeightCalibrated
		}
		return c.Alpha, WeightCalibrated
	}
	return DefaultAlpha, WeightDefault
}
