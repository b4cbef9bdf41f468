package settings

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/embed"
)

// testSchema has one section, "serve", of a flag set with a duration, a
// list and a path flag.
var testSchema = Schema{Sections: map[string]func() *pflag.FlagSet{
	"serve": func() *pflag.FlagSet {
		f := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		f.Duration("shutdown-timeout", 0, "how long to wait\nsecond line")
		f.StringArray("allow-origin", nil, "origins")
		f.String("tls-cert", "", "certificate")
		return f
	},
}}

// load writes text as a config file (mode 0600) and loads it.
func load(t *testing.T, text string) *File {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := testSchema.Load(p, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestSchemaKeys(t *testing.T) {
	keys := map[string]Key{}
	for _, k := range testSchema.Keys() {
		keys[k.Name] = k
	}
	if k := keys["serve.allow_origin"]; k.Kind != ListValue || k.Flag != "allow-origin" {
		t.Errorf("serve.allow_origin: %+v", k)
	}
	if k := keys["serve.tls_cert"]; !k.Path {
		t.Errorf("serve.tls_cert is not a path: %+v", k)
	}
	if k := keys["serve.shutdown_timeout"]; k.Help != "how long to wait" {
		t.Errorf("serve.shutdown_timeout's help is its usage's first line, got %q", k.Help)
	}
	if _, ok := keys["dir"]; !ok {
		t.Error("the global keys are missing")
	}
	for _, c := range []struct{ yaml, want string }{
		{"serve:\n  shutdown_timeout: soon\n", ":2: serve.shutdown_timeout: "},
		{"serve:\n  allow-origin: x\n", `:2: unknown key "serve.allow-origin" (did you mean serve.allow_origin?)`},
		{"weaviate:\n  consistency: [a]\n", ":2: weaviate.consistency: want a single value"},
	} {
		if _, _, err := testSchema.Parse([]byte(c.yaml)); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want an error starting %q", c.yaml, err, c.want)
		}
	}
}

// TestResolveEmbedderLayers: the kind and model come from the highest
// level that names an embedder (flags, environment, config file, store,
// default); each option and the base URL from the highest level naming
// the same model; the API key never from the store.
func TestResolveEmbedderLayers(t *testing.T) {
	for _, v := range []string{"RAGMEM_EMBEDDER", "OPENAI_BASE_URL", "OPENAI_API_KEY", "MY_KEY"} {
		t.Setenv(v, "")
	}
	cfg := load(t, "embedder: openai:m,concurrency=2\nopenai:\n  base_url: http://cfg.example/v1\n  api_key_env: MY_KEY\n  retries: 3\n  api_key: from-file\n")
	stored, err := embed.ParseSpec("openai:m,dim=64,concurrency=8,base=http://store.example/v1")
	if err != nil {
		t.Fatal(err)
	}
	rec := &index.EmbedderRecord{Spec: &stored}
	s := &Settings{Cfg: cfg, Stderr: io.Discard, Embedder: "openai:m,retries=4"}
	c, err := s.ResolveEmbedder(rec)
	if err != nil {
		t.Fatal(err)
	}
	where := cfg.Path + ":"
	want := map[string][2]string{"dim": {"64", SrcStore}, "concurrency": {"2", where + "1"}, "retries": {"4", "--embedder"}}
	for k, w := range want {
		if got := [2]string{c.Spec.Options[k], c.OptionFrom[k]}; got != w {
			t.Errorf("option %s = %v, want %v", k, got, w)
		}
	}
	if c.From != "--embedder" || c.Spec.BaseURL != "http://cfg.example/v1" || !strings.HasPrefix(c.BaseFrom, where) {
		t.Errorf("from %s, base %s from %s", c.From, c.Spec.BaseURL, c.BaseFrom)
	}
	if c.Build.APIKey != "from-file" || c.KeyEnv != "MY_KEY" {
		t.Errorf("key %q (env %s)", c.Build.APIKey, c.KeyEnv)
	}
	t.Setenv("MY_KEY", "from-env")
	t.Setenv("OPENAI_BASE_URL", "http://env.example/v1")
	if c, err = s.ResolveEmbedder(rec); err != nil || c.Build.APIKey != "from-env" || c.KeyFrom != "$MY_KEY" || c.Spec.BaseURL != "http://env.example/v1" {
		t.Errorf("the environment's key and base URL: %+v, %v", c, err)
	}
	s.APIKey, s.BaseURL = "from-flag", "http://flag.example/v1"
	if c, err = s.ResolveEmbedder(rec); err != nil || c.Build.APIKey != "from-flag" || c.Spec.BaseURL != "http://flag.example/v1" || c.BaseFrom != "--base-url" {
		t.Errorf("the flags' key and base URL: %+v, %v", c, err)
	}

	// Another model named higher up takes none of the store's options.
	t.Setenv("OPENAI_BASE_URL", "")
	s = &Settings{Cfg: &File{}, Stderr: io.Discard, Embedder: "openai:other"}
	if c, err = s.ResolveEmbedder(rec); err != nil || c.Spec.Options["dim"] != "" || c.Spec.BaseURL != "" || c.From != "--embedder" {
		t.Errorf("another model: %+v, %v", c, err)
	}
	// Nothing named: the store's, else the lexical default.
	s.Embedder = ""
	if c, err = s.ResolveEmbedder(rec); err != nil || c.From != SrcStore || c.Spec.Options["dim"] != "64" || c.Spec.BaseURL != "http://store.example/v1" {
		t.Errorf("the store's: %+v, %v", c, err)
	}
	if c, err = s.ResolveEmbedder(nil); err != nil || c.Spec.Kind != embed.KindLexical || c.From != SrcDefault {
		t.Errorf("the default: %+v, %v", c, err)
	}
	// A bad spec says where it came from.
	t.Setenv("RAGMEM_EMBEDDER", "bert")
	if _, err = s.ResolveEmbedder(nil); err == nil || !strings.HasPrefix(err.Error(), "$RAGMEM_EMBEDDER: ") {
		t.Errorf("a bad $RAGMEM_EMBEDDER: %v", err)
	}
}
