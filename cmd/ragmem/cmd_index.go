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
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/cmd/ragmem/internal/docread"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/folder"
	"github.com/ragmem/ragmem/rag"
)

// maxFileSize bounds a single indexed file; larger files are skipped with a message.
const maxFileSize = 64 << 20

// indexOptions are the flags of `ragmem index`.
type indexOptions struct {
	srcURL, title, format, docType string
	batch                          int
	attrs                          map[string]string
	exclude                        []string
	keepMissing                    bool
	watch                          bool
	docTimeout                     time.Duration // reading one PDF, DOCX or EPUB file
	docMemory                      int64
}

func newIndexCmd(g *globals) *cobra.Command {
	var o indexOptions
	var attrs, keepParams []string
	var docMemory string
	cmd := &cobra.Command{
		Use:   "index PATH...",
		Short: "Index files and folders (" + extList() + "), or - for stdin",
		Long: "Index files and folders into the memory. Folders are walked recursively for " + extList() + "\n" +
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
			if o.attrs, err = index.ParseAttrs(attrs); err != nil {
				return err
			}
			if o.docType != index.DocKnowledge {
				// Memories and preferences belong to their stores
				// (rag.ErrReserved): index writes knowledge only.
				return fmt.Errorf("--type %s: index writes knowledge only; write memories with `ragmem memory add` and preferences with `ragmem prefs add`", o.docType)
			}
			if o.docMemory, err = parseBytes("--document-memory", docMemory); err != nil {
				return err
			}
			var targets []target
			stdin := false
			for _, a := range args {
				if a == "-" {
					stdin = true
					continue
				}
				exclude := o.exclude
				if st, err := os.Stat(a); err == nil && st.IsDir() {
					if exclude, err = g.folderExcludes(ctx, a, o.exclude, cmd.Flags().Changed("exclude")); err != nil {
						return err
					}
				}
				t, err := newTarget(a, exclude, g.stderr)
				if err != nil {
					return err
				}
				targets = append(targets, t)
			}
			if stdin && o.srcURL == "" {
				return errors.New("reading stdin needs --url to name the source")
			}
			if stdin {
				// The same rules as a page posted over HTTP or MCP: the
				// memory: and preference: schemes are not for knowledge.
				u, err := rag.CheckPageURL(o.srcURL)
				if err != nil {
					return err
				}
				o.srcURL = u
			}
			if o.watch && len(targets) == 0 {
				return errors.New("--watch needs a file or folder to watch")
			}
			return g.withStore(ctx, func(m rag.Memory) error {
				if cmd.Flags().Changed("keep-params") {
					if err := m.SetURLRules(ctx, index.URLRules{KeepParams: keepParams}); err != nil {
						return err
					}
				}
				sum := indexSummary{}
				if stdin {
					if err := indexStdin(ctx, g, m, &o, &sum); err != nil {
						return err
					}
				}
				for _, t := range targets {
					if err := syncTarget(ctx, g, m, &o, t, &sum); err != nil {
						return err
					}
				}
				fmt.Fprintln(g.stdout, sum.String())
				if o.watch {
					return watch(ctx, g, m, &o, targets)
				}
				if sum.failed > 0 {
					return exitError{1, fmt.Sprintf("%d of %d documents could not be indexed", sum.failed, sum.total)}
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.srcURL, "url", "", "source URL of the document read from stdin")
	f.StringVar(&o.title, "title", "", "title of the document read from stdin")
	f.StringVar(&o.format, "format", "", "format of stdin: text, markdown or html (default text)")
	f.StringVar(&o.docType, "type", index.DocKnowledge, "document type: knowledge, the only one index writes (memories: ragmem memory add)")
	f.IntVar(&o.batch, "batch", 64, "files written per atomic batch")
	f.StringArrayVar(&attrs, "attr", nil, "attribute key=value stored on every chunk (repeatable); filter on it with --filter")
	f.StringArrayVar(&o.exclude, "exclude", nil, "skip paths matching this gitignore-style pattern, relative to the folder (repeatable): '*.log', 'drafts/', '**/gen/**'; remembered for the folder, '' forgets")
	f.BoolVar(&o.keepMissing, "keep-missing", false, "keep the sources of files no longer in the folder (default: remove them)")
	f.BoolVar(&o.watch, "watch", false, "after indexing, keep watching the files and folders and index changes until interrupted")
	f.DurationVar(&o.docTimeout, "document-timeout", docread.DefaultTimeout, "longest reading one PDF, DOCX or EPUB file may take (each is read in a process of its own); past it the file is skipped")
	f.StringVar(&docMemory, "document-memory", "512MiB", "most memory reading one PDF, DOCX or EPUB file may take; past it the file is skipped")
	f.StringSliceVar(&keepParams, "keep-params", nil, "query parameters that URLs keep even when they look like tracking (e.g. ref_src); the store remembers the list, '' clears it")
	return cmd
}

func indexStdin(ctx context.Context, g *globals, m rag.Memory, o *indexOptions, sum *indexSummary) error {
	data, err := io.ReadAll(io.LimitReader(g.stdin, maxFileSize+1))
	if err != nil {
		return fmt.Errorf("read stdin: %w", err)
	}
	if len(data) > maxFileSize {
		return fmt.Errorf("stdin is larger than %d MiB", maxFileSize>>20)
	}
	f := chunk.Text
	if o.format != "" {
		if f, err = chunk.ParseFormat(o.format); err != nil {
			return err
		}
	}
	content := string(data)
	if f != chunk.HTML && chunk.Binary(content) {
		return rag.ErrBinaryContent // judged on the bytes read, before validText
	}
	res, err := indexDocs(ctx, m, []index.Document{{SourceURL: o.srcURL, Title: o.title, Content: validText(content), Format: f, DocType: o.docType, Attrs: o.attrs}})
	if err != nil {
		return err
	}
	if res[0].Err != nil {
		return res[0].Err
	}
	sum.add(res[0])
	return nil
}

// target is one PATH argument: a file, or a folder kept in sync.
type target struct {
	path     string         // absolute
	dir      bool           // a folder
	walker   *folder.Walker // for a folder
	unlisted *[]string      // for a folder: the subfolders the last walk could not read
}

func newTarget(path string, exclude []string, warn io.Writer) (target, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return target{}, err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return target{}, err
	}
	if !st.IsDir() {
		if _, ok := fileKind(abs); !ok {
			return target{}, fmt.Errorf("%s: unsupported file type (want %s)", path, extList())
		}
		return target{path: abs}, nil
	}
	unlisted := new([]string)
	w, err := folder.New(abs, &folder.Options{Exclude: exclude, Warn: func(p string, err error) {
		fmt.Fprintf(warn, "ragmem: %s: %v\n", p, err)
	}, Unlisted: func(p string) { *unlisted = append(*unlisted, p) }})
	if err != nil {
		return target{}, err
	}
	return target{path: abs, dir: true, walker: w, unlisted: unlisted}, nil
}

// files lists the indexable files of t, sorted.
func (t target) files() ([]string, error) {
	if !t.dir {
		return []string{t.path}, nil
	}
	var out []string
	if t.unlisted != nil {
		*t.unlisted = (*t.unlisted)[:0]
	}
	err := t.walker.Walk(func(p string, d fs.DirEntry) error {
		if _, ok := fileKind(p); ok {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// folderPrefix is the source URL prefix of the files under a folder.
func folderPrefix(dir string) string { return underURL(fileURL(dir)) }

// underURL is the prefix of the source URLs under a folder's URL.
func underURL(u string) string { return strings.TrimSuffix(u, "/") + "/" }

// syncTarget indexes the files of t and, for a folder, removes the sources
// under it that are not among its files any more.
func syncTarget(ctx context.Context, g *globals, m rag.Memory, o *indexOptions, t target, sum *indexSummary) error {
	files, err := t.files()
	if err != nil {
		return err
	}
	if t.dir && len(files) == 0 && o.keepMissing {
		fmt.Fprintf(g.stderr, "ragmem: %s: no %s files\n", t.path, extList())
	}
	present, err := indexFiles(ctx, g, m, files, o, sum)
	if err != nil {
		return err
	}
	if !t.dir || o.keepMissing {
		return nil
	}
	var spare []string
	if t.unlisted != nil {
		spare = *t.unlisted
	}
	return prune(ctx, g, m, o, t.path, present, spare, sum)
}

// prune removes the sources under the folder dir that are not in present,
// sparing those under the folders of spare (folders that could not be
// read: their files may be there).
func prune(ctx context.Context, g *globals, m rag.Memory, o *indexOptions, dir string, present map[string]bool, spare []string, sum *indexSummary) error {
	under := index.SourceUnder(folderPrefix(dir))
	srcs, err := allSources(ctx, m, []string{o.docType}, under)
	if err != nil {
		return err
	}
	spared := func(u string) bool {
		for _, d := range spare {
			if strings.HasPrefix(u, folderPrefix(d)) {
				return true
			}
		}
		return false
	}
	excluded, excludedChunks := 0, 0
	for _, s := range srcs {
		if present[s.URL] || spared(s.URL) {
			continue
		}
		n, err := m.Remove(ctx, s.URL)
		if err != nil {
			return err
		}
		if n > 0 {
			sum.removed++
			if path, ok := filePath(s.URL); ok {
				if _, err := os.Lstat(path); err == nil {
					// Still there: excluded (--exclude, .gitignore,
					// .ragmemignore), not gone.
					excluded++
					excludedChunks += n
					continue
				}
				fmt.Fprintf(g.stderr, "ragmem: %s: no longer in the folder; removed (%d chunks)\n", path, n)
			}
		}
	}
	if excluded > 0 {
		fmt.Fprintf(g.stderr, "ragmem: %s: removed %d files now excluded (%d chunks)\n", dir, excluded, excludedChunks)
	}
	return nil
}

// fileURL is the source URL of a file: file:// plus its absolute path.
func fileURL(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
}

// filePath is the path of a file:// source URL.
func filePath(u string) (string, bool) {
	p, err := url.Parse(u)
	if err != nil || p.Scheme != "file" || p.Path == "" {
		return "", false
	}
	return filepath.FromSlash(p.Path), true
}

type indexSummary struct {
	total, indexed, unchanged, failed, skipped, removed, chunks, replaced int
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
	if s.skipped > 0 {
		msg += fmt.Sprintf(", %d skipped", s.skipped)
	}
	if s.removed > 0 {
		msg += fmt.Sprintf(", %d removed", s.removed)
	}
	if s.failed > 0 {
		msg += fmt.Sprintf(", %d failed", s.failed)
	}
	return msg
}

// indexFiles indexes files in batches and returns the source URLs that the
// store holds for them now: indexed, unchanged, or failed for a reason that
// says nothing of the file (its old version is kept). Skipped files (empty,
// binary, too large) are not among them.
func indexFiles(ctx context.Context, g *globals, m rag.Memory, files []string, o *indexOptions, sum *indexSummary) (map[string]bool, error) {
	present := map[string]bool{}
	batch := o.batch
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
			return nil, err
		}
		group := files[lo:min(lo+batch, len(files))]
		docs := make([]index.Document, 0, len(group))
		for _, p := range group {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			d, skip, err := readDocument(ctx, p, o)
			var keep skipKeep
			switch {
			case ctx.Err() != nil:
				return nil, ctx.Err()
			case errors.As(err, &keep):
				sum.skipped++
				present[index.CanonicalURL(fileURL(p))] = true // what was indexed of it stays
				fmt.Fprintf(g.stderr, "ragmem: %s: skipped: %s\n", p, keep.reason)
			case skip != "":
				sum.skipped++
				fmt.Fprintf(g.stderr, "ragmem: %s: skipped: %s\n", p, skip)
			case err != nil:
				sum.total++
				sum.failed++
				present[index.CanonicalURL(fileURL(p))] = true // unreadable now, not gone
				fmt.Fprintf(g.stderr, "ragmem: %s: %v\n", p, err)
			default:
				docs = append(docs, d)
			}
		}
		results, err := indexDocs(ctx, m, docs)
		if err != nil {
			return nil, err
		}
		for i, r := range results {
			src := index.CanonicalURL(docs[i].SourceURL)
			switch {
			case errors.Is(r.Err, rag.ErrEmptyDocument), errors.Is(r.Err, rag.ErrBinaryContent):
				sum.skipped++
				fmt.Fprintf(g.stderr, "ragmem: %s: skipped: %s\n", pathOf(docs[i].SourceURL), skipReason(r.Err))
				continue
			case r.Err != nil:
				fmt.Fprintf(g.stderr, "ragmem: %s: %v\n", pathOf(docs[i].SourceURL), r.Err)
			}
			present[src] = true
			sum.add(r)
		}
		if bar != nil {
			_ = bar.Add(len(group))
		}
	}
	if bar != nil {
		_ = bar.Finish()
	}
	return present, nil
}

func pathOf(u string) string {
	if p, ok := filePath(u); ok {
		return p
	}
	return u
}

// indexDocs indexes documents through the contract (Memory.Index) and
// says what became of each, as the engine's own IndexDocuments does.
func indexDocs(ctx context.Context, m rag.Memory, docs []index.Document) ([]index.Result, error) {
	if len(docs) == 0 {
		return nil, nil
	}
	req := rag.DocumentsRequest{Documents: make([]rag.DocumentRequest, len(docs))}
	for i := range docs {
		req.Documents[i] = rag.NewDocumentRequest(&docs[i])
	}
	out, err := m.Index(ctx, req)
	if err != nil {
		return nil, err
	}
	rs := make([]index.Result, len(out.Results))
	for i, r := range out.Results {
		rs[i] = index.Result{SourceURL: r.URL, ContentHash: r.ContentHash, Chunks: r.Chunks, Removed: r.Removed, Unchanged: r.Unchanged, Superseded: r.Superseded, Err: r.Err()}
	}
	return rs, nil
}

// allSources lists every source of the types that matches where.
func allSources(ctx context.Context, m rag.Memory, types []string, where *index.Expr) ([]rag.SourceJSON, error) {
	srcs, _, err := listSources(ctx, m, types, where, 0, 0)
	return srcs, err
}

// listSources lists the sources of the types that match where, from
// offset on, at most limit of them (0: all), with how many match in all:
// page by page, Memory.Sources returning at most rag.MaxListLimit at a
// time.
func listSources(ctx context.Context, m rag.Memory, types []string, where *index.Expr, offset, limit int) ([]rag.SourceJSON, int, error) {
	var out []rag.SourceJSON
	for {
		n := rag.MaxListLimit
		if limit > 0 {
			n = min(n, limit-len(out))
		}
		page, err := m.Sources(ctx, rag.SourcesRequest{Types: types, Filter: where.String(), Offset: offset + len(out), Limit: n})
		if err != nil {
			return nil, 0, err
		}
		out = append(out, page.Sources...)
		if len(page.Sources) < n || offset+len(out) >= page.Total || (limit > 0 && len(out) >= limit) {
			return out, page.Total, nil
		}
	}
}

func skipReason(err error) string {
	if errors.Is(err, rag.ErrBinaryContent) {
		return "binary data, not text"
	}
	return "no text to index"
}

// readDocument reads a file into a document. A file that is skipped (empty,
// binary, too large) returns the reason why in skip.
func readDocument(ctx context.Context, path string, o *indexOptions) (d index.Document, skip string, err error) {
	kind, _ := fileKind(path)
	st, err := os.Stat(path)
	if err != nil {
		return d, "", err
	}
	if !st.Mode().IsRegular() {
		return d, "not a regular file (a device, pipe or socket)", nil
	}
	if st.Size() > maxFileSize {
		return d, fmt.Sprintf("larger than %d MiB", maxFileSize>>20), nil
	}
	if st.Size() == 0 {
		return d, "empty file", nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return d, "", err
	}
	d = index.Document{SourceURL: fileURL(path), DocType: o.docType, Attrs: o.attrs}
	if d, skip, err = kind.read(ctx, o, d, path, data); skip != "" || err != nil {
		return d, skip, err
	}
	d.Content = validText(d.Content)
	return d, "", nil
}

// validText is text as both the engine and the owner's API take it: valid
// UTF-8 (a JSON body can carry nothing else), invalid bytes as U+FFFD.
// Applied whether or not this process owns the store, so that both index
// the same content (and content hash).
func validText(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// titleFromText takes the first Markdown heading, else the file name.
func titleFromText(s, path string) string {
	s = strings.TrimPrefix(s, "\uFEFF")
	for i, line := range strings.SplitN(s, "\n", 40) {
		line = strings.TrimSpace(line)
		if i == 0 && line == "---" {
			continue // front matter
		}
		if strings.HasPrefix(line, "# ") {
			return strings.TrimSpace(strings.TrimLeft(line, "#"))
		}
	}
	return fileTitle(path)
}

// fileTitle is a file's name without its extension.
func fileTitle(path string) string {
	base := filepath.Base(path)
	return strings.TrimSuffix(base, filepath.Ext(base))
}
