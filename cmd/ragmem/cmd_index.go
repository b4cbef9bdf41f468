package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/cmd/ragmem/internal/docread"
	"github.com/ragmem/ragmem/cmd/ragmem/internal/ingest"
	"github.com/ragmem/ragmem/cmd/ragmem/internal/units"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/rag"
)

// indexTargets are the PATH arguments of index (stdin says whether one
// was '-'), each folder with its exclude patterns (see
// ingest.FolderExcludes).
func indexTargets(cmd *cobra.Command, g *globals, o *ingest.Options, args []string) (targets []ingest.Target, stdin bool, err error) {
	for _, a := range args {
		if a == "-" {
			stdin = true
			continue
		}
		exclude := o.Exclude
		if st, err := os.Stat(a); err == nil && st.IsDir() {
			dir, err := g.DataDir()
			if err != nil {
				return nil, false, err
			}
			if exclude, err = ingest.FolderExcludes(cmd.Context(), dir, a, o.Exclude, cmd.Flags().Changed("exclude"), g.Stderr); err != nil {
				return nil, false, err
			}
		}
		t, err := ingest.NewTarget(a, exclude, g.Stderr)
		if err != nil {
			return nil, false, err
		}
		targets = append(targets, t)
	}
	return targets, stdin, nil
}

func newIndexCmd(g *globals) *cobra.Command {
	var o ingest.Options
	var attrs, keepParams []string
	var docMemory string
	cmd := &cobra.Command{
		Use:   "index PATH...",
		Short: "Index files and folders (" + ingest.Exts() + "), or - for stdin",
		Long: "Index files and folders into the memory. Folders are walked recursively for " + ingest.Exts() + "\n" +
			"files, skipping hidden folders, node_modules and whatever the folder's .gitignore and\n" +
			".ragmemignore files (at any level) and --exclude patterns exclude. A file's source URL is\n" +
			"its file:// URL; a changed file replaces its chunks, an unchanged one is skipped, and empty\n" +
			"or binary files are skipped with a note. After a folder is indexed, the sources under it\n" +
			"whose files are gone (deleted, or now excluded) are removed, unless --keep-missing.\n" +
			"--watch keeps the folders in sync until interrupted. '-' reads one document from stdin\n" +
			"and needs --url.",
		Example: "  ragmem index docs/ README.md\n" +
			"  ragmem index --exclude '*.log' --exclude 'drafts/' --attr team=search docs/\n" +
			"  ragmem index --watch notes/\n" +
			"  curl -s https://example.com | ragmem index - --url https://example.com --format html",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var err error
			if o.Attrs, err = index.ParseAttrs(attrs); err != nil {
				return err
			}
			if o.DocType != index.DocKnowledge {
				// Memories and preferences belong to their stores
				// (rag.ErrReserved): index writes knowledge only.
				return fmt.Errorf("--type %s: index writes knowledge only; write memories with `ragmem memory add` and preferences with `ragmem prefs add`", o.DocType)
			}
			if o.DocMemory, err = units.ParseBytes("--document-memory", docMemory); err != nil {
				return err
			}
			targets, stdin, err := indexTargets(cmd, g, &o, args)
			if err != nil {
				return err
			}
			if stdin && o.SourceURL == "" {
				return errors.New("reading stdin needs --url to name the source")
			}
			if stdin {
				// The same rules as a page posted over HTTP or MCP: the
				// memory: and preference: schemes are not for knowledge.
				u, err := rag.CheckPageURL(o.SourceURL)
				if err != nil {
					return err
				}
				o.SourceURL = u
			}
			if o.Watch && len(targets) == 0 {
				return errors.New("--watch needs a file or folder to watch")
			}
			return g.withStore(ctx, func(m rag.Memory) error {
				if cmd.Flags().Changed("keep-params") {
					if err := m.SetURLRules(ctx, index.URLRules{KeepParams: keepParams}); err != nil {
						return err
					}
				}
				var in io.Reader
				if stdin {
					in = g.stdin
				}
				sum, err := ingest.Run(ctx, ingest.Output{Stdout: g.stdout, Stderr: g.Stderr}, m, &o, in, targets)
				if err != nil || o.Watch {
					return err
				}
				if sum.Failed > 0 {
					return exitError{1, fmt.Sprintf("%d of %d documents could not be indexed", sum.Failed, sum.Total)}
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.SourceURL, "url", "", "source URL of the document read from stdin")
	f.StringVar(&o.Title, "title", "", "title of the document read from stdin")
	f.StringVar(&o.Format, "format", "", "format of stdin: text, markdown or html (default text)")
	f.StringVar(&o.DocType, "type", index.DocKnowledge, "document type: knowledge, the only one index writes (memories: ragmem memory add)")
	f.IntVar(&o.Batch, "batch", 64, "files written per atomic batch")
	f.StringArrayVar(&attrs, "attr", nil, "attribute key=value stored on every chunk (repeatable); filter on it with --filter")
	f.StringArrayVar(&o.Exclude, "exclude", nil, "skip paths matching this gitignore-style pattern, relative to the folder (repeatable): '*.log', 'drafts/', '**/gen/**'; remembered for the folder, '' forgets")
	f.BoolVar(&o.KeepMissing, "keep-missing", false, "keep the sources of files no longer in the folder (default: remove them)")
	f.BoolVar(&o.Watch, "watch", false, "after indexing, keep watching the files and folders and index changes until interrupted")
	f.DurationVar(&o.DocTimeout, "document-timeout", docread.DefaultTimeout, "longest reading one PDF, DOCX or EPUB file may take (each is read in a process of its own); past it the file is skipped")
	f.StringVar(&docMemory, "document-memory", "512MiB", "most memory reading one PDF, DOCX or EPUB file may take; past it the file is skipped")
	f.StringSliceVar(&keepParams, "keep-params", nil, "query parameters that URLs keep even when they look like tracking (e.g. ref_src); the store remembers the list, '' clears it")
	return cmd
}
