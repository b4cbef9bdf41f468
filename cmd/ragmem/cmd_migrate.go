package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/internal/index/local"
	"github.com/ragmem/ragmem/internal/owner"
)

func newMigrateCmd(g *globals) *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "migrate --to weaviate",
		Short: "Copy the local store to a Weaviate backend and verify the counts",
		Long: "migrate copies every record of the local store in the data directory (chunks with their\n" +
			"vectors, preferences and memories) and its embedder setting into the Weaviate collection\n" +
			"named by --weaviate-url and --weaviate-namespace, then checks that every source arrived with\n" +
			"all its chunks. Records keep their ids, so running it again overwrites rather than duplicates.\n" +
			"The local store is left as it was.",
		Example: "  ragmem migrate --to weaviate --weaviate-url http://127.0.0.1:8080\n" +
			"  ragmem --dir ~/mem migrate --to weaviate --weaviate-url https://wv.example.com --weaviate-api-key $KEY --weaviate-namespace team",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if strings.ToLower(to) != "weaviate" {
				return fmt.Errorf("--to %q: the only destination is weaviate", to)
			}
			dir, err := g.DataDir()
			if err != nil {
				return err
			}
			if _, err := os.Stat(dir); err != nil {
				return fmt.Errorf("no local store to migrate: %w", err)
			}
			claim, err := owner.TryClaim(dir)
			if err != nil {
				if errors.Is(err, owner.ErrOwned) {
					return fmt.Errorf("migrate copies the store as it is and needs it to itself, and %s is using it (see ragmem status); stop it first", describeHolder(dir))
				}
				return err
			}
			defer claim.Release()
			src, err := local.Open(ctx, dir, &local.Options{Logger: slog.Default()})
			if err != nil {
				return err
			}
			defer src.Close()
			st, err := src.Stats(ctx)
			if err != nil {
				return err
			}
			if _, ok, _ := src.Meta(ctx, engine.MetaKeys[0]); !ok && st.Records == 0 {
				return fmt.Errorf("no local store in %s (nothing indexed there)", dir)
			}
			dst, err := g.Backend.OpenWeaviate(ctx)
			if err != nil {
				return err
			}
			defer dst.Close()
			rep, err := engine.Copy(ctx, dst, src, &engine.CopyOptions{Progress: func(done, total int) {
				if g.Verbose {
					fmt.Fprintf(g.Stderr, "copied %d of %d records\n", done, total)
				}
			}})
			if err != nil {
				if errors.Is(err, engine.ErrCopyMismatch) {
					return fmt.Errorf("migrate: %w", err)
				}
				return err
			}
			fmt.Fprintf(g.stdout, "copied %d records from %s to %s (collection %s)\n", rep.Records, dir, dst.URL(), dst.Class())
			for _, t := range []string{index.DocKnowledge, index.DocPreference, index.DocMemory} {
				fmt.Fprintf(g.stdout, "  %-11s %d sources, %d chunks\n", t, rep.Sources[t], rep.Chunks[t])
			}
			if e, ok := rep.Meta[engine.MetaKeys[0]]; ok {
				fmt.Fprintf(g.stdout, "  embedder    %s\n", e)
			}
			fmt.Fprintf(g.stdout, "verified: every source is in Weaviate with all its chunks\n")
			fmt.Fprintf(g.stdout, "use it with: ragmem --backend weaviate --weaviate-url %s --weaviate-namespace %s ...\n", dst.URL(), dst.Namespace())
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "destination backend: weaviate")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}
