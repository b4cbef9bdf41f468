package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/ingest"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/sample"
	"github.com/ragmem/ragmem/prefs"
	"github.com/ragmem/ragmem/rag"
)

func newDemoCmd(g *globals) *cobra.Command {
	var corpus, question, model string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Index the sample corpus into a temporary store and print the context for a sample question",
		Long: "demo shows the whole pipeline offline, with no configuration, from any folder: it indexes\n" +
			"the sample corpus built into ragmem (or --corpus) into a fresh temporary data directory (or\n" +
			"--dir), adds a sample preference, and prints the <knowledge_context> message an agent would\n" +
			"receive for --question. With --dir, the sample files are kept in <dir>/demo-corpus.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if g.Dir == "" && os.Getenv("RAGMEM_DIR") == "" {
				tmp, err := os.MkdirTemp("", "ragmem-demo-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(tmp)
				g.Dir = tmp
			}
			files, from, err := demoFiles(g, corpus)
			if err != nil {
				return err
			}
			return g.withStore(ctx, func(m rag.Memory) error {
				sum := ingest.Summary{}
				if _, err := ingest.Files(ctx, ingest.Output{Stdout: g.stdout, Stderr: g.Stderr}, m, files, &ingest.Options{DocType: index.DocKnowledge}, &sum); err != nil {
					return err
				}
				if _, err := m.AddPreference(ctx, rag.PreferenceRequest{Type: string(prefs.Expertise), Content: "User is a backend developer who knows Go well"}); err != nil {
					return err
				}
				fmt.Fprintf(g.Stderr, "# %s from %s; question: %q\n\n", sum.String(), from, question)
				c, err := m.BuildContext(ctx, rag.ContextRequest{Query: question, Model: model, SystemPrompt: defaultSystemPrompt + "\n\n" + rag.ReferenceRule})
				if err != nil {
					return err
				}
				fmt.Fprintln(g.stdout, c.Message.Content)
				fmt.Fprintf(g.Stderr, "\n# role=%s; %s; %d tokens of a %d-token knowledge budget (model %s)\n",
					c.Message.Role, c.Summary, c.Tokens.Total, c.Budgets.KnowledgeBudget, model)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&corpus, "corpus", "", "folder of documents to index instead of the built-in sample corpus")
	f.StringVar(&question, "question", "How does hybrid search combine BM25 and vectors?", "question to build the context for")
	f.StringVar(&model, "model", "gpt-4o", "chat model whose tokenizer and window size the budget uses")
	return cmd
}

// demoFiles lists the files the demo indexes, and says where they come
// from: the folder --corpus names, else the sample corpus built into the
// binary, written to <data dir>/demo-corpus so that the sources the store
// records are real files (a temporary data directory takes them with it).
func demoFiles(g *globals, corpus string) (files []string, from string, err error) {
	if corpus != "" {
		t, err := ingest.NewTarget(corpus, nil, g.Stderr)
		if err == nil {
			files, err = t.Files()
		}
		if err != nil {
			return nil, "", fmt.Errorf("corpus: %w", err)
		}
		return files, corpus, nil
	}
	dir, err := g.DataDir()
	if err != nil {
		return nil, "", err
	}
	files, err = sample.Write(filepath.Join(dir, "demo-corpus"))
	if err != nil {
		return nil, "", err
	}
	return files, "the built-in sample corpus", nil
}
