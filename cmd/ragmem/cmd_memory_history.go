package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ragmem/ragmem/internal/memory"
	"github.com/ragmem/ragmem/internal/memory/memhttp"
	"github.com/ragmem/ragmem/internal/owner"
	"github.com/ragmem/ragmem/rag"
)

// Agent memory over time: search by content and time, supersession,
// citations and the feedback statistics (docs/memory.md).

// timeFlags are the time filters of match and search.
type timeFlags struct {
	when, since, until string
	history            bool
	asOf               string
}

func (tf *timeFlags) register(f *pflag.FlagSet) {
	f.StringVar(&tf.when, "when", "", "a time expression: \"last week\", \"in May\", \"yesterday\", \"since 2026-03-01\", \"between May and July\"")
	f.StringVar(&tf.since, "since", "", "only memories that happened at or after this time (ISO 8601)")
	f.StringVar(&tf.until, "until", "", "only memories that happened before this time (ISO 8601)")
	f.BoolVar(&tf.history, "history", false, "include memories superseded by newer ones (what was believed before)")
	f.StringVar(&tf.asOf, "as-of", "", "what held at this time instead of now: a time, a date or a period (its end): \"2026-05-01\", \"last March\"")
}

// asOfTime reads --as-of in the local time zone (zero when not given) and
// returns it with its RFC 3339 form, what the owner's memory API is sent.
func (tf *timeFlags) asOfTime() (time.Time, string, error) {
	if tf.asOf == "" {
		return time.Time{}, "", nil
	}
	t, err := memory.ParseAsOf(tf.asOf, time.Now())
	if err != nil {
		return t, "", fmt.Errorf("--as-of: %w", err)
	}
	return t, t.Format(time.RFC3339Nano), nil
}

func (tf *timeFlags) parse() (since, until time.Time, err error) {
	if tf.since != "" {
		if since, err = memory.ParseTime(tf.since); err != nil {
			return since, until, fmt.Errorf("--since %q is not an ISO 8601 time", tf.since)
		}
	}
	if tf.until != "" {
		if until, err = memory.ParseTime(tf.until); err != nil {
			return since, until, fmt.Errorf("--until %q is not an ISO 8601 time", tf.until)
		}
	}
	return since, until, nil
}

// addMemory writes a memory over the index, so that restatements are
// merged by similarity (and judged by $RAGMEM_LLM_MODEL when set): this
// process's index, or the owner's through its memory API when another
// process owns the store. Only when the store is locked by a process that
// is no owner does it write without the index, comparing titles only, and
// say so.
func (g *globals) addMemory(ctx context.Context, mf *memoryFlags, nm memory.NewMemory) (memory.AddResult, error) {
	var res memory.AddResult
	ran := false
	err := g.withMemories(ctx, mf, func(st *memory.Store) error {
		ran = true
		var err error
		res, err = st.Add(ctx, nm)
		return err
	}, func(c *owner.Client) error {
		// The owner adds it over its index, as this process would.
		ran = true
		return c.Do(ctx, http.MethodPost, memhttp.DefaultPrefix, addRequest(nm), &res, 0)
	})
	if err == nil || ran || !errors.Is(err, rag.ErrLocked) {
		return res, err
	}
	fmt.Fprintln(g.Stderr, "note: the store is in use by another process; similar memories are compared by title only")
	st, err := g.openMemories(ctx, mf)
	if err != nil {
		return res, err
	}
	return st.Add(ctx, nm)
}

// addRequest is nm as the owner's memory API takes it.
func addRequest(nm memory.NewMemory) memhttp.AddRequest {
	r := memhttp.AddRequest{Title: nm.Title, Content: nm.Content, WhenToUse: nm.WhenToUse, Tags: nm.Tags,
		DiscoveredBy: nm.DiscoveredBy, DiscoveredIn: nm.DiscoveredIn, Source: nm.Source, RelatedMemories: nm.RelatedMemories,
		Negative: nm.Negative, Supersedes: nm.Supersedes, Separate: nm.Separate}
	if nm.Importance != 0 {
		r.Importance = nm.Importance.String()
	}
	if !nm.DiscoveredAt.IsZero() {
		r.DiscoveredAt = nm.DiscoveredAt.Format(time.RFC3339Nano)
	}
	if !nm.OccurredAt.IsZero() {
		r.OccurredAt = nm.OccurredAt.Format(time.RFC3339Nano)
	}
	return r
}

