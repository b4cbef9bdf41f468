package bench

import (
	"fmt"
	"io"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/units"
)

// Print writes the results as tables: each corpus and embedder, then
// the corpora measured with several embedders side by side.
func Print(w io.Writer, rs []Result) {
	ms := func(l Latency) string { return fmt.Sprintf("%.2f / %.2f / %.2f", l.P50, l.P95, l.P99) }
	for _, r := range rs {
		fmt.Fprintf(w, "corpus %s: %d documents, %d chunks, embedder %s (%s), %d dimensions (GOMAXPROCS %d, load %.1f)\n", r.Corpus, r.Documents, r.Chunks, r.EmbedderName, r.Embedder, r.Dimension, r.GOMAXPROCS, r.Load1)
		if r.PreEmbedded {
			fmt.Fprintf(w, "  embedding (beforehand)   %.0f chunks/s (%.1f s; not part of indexing; %d chunks embedded again while indexing)\n", r.EmbedChunksPerSec, r.EmbedSeconds, r.EmbedMisses)
		}
		what := "chunk, embed, journal, both indexes"
		if r.PreEmbedded {
			what = "chunk, journal, both indexes; embedder excluded"
		}
		fmt.Fprintf(w, "  indexing                 %.0f chunks/s (%.1f s, %s, %d writers; %.0f chunks per CPU second; settled %.0f s later)\n",
			r.ChunksPerSec, r.IndexSeconds, what, r.Writers, float64(r.Chunks)/max(r.IndexCPUSeconds, 1e-9), r.SettleSeconds)
		fmt.Fprintf(w, "  calibration              %.1f s (%.1f%% of indexing)\n", r.CalibrateSeconds, 100*r.CalibrateSeconds/max(r.IndexSeconds, 1e-9))
		fmt.Fprintf(w, "  hybrid    p50/p95/p99 ms %s   nDCG@10 %.4f   %s\n", ms(r.Hybrid), r.NDCG10["hybrid"], r.HybridMethod)
		fmt.Fprintf(w, "  vector    p50/p95/p99 ms %s   nDCG@10 %.4f\n", ms(r.Vector), r.NDCG10["vector"])
		fmt.Fprintf(w, "  fulltext  p50/p95/p99 ms %s   nDCG@10 %.4f\n", ms(r.FullText), r.NDCG10["fulltext"])
		fmt.Fprintf(w, "  vector index top 100     %s (exact scan %s), recall@10 %.4f\n", ms(r.VectorPool), ms(r.VectorPoolExact), r.Recall10)
		if r.Chromem != nil {
			fmt.Fprintf(w, "  chromem-go top 100       %s; hybrid p50 is %.1fx faster\n", ms(*r.Chromem), r.HybridSpeedup)
		}
		fmt.Fprintf(w, "  cold open                %.2f s (first query %.1f ms; vector codes loaded, not rebuilt: %v)\n", r.ColdOpenSeconds, r.ColdFirstQueryMs, r.ColdCodesLoaded)
		fmt.Fprintf(w, "  memory                   RSS %s, heap %s after indexing; RSS %s, heap %s after cold open\n",
			units.Bytes(r.RSSAfterIndexBytes), units.Bytes(r.HeapAfterIndexBytes), units.Bytes(r.RSSAfterOpenBytes), units.Bytes(r.HeapAfterOpenBytes))
		fmt.Fprintf(w, "  disk                     %s (bleve %s)\n", units.Bytes(r.DiskBytes), units.Bytes(r.DiskBleveBytes))
		for _, p := range r.Peers {
			fmt.Fprintf(w, "  peer %-20s index %.1f s (%.0f chunks/s), query p50/p95/p99 ms %s, nDCG@10 %.4f\n", p.Name, p.IndexSeconds, p.PerSecond, ms(p.Query), p.NDCG10)
		}
	}
	printSideBySide(w, rs)
}

// printSideBySide prints, for each corpus measured with more than one
// embedder, the headline figures in one column per embedder.
func printSideBySide(w io.Writer, rs []Result) {
	byCorpus := map[string][]Result{}
	var order []string
	for _, r := range rs {
		if len(byCorpus[r.Corpus]) == 0 {
			order = append(order, r.Corpus)
		}
		byCorpus[r.Corpus] = append(byCorpus[r.Corpus], r)
	}
	for _, c := range order {
		cols := byCorpus[c]
		if len(cols) < 2 {
			continue
		}
		fmt.Fprintf(w, "\nside by side, corpus %s\n", c)
		row := func(label string, cell func(r Result) string) {
			fmt.Fprintf(w, "  %-34s", label)
			for _, r := range cols {
				fmt.Fprintf(w, " %22s", cell(r))
			}
			fmt.Fprintln(w)
		}
		row("embedder", func(r Result) string { return r.EmbedderName })
		row("dimensions", func(r Result) string { return fmt.Sprint(r.Dimension) })
		row("indexing, chunks/s", func(r Result) string { return fmt.Sprintf("%.0f", r.ChunksPerSec) })
		row("embedding alone, chunks/s", func(r Result) string {
			if !r.PreEmbedded {
				return "in indexing"
			}
			return fmt.Sprintf("%.0f", r.EmbedChunksPerSec)
		})
		row("hybrid p50 ms", func(r Result) string { return fmt.Sprintf("%.2f", r.Hybrid.P50) })
		row("vector p50 ms", func(r Result) string { return fmt.Sprintf("%.2f", r.Vector.P50) })
		row("vector index top 100 p50 ms", func(r Result) string { return fmt.Sprintf("%.2f", r.VectorPool.P50) })
		row("exact scan top 100 p50 ms", func(r Result) string { return fmt.Sprintf("%.2f", r.VectorPoolExact.P50) })
		row("recall@10 vs exact", func(r Result) string { return fmt.Sprintf("%.4f", r.Recall10) })
		row("hybrid vs chromem-go top 100", func(r Result) string {
			if r.Chromem == nil {
				return "-"
			}
			return fmt.Sprintf("%.1fx", r.HybridSpeedup)
		})
		row("nDCG@10 hybrid", func(r Result) string { return fmt.Sprintf("%.4f", r.NDCG10["hybrid"]) })
		row("cold open s", func(r Result) string { return fmt.Sprintf("%.2f", r.ColdOpenSeconds) })
		row("first query after open ms", func(r Result) string { return fmt.Sprintf("%.1f", r.ColdFirstQueryMs) })
		row("RSS after cold open", func(r Result) string { return units.Bytes(r.RSSAfterOpenBytes) })
		row("disk", func(r Result) string { return units.Bytes(r.DiskBytes) })
	}
}
