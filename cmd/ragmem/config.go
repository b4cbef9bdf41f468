package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/perm"
)

// The config file holds the user's defaults. Its location is --config, else
// $RAGMEM_CONFIG, else $XDG_CONFIG_HOME/ragmem/config.yaml, else
// ~/.config/ragmem/config.yaml (on macOS and Windows the directory of
// os.UserConfigDir). Each setting is taken from the first of: a flag, the
// environment, the config file, the store (the embedder it records), the
// built-in default.

// maxConfigBytes bounds the config file.
const maxConfigBytes = 1 << 20

// errConfig marks a config file that cannot be used.
var errConfig = errors.New("config")

// valueKind is the YAML shape a key takes.
type valueKind int

const (
	scalarValue valueKind = iota // a string, number or boolean
	listValue                    // a sequence of scalars (or one scalar)
	mapValue                     // a mapping of names to scalars
)

// configKey describes one key of the config file.
type configKey struct {
	name   string    // "dir", "openai.base_url", "serve.addr"
	kind   valueKind //
	flag   string    // the flag it sets, on the root command (globals) or on its section's command
	env    []string  // environment variables that take precedence over it, first set wins
	secret bool      // never printed; the file must not be readable by others
	path   bool      // "~/" is expanded to the home directory
	help   string    // one line, for `config show` and the docs
}

// Keys of the openai section that are options of an openai embedder spec.
var openAIRuntimeOptions = []string{"batch", "concurrency", "request_tokens", "retries", "timeout"}

// globalKeys are the top-level keys and the openai section.
var globalKeys = []configKey{
	{name: "dir", flag: "dir", env: []string{"RAGMEM_DIR"}, path: true, help: "data directory"},
	{name: "embedder", flag: "embedder", env: []string{"RAGMEM_EMBEDDER"}, help: "embedder spec (a store built with another refuses it)"},
	{name: "memories", env: []string{"RAGMEM_MEMORIES"}, path: true, help: "agent-memory directory (default <data dir>/memories)"},
	{name: "backend", flag: "backend", env: []string{"RAGMEM_BACKEND"}, help: "storage backend: local or weaviate"},
	{name: "weaviate.url", flag: "weaviate-url", env: []string{"RAGMEM_WEAVIATE_URL"}, help: "Weaviate server URL"},
	{name: "weaviate.namespace", flag: "weaviate-namespace", env: []string{"RAGMEM_WEAVIATE_NAMESPACE"}, help: "Weaviate namespace"},
	{name: "weaviate.consistency", flag: "weaviate-consistency", help: "Weaviate consistency level"},
	{name: "weaviate.api_key", flag: "weaviate-api-key", env: []string{"WEAVIATE_API_KEY"}, secret: true, help: "Weaviate API key"},
	{name: "reranker", flag: "reranker", env: []string{"RAGMEM_RERANKER"}, help: "URL of a /rerank endpoint that reorders the fused top results (default none)"},
	{name: "reranker_api", flag: "reranker-api", help: "the reranker's request shape: cohere or tei (default by the URL)"},
	{name: "reranker_model", flag: "reranker-model", help: "the reranker's model name"},
	{name: "reranker_api_key", flag: "reranker-api-key", env: []string{"RAGMEM_RERANKER_API_KEY"}, secret: true, help: "API key sent to the reranker"},
	{name: "reranker_top", flag: "reranker-top", help: "fused results the reranker reorders (default 50)"},
	{name: "reranker_timeout", flag: "reranker-timeout", help: "timeout of one rerank call (default 3s)"},
	{name: "openai.base_url", flag: "base-url", env: []string{"OPENAI_BASE_URL"}, help: "API root of OpenAI-compatible embedders (and chat models)"},
	{name: "openai.api_key_env", help: "environment variable holding the API key (default OPENAI_API_KEY)"},
	{name: "openai.api_key", flag: "api-key", secret: true, help: "API key, if not in the environment"},
	{name: "openai.headers", kind: mapValue, secret: true, help: "extra HTTP headers for the embedding server"},
	{name: "openai.batch", help: "texts per embeddings request (default 64, at most 2048)"},
	{name: "openai.concurrency", help: "embeddings requests in flight (default 4)"},
	{name: "openai.request_tokens", help: "estimated tokens per embeddings request (default 300000)"},
	{name: "openai.retries", help: "retries after 429, 5xx or network errors (default 5; 0: none)"},
	{name: "openai.timeout", help: "timeout of one embeddings request (default 60s)"},
}

