package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/rag"
	"github.com/ragmem/ragmem/search"
)

func newSearchCmd(g *globals) *cobra.Command {
	var mode, fusion string
	var topK int
	var threshold float64
	var types []string
	var source string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "search [flags] QUERY",
		Short: "Search the memory (hybrid, vector or fulltext)",
		Example: "  ragmem search \"install on linux\"\n" +
			"  ragmem search --mode fulltext --top-k 10 --json \"bm25 saturation\"",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := search.ParseMode(mode)
			if err != nil {
				return err
			}
			fu, err := search.ParseFusion(fusion)
			if err != nil {
				return err
			}
			if topK <= 0 {
				return fmt.Errorf("--top-k must be positive")
			}
			query := strings.Join(args, " ")
			return g.withEngine(cmd.Context(), func(eng *rag.Engine) error {
				res, rep, err := eng.SearchReport(cmd.Context(), query, &search.Options{
					Mode: m, TopK: topK, SimilarityThreshold: threshold, Fusion: fu, DocTypes: types, SourceURL: source,
				})
				if err != nil {
					return err
				}
				if asJSON {
					out := map[string]any{"query": query, "mode": rep.Mode, "results": nonNil(res)}
					if rep.Degraded != "" {
						out["degraded"] = rep.Degraded
					}
					return writeJSON(g.stdout, out)
				}
				if rep.Degraded != "" {
					fmt.Fprintf(g.stderr, "ragmem: answered by %s search, not %s: %s\n", rep.Mode, m, rep.Degraded)
				}
				printResults(g.stdout, res)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&mode, "mode", "hybrid", "hybrid, vector or fulltext")
	f.StringVar(&fusion, "fusion", string(search.DefaultFusion), "hybrid fusion: relative or rrf")
	f.IntVar(&topK, "top-k", search.DefaultTopK, "maximum number of results")
	f.Float64Var(&threshold, "threshold", search.DefaultThreshold, "similarity threshold (negative disables; see docs for what it compares per mode)")
	f.StringSliceVar(&types, "types", []string{index.DocKnowledge}, "document types to search: knowledge, memory, preference")
	f.StringVar(&source, "source", "", "only search this source URL")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func nonNil(r []search.Result) []search.Result {
	if r == nil {
		return []search.Result{}
	}
	return r
}

func printResults(w io.Writer, res []search.Result) {
	if len(res) == 0 {
		fmt.Fprintln(w, "no results")
		return
	}
	for i, r := range res {
		rec := r.Record
		fmt.Fprintf(w, "%d. %s  (score %.4f)\n", i+1, rec.Title, r.Score)
		fmt.Fprintf(w, "   %s", rec.SourceURL)
		if len(rec.HeadingPath) > 0 {
			fmt.Fprintf(w, "  §  %s", strings.Join(rec.HeadingPath, " › "))
		}
		fmt.Fprintln(w)
		e := r.Explanation
		var parts []string
		if e.BM25Rank > 0 {
			parts = append(parts, fmt.Sprintf("bm25 #%d (%.3f)", e.BM25Rank, e.BM25Score))
		}
		if e.VectorRank > 0 {
			parts = append(parts, fmt.Sprintf("vector #%d (%.3f)", e.VectorRank, e.VectorSimilarity))
		}
		parts = append(parts, e.Method)
		fmt.Fprintf(w, "   %s\n", strings.Join(parts, ", "))
		fmt.Fprintf(w, "   %s\n", snippet(rec.Content, 220))
	}
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
