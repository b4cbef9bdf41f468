package settings

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

// ErrConfig marks a config file that cannot be used.
var ErrConfig = errors.New("config")

// ValueKind is the YAML shape a key takes.
type ValueKind int

const (
	ScalarValue ValueKind = iota // a string, number or boolean
	ListValue                    // a sequence of scalars (or one scalar)
	MapValue                     // a mapping of names to scalars
)

// Key describes one key of the config file.
type Key struct {
	Name   string    // "dir", "openai.base_url", "serve.addr"
	Kind   ValueKind //
	Flag   string    // the flag it sets, on the root command (Settings) or on its section's command
	Env    []string  // environment variables that take precedence over it, first set wins
	Secret bool      // never printed; the file must not be readable by others
	Path   bool      // "~/" is expanded to the home directory
	Help   string    // one line, for `config show` and the docs
}

// Keys of the openai section that are options of an openai embedder spec.
var openAIRuntimeOptions = []string{"batch", "concurrency", "request_tokens", "retries", "timeout"}

// globalKeys are the top-level keys and the openai section.
var globalKeys = []Key{
	{Name: "dir", Flag: "dir", Env: []string{"RAGMEM_DIR"}, Path: true, Help: "data directory"},
	{Name: "embedder", Flag: "embedder", Env: []string{"RAGMEM_EMBEDDER"}, Help: "embedder spec (a store built with another refuses it)"},
	{Name: "memories", Env: []string{"RAGMEM_MEMORIES"}, Path: true, Help: "agent-memory directory (default <data dir>/memories)"},
	{Name: "backend", Flag: "backend", Env: []string{"RAGMEM_BACKEND"}, Help: "storage backend: local or weaviate"},
	{Name: "weaviate.url", Flag: "weaviate-url", Env: []string{"RAGMEM_WEAVIATE_URL"}, Help: "Weaviate server URL"},
	{Name: "weaviate.namespace", Flag: "weaviate-namespace", Env: []string{"RAGMEM_WEAVIATE_NAMESPACE"}, Help: "Weaviate namespace"},
	{Name: "weaviate.consistency", Flag: "weaviate-consistency", Help: "Weaviate consistency level"},
	{Name: "weaviate.api_key", Flag: "weaviate-api-key", Env: []string{"WEAVIATE_API_KEY"}, Secret: true, Help: "Weaviate API key"},
	{Name: "reranker", Flag: "reranker", Env: []string{"RAGMEM_RERANKER"}, Help: "URL of a /rerank endpoint that reorders the fused top results (default none)"},
	{Name: "reranker_api", Flag: "reranker-api", Help: "the reranker's request shape: cohere or tei (default by the URL)"},
	{Name: "reranker_model", Flag: "reranker-model", Help: "the reranker's model name"},
	{Name: "reranker_api_key", Flag: "reranker-api-key", Env: []string{"RAGMEM_RERANKER_API_KEY"}, Secret: true, Help: "API key sent to the reranker"},
	{Name: "reranker_top", Flag: "reranker-top", Help: "fused results the reranker reorders (default 50)"},
	{Name: "reranker_timeout", Flag: "reranker-timeout", Help: "timeout of one rerank call (default 3s)"},
	{Name: "openai.base_url", Flag: "base-url", Env: []string{"OPENAI_BASE_URL"}, Help: "API root of OpenAI-compatible embedders (and chat models)"},
	{Name: "openai.api_key_env", Help: "environment variable holding the API key (default OPENAI_API_KEY)"},
	{Name: "openai.api_key", Flag: "api-key", Secret: true, Help: "API key, if not in the environment"},
	{Name: "openai.headers", Kind: MapValue, Secret: true, Help: "extra HTTP headers for the embedding server"},
	{Name: "openai.batch", Help: "texts per embeddings request (default 64, at most 2048)"},
	{Name: "openai.concurrency", Help: "embeddings requests in flight (default 4)"},
	{Name: "openai.request_tokens", Help: "estimated tokens per embeddings request (default 300000)"},
	{Name: "openai.retries", Help: "retries after 429, 5xx or network errors (default 5; 0: none)"},
	{Name: "openai.timeout", Help: "timeout of one embeddings request (default 60s)"},
}

// Schema is the set of keys a config file may hold: the global ones and,
// for each command of Sections, a section of that command's flags (keys are
// the flag names with '_' for '-'). Sections builds a fresh flag set of the
// command for each call (main gives serve's and mcp's).
type Schema struct {
	Sections map[string]func() *pflag.FlagSet
}

