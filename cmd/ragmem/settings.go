package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/embed"
)

// Sources of a setting, as `config show` prints them.
const (
	srcDefault = "default"
	srcStore   = "store"
)

// annotConfigOptional marks commands that run even when the config file is
// broken (`config path`), printing the error as a warning.
const annotConfigOptional = "ragmem/config-optional"

// configCreates is annotConfigOptional's value for `config init`, which
// creates the file: a missing one is not even worth a warning.
const configCreates = "creates"

// embedderKeys are resolved with the store layer by resolveEmbedder, not
// applied to their flags.
var embedderKeys = map[string]bool{"embedder": true, "openai.base_url": true, "openai.api_key": true}

// applySettings gives every flag that the command line left unset its value
// from the environment or the config file (flags > environment > config
// file > default) and records where each came from. The embedder's
// settings are resolved later, with the store (resolveEmbedder).
func (g *globals) applySettings(cmd *cobra.Command) error {
	g.sources = map[string]string{}
	for _, k := range allKeys() {
		if embedderKeys[k.name] {
			continue
		}
		var f *pflag.Flag
		if sec, _, ok := strings.Cut(k.name, "."); ok && sectionCommands[sec] != nil {
			if cmd.Name() != sec || cmd.Parent() != cmd.Root() {
				continue
			}
			f = cmd.Flags().Lookup(k.flag)
		} else if k.flag != "" {
			f = cmd.Flags().Lookup(k.flag)
		}
		if k.flag != "" && f == nil {
			continue
		}
		if f != nil && f.Changed {
			g.sources[k.name] = "--" + f.Name
			continue
		}
		if name, val, ok := firstEnv(k.env); ok {
			g.sources[k.name] = "$" + name
			if f != nil {
				if err := f.Value.Set(val); err != nil {
					return fmt.Errorf("$%s: %w", name, err)
				}
			}
			continue
		}
		if v, ok := g.cfg.get(k.name); ok {
			g.sources[k.name] = g.cfg.where(v)
			if f == nil {
				continue
			}
			vals := v.list
			if k.kind == scalarValue {
				vals = []string{v.scalar}
			}
			for _, s := range vals {
				if err := f.Value.Set(s); err != nil {
					return fmt.Errorf("%s: %s: %w", g.cfg.where(v), k.name, err)
				}
			}
			continue
		}
		g.sources[k.name] = srcDefault
	}
	return nil
}

// firstEnv returns the first of the variables that is set and not empty.
func firstEnv(names []string) (name, value string, ok bool) {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return n, v, true
		}
	}
	return "", "", false
}

// embedderChoice is a resolved embedder configuration, and where each part
// of it came from.
type embedderChoice struct {
	spec        embed.Spec
	from        string            // where the kind and model came from
	optionFrom  map[string]string // option name -> source
	baseFrom    string            // source of spec.BaseURL ("" when unset)
	build       embed.BuildOptions
	keyFrom     string // source of the API key, "" when there is none
	keyEnv      string // the variable the key is read from
	keyEnvFrom  string
	headersFrom string
	recorded    *index.EmbedderRecord // what the store records, if anything
}

// layer is one level of the embedder's settings.
type layer struct {
	source string
	spec   *embed.Spec // nil: this level names no embedder
}

