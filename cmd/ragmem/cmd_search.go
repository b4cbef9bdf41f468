package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/ingest"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/memory"
	"github.com/ragmem/ragmem/internal/reserved"
	"github.com/ragmem/ragmem/rag"
	"github.com/ragmem/ragmem/search"
)

func newSearchCmd(g *globals) *cobra.Command {
	var mode, fusion string
	var topK int
	var threshold float64
	var types []string
	var source, filter, unit string
	var perSource int
	var group, keepDup bool
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "search [flags] QUERY",
		Short: "Search the memory (hybrid, vector or fulltext)",
		Long: "Search the memory. Each result shows its source, heading path, scores and a snippet.\n" +
			"Identical chunks are shown once and near-copies of a page collapse into it (\"also at\"); at\n" +
			"most --max-per-source results come from one source. --filter takes a filter expression:\n" +
			"  FIELD = v, FIELD != v, FIELD IN [a, b], FIELD STARTS WITH v, FIELD EXISTS,\n" +
			"  created < | <= | > | >= TIME (2025-01-31, 2025-01-31T12:00:00Z, now-7d),\n" +
			"combined with AND, OR, NOT and parentheses; FIELD is source, title, type, created or an\n" +
			"attribute set with `ragmem index --attr`.",
		Example: "  ragmem search \"install on linux\"\n" +
			"  ragmem search --mode fulltext --top-k 10 --json \"bm25 saturation\"\n" +
			"  ragmem search --filter 'team = search AND created > now-30d' \"rollout plan\"\n" +
			"  ragmem search --source docs/ --group \"configuration\"\n" +
			"  ragmem search --types memory --unit round \"what did I decide about the launch\"",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Flags not given stay zero: the engine's configuration decides
			// them (rag.Config.SearchOptions).
			var m search.Mode
			var fu search.Fusion
			var err error
			if cmd.Flags().Changed("mode") {
				if m, err = search.ParseMode(mode); err != nil {
					return err
				}
			}
			if cmd.Flags().Changed("fusion") {
				if fu, err = search.ParseFusion(fusion); err != nil {
					return err
				}
			}
			if cmd.Flags().Changed("top-k") && topK <= 0 {
				return fmt.Errorf("--top-k must be positive")
			}
			var thr *float64 // not given: the engine's; 0 or negative: none
			if cmd.Flags().Changed("threshold") {
				thr = &threshold
			}
			if !cmd.Flags().Changed("top-k") {
				topK = 0
			}
			query := strings.Join(args, " ")
			where, err := searchFilter(filter, source)
			if err != nil {
				return err
			}
			return g.withStore(cmd.Context(), func(st rag.Memory) error {
				out, err := st.Search(cmd.Context(), rag.SearchRequest{
					Query: query, Mode: string(m), TopK: topK, Threshold: thr, Fusion: string(fu), Filters: &rag.SearchFilters{DocTypes: types},
					Filter: where.String(), MaxPerSource: &perSource, GroupBySource: group, KeepDuplicates: keepDup, Unit: unit,
				})
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(g.stdout, out)
				}
				if out.Degraded != "" {
					fmt.Fprintf(g.Stderr, "ragmem: answered by %s search: %s\n", out.Mode, out.Degraded)
				}
				if out.RerankSkipped != "" {
					fmt.Fprintf(g.Stderr, "ragmem: results in fused order: %s\n", out.RerankSkipped)
				}
				printResults(g.stdout, out.Results, group)
				return nil
			})
		},
	}
	f := cmd.Flags()
	// The defaults shown are rag.DefaultConfig's; a flag not given leaves the
	// choice to the engine's configuration.
	f.StringVar(&mode, "mode", string(search.Hybrid), "hybrid, vector or fulltext")
	f.StringVar(&fusion, "fusion", string(search.DefaultFusion), "hybrid fusion: relative, rrf or dbsf")
	f.IntVar(&topK, "top-k", search.DefaultTopK, "maximum number of results")
	f.Float64Var(&threshold, "threshold", search.DefaultThreshold, "similarity threshold (negative or 0 disables; see docs for what it compares per mode)")
	f.StringSliceVar(&types, "types", []string{index.DocKnowledge}, "document types to search: knowledge, memory, preference")
	f.StringVar(&source, "source", "", "only search this source: a URL, a file, or a folder or URL ending in / (every source under it)")
	f.StringVar(&filter, "filter", "", "only search chunks that match this filter expression (see above)")
	f.IntVar(&perSource, "max-per-source", search.DefaultMaxPerSource, "most results from one source (0: no cap)")
	f.BoolVar(&group, "group", false, "list the results source by source")
	f.BoolVar(&keepDup, "keep-duplicates", false, "show identical and near-identical chunks of other sources too")
	f.StringVar(&unit, "unit", search.UnitTurn, "what a conversation's result is: turn, round (a user's turn with its replies) or session")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printResults(w io.Writer, res []rag.ResultJSON, grouped bool) {
	if len(res) == 0 {
		fmt.Fprintln(w, "no results")
		return
	}
	prev := ""
	for i, r := range res {
		rec := r.ChunkJSON
		if grouped && rec.URL != prev {
			if i > 0 {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "== %s  (%s)\n", rec.Title, rec.URL)
			prev = rec.URL
		}
		fmt.Fprintf(w, "%d. %s  (%s)\n", i+1, rec.Title, scoreLine(&r))
		fmt.Fprintf(w, "   %s", rec.URL)
		if len(rec.HeadingPath) > 0 {
			fmt.Fprintf(w, "  §  %s", strings.Join(rec.HeadingPath, " › "))
		}
		fmt.Fprintln(w)
		if len(r.AlsoAt) > 0 {
			fmt.Fprintf(w, "   also at %s\n", strings.Join(r.AlsoAt, ", "))
		}
		e := r.Explanation
		var parts []string
		if e.BM25Rank > 0 {
			parts = append(parts, fmt.Sprintf("bm25 #%d", e.BM25Rank))
			if !fused(e) {
				parts[len(parts)-1] += fmt.Sprintf(" (%.3f)", e.BM25Score)
			}
		}
		switch {
		case e.VectorRank > 0 && e.FeedbackSimilarity != 0:
			parts = append(parts, fmt.Sprintf("vector #%d (refined %.3f)", e.VectorRank, e.FeedbackSimilarity))
		case e.VectorRank > 0 && !fused(e):
			parts = append(parts, fmt.Sprintf("vector #%d (%.3f)", e.VectorRank, e.VectorSimilarity))
		case e.VectorRank > 0:
			parts = append(parts, fmt.Sprintf("vector #%d", e.VectorRank))
		}
		parts = append(parts, e.Method)
		if rec.DocType == index.DocMemory {
			parts = append(parts, memoryNote(rec.Attrs)...)
		}
		fmt.Fprintf(w, "   %s\n", strings.Join(parts, ", "))
		fmt.Fprintf(w, "   %s\n", snippet(rec.Content, 220))
	}
}

