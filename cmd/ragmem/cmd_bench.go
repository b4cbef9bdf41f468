package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/bench"
	"github.com/ragmem/ragmem/cmd/ragmem/internal/settings"
	"github.com/ragmem/ragmem/search"
)

// newBenchCmd is `ragmem bench`: its flags become bench.Options, the run
// is internal/bench's, and the figures are printed as a table or JSON.
func newBenchCmd(g *globals) *cobra.Command {
	o := bench.Options{}
	var asJSON bool
	var corpora, embedders, fusion string
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure indexing, query latency, recall, cold open, memory and disk on generated or SciFact corpora",
		Long: `bench builds fresh stores in a temporary directory (never the data directory), one per
corpus and embedder, and measures: indexing throughput, hybrid/vector/full-text query latency
(p50/p95/p99, top 10 as the CLI searches), the vector index alone for a hybrid candidate pool
(top 100, approximate and exact) next to chromem-go's exhaustive query on the same vectors,
recall@10 of the approximate vector search against the exact one, nDCG@10, cold open time and
the first query after it, resident memory and disk size.

Embedders: --embedders lists embedder specs measured side by side (default: the one --embedder,
$RAGMEM_EMBEDDER or the config file names, else "lexical,randproj": the offline lexical default
and the dense randproj test embedder). "loopback:SPEC" serves SPEC's vectors from an in-process
OpenAI-compatible server on 127.0.0.1 and measures ragmem through its openai embedder (the full
client path: HTTP, JSON, batching). By default every chunk is embedded before indexing starts
(--pre-embed), so that the indexing figure excludes the embedder's own time, which is reported
on its own line; --pre-embed=false times both together.

Corpora: "scifact" (the BEIR SciFact collection, found in shared/eval/scifact above the working
directory or in $RAGMEM_SCIFACT_DIR) and synthetic sizes such as 10k, 100k or 1m (one chunk of
about 110 words per document, known-item queries). --peers adds chromem-go alone (vector) and
bleve alone (BM25) on the same chunks; --export writes chunks, vectors and queries for the Node
peers of bench/run.sh.`,
		Example: "  ragmem bench --corpora scifact,10k\n  ragmem bench --corpora 100k --embedders randproj,loopback:randproj\n  ragmem bench --corpora 100k --peers --json > bench.json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Corpora = strings.Split(corpora, ",")
			if fusion != "" {
				fo, err := search.ParseFusionSpec(fusion)
				if err != nil {
					return err
				}
				o.Fusion = fo
			}
			o.Log = g.Stderr
			c, err := g.ResolveEmbedder(nil)
			if err != nil {
				return err
			}
			if o.Embedders, err = bench.ParseEmbedders(embedders, &c.Build); err != nil {
				return err
			}
			defer bench.CloseEmbedders(o.Embedders)
			if len(o.Embedders) == 0 && c.From != settings.SrcDefault {
				// The embedder --embedder, $RAGMEM_EMBEDDER or the config
				// file names.
				emb, err := g.BuildEmbedder(c)
				if err != nil {
					return err
				}
				o.Embedders = []bench.Embedder{{Name: c.Spec.String(), Embedder: emb}}
			} else if len(o.Embedders) == 0 {
				if o.Embedders, err = bench.ParseEmbedders(strings.Join(bench.DefaultEmbedders, ","), &c.Build); err != nil {
					return err
				}
				defer bench.CloseEmbedders(o.Embedders)
			}
			res, err := bench.Run(cmd.Context(), o)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(g.stdout, res)
			}
			bench.Print(g.stdout, res)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&corpora, "corpora", "scifact,10k", "comma-separated corpora: scifact and/or synthetic sizes (10k, 100k, 1m)")
	f.IntVar(&o.Queries, "queries", 300, "queries per synthetic corpus")
	f.IntVar(&o.Words, "words", 110, "words per synthetic document (110 make one chunk of about 350 tokens)")
	f.StringVar(&o.WorkDir, "work-dir", "", "directory for the stores (default a temporary directory)")
	f.BoolVar(&o.Keep, "keep", false, "keep the stores after the run")
	f.StringVar(&o.Export, "export", "", "export chunks, vectors and queries of each corpus to this directory (for bench/run.sh)")
	f.BoolVar(&o.Peers, "peers", false, "also measure chromem-go alone and bleve alone on the same chunks")
	f.IntVar(&o.ChromemMax, "chromem-max", 200000, "measure chromem-go's exhaustive query on corpora of at most this many chunks")
	f.IntVar(&o.Batch, "batch", 1000, "documents per indexing call")
	f.IntVar(&o.Writers, "writers", 2, "indexing calls in flight (chunking and embedding of one overlap the write of another)")
	f.StringVar(&o.CPUProfile, "cpuprofile", "", "write CPU profiles of indexing and querying to FILE-CORPUS-index.pprof and FILE-CORPUS-query.pprof")
	f.StringVar(&embedders, "embedders", "", `comma-separated embedder specs to measure side by side ("loopback:SPEC" serves SPEC over a loopback OpenAI-compatible server); default --embedder if given, else lexical,randproj`)
	f.BoolVar(&o.PreEmbed, "pre-embed", true, "embed every chunk before indexing, so that indexing is timed without the embedder (whose throughput is reported apart)")
	f.StringVar(&fusion, "fusion", "", `hybrid fusion with its parameters, as for eval (for example "relative:feedback=0" to time fusion without the feedback pass); default the engine's`)
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
