package search

import (
	"context"
	"errors"

	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/index/engine"
)

// Report says how a search was answered.
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
	// Reranked is how many results the reranker (Options.Reranker)
	// reordered; 0 when none is configured or it was skipped.
	Reranked int `json:"reranked,omitempty"`
	// RerankSkipped says why the reranker was skipped and the fused order
	// kept ("" when it was not): "reranker unavailable: " and what is wrong
	// with it, in words (RerankReason).
	RerankSkipped string `json:"rerankSkipped,omitempty"`
	// RerankErr is the error behind RerankSkipped, for logs; never sent
	// to clients.
	RerankErr error `json:"-"`
}

// DegradedEmbedder opens Report.Degraded when the embedder failed.
const DegradedEmbedder = "embedder unavailable"

// SearchReport is Search that also reports the mode it used, and what the
// rerank stage did (Options.Reranker: how many results it reordered, or
// why it was skipped). A hybrid or
// vector search whose embedder fails (an outage, an open circuit breaker,
// an answer of the wrong dimension: any error wrapping engine.ErrEmbedding)
// answers from BM25 alone, with BM25 run once: the hybrid search's own BM25
// candidates become the results. The caller's own cancellation is never
// taken for an outage.
func SearchReport(ctx context.Context, r Retriever, query string, opts *Options) ([]Result, Report, error) {
	o := opts.withDefaults()
	rr := newReranking(&o)
	res, degraded, err := search(ctx, r, query, opts, rr)
	rep := Report{Mode: o.Mode}
	if degraded != nil {
		rep = Report{Mode: FullText, Degraded: DegradedEmbedder + ": " + reason(degraded), Err: degraded}
	}
	if err == nil {
		rr.report(&rep)
	}
	return res, rep, err
}

// unavailable reports whether err is the embedder's, and not the caller
// giving up.
func unavailable(ctx context.Context, err error) bool {
	return err != nil && errors.Is(err, engine.ErrEmbedding) && ctx.Err() == nil
}

// reason says in words what an embedder failure means.
func reason(err error) string { return embed.Reason(err) }
