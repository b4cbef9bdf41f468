// Package driver defines the storage backend interface behind index.Index.
//
// A backend stores chunk records (text, metadata and vector) and answers
// BM25 and vector queries over them. The local backend (index/local: its own
// snapshots and journal, index/vecindex and bleve) is the default; other backends (for example a Weaviate cluster)
// implement the same interface and must pass the conformance suite in
// index/indextest.
//
// Backends are used by one index.Index at a time but must be safe for
// concurrent use by many goroutines: searches may run while Apply runs.
package driver

import (
	"context"
	"errors"
	"time"
)

// Document types stored in an index.
const (
	DocKnowledge  = "knowledge"  // pages, files and text the user indexed
	DocPreference = "preference" // user-profile statements (prefs package)
	DocMemory     = "memory"     // agent memories
)

// Attribute keys (Record.Attrs) of memories written from a conversation.
// Search ranks with them (search.Options.SpeakerWeight and TimeWeight), and
// the local backend searches AttrContext at a lower weight
// (local.FullTextOptions.ContextWeight). A backend stores them like any
// other attribute.
const (
	// AttrSpeaker is who said or wrote the memory, e.g. "Caroline".
	AttrSpeaker = "speaker"
	// AttrOccurredAt is when what the memory records happened (a
	// conversation turn: when it was said), RFC 3339 in UTC. CreatedAt is
	// when it was stored.
	AttrOccurredAt = "occurredAt"
	// AttrContext is text around a memory that helps find it without
	// being part of it (a conversation turn's neighbours): searched, never
	// shown as the memory's text. Only memories (DocMemory) are searched by
	// it.
	AttrContext = "context"
	// AttrRole is the speaker's part in a chat: "user" or "assistant" (a
	// transcript's message roles). A question in the first person ("what
	// did I decide?") names the user's turns, as one that names a speaker
	// names theirs; without the attribute, a speaker called "user" is the
	// user.
	AttrRole = "role"
	// AttrSession names the conversation session a turn belongs to (any
	// text the writer chooses, the same for every turn of the session), and
	// AttrTurn is the turn's position in it, a decimal number from 0. With
	// both, search can return a turn's round (a user's turn with the
	// replies to it) or its whole session (search.Options.Unit).
	AttrSession = "session"
	AttrTurn    = "turn"
)

// Errors shared by every backend. Backends wrap them with %w.
var (
	ErrClosed   = errors.New("index: store is closed")
	ErrNotFound = errors.New("index: not found")
	ErrInvalid  = errors.New("index: invalid record")
	ErrCorrupt  = errors.New("index: corrupt data")
)

// Record is one stored chunk.
type Record struct {
	ID          string            `json:"id"`                    // unique within the store
	SourceURL   string            `json:"url"`                   // the source this chunk came from; required
	Title       string            `json:"title"`                 // title of the source
	HeadingPath []string          `json:"headingPath,omitempty"` // headings enclosing the chunk, outermost first
	Content     string            `json:"content"`               // chunk text
	DocType     string            `json:"docType"`               // DocKnowledge, DocPreference or DocMemory
	Position    int               `json:"position"`              // 0-based position of the chunk in its source
	Start       int               `json:"start"`                 // byte offset where the chunk starts in its source
	End         int               `json:"end"`                   // byte offset where it ends
	Tokens      int               `json:"tokens"`                // token count of Content
	CreatedAt   time.Time         `json:"createdAt"`             // when the chunk was indexed
	ContentHash string            `json:"contentHash,omitempty"` // hash of the whole source content (same for all its chunks)
	Attrs       map[string]string `json:"attrs,omitempty"`       // extra metadata (e.g. preferenceType); nil when none
	Vector      []float32         `json:"vector,omitempty"`      // L2-normalised embedding; omitted in search hits
}

