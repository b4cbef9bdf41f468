package settings

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
	SrcDefault = "default"
	SrcStore   = "store"
)

// AnnotConfigOptional marks commands that run even when the config file is
// broken (`config path`), printing the error as a warning.
const AnnotConfigOptional = "ragmem/config-optional"

// ConfigCreates is AnnotConfigOptional's value for `config init`, which
// creates the file: a missing one is not even worth a warning.
const ConfigCreates = "creates"

// EmbedderKeys are resolved with the store layer by ResolveEmbedder, not
// applied to their flags.
var EmbedderKeys = map[string]bool{"embedder": true, "openai.base_url": true, "openai.api_key": true}

// Apply gives every flag that the command line left unset its value
// from the environment or the config file (flags > environment > config
// file > default) and records where each came from. The embedder's
// settings are resolved later, with the store (ResolveEmbedder).
func (s *Settings) Apply(cmd *cobra.Command) error {
	s.Sources = map[string]string{}
	for _, k := range s.Schema.Keys() {
		if EmbedderKeys[k.Name] {
			continue
		}
		var f *pflag.Flag
		if sec, _, ok := strings.Cut(k.Name, "."); ok && s.Schema.Sections[sec] != nil {
			if cmd.Name() != sec || cmd.Parent() != cmd.Root() {
				continue
			}
			f = cmd.Flags().Lookup(k.Flag)
		} else if k.Flag != "" {
			f = cmd.Flags().Lookup(k.Flag)
		}
		if k.Flag != "" && f == nil {
			continue
		}
		if f != nil && f.Changed {
			s.Sources[k.Name] = "--" + f.Name
			continue
		}
		if name, val, ok := FirstEnv(k.Env); ok {
			s.Sources[k.Name] = "$" + name
			if f != nil {
				if err := f.Value.Set(val); err != nil {
					return fmt.Errorf("$%s: %w", name, err)
				}
			}
			continue
		}
		if v, ok := s.Cfg.Get(k.Name); ok {
			s.Sources[k.Name] = s.Cfg.Where(v)
			if f == nil {
				continue
			}
			vals := v.List
			if k.Kind == ScalarValue {
				vals = []string{v.Scalar}
			}
			for _, val := range vals {
				if err := f.Value.Set(val); err != nil {
					return fmt.Errorf("%s: %s: %w", s.Cfg.Where(v), k.Name, err)
				}
			}
			continue
		}
		s.Sources[k.Name] = SrcDefault
	}
	return nil
}

// FirstEnv returns the first of the variables that is set and not empty.
func FirstEnv(names []string) (name, value string, ok bool) {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return n, v, true
		}
	}
	return "", "", false
}

// Choice is a resolved embedder configuration, and where each part
// of it came from.
type Choice struct {
	Spec        embed.Spec
	From        string            // where the kind and model came from
	OptionFrom  map[string]string // option name -> source
	BaseFrom    string            // source of Spec.BaseURL ("" when unset)
	Build       embed.BuildOptions
	KeyFrom     string // source of the API key, "" when there is none
	KeyEnv      string // the variable the key is read from
	KeyEnvFrom  string
	HeadersFrom string
	Recorded    *index.EmbedderRecord // what the store records, if anything
}

// layer is one level of the embedder's settings.
type layer struct {
	source string
	spec   *embed.Spec // nil: this level names no embedder
}