// memoryState is a memory's line of state in listings ("" when there is
// nothing to say).
func memoryState(m memory.Memory) string {
	var parts []string
	if m.Negative {
		parts = append(parts, "DON'T")
	}
	if m.Author == memory.AuthorExtraction {
		parts = append(parts, "extracted by a model")
	}
	if m.Superseded() {
		parts = append(parts, fmt.Sprintf("superseded on %s by %s", m.ValidTo.UTC().Format(time.DateOnly), m.SupersededBy))
	}
	if m.Decayed {
		parts = append(parts, fmt.Sprintf("decayed (strength %.2f)", m.Strength))
	}
	if m.Confirmations > 0 {
		parts = append(parts, fmt.Sprintf("confirmations %d", m.Confirmations))
	}
	if len(m.Conflicts) > 0 {
		parts = append(parts, "may contradict "+strings.Join(m.Conflicts, ", "))
	}
	return strings.Join(parts, "; ")
}

func addMemoryHistoryCmds(parent *cobra.Command, g *globals, mf *memoryFlags) {
	parent.AddCommand(newMemorySearchCmd(g, mf), newMemorySupersedeCmd(g, mf), newMemoryCiteCmd(g, mf), newMemoryStatsCmd(g, mf))
}

func newMemorySearchCmd(g *globals, mf *memoryFlags) *cobra.Command {
	var req memory.SearchRequest
	var tf timeFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "search [flags] [QUERY...]",
		Short: "Find memories by content and time (superseded ones with --history or a time filter)",
		Long: "Search the memories' contents (hybrid search) within a time range, ranked by relevance plus recency\n" +
			"(0.2 x 0.5^(age/30 days)). Without QUERY, every memory of the range, newest first.",
		Example: "  ragmem memory search --when \"last week\"\n" +
			"  ragmem memory search --history \"which port does the gateway use\"\n" +
			"  ragmem memory search --as-of \"last March\" \"which port does the gateway use\"\n" +
			"  ragmem memory search --when \"in May\" deploy freeze",
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Query = strings.Join(args, " ")
			var err error
			if req.Since, req.Until, err = tf.parse(); err != nil {
				return err
			}
			req.When, req.IncludeSuperseded = tf.when, tf.history
			var asOf string
			if req.AsOf, asOf, err = tf.asOfTime(); err != nil {
				return err
			}
			var res []memory.Found
			err = g.withMemories(cmd.Context(), mf, func(st *memory.Store) (err error) {
				res, err = st.Search(cmd.Context(), req)
				return err
			}, func(c *owner.Client) error {
				sr := memhttp.SearchRequest{Query: req.Query, Since: tf.since, Until: tf.until, When: tf.when, IncludeSuperseded: tf.history, Limit: req.Limit, AsOf: asOf}
				var resp memhttp.SearchResponse
				if err := c.Do(cmd.Context(), http.MethodPost, memhttp.DefaultPrefix+"/search", sr, &resp, 0); err != nil {
					return err
				}
				res = resp.Results
				return nil
			})
			if err != nil {
				return err
			}
			return printList(g, asJSON, "results", res, "no memories found", func(w io.Writer, i int, f memory.Found) {
				fmt.Fprintf(w, "%d. %s  rank %.3f (relevance %.3f, recency %.3f)  since %s\n", i+1, f.Memory.Slug, f.Rank, f.Relevance, f.Recency,
					f.Memory.ValidFrom.UTC().Format(time.DateOnly))
				fmt.Fprintf(w, "   %s\n", f.Memory.Title)
				if s := memoryState(f.Memory); s != "" {
					fmt.Fprintf(w, "   %s\n", s)
				}
				if f.Snippet != "" {
					fmt.Fprintf(w, "   %s\n", f.Snippet)
				}
			})
		},
	}
	tf.register(cmd.Flags())
	cmd.Flags().IntVar(&req.Limit, "limit", memory.DefaultSearchLimit, "at most this many memories (up to 100)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newMemorySupersedeCmd(g *globals, mf *memoryFlags) *cobra.Command {
	var why string
	cmd := &cobra.Command{
		Use:   "supersede NEWER OLDER",
		Short: "Record that memory NEWER replaces memory OLDER (OLDER is kept for history)",
		Long: "Confirm a contradiction (for example one `memory add` flagged): NEWER gets an entry naming OLDER in\n" +
			"supersedes; OLDER's file is not touched, and it is read as superseded from NEWER's time on.",
		Example: "  ragmem memory supersede api-port the-api-listens-on-port-8080 --why \"checked the config\"",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var res memory.AddResult
			// Over the index, so that searches see the change at once: this
			// process's, or the owner's when another process owns the store.
			err := g.withMemories(ctx, mf, func(st *memory.Store) (err error) {
				res, err = st.Supersede(ctx, args[0], args[1], why)
				return err
			}, func(c *owner.Client) error {
				return c.Do(ctx, http.MethodPost, memhttp.DefaultPrefix+"/supersede", memhttp.SupersedeRequest{Newer: args[0], Older: args[1], Provenance: why}, &res, 0)
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "%s supersedes %s from %s; %s is kept for history\n", res.Memory.Slug, res.Superseded[0].Slug,
				res.Memory.ValidFrom.UTC().Format(time.DateOnly), res.Superseded[0].Slug)
			return nil
		},
	}
	cmd.Flags().StringVar(&why, "why", "", "the provenance: who decided, what was checked (default \"user\")")
	return cmd
}

