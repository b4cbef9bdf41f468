package ownerd

import (
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/ragmem/ragmem/internal/mcpserver"
	"github.com/ragmem/ragmem/internal/memory"
	"github.com/ragmem/ragmem/internal/memory/memmcp"
	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
)

// mcpMount serves MCP over streamable HTTP at /mcp: on the owner's socket
// always (for `ragmem mcp`, which bridges its stdio to it; read-only when
// the request says readOnly=1), and on TCP for `serve --mcp` (read-only
// with --mcp-read-only). It is mounted with server.Handle, so it sits
// behind the same token, CORS, limits and logs as /v1, and it follows the
// request's namespace: each namespace's engine gets an MCP endpoint of its
// own, so a token bound to one namespace reaches only that namespace's
// memory over MCP too.
type mcpMount struct {
	srv      *server.Server
	tcp      bool                                                    // served on TCP listeners too
	readOnly bool                                                    // on TCP listeners
	llm      *rag.LLM                                                // extract_memory's chat model (nil: none)
	memories func(*http.Request, *rag.Engine) (*memory.Store, error) // the namespace's agent memories

	mu       sync.Mutex
	handlers map[mcpKey]http.Handler
	order    []mcpKey // oldest first, to bound the map
}

type mcpKey struct {
	eng      *rag.Engine
	readOnly bool
}

// maxMCPHandlers bounds the endpoints kept; a namespace store closed and
// reopened by the server gets a new engine, and the old endpoint is dropped
// once the bound is reached (its MCP sessions end; clients re-initialize).
const maxMCPHandlers = 64

func newMCPMount(srv *server.Server, tcp, readOnly bool, llm *rag.LLM, memories func(*http.Request, *rag.Engine) (*memory.Store, error)) *mcpMount {
	return &mcpMount{srv: srv, tcp: tcp, readOnly: readOnly, llm: llm, memories: memories, handlers: map[mcpKey]http.Handler{}}
}

func (m *mcpMount) handler(eng *rag.Engine, readOnly bool, mem *memory.Store) http.Handler {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := mcpKey{eng, readOnly}
	if h, ok := m.handlers[k]; ok {
		return h
	}
	h := NewMCPServer(eng, readOnly, mem, m.llm).HTTPHandler(nil)
	m.handlers[k] = h
	m.order = append(m.order, k)
	if len(m.order) > maxMCPHandlers {
		delete(m.handlers, m.order[0])
		m.order = m.order[1:]
	}
	return h
}

func (m *mcpMount) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	readOnly := m.readOnly
	if server.IsLocal(r) {
		readOnly = r.URL.Query().Get("readOnly") == "1"
	} else if !m.tcp {
		server.WriteError(w, r, http.StatusNotFound, server.CodeNotFound, "MCP is not served over HTTP here; start ragmem serve with --mcp")
		return
	}
	eng, err := m.srv.Engine(r) // held until this request returns
	if err != nil {
		m.srv.Fail(w, r, err)
		return
	}
	mem, err := m.memories(r, eng)
	if err != nil {
		m.srv.Fail(w, r, err)
		return
	}
	if r.Method == http.MethodGet {
		// The server-to-client event stream lives as long as the session.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	}
	m.handler(eng, readOnly, mem).ServeHTTP(w, r)
}

// NewMCPServer builds the MCP server over eng. Commands serving MCP (stdio
// here, streamable HTTP in `serve --mcp`) all build it here, so a tool set
// registered below is served everywhere: add more tools with
// mcp.AddTool(srv.MCP(), ...). With mem, the agent-memory tools remember and
// recall_memories are served too, and extract_memory with llm.
func NewMCPServer(eng *rag.Engine, readOnly bool, mem *memory.Store, llm *rag.LLM) *mcpserver.Server {
	return BuildMCPServer(eng, readOnly, mem, llm, slog.Default())
}

// BuildMCPServer is NewMCPServer logging to log.
func BuildMCPServer(eng *rag.Engine, readOnly bool, mem *memory.Store, llm *rag.LLM, log *slog.Logger) *mcpserver.Server {
	srv := mcpserver.New(eng, &mcpserver.Options{ReadOnly: readOnly, Logger: log})
	if mem != nil {
		memmcp.Register(srv.MCP(), mem, &memmcp.Options{ReadOnly: readOnly, LLM: llm, Logger: log})
	}
	return srv
}