// Batch is one atomic mutation: every record of DeleteSources and every id in
// DeleteIDs is removed, then Put is stored (overwriting equal ids). A backend
// applies a Batch entirely or not at all, and it is durable once Apply returns nil.
type Batch struct {
	DeleteSources []string
	DeleteIDs     []string
	Put           []Record
}

// Empty reports whether the batch changes nothing.
func (b *Batch) Empty() bool {
	return b == nil || len(b.DeleteSources) == 0 && len(b.DeleteIDs) == 0 && len(b.Put) == 0
}

// Filter restricts searches and listings. The zero Filter matches everything.
// Its parts must all hold.
type Filter struct {
	DocTypes  []string          // any of these doc types; empty = any
	SourceURL string            // only this source; "" = any
	Attrs     map[string]string // every key must have exactly this value
	Where     *Expr             // a filter expression (see Expr); nil = any
}

// RecordLevel reports whether f has parts (attributes or an expression) that
// a backend can only check against whole records: the doc-type and source
// parts alone are what indexes are usually keyed by.
func (f *Filter) RecordLevel() bool {
	return f != nil && (len(f.Attrs) > 0 || f.Where != nil)
}

// Match reports whether r passes the filter.
func (f *Filter) Match(r *Record) bool {
	if f == nil {
		return true
	}
	if len(f.DocTypes) > 0 {
		ok := false
		for _, t := range f.DocTypes {
			if r.DocType == t {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if f.SourceURL != "" && r.SourceURL != f.SourceURL {
		return false
	}
	for k, v := range f.Attrs {
		if r.Attrs[k] != v {
			return false
		}
	}
	return f.Where.Match(r)
}

// Hit is one search result. Record.Vector is nil.
type Hit struct {
	Record Record  `json:"record"`
	Score  float64 `json:"score"` // BM25 score (full text) or cosine similarity (vector)
}

// SourceInfo summarises one source.
type SourceInfo struct {
	SourceURL   string    `json:"url"`
	Title       string    `json:"title"`
	DocType     string    `json:"docType"`
	ContentHash string    `json:"contentHash"`
	Chunks      int       `json:"chunks"`
	Tokens      int       `json:"tokens"`
	CreatedAt   time.Time `json:"createdAt"`
}

// Stats describes a store.
type Stats struct {
	Records   int       `json:"records"`           // chunks stored
	Sources   int       `json:"sources"`           // distinct sources
	SizeBytes int64     `json:"sizeBytes"`         // bytes on disk (or reported by the server)
	LastSync  time.Time `json:"lastSync,omitzero"` // when the last mutation became durable; zero if none since open
}

// Backend is a storage backend. See the package comment for concurrency.
type Backend interface {
	// Apply performs b atomically and durably.
	Apply(ctx context.Context, b *Batch) error
	// Get returns the records with the given ids that exist, in the order asked.
	Get(ctx context.Context, ids []string) ([]Record, error)
	// Source returns every record of a source ordered by Position; none is not an error.
	Source(ctx context.Context, sourceURL string) ([]Record, error)
	// Sources lists sources matching f ordered by SourceURL, with the total count before paging.
	Sources(ctx context.Context, f Filter, offset, limit int) ([]SourceInfo, int, error)
	// Records returns all records matching f (vectors included), ordered by SourceURL then Position.
	Records(ctx context.Context, f Filter) ([]Record, error)
	// SearchText runs a BM25 query and returns at most k hits in descending score.
	SearchText(ctx context.Context, query string, k int, f Filter) ([]Hit, error)
	// SearchVector returns at most k hits with the highest cosine similarity to vec, descending.
	SearchVector(ctx context.Context, vec []float32, k int, f Filter) ([]Hit, error)
	// Meta reads a store-level setting (such as the embedder identity).
	Meta(ctx context.Context, key string) (string, bool, error)
	// SetMeta writes a store-level setting durably.
	SetMeta(ctx context.Context, key, value string) error
	// Stats describes the store.
	Stats(ctx context.Context) (Stats, error)
	// Close releases the store. Further calls return ErrClosed.
	Close() error
}
