package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/rag"
)

// globals are the persistent flags shared by every command, and the
// settings resolved from them, the environment and the config file.
type globals struct {
	dir        string
	embedder   string
	baseURL    string
	apiKey     string
	configPath string
	verbose    bool
	namespace  string // --namespace, else $RAGMEM_NAMESPACE (see namespace.go)
	maxChunk   int
	store      backendFlags
	rerank     rerankFlags
	stdout     io.Writer
	stderr     io.Writer
	stdin      io.Reader

	cfg     *config           // the loaded config file (found false: none)
	sources map[string]string // config key -> where its value came from, for `config show`

	memoriesFlag string // the agent-memory directory a memory command asked for, served by a cli owner

	// newStoreEmbedder is the embedder a store that records none yet takes
	// when this process opens it (import: the embedder of the file's
	// vectors); nil: the flags' or the default.
	newStoreEmbedder *index.EmbedderRecord

	embMu     sync.Mutex
	embedders map[string]embed.Embedder // built embedders by spec and secrets, shared by a server's stores
}

func newRootCmd() *cobra.Command {
	g := &globals{stdout: os.Stdout, stderr: os.Stderr, stdin: os.Stdin}
	root := &cobra.Command{
		Use:           "ragmem",
		Short:         "RAG vector memory with hybrid search for agents and browser extensions",
		Long:          "ragmem indexes documents, pages and memories into a local vector + BM25 store and builds\n<knowledge_context> messages for language-model agents.",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			g.stdout, g.stderr, g.stdin = cmd.OutOrStdout(), cmd.ErrOrStderr(), cmd.InOrStdin()
			if f := cmd.Flags().Lookup("shutdown-timeout"); f != nil {
				// serve drains what is in flight for as long as its
				// --shutdown-timeout says (see interrupt.go).
				if d, err := time.ParseDuration(f.Value.String()); err == nil {
					setInterruptGrace(d + time.Second)
				}
			}
			level := slog.LevelWarn
			if g.verbose {
				level = slog.LevelDebug
			}
			slog.SetDefault(slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: level})))
			cfg, err := loadConfig(g.configPath, g.stderr)
			if err != nil {
				if cmd.Annotations[annotConfigOptional] != "" {
					// config init creates the file --config names: its
					// absence is no news.
					if cmd.Annotations[annotConfigOptional] != configCreates || !errors.Is(err, fs.ErrNotExist) {
						fmt.Fprintf(g.stderr, "ragmem: %v\n", err)
					}
					return nil
				}
				return err
			}
			g.cfg = cfg
			if err := g.applySettings(cmd); err != nil {
				return err
			}
			if err := g.resolveNamespace(cmd); err != nil {
				return err
			}
			return g.checkDataDir(cmd)
		},
	}
	addGlobalFlags(root.PersistentFlags(), g)
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

// addGlobalFlags defines the persistent flags of the root command on pf.
func addGlobalFlags(pf *pflag.FlagSet, g *globals) {
	pf.StringVar(&g.configPath, "config", "", "config file (default $RAGMEM_CONFIG, else $XDG_CONFIG_HOME/ragmem/config.yaml or ~/.config/ragmem/config.yaml)")
	pf.StringVar(&g.dir, "dir", "", "data directory (default $RAGMEM_DIR, else the config file's dir, else the user data directory)")
	pf.StringVar(&g.embedder, "embedder", "", "embedder: lexical (offline default), randproj[:dim=N] (dense test embedder), model2vec:DIR_OR_OWNER/NAME or openai:MODEL[,k=v...] "+
		"(default $RAGMEM_EMBEDDER, else the config file's, else the one the store records, else lexical)")
	pf.StringVar(&g.baseURL, "base-url", "", "base URL of an OpenAI-compatible API for openai:MODEL (default $OPENAI_BASE_URL, else the config file's, else the one the store records, else OpenAI)")
	pf.StringVar(&g.apiKey, "api-key", "", "API key for openai:MODEL (default $OPENAI_API_KEY, or the variable the config file's openai.api_key_env names; else its openai.api_key)")
	pf.BoolVarP(&g.verbose, "verbose", "v", false, "log debug information to stderr")
	pf.IntVar(&g.maxChunk, "max-chunks-per-doc", rag.DefaultMaxChunksPerDocument, "most chunks one document may make; larger ones are refused (0: no limit)")
	addBackendFlags(pf, &g.store)
	addRerankFlags(pf, &g.rerank)
	addNamespaceFlag(pf, g)
}

