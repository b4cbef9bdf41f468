package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	openai "github.com/sashabaranov/go-openai"
	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/ownerd"
	"github.com/ragmem/ragmem/cmd/ragmem/internal/settings"
	"github.com/ragmem/ragmem/internal/memory"
	"github.com/ragmem/ragmem/internal/memory/extraction"
	"github.com/ragmem/ragmem/internal/memory/memhttp"
	"github.com/ragmem/ragmem/internal/owner"
	"github.com/ragmem/ragmem/rag"
)

// maxStdinBytes bounds what `memory add -` and `memory extract` read.
const maxStdinBytes = 8 << 20

// memoryFlags are the flags every memory command shares.
type memoryFlags struct {
	dir string
}

// openMemories opens the memory directory without the index (add, list,
// show): these never take the store's lock, so they work while `ragmem mcp`
// runs; the index catches up when the memories are next opened with it.
func (g *globals) openMemories(ctx context.Context, mf *memoryFlags) (*memory.Store, error) {
	dir, err := g.MemoriesDir(mf.dir)
	if err != nil {
		return nil, err
	}
	return memory.Open(ctx, dir, &memory.Options{Logger: slog.Default()})
}

// onMemories is a memory command's RunE that runs fn on the memory
// directory opened without the index (see openMemories).
func (g *globals) onMemories(mf *memoryFlags, fn func(ctx context.Context, st *memory.Store, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		st, err := g.openMemories(cmd.Context(), mf)
		if err != nil {
			return err
		}
		return fn(cmd.Context(), st, args)
	}
}

// withMemories runs a memory command that needs the index (match,
// extract). When this process owns the store, local gets the memory store
// over its index (the one its owner API serves too). When another process
// owns it, remote gets that owner's client: the owner's memories must be
// the ones asked for.
func (g *globals) withMemories(ctx context.Context, mf *memoryFlags, local func(*memory.Store) error, remote func(*owner.Client) error) error {
	dir, err := g.MemoriesDir(mf.dir)
	if err != nil {
		return err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	if g.Namespace == "" {
		g.memoriesFlag = dir
	}
	return g.withStore(ctx, func(m rag.Memory) error {
		s := m.(*ownerd.Store)
		if run := s.Owning(); run != nil {
			st, err := run.NamespaceMemories(ctx, g.Namespace, s.Local())
			if err != nil {
				return err
			}
			return local(st)
		}
		c := s.Client()
		st, err := c.Status(ctx)
		if err != nil {
			return err
		}
		var ex ownerd.Extra
		_ = json.Unmarshal(st.Extra, &ex)
		if g.Namespace == "" && ex.Memories != "" && filepath.Clean(ex.Memories) != filepath.Clean(dir) {
			return fmt.Errorf("the memories %s: the store is owned by pid %d (%s), which serves the agent memories in %s; stop it to use other memories with this store",
				dir, st.Owner.PID, ownerd.DescribeKind(st.Owner.Kind, st.Owner.Command), ex.Memories)
		}
		return remote(c)
	})
}

// withIndexedMemories opens the engine and the memory directory over its
// index, in this process (where owner sockets are not supported).
func (g *globals) withIndexedMemories(ctx context.Context, mf *memoryFlags, fn func(*rag.Engine, *memory.Store) error) error {
	dir, err := g.MemoriesDir(mf.dir)
	if err != nil {
		return err
	}
	return g.WithEngine(ctx, func(eng *rag.Engine) error {
		st, err := memory.Open(ctx, dir, &memory.Options{Index: eng.Store(), Logger: slog.Default(), LLM: g.ChatLLM()})
		if err != nil {
			return err
		}
		return fn(eng, st)
	})
}

func (g *globals) warnProblems(st *memory.Store) {
	for _, p := range st.Problems() {
		fmt.Fprintf(g.Stderr, "warning: skipped %s\n", p)
	}
}

func newMemoryCmd(g *globals) *cobra.Command {
	mf := &memoryFlags{}
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "Agent memories: Markdown files with whenToUse patterns, matched to a task and injected as background knowledge",
		Long: "Agent memories are Markdown files with YAML frontmatter (title, whenToUse, tags, importance,\n" +
			"discoveredAt, discoveredBy, ...) in a memory directory: --memories, else $RAGMEM_MEMORIES, else\n" +
			"<data dir>/memories. Writes append: a memory whose title gives an existing file name is added to that\n" +
			"file after a '---' separator. See docs/memory.md.",
	}
	cmd.PersistentFlags().StringVar(&mf.dir, "memories", "", "memory directory (default $RAGMEM_MEMORIES, else <data dir>/memories)")
	cmd.AddCommand(newMemoryAddCmd(g, mf), newMemoryListCmd(g, mf), newMemoryShowCmd(g, mf), newMemoryMatchCmd(g, mf), newMemoryExtractCmd(g, mf))
	addMemoryHistoryCmds(cmd, g, mf)
	return cmd
}

