package main

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/units"
	"github.com/ragmem/ragmem/internal/embed"
)

func newModelCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "model",
		Short: "Download and list Model2Vec embedding models",
		Long: "Model2Vec models (e.g. minishlab/potion-base-8M, minishlab/potion-retrieval-32M) are small static\n" +
			"embedders that give semantic search offline. Pull one once, then use --embedder model2vec:OWNER/NAME.\n" +
			"Models are kept in $RAGMEM_MODELS, else the user cache directory (~/.cache/ragmem/models on Linux).",
	}
	cmd.AddCommand(newModelPullCmd(g), newModelListCmd(g))
	return cmd
}

func newModelPullCmd(g *globals) *cobra.Command {
	var revision, endpoint string
	var force bool
	cmd := &cobra.Command{
		Use:   "pull OWNER/NAME",
		Short: "Download a Model2Vec model from the Hugging Face hub, verifying every file",
		Example: "  ragmem model pull minishlab/potion-base-8M\n" +
			"  ragmem --embedder model2vec:minishlab/potion-base-8M index docs/",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := &embed.PullOptions{Endpoint: endpoint, Revision: revision, Force: force}
			var bar *progressbar.ProgressBar
			cur := ""
			if f, ok := g.Stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
				opts.Progress = func(file string, done, total int64) {
					if file != cur || bar == nil {
						if bar != nil {
							_ = bar.Finish()
						}
						cur = file
						bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(f), progressbar.OptionSetDescription(file),
							progressbar.OptionShowBytes(true), progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(100_000_000))
					}
					_ = bar.Set64(done)
				}
			}
			res, err := embed.PullModel(cmd.Context(), args[0], opts)
			if bar != nil {
				_ = bar.Finish()
			}
			if err != nil {
				return err
			}
			if len(res.Files) == 0 {
				fmt.Fprintf(g.stdout, "%s is up to date (revision %s) in %s\n", res.Repo, short(res.Revision), res.Dir)
			} else {
				fmt.Fprintf(g.stdout, "pulled %s (revision %s): %d files, %s, verified, in %s\n",
					res.Repo, short(res.Revision), len(res.Files), units.Bytes(res.Bytes), res.Dir)
			}
			fmt.Fprintf(g.stdout, "use it with --embedder model2vec:%s\n", res.Repo)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&revision, "revision", "main", "branch, tag or commit to pull")
	f.StringVar(&endpoint, "endpoint", "", "hub URL (default $HF_ENDPOINT, else https://huggingface.co)")
	f.BoolVar(&force, "force", false, "download again even if the cached copy is current")
	return cmd
}

func newModelListCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List pulled models",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ms, err := embed.PulledModels()
			if err != nil {
				return err
			}
			if len(ms) == 0 {
				fmt.Fprintln(g.stdout, "no models pulled (try: ragmem model pull minishlab/potion-base-8M)")
				return nil
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "model\trevision\tsize\tdirectory")
			for _, m := range ms {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.Repo, short(m.Revision), units.Bytes(m.Bytes), m.Dir)
			}
			return tw.Flush()
		},
	}
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