// dataDir resolves the data directory: --dir, else $RAGMEM_DIR, else the
// config file's, else the user data directory.
func (g *globals) dataDir() (string, error) {
	if g.dir != "" {
		return g.dir, nil
	}
	if d := os.Getenv("RAGMEM_DIR"); d != "" {
		return d, nil
	}
	if v, ok := g.cfg.get("dir"); ok && v.scalar != "" {
		return v.scalar, nil
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

// newEmbedder builds the embedder the flags, the environment and the config
// file name, for commands without a store (bench, eval).
func (g *globals) newEmbedder() (embed.Embedder, error) {
	return g.embedderFor(context.Background(), nil)
}

// open opens the engine in the data directory. The embedder is the one the
// flags, the environment or the config file name, else the one the store
// records, else the lexical default.
func (g *globals) open(ctx context.Context) (*rag.Engine, error) {
	return g.openWith(ctx, g.newStoreEmbedder)
}

// openWith is open where a store that records no embedder yet is taken to
// record fallback (import: the embedder of the file's vectors).
func (g *globals) openWith(ctx context.Context, fallback *index.EmbedderRecord) (*rag.Engine, error) {
	dir, err := g.dataDir()
	if err != nil {
		return nil, err
	}
	return g.openDir(ctx, dir, fallback, nil, slog.Default(), 0, 0)
}

// openDir opens the engine of the data directory dir with the backend the
// flags select, taking a store that records no embedder to record fallback
// (nil: the flags' or the default), sharing queryCache (nil: the store's
// own), logging to log, with the quotas of chunks and bytes (0: the
// defaults; negative: none).
func (g *globals) openDir(ctx context.Context, dir string, fallback *index.EmbedderRecord, queryCache *embed.QueryCache, log *slog.Logger, quotaChunks int, quotaBytes int64) (*rag.Engine, error) {
	be, err := g.store.open(ctx)
	if err != nil {
		return nil, err
	}
	var choice *embedderChoice
	eng, err := rag.Open(ctx, dir, &rag.Options{Backend: be, Logger: log, QueryCache: queryCache, MaxChunksPerDocument: g.maxChunksOption(), Config: g.ragConfig(),
		QuotaChunks: max(quotaChunks, 0), QuotaBytes: max(quotaBytes, 0),
		EmbedderFor: func(ctx context.Context, rec *index.EmbedderRecord) (embed.Embedder, error) {
			if rec == nil {
				rec = fallback
			}
			c, err := g.resolveEmbedder(rec)
			if err != nil {
				return nil, err
			}
			choice = c
			return g.buildEmbedder(c)
		}})
	if err != nil && choice != nil && errors.Is(err, rag.ErrEmbedderMismatch) {
		return nil, choice.explainMismatch(err)
	}
	return eng, err
}

// maxChunksOption turns --max-chunks-per-doc into the option: 0 on the
// command line means no limit.
func (g *globals) maxChunksOption() int {
	if g.maxChunk <= 0 {
		return -1
	}
	return g.maxChunk
}

// withEngine opens the engine of the command's namespace, runs fn and
// closes the engine, reporting a close error only when fn succeeded.
func (g *globals) withEngine(ctx context.Context, fn func(*rag.Engine) error) (err error) {
	dir, err := g.dataDir()
	if err != nil {
		return err
	}
	eng, err := g.openDir(ctx, g.storeDir(dir), g.newStoreEmbedder, nil, slog.Default(), 0, 0)
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
