package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/rag"
)

// maxFileSize bounds a single indexed file; larger files are skipped with a message.
const maxFileSize = 64 << 20

func newIndexCmd(g *globals) *cobra.Command {
	var srcURL, title, format, docType string
	var batch int
	cmd := &cobra.Command{
		Use:   "index PATH...",
		Short: "Index files and folders (.md .markdown .txt .html .htm), or - for stdin",
		Long: "Index files and folders into the memory. Folders are walked recursively for .md, .markdown,\n" +
			".txt, .text, .html and .htm files. A file's source URL is its file:// URL; re-indexing a\n" +
			"changed file replaces its chunks, an unchanged one is skipped. '-' reads one document from\n" +
			"stdin and needs --url.",
		Example: "  ragmem index docs/ README.md\n  curl -s https://example.com | ragmem index - --url https://example.com --format html",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var files []string
			stdin := false
			for _, a := range args {
				if a == "-" {
					stdin = true
					continue
				}
				fs, err := collectFiles(a)
				if err != nil {
					return err
				}
				files = append(files, fs...)
			}
			if stdin && srcURL == "" {
				return errors.New("reading stdin needs --url to name the source")
			}
			if !stdin && len(files) == 0 {
				return fmt.Errorf("no .md, .markdown, .txt, .html or .htm files in %s", strings.Join(args, ", "))
			}
			return g.withEngine(ctx, func(eng *rag.Engine) error {
				sum := indexSummary{}
				if stdin {
					data, err := io.ReadAll(io.LimitReader(g.stdin, maxFileSize+1))
					if err != nil {
						return fmt.Errorf("read stdin: %w", err)
					}
					if len(data) > maxFileSize {
						return fmt.Errorf("stdin is larger than %d MiB", maxFileSize>>20)
					}
					f := chunk.Text
					if format != "" {
						if f, err = chunk.ParseFormat(format); err != nil {
							return err
						}
					}
					res, err := eng.Index(ctx, index.Document{SourceURL: srcURL, Title: title, Content: string(data), Format: f, DocType: docType})
					if err != nil {
						return err
					}
					sum.add(res)
				}
				if err := indexFiles(ctx, g, eng, files, batch, docType, &sum); err != nil {
					return err
				}
				fmt.Fprintln(g.stdout, sum.String())
				if sum.failed > 0 {
					return exitError{1, fmt.Sprintf("%d of %d documents could not be indexed", sum.failed, sum.total)}
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&srcURL, "url", "", "source URL of the document read from stdin")
	f.StringVar(&title, "title", "", "title of the document read from stdin")
	f.StringVar(&format, "format", "", "format of stdin: text, markdown or html (default text)")
	f.StringVar(&docType, "type", index.DocKnowledge, "document type: knowledge or memory")
	f.IntVar(&batch, "batch", 64, "files written per atomic batch")
	return cmd
}

// collectFiles expands a path into the indexable files under it, sorted.
func collectFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		if _, ok := chunk.FormatForPath(path); !ok {
			return nil, fmt.Errorf("%s: unsupported file type (want .md, .markdown, .txt, .text, .html or .htm)", path)
		}
		return []string{path}, nil
	}
	var out []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); p != path && (strings.HasPrefix(name, ".") || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if _, ok := chunk.FormatForPath(p); ok && d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// fileURL is the source URL of a file: file:// plus its absolute path.
func fileURL(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
}

type indexSummary struct {
	total, indexed, unchanged, failed, chunks, replaced int
}

func (s *indexSummary) add(r index.Result) {
	s.total++
	switch {
	case r.Err != nil:
		s.failed++
	case r.Unchanged:
		s.unchanged++
	default:
		s.indexed++
		s.chunks += r.Chunks
		s.replaced += r.Removed
	}
}

func (s indexSummary) String() string {
	msg := fmt.Sprintf("indexed %d documents (%d chunks), %d unchanged", s.indexed, s.chunks, s.unchanged)
	if s.replaced > 0 {
		msg += fmt.Sprintf(", %d old chunks replaced", s.replaced)
	}
	if s.failed > 0 {
		msg += fmt.Sprintf(", %d failed", s.failed)
	}
	return msg
}

func indexFiles(ctx context.Context, g *globals, eng *rag.Engine, files []string, batch int, docType string, sum *indexSummary) error {
	if batch <= 0 {
		batch = 64
	}
	var bar *progressbar.ProgressBar
	if f, ok := g.stderr.(*os.File); ok && len(files) > 1 && term.IsTerminal(int(f.Fd())) {
		bar = progressbar.NewOptions(len(files),
			progressbar.OptionSetWriter(f), progressbar.OptionSetDescription("indexing"),
			progressbar.OptionShowCount(), progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(100_000_000))
	}
	for lo := 0; lo < len(files); lo += batch {
		if err := ctx.Err(); err != nil {
			return err
		}
		group := files[lo:min(lo+batch, len(files))]
		docs := make([]index.Document, 0, len(group))
		for _, p := range group {
			d, err := readDocument(p, docType)
			if err != nil {
				sum.total++
				sum.failed++
				fmt.Fprintf(g.stderr, "ragmem: %s: %v\n", p, err)
				continue
			}
			docs = append(docs, d)
		}
		results, err := eng.IndexMany(ctx, docs)
		if err != nil {
			return err
		}
		for i, r := range results {
			if r.Err != nil {
				fmt.Fprintf(g.stderr, "ragmem: %s: %v\n", docs[i].SourceURL, r.Err)
			}
			sum.add(r)
		}
		if bar != nil {
			_ = bar.Add(len(group))
		}
	}
	if bar != nil {
		_ = bar.Finish()
	}
	return nil
}

func readDocument(path, docType string) (index.Document, error) {
	f, _ := chunk.FormatForPath(path)
	st, err := os.Stat(path)
	if err != nil {
		return index.Document{}, err
	}
	if st.Size() > maxFileSize {
		return index.Document{}, fmt.Errorf("larger than %d MiB, skipped", maxFileSize>>20)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return index.Document{}, err
	}
	title := ""
	if f != chunk.HTML {
		title = titleFromText(string(data), path)
	}
	return index.Document{SourceURL: fileURL(path), Title: title, Content: string(data), Format: f, DocType: docType}, nil
}

// titleFromText takes the first Markdown heading, else the file name.
func titleFromText(s, path string) string {
	for i, line := range strings.SplitN(s, "\n", 40) {
		line = strings.TrimSpace(line)
		if i == 0 && line == "---" {
			continue // front matter
		}
		if strings.HasPrefix(line, "# ") {
			return strings.TrimSpace(strings.TrimLeft(line, "#"))
		}
	}
	base := filepath.Base(path)
	return strings.TrimSuffix(base, filepath.Ext(base))
}
