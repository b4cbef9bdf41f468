package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/ownerd"
	"github.com/ragmem/ragmem/cmd/ragmem/internal/settings"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/internal/index/local"
	"github.com/ragmem/ragmem/internal/owner"
	"github.com/ragmem/ragmem/internal/wal"
)

// configTemplate is what `ragmem config init` writes: every key, commented out.
const configTemplate = `# ragmem configuration: the user's defaults.
# Each setting comes from the first of: a command-line flag, the environment,
# this file, the store (the embedder it was built with), the built-in default.
# Unknown keys are errors. Paths may start with ~/. Keep this file private
# (chmod 600) if it holds a key.

# dir: ~/.local/share/ragmem          # data directory (--dir, $RAGMEM_DIR)
# memories: ~/notes/memories           # agent memories (--memories, $RAGMEM_MEMORIES; default <dir>/memories)

# The embedder of new stores (--embedder, $RAGMEM_EMBEDDER). A store records the
# embedder it was built with and reopens with it; an embedder named here that
# differs from a store's is refused by that store.
# embedder: openai:nomic-embed-text

# openai:                              # OpenAI-compatible servers (OpenAI, Ollama, vLLM, LM Studio, llama.cpp)
#   base_url: http://localhost:11434/v1  # --base-url, $OPENAI_BASE_URL
#   api_key_env: OPENAI_API_KEY       # the environment variable that holds the key
#   api_key: sk-...                    # or the key itself (--api-key); never stored in a store
#   headers:                           # extra HTTP headers (a gateway's auth...); never stored in a store
#     X-Org: my-team
#   concurrency: 4                     # requests in flight
#   batch: 64                          # texts per request (at most 2048)
#   request_tokens: 300000             # estimated tokens per request
#   retries: 5                         # after 429, 5xx or network errors (0: none)
#   timeout: 60s                       # per request

# backend: local                       # local or weaviate (--backend, $RAGMEM_BACKEND)
# weaviate:
#   url: http://127.0.0.1:8080
#   namespace: default
#   consistency: QUORUM
#   api_key: ...                       # or $WEAVIATE_API_KEY

# serve:                               # ragmem serve: its flags, '-' written '_'
#   addr: 127.0.0.1:7437
#   allow_origin: [chrome-extension://abcdefghijklmnopabcdefghijklmnop]
#   rate_limit: 20
#   max_body: 10MiB
#   shutdown_timeout: 10s
#   mcp: true

# mcp:                                 # ragmem mcp
#   read_only: true
`

func newConfigCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show the effective settings and where each comes from; find or create the config file",
		Long: "Settings come from the first of: a command-line flag, the environment, the config file, the store\n" +
			"(the embedder it records), the built-in default. The config file is --config, else $RAGMEM_CONFIG,\n" +
			"else $XDG_CONFIG_HOME/ragmem/config.yaml, else ~/.config/ragmem/config.yaml.",
	}
	var asJSON bool
	show := &cobra.Command{
		Use:   "show",
		Short: "Print the effective settings, where each came from, secrets redacted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rows, err := g.effectiveSettings(cmd.Context(), cmd)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(g.stdout, map[string]any{"configFile": g.FileInfo(), "settings": rows})
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintf(tw, "config file\t%s\t%s\n", g.FileInfo()["path"], g.FileInfo()["status"])
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Key, r.Value, r.Source)
			}
			return tw.Flush()
		},
	}
	show.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	path := &cobra.Command{
		Use:         "path",
		Short:       "Print the path of the config file in use",
		Args:        cobra.NoArgs,
		Annotations: map[string]string{settings.AnnotConfigOptional: "1"},
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := g.configFilePath()
			if err != nil {
				return err
			}
			fmt.Fprintln(g.stdout, p)
			return nil
		},
	}
	var force bool
	initCmd := &cobra.Command{
		Use:   "init",
		Short: "Write a config file with every key commented out (mode 0600)",
		Long: "Write a config file with every key commented out (mode 0600), where --config or $RAGMEM_CONFIG\n" +
			"names it, else at the default location ($XDG_CONFIG_HOME/ragmem/config.yaml or ~/.config/ragmem/config.yaml).",
		Args:        cobra.NoArgs,
		Annotations: map[string]string{settings.AnnotConfigOptional: settings.ConfigCreates},
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := g.configFilePath()
			if err != nil {
				return err
			}
			if _, err := os.Stat(p); err == nil && !force {
				return fmt.Errorf("%s already exists (use --force to replace it)", p)
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				return err
			}
			// 0600: the file may come to hold a key.
			if err := wal.WriteFileAtomic(wal.OS{}, p, func(w io.Writer) error {
				_, err := io.WriteString(w, configTemplate)
				return err
			}); err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "wrote %s\n", p)
			return nil
		},
	}
	initCmd.Flags().BoolVar(&force, "force", false, "replace an existing file")
	cmd.AddCommand(show, path, initCmd)
	return cmd
}