// sectionCommands are the commands whose flags a config section sets; keys
// are the flag names with '_' for '-'.
var sectionCommands = map[string]func() *pflag.FlagSet{
	"serve": func() *pflag.FlagSet { return newServeCmd(&globals{}).Flags() },
	"mcp":   func() *pflag.FlagSet { return newMCPCmd(&globals{}).Flags() },
}

// sectionSkips are command flags that are not config keys.
var sectionSkips = map[string]bool{"mcp.memories": true, "serve.memories": true} // the top-level "memories" key

// pathFlags are command flags whose values are paths.
var pathFlags = map[string]bool{"serve.tls_cert": true, "serve.tls_key": true}

// allKeys returns every config key, top-level and section, sorted by name.
func allKeys() []configKey {
	keys := slices.Clone(globalKeys)
	for sec, flags := range sectionCommands {
		flags().VisitAll(func(f *pflag.Flag) {
			name := sec + "." + strings.ReplaceAll(f.Name, "-", "_")
			if sectionSkips[name] || f.Name == "help" || f.Hidden {
				return
			}
			k := configKey{name: name, flag: f.Name, path: pathFlags[name], help: firstLine(f.Usage)}
			if strings.HasSuffix(f.Value.Type(), "Array") || strings.HasSuffix(f.Value.Type(), "Slice") {
				k.kind = listValue
			}
			keys = append(keys, k)
		})
	}
	slices.SortFunc(keys, func(a, b configKey) int { return strings.Compare(a.name, b.name) })
	return keys
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// configValue is one value read from the file.
type configValue struct {
	line   int
	scalar string
	list   []string
	m      map[string]string
}

// config is the loaded config file (found false: there is none).
type config struct {
	path   string
	source string // where the path came from: "--config", "$RAGMEM_CONFIG" or "default location"
	found  bool
	values map[string]configValue
	keys   map[string]configKey
}

func (c *config) get(name string) (configValue, bool) {
	if c == nil {
		return configValue{}, false
	}
	v, ok := c.values[name]
	return v, ok
}

// where names a value's place in the file, "path:line".
func (c *config) where(v configValue) string {
	return c.path + ":" + strconv.Itoa(v.line)
}

// defaultConfigPath is $XDG_CONFIG_HOME/ragmem/config.yaml, else
// ~/.config/ragmem/config.yaml; on macOS and Windows, the ragmem folder of
// os.UserConfigDir.
func defaultConfigPath() (string, error) {
	var dir string
	switch runtime.GOOS {
	case "darwin", "windows":
		d, err := os.UserConfigDir()
		if err != nil {
			return "", err
		}
		dir = d
	default:
		if x := os.Getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
			dir = x
		} else {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", err
			}
			dir = filepath.Join(home, ".config")
		}
	}
	return filepath.Join(dir, "ragmem", "config.yaml"), nil
}

// locateConfig returns the config path and where it came from; explicit is
// true when the user named it (then it must exist). The path is "" when
// there is no home directory to look in.
func locateConfig(flag string) (path, source string, explicit bool) {
	if flag != "" {
		return expandHome(flag), "--config", true
	}
	if p := os.Getenv("RAGMEM_CONFIG"); p != "" {
		return expandHome(p), "$RAGMEM_CONFIG", true
	}
	p, err := defaultConfigPath()
	if err != nil {
		return "", "default location", false
	}
	return p, "default location", false
}