func newMemoryCiteCmd(g *globals, mf *memoryFlags) *cobra.Command {
	var req memory.CiteRequest
	cmd := &cobra.Command{
		Use:   "cite [--injected SLUG]... (ANSWER... | -)",
		Short: "Record the memories an answer cites ([memory:slug] ids), for the feedback loop",
		Example: "  ragmem memory cite \"Use port 9090 [memory:api-port].\"\n" +
			"  my-agent run | ragmem memory cite --injected api-port --injected deploy-freeze -",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && args[0] == "-" {
				b, err := io.ReadAll(io.LimitReader(g.stdin, maxStdinBytes+1))
				if err != nil {
					return fmt.Errorf("read stdin: %w", err)
				}
				req.Answer = string(b)
			} else {
				req.Answer = strings.Join(args, " ")
			}
			st, err := g.openMemories(cmd.Context(), mf)
			if err != nil {
				return err
			}
			res, err := st.Cite(cmd.Context(), req)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "cited: %s\n", strings.Join(res.Cited, ", "))
			if len(res.Unknown) > 0 {
				fmt.Fprintf(g.Stderr, "not counted (unknown or not injected): %s\n", strings.Join(res.Unknown, ", "))
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&req.Injected, "injected", nil, "a memory that was in the context (repeatable); when given, only these count")
	return cmd
}

func newMemoryStatsCmd(g *globals, mf *memoryFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "The feedback loop: injections, citations, cite rate, strength after decay, supersession",
		Args:  cobra.NoArgs,
		RunE: g.onMemories(mf, func(ctx context.Context, st *memory.Store, args []string) error {
			rep, err := st.Stats(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(g.stdout, rep)
			}
			fmt.Fprintf(g.stdout, "%d memories: %d superseded, %d decayed, %d negative; %d injections, %d citations\n",
				rep.Memories, rep.Superseded, rep.Decayed, rep.Negative, rep.Injections, rep.Citations)
			fmt.Fprintf(g.stdout, "%-40s %8s %6s %9s %8s  %s\n", "memory", "injected", "cited", "cite rate", "strength", "state")
			for _, it := range rep.Items {
				var state []string
				if it.Negative {
					state = append(state, "DON'T")
				}
				if it.SupersededBy != "" {
					state = append(state, "superseded by "+it.SupersededBy)
				}
				if it.Decayed {
					state = append(state, "decayed")
				}
				if it.Confirmations > 0 {
					state = append(state, fmt.Sprintf("confirmations %d", it.Confirmations))
				}
				rate := "–" // never injected: no rate yet
				if it.CiteRate != nil {
					rate = fmt.Sprintf("%.3f", *it.CiteRate)
				}
				fmt.Fprintf(g.stdout, "%-40s %8d %6d %9s %8.3f  %s\n", it.Slug, it.Feedback.Injected, it.Feedback.Cited, rate, it.Strength, strings.Join(state, "; "))
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