// sectionSkips are command flags that are not config keys.
var sectionSkips = map[string]bool{"mcp.memories": true, "serve.memories": true} // the top-level "memories" key

// pathFlags are command flags whose values are paths.
var pathFlags = map[string]bool{"serve.tls_cert": true, "serve.tls_key": true}

// Keys returns every config key, top-level and section, sorted by name.
func (sc Schema) Keys() []Key {
	keys := slices.Clone(globalKeys)
	for sec, flags := range sc.Sections {
		flags().VisitAll(func(f *pflag.Flag) {
			name := sec + "." + strings.ReplaceAll(f.Name, "-", "_")
			if sectionSkips[name] || f.Name == "help" || f.Hidden {
				return
			}
			k := Key{Name: name, Flag: f.Name, Path: pathFlags[name], Help: firstLine(f.Usage)}
			if strings.HasSuffix(f.Value.Type(), "Array") || strings.HasSuffix(f.Value.Type(), "Slice") {
				k.Kind = ListValue
			}
			keys = append(keys, k)
		})
	}
	slices.SortFunc(keys, func(a, b Key) int { return strings.Compare(a.Name, b.Name) })
	return keys
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// Value is one value read from the file.
type Value struct {
	Line   int
	Scalar string
	List   []string
	Map    map[string]string
}

// File is the loaded config file (Found false: there is none).
type File struct {
	Path   string
	Source string // where the path came from: "--config", "$RAGMEM_CONFIG" or "default location"
	Found  bool
	values map[string]Value
	keys   map[string]Key
}

// Get returns the value of the key name, if the file sets it.
func (c *File) Get(name string) (Value, bool) {
	if c == nil {
		return Value{}, false
	}
	v, ok := c.values[name]
	return v, ok
}

// Where names a value's place in the file, "path:line".
func (c *File) Where(v Value) string {
	return c.Path + ":" + strconv.Itoa(v.Line)
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

// Locate returns the config path and where it came from; explicit is
// true when the user named it (then it must exist). The path is "" when
// there is no home directory to look in.
func Locate(flag string) (path, source string, explicit bool) {
	if flag != "" {
		return ExpandHome(flag), "--config", true
	}
	if p := os.Getenv("RAGMEM_CONFIG"); p != "" {
		return ExpandHome(p), "$RAGMEM_CONFIG", true
	}
	p, err := defaultConfigPath()
	if err != nil {
		return "", "default location", false
	}
	return p, "default location", false
}

// Load reads the config file the flag, the environment or the default
// location names. warn receives a warning about its permissions.
func (sc Schema) Load(flag string, warn io.Writer) (*File, error) {
	path, source, explicit := Locate(flag)
	c := &File{Path: path, Source: source, values: map[string]Value{}}
	if path == "" {
		return c, nil
	}
	// It names the embedder's endpoint and may hold its key: read only a
	// file of the user's that no one else may write (internal/perm).
	if err := perm.CheckTarget(path); err != nil {
		return nil, fmt.Errorf("%w file %s (from %s): %w", ErrConfig, path, source, err)
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && !explicit {
			return c, nil
		}
		return nil, fmt.Errorf("%w file %s (from %s): %w", ErrConfig, path, source, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w file %s: %w", ErrConfig, path, err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%w file %s (from %s) is a directory", ErrConfig, path, source)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w file %s: %w", ErrConfig, path, err)
	}
	if len(data) > maxConfigBytes {
		return nil, fmt.Errorf("%w file %s is larger than %d bytes", ErrConfig, path, maxConfigBytes)
	}
	c.Found = true
	if c.values, c.keys, err = sc.Parse(data); err != nil {
		return nil, fmt.Errorf("%w file %s%w", ErrConfig, path, err)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		var secrets []string
		for name, v := range c.values {
			if c.keys[name].Secret && (v.Scalar != "" || len(v.Map) > 0) {
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

// Parse reads a config file: a YAML mapping of known keys (sections
// are nested mappings). Unknown keys, duplicates, anchors, aliases, values
// of the wrong shape and invalid values are errors with their line.
func (sc Schema) Parse(data []byte) (map[string]Value, map[string]Key, error) {
	keys := map[string]Key{}
	for _, k := range sc.Keys() {
		keys[k.Name] = k
	}
	values := map[string]Value{}
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
		if err := sc.checkValue(keys[name], v); err != nil {
			return nil, nil, atLine(v.Line, "%s: %v", name, err)
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
func walkConfig(n *yaml.Node, prefix string, keys map[string]Key, values map[string]Value) error {
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

func isSection(name string, keys map[string]Key) bool {
	for k := range keys {
		if strings.HasPrefix(k, name+".") {
			return true
		}
	}
	return false
}

// suggest names a known key close to an unknown one.
func suggest(name string, keys map[string]Key) string {
	norm := func(s string) string { return strings.NewReplacer("-", "_", " ", "_").Replace(strings.ToLower(s)) }
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if norm(name) == k || strings.HasSuffix(k, "."+norm(name)) {
			return fmt.Sprintf(" (did you mean %s?)", k)
		}
	}
	return ""
}

// readValue reads a key's value node; nil for an explicit null (unset).
func readValue(k Key, n *yaml.Node) (*Value, error) {
	if err := plain(n); err != nil {
		return nil, err
	}
	v := &Value{Line: n.Line}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, nil
	}
	scalar := func(n *yaml.Node) (string, error) {
		if err := plain(n); err != nil {
			return "", err
		}
		if n.Kind != yaml.ScalarNode {
			return "", atLine(n.Line, "%s: want a single value", k.Name)
		}
		return n.Value, nil
	}
	switch k.Kind {
	case ScalarValue:
		s, err := scalar(n)
		if err != nil {
			return nil, err
		}
		v.Scalar = s
	case ListValue:
		switch n.Kind {
		case yaml.ScalarNode:
			v.List = []string{n.Value}
		case yaml.SequenceNode:
			for _, c := range n.Content {
				s, err := scalar(c)
				if err != nil {
					return nil, err
				}
				v.List = append(v.List, s)
			}
		default:
			return nil, atLine(n.Line, "%s: want a list of values", k.Name)
		}
	case MapValue:
		if n.Kind != yaml.MappingNode {
			return nil, atLine(n.Line, "%s: want a mapping of names to values", k.Name)
		}
		v.Map = map[string]string{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			name, err := scalar(n.Content[i])
			if err != nil {
				return nil, err
			}
			val, err := scalar(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			if _, dup := v.Map[name]; dup {
				return nil, atLine(n.Content[i].Line, "%s: %q is given twice", k.Name, truncate(name, 64))
			}
			v.Map[name] = val
		}
	}
	if k.Path {
		v.Scalar = ExpandHome(v.Scalar)
	}
	return v, nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// checkValue validates a value the way its flag or embedder option would.
func (sc Schema) checkValue(k Key, v Value) error {
	switch {
	case k.Name == "embedder":
		_, err := embed.ParseSpec(v.Scalar)
		return err
	case k.Name == "openai.base_url":
		return embed.Spec{Kind: embed.KindOpenAI, Model: "m", BaseURL: v.Scalar}.Validate()
	case k.Name == "openai.api_key_env":
		if !envName.MatchString(v.Scalar) {
			return fmt.Errorf("%q is not an environment variable name", truncate(v.Scalar, 64))
		}
		return nil
	case k.Name == "openai.headers":
		_, err := embed.NewOpenAI(embed.OpenAIOptions{Model: "m", BaseURL: "http://localhost/v1", Headers: v.Map})
		return err
	case strings.HasPrefix(k.Name, "openai.") && slices.Contains(openAIRuntimeOptions, strings.TrimPrefix(k.Name, "openai.")):
		return embed.Spec{Kind: embed.KindOpenAI, Model: "m", Options: map[string]string{strings.TrimPrefix(k.Name, "openai."): v.Scalar}}.Validate()
	case k.Flag != "":
		f := sc.ScratchFlags(k).Lookup(k.Flag)
		if f == nil {
			return nil
		}
		vals := v.List
		if k.Kind == ScalarValue {
			vals = []string{v.Scalar}
		}
		for _, s := range vals {
			if err := f.Value.Set(s); err != nil {
				return err
			}
		}
	}
	return nil
}

// ScratchFlags returns a fresh flag set holding k's flag, to validate
// values and read defaults.
func (sc Schema) ScratchFlags(k Key) *pflag.FlagSet {
	if sec, _, ok := strings.Cut(k.Name, "."); ok {
		if mk, ok := sc.Sections[sec]; ok {
			return mk()
		}
	}
	fs := pflag.NewFlagSet("scratch", pflag.ContinueOnError)
	(&Settings{}).AddFlags(fs)
	return fs
}

// ExpandHome replaces a leading "~/" with the home directory.
func ExpandHome(p string) string {
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
