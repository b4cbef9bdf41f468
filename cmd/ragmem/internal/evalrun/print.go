package evalrun

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/ragmem/ragmem/internal/eval"
)

// JSON is what --json prints: the report of a single data set, or every
// data set's report and their macro average.
func (r *Reports) JSON() any {
	if len(r.reports) == 1 {
		return r.reports[0]
	}
	return struct {
		Datasets []*eval.Report     `json:"datasets"`
		Macro    []eval.MacroResult `json:"macro"`
	}{r.reports, eval.Macro(r.reports)}
}

// Print writes each data set's table (and its queries' rankings when
// asked), then the macro average of several.
func (r *Reports) Print(w io.Writer) {
	labels := r.fusions > 1
	for i, rep := range r.reports {
		if i > 0 {
			fmt.Fprintln(w)
		}
		printReport(w, rep, labels)
		if r.perQuery {
			fmt.Fprintln(w)
			printPerQuery(w, rep)
		}
	}
	if len(r.reports) > 1 {
		fmt.Fprintln(w)
		printMacro(w, r.reports, labels)
	}
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

func newProgress(w io.Writer) *evalProgress {
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