// ResolveEmbedder decides the embedder from, highest first: the flags, the
// environment, the config file, what the store records (rec, nil for none),
// and the lexical default. The kind and model come from the highest level
// that names an embedder; each option, the base URL and the API key come
// from the highest level that sets them (levels that name another model do
// not count).
func (s *Settings) ResolveEmbedder(rec *index.EmbedderRecord) (*Choice, error) {
	levels, err := s.layers(rec)
	if err != nil {
		return nil, err
	}
	c := &Choice{Spec: embed.Spec{Kind: embed.KindLexical}, From: SrcDefault, OptionFrom: map[string]string{}, Recorded: rec}
	for _, l := range levels {
		if l != nil { // the highest level that names an embedder wins
			c.Spec = embed.Spec{Kind: l.spec.Kind, Model: l.spec.Model}
			c.From = l.source
		}
	}
	storeL, cfgL, envL, flagL := levels[0], levels[1], levels[2], levels[3]
	// Lowest first: the store, the config file, the environment, the flags.
	c.fromLayer(storeL)
	if c.Spec.Kind == embed.KindOpenAI {
		for _, o := range openAIRuntimeOptions {
			if v, ok := s.Cfg.Get("openai." + o); ok {
				c.setOption(o, v.Scalar, s.Cfg.Where(v))
			}
		}
		if v, ok := s.Cfg.Get("openai.base_url"); ok {
			c.setBase(v.Scalar, s.Cfg.Where(v))
		}
	}
	c.fromLayer(cfgL)
	c.setBase(os.Getenv("OPENAI_BASE_URL"), "$OPENAI_BASE_URL")
	c.fromLayer(envL)
	c.fromLayer(flagL)
	c.setBase(s.BaseURL, "--base-url")
	if err := c.Spec.Validate(); err != nil {
		return nil, err
	}
	if c.Spec.Kind != embed.KindOpenAI {
		return c, nil
	}
	if c.BaseFrom == "" {
		c.BaseFrom = SrcDefault // embed's: https://api.openai.com/v1
	}
	s.secrets(c)
	if rec != nil && len(rec.Omitted) > 0 && c.BaseFrom == SrcStore {
		fmt.Fprintf(s.Stderr, "ragmem: warning: the store's base URL was recorded without %s; give the full URL with --base-url or openai.base_url\n",
			strings.Join(rec.Omitted, ", "))
	}
	return c, nil
}

// layers returns the levels of the embedder's settings, lowest first: what
// the store records, the config file, $RAGMEM_EMBEDDER and --embedder (nil
// for a level that names none).
func (s *Settings) layers(rec *index.EmbedderRecord) ([4]*layer, error) {
	var out [4]*layer
	if rec != nil && rec.Spec != nil {
		sp := rec.Spec.Clone()
		out[0] = &layer{source: SrcStore, spec: &sp}
	}
	parse := func(i int, v, source, what string) error {
		sp, err := embed.ParseSpec(v)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		out[i] = &layer{source: source, spec: &sp}
		return nil
	}
	if v, ok := s.Cfg.Get("embedder"); ok {
		if err := parse(1, v.Scalar, s.Cfg.Where(v), s.Cfg.Where(v)+": embedder"); err != nil {
			return out, err
		}
	}
	if v := os.Getenv("RAGMEM_EMBEDDER"); v != "" {
		if err := parse(2, v, "$RAGMEM_EMBEDDER", "$RAGMEM_EMBEDDER"); err != nil {
			return out, err
		}
	}
	if s.Embedder != "" {
		if err := parse(3, s.Embedder, "--embedder", "--embedder"); err != nil {
			return out, err
		}
	}
	return out, nil
}

func (c *Choice) setOption(k, v, src string) {
	if c.Spec.Options == nil {
		c.Spec.Options = map[string]string{}
	}
	c.Spec.Options[k] = v
	c.OptionFrom[k] = src
}

// setBase sets an openai embedder's base URL from src (an empty v sets
// nothing).
func (c *Choice) setBase(v, src string) {
	if c.Spec.Kind == embed.KindOpenAI && v != "" {
		c.Spec.BaseURL, c.BaseFrom = v, src
	}
}

// fromLayer takes the options and base URL of a level that names the
// chosen model.
func (c *Choice) fromLayer(l *layer) {
	if l == nil || !l.spec.SameModel(c.Spec) {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(l.spec.Options)) {
		c.setOption(k, l.spec.Options[k], l.source)
	}
	c.setBase(l.spec.BaseURL, l.source)
}

