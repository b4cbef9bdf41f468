package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/ingest"
	"github.com/ragmem/ragmem/cmd/ragmem/internal/units"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/rag"
)

func newRmCmd(g *globals) *cobra.Command {
	rf := &rmFilterFlags{}
	cmd := &cobra.Command{
		Use:   "rm SOURCE_URL|PATH | rm --filter EXPR [--dry-run]",
		Short: "Remove every chunk of a source (a URL, or a file or folder path), or every source a filter matches",
		Long: "Remove a source and all its chunks. The argument is a source URL (as `ragmem sources` lists\n" +
			"it; variants of a web page's URL name the same page), or the path of an indexed file; the\n" +
			"path of a folder removes every source under it.\n\n" + rmFilterHelp,
		Example: "  ragmem rm https://example.com/page\n  ragmem rm notes/todo.md\n  ragmem rm old-notes/\n" + rmFilterExample,
		Args:    rf.args,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if rf.active() {
				return runRmFilter(ctx, g, rf)
			}
			arg := args[0]
			return g.withStore(ctx, func(m rag.Memory) error {
				u, dir := sourceArg(arg)
				if dir {
					// Knowledge only: the memory files of a folder belong to
					// the memory store (rag.ErrReserved).
					srcs, err := ingest.AllSources(ctx, m, []string{index.DocKnowledge}, index.SourceUnder(ingest.UnderURL(u)))
					if err != nil {
						return err
					}
					if len(srcs) == 0 {
						return fmt.Errorf("no sources under %s in the memory (see ragmem sources)", arg)
					}
					chunks := 0
					for _, s := range srcs {
						n, err := m.Remove(ctx, s.URL)
						if err != nil {
							return err
						}
						chunks += n
					}
					fmt.Fprintf(g.stdout, "removed %d sources under %s (%d chunks)\n", len(srcs), arg, chunks)
					return nil
				}
				n, err := m.Remove(ctx, u)
				if err != nil {
					return err
				}
				if n == 0 {
					return fmt.Errorf("no source %q in the memory (see ragmem sources)", arg)
				}
				fmt.Fprintf(g.stdout, "removed %s (%d chunks)\n", arg, n)
				return nil
			})
		},
	}
	rf.add(cmd)
	return cmd
}

// sourceArg turns a SOURCE_URL|PATH argument into a source URL, and says
// whether it names a folder (every source under it). An argument with a
// URL scheme is a URL unless a file or folder of that name exists; anything
// else is a path.
func sourceArg(arg string) (string, bool) {
	st, err := os.Stat(arg)
	if err != nil {
		if u, perr := url.Parse(arg); perr == nil && u.Scheme != "" && len(u.Scheme) > 1 {
			return arg, false // a URL (one-letter schemes are Windows drives)
		}
		// A path that no longer exists: a file, or a folder when it ends
		// with a separator.
		return ingest.FileURL(arg), strings.HasSuffix(arg, "/") || strings.HasSuffix(arg, string(filepath.Separator))
	}
	return ingest.FileURL(arg), st.IsDir()
}

func newStatsCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Show store statistics",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withStore(cmd.Context(), func(m rag.Memory) error {
				st, err := m.Stats(cmd.Context())
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(g.stdout, st)
				}
				dir, _ := g.DataDir()
				fmt.Fprintf(g.stdout, "data directory       %s\n", dir)
				fmt.Fprintf(g.stdout, "documents            %d\n", st.DocumentCount)
				fmt.Fprintf(g.stdout, "chunks               %d\n", st.ChunkCount)
				fmt.Fprintf(g.stdout, "preferences          %d\n", st.PreferenceCount)
				fmt.Fprintf(g.stdout, "memories             %d\n", st.MemoryCount)
				fmt.Fprintf(g.stdout, "index size           %s\n", units.Bytes(st.IndexSizeBytes))
				last := "never (in this process)"
				if !st.LastSyncTime.IsZero() {
					last = st.LastSyncTime.Format(time.RFC3339)
				}
				fmt.Fprintf(g.stdout, "last sync            %s\n", last)
				fmt.Fprintf(g.stdout, "embedder             %s (dimension %d, loaded %v)\n", st.Embedder, st.Dimension, st.EmbeddingModelLoaded)
				if st.EmbedderSpec != "" {
					fmt.Fprintf(g.stdout, "embedder config      %s (recorded in the store)\n", st.EmbedderSpec)
				} else if st.ChunkCount == 0 {
					fmt.Fprintf(g.stdout, "embedder config      none recorded: the store takes the embedder of its first write\n")
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newSourcesCmd(g *globals) *cobra.Command {
	var asJSON bool
	var offset, limit int
	var types []string
	cmd := &cobra.Command{
		Use:   "sources",
		Short: "List indexed sources",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withStore(cmd.Context(), func(m rag.Memory) error {
				srcs, total, err := ingest.ListSources(cmd.Context(), m, types, nil, offset, limit)
				if err != nil {
					return err
				}
				if asJSON {
					if srcs == nil {
						srcs = []rag.SourceJSON{}
					}
					return writeJSON(g.stdout, rag.SourcesJSON{Total: total, Offset: offset, Limit: limit, Sources: srcs})
				}
				for _, s := range srcs {
					fmt.Fprintf(g.stdout, "%-60s  %3d chunks  %s  %s\n", s.URL, s.Chunks, s.CreatedAt.Local().Format("2006-01-02 15:04"), s.Title)
				}
				fmt.Fprintf(g.stdout, "%d of %d sources\n", len(srcs), total)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print JSON")
	f.IntVar(&offset, "offset", 0, "skip this many sources")
	f.IntVar(&limit, "limit", 100, "list at most this many sources (0: all)")
	f.StringSliceVar(&types, "types", []string{index.DocKnowledge}, "document types: knowledge, memory, preference")
	return cmd
}
