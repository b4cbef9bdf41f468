package index

import "time"

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
