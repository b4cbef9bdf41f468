package main

import (
	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/evalrun"
)

// newEvalCmd is `ragmem eval`: its flags become evalrun.Options, the run
// is internal/evalrun's, and the reports are printed as tables or JSON.
func newEvalCmd(g *globals) *cobra.Command {
	o := evalrun.Options{NewEmbedder: g.NewEmbedder}
	var asJSON bool
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
			o.Log = g.Stderr
			reps, err := evalrun.Run(cmd.Context(), o)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(g.stdout, reps.JSON())
			}
			reps.Print(g.stdout)
			return nil
		},
	}
	o.AddFlags(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}