// loadConfig reads the config file the flag, the environment or the
// default location names. warn receives a warning about its permissions.
func loadConfig(flag string, warn io.Writer) (*config, error) {
	path, source, explicit := locateConfig(flag)
	c := &config{path: path, source: source, values: map[string]configValue{}}
	if path == "" {
		return c, nil
	}
	// It names the embedder's endpoint and may hold its key: read only a
	// file of the user's that no one else may write (internal/perm).
	if err := perm.CheckTarget(path); err != nil {
		return nil, fmt.Errorf("%w file %s (from %s): %w", errConfig, path, source, err)
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && !explicit {
			return c, nil
		}
		return nil, fmt.Errorf("%w file %s (from %s): %w", errConfig, path, source, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w file %s: %w", errConfig, path, err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%w file %s (from %s) is a directory", errConfig, path, source)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w file %s: %w", errConfig, path, err)
	}
	if len(data) > maxConfigBytes {
		return nil, fmt.Errorf("%w file %s is larger than %d bytes", errConfig, path, maxConfigBytes)
	}
	c.found = true
	if c.values, c.keys, err = parseConfig(data); err != nil {
		return nil, fmt.Errorf("%w file %s%w", errConfig, path, err)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		var secrets []string
		for name, v := range c.values {
			if c.keys[name].secret && (v.scalar != "" || len(v.m) > 0) {
				secrets = append(secrets, name)
			}
		}
		if len(secrets) > 0 {
			slices.Sort(secrets)
			fmt.Fprintf(warn, "ragmem: warning: %s holds secrets (%s) but others may read it (mode %04o); run: chmod 600 %s\n",
				path, strings.Join(secrets, ", "), st.Mode().Perm(), path)
		}
	}
	return c, nil
}

// lineError is a config error at a line; it prints as ":LINE: msg" after the path.
type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return ":" + strconv.Itoa(e.line) + ": " + e.msg }

func atLine(line int, format string, args ...any) error {
	return &lineError{line: line, msg: fmt.Sprintf(format, args...)}
}

// parseConfig reads a config file: a YAML mapping of known keys (sections
// are nested mappings). Unknown keys, duplicates, anchors, aliases, values
// of the wrong shape and invalid values are errors with their line.
func parseConfig(data []byte) (map[string]configValue, map[string]configKey, error) {
	keys := map[string]configKey{}
	for _, k := range allKeys() {
		keys[k.name] = k
	}
	values := map[string]configValue{}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return values, keys, nil // empty file
		}
		return nil, nil, yamlError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, nil, atLine(extra.Line, "only one YAML document is allowed")
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return values, keys, nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return values, keys, nil // only comments
	}
	if err := walkConfig(root, "", keys, values); err != nil {
		return nil, nil, err
	}
	for name, v := range values {
		if err := checkValue(keys[name], v); err != nil {
			return nil, nil, atLine(v.line, "%s: %v", name, err)
		}
	}
	return values, keys, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlError puts a YAML syntax error's line where the others have theirs.
func yamlError(err error) error {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return atLine(n, "%s", m[2])
	}
	return fmt.Errorf(": %s", strings.TrimPrefix(err.Error(), "yaml: "))
}

// walkConfig reads a mapping node whose keys are prefixed with prefix.
func walkConfig(n *yaml.Node, prefix string, keys map[string]configKey, values map[string]configValue) error {
	if err := plain(n); err != nil {
		return err
	}
	if n.Kind != yaml.MappingNode {
		what := "the file"
		if prefix != "" {
			what = strings.TrimSuffix(prefix, ".")
		}
		return atLine(n.Line, "%s must be a mapping of keys to values", what)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if err := plain(kn); err != nil {
			return err
		}
		if kn.Kind != yaml.ScalarNode {
			return atLine(kn.Line, "a key must be a plain name")
		}
		name := prefix + kn.Value
		if seen[name] {
			return atLine(kn.Line, "%s is given twice", name)
		}
		seen[name] = true
		k, known := keys[name]
		if !known {
			if isSection(name, keys) {
				if err := walkConfig(vn, name+".", keys, values); err != nil {
					return err
				}
				continue
			}
			return atLine(kn.Line, "unknown key %q%s", truncate(name, 64), suggest(name, keys))
		}
		v, err := readValue(k, vn)
		if err != nil {
			return err
		}
		if v != nil {
			values[name] = *v
		}
	}
	return nil
}

// plain refuses anchors and aliases: a config file has no use for them, and
// aliases can make a small file expand enormously.
func plain(n *yaml.Node) error {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return atLine(n.Line, "YAML anchors and aliases are not allowed")
	}
	return nil
}

func isSection(name string, keys map[string]configKey) bool {
	for k := range keys {
		if strings.HasPrefix(k, name+".") {
			return true
		}
	}
	return false
}

