package rag

import (
	"context"
	"strings"
	"time"

	"github.com/ragmem/ragmem/index"

	"github.com/ragmem/ragmem/internal/jsonbody"

	"github.com/ragmem/ragmem/prefs"
)

// Memory is the contract of ragmem's memory: every operation a surface
// offers, context first. Its request and response types are the wire
// types: the CLI's --json, the HTTP API (/v1) and the MCP tools send the
// same JSON, with the same camelCase names. A request's zero fields mean
// "the engine's default" (Config, DefaultConfig); a failure is an error
// (an *Error carries the API's code, and errors.Is matches this package's
// sentinels: ErrNotFound, ErrBadRequest, ErrReserved, ErrNoJob, ...).
//
// Two implementations give the same results: *Engine, in process, and
// *Client, over the /v1 HTTP API of a `ragmem serve` or of the owner of a
// data directory (its Unix socket). The conformance test in this package
// runs one table of cases through both. Implementations are safe for
// concurrent use.
type Memory interface {
	// Index indexes documents synchronously, in one atomic write (POST
	// /v1/documents): when it returns, each result is final and durable.
	// A document's own failure is its result's Error and Code.
	Index(ctx context.Context, req DocumentsRequest) (*DocumentsJSON, error)
	// IndexPage queues a page (HTML or text) for background indexing (POST
	// /v1/pages); a page whose content is already stored is "unchanged".
	IndexPage(ctx context.Context, req PageRequest) (*PageAccepted, error)
	// Job reports a background indexing job (GET /v1/jobs/{id});
	// ErrNotFound when there is none.
	Job(ctx context.Context, id string) (*JobJSON, error)
	// Jobs lists the background jobs, most recent first (GET /v1/jobs).
	Jobs(ctx context.Context, req JobsRequest) (*JobsJSON, error)
	// RetryJob queues a dead job again (POST /v1/jobs/{id}/retry);
	// ErrNoJob when there is no dead job with that id.
	RetryJob(ctx context.Context, id string) (*JobJSON, error)
	// DropJob deletes a dead job (DELETE /v1/jobs/{id}); ErrNoJob when
	// there is no dead job with that id.
	DropJob(ctx context.Context, id string) error

	// Search retrieves passages, best first, with how each score was
	// reached (POST /v1/search).
	Search(ctx context.Context, req SearchRequest) (*SearchJSON, error)
	// BuildContext builds the <knowledge_context> message for a model call
	// within the model's window (POST /v1/context).
	BuildContext(ctx context.Context, req ContextRequest) (*ContextJSON, error)

	// Sources lists the stored sources, ordered by URL (GET /v1/sources).
	Sources(ctx context.Context, req SourcesRequest) (*SourcesJSON, error)
	// Page returns a stored page's chunks, in order (GET /v1/pages);
	// ErrNotFound when there is no such page.
	Page(ctx context.Context, url string) (*PageJSON, error)
	// DeleteSources removes every knowledge source a filter matches, or
	// lists them with DryRun (POST /v1/sources:delete); memories and
	// preferences are kept and counted. A filter that matches every
	// knowledge source needs All (ErrMatchesAll).
	DeleteSources(ctx context.Context, req DeleteSourcesRequest) (*DeleteSourcesJSON, error)
	// SetSourceAttrs sets and removes a source's attributes without
	// embedding it again (PATCH /v1/sources); ErrNotFound when there is no
	// such source, ErrReserved for a memory's or a preference's.
	SetSourceAttrs(ctx context.Context, url string, req SetAttrsRequest) (*SetAttrsJSON, error)
	// ForgetPage removes a page and cancels its queued jobs (DELETE
	// /v1/pages); ErrNotFound when there is no such page, ErrReserved for
	// a memory's or a preference's address.
	ForgetPage(ctx context.Context, url string) (*ForgetJSON, error)
	// Remove deletes every chunk of a source of the knowledge (DELETE
	// /v1/sources) and says how many there were: 0 when there is no such
	// source.
	Remove(ctx context.Context, url string) (int, error)

	// Preferences lists the user's profile (GET /v1/preferences).
	Preferences(ctx context.Context) ([]prefs.Preference, error)
	// AddPreference adds a preference (POST /v1/preferences).
	AddPreference(ctx context.Context, req PreferenceRequest) (*prefs.Preference, error)
	// RemovePreference removes one preference (DELETE
	// /v1/preferences?id=); ErrNotFound when there is none with that id.
	RemovePreference(ctx context.Context, id string) error
	// ClearPreferences removes every preference and says how many there
	// were (DELETE /v1/preferences?all=true).
	ClearPreferences(ctx context.Context) (int, error)
	// DetectPreferences finds preference statements in a message and, with
	// Save, stores them (POST /v1/preferences/detect).
	DetectPreferences(ctx context.Context, req DetectRequest) (*DetectJSON, error)

	// SetURLRules sets and records the rules by which the store
	// canonicalises source URLs (PUT /v1/url-rules).
	SetURLRules(ctx context.Context, r index.URLRules) error
	// Stats describes the store (GET /v1/stats).
	Stats(ctx context.Context) (index.Stats, error)

	// Close ends the use of the memory: an engine finishes its queued
	// work and closes the store, a client closes its idle connections.
	Close() error
}

