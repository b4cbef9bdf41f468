// Package agent is ragmem's agent integration:
// an agent loop over any OpenAI-compatible chat-completions API that gets its
// knowledge from any rag.Memory, and memory-enhanced web search with labelled
// citations.
//
// Run sends [system, knowledge context, user]: the system prompt carries one
// standing rule (rag.ReferenceRule) and never the knowledge; the knowledge
// context is its own untrusted-data message, sized to what the model's window
// leaves after the real token counts of the system prompt and the user
// message. It streams the answer to a callback, lets the model call tools
// (search_memory, remember_preference, and search_web_for_info when a web
// searcher is configured) for a bounded number of rounds, honours
// cancellation, and indexes the page the goal is about in the background.
// When the memory is unavailable it logs why, falls back (no knowledge context
// when the store is down; BM25 only when the embedder is down; the cached
// profile when preferences cannot be read) and still answers.
//
// EnhancedSearch retrieves related memory and web results (SearXNG or Brave,
// through the WebSearcher interface), asks the model for an answer whose
// numbered citations are checked against what was retrieved and labelled
// "Web Source" or "Knowledge Base" (Property 12), with a disclaimer when the
// model reports that the web and the memory disagree.
package agent

import (
	"log/slog"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/rag"
)

// DefaultSystemPrompt is Run's system prompt when Config.SystemPrompt is
// empty. rag.ReferenceRule is always appended to the system prompt.
const DefaultSystemPrompt = "You are a helpful assistant. Answer accurately and concisely. When you use reference data, cite its source URL or title."

// Defaults of Config.
const (
	DefaultResponseReserve  = 1024
	DefaultMaxToolRounds    = 4
	DefaultToolResultTokens = 1500
	DefaultMaxPageTokens    = 4000
)

// Page is the page (or document) the goal is about, e.g. the page a browser
// user is reading.
type Page struct {
	URL     string       // source URL; required for auto-indexing
	Title   string       // title; for HTML, taken from <title> when empty
	Content string       // the page's text, Markdown or HTML
	Format  chunk.Format // how to read Content; default chunk.Text
}

// Config configures Run. It is read, never modified, and may be shared by
// concurrent Runs when its callback is safe for concurrent use.
type Config struct {
	// LLM is the chat model. Required.
	LLM rag.LLM
	// Memory is the RAG memory: any rag.Memory, the engine in process
	// (*rag.Engine) or a client of one (*rag.Client). Nil means the memory
	// is unavailable (for example the store failed to open): Run answers
	// without knowledge context and without the memory tools. Leave it nil
	// then, not a nil *rag.Engine (an interface holding a nil pointer is not
	// nil).
	Memory rag.Memory
	// MemoryErr says why Memory is nil; it is logged. Default nil.
	MemoryErr error
	// SystemPrompt is the agent's instructions; rag.ReferenceRule is appended.
	// Default DefaultSystemPrompt.
	SystemPrompt string
	// ModelContextLimit is the model's context window in tokens. Default
	// rag.ContextLimitForModel(LLM.Model).
	ModelContextLimit int
	// ResponseReserve is the number of tokens kept free for the answer.
	// Default 1024.
	ResponseReserve int
	// Page is the page the goal is about. It is included in the user message
	// (cut to MaxPageTokens at a sentence boundary) and, unless
	// DisableAutoIndex, indexed in the background after the answer. Default
	// none.
	Page *Page
	// MaxPageTokens caps the page text in the user message. Default 4000.
	MaxPageTokens int
	// DisableAutoIndex stops Run from indexing Page. Default false: Page is
	// queued for background indexing through Memory.IndexPage.
	DisableAutoIndex bool
	// OnToken receives the answer as it streams, one content delta per call,
	// from Run's goroutine. Default nil: nothing is called.
	OnToken func(string)
	// OnToolCall is told of each tool call before it runs. Default nil.
	OnToolCall func(name, arguments string)
	// WebSearcher enables the search_web_for_info tool, which runs
	// EnhancedSearch. Default nil: no web tool.
	WebSearcher WebSearcher
	// MaxToolRounds bounds the rounds of tool calls; after that the model
	// must answer (tool_choice "none"). Default 4; negative disables tools.
	MaxToolRounds int
	// ToolResultTokens caps each tool result sent back to the model.
	// Default 1500.
	ToolResultTokens int
	// Logger receives degradations and tool errors. Default slog.Default().
	Logger *slog.Logger
}
