package main

import (
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/mcpserver"
	"github.com/ragmem/ragmem/rag"
)

// newMCPServer builds the MCP server over eng. Commands serving MCP (stdio
// here, streamable HTTP in `serve --mcp`) all build it here, so a tool set
// registered below is served everywhere: add more tools with
// mcp.AddTool(srv.MCP(), ...).
func newMCPServer(eng *rag.Engine, readOnly bool) *mcpserver.Server {
	return mcpserver.New(eng, &mcpserver.Options{ReadOnly: readOnly, Logger: slog.Default()})
}

func newMCPCmd(g *globals) *cobra.Command {
	var readOnly bool
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the memory to an agent over the Model Context Protocol (stdio)",
		Long: "Serve the memory over MCP on stdin/stdout until the client disconnects. MCP clients (Claude Desktop,\n" +
			"IDEs, agent frameworks) start it as a subprocess; see the README for the configuration snippet.\n\n" +
			"Tools: search_memory, get_context, list_sources, list_preferences, and unless --read-only also\n" +
			"index_text, forget_source, add_preference and remove_preference.\n\n" +
			"The store is locked while the server runs: other ragmem commands on the same --dir fail with\n" +
			"\"store is locked\" until it stops.\n" +
			"Logs go to stderr.",
		Example: "  ragmem mcp\n  ragmem --dir ~/notes-memory mcp --read-only",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withEngine(cmd.Context(), func(eng *rag.Engine) error {
				err := newMCPServer(eng, readOnly).Run(cmd.Context(), &mcp.StdioTransport{})
				if cmd.Context().Err() != nil {
					return nil // interrupted: a normal way to stop
				}
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&readOnly, "read-only", false, "offer only the tools that read the memory")
	return cmd
}