// Checked once, here: both implementations hold to the contract.
var (
	_ Memory = (*Engine)(nil)
	_ Memory = (*Client)(nil)
)

// DocumentRequest is one document of Index: indexed as given (no page
// extraction), the way `ragmem index` indexes a file.
type DocumentRequest struct {
	URL     string            `json:"url" jsonschema:"the source's name: a URL, a file:// URL or any stable identifier"`
	Title   string            `json:"title,omitempty"`
	Content string            `json:"content"`
	Format  string            `json:"format,omitempty" jsonschema:"text (default), markdown or html"`
	Type    string            `json:"type,omitempty" jsonschema:"knowledge (the default and the only one: memories and preferences have their own operations)"`
	Attrs   map[string]string `json:"attrs,omitempty"`
	// Extracted says that HTML content is already a document's main
	// content (a PDF, DOCX or EPUB file's text, as `ragmem index` reads
	// it): it is chunked as it is, not reduced by page extraction.
	Extracted bool `json:"extracted,omitempty"`
}

// DocumentsRequest is Index's request (the body of POST /v1/documents).
type DocumentsRequest struct {
	Documents []DocumentRequest `json:"documents"`
}

// DocumentResult says what indexing one document did.
type DocumentResult struct {
	URL         string `json:"url"`
	ContentHash string `json:"contentHash,omitempty"`
	Chunks      int    `json:"chunks"`              // chunks now stored for the source
	Removed     int    `json:"removed,omitempty"`   // chunks of an earlier version replaced
	Unchanged   bool   `json:"unchanged,omitempty"` // same content already indexed: nothing written
	Superseded  bool   `json:"superseded,omitempty"`
	Error       string `json:"error,omitempty"` // this document could not be indexed
	// Code is the error's code, as an error response would carry it:
	// reserved (the URL holds a memory or a preference), too_many_chunks,
	// no_content, quota_exceeded or internal.
	Code string `json:"code,omitempty"`
}

// Err is the document's own failure as an error (nil when it was
// indexed): an *Error with its code. Binary content and an empty document
// share the code no_content; the message tells them apart, and Err
// matches ErrBinaryContent for the one.
func (r *DocumentResult) Err() error {
	if r.Error == "" && r.Code == "" {
		return nil
	}
	e := &Error{Code: r.Code, Message: r.Error}
	if r.Code == jsonbody.CodeNoContent && strings.Contains(r.Error, ErrBinaryContent.Error()) {
		e.Err = ErrBinaryContent
	}
	return e
}

// NewDocumentRequest is d as Index takes it.
func NewDocumentRequest(d *index.Document) DocumentRequest {
	return DocumentRequest{URL: d.SourceURL, Title: d.Title, Content: d.Content, Format: d.Format.String(), Type: d.DocType, Attrs: d.Attrs, Extracted: d.Extracted}
}

