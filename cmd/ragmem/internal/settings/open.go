// Package settings is ragmem's configuration: the persistent flags of every
// command, the config file, the environment and what a store records,
// resolved into the data directory, the embedder, the backend, the reranker
// and the chat model, and the engine opened with them.
package settings

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	openai "github.com/sashabaranov/go-openai"
	"github.com/spf13/pflag"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/owner"
	"github.com/ragmem/ragmem/internal/server"
	"github.com/ragmem/ragmem/rag"
)

// Settings are the persistent flags shared by every command, and the
// settings resolved from them, the environment and the config file. Its
// embedder cache is safe for concurrent use (a server's stores share it);
// the rest is set before a command runs and read after.
type Settings struct {
	Dir        string
	Embedder   string
	BaseURL    string
	APIKey     string
	ConfigPath string
	Verbose    bool
	Namespace  string // --namespace, else $RAGMEM_NAMESPACE (see ResolveNamespace)
	MaxChunk   int
	Backend    BackendFlags
	Rerank     RerankFlags
	Stderr     io.Writer

	Schema  Schema            // the keys the config file may hold
	Cfg     *File             // the loaded config file (Found false: none)
	Sources map[string]string // config key -> where its value came from, for `config show`

	// NewStoreEmbedder is the embedder a store that records none yet takes
	// when this process opens it (import: the embedder of the file's
	// vectors); nil: the flags' or the default.
	NewStoreEmbedder *index.EmbedderRecord

	embMu     sync.Mutex
	embedders map[string]embed.Embedder // built embedders by spec and secrets, shared by a server's stores
}

// AddFlags defines the persistent flags of the root command on pf.
func (s *Settings) AddFlags(pf *pflag.FlagSet) {
	pf.StringVar(&s.ConfigPath, "config", "", "config file (default $RAGMEM_CONFIG, else $XDG_CONFIG_HOME/ragmem/config.yaml or ~/.config/ragmem/config.yaml)")
	pf.StringVar(&s.Dir, "dir", "", "data directory (default $RAGMEM_DIR, else the config file's dir, else the user data directory)")
	pf.StringVar(&s.Embedder, "embedder", "", "embedder: lexical (offline default), randproj[:dim=N] (dense test embedder), model2vec:DIR_OR_OWNER/NAME or openai:MODEL[,k=v...] "+
		"(default $RAGMEM_EMBEDDER, else the config file's, else the one the store records, else lexical)")
	pf.StringVar(&s.BaseURL, "base-url", "", "base URL of an OpenAI-compatible API for openai:MODEL (default $OPENAI_BASE_URL, else the config file's, else the one the store records, else OpenAI)")
	pf.StringVar(&s.APIKey, "api-key", "", "API key for openai:MODEL (default $OPENAI_API_KEY, or the variable the config file's openai.api_key_env names; else its openai.api_key)")
	pf.BoolVarP(&s.Verbose, "verbose", "v", false, "log debug information to stderr")
	pf.IntVar(&s.MaxChunk, "max-chunks-per-doc", rag.DefaultMaxChunksPerDocument, "most chunks one document may make; larger ones are refused (0: no limit)")
	addBackendFlags(pf, &s.Backend)
	addRerankFlags(pf, &s.Rerank)
	pf.StringVar(&s.Namespace, "namespace", "", "the namespace to use (default $RAGMEM_NAMESPACE, else the default namespace): its own store in <dir>/namespaces/NAME, the one HTTP's "+server.NamespaceHeader+" header names")
}

// DataDir resolves the data directory: --dir, else $RAGMEM_DIR, else the
// config file's, else the user data directory.
func (s *Settings) DataDir() (string, error) {
	if s.Dir != "" {
		return s.Dir, nil
	}
	if d := os.Getenv("RAGMEM_DIR"); d != "" {
		return d, nil
	}
	if v, ok := s.Cfg.Get("dir"); ok && v.Scalar != "" {
		return v.Scalar, nil
	}
	return DefaultDataDir()
}

