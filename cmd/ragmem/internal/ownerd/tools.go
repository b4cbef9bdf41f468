package ownerd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ragmem/ragmem/internal/memory"
	"github.com/ragmem/ragmem/rag"
)

// ToolSet is the tools `ragmem mcp` serves, as NewMCPServer registers
// them: those of a read-only session, those it adds without --read-only,
// and the one it adds with a chat model.
type ToolSet struct {
	ReadOnly, Writes, WithLLM []*mcp.Tool
}

// All returns every tool.
func (s ToolSet) All() []*mcp.Tool {
	return slices.Concat(s.ReadOnly, s.Writes, s.WithLLM)
}

// RegisteredMCPTools asks servers built as NewMCPServer builds them (over
// no store: registering tools reads none) for their tools, over an
// in-memory session, so that what the help and docs/mcp.md say is what is
// served.
func RegisteredMCPTools(ctx context.Context) (ToolSet, error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	list := func(readOnly bool, llm *rag.LLM) ([]*mcp.Tool, error) {
		srv := BuildMCPServer(nil, readOnly, new(memory.Store), llm, quiet).MCP()
		ct, st := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(ctx, st, nil)
		if err != nil {
			return nil, err
		}
		defer ss.Close()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "ragmem-help", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			return nil, err
		}
		defer cs.Close()
		var out []*mcp.Tool
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return nil, err
			}
			out = append(out, t)
		}
		return out, nil
	}
	ro, err := list(true, nil)
	if err != nil {
		return ToolSet{}, err
	}
	rw, err := list(false, nil)
	if err != nil {
		return ToolSet{}, err
	}
	full, err := list(false, &rag.LLM{Model: "help"})
	if err != nil {
		return ToolSet{}, err
	}
	minus := func(a, b []*mcp.Tool) []*mcp.Tool {
		return slices.DeleteFunc(slices.Clone(a), func(t *mcp.Tool) bool {
			return slices.ContainsFunc(b, func(u *mcp.Tool) bool { return u.Name == t.Name })
		})
	}
	return ToolSet{ReadOnly: ro, Writes: minus(rw, ro), WithLLM: minus(full, rw)}, nil
}

// toolNames joins the tools' names: "a, b and c".
func toolNames(ts []*mcp.Tool) string {
	ns := make([]string, len(ts))
	for i, t := range ts {
		ns[i] = t.Name
	}
	if len(ns) < 2 {
		return strings.Join(ns, "")
	}
	return strings.Join(ns[:len(ns)-1], ", ") + " and " + ns[len(ns)-1]
}

// ToolsHelp says which tools `ragmem mcp` serves, from the tools
// registered.
func ToolsHelp(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := RegisteredMCPTools(ctx)
	if err != nil {
		return fmt.Sprintf("Tools: (cannot be listed: %v)", err)
	}
	return wrap(fmt.Sprintf("Tools (%d): %s; unless --read-only also %s; and %s when $RAGMEM_LLM_MODEL names a chat model (on --base-url, with --api-key).",
		len(s.All()), toolNames(s.ReadOnly), toolNames(s.Writes), toolNames(s.WithLLM)), 100)
}

// wrap breaks s into lines of at most width bytes at spaces.
func wrap(s string, width int) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(s) {
		if i > 0 {
			if n+1+len(w) > width {
				b.WriteByte('\n')
				n = 0
			} else {
				b.WriteByte(' ')
				n++
			}
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}
