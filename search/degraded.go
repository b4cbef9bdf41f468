package search

import (
	"context"
	"errors"

	"github.com/ragmem/ragmem/embed"
	"github.com/ragmem/ragmem/index"
)

// Report says how a search was answered. It is a plain value.
type Report struct {
	// Mode is the retrieval actually used: the mode asked for, or
	// FullText when the embedder was unavailable.
	Mode Mode `json:"mode"`
	// Degraded says why Mode is not the one asked for ("" when it is):
	// "embedder unavailable: " and what is wrong with it, in words (never
	// the error itself, which may name servers; callers log that).
	Degraded string `json:"degraded,omitempty"`
	// Err is the embedder's error behind Degraded, for logs: it may name
	// servers and files, so it is never sent to clients.
	Err error `json:"-"`
}

// DegradedEmbedder opens Report.Degraded when the embedder failed.
const DegradedEmbedder = "embedder unavailable"

// SearchReport is Search that also reports the mode it used. A hybrid or
// vector search whose embedder fails (an outage, an open circuit breaker,
// an answer of the wrong dimension: any error wrapping index.ErrEmbedding)
// answers from BM25 alone, with BM25 run once: the hybrid search's own BM25
// candidates become the results. The caller's own cancellation is never
// taken for an outage.
func SearchReport(ctx context.Context, r Retriever, query string, opts *Options) ([]Result, Report, error) {
	o := opts.withDefaults()
	res, degraded, err := search(ctx, r, query, opts)
	rep := Report{Mode: o.Mode}
	if degraded != nil {
		rep = Report{Mode: FullText, Degraded: DegradedEmbedder + ": " + reason(degraded), Err: degraded}
	}
	return res, rep, err
}

// unavailable reports whether err is the embedder's, and not the caller
// giving up.
func unavailable(ctx context.Context, err error) bool {
	return err != nil && errors.Is(err, index.ErrEmbedding) && ctx.Err() == nil
}

// reason says in words what an embedder failure means.
func reason(err error) string { return embed.Reason(err) }
