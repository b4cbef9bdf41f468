package rag

import (
	"context"
	"fmt"

	"github.com/ragmem/ragmem/internal/rerank"
	"github.com/ragmem/ragmem/search"
)

// options turns the configuration into the client's options.
func (c RerankConfig) options() rerank.Options {
	return rerank.Options{URL: c.URL, API: c.API, Model: c.Model, APIKey: c.APIKey, Timeout: c.Timeout}
}

// check reports a configuration that cannot make a client (nil when c
// names no reranker).
func (c RerankConfig) check() error {
	if c.URL == "" {
		return nil
	}
	_, err := rerank.New(c.options())
	return err
}

// reranker returns the engine's client for c (nil when c names none),
// made once per distinct configuration so that its circuit breaker lasts
// across searches. A configuration that cannot make a client gives a
// reranker that fails, so that searches say why they were not reranked.
func (e *Engine) reranker(c RerankConfig) search.Reranker {
	if c.URL == "" {
		return nil
	}
	if r, ok := e.rerankers.Load(c); ok {
		return r.(search.Reranker)
	}
	var r search.Reranker
	cl, err := rerank.New(c.options())
	if err != nil {
		r = badReranker{err}
	} else {
		r = cl
	}
	got, _ := e.rerankers.LoadOrStore(c, r)
	return got.(search.Reranker)
}

// badReranker is a reranker whose configuration is invalid.
type badReranker struct{ err error }

func (b badReranker) Rerank(context.Context, string, []string) ([]float64, error) {
	return nil, misconfigured(b)
}

// misconfigured is badReranker's error.
type misconfigured struct{ err error }

func (m misconfigured) Error() string { return m.err.Error() }
func (m misconfigured) Unwrap() error { return m.err }

// Reason is what search.RerankReason says.
func (m misconfigured) Reason() string { return fmt.Sprintf("it is misconfigured (%v)", m.err) }