// resolveEmbedder decides the embedder from, highest first: the flags, the
// environment, the config file, what the store records (rec, nil for none),
// and the lexical default. The kind and model come from the highest level
// that names an embedder; each option, the base URL and the API key come
// from the highest level that sets them (levels that name another model do
// not count).
func (g *globals) resolveEmbedder(rec *index.EmbedderRecord) (*embedderChoice, error) {
	var storeL, cfgL, envL, flagL *layer
	if rec != nil && rec.Spec != nil {
		s := rec.Spec.Clone()
		storeL = &layer{source: srcStore, spec: &s}
	}
	if v, ok := g.cfg.get("embedder"); ok {
		s, err := embed.ParseSpec(v.scalar)
		if err != nil {
			return nil, fmt.Errorf("%s: embedder: %w", g.cfg.where(v), err)
		}
		cfgL = &layer{source: g.cfg.where(v), spec: &s}
	}
	if v := os.Getenv("RAGMEM_EMBEDDER"); v != "" {
		s, err := embed.ParseSpec(v)
		if err != nil {
			return nil, fmt.Errorf("$RAGMEM_EMBEDDER: %w", err)
		}
		envL = &layer{source: "$RAGMEM_EMBEDDER", spec: &s}
	}
	if g.embedder != "" {
		s, err := embed.ParseSpec(g.embedder)
		if err != nil {
			return nil, fmt.Errorf("--embedder: %w", err)
		}
		flagL = &layer{source: "--embedder", spec: &s}
	}
	c := &embedderChoice{spec: embed.Spec{Kind: embed.KindLexical}, from: srcDefault, optionFrom: map[string]string{}, recorded: rec}
	for _, l := range []*layer{storeL, cfgL, envL, flagL} {
		if l != nil { // the highest level that names an embedder wins
			c.spec = embed.Spec{Kind: l.spec.Kind, Model: l.spec.Model}
			c.from = l.source
		}
	}
	isOpenAI := c.spec.Kind == embed.KindOpenAI
	setOpt := func(k, v, src string) {
		if c.spec.Options == nil {
			c.spec.Options = map[string]string{}
		}
		c.spec.Options[k] = v
		c.optionFrom[k] = src
	}
	setBase := func(v, src string) {
		if isOpenAI && v != "" {
			c.spec.BaseURL, c.baseFrom = v, src
		}
	}
	fromLayer := func(l *layer) {
		if l == nil || !l.spec.SameModel(c.spec) {
			return
		}
		for _, k := range slices.Sorted(maps.Keys(l.spec.Options)) {
			setOpt(k, l.spec.Options[k], l.source)
		}
		setBase(l.spec.BaseURL, l.source)
	}
	// Lowest first: the store, the config file, the environment, the flags.
	fromLayer(storeL)
	if isOpenAI {
		for _, o := range openAIRuntimeOptions {
			if v, ok := g.cfg.get("openai." + o); ok {
				setOpt(o, v.scalar, g.cfg.where(v))
			}
		}
		if v, ok := g.cfg.get("openai.base_url"); ok {
			setBase(v.scalar, g.cfg.where(v))
		}
	}
	fromLayer(cfgL)
	setBase(os.Getenv("OPENAI_BASE_URL"), "$OPENAI_BASE_URL")
	fromLayer(envL)
	fromLayer(flagL)
	setBase(g.baseURL, "--base-url")
	if err := c.spec.Validate(); err != nil {
		return nil, err
	}
	if !isOpenAI {
		return c, nil
	}
	if c.baseFrom == "" {
		c.baseFrom = srcDefault // embed's: https://api.openai.com/v1
	}
	// Secrets: never from the store.
	c.keyEnv, c.keyEnvFrom = "OPENAI_API_KEY", srcDefault
	if v, ok := g.cfg.get("openai.api_key_env"); ok {
		c.keyEnv, c.keyEnvFrom = v.scalar, g.cfg.where(v)
	}
	c.build.APIKeyEnv = c.keyEnv
	switch {
	case g.apiKey != "":
		c.build.APIKey, c.keyFrom = g.apiKey, "--api-key"
	case os.Getenv(c.keyEnv) != "":
		c.build.APIKey, c.keyFrom = os.Getenv(c.keyEnv), "$"+c.keyEnv
	default:
		if v, ok := g.cfg.get("openai.api_key"); ok && v.scalar != "" {
			c.build.APIKey, c.keyFrom = v.scalar, g.cfg.where(v)
		}
	}
	if v, ok := g.cfg.get("openai.headers"); ok && len(v.m) > 0 {
		c.build.Headers, c.headersFrom = v.m, g.cfg.where(v)
	}
	if rec != nil && len(rec.Omitted) > 0 && c.baseFrom == srcStore {
		fmt.Fprintf(g.stderr, "ragmem: warning: the store's base URL was recorded without %s; give the full URL with --base-url or openai.base_url\n",
			strings.Join(rec.Omitted, ", "))
	}
	return c, nil
}

// buildEmbedder builds (or reuses) the embedder a choice describes. Stores
// opened with the same settings share one embedder, and so its request
// limits and rate-limit pauses.
func (g *globals) buildEmbedder(c *embedderChoice) (embed.Embedder, error) {
	key := c.spec.String() + "\x00" + c.build.APIKey + "\x00" + c.build.APIKeyEnv
	for _, h := range slices.Sorted(maps.Keys(c.build.Headers)) {
		key += "\x00" + h + "=" + c.build.Headers[h]
	}
	g.embMu.Lock()
	defer g.embMu.Unlock()
	if e, ok := g.embedders[key]; ok {
		return e, nil
	}
	e, err := embed.New(c.spec, &c.build)
	if err != nil {
		if c.from != srcDefault {
			return nil, fmt.Errorf("embedder %s (from %s): %w", c.spec, c.from, err)
		}
		return nil, err
	}
	if g.embedders == nil {
		g.embedders = map[string]embed.Embedder{}
	}
	g.embedders[key] = e
	return e, nil
}

// embedderFor resolves and builds the embedder of a store that records rec
// (nil: a new store, or none at all); it is engine.Options.EmbedderFor.
func (g *globals) embedderFor(_ context.Context, rec *index.EmbedderRecord) (embed.Embedder, error) {
	c, err := g.resolveEmbedder(rec)
	if err != nil {
		return nil, err
	}
	return g.buildEmbedder(c)
}

// explainMismatch adds to the store's refusal where the refused embedder
// came from and how to use the store's own.
func (c *embedderChoice) explainMismatch(err error) error {
	if c.from == srcStore {
		return fmt.Errorf("%w (the embedder was rebuilt from what the store records, %s: has its model changed?)", err, c.spec)
	}
	hint := ""
	if c.recorded != nil && c.recorded.Spec != nil {
		hint = fmt.Sprintf("; without it ragmem uses the store's own, %s", c.recorded.Spec)
	}
	return fmt.Errorf("%w (embedder %s came from %s%s)", err, c.spec, c.from, hint)
}

// chatConfig returns the base URL and API key for chat models (memory
// extraction): --base-url, else $OPENAI_BASE_URL, else openai.base_url;
// the key as for embedders.
func (g *globals) chatConfig() (baseURL, apiKey string) {
	baseURL = g.baseURL
	if baseURL == "" {
		baseURL = os.Getenv("OPENAI_BASE_URL")
	}
	if v, ok := g.cfg.get("openai.base_url"); ok && baseURL == "" {
		baseURL = v.scalar
	}
	keyEnv := "OPENAI_API_KEY"
	if v, ok := g.cfg.get("openai.api_key_env"); ok {
		keyEnv = v.scalar
	}
	apiKey = g.apiKey
	if apiKey == "" {
		apiKey = os.Getenv(keyEnv)
	}
	if v, ok := g.cfg.get("openai.api_key"); ok && apiKey == "" {
		apiKey = v.scalar
	}
	return baseURL, apiKey
}
