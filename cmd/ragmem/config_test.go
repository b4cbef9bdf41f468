package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/settings"
)

func TestParseConfigErrors(t *testing.T) {
	cases := []struct {
		yaml, want string
	}{
		{"dir: /x\nembeder: lexical\n", `:2: unknown key "embeder"`},
		{"openai:\n  base_url: http://h/v1\n  apikey: x\n", `:3: unknown key "openai.apikey"`},
		{"serve:\n  addr: 127.0.0.1:1\n  allow-origin: x\n", `:3: unknown key "serve.allow-origin" (did you mean serve.allow_origin?)`},
		{"serve:\n  rate_limit: fast\n", `:2: serve.rate_limit: `},
		{"serve:\n  shutdown_timeout: 10\n", `:2: serve.shutdown_timeout: `},
		{"embedder: bert\n", `:1: embedder: embed: bad embedder spec: unknown kind "bert"`},
		{"openai:\n  concurrency: 0\n", `:2: openai.concurrency: `},
		{"openai:\n  timeout: soon\n", `:2: openai.timeout: `},
		{"openai:\n  api_key_env: 1BAD\n", `:2: openai.api_key_env: "1BAD" is not an environment variable name`},
		{"openai:\n  headers: {\"Bad Name\": x}\n", `:2: openai.headers: `},
		{"openai:\n  base_url: ftp://h\n", `:2: openai.base_url: `},
		{"dir: /a\ndir: /b\n", `:2: dir is given twice`},
		{"dir: [a, b]\n", `:1: dir: want a single value`},
		{"serve: 3\n", `:1: serve must be a mapping of keys to values`},
		{"- a\n- b\n", `:1: the file must be a mapping of keys to values`},
		{"dir: &b /x\nmemories: *b\n", `:1: YAML anchors and aliases are not allowed`},
		{"dir: /x\nmemories: *b\n", `: unknown anchor 'b' referenced`},
		{"dir: /x\n---\ndir: /y\n", `:2: only one YAML document is allowed`},
		{"dir: \"unterminated\n", `:2: found unexpected end of stream`},
		{"openai:\n  headers: [a]\n", `:2: openai.headers: want a mapping of names to values`},
	}
	for _, c := range cases {
		_, _, err := configSchema.Parse([]byte(c.yaml))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want an error starting %q", c.yaml, err, c.want)
		}
	}
}

func TestParseConfigValues(t *testing.T) {
	vals, _, err := configSchema.Parse([]byte(`
# comment
dir: ~/mem
embedder: openai:nomic-embed-text,dim=768
openai:
  base_url: http://localhost:11434/v1
  api_key_env: OLLAMA_KEY
  headers:
    X-Org: team
  concurrency: 8
  timeout: 30s
weaviate:
  url: http://127.0.0.1:8080
serve:
  addr: 127.0.0.1:9000
  allow_origin: [chrome-extension://abc, moz-extension://def]
  rate_limit: 2.5
  mcp: true
mcp:
  read_only: true
memories: null
`))
	if err != nil {
		t.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	if v := vals["dir"]; v.Scalar != filepath.Join(home, "mem") || v.Line != 3 {
		t.Errorf("dir %+v", v)
	}
	if v := vals["serve.allow_origin"]; len(v.List) != 2 || v.List[1] != "moz-extension://def" || v.Line != 16 {
		t.Errorf("allow_origin %+v", v)
	}
	if v := vals["openai.headers"]; v.Map["X-Org"] != "team" {
		t.Errorf("headers %+v", v)
	}
	if _, ok := vals["memories"]; ok {
		t.Errorf("null value kept")
	}
	for _, empty := range []string{"", "# only a comment\n", "---\n"} {
		if vals, _, err := configSchema.Parse([]byte(empty)); err != nil || len(vals) != 0 {
			t.Errorf("Parse(%q) = %v, %v", empty, vals, err)
		}
	}
}

// TestConfigTemplateAndREADMEExample parse what `config init` writes and the
// example file of docs/configuration.md.
func TestConfigTemplateAndREADMEExample(t *testing.T) {
	if _, _, err := configSchema.Parse([]byte(configTemplate)); err != nil {
		t.Errorf("template: %v", err)
	}
	// Uncommented, the template's settings are valid too.
	var b strings.Builder
	for _, line := range strings.Split(configTemplate, "\n") {
		if rest, ok := strings.CutPrefix(line, "# "); ok && regexp.MustCompile(`^\s*[a-z_A-Z-]+:`).MatchString(rest) {
			line = rest
		}
		b.WriteString(line + "\n")
	}
	vals, _, err := configSchema.Parse([]byte(b.String()))
	if err != nil {
		t.Errorf("uncommented template: %v\n%s", err, b.String())
	} else if len(vals) < 20 {
		t.Errorf("uncommented template has %d settings", len(vals))
	}
	readme, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(# ~/.config/ragmem/config.yaml.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("docs/configuration.md has no example config file (a yaml block starting with # ~/.config/ragmem/config.yaml)")
	}
	if vals, _, err := configSchema.Parse(m[1]); err != nil || len(vals) == 0 {
		t.Errorf("docs/configuration.md example: %v, %d settings", err, len(vals))
	}
}

// TestConfigKeysDocumented keeps docs/configuration.md listing every key.
func TestConfigKeysDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range configSchema.Keys() {
		if !strings.Contains(string(doc), "`"+k.Name+"`") {
			t.Errorf("docs/configuration.md does not list the config key %s", k.Name)
		}
	}
}

