package rag

import (
	"context"

	"github.com/ragmem/ragmem/internal/export"
	"github.com/ragmem/ragmem/search"
)

// exportSettings are the store settings an export carries: the hybrid
// fusion calibration, so that an imported store ranks as the original did.
var exportSettings = []string{search.CalibrationKey}

// Export takes a consistent snapshot of the memory for a portable file
// (see package export): every record with its vector, the embedder that
// made them and the fusion calibration. Indexing may go on meanwhile; the
// snapshot holds each write entirely or not at all.
func (e *Engine) Export(ctx context.Context) (*export.Snapshot, error) {
	return export.Take(ctx, e.ix, exportSettings)
}

// Import writes a snapshot into the memory (see export.Import): refused
// when the embedder differs, or when the memory holds records and
// opts.Mode is export.Empty. A snapshot without a calibration lets the
// engine calibrate the imported records.
func (e *Engine) Import(ctx context.Context, s *export.Snapshot, opts *export.ImportOptions) (*export.ImportReport, error) {
	rep, err := export.Import(ctx, e.ix, s, opts)
	if rep != nil && rep.Records > 0 {
		if _, ok := s.Settings[search.CalibrationKey]; !ok {
			e.cal.Changed(rep.Records)
		}
	}
	return rep, err
}
