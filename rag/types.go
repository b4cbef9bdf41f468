package rag

import (
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/internal/index/local"
)

// The engine's data model is package index (index.Document, index.Filter,
// index.SourceInfo, index.Job, ...): rag's methods take and return those
// types under their one name. What is declared here are the engine's
// errors and defaults, whose home is behind the door (internal/index/engine,
// internal/index/local): rag is their one importable name.

// DefaultMaxChunksPerDocument is the default of Options.MaxChunksPerDocument.
const DefaultMaxChunksPerDocument = engine.DefaultMaxChunksPerDocument

// Errors of the store, for errors.Is. Invalid attributes and filter
// expressions are index.ErrBadAttrs and index.ErrBadFilter.
var (
	ErrClosed           = engine.ErrClosed           // the engine is closed
	ErrLocked           = local.ErrLocked            // another process holds the store
	ErrQueueLocked      = engine.ErrQueueLocked      // another process holds the store's indexing queue
	ErrEmptyDocument    = engine.ErrEmptyDocument    // a document with no text to index
	ErrBinaryContent    = engine.ErrBinaryContent    // a document that is binary data
	ErrTooManyChunks    = engine.ErrTooManyChunks    // a document past Options.MaxChunksPerDocument
	ErrQuotaExceeded    = engine.ErrQuotaExceeded    // the store's chunk or byte quota is full
	ErrNoJob            = engine.ErrNoJob            // no such dead letter (RetryJob, DropJob)
	ErrEmbedderMismatch = engine.ErrEmbedderMismatch // the embedder is not the one the store was built with
	ErrReserved         = engine.ErrReserved         // what belongs to the memory or preference store (see reserved.go)
)
