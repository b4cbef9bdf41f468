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

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	baseURL := fs.String("base-url", env("OPENAI_BASE_URL", "https://api.openai.com/v1"), "OpenAI-compatible API root")
	apiKey := fs.String("api-key", os.Getenv("OPENAI_API_KEY"), "API key (may be empty for local servers)")
	model := fs.String("model", env("OPENAI_MODEL", "gpt-4o-mini"), "chat model")
	dir := fs.String("dir", defaultDir(), "ragmem data directory")
	embedder := fs.String("embedder", env("RAGMEM_EMBEDDER", "lexical"), "embedder the memory was built with")
	system := fs.String("system", "", "system prompt (default: agent.DefaultSystemPrompt)")
	contextLimit := fs.Int("context-limit", 0, "model context window in tokens (default: known for the model, else 8192)")
	pagePath := fs.String("page", "", "a file (text, Markdown or HTML) the goal is about; it is indexed after the answer")
	pageURL := fs.String("page-url", "", "the page's URL (default: its file:// URL)")
	searxng := fs.String("searxng", os.Getenv("SEARXNG_URL"), "SearXNG instance for the web search tool")
	braveKey := fs.String("brave-key", os.Getenv("BRAVE_API_KEY"), "Brave Search API key for the web search tool")
	rounds := fs.Int("max-tool-rounds", 0, "tool-call rounds (default 4; -1 disables tools)")
	verbose := fs.Bool("v", false, "log debug information")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: agent [flags] GOAL")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	goal := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if goal == "" {
		fs.Usage()
		return errors.New("no goal given")
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	oc := openai.DefaultConfig(*apiKey)
	oc.BaseURL = strings.TrimRight(*baseURL, "/")
	cfg := agent.Config{
		LLM:               rag.LLM{Client: openai.NewClientWithConfig(oc), Model: *model},
		SystemPrompt:      *system,
		ModelContextLimit: *contextLimit,
		MaxToolRounds:     *rounds,
		Logger:            log,
		OnToken:           func(s string) { io.WriteString(stdout, s) },
		OnToolCall:        func(name, args string) { fmt.Fprintf(stderr, "[tool] %s %s\n", name, args) },
	}

	switch {
	case *searxng != "":
		ws, err := agent.NewSearXNG(*searxng, nil)
		if err != nil {
			return err
		}
		cfg.WebSearcher = ws
	case *braveKey != "":
		ws, err := agent.NewBrave(*braveKey, nil)
		if err != nil {
			return err
		}
		cfg.WebSearcher = ws
	}

	if *pagePath != "" {
		b, err := os.ReadFile(*pagePath)
		if err != nil {
			return err
		}
		f, _ := chunk.FormatForPath(*pagePath)
		u := *pageURL
		if u == "" {
			abs, _ := filepath.Abs(*pagePath)
			u = (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
		}
		cfg.Page = &agent.Page{URL: u, Content: string(b), Format: f}
	}

	// The memory is optional: if it cannot be opened, answer without it.
	emb, err := embed.Parse(*embedder)
	if err == nil {
		var eng *rag.Engine
		eng, err = rag.Open(ctx, *dir, &rag.Options{Embedder: emb, Logger: log})
		if err == nil {
			defer eng.Close() // waits for the page being indexed
			cfg.Memory = eng
		}
	}
	cfg.MemoryErr = err

	res, err := agent.Run(ctx, goal, cfg)
	fmt.Fprintln(stdout)
	if res != nil {
		for _, s := range res.Searches {
			if s.ConflictDisclaimer != "" {
				fmt.Fprintln(stdout, "\n"+s.ConflictDisclaimer)
			}
			if len(s.Citations) > 0 {
				fmt.Fprintln(stdout, "\nSources:\n"+agent.FormatCitations(s.Citations))
			}
		}
		if *verbose {
			fmt.Fprintf(stderr, "[budget] window %d, system %d, user %d, knowledge budget %d; %d model calls\n",
				res.ModelContextLimit, res.SystemPromptTokens, res.UserMessageTokens, res.Budgets.KnowledgeBudget, res.Rounds)
		}
		if res.IndexJob != "" {
			fmt.Fprintf(stderr, "[memory] page queued for indexing (job %s)\n", res.IndexJob)
		}
	}
	return err
}