// suggest names a known key close to an unknown one.
func suggest(name string, keys map[string]configKey) string {
	norm := func(s string) string { return strings.NewReplacer("-", "_", " ", "_").Replace(strings.ToLower(s)) }
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if norm(name) == k || strings.HasSuffix(k, "."+norm(name)) {
			return fmt.Sprintf(" (did you mean %s?)", k)
		}
	}
	return ""
}

// readValue reads a key's value node; nil for an explicit null (unset).
func readValue(k configKey, n *yaml.Node) (*configValue, error) {
	if err := plain(n); err != nil {
		return nil, err
	}
	v := &configValue{line: n.Line}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, nil
	}
	scalar := func(n *yaml.Node) (string, error) {
		if err := plain(n); err != nil {
			return "", err
		}
		if n.Kind != yaml.ScalarNode {
			return "", atLine(n.Line, "%s: want a single value", k.name)
		}
		return n.Value, nil
	}
	switch k.kind {
	case scalarValue:
		s, err := scalar(n)
		if err != nil {
			return nil, err
		}
		v.scalar = s
	case listValue:
		switch n.Kind {
		case yaml.ScalarNode:
			v.list = []string{n.Value}
		case yaml.SequenceNode:
			for _, c := range n.Content {
				s, err := scalar(c)
				if err != nil {
					return nil, err
				}
				v.list = append(v.list, s)
			}
		default:
			return nil, atLine(n.Line, "%s: want a list of values", k.name)
		}
	case mapValue:
		if n.Kind != yaml.MappingNode {
			return nil, atLine(n.Line, "%s: want a mapping of names to values", k.name)
		}
		v.m = map[string]string{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			name, err := scalar(n.Content[i])
			if err != nil {
				return nil, err
			}
			val, err := scalar(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			if _, dup := v.m[name]; dup {
				return nil, atLine(n.Content[i].Line, "%s: %q is given twice", k.name, truncate(name, 64))
			}
			v.m[name] = val
		}
	}
	if k.path {
		v.scalar = expandHome(v.scalar)
	}
	return v, nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// checkValue validates a value the way its flag or embedder option would.
func checkValue(k configKey, v configValue) error {
	switch {
	case k.name == "embedder":
		_, err := embed.ParseSpec(v.scalar)
		return err
	case k.name == "openai.base_url":
		return embed.Spec{Kind: embed.KindOpenAI, Model: "m", BaseURL: v.scalar}.Validate()
	case k.name == "openai.api_key_env":
		if !envName.MatchString(v.scalar) {
			return fmt.Errorf("%q is not an environment variable name", truncate(v.scalar, 64))
		}
		return nil
	case k.name == "openai.headers":
		_, err := embed.NewOpenAI(embed.OpenAIOptions{Model: "m", BaseURL: "http://localhost/v1", Headers: v.m})
		return err
	case strings.HasPrefix(k.name, "openai.") && slices.Contains(openAIRuntimeOptions, strings.TrimPrefix(k.name, "openai.")):
		return embed.Spec{Kind: embed.KindOpenAI, Model: "m", Options: map[string]string{strings.TrimPrefix(k.name, "openai."): v.scalar}}.Validate()
	case k.flag != "":
		f := scratchFlags(k).Lookup(k.flag)
		if f == nil {
			return nil
		}
		vals := v.list
		if k.kind == scalarValue {
			vals = []string{v.scalar}
		}
		for _, s := range vals {
			if err := f.Value.Set(s); err != nil {
				return err
			}
		}
	}
	return nil
}

// scratchFlags returns a fresh flag set holding k's flag, to validate values.
func scratchFlags(k configKey) *pflag.FlagSet {
	if sec, _, ok := strings.Cut(k.name, "."); ok {
		if mk, ok := sectionCommands[sec]; ok {
			return mk()
		}
	}
	fs := pflag.NewFlagSet("scratch", pflag.ContinueOnError)
	addGlobalFlags(fs, &globals{})
	return fs
}

// expandHome replaces a leading "~/" with the home directory.
func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") || strings.HasPrefix(p, `~\`) {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[1:])
		}
	}
	return p
}

func truncate(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
