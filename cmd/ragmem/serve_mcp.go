package main

import (
	"net/http"
	"sync"
	"time"

	"github.com/ragmem/ragmem/memory"
	"github.com/ragmem/ragmem/rag"
	"github.com/ragmem/ragmem/server"
)

// mcpMount serves MCP over streamable HTTP at /mcp for `serve --mcp`. It is
// mounted with server.Handle, so it sits behind the same token, CORS, limits
// and logs as /v1, and it follows the request's namespace: each namespace's
// engine gets an MCP endpoint of its own, so a token bound to one namespace
// reaches only that namespace's memory over MCP too.
type mcpMount struct {
	srv      *server.Server
	readOnly bool
	llm      *rag.LLM                                                // extract_memory's chat model (nil: none)
	memories func(*http.Request, *rag.Engine) (*memory.Store, error) // the namespace's agent memories

	mu       sync.Mutex
	handlers map[*rag.Engine]http.Handler
	order    []*rag.Engine // oldest first, to bound the map
}

// maxMCPHandlers bounds the endpoints kept; a namespace store closed and
// reopened by the server gets a new engine, and the old endpoint is dropped
// once the bound is reached (its MCP sessions end; clients re-initialize).
const maxMCPHandlers = 64

func newMCPMount(srv *server.Server, readOnly bool, llm *rag.LLM, memories func(*http.Request, *rag.Engine) (*memory.Store, error)) *mcpMount {
	return &mcpMount{srv: srv, readOnly: readOnly, llm: llm, memories: memories, handlers: map[*rag.Engine]http.Handler{}}
}

func (m *mcpMount) handler(eng *rag.Engine, mem *memory.Store) http.Handler {
	m.mu.Lock()
	defer m.mu.Unlock()
	if h, ok := m.handlers[eng]; ok {
		return h
	}
	h := newMCPServer(eng, m.readOnly, mem, m.llm).HTTPHandler(nil)
	m.handlers[eng] = h
	m.order = append(m.order, eng)
	if len(m.order) > maxMCPHandlers {
		delete(m.handlers, m.order[0])
		m.order = m.order[1:]
	}
	return h
}

func (m *mcpMount) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	m.handler(eng, mem).ServeHTTP(w, r)
}