// DefaultDataDir is the user data directory's ragmem folder.
func DefaultDataDir() (string, error) {
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

// NewEmbedder builds the embedder the flags, the environment and the config
// file name, for commands without a store (bench, eval).
func (s *Settings) NewEmbedder() (embed.Embedder, error) {
	return s.EmbedderFor(context.Background(), nil)
}

// Open opens the engine in the data directory. The embedder is the one the
// flags, the environment or the config file name, else the one the store
// records, else the lexical default.
func (s *Settings) Open(ctx context.Context) (*rag.Engine, error) {
	return s.OpenWith(ctx, s.NewStoreEmbedder)
}

// OpenWith is Open where a store that records no embedder yet is taken to
// record fallback (import: the embedder of the file's vectors).
func (s *Settings) OpenWith(ctx context.Context, fallback *index.EmbedderRecord) (*rag.Engine, error) {
	dir, err := s.DataDir()
	if err != nil {
		return nil, err
	}
	return s.OpenDir(ctx, dir, fallback, nil, slog.Default(), 0, 0)
}

// OpenDir opens the engine of the data directory dir with the backend the
// flags select, taking a store that records no embedder to record fallback
// (nil: the flags' or the default), sharing queryCache (nil: the store's
// own), logging to log, with the quotas of chunks and bytes (0: the
// defaults; negative: none).
func (s *Settings) OpenDir(ctx context.Context, dir string, fallback *index.EmbedderRecord, queryCache *embed.QueryCache, log *slog.Logger, quotaChunks int, quotaBytes int64) (*rag.Engine, error) {
	be, err := s.Backend.open(ctx)
	if err != nil {
		return nil, err
	}
	var choice *Choice
	eng, err := rag.Open(ctx, dir, &rag.Options{Backend: be, Logger: log, QueryCache: queryCache, MaxChunksPerDocument: s.MaxChunksOption(), Config: s.RagConfig(),
		QuotaChunks: max(quotaChunks, 0), QuotaBytes: max(quotaBytes, 0),
		EmbedderFor: func(ctx context.Context, rec *index.EmbedderRecord) (embed.Embedder, error) {
			if rec == nil {
				rec = fallback
			}
			c, err := s.ResolveEmbedder(rec)
			if err != nil {
				return nil, err
			}
			choice = c
			return s.BuildEmbedder(c)
		}})
	if err != nil && choice != nil && errors.Is(err, rag.ErrEmbedderMismatch) {
		return nil, choice.ExplainMismatch(err)
	}
	return eng, err
}

// MaxChunksOption turns --max-chunks-per-doc into the option: 0 on the
// command line means no limit.
func (s *Settings) MaxChunksOption() int {
	if s.MaxChunk <= 0 {
		return -1
	}
	return s.MaxChunk
}

// WithEngine opens the engine of the command's namespace, runs fn and
// closes the engine, reporting a close error only when fn succeeded.
func (s *Settings) WithEngine(ctx context.Context, fn func(*rag.Engine) error) (err error) {
	dir, err := s.DataDir()
	if err != nil {
		return err
	}
	eng, err := s.OpenDir(ctx, s.StoreDir(dir), s.NewStoreEmbedder, nil, slog.Default(), 0, 0)
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

// StoreDir is the directory of the command's namespace's store in the
// data directory dir.
func (s *Settings) StoreDir(dir string) string { return server.NamespaceDir(dir, s.Namespace) }

// ClientOptions are the options of a client of the data directory's
// owner: requests reach the command's namespace.
func (s *Settings) ClientOptions() *owner.ClientOptions {
	if s.Namespace == "" {
		return nil
	}
	return &owner.ClientOptions{Namespace: s.Namespace}
}

// LocalBackend reports whether the store is the data directory's own.
func (s *Settings) LocalBackend() bool {
	b := strings.ToLower(strings.TrimSpace(s.Backend.Name))
	return b == "" || b == "local"
}

// MemoriesDir resolves the memory directory: flag (--memories), else
// $RAGMEM_MEMORIES, else the config file's, else <data dir>/memories. A
// namespace's memories are always in its store's directory, as its owner
// serves them (<data dir>/namespaces/NAME/memories).
func (s *Settings) MemoriesDir(flag string) (string, error) {
	if s.Namespace != "" {
		if flag != "" {
			return "", fmt.Errorf("--memories: the memories of namespace %s are in its own directory; drop --memories or --namespace", s.Namespace)
		}
		dir, err := s.DataDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(s.StoreDir(dir), "memories"), nil
	}
	return s.DefaultMemoriesDir(flag)
}

// DefaultMemoriesDir is MemoriesDir for the default namespace.
func (s *Settings) DefaultMemoriesDir(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if d := os.Getenv("RAGMEM_MEMORIES"); d != "" {
		return d, nil
	}
	if v, ok := s.Cfg.Get("memories"); ok && v.Scalar != "" {
		return v.Scalar, nil
	}
	dir, err := s.DataDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "memories"), nil
}

// LLMModelEnv names the chat model of memory extraction: the default of
// `memory extract --model`, and what turns extraction on in `serve`
// (POST /v1/memories/extract) and `mcp` (the tool extract_memory).
const LLMModelEnv = "RAGMEM_LLM_MODEL"

// ChatLLM is the chat model $RAGMEM_LLM_MODEL names, on the chat client
// (OpenAIConfig); nil when it names none.
func (s *Settings) ChatLLM() *rag.LLM {
	model := strings.TrimSpace(os.Getenv(LLMModelEnv))
	if model == "" {
		return nil
	}
	return &rag.LLM{Client: openai.NewClientWithConfig(s.OpenAIConfig()), Model: model}
}

// OpenAIConfig is the chat client configuration: --base-url, else
// $OPENAI_BASE_URL, else the config file's openai.base_url, else OpenAI;
// the API key as for embedders.
func (s *Settings) OpenAIConfig() openai.ClientConfig {
	base, key := s.ChatConfig()
	cfg := openai.DefaultConfig(key)
	if base != "" {
		cfg.BaseURL = base
	}
	return cfg
}
