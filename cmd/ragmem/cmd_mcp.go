package main

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/mcpbridge"
	"github.com/ragmem/ragmem/cmd/ragmem/internal/ownerd"
	"github.com/ragmem/ragmem/internal/mcpserver"
	"github.com/ragmem/ragmem/internal/memory"
	"github.com/ragmem/ragmem/internal/owner"
	"github.com/ragmem/ragmem/rag"
)

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
			if mf.dir != "" || (os.Getenv("RAGMEM_MEMORIES") != "" && g.Namespace == "") {
				d, err := g.MemoriesDir(mf.dir)
				if err != nil {
					return err
				}
				if memories, err = filepath.Abs(d); err != nil {
					return err
				}
			}
			if owner.Supported() {
				return mcpbridge.Run(cmd.Context(), g.Settings, readOnly, memories, grace)
			}
			// No owner sockets on this platform: serve in this process.
			return g.withIndexedMemories(cmd.Context(), mf, func(eng *rag.Engine, mem *memory.Store) error {
				err := ownerd.NewMCPServer(eng, readOnly, mem, g.ChatLLM()).Run(cmd.Context(), &mcpserver.StdioTransport{})
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
	cmd.Flags().DurationVar(&grace, "owner-grace", ownerd.DefaultGrace, "how long a background owner this command starts stays without clients before it exits")
	return cmd
}

// withToolsHelp makes cmd's help list the MCP tools, filling toolsMarker
// in its Long text when the help is shown (and only then: building the
// list costs a few milliseconds).
func withToolsHelp(cmd *cobra.Command) {
	cmd.SetHelpFunc(func(c *cobra.Command, args []string) {
		c.Long = strings.Replace(c.Long, toolsMarker, ownerd.ToolsHelp(c.Context()), 1)
		c.SetHelpFunc(nil)
		c.Root().HelpFunc()(c, args)
	})
}

// toolsMarker stands in the mcp command's Long text for the tool list.
const toolsMarker = "{{tools}}"
