package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/interrupt"
	"github.com/ragmem/ragmem/cmd/ragmem/internal/ownerd"
	"github.com/ragmem/ragmem/cmd/ragmem/internal/settings"
	"github.com/ragmem/ragmem/rag"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// globals are the settings every command shares (the persistent flags,
// the config file, the environment: internal/settings) and the command's
// streams.
type globals struct {
	*settings.Settings
	stdout io.Writer
	stdin  io.Reader

	memoriesFlag string // the agent-memory directory a memory command asked for, served by a cli owner
}

// configSchema is the config file's keys: the global ones and the sections
// of serve's and mcp's flags.
var configSchema = settings.Schema{Sections: map[string]func() *pflag.FlagSet{
	"serve": func() *pflag.FlagSet { return newServeCmd(&globals{Settings: &settings.Settings{}}).Flags() },
	"mcp":   func() *pflag.FlagSet { return newMCPCmd(&globals{Settings: &settings.Settings{}}).Flags() },
}}

// newGlobals returns the globals of a command run on the process's streams.
func newGlobals() *globals {
	return &globals{Settings: &settings.Settings{Stderr: os.Stderr, Schema: configSchema}, stdout: os.Stdout, stdin: os.Stdin}
}

func newRootCmd() *cobra.Command {
	g := newGlobals()
	root := &cobra.Command{
		Use:           "ragmem",
		Short:         "RAG vector memory with hybrid search for agents and browser extensions",
		Long:          "ragmem indexes documents, pages and memories into a local vector + BM25 store and builds\n<knowledge_context> messages for language-model agents.",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			g.stdout, g.Stderr, g.stdin = cmd.OutOrStdout(), cmd.ErrOrStderr(), cmd.InOrStdin()
			if f := cmd.Flags().Lookup("shutdown-timeout"); f != nil {
				// serve drains what is in flight for as long as its
				// --shutdown-timeout says (see internal/interrupt).
				if d, err := time.ParseDuration(f.Value.String()); err == nil {
					interrupt.SetGrace(d + time.Second)
				}
			}
			level := slog.LevelWarn
			if g.Verbose {
				level = slog.LevelDebug
			}
			slog.SetDefault(slog.New(slog.NewTextHandler(g.Stderr, &slog.HandlerOptions{Level: level})))
			cfg, err := g.Schema.Load(g.ConfigPath, g.Stderr)
			if err != nil {
				if cmd.Annotations[settings.AnnotConfigOptional] != "" {
					// config init creates the file --config names: its
					// absence is no news.
					if cmd.Annotations[settings.AnnotConfigOptional] != settings.ConfigCreates || !errors.Is(err, fs.ErrNotExist) {
						fmt.Fprintf(g.Stderr, "ragmem: %v\n", err)
					}
					return nil
				}
				return err
			}
			g.Cfg = cfg
			if err := g.Apply(cmd); err != nil {
				return err
			}
			if err := g.ResolveNamespace(cmd); err != nil {
				return err
			}
			return g.CheckDataDir(cmd)
		},
	}
	g.AddFlags(root.PersistentFlags())
	root.AddCommand(
		newIndexCmd(g), newSearchCmd(g), newContextCmd(g), newPrefsCmd(g),
		newRmCmd(g), newStatsCmd(g), newSourcesCmd(g), newDemoCmd(g),
		newBenchCmd(g),
	)
	root.AddCommand(newMCPCmd(g), newServeCmd(g), newTokenCmd(g), newMemoryCmd(g), newCheckCmd(g), newJobsCmd(g), newMigrateCmd(g), newExportCmd(g), newImportCmd(g), newEvalCmd(g), newModelCmd(g))
	root.AddCommand(newConfigCmd(g), newStatusCmd(g), newNamespacesCmd(g), newAttrsCmd(g))
	addVersion(root)
	markNoNamespace(root)
	return root
}

// connect finds the owner of the data directory or becomes it.
func (g *globals) connect(ctx context.Context) (*ownerd.Store, error) {
	return ownerd.Connect(ctx, g.Settings, g.memoriesFlag)
}

// withStore runs fn on the memory: this process's own store, or the
// owner's API when another process owns it.
func (g *globals) withStore(ctx context.Context, fn func(rag.Memory) error) (err error) {
	s, err := g.connect(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := s.Close(); err == nil {
			err = cerr
		}
	}()
	return fn(s)
}

// onStore is a command's RunE that runs fn on the memory (see withStore)
// with the command's context and arguments.
func (g *globals) onStore(fn func(ctx context.Context, m rag.Memory, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		return g.withStore(ctx, func(m rag.Memory) error { return fn(ctx, m, args) })
	}
}