func newMemoryAddCmd(g *globals, mf *memoryFlags) *cobra.Command {
	var nm memory.NewMemory
	var importance, at, occurred string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "add --title T --when PATTERN [flags] (CONTENT... | -)",
		Short: "Write a memory (appended to its file when the title's slug exists)",
		Example: "  ragmem memory add --title \"Project uses JWT authentication\" --when \"auth|jwt|login\" \\\n" +
			"      --when \"When changing the authentication system\" --tag auth --importance high --by planner \\\n" +
			"      \"The project signs JWTs with HS256; tokens expire after 15 minutes.\"\n" +
			"  ragmem memory add --title \"Build needs Go 1.26\" --when \"build|go version\" - < notes.md",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			imp, err := memory.ParseImportance(importance)
			if err != nil {
				return err
			}
			nm.Importance = imp
			if at != "" {
				t, err := memory.ParseTime(at)
				if err != nil {
					return fmt.Errorf("--at %q is not an ISO 8601 time (e.g. 2026-01-23T10:30:00Z)", at)
				}
				nm.DiscoveredAt = t
			}
			if occurred != "" {
				t, err := memory.ParseTime(occurred)
				if err != nil {
					return fmt.Errorf("--occurred-at %q is not an ISO 8601 time (e.g. 2026-05-03)", occurred)
				}
				nm.OccurredAt = t
			}
			if len(args) == 1 && args[0] == "-" {
				b, err := io.ReadAll(io.LimitReader(g.stdin, maxStdinBytes+1))
				if err != nil {
					return fmt.Errorf("read stdin: %w", err)
				}
				if len(b) > maxStdinBytes {
					return fmt.Errorf("stdin is larger than %d bytes", maxStdinBytes)
				}
				nm.Content = string(b)
			} else {
				nm.Content = strings.Join(args, " ")
			}
			res, err := g.addMemory(cmd.Context(), mf, nm)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(g.stdout, res)
			}
			verb := "wrote"
			switch {
			case res.Consolidated != nil:
				verb = fmt.Sprintf("already known (%s): merged as entry %d of", res.Consolidated.Reason, res.Memory.Entries)
			case res.Appended:
				verb = fmt.Sprintf("appended entry %d to", res.Memory.Entries)
			}
			fmt.Fprintf(g.stdout, "%s %s\n", verb, res.Memory.Path)
			for _, l := range res.Superseded {
				fmt.Fprintf(g.stdout, "supersedes %s (%s: %s); it is kept for history\n", l.Slug, l.By, l.Reason)
			}
			for _, l := range res.Conflicts {
				fmt.Fprintf(g.stdout, "may contradict %s (%s); both stay current until: ragmem memory supersede %s %s\n", l.Slug, l.Reason, res.Memory.Slug, l.Slug)
			}
			if res.Problem != nil {
				fmt.Fprintf(g.Stderr, "warning: the file does not parse, so the memory is not used until it is fixed: %s\n", res.Problem)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&nm.Title, "title", "", "title (required); the file name is its slug")
	f.StringArrayVar(&nm.WhenToUse, "when", nil, "whenToUse pattern (required, repeatable): \"auth|login\", \"implement*auth\", \"implement.*auth\" or \"When implementing security features\"")
	f.StringArrayVar(&nm.Tags, "tag", nil, "tag (repeatable)")
	f.StringVar(&importance, "importance", "medium", "low, medium, high or critical")
	f.StringVar(&nm.DiscoveredBy, "by", "user", "who discovered it (an agent name)")
	f.StringVar(&nm.DiscoveredIn, "in", "", "the task that led to it")
	f.StringVar(&nm.Source, "source", "", "where it came from")
	f.StringArrayVar(&nm.RelatedMemories, "related", nil, "a related memory's slug (repeatable)")
	f.StringVar(&at, "at", "", "when it was discovered (ISO 8601; default now)")
	f.StringVar(&occurred, "occurred-at", "", "when what it says happened (ISO 8601; default: when it is stored)")
	f.BoolVar(&nm.Negative, "negative", false, "a \"don't do X\" memory, injected as a warning (a title starting with Don't, Never or Avoid sets it too)")
	f.StringArrayVar(&nm.Supersedes, "supersedes", nil, "an older memory this one replaces (slug, repeatable); it is kept and marked superseded")
	f.BoolVar(&nm.Separate, "separate", false, "write it as its own memory even if it restates an existing one")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	_ = cmd.MarkFlagRequired("title")
	_ = cmd.MarkFlagRequired("when")
	return cmd
}

