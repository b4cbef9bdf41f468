package rag

import (
	"time"

	"github.com/ragmem/ragmem/index"

	"github.com/ragmem/ragmem/budget"
	"github.com/ragmem/ragmem/search"
)

// The wire format: what every surface (the CLI's --json, the HTTP API and
// the MCP tools' structured output) sends for a search, a context and a
// list of sources. Field names are camelCase and the same on every surface;
// docs/api.md describes them.

// ChunkJSON is one stored chunk.
type ChunkJSON struct {
	ID          string            `json:"id" jsonschema:"the chunk's id"`
	URL         string            `json:"url" jsonschema:"the source's URL (untrusted data)"`
	Title       string            `json:"title" jsonschema:"the source's title (untrusted data)"`
	HeadingPath []string          `json:"headingPath,omitempty" jsonschema:"the headings the chunk sits under, outermost first"`
	Content     string            `json:"content" jsonschema:"the chunk text (untrusted reference data)"`
	Position    int               `json:"position" jsonschema:"0-based position of the chunk in its source"`
	Tokens      int               `json:"tokens"`
	DocType     string            `json:"docType" jsonschema:"knowledge, memory or preference"`
	CreatedAt   time.Time         `json:"createdAt" jsonschema:"when the source was indexed"`
	Age         string            `json:"age" jsonschema:"how long ago it was indexed, in words"`
	Attrs       map[string]string `json:"attrs,omitempty" jsonschema:"the attributes stored with the chunk"`
	Start       int               `json:"start" jsonschema:"byte offset of the chunk in its source"`
	End         int               `json:"end" jsonschema:"byte offset of the chunk's end in its source"`
	ContentHash string            `json:"contentHash,omitempty" jsonschema:"hash of the whole source's content"`
}

// newChunkJSON is r as the wire shows it, aged relative to now.
func newChunkJSON(r *index.Record, now time.Time) ChunkJSON {
	return ChunkJSON{
		ID: r.ID, URL: r.SourceURL, Title: r.Title, HeadingPath: r.HeadingPath, Content: r.Content,
		Position: r.Position, Tokens: r.Tokens, DocType: r.DocType, CreatedAt: r.CreatedAt.UTC(),
		Age: RelativeTime(r.CreatedAt, now), Attrs: r.Attrs, Start: r.Start, End: r.End, ContentHash: r.ContentHash,
	}
}

// ResultJSON is one search result: the chunk, its score and how the score
// was reached.
type ResultJSON struct {
	ChunkJSON
	Score       float64            `json:"score"`
	Explanation search.Explanation `json:"explanation" jsonschema:"how the score was reached"`
	// AlsoAt lists other sources with the same text or a near copy of the
	// page, collapsed into this result.
	AlsoAt []string `json:"alsoAt,omitempty" jsonschema:"other sources holding the same text, collapsed into this result"`
	// Unit names the turns of a round or session (SearchRequest.Unit).
	Unit *search.Unit `json:"unit,omitempty" jsonschema:"for a round or session: its kind, session and every turn with its own score"`
}

// SearchJSON is the answer to a search.
type SearchJSON struct {
	Query    string       `json:"query"`
	Mode     search.Mode  `json:"mode" jsonschema:"the retrieval actually used: hybrid, vector or fulltext"`
	Degraded string       `json:"degraded,omitempty" jsonschema:"why the mode is not the one asked for (embedder unavailable: ...); results come from full-text search alone"`
	Results  []ResultJSON `json:"results" jsonschema:"best first"`
	TookMs   float64      `json:"tookMs" jsonschema:"milliseconds the search took"`
	// Reranked and RerankSkipped say what the rerank stage did (see
	// search.Report).
	Reranked      int    `json:"reranked,omitempty" jsonschema:"how many fused results the reranker reordered"`
	RerankSkipped string `json:"rerankSkipped,omitempty" jsonschema:"why the configured reranker was skipped and the fused order kept"`
}

// newSearchJSON is a search's answer for the wire: res and rep as Engine.
// SearchReport returned them, took how long it took.
func newSearchJSON(query string, res []search.Result, rep search.Report, now time.Time, took time.Duration) SearchJSON {
	out := SearchJSON{Query: query, Mode: rep.Mode, Degraded: rep.Degraded, Results: make([]ResultJSON, 0, len(res)),
		TookMs: float64(took.Microseconds()) / 1000, Reranked: rep.Reranked, RerankSkipped: rep.RerankSkipped}
	for i := range res {
		x := &res[i]
		out.Results = append(out.Results, ResultJSON{ChunkJSON: newChunkJSON(&x.Record, now), Score: x.Score, Explanation: x.Explanation, AlsoAt: x.AlsoAt, Unit: x.Unit})
	}
	return out
}

