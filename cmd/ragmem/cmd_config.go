package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

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
				return writeJSON(g.stdout, map[string]any{"configFile": g.configFileInfo(), "settings": rows})
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintf(tw, "config file\t%s\t%s\n", g.configFileInfo()["path"], g.configFileInfo()["status"])
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
		Annotations: map[string]string{annotConfigOptional: "1"},
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
		Annotations: map[string]string{annotConfigOptional: configCreates},
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
	p, _, _ := locateConfig(g.configPath)
	if p == "" {
		return "", errors.New("no config file location: no home directory; use --config or $RAGMEM_CONFIG")
	}
	return p, nil
}

func (g *globals) configFileInfo() map[string]string {
	info := map[string]string{"path": "(none)", "source": "", "status": "not found"}
	if g.cfg == nil {
		return info
	}
	info["path"], info["source"] = g.cfg.path, g.cfg.source
	if g.cfg.found {
		info["status"] = "found (" + g.cfg.source + ")"
	} else {
		info["status"] = "not found (" + g.cfg.source + ")"
	}
	return info
}

// settingRow is one line of `config show`.
type settingRow struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

const redacted = "[redacted]"

// effectiveSettings lists every setting with its value and source.
func (g *globals) effectiveSettings(ctx context.Context, cmd *cobra.Command) ([]settingRow, error) {
	var rows []settingRow
	dir, err := g.dataDir()
	if err != nil {
		return nil, err
	}
	dirSrc := g.sources["dir"]
	if g.dir != "" && dirSrc == srcDefault {
		dirSrc = "--dir"
	}
	rows = append(rows, settingRow{"dir", dir, dirSrc})
	mem, err := g.memoriesDir("")
	if err != nil {
		return nil, err
	}
	rows = append(rows, settingRow{"memories", mem, g.sources["memories"]})

	// The store, and the embedder resolved with it.
	rec, storeNote := g.readStoreRecord(ctx, dir)
	rows = append(rows, settingRow{"store", storeNote, dir})
	c, err := g.resolveEmbedder(rec)
	if err != nil {
		return nil, err
	}
	rows = append(rows, settingRow{"embedder", c.spec.String(), c.from})
	for _, k := range slices.Sorted(maps.Keys(c.spec.Options)) {
		rows = append(rows, settingRow{"embedder." + k, c.spec.Options[k], c.optionFrom[k]})
	}
	if c.spec.Kind == "openai" {
		base := c.spec.BaseURL
		if base == "" {
			base = "https://api.openai.com/v1"
		}
		pub, _ := c.spec.Public()
		if pub.BaseURL != "" {
			base = pub.BaseURL
		}
		rows = append(rows, settingRow{"openai.base_url", base, c.baseFrom})
		rows = append(rows, settingRow{"openai.api_key_env", c.keyEnv, c.keyEnvFrom})
		key, keyFrom := "(not set)", srcDefault
		if c.build.APIKey != "" {
			key, keyFrom = redacted, c.keyFrom
		}
		rows = append(rows, settingRow{"openai.api_key", key, keyFrom})
		for _, h := range slices.Sorted(maps.Keys(c.build.Headers)) {
			rows = append(rows, settingRow{"openai.headers." + h, redacted, c.headersFrom})
		}
	}

	// Every other key: flags of this command (the globals), else the
	// environment, the config file, the flag's default.
	for _, k := range allKeys() {
		if embedderKeys[k.name] || k.name == "dir" || k.name == "memories" || strings.HasPrefix(k.name, "openai.") {
			continue
		}
		val, src := g.describe(cmd, k)
		if k.secret && val != "" {
			val = redacted
		}
		rows = append(rows, settingRow{k.name, val, src})
	}
	return rows, nil
}

// describe returns a non-embedder key's effective value and its source.
func (g *globals) describe(cmd *cobra.Command, k configKey) (string, string) {
	sec, _, _ := strings.Cut(k.name, ".")
	if sectionCommands[sec] == nil && k.flag != "" {
		if f := cmd.Flags().Lookup(k.flag); f != nil {
			return f.Value.String(), g.sources[k.name] // applySettings resolved it
		}
	}
	if name, v, ok := firstEnv(k.env); ok {
		return v, "$" + name
	}
	if v, ok := g.cfg.get(k.name); ok {
		if k.kind == listValue {
			return strings.Join(v.list, ","), g.cfg.where(v)
		}
		if k.kind == mapValue {
			return strings.Join(slices.Sorted(maps.Keys(v.m)), ","), g.cfg.where(v)
		}
		return v.scalar, g.cfg.where(v)
	}
	if k.flag != "" {
		if f := scratchFlags(k).Lookup(k.flag); f != nil {
			return f.DefValue, srcDefault
		}
	}
	return "", srcDefault
}

// readStoreRecord reads what the local store in dir records about its
// embedder, without changing anything; the note says what was found.
func (g *globals) readStoreRecord(ctx context.Context, dir string) (*index.EmbedderRecord, string) {
	if b := strings.ToLower(strings.TrimSpace(g.store.backend)); b != "" && b != "local" {
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
	var ex ownerExtra
	_ = json.Unmarshal(st.Extra, &ex)
	by := fmt.Sprintf(" (asked pid %d, %s, which has it open)", st.Owner.PID, describeKind(st.Owner.Kind, st.Owner.Command))
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
