package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
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
		split, bm25, tmp        string
		turns, signals, unit    string
		locomo                  []string
		datasets, modes, fusion []string
		rrfK, pool, depth       int
		alpha                   float64
		asJSON, perQuery        bool
		asReturned, keepDup     bool
		perSource               int
	)
	cmd := &cobra.Command{
		Use:   "eval (--dataset DIR | --locomo FILE.json) [...] [flags]",
		Short: "Measure retrieval quality on BEIR-format data sets and LoCoMo conversations",
		Long: "eval indexes the corpus of a BEIR-format folder (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv)\n" +
			"into a temporary store through the normal pipeline, runs every judged query in each mode and\n" +
			"prints nDCG@10, Recall@5/10/25/100, MRR@10 (trec_eval definitions, document level: a document\n" +
			"ranks with its best chunk), query latency p50/p95 and indexing time. With several data sets\n" +
			"(--dataset repeated or comma-separated, or a folder whose subfolders are data sets) it prints\n" +
			"each, then their macro average (every data set counts the same).\n\n" +
			"--locomo FILE.json (repeated, comma-separated, or a folder of .json files) evaluates conversational\n" +
			"recall on LoCoMo conversations instead: every turn is written as a memory with its speaker, the\n" +
			"session's time and the two turns before it and the one after as context (--turns shapes this), every question is asked at\n" +
			"the end of the conversation, and each question category gets its own rows. --signals sets the\n" +
			"memory ranking signals: speaker=W, time=W, question=W (0: off), slack=DAYS.\n\n" +
			"--fusion FUSION may be repeated to compare hybrid fusions on one index: METHOD[:key=value,...]\n" +
			"with METHOD relative, rrf or dbsf and keys alpha=A|auto|calibrated, k=K (rrf), scale=C, agree=W.\n\n" +
			"--bm25 tunes the full-text index: comma-separated k1=X, b=X, stem=porter|snowball|plural|none,\n" +
			"stop=lucene|english|none, title=W, prox=W, rm3=DOCS/TERMS/WEIGHT (or rm3=1 for 10/10/0.5).",
		Example: "  ragmem eval --dataset ../shared/eval/scifact --modes fulltext,hybrid\n" +
			"  ragmem eval --dataset ../shared/eval/locomo-dev          # its three conversations, and their macro average\n" +
			"  ragmem eval --locomo ../shared/eval/locomo-dev/raw       # the same conversations as memories, per category\n" +
			"  ragmem eval --locomo 26.json,30.json --turns context=0 --signals speaker=0,time=0\n" +
			"  ragmem eval --dataset ../shared/eval/scifact --split train --fusion relative --fusion rrf --fusion dbsf:alpha=0.2\n" +
			"  ragmem eval --dataset ../shared/eval/scifact --split train --bm25 k1=1.2,b=0.75 --json\n" +
			"  ragmem eval --dataset ../shared/eval/scifact --embedder openai:nomic-embed-text --base-url http://localhost:11434/v1",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(datasets) == 0 && len(locomo) == 0 {
				return fmt.Errorf("--dataset or --locomo is required (a BEIR folder with corpus.jsonl, queries.jsonl and qrels/, or a LoCoMo conversation file)")
			}
			if len(datasets) > 0 && len(locomo) > 0 {
				return fmt.Errorf("--dataset and --locomo cannot be mixed: their macro averages mean different things")
			}
			if len(locomo) == 0 && turns != "" {
				return fmt.Errorf("--turns applies to --locomo only")
			}
			turnOpts, err := eval.ParseTurnOptions(turns)
			if err != nil {
				return err
			}
			sig, err := search.ParseSignals(signals)
			if err != nil {
				return err
			}
			u, err := search.ParseUnit(unit)
			if err != nil {
				return err
			}
			dirs, err := expandDatasets(datasets)
			if err != nil {
				return err
			}
			files, err := expandLoCoMo(locomo)
			if err != nil {
				return err
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
			if len(fusion) == 0 {
				fusion = []string{string(search.DefaultFusion)}
			}
			var hybrids []eval.Hybrid
			for _, spec := range fusion {
				so, err := search.ParseFusionSpec(spec)
				if err != nil {
					return err
				}
				if so.Alpha == 0 {
					so.Alpha = alpha
				}
				if so.RRFK == 0 {
					so.RRFK = rrfK
				}
				so.CandidatePool = pool
				so.MaxPerSource, so.KeepDuplicates = perSource, keepDup
				if perSource == 0 {
					so.MaxPerSource = -1
				}
				so.SpeakerWeight, so.TimeWeight, so.QuestionWeight, so.TimeSlack = sig.SpeakerWeight, sig.TimeWeight, sig.QuestionWeight, sig.TimeSlack
				so.Unit = u
				hybrids = append(hybrids, eval.Hybrid{Label: spec, Search: so})
			}
			ftOpts, err := local.ParseFullTextOptions(bm25)
			if err != nil {
				return err
			}
			emb, err := g.newEmbedder()
			if err != nil {
				return err
			}
			sets := make([]*eval.Dataset, 0, len(dirs)+len(files))
			for _, dir := range dirs {
				ds, err := eval.LoadBEIR(dir, split)
				if err != nil {
					return err
				}
				sets = append(sets, ds)
			}
			for _, f := range files {
				c, err := eval.LoadLoCoMo(f)
				if err != nil {
					return err
				}
				if c.DroppedEvidence > 0 || c.UndatedSessions > 0 {
					fmt.Fprintf(g.stderr, "%s: %d evidence ids name no turn (%d questions left without evidence, skipped); %d sessions without a readable date\n",
						c.Name, c.DroppedEvidence, c.Skipped, c.UndatedSessions)
				}
				sets = append(sets, c.Dataset(turnOpts))
			}
			var reps []*eval.Report
			for _, ds := range sets {
				opts := &eval.Options{
					Modes:    ms,
					Search:   &hybrids[0].Search,
					Hybrids:  hybrids,
					Embedder: emb,
					FullText: ftOpts,
					Depth:    depth,
					Dir:      tmp,
					PerQuery: perQuery,

					AsReturned: asReturned,
				}
				bar := newEvalProgress(g.stderr)
				if bar != nil {
					prefix := ""
					if len(sets) > 1 {
						prefix = ds.Name + " "
					}
					opts.Progress = func(p eval.Progress) { p.Stage = prefix + p.Stage; bar.update(p) }
				}
				rep, err := eval.Run(cmd.Context(), ds, opts)
				if bar != nil {
					bar.finish()
				}
				if err != nil {
					return fmt.Errorf("%s: %w", ds.Name, err)
				}
				reps = append(reps, rep)
			}
			if asJSON {
				if len(reps) == 1 {
					return writeJSON(g.stdout, reps[0])
				}
				return writeJSON(g.stdout, struct {
					Datasets []*eval.Report     `json:"datasets"`
					Macro    []eval.MacroResult `json:"macro"`
				}{reps, eval.Macro(reps)})
			}
			for i, rep := range reps {
				if i > 0 {
					fmt.Fprintln(g.stdout)
				}
				printReport(g.stdout, rep, len(hybrids) > 1)
				if perQuery {
					fmt.Fprintln(g.stdout)
					printPerQuery(g.stdout, rep)
				}
			}
			if len(reps) > 1 {
				fmt.Fprintln(g.stdout)
				printMacro(g.stdout, reps, len(hybrids) > 1)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&datasets, "dataset", nil, "BEIR-format data set folder; repeat or comma-separate for several; a folder of data sets stands for each")
	f.StringSliceVar(&locomo, "locomo", nil, "LoCoMo conversation file (.json); repeat or comma-separate for several; a folder stands for its .json files")
	f.StringVar(&turns, "turns", "", "how --locomo writes turns as memories: title=speaker|date|speaker+date|session|none, prefix=0|1, context=N (turns before), next=N (turns after), attrs=0|1 (default: title=speaker+date,context=2,next=1)")
	f.StringVar(&unit, "unit", "", "what a conversation's result is: turn, round (a user's turn with its replies) or session; a unit's turns count in the ranking in the order of their own scores (default turn)")
	f.StringVar(&signals, "signals", "", "memory ranking signals: speaker=W, time=W, question=W (0: off), slack=DAYS (default: the search defaults)")
	f.StringVar(&split, "split", "test", "qrels split to evaluate: qrels/SPLIT.tsv (tune on train, report test)")
	f.StringSliceVar(&modes, "modes", []string{"fulltext", "vector", "hybrid"}, "search modes to evaluate")
	f.StringArrayVar(&fusion, "fusion", nil, "hybrid fusion METHOD[:alpha=A|auto|calibrated,k=K,scale=C,agree=W], METHOD relative, rrf or dbsf; repeat to compare (default relative)")
	f.IntVar(&rrfK, "rrf-k", 0, "k of reciprocal rank fusion, for --fusion values that do not set it (default: the search default)")
	f.Float64Var(&alpha, "alpha", 0, "vector weight, for --fusion values that do not set it (default: automatic, see docs/evaluation.md)")
	f.IntVar(&pool, "pool", 0, "candidates per side before fusion (default: the search default for the depth asked)")
	f.StringVar(&bm25, "bm25", "", "full-text options, e.g. k1=0.9,b=0.4,stem=porter,stop=lucene (default: the store defaults)")
	f.IntVar(&depth, "depth", eval.DefaultDepth, "documents ranked per query (at least 100 for Recall@100)")
	f.StringVar(&tmp, "tmp", "", "where to create the temporary store (default the system temp directory)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.BoolVar(&perQuery, "per-query", false, "also give each query's metrics and ranking (--depth documents)")
	f.BoolVar(&asReturned, "as-returned", false, "rank the documents of the first --depth results as returned (a document's later results count as irrelevant), not each document once by its best result")
	f.IntVar(&perSource, "max-per-source", search.DefaultMaxPerSource, "most results per source (0: no cap)")
	f.BoolVar(&keepDup, "keep-duplicates", false, "keep identical and near-identical chunks of other sources")
	return cmd
}

// expandLoCoMo replaces a folder by the .json files in it, in name order.
func expandLoCoMo(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", eval.ErrBadDataset, err)
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", eval.ErrBadDataset, err)
		}
		n := len(out)
		for _, e := range entries {
			if !e.IsDir() && strings.EqualFold(filepath.Ext(e.Name()), ".json") {
				out = append(out, filepath.Join(p, e.Name()))
			}
		}
		if len(out) == n {
			return nil, fmt.Errorf("%w: %s has no .json file", eval.ErrBadDataset, p)
		}
	}
	return out, nil
}