// configFilePath is the config file's location (whether or not it exists).
func (g *globals) configFilePath() (string, error) {
	p, _, _ := settings.Locate(g.ConfigPath)
	if p == "" {
		return "", errors.New("no config file location: no home directory; use --config or $RAGMEM_CONFIG")
	}
	return p, nil
}

// effectiveSettings lists every setting with its value and source.
func (g *globals) effectiveSettings(ctx context.Context, cmd *cobra.Command) ([]settings.Row, error) {
	dir, err := g.DataDir()
	if err != nil {
		return nil, err
	}
	mem, err := g.MemoriesDir("")
	if err != nil {
		return nil, err
	}
	rec, storeNote := g.readStoreRecord(ctx, dir)
	return g.Effective(cmd, dir, mem, rec, storeNote)
}

// readStoreRecord reads what the local store in dir records about its
// embedder, without changing anything; the note says what was found.
func (g *globals) readStoreRecord(ctx context.Context, dir string) (*index.EmbedderRecord, string) {
	if b := strings.ToLower(strings.TrimSpace(g.Backend.Name)); b != "" && b != "local" {
		return nil, "(not read: backend " + b + ")"
	}
	journals, _ := filepath.Glob(filepath.Join(dir, "journal-*.rgj"))
	snaps, _ := filepath.Glob(filepath.Join(dir, "snap-*.rgs"))
	if len(journals)+len(snaps) == 0 {
		return nil, "(none yet)"
	}
	// A running owner has the store open: ask it; else hold the ownership
	// while reading, so that no other process opens the store meanwhile.
	info, claim, err := owner.Join(ctx, dir, &owner.JoinOptions{Wait: 5 * time.Second})
	if err != nil {
		return nil, "(not read: " + oneLine(err) + ")"
	}
	if claim == nil {
		return g.ownerStoreRecord(ctx, dir, info)
	}
	defer claim.Release()
	be, err := local.Open(ctx, dir, &local.Options{ReadOnly: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, "(not read: " + oneLine(err) + ")"
	}
	defer be.Close()
	rec, ok, err := engine.ReadEmbedderRecord(ctx, be)
	switch {
	case err != nil:
		return nil, "(not read: " + oneLine(err) + ")"
	case !ok:
		return nil, "records no embedder"
	case rec.Spec == nil:
		return rec, "records embedder " + rec.Identity + " (identity only)"
	case rec.FromIdentity:
		return rec, "records embedder " + rec.Identity + " (identity only; read as " + rec.Spec.String() + ")"
	}
	return rec, "records embedder " + rec.Spec.String()
}

// ownerStoreRecord asks the owner of dir which embedder its store records.
func (g *globals) ownerStoreRecord(ctx context.Context, dir string, info owner.Info) (*index.EmbedderRecord, string) {
	c, err := owner.NewClient(dir, info, nil)
	if err != nil {
		return nil, "(not read: " + oneLine(err) + ")"
	}
	defer c.Close()
	st, err := c.Status(ctx)
	if err != nil {
		return nil, "(not read: " + oneLine(err) + ")"
	}
	var ex ownerd.Extra
	_ = json.Unmarshal(st.Extra, &ex)
	by := fmt.Sprintf(" (asked pid %d, %s, which has it open)", st.Owner.PID, ownerd.DescribeKind(st.Owner.Kind, st.Owner.Command))
	if ex.EmbedderSpec == "" {
		if ex.Embedder == "" {
			return nil, "records no embedder" + by
		}
		return nil, "records embedder " + ex.Embedder + " (identity only)" + by
	}
	spec, err := embed.ParseSpec(ex.EmbedderSpec)
	if err != nil {
		return nil, "records embedder " + ex.EmbedderSpec + by
	}
	return &index.EmbedderRecord{Identity: ex.Embedder, Spec: &spec}, "records embedder " + spec.String() + by
}
