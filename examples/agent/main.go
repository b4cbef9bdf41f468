// Command agent is an example of ragmem's agent loop (package agent) against
// any OpenAI-compatible chat server: OpenAI, Ollama, vLLM, LM Studio or
// llama.cpp. It answers one goal with the memory in the ragmem data
// directory, streaming the answer to stdout.
//
//	ragmem index ~/notes                    # build a memory first
//	export OPENAI_API_KEY=sk-...
//	go run ./examples/agent "What did I write about hybrid search?"
//
//	# a local model through Ollama, a page to discuss, and web search through SearXNG
//	go run ./examples/agent -base-url http://localhost:11434/v1 -model llama3.1 \
//	    -page article.html -page-url https://example.com/article \
//	    -searxng http://localhost:8888 "Summarise this article and check it against the web"
//
// Flags fall back to environment variables: OPENAI_BASE_URL, OPENAI_API_KEY,
// OPENAI_MODEL, RAGMEM_DIR, RAGMEM_EMBEDDER, SEARXNG_URL and BRAVE_API_KEY.
// If the memory cannot be opened (for example `ragmem mcp` holds its lock),
// the agent says why on stderr and answers without it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ragmem/ragmem/agent"
	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/rag"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
}

func env(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func defaultDir() string {
	if d := os.Getenv("RAGMEM_DIR"); d != "" {
		return d
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "ragmem")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "ragmem")
	}
	return "ragmem-data"
}

// flags are the command's flags.
type flags struct {
	baseURL, apiKey, model, dir, embedder, system string
	contextLimit, rounds                          int
	pagePath, pageURL, searxng, braveKey          string
	verbose                                       bool
}

// parseFlags reads the flags and the goal (the other arguments).
func parseFlags(args []string, stderr io.Writer) (*flags, string, error) {
	var f flags
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.baseURL, "base-url", env("OPENAI_BASE_URL", "https://api.openai.com/v1"), "OpenAI-compatible API root")
	fs.StringVar(&f.apiKey, "api-key", os.Getenv("OPENAI_API_KEY"), "API key (may be empty for local servers)")
	fs.StringVar(&f.model, "model", env("OPENAI_MODEL", "gpt-4o-mini"), "chat model")
	fs.StringVar(&f.dir, "dir", defaultDir(), "ragmem data directory")
	fs.StringVar(&f.embedder, "embedder", env("RAGMEM_EMBEDDER", "lexical"), "embedder the memory was built with")
	fs.StringVar(&f.system, "system", "", "system prompt (default: agent.DefaultSystemPrompt)")
	fs.IntVar(&f.contextLimit, "context-limit", 0, "model context window in tokens (default: known for the model, else 8192)")
	fs.StringVar(&f.pagePath, "page", "", "a file (text, Markdown or HTML) the goal is about; it is indexed after the answer")
	fs.StringVar(&f.pageURL, "page-url", "", "the page's URL (default: its file:// URL)")
	fs.StringVar(&f.searxng, "searxng", os.Getenv("SEARXNG_URL"), "SearXNG instance for the web search tool")
	fs.StringVar(&f.braveKey, "brave-key", os.Getenv("BRAVE_API_KEY"), "Brave Search API key for the web search tool")
	fs.IntVar(&f.rounds, "max-tool-rounds", 0, "tool-call rounds (default 4; -1 disables tools)")
	fs.BoolVar(&f.verbose, "v", false, "log debug information")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: agent [flags] GOAL")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, "", err
	}
	goal := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if goal == "" {
		fs.Usage()
		return nil, "", errors.New("no goal given")
	}
	return &f, goal, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, goal, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	oc := openai.DefaultConfig(f.apiKey)
	oc.BaseURL = strings.TrimRight(f.baseURL, "/")
	cfg := agent.Config{
		LLM:               rag.LLM{Client: openai.NewClientWithConfig(oc), Model: f.model},
		SystemPrompt:      f.system,
		ModelContextLimit: f.contextLimit,
		MaxToolRounds:     f.rounds,
		Logger:            log,
		OnToken:           func(s string) { io.WriteString(stdout, s) },
		OnToolCall:        func(name, args string) { fmt.Fprintf(stderr, "[tool] %s %s\n", name, args) },
	}
	if cfg.WebSearcher, err = webSearcher(f); err != nil {
		return err
	}
	if cfg.Page, err = readPage(f.pagePath, f.pageURL); err != nil {
		return err
	}

	// The memory is optional: if it cannot be opened, answer without it.
	emb, err := embed.Parse(f.embedder)
	if err == nil {
		var eng *rag.Engine
		eng, err = rag.Open(ctx, f.dir, &rag.Options{Embedder: emb, Logger: log})
		if err == nil {
			defer eng.Close() // waits for the page being indexed
			cfg.Memory = eng
		}
	}
	cfg.MemoryErr = err

	res, err := agent.Run(ctx, goal, cfg)
	fmt.Fprintln(stdout)
	if res != nil {
		report(res, f.verbose, stdout, stderr)
	}
	return err
}

// webSearcher is the web search the flags name: SearXNG, else Brave, else
// none (nil: no web tool).
func webSearcher(f *flags) (agent.WebSearcher, error) {
	switch {
	case f.searxng != "":
		return agent.NewSearXNG(f.searxng, nil)
	case f.braveKey != "":
		return agent.NewBrave(f.braveKey, nil)
	}
	return nil, nil
}

// readPage reads the page the goal is about (nil when path is empty); its
// URL defaults to the file's file:// URL.
func readPage(path, pageURL string) (*agent.Page, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, _ := chunk.FormatForPath(path)
	if pageURL == "" {
		abs, _ := filepath.Abs(path)
		pageURL = (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
	}
	return &agent.Page{URL: pageURL, Content: string(b), Format: f}, nil
}

// report prints what follows the answer: the web searches' disclaimers and
// citations on stdout, and with verbose the budgets, then the indexing job
// on stderr.
func report(res *agent.Result, verbose bool, stdout, stderr io.Writer) {
	for _, s := range res.Searches {
		if s.ConflictDisclaimer != "" {
			fmt.Fprintln(stdout, "\n"+s.ConflictDisclaimer)
		}
		if len(s.Citations) > 0 {
			fmt.Fprintln(stdout, "\nSources:\n"+agent.FormatCitations(s.Citations))
		}
	}
	if verbose {
		fmt.Fprintf(stderr, "[budget] window %d, system %d, user %d, knowledge budget %d; %d model calls\n",
			res.ModelContextLimit, res.SystemPromptTokens, res.UserMessageTokens, res.Budgets.KnowledgeBudget, res.Rounds)
	}
	if res.IndexJob != "" {
		fmt.Fprintf(stderr, "[memory] page queued for indexing (job %s)\n", res.IndexJob)
	}
}
