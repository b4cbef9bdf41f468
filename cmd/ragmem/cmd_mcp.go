package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/internal/mcpserver"
	"github.com/ragmem/ragmem/internal/memory"
	"github.com/ragmem/ragmem/internal/memory/memmcp"
	"github.com/ragmem/ragmem/internal/owner"
	"github.com/ragmem/ragmem/rag"
)

// newMCPServer builds the MCP server over eng. Commands serving MCP (stdio
// here, streamable HTTP in `serve --mcp`) all build it here, so a tool set
// registered below is served everywhere: add more tools with
// mcp.AddTool(srv.MCP(), ...). With mem, the agent-memory tools remember and
// recall_memories are served too, and extract_memory with llm.
func newMCPServer(eng *rag.Engine, readOnly bool, mem *memory.Store, llm *rag.LLM) *mcpserver.Server {
	return buildMCPServer(eng, readOnly, mem, llm, slog.Default())
}

// buildMCPServer is newMCPServer logging to log.
func buildMCPServer(eng *rag.Engine, readOnly bool, mem *memory.Store, llm *rag.LLM, log *slog.Logger) *mcpserver.Server {
	srv := mcpserver.New(eng, &mcpserver.Options{ReadOnly: readOnly, Logger: log})
	if mem != nil {
		memmcp.Register(srv.MCP(), mem, &memmcp.Options{ReadOnly: readOnly, LLM: llm, Logger: log})
	}
	return srv
}

func newMCPCmd(g *globals) *cobra.Command {
	var readOnly bool
	var grace time.Duration
	mf := &memoryFlags{}
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the memory to an agent over the Model Context Protocol (stdio)",
		Long: "Serve the memory over MCP on stdin/stdout until the client disconnects. MCP clients (Claude Desktop,\n" +
			"IDEs, agent frameworks) start it as a subprocess; see docs/mcp.md for the configuration snippet.\n\n" +
			toolsMarker + "\n" +
			"The agent memories are those of --memories (default $RAGMEM_MEMORIES, else <data dir>/memories).\n\n" +
			"The memory is shared: ragmem mcp forwards the session to the process that owns the data directory\n" +
			"(ragmem serve, or a background owner it starts when there is none, which exits after --owner-grace\n" +
			"without clients; its log is owner.log in the data directory). Any number of MCP clients, ragmem\n" +
			"serve and the CLI use the same memory at the same time; see ragmem status.\n\n" +
			"--namespace NAME (or $RAGMEM_NAMESPACE) fixes the namespace of the session at launch: every tool\n" +
			"call reads and writes that namespace's store and memories, and no tool argument can name another\n" +
			"(an agent cannot reach past the namespace it was started in). Start one ragmem mcp per namespace.\n" +
			"Logs go to stderr.",
		Example: "  ragmem mcp\n  ragmem --dir ~/notes-memory mcp --read-only",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			memories := ""
			// A namespace's memories are its own (memoriesDir refuses
			// --memories with --namespace).
			if mf.dir != "" || (os.Getenv("RAGMEM_MEMORIES") != "" && g.namespace == "") {
				d, err := g.memoriesDir(mf.dir)
				if err != nil {
					return err
				}
				if memories, err = filepath.Abs(d); err != nil {
					return err
				}
			}
			if owner.Supported() {
				return runMCPBridge(cmd.Context(), g, readOnly, memories, grace)
			}
			// No owner sockets on this platform: serve in this process.
			return g.withIndexedMemories(cmd.Context(), mf, func(eng *rag.Engine, mem *memory.Store) error {
				err := newMCPServer(eng, readOnly, mem, g.chatLLM()).Run(cmd.Context(), &mcpserver.StdioTransport{})
				if cmd.Context().Err() != nil {
					return nil // interrupted: a normal way to stop
				}
				return err
			})
		},
	}
	withToolsHelp(cmd)
	cmd.Flags().BoolVar(&readOnly, "read-only", false, "offer only the tools that read the memory")
	cmd.Flags().StringVar(&mf.dir, "memories", "", "agent-memory directory (default $RAGMEM_MEMORIES, else <data dir>/memories)")
	cmd.Flags().DurationVar(&grace, "owner-grace", defaultOwnerGrace, "how long a background owner this command starts stays without clients before it exits")
	return cmd
}