func writeConfig(t *testing.T, text string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// showSettings runs `config show --json` and returns key -> [value, source].
func showSettings(t *testing.T, args ...string) map[string][2]string {
	t.Helper()
	out := mustRun(t, append(args, "config", "show", "--json")...)
	var res struct {
		ConfigFile map[string]string `json:"configFile"`
		Settings   []settings.Row    `json:"settings"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	m := map[string][2]string{"config file": {res.ConfigFile["path"], res.ConfigFile["status"]}}
	for _, r := range res.Settings {
		m[r.Key] = [2]string{r.Value, r.Source}
	}
	return m
}

// TestConfigPrecedence checks flags > environment > config file > store >
// default for the data directory, the embedder, an embedder option, the
// base URL, the API key and a serve setting.
func TestConfigPrecedence(t *testing.T) {
	for _, v := range []string{"RAGMEM_DIR", "RAGMEM_EMBEDDER", "OPENAI_BASE_URL", "OPENAI_API_KEY", "MY_KEY", "RAGMEM_BACKEND"} {
		t.Setenv(v, "")
	}
	store := t.TempDir()
	// The store records openai:m with concurrency 2 and its base URL.
	var calls atomic.Int64
	srv := fakeEmbeddings(t, &calls)
	defer srv.Close()
	docs := t.TempDir()
	writeFile(t, filepath.Join(docs, "a.md"), "Some text to embed.\n")
	mustRun(t, "--dir", store, "--embedder", "openai:m,concurrency=2", "--base-url", srv.URL+"/v1", "index", docs)

	s := showSettings(t, "--dir", store)
	if s["embedder"] != [2]string{"openai:m,concurrency=2,dim=64,base=" + srv.URL + "/v1", settings.SrcStore} ||
		s["embedder.concurrency"] != [2]string{"2", settings.SrcStore} || s["openai.base_url"] != [2]string{srv.URL + "/v1", settings.SrcStore} {
		t.Errorf("store level: %v %v %v", s["embedder"], s["embedder.concurrency"], s["openai.base_url"])
	}
	if s["openai.api_key"] != [2]string{"(not set)", settings.SrcDefault} || s["backend"] != [2]string{"local", settings.SrcDefault} {
		t.Errorf("defaults: %v %v", s["openai.api_key"], s["backend"])
	}

	cfg := writeConfig(t, `dir: /config/dir
backend: weaviate
embedder: openai:m,retries=2
openai:
  base_url: http://config.example/v1
  api_key_env: MY_KEY
  api_key: sk-config-0000
  concurrency: 3
serve:
  rate_limit: 3
  rate_burst: 9
`, 0o600)
	s = showSettings(t, "--config", cfg, "--dir", store, "--backend", "local")
	if s["embedder.concurrency"] != [2]string{"3", cfg + ":8"} || s["openai.base_url"] != [2]string{"http://config.example/v1", cfg + ":5"} ||
		s["openai.api_key"] != [2]string{"[redacted]", cfg + ":7"} || s["embedder"][1] != cfg+":3" || s["embedder.retries"] != [2]string{"2", cfg + ":3"} ||
		s["embedder.dim"] != [2]string{"64", settings.SrcStore} {
		t.Errorf("config over store: %v %v %v %v %v", s["embedder"], s["embedder.concurrency"], s["openai.base_url"], s["openai.api_key"], s["embedder.retries"])
	}
	if s["dir"] != [2]string{store, "--dir"} || s["backend"] != [2]string{"local", "--backend"} {
		t.Errorf("flags over config: %v %v", s["dir"], s["backend"])
	}
	if s["serve.rate_limit"] != [2]string{"3", cfg + ":10"} {
		t.Errorf("serve.rate_limit %v", s["serve.rate_limit"])
	}

	t.Setenv("OPENAI_BASE_URL", "http://env.example/v1")
	t.Setenv("MY_KEY", "sk-env-1111")
	t.Setenv("RAGMEM_EMBEDDER", "openai:m,concurrency=5")
	t.Setenv("RAGMEM_BACKEND", "local")
	s = showSettings(t, "--config", cfg, "--dir", store)
	if s["embedder.concurrency"] != [2]string{"5", "$RAGMEM_EMBEDDER"} || s["openai.base_url"] != [2]string{"http://env.example/v1", "$OPENAI_BASE_URL"} ||
		s["openai.api_key"][1] != "$MY_KEY" || s["embedder"][1] != "$RAGMEM_EMBEDDER" || s["backend"] != [2]string{"local", "$RAGMEM_BACKEND"} {
		t.Errorf("environment over config: %v", s)
	}
	// The store's own options still complete a spec that names its model.
	if s["embedder.dim"] != [2]string{"64", settings.SrcStore} {
		t.Errorf("dim %v", s["embedder.dim"])
	}

	if s["embedder.retries"] != [2]string{"2", cfg + ":3"} {
		t.Errorf("retries %v", s["embedder.retries"])
	}
	s = showSettings(t, "--config", cfg, "--dir", store, "--embedder", "openai:m,concurrency=7,retries=4", "--base-url", "http://flag.example/v1", "--api-key", "sk-flag-2222")
	if s["embedder.concurrency"] != [2]string{"7", "--embedder"} || s["openai.base_url"] != [2]string{"http://flag.example/v1", "--base-url"} ||
		s["openai.api_key"] != [2]string{"[redacted]", "--api-key"} || s["embedder.retries"] != [2]string{"4", "--embedder"} {
		t.Errorf("flags over environment: %v %v %v", s["embedder.concurrency"], s["openai.base_url"], s["openai.api_key"])
	}
	out := mustRun(t, "--config", cfg, "--dir", store, "--api-key", "sk-flag-2222", "config", "show")
	for _, secret := range []string{"sk-flag-2222", "sk-env-1111", "sk-config-0000"} {
		if strings.Contains(out, secret) {
			t.Errorf("config show printed a secret:\n%s", out)
		}
	}

	// The serve section reaches ragmem serve's flags, below its own flags.
	t.Setenv("RAGMEM_EMBEDDER", "")
	root := newRootCmd()
	root.SetArgs([]string{"--config", cfg, "serve", "--rate-burst", "7"})
	serve, _, err := root.Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	serve.RunE = func(cmd *cobra.Command, args []string) error { return nil }
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if got := serve.Flags().Lookup("rate-limit").Value.String(); got != "3" {
		t.Errorf("serve --rate-limit from the config file: %s", got)
	}
	if got := serve.Flags().Lookup("rate-burst").Value.String(); got != "7" {
		t.Errorf("serve --rate-burst: %s, the flag must win", got)
	}
}

// TestStoreRemembersItsEmbedder is the user's story: index once with a dense
// OpenAI-compatible embedder, then use the store with no embedder flags.
func TestStoreRemembersItsEmbedder(t *testing.T) {
	for _, v := range []string{"RAGMEM_EMBEDDER", "OPENAI_BASE_URL", "RAGMEM_DIR"} {
		t.Setenv(v, "")
	}
	t.Setenv("OPENAI_API_KEY", "sk-test-key-123456")
	var calls atomic.Int64
	srv := fakeEmbeddings(t, &calls)
	defer srv.Close()
	inner := srv.Config.Handler
	var unauthorized atomic.Int64
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-test-key-123456" {
			unauthorized.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`))
			return
		}
		inner.ServeHTTP(w, r)
	})
	dir := t.TempDir()
	docs := t.TempDir()
	writeFile(t, filepath.Join(docs, "otters.md"), "# Otters\n\nOtters hold hands while they sleep so that they do not drift apart.\n")
	writeFile(t, filepath.Join(docs, "tea.md"), "# Tea\n\nGreen tea leaves are steamed; black tea leaves are oxidised.\n")
	mustRun(t, "--dir", dir, "--embedder", "openai:fake-embed", "--base-url", srv.URL+"/v1", "index", docs)

	// No --embedder, no --base-url: the store's own.
	before := calls.Load()
	out := mustRun(t, "--dir", dir, "search", "--mode", "vector", "--json", "why do otters hold hands")
	if !strings.Contains(out, "otters.md") || calls.Load() != before+1 {
		t.Errorf("vector search without flags: %d calls\n%s", calls.Load()-before, out)
	}
	st := mustRun(t, "--dir", dir, "stats", "--json")
	if !strings.Contains(st, `"embedderSpec": "openai:fake-embed,dim=64,base=`+srv.URL+`/v1"`) || strings.Contains(st, "sk-test") {
		t.Errorf("stats: %s", st)
	}
	// Naming the same embedder works; naming another fails clearly.
	mustRun(t, "--dir", dir, "--embedder", "openai:fake-embed", "search", "tea")
	_, _, err := runCLI(t, "--dir", dir, "--embedder", "lexical", "search", "tea")
	if !errors.Is(err, engine.ErrEmbedderMismatch) || !strings.Contains(err.Error(), "came from --embedder") ||
		!strings.Contains(err.Error(), "without it ragmem uses the store's own, openai:fake-embed") {
		t.Errorf("another embedder: %v", err)
	}
	t.Setenv("RAGMEM_EMBEDDER", "randproj")
	if _, _, err := runCLI(t, "--dir", dir, "search", "tea"); !errors.Is(err, engine.ErrEmbedderMismatch) || !strings.Contains(err.Error(), "came from $RAGMEM_EMBEDDER") {
		t.Errorf("another embedder from the environment: %v", err)
	}
	t.Setenv("RAGMEM_EMBEDDER", "")
	// check verifies against the store's own embedder.
	if out, _, err := runCLI(t, "--dir", dir, "check"); err != nil {
		t.Errorf("check: %v\n%s", err, out)
	}
	// The key comes from the environment, and is never recorded.
	t.Setenv("OPENAI_API_KEY", "")
	_, stderr, _ := runCLI(t, "--dir", dir, "search", "--mode", "vector", "otters")
	if !strings.Contains(stderr, "set $OPENAI_API_KEY") {
		t.Errorf("without a key: %q", stderr)
	}
	if unauthorized.Load() == 0 {
		t.Errorf("the server never saw the keyless request")
	}
	t.Setenv("OPENAI_API_KEY", "sk-test-key-123456")

	t.Run("serve", func(t *testing.T) {
		if testing.Short() {
			t.Skip("starts a server process")
		}
		s := startServeEnv(t, dir, nil)
		before := calls.Load()
		for range 3 {
			r := s.call("POST", "/v1/search", jsonBody(t, map[string]any{"query": "sleeping otters", "mode": "vector"}), false)
			if r.status != http.StatusOK || !strings.Contains(string(r.body), "otters.md") {
				t.Fatalf("search: %d %s\n%s", r.status, r.body, s.errText())
			}
		}
		if n := calls.Load() - before; n != 1 {
			t.Errorf("%d embedder calls for one question asked 3 times", n)
		}
		s.stop()
	})

	t.Run("mcp", func(t *testing.T) {
		stopOwnerAtEnd(t, dir) // the background owner ragmem mcp starts
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.Command(os.Args[0], "--dir", dir, "mcp", "--read-only")
		cmd.Env = append(os.Environ(), "RAGMEM_TEST_AS_MAIN=1")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("connect: %v\n%s", err, stderr.String())
		}
		defer cs.Close()
		before := calls.Load()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_memory", Arguments: map[string]any{"query": "oxidised black tea", "mode": "vector"}})
		if err != nil || res.IsError {
			t.Fatalf("search_memory: %v %+v\n%s", err, res, stderr.String())
		}
		b, _ := json.Marshal(res.Content)
		if !strings.Contains(string(b), "tea.md") || calls.Load() != before+1 {
			t.Errorf("mcp search: %d calls\n%s\n%s", calls.Load()-before, b, stderr.String())
		}
	})
}