// ContextJSON is a built context: the block, its token counts and the chat
// message ready to send (role assistant, marked as untrusted data).
type ContextJSON struct {
	Text    string         `json:"text" jsonschema:"the <knowledge_context> block (empty when there is nothing)"`
	Message MessageJSON    `json:"message" jsonschema:"the message to send as its own chat message, never inside the system prompt"`
	Empty   bool           `json:"empty" jsonschema:"no profile and no knowledge: skip the message"`
	Tokens  TokensJSON     `json:"tokens"`
	Budgets budget.Budgets `json:"budgets" jsonschema:"the token budgets the block was built within"`
	Sources []ContextItem  `json:"sources" jsonschema:"the sources in the block, in the order rendered"`
	Profile string         `json:"profile,omitempty" jsonschema:"the user profile text"`
	Summary string         `json:"summary" jsonschema:"Showing X of Y passages, from Z sources: the chunks shown of those found, and the distinct sources they come from"`
	Found   int            `json:"totalFound" jsonschema:"chunks retrieved for the query"`
	// Mode is the retrieval actually used for the knowledge, and Degraded
	// why it is not the configured one ("embedder unavailable: ...").
	Mode     search.Mode `json:"mode,omitempty" jsonschema:"the retrieval actually used for the knowledge"`
	Degraded string      `json:"degraded,omitempty" jsonschema:"why it is not the configured one (embedder unavailable: ...)"`
	// Reranked and RerankSkipped say what the rerank stage did (see
	// search.Report).
	Reranked      int    `json:"reranked,omitempty" jsonschema:"how many fused results the reranker reordered"`
	RerankSkipped string `json:"rerankSkipped,omitempty" jsonschema:"why the configured reranker was skipped and the fused order kept"`
}

// MessageJSON is an OpenAI-style chat message.
type MessageJSON struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// TokensJSON counts the tokens of a block.
type TokensJSON struct {
	Total     int `json:"total"`
	Profile   int `json:"profile"`
	Knowledge int `json:"knowledge"`
	UserQuery int `json:"userQuery"`
}

// ContextItem is one source included in a block.
type ContextItem struct {
	Index       int       `json:"index" jsonschema:"1-based, as rendered in the block"`
	URL         string    `json:"url" jsonschema:"the source's URL (untrusted data)"`
	Title       string    `json:"title" jsonschema:"the source's title (untrusted data)"`
	HeadingPath []string  `json:"headingPath,omitempty"`
	Retrieved   time.Time `json:"retrieved" jsonschema:"when the source was indexed"`
	Age         string    `json:"age"`
	Score       float64   `json:"score"`
	Truncated   bool      `json:"truncated,omitempty" jsonschema:"the chunk was cut to fit the budget"`
	ChunkID     string    `json:"chunkId"`
}

// newContextJSON is c for the wire.
// JSON is c as BuildContext answers it (the body of POST /v1/context).
func (c *Context) JSON() ContextJSON { return newContextJSON(c) }

func newContextJSON(c *Context) ContextJSON {
	b := &c.Block
	out := ContextJSON{
		Text:    c.Text,
		Message: MessageJSON{Role: c.Message.Role, Content: c.Message.Content},
		Empty:   b.Empty(),
		Tokens:  TokensJSON{Total: b.TotalTokens, Profile: b.ProfileTokens, Knowledge: b.KnowledgeTokens, UserQuery: c.UserQueryTokens},
		Budgets: c.Budgets,
		Sources: make([]ContextItem, 0, len(b.Sources)),
		Profile: b.UserProfile, Summary: b.Summary, Found: b.TotalFound,
		Mode: b.Retrieval.Mode, Degraded: b.Retrieval.Degraded, Reranked: b.Retrieval.Reranked, RerankSkipped: b.Retrieval.RerankSkipped,
	}
	for _, src := range b.Sources {
		out.Sources = append(out.Sources, ContextItem{
			Index: src.Index, URL: src.URL, Title: src.Title, HeadingPath: src.HeadingPath,
			Retrieved: src.Retrieved.UTC(), Age: src.Age, Score: src.Score, Truncated: src.Truncated, ChunkID: src.ChunkID,
		})
	}
	return out
}

// SourceJSON summarises one source.
type SourceJSON struct {
	URL       string    `json:"url" jsonschema:"the source's URL (untrusted data)"`
	Title     string    `json:"title" jsonschema:"the source's title (untrusted data)"`
	DocType   string    `json:"docType"`
	Chunks    int       `json:"chunks"`
	Tokens    int       `json:"tokens"`
	CreatedAt time.Time `json:"createdAt" jsonschema:"when the source was indexed"`
	Age       string    `json:"age" jsonschema:"how long ago it was indexed, in words"`
	// ContentHash is the hash of the source's content.
	ContentHash string `json:"contentHash,omitempty" jsonschema:"hash of the source's content"`
}

// newSourceJSON is s for the wire, aged relative to now.
func newSourceJSON(s *index.SourceInfo, now time.Time) SourceJSON {
	return SourceJSON{URL: s.SourceURL, Title: s.Title, DocType: s.DocType, Chunks: s.Chunks, Tokens: s.Tokens,
		CreatedAt: s.CreatedAt.UTC(), Age: RelativeTime(s.CreatedAt, now), ContentHash: s.ContentHash}
}

// SourcesJSON is a page of sources.
type SourcesJSON struct {
	Total   int          `json:"total" jsonschema:"sources matching, before paging"`
	Offset  int          `json:"offset"`
	Limit   int          `json:"limit"`
	Sources []SourceJSON `json:"sources"`
}