func newMemoryListCmd(g *globals, mf *memoryFlags) *cobra.Command {
	var asJSON, decayed, superseded bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List memories (invalid files are reported on stderr)",
		Args:  cobra.NoArgs,
		RunE: g.onMemories(mf, func(ctx context.Context, st *memory.Store, args []string) error {
			all, err := st.List(ctx)
			if err != nil {
				return err
			}
			var ms []memory.Memory
			for _, m := range all {
				if (!decayed || m.Decayed) && (!superseded || m.Superseded()) {
					ms = append(ms, m)
				}
			}
			if asJSON {
				out := struct {
					Dir      string           `json:"dir"`
					Memories []memory.Memory  `json:"memories"`
					Problems []memory.Problem `json:"problems"`
				}{st.Dir(), ms, st.Problems()}
				if out.Memories == nil {
					out.Memories = []memory.Memory{}
				}
				if out.Problems == nil {
					out.Problems = []memory.Problem{}
				}
				return writeJSON(g.stdout, out)
			}
			g.warnProblems(st)
			if len(ms) == 0 {
				fmt.Fprintf(g.stdout, "no memories in %s\n", st.Dir())
			}
			for _, m := range ms {
				fmt.Fprintf(g.stdout, "%-40s  %-8s  %s\n", m.Slug, m.Importance, m.Title)
				fmt.Fprintf(g.stdout, "%-40s  %-8s  when: %s\n", "", "", strings.Join(m.WhenToUse, " ; "))
				if st := memoryState(m); st != "" {
					fmt.Fprintf(g.stdout, "%-40s  %-8s  %s\n", "", "", st)
				}
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&decayed, "decayed", false, "only the memories that decayed (strength below 0.25: see docs/memory.md)")
	cmd.Flags().BoolVar(&superseded, "superseded", false, "only the memories a newer one superseded")
	return cmd
}

func newMemoryShowCmd(g *globals, mf *memoryFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Print a memory file (NAME is its slug or file name)",
		Args:  cobra.ExactArgs(1),
		RunE: g.onMemories(mf, func(ctx context.Context, st *memory.Store, args []string) error {
			if asJSON {
				m, err := st.Get(ctx, args[0])
				if err != nil {
					return err
				}
				es, err := st.Entries(ctx, args[0])
				if err != nil {
					return err
				}
				return writeJSON(g.stdout, struct {
					Memory  memory.Memory  `json:"memory"`
					Entries []memory.Entry `json:"entries"`
				}{m, es})
			}
			raw, err := st.Raw(ctx, args[0])
			if err != nil {
				return err
			}
			_, err = g.stdout.Write(raw)
			return err
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the metadata and the entries as JSON")
	return cmd
}

// printMatches prints what memory match selected: the context message
// with prompt, else the matches (as JSON with asJSON).
func printMatches(g *globals, ms []memory.Match, message string, prompt, asJSON bool) error {
	if prompt {
		if message == "" {
			fmt.Fprintln(g.Stderr, "no memories selected")
			return nil
		}
		fmt.Fprintln(g.stdout, message)
		return nil
	}
	return printList(g, asJSON, "matches", ms, "no memories selected", func(w io.Writer, i int, m memory.Match) { printMatch(w, i+1, m) })
}

// printList prints items: as JSON ({"KEY": [...]}, never null) with
// asJSON, else each with line, or none when there are none.
func printList[T any](g *globals, asJSON bool, key string, items []T, none string, line func(w io.Writer, i int, item T)) error {
	if asJSON {
		if items == nil {
			items = []T{}
		}
		return writeJSON(g.stdout, map[string]any{key: items})
	}
	if len(items) == 0 {
		fmt.Fprintln(g.stdout, none)
	}
	for i, it := range items {
		line(g.stdout, i, it)
	}
	return nil
}

func newMemoryMatchCmd(g *globals, mf *memoryFlags) *cobra.Command {
	var req memory.MatchRequest
	var minImp string
	var asJSON, prompt bool
	var tf timeFlags
	cmd := &cobra.Command{
		Use:   "match --agent NAME [flags] TASK...",
		Short: "Select the memories for an agent's task, in rank order with their scores",
		Long: "Select the memories relevant to TASK for agent NAME: whenToUse patterns (with natural-language patterns\n" +
			"matched through hybrid search), scored 0-100 (importance, recency, keywords, agent specialty,\n" +
			"same discoverer; docs/memory.md) and ranked with retrieval relevance (rank = score + 10 x relevance).\n" +
			"--prompt prints the context message an agent would receive instead.",
		Example: "  ragmem memory match --agent developer \"Add OAuth integration to existing auth system\"\n" +
			"  ragmem memory match --memories .ragmem/memories --agent tester --min-importance high --prompt \"Fix flaky uploads\"",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Task = strings.Join(args, " ")
			var err error
			if req.Since, req.Until, err = tf.parse(); err != nil {
				return err
			}
			req.When, req.IncludeSuperseded = tf.when, tf.history
			var asOf string
			if req.AsOf, asOf, err = tf.asOfTime(); err != nil {
				return err
			}
			if minImp != "" {
				imp, err := memory.ParseImportance(minImp)
				if err != nil {
					return err
				}
				req.MinImportance = imp
			}
			var ms []memory.Match
			var message string
			err = g.withMemories(cmd.Context(), mf, func(st *memory.Store) error {
				g.warnProblems(st)
				var err error
				if ms, err = st.Match(cmd.Context(), req); err != nil || !prompt {
					return err
				}
				ins, err := st.Load(cmd.Context(), ms)
				if err != nil || len(ins) == 0 {
					return err
				}
				message = memory.ContextMessage(memory.FormatForPrompt(ins)).Content
				return nil
			}, func(c *owner.Client) error {
				mr := memhttp.MatchRequest{Task: req.Task, Agent: req.Agent, AgentTags: req.AgentTags, MaxMemories: req.MaxMemories, NoWeak: req.NoWeak, Context: prompt,
					Since: tf.since, Until: tf.until, When: tf.when, IncludeSuperseded: tf.history, AsOf: asOf}
				if minImp != "" {
					mr.MinImportance = req.MinImportance.String()
				}
				var resp memhttp.MatchResponse
				if err := c.Do(cmd.Context(), http.MethodPost, memhttp.DefaultPrefix+"/match", mr, &resp, 0); err != nil {
					return err
				}
				ms = resp.Matches
				if resp.Message != nil {
					message = resp.Message.Content
				}
				return nil
			})
			if err != nil {
				return err
			}
			return printMatches(g, ms, message, prompt, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Agent, "agent", "", "the agent's name (planner, developer, tester, reviewer or any other)")
	f.StringArrayVar(&req.AgentTags, "agent-tag", nil, "an extra specialty tag of the agent (repeatable)")
	f.IntVar(&req.MaxMemories, "max", memory.DefaultMaxMemories, "select at most this many memories")
	f.StringVar(&minImp, "min-importance", "", "leave out memories below low, medium, high or critical")
	f.BoolVar(&req.NoWeak, "no-weak", false, "only memories whose whenToUse fires (no weak matches by agent specialty)")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	f.BoolVar(&prompt, "prompt", false, "print the context message with the memories' contents")
	tf.register(f)
	_ = cmd.MarkFlagRequired("agent")
	return cmd
}

func printMatch(w io.Writer, n int, m memory.Match) {
	s := m.Score
	var parts []string
	for _, p := range []struct {
		name string
		v    int
	}{{"importance", s.Importance}, {"recency", s.Recency}, {"keyword", s.Keyword}, {"agent tags", s.AgentTags}, {"discoverer", s.Discoverer}} {
		if p.v != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", p.name, p.v))
		}
	}
	fmt.Fprintf(w, "%d. %s  score %d (%s)  relevance %.3f  rank %.2f\n", n, m.Memory.Slug, s.Total, strings.Join(parts, ", "), m.Relevance, m.Rank)
	fmt.Fprintf(w, "   %s [%s]\n", m.Memory.Title, m.Memory.Importance)
	for _, r := range m.Reasons {
		fmt.Fprintf(w, "   - %s\n", r)
	}
}

// readAgentOutput reads the agent output memory extract is given: the file
// args names, else stdin.
func readAgentOutput(stdin io.Reader, args []string) (string, error) {
	r := stdin
	if len(args) == 1 && args[0] != "-" {
		f, err := os.Open(args[0])
		if err != nil {
			return "", err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxStdinBytes+1))
	if err != nil {
		return "", fmt.Errorf("read the agent output: %w", err)
	}
	if len(b) > maxStdinBytes {
		return "", fmt.Errorf("the agent output is larger than %d bytes", maxStdinBytes)
	}
	return string(b), nil
}

// printExtraction says what memory extract decided and did.
func printExtraction(w io.Writer, out extraction.Output) {
	switch {
	case !out.ShouldCreateMemory && out.Duplicate != nil:
		fmt.Fprintf(w, "nothing new: already in %s (%s)\n", out.Duplicate.Slug, out.Reasoning)
	case !out.ShouldCreateMemory:
		fmt.Fprintf(w, "nothing worth remembering: %s\n", out.Reasoning)
	case out.Duplicate != nil:
		fmt.Fprintf(w, "not written: %q nearly duplicates %s (%s, similarity %.2f)\n", out.Memory.Title, out.Duplicate.Slug, out.Duplicate.By, out.Duplicate.Similarity)
	case out.Written == nil:
		fmt.Fprintf(w, "would write %q (dry run): %s\n", out.Memory.Title, out.Reasoning)
	default:
		verb := "wrote"
		if out.Written.Appended {
			verb = "appended to"
		}
		fmt.Fprintf(w, "%s %s: %s\n", verb, out.Written.Memory.Path, out.Reasoning)
		for _, l := range out.Written.Conflicts {
			fmt.Fprintf(w, "  may contradict %s (%s)\n", l.Slug, l.Reason)
		}
	}
}

func newMemoryExtractCmd(g *globals, mf *memoryFlags) *cobra.Command {
	var in extraction.Input
	var model string
	var dryRun, asJSON, supersedeUser bool
	cmd := &cobra.Command{
		Use:   "extract --agent NAME --task TASK --model MODEL [flags] [OUTPUT_FILE | -]",
		Short: "Ask a language model whether an agent's run is worth remembering, and write the memory",
		Long: "Send the agent's task and output (OUTPUT_FILE, or stdin) to an OpenAI-compatible chat model\n" +
			"(--base-url / $OPENAI_BASE_URL, --api-key / $OPENAI_API_KEY) with lists of what to keep and what to\n" +
			"skip. A memory it proposes is written unless it nearly duplicates an existing one.\n" +
			"Memories you wrote (memory add, files you wrote or edited) are never superseded by what the\n" +
			"model extracts: the new memory is written beside them, marked as conflicting, unless\n" +
			"--supersede-user.",
		Example: "  go test ./... 2>&1 | ragmem memory extract --agent tester --task \"Run the test suite\" --result failure --model gpt-4o-mini\n" +
			"  ragmem --base-url http://localhost:11434/v1 memory extract --agent developer --task \"Fix uploads\" --model llama3.1 run.log",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if model == "" {
				model = os.Getenv(settings.LLMModelEnv)
			}
			if model == "" {
				return errors.New("no model: give --model (or set $RAGMEM_LLM_MODEL)")
			}
			var err error
			if in.AgentOutput, err = readAgentOutput(g.stdin, args); err != nil {
				return err
			}
			llm := rag.LLM{Client: openai.NewClientWithConfig(g.OpenAIConfig()), Model: model}
			var out extraction.Output
			extract := func(st *memory.Store) error {
				x, err := extraction.New(llm, st, &extraction.Options{DryRun: dryRun, SupersedeUser: supersedeUser, Logger: slog.Default()})
				if err != nil {
					return err
				}
				out, err = x.ExtractMemory(cmd.Context(), in)
				return err
			}
			err = g.withMemories(cmd.Context(), mf, extract, func(c *owner.Client) error {
				// The model is this process's to call: the memory is
				// written to the directory here (near duplicates are looked
				// for among all memories), then the owner indexes it.
				st, err := g.openMemories(cmd.Context(), mf)
				if err != nil {
					return err
				}
				if err := extract(st); err != nil {
					return err
				}
				if out.Written != nil {
					return c.Do(cmd.Context(), http.MethodPost, memhttp.DefaultPrefix+"/refresh", struct{}{}, nil, 0)
				}
				return nil
			})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(g.stdout, out)
			}
			printExtraction(g.stdout, out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&in.Agent, "agent", "", "the agent that ran")
	f.StringVar(&in.Task, "task", "", "its task")
	f.StringVar(&in.Result, "result", "success", "success, failure or partial")
	f.StringVar(&in.Error, "error", "", "the error it ended with, if any")
	f.StringVar(&model, "model", "", "chat model (default $RAGMEM_LLM_MODEL)")
	f.BoolVar(&dryRun, "dry-run", false, "decide, but write nothing")
	f.BoolVar(&asJSON, "json", false, "print the decision as JSON")
	f.BoolVar(&supersedeUser, "supersede-user", false, "let the extracted memory supersede memories you wrote (default: written beside them, marked as conflicting)")
	_ = cmd.MarkFlagRequired("agent")
	_ = cmd.MarkFlagRequired("task")
	return cmd
}