// DocumentsJSON is Index's answer.
type DocumentsJSON struct {
	Results []DocumentResult `json:"results"`
}

// PageRequest is a page to remember in the background (IndexPage). Exactly
// one of HTML and Text is given.
type PageRequest struct {
	URL    string `json:"url"`
	Title  string `json:"title,omitempty"`
	HTML   string `json:"html,omitempty"`
	Text   string `json:"text,omitempty"`
	Format string `json:"format,omitempty"` // for Text: "text" (default) or "markdown"
	// Attrs are attributes stored on every chunk of the page, to filter on
	// (CheckAttrs says which keys and values are accepted).
	Attrs map[string]string `json:"attrs,omitempty"`
}

// PageAccepted is IndexPage's answer.
type PageAccepted struct {
	Status    string   `json:"status"` // "queued" or "unchanged"
	URL       string   `json:"url"`
	JobID     string   `json:"jobId,omitempty"`
	Job       *JobJSON `json:"job,omitempty"`
	Chunks    int      `json:"chunks,omitempty"`    // for unchanged pages: chunks stored
	Title     string   `json:"title"`               // the title indexed
	Extractor string   `json:"extractor,omitempty"` // readability or fallback, for HTML
	TextBytes int      `json:"textBytes"`           // size of the text kept
}

// JobJSON reports a background indexing job.
type JobJSON struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	State     string    `json:"state"` // queued, running, done, failed (refused when queued), dead (given up on: retry or drop it), cancelled (its page was deleted first)
	Chunks    int       `json:"chunks,omitempty"`
	Unchanged bool      `json:"unchanged,omitempty"`
	Error     string    `json:"error,omitempty"`
	Attempts  int       `json:"attempts,omitempty"`
	Queued    time.Time `json:"queued"`
	Finished  time.Time `json:"finished,omitzero"`
	RetryAt   time.Time `json:"retryAt,omitzero"`
}

// newJobJSON is j for the wire.
func newJobJSON(j *index.Job) JobJSON {
	return JobJSON{ID: j.ID, URL: j.SourceURL, State: string(j.State), Chunks: j.Chunks, Unchanged: j.Unchanged, Error: j.Error,
		Attempts: j.Attempts, Queued: j.Queued, Finished: j.Finished, RetryAt: j.RetryAt}
}

// JobsRequest is Jobs' request.
type JobsRequest struct {
	// States are the states listed (all when empty): queued, running,
	// done, failed, dead, cancelled.
	States []string `json:"states,omitempty"`
	// Limit is the most jobs listed; default 100, at most 10,000.
	Limit int `json:"limit,omitempty"`
}

// JobsJSON is Jobs' answer.
type JobsJSON struct {
	Jobs  []JobJSON        `json:"jobs"`
	Queue index.QueueStats `json:"queue"`
}

// SearchRequest is Search's request (the body of POST /v1/search). What it
// leaves zero the engine decides (Config).
type SearchRequest struct {
	Query     string         `json:"query"`
	TopK      int            `json:"topK,omitempty"`
	Mode      string         `json:"mode,omitempty"`      // hybrid (default), vector, fulltext
	Fusion    string         `json:"fusion,omitempty"`    // relative (default), rrf
	Threshold *float64       `json:"threshold,omitempty"` // similarity threshold; 0 or negative: none
	Filters   *SearchFilters `json:"filters,omitempty"`
	// Filter is a filter expression (ParseFilter).
	Filter string `json:"filter,omitempty"`
	// MaxPerSource caps the results of one source (default 3; 0: no cap).
	MaxPerSource *int `json:"maxPerSource,omitempty"`
	// GroupBySource orders the results source by source.
	GroupBySource bool `json:"groupBySource,omitempty"`
	// KeepDuplicates keeps identical and near-identical chunks of other
	// sources as results of their own (default: collapsed into alsoAt).
	KeepDuplicates bool `json:"keepDuplicates,omitempty"`
	// Unit is what a result of a conversation (memories that say their
	// session and turn) is: "turn" (the default), "round" (a user's turn
	// with the replies to it) or "session". A round or session scores as
	// its best turn, its content is its turns in order, and the result's
	// unit names every turn with its own score.
	Unit string `json:"unit,omitempty" jsonschema:"turn (default), round (a user's turn with its replies) or session"`
}

