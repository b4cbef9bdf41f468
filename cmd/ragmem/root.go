package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/embed"
	"github.com/ragmem/ragmem/rag"
)

// globals are the persistent flags shared by every command.
type globals struct {
	dir      string
	embedder string
	baseURL  string
	apiKey   string
	verbose  bool
	store    backendFlags
	stdout   io.Writer
	stderr   io.Writer
	stdin    io.Reader
}

func newRootCmd() *cobra.Command {
	g := &globals{stdout: os.Stdout, stderr: os.Stderr, stdin: os.Stdin}
	root := &cobra.Command{
		Use:           "ragmem",
		Short:         "RAG vector memory with hybrid search for agents and browser extensions",
		Long:          "ragmem indexes documents, pages and memories into a local vector + BM25 store and builds\n<knowledge_context> messages for language-model agents.",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(cmd *cobra.Command, args []string) {
			g.stdout, g.stderr, g.stdin = cmd.OutOrStdout(), cmd.ErrOrStderr(), cmd.InOrStdin()
			level := slog.LevelWarn
			if g.verbose {
				level = slog.LevelDebug
			}
			slog.SetDefault(slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: level})))
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&g.dir, "dir", "", "data directory (default $RAGMEM_DIR, else the user data directory)")
	pf.StringVar(&g.embedder, "embedder", envOr("RAGMEM_EMBEDDER", "lexical"), "embedder: lexical (offline default), randproj[:dim=N] (dense test embedder), model2vec:DIR_OR_OWNER/NAME or openai:MODEL (env RAGMEM_EMBEDDER)")
	pf.StringVar(&g.baseURL, "base-url", "", "base URL of an OpenAI-compatible API for openai:MODEL (default $OPENAI_BASE_URL, else OpenAI)")
	pf.StringVar(&g.apiKey, "api-key", "", "API key for openai:MODEL (default $OPENAI_API_KEY)")
	pf.BoolVarP(&g.verbose, "verbose", "v", false, "log debug information to stderr")
	addBackendFlags(pf, &g.store)
	root.AddCommand(
		newIndexCmd(g), newSearchCmd(g), newContextCmd(g), newPrefsCmd(g),
		newRmCmd(g), newStatsCmd(g), newSourcesCmd(g), newDemoCmd(g),
		newBenchCmd(g),
	)
	root.AddCommand(newMCPCmd(g), newServeCmd(g), newTokenCmd(g), newMemoryCmd(g), newCheckCmd(g), newMigrateCmd(g), newEvalCmd(g), newModelCmd(g))
	return root
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// dataDir resolves the data directory.
func (g *globals) dataDir() (string, error) {
	if g.dir != "" {
		return g.dir, nil
	}
	if d := os.Getenv("RAGMEM_DIR"); d != "" {
		return d, nil
	}
	return defaultDataDir()
}

func defaultDataDir() (string, error) {
	if x := os.Getenv("XDG_DATA_HOME"); x != "" && runtime.GOOS != "windows" && runtime.GOOS != "darwin" {
		return filepath.Join(x, "ragmem"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no data directory: set --dir or $RAGMEM_DIR (%v)", err)
	}
	switch runtime.GOOS {
	case "darwin":
		return filepath.Join(home, "Library", "Application Support", "ragmem"), nil
	case "windows":
		if a := os.Getenv("LocalAppData"); a != "" {
			return filepath.Join(a, "ragmem"), nil
		}
	}
	return filepath.Join(home, ".local", "share", "ragmem"), nil
}

func (g *globals) newEmbedder() (embed.Embedder, error) {
	if g.baseURL != "" {
		os.Setenv("OPENAI_BASE_URL", g.baseURL)
	}
	if g.apiKey != "" {
		os.Setenv("OPENAI_API_KEY", g.apiKey)
	}
	return embed.Parse(g.embedder)
}

// open opens the engine in the data directory.
func (g *globals) open(ctx context.Context) (*rag.Engine, error) {
	dir, err := g.dataDir()
	if err != nil {
		return nil, err
	}
	emb, err := g.newEmbedder()
	if err != nil {
		return nil, err
	}
	be, err := g.store.open(ctx)
	if err != nil {
		return nil, err
	}
	return rag.Open(ctx, dir, &rag.Options{Embedder: emb, Backend: be, Logger: slog.Default()})
}

// withEngine opens the engine, runs fn and closes the engine, reporting a
// close error only when fn succeeded.
func (g *globals) withEngine(ctx context.Context, fn func(*rag.Engine) error) (err error) {
	eng, err := g.open(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := eng.Close(); err == nil {
			err = cerr
		}
	}()
	return fn(eng)
}
