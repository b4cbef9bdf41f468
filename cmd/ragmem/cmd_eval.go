package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ragmem/ragmem/eval"
	"github.com/ragmem/ragmem/index/local"
	"github.com/ragmem/ragmem/search"
)

func newEvalCmd(g *globals) *cobra.Command {
	var (
		dataset, split, fusion, bm25, tmp string
		modes                             []string
		rrfK, pool, depth                 int
		alpha                             float64
		asJSON, perQuery                  bool
	)
	cmd := &cobra.Command{
		Use:   "eval --dataset DIR [flags]",
		Short: "Measure retrieval quality on a BEIR-format data set",
		Long: "eval indexes the corpus of a BEIR-format folder (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv)\n" +
			"into a temporary store through the normal pipeline, runs every judged query in each mode and\n" +
			"prints nDCG@10, Recall@10, Recall@100, MRR@10 (trec_eval definitions, document level: a\n" +
			"document ranks with its best chunk), query latency p50/p95 and indexing time.\n\n" +
			"--bm25 tunes the full-text index: comma-separated k1=X, b=X, stem=porter|snowball|plural|none,\n" +
			"stop=lucene|english|none, title=W, prox=W, rm3=DOCS/TERMS/WEIGHT (or rm3=1 for 10/10/0.5).",
		Example: "  ragmem eval --dataset ../shared/eval/scifact --modes fulltext,hybrid\n" +
			"  ragmem eval --dataset ../shared/eval/scifact --split train --bm25 k1=1.2,b=0.75 --json\n" +
			"  ragmem eval --dataset ../shared/eval/scifact --embedder openai:nomic-embed-text --base-url http://localhost:11434/v1",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dataset == "" {
				return fmt.Errorf("--dataset is required (a BEIR folder with corpus.jsonl, queries.jsonl and qrels/)")
			}
			var ms []search.Mode
			for _, s := range modes {
				for _, part := range strings.Split(s, ",") {
					if strings.TrimSpace(part) == "" {
						continue
					}
					m, err := search.ParseMode(part)
					if err != nil {
						return err
					}
					ms = append(ms, m)
				}
			}
			fu, err := search.ParseFusion(fusion)
			if err != nil {
				return err
			}
			ftOpts, err := local.ParseFullTextOptions(bm25)
			if err != nil {
				return err
			}
			emb, err := g.newEmbedder()
			if err != nil {
				return err
			}
			ds, err := eval.LoadBEIR(dataset, split)
			if err != nil {
				return err
			}
			opts := &eval.Options{
				Modes:    ms,
				Search:   &search.Options{Fusion: fu, RRFK: rrfK, Alpha: alpha, CandidatePool: pool},
				Embedder: emb,
				FullText: ftOpts,
				Depth:    depth,
				Dir:      tmp,
				PerQuery: perQuery,
			}
			bar := newEvalProgress(g.stderr)
			if bar != nil {
				opts.Progress = bar.update
				defer bar.finish()
			}
			rep, err := eval.Run(cmd.Context(), ds, opts)
			if bar != nil {
				bar.finish()
			}
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(g.stdout, rep)
			}
			printReport(g.stdout, rep)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dataset, "dataset", "", "BEIR-format data set folder (required)")
	f.StringVar(&split, "split", "test", "qrels split to evaluate: qrels/SPLIT.tsv (tune on train, report test)")
	f.StringSliceVar(&modes, "modes", []string{"fulltext", "vector", "hybrid"}, "search modes to evaluate")
	f.StringVar(&fusion, "fusion", string(search.DefaultFusion), "hybrid fusion: relative or rrf")
	f.IntVar(&rrfK, "rrf-k", 0, "k of reciprocal rank fusion (default: the search default)")
	f.Float64Var(&alpha, "alpha", 0, "vector weight of relative fusion (default: the search default)")
	f.IntVar(&pool, "pool", 0, "candidates per side before fusion (default: the search default for the depth asked)")
	f.StringVar(&bm25, "bm25", "", "full-text options, e.g. k1=0.9,b=0.4,stem=porter,stop=lucene (default: the store defaults)")
	f.IntVar(&depth, "depth", eval.DefaultDepth, "documents ranked per query (at least 100 for Recall@100)")
	f.StringVar(&tmp, "tmp", "", "where to create the temporary store (default the system temp directory)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.BoolVar(&perQuery, "per-query", false, "include each query's metrics and top 10 in the JSON report")
	return cmd
}

func printReport(w io.Writer, r *eval.Report) {
	fmt.Fprintf(w, "data set   %s (%s split): %d documents indexed", r.Dataset, r.Split, r.Documents)
	if r.Skipped > 0 {
		fmt.Fprintf(w, ", %d without text skipped", r.Skipped)
	}
	fmt.Fprintf(w, ", %d chunks, %d queries\n", r.Chunks, r.Queries)
	fmt.Fprintf(w, "embedder   %s\n", r.Embedder)
	fmt.Fprintf(w, "full text  %s\n", r.FullText)
	fmt.Fprintf(w, "indexing   %.1f s\n\n", r.IndexSeconds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mode\tmethod\tnDCG@10\tRecall@10\tRecall@100\tMRR@10\tp50 ms\tp95 ms")
	for _, m := range r.Results {
		fmt.Fprintf(tw, "%s\t%s\t%.4f\t%.4f\t%.4f\t%.4f\t%.2f\t%.2f\n",
			m.Mode, m.Method, m.NDCG10, m.Recall10, m.Recall100, m.MRR10, m.LatencyP50Ms, m.LatencyP95Ms)
	}
	tw.Flush()
}

// evalProgress draws a progress bar per stage on a terminal.
type evalProgress struct {
	out   *os.File
	stage string
	bar   *progressbar.ProgressBar
}

func newEvalProgress(w io.Writer) *evalProgress {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &evalProgress{out: f}
}

func (p *evalProgress) update(pr eval.Progress) {
	if pr.Stage != p.stage || p.bar == nil {
		p.finish()
		p.stage = pr.Stage
		p.bar = progressbar.NewOptions(pr.Total,
			progressbar.OptionSetWriter(p.out), progressbar.OptionSetDescription(fmt.Sprintf("%-16s", pr.Stage)),
			progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("it"),
			progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(100_000_000))
	}
	_ = p.bar.Set(pr.Done)
}

func (p *evalProgress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		p.bar = nil
	}
}