// secrets sets an openai embedder's API key and headers: never from the
// store.
func (s *Settings) secrets(c *Choice) {
	c.KeyEnv, c.KeyEnvFrom = "OPENAI_API_KEY", SrcDefault
	if v, ok := s.Cfg.Get("openai.api_key_env"); ok {
		c.KeyEnv, c.KeyEnvFrom = v.Scalar, s.Cfg.Where(v)
	}
	c.Build.APIKeyEnv = c.KeyEnv
	switch {
	case s.APIKey != "":
		c.Build.APIKey, c.KeyFrom = s.APIKey, "--api-key"
	case os.Getenv(c.KeyEnv) != "":
		c.Build.APIKey, c.KeyFrom = os.Getenv(c.KeyEnv), "$"+c.KeyEnv
	default:
		if v, ok := s.Cfg.Get("openai.api_key"); ok && v.Scalar != "" {
			c.Build.APIKey, c.KeyFrom = v.Scalar, s.Cfg.Where(v)
		}
	}
	if v, ok := s.Cfg.Get("openai.headers"); ok && len(v.Map) > 0 {
		c.Build.Headers, c.HeadersFrom = v.Map, s.Cfg.Where(v)
	}
}

// BuildEmbedder builds (or reuses) the embedder a choice describes. Stores
// opened with the same settings share one embedder, and so its request
// limits and rate-limit pauses.
func (s *Settings) BuildEmbedder(c *Choice) (embed.Embedder, error) {
	key := c.Spec.String() + "\x00" + c.Build.APIKey + "\x00" + c.Build.APIKeyEnv
	for _, h := range slices.Sorted(maps.Keys(c.Build.Headers)) {
		key += "\x00" + h + "=" + c.Build.Headers[h]
	}
	s.embMu.Lock()
	defer s.embMu.Unlock()
	if e, ok := s.embedders[key]; ok {
		return e, nil
	}
	e, err := embed.New(c.Spec, &c.Build)
	if err != nil {
		if c.From != SrcDefault {
			return nil, fmt.Errorf("embedder %s (from %s): %w", c.Spec, c.From, err)
		}
		return nil, err
	}
	if s.embedders == nil {
		s.embedders = map[string]embed.Embedder{}
	}
	s.embedders[key] = e
	return e, nil
}

// EmbedderFor resolves and builds the embedder of a store that records rec
// (nil: a new store, or none at all); it is index.Options.EmbedderFor.
func (s *Settings) EmbedderFor(_ context.Context, rec *index.EmbedderRecord) (embed.Embedder, error) {
	c, err := s.ResolveEmbedder(rec)
	if err != nil {
		return nil, err
	}
	return s.BuildEmbedder(c)
}

// ExplainMismatch adds to the store's refusal where the refused embedder
// came from and how to use the store's own.
func (c *Choice) ExplainMismatch(err error) error {
	if c.From == SrcStore {
		return fmt.Errorf("%w (the embedder was rebuilt from what the store records, %s: has its model changed?)", err, c.Spec)
	}
	hint := ""
	if c.Recorded != nil && c.Recorded.Spec != nil {
		hint = fmt.Sprintf("; without it ragmem uses the store's own, %s", c.Recorded.Spec)
	}
	return fmt.Errorf("%w (embedder %s came from %s%s)", err, c.Spec, c.From, hint)
}

// ChatConfig returns the base URL and API key for chat models (memory
// extraction): --base-url, else $OPENAI_BASE_URL, else openai.base_url;
// the key as for embedders.
func (s *Settings) ChatConfig() (baseURL, apiKey string) {
	baseURL = s.BaseURL
	if baseURL == "" {
		baseURL = os.Getenv("OPENAI_BASE_URL")
	}
	if v, ok := s.Cfg.Get("openai.base_url"); ok && baseURL == "" {
		baseURL = v.Scalar
	}
	keyEnv := "OPENAI_API_KEY"
	if v, ok := s.Cfg.Get("openai.api_key_env"); ok {
		keyEnv = v.Scalar
	}
	apiKey = s.APIKey
	if apiKey == "" {
		apiKey = os.Getenv(keyEnv)
	}
	if v, ok := s.Cfg.Get("openai.api_key"); ok && apiKey == "" {
		apiKey = v.Scalar
	}
	return baseURL, apiKey
}