// SearchFilters restrict a search.
type SearchFilters struct {
	URL      string            `json:"url,omitempty"`      // only this source
	DocTypes []string          `json:"docTypes,omitempty"` // default ["knowledge"]
	Attrs    map[string]string `json:"attrs,omitempty"`    // exact attribute values
}

// ContextRequest is BuildContext's request (the body of POST
// /v1/context): the model call, and the engine's configuration it
// overrides. What it leaves zero the engine decides: the model window
// (ContextLimitForModel of Model, or of the engine's Config.Model), the
// response reserve (1024), top k, mode and knowledge budget (Config).
type ContextRequest struct {
	Query              string `json:"query"`
	Model              string `json:"model,omitempty"`
	ModelContextLimit  int    `json:"modelContextLimit,omitempty"`
	SystemPrompt       string `json:"systemPrompt,omitempty"`
	SystemPromptTokens int    `json:"systemPromptTokens,omitempty"`
	ResponseReserve    int    `json:"responseReserve,omitempty"`
	// Filter restricts the knowledge to chunks matching a filter
	// expression (ParseFilter).
	Filter          string `json:"filter,omitempty"`
	Mode            string `json:"mode,omitempty"`            // search mode; default the engine's (hybrid)
	TopK            int    `json:"topK,omitempty"`            // chunks retrieved; default the engine's (5)
	KnowledgeBudget int    `json:"knowledgeBudget,omitempty"` // base knowledge budget in tokens; default the engine's (2000)
}

// SourcesRequest is Sources' request (GET /v1/sources).
type SourcesRequest struct {
	// Types are the document types listed; default knowledge.
	Types []string `json:"types,omitempty"`
	// Filter is a filter expression (ParseFilter).
	Filter string `json:"filter,omitempty"`
	Offset int    `json:"offset,omitempty"`
	// Limit is the most sources listed; default 50, at most 1,000.
	Limit int `json:"limit,omitempty"`
}

// PageJSON is a stored page: its chunks, in order.
type PageJSON struct {
	URL    string      `json:"url"`
	Title  string      `json:"title"`
	Chunks []ChunkJSON `json:"chunks"`
}

// ForgetJSON is ForgetPage's answer.
type ForgetJSON struct {
	URL     string `json:"url"`
	Removed int    `json:"removed" jsonschema:"chunks removed"`
	// CancelledJobs are the page's background indexing jobs that were
	// cancelled: queued before the call, they never bring it back.
	CancelledJobs []string `json:"cancelledJobs" jsonschema:"ids of the page's queued indexing jobs that were cancelled"`
}

// PreferenceRequest is AddPreference's request.
type PreferenceRequest struct {
	Type    string `json:"type" jsonschema:"expertise (who the user is), style (how to answer), domain (what they work on) or custom."`
	Content string `json:"content" jsonschema:"The preference as a short statement, e.g. 'User is a data engineer who knows Python well'."`
}

// DetectRequest is DetectPreferences' request.
type DetectRequest struct {
	Message string `json:"message"`
	Save    bool   `json:"save,omitempty"` // store the detected preferences
}

// DetectJSON is DetectPreferences' answer.
type DetectJSON struct {
	Detected bool              `json:"detected"`
	Intent   *IntentJSON       `json:"intent,omitempty"` // the first statement
	Saved    *prefs.Preference `json:"saved,omitempty"`  // the first statement, saved
	// Intents are every statement in the message, in order (Intent is the
	// first), and SavedAll each one saved (with Save).
	Intents  []IntentJSON       `json:"intents,omitempty"`
	SavedAll []prefs.Preference `json:"savedAll,omitempty"`
}

// IntentJSON is a detected preference statement.
type IntentJSON struct {
	Type    string `json:"type"`
	Content string `json:"content"` // what would be stored
	Match   string `json:"match"`   // the words that triggered detection
}