// expandDatasets replaces a folder that holds no corpus.jsonl but whose
// subfolders do by those subfolders, in name order.
func expandDatasets(dirs []string) ([]string, error) {
	var out []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "corpus.jsonl")); err == nil {
			out = append(out, d)
			continue
		}
		entries, err := os.ReadDir(d)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", eval.ErrBadDataset, err)
		}
		n := len(out)
		for _, e := range entries {
			if sub := filepath.Join(d, e.Name()); e.IsDir() {
				if _, err := os.Stat(filepath.Join(sub, "corpus.jsonl")); err == nil {
					out = append(out, sub)
				}
			}
		}
		if len(out) == n {
			out = append(out, d) // LoadBEIR says what is missing
		}
	}
	return out, nil
}

func printReport(w io.Writer, r *eval.Report, labels bool) {
	fmt.Fprintf(w, "data set   %s (%s split): %d documents indexed", r.Dataset, r.Split, r.Documents)
	if r.Skipped > 0 {
		fmt.Fprintf(w, ", %d without text skipped", r.Skipped)
	}
	fmt.Fprintf(w, ", %d chunks, %d queries\n", r.Chunks, r.Queries)
	fmt.Fprintf(w, "embedder   %s\n", r.Embedder)
	fmt.Fprintf(w, "full text  %s\n", r.FullText)
	if r.Memories != "" {
		fmt.Fprintf(w, "memories   %s\n", r.Memories)
	}
	fmt.Fprintf(w, "indexing   %.1f s\n", r.IndexSeconds)
	if c := r.Calibration; c != nil {
		for _, dt := range slices.Sorted(maps.Keys(c.Types)) {
			tc := c.Types[dt]
			fmt.Fprintf(w, "calibrated %s alpha %.2f: MRR@10 of %d pseudo-questions, BM25 %.3f, vector %.3f, fused %.3f (%.1f s)\n",
				dt, tc.Alpha, tc.Samples, tc.MRRFullText, tc.MRRVector, tc.MRRFused, r.CalibrateSeconds)
		}
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mode\t"+fusionHeader(labels)+"method\tnDCG@10\tR@5\tR@10\tR@25\tR@100\tMRR@10\tp50 ms\tp95 ms")
	for _, m := range r.Results {
		fmt.Fprintf(tw, "%s\t%s%s\t%s\t%.2f\t%.2f\n", m.Mode, fusionCell(labels, m.Fusion), m.Method, metricCells(m.Metrics),
			m.LatencyP50Ms, m.LatencyP95Ms)
	}
	tw.Flush()
	rows := make([]categoryRows, len(r.Results))
	for i, m := range r.Results {
		rows[i] = categoryRows{m.Mode, m.Fusion, m.Categories}
	}
	printCategories(w, rows, labels)
}

// categoryRows are one mode's per-category metrics.
type categoryRows struct {
	mode, fusion string
	cats         []eval.CategoryResult
}

// printCategories prints the per-category metrics of each mode, if any.
func printCategories(w io.Writer, rows []categoryRows, labels bool) {
	any := false
	for _, r := range rows {
		any = any || len(r.cats) > 0
	}
	if !any {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "category\tmode\t"+fusionHeader(labels)+"queries\tnDCG@10\tR@5\tR@10\tR@25\tR@100\tMRR@10")
	for _, r := range rows {
		for _, c := range r.cats {
			fmt.Fprintf(tw, "%s\t%s\t%s%d\t%s\n", c.Category, r.mode, fusionCell(labels, r.fusion), c.Queries, metricCells(c.Metrics))
		}
	}
	tw.Flush()
}

func printMacro(w io.Writer, reps []*eval.Report, labels bool) {
	names := make([]string, len(reps))
	for i, r := range reps {
		names[i] = r.Dataset
	}
	fmt.Fprintf(w, "macro average over %d data sets (%s)\n\n", len(reps), strings.Join(names, ", "))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mode\t"+fusionHeader(labels)+"method\tnDCG@10\tR@5\tR@10\tR@25\tR@100\tMRR@10")
	for _, m := range eval.Macro(reps) {
		method := m.Method
		if method == "" {
			method = "(differs)"
		}
		fmt.Fprintf(tw, "%s\t%s%s\t%s\n", m.Mode, fusionCell(labels, m.Fusion), method, metricCells(m.Metrics))
	}
	tw.Flush()
	var rows []categoryRows
	for _, m := range eval.Macro(reps) {
		r := categoryRows{mode: m.Mode, fusion: m.Fusion}
		for _, c := range m.Categories {
			r.cats = append(r.cats, c.CategoryResult)
		}
		rows = append(rows, r)
	}
	printCategories(w, rows, labels)
}

func printPerQuery(w io.Writer, r *eval.Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "query\tmode\tfusion\tnDCG@10\tR@5\tR@10\tR@25\tR@100\tMRR@10\tranking")
	for _, m := range r.Results {
		for _, q := range m.PerQuery {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", q.ID, m.Mode, m.Fusion, metricCells(q.Metrics), strings.Join(q.Ranking, " "))
		}
	}
	tw.Flush()
}

func fusionHeader(labels bool) string {
	if labels {
		return "fusion\t"
	}
	return ""
}

func fusionCell(labels bool, f string) string {
	if labels {
		return f + "\t"
	}
	return ""
}

func metricCells(m eval.Metrics) string {
	return fmt.Sprintf("%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t%.4f", m.NDCG10, m.Recall5, m.Recall10, m.Recall25, m.Recall100, m.MRR10)
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
