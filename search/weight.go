package search

import (
	"context"

	"github.com/ragmem/ragmem/index"
)

// WeightSource says where the automatic vector weight of a hybrid search came
// from; the explanation's method names it, e.g. "relative(alpha=0.12,
// calibrated)".
type WeightSource string

const (
	// WeightCalibrated: the weight the store measured for its embedder on
	// its own content of the document type searched (see Calibrate).
	WeightCalibrated WeightSource = "calibrated"
	// WeightDefault: none was measured (a document type with fewer than
	// MinCalibrationChunks chunks, a store not calibrated yet, or a
	// retriever that keeps no settings), so the vector ranking gets
	// DefaultAlpha.
	WeightDefault WeightSource = "default"
)

// DefaultAlpha is the vector weight of a store that has not measured one,
// and the least a calibration gives: small, so that a weak embedder cannot
// make hybrid search much worse than BM25 alone, and not nothing, so that
// hybrid search is hybrid.
const DefaultAlpha = 0.1

// calibrationOf returns the store's calibration of the first of docTypes
// (nil: knowledge) that has one.
func calibrationOf(ctx context.Context, r Retriever, docTypes []string) (TypeCalibration, bool) {
	if len(docTypes) == 0 {
		docTypes = []string{index.DocKnowledge}
	}
	if c, ok := StoredCalibration(ctx, r); ok {
		for _, dt := range docTypes {
			if tc, ok := c.Types[dt]; ok {
				return tc, true
			}
		}
	}
	return TypeCalibration{}, false
}