// fused reports whether a result's score was fused from two lists (it is
// then relative to them: min-max or ranks, so that its best hit reads 1
// and near-equal hits can read far apart) rather than one list's raw score.
func fused(e search.Explanation) bool { return e.Method != "bm25" && e.Method != "vector" }

// scoreLine gives a result's score and, for a fused one, the raw scores
// beside it, which do not depend on the list: BM25's, and the cosine
// similarity to the query.
func scoreLine(r *rag.ResultJSON) string {
	e := r.Explanation
	s := fmt.Sprintf("score %.4f", r.Score)
	if !fused(e) {
		return s
	}
	var raw []string
	if e.BM25Rank > 0 {
		raw = append(raw, fmt.Sprintf("bm25 %.3f", e.BM25Score))
	}
	if e.VectorRank > 0 {
		raw = append(raw, fmt.Sprintf("cosine %.3f", e.VectorSimilarity))
	}
	return s + " in this list; raw " + strings.Join(raw, ", ")
}

// searchFilter combines --filter and --source into one expression.
func searchFilter(filter, source string) (*index.Expr, error) {
	var parts []*index.Expr
	if strings.TrimSpace(filter) != "" {
		e, err := index.ParseFilter(filter)
		if err != nil {
			return nil, err
		}
		parts = append(parts, e)
	}
	if source != "" {
		u, dir := sourceArg(source)
		if _, err := os.Stat(source); err != nil && (strings.HasSuffix(source, "/") || strings.HasSuffix(source, "*")) {
			// A URL prefix: "https://docs.rs/serde/" or "https://docs.rs/*".
			if pu, perr := url.Parse(source); perr == nil && pu.Scheme != "" && len(pu.Scheme) > 1 {
				u, dir = strings.TrimSuffix(source, "*"), true
			}
		}
		e := index.SourceIs(u)
		if dir {
			p := u
			if strings.HasPrefix(u, "file:") {
				p = ingest.UnderURL(u)
			}
			e = index.SourceUnder(p)
		}
		parts = append(parts, e)
	}
	return index.AllOf(parts...), nil
}

// snippet returns the start of s on one line, cut at a rune boundary.
func snippet(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if i := strings.LastIndexByte(s[:cut], ' '); i > n/2 {
		cut = i
	}
	return s[:cut] + "…"
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// memoryNote says, for a memory's search result, who wrote it and what it
// may contradict (the memory store's attributes on its records).
func memoryNote(attrs map[string]string) []string {
	var out []string
	if attrs[reserved.AttrMemoryAuthor] == memory.AuthorExtraction {
		out = append(out, "memory extracted by a model")
	}
	if c := attrs[reserved.AttrMemoryConflicts]; c != "" {
		out = append(out, "may contradict "+strings.ReplaceAll(c, ",", ", "))
	}
	return out
}