// FuzzParseConfig: any input gives a config of known keys or an error, never
// a panic; an accepted file parses to the same values again.
func FuzzParseConfig(f *testing.F) {
	f.Add(configTemplate)
	f.Add("dir: ~/x\nopenai:\n  headers: {A: b}\n  concurrency: 2\nserve:\n  allow_origin: [a, b]\n")
	f.Add("dir: &a x\nmemories: *a\n")
	f.Add("- 1\n")
	f.Add("serve: {rate_limit: 1e400}\n")
	f.Add("a: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n")
	f.Fuzz(func(t *testing.T, data string) {
		done := make(chan struct{})
		go func() {
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				panic(fmt.Sprintf("Parse(%q) takes more than 5 s", data))
			}
		}()
		defer close(done)
		vals, keys, err := configSchema.Parse([]byte(data))
		if err != nil {
			if !strings.HasPrefix(err.Error(), ":") {
				t.Fatalf("error %q does not start with ':' (file:line: ...)", err)
			}
			return
		}
		for name := range vals {
			if _, ok := keys[name]; !ok {
				t.Fatalf("unknown key %q accepted", name)
			}
		}
		again, _, err := configSchema.Parse([]byte(data))
		if err != nil || len(again) != len(vals) {
			t.Fatalf("not deterministic: %v", err)
		}
	})
}
