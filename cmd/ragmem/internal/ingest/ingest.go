// Package ingest is what `ragmem index` does: files and folders read into
// documents (PDF, DOCX and EPUB in a sandboxed process), indexed through
// the contract in batches, a folder's gone or excluded files removed, and
// the folders watched for changes.
package ingest

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

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/folder"
	"github.com/ragmem/ragmem/rag"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// maxFileSize bounds a single indexed file; larger files are skipped with a message.
const maxFileSize = 64 << 20

// Options are the flags of `ragmem index`.
type Options struct {
	SourceURL, Title, Format, DocType string // of the document read from stdin (DocType: of every document)
	Batch                             int
	Attrs                             map[string]string
	Exclude                           []string
	KeepMissing                       bool
	Watch                             bool
	DocTimeout                        time.Duration // reading one PDF, DOCX or EPUB file
	DocMemory                         int64
}

// Output is where indexing says what it did (Stdout) and what it skipped
// or failed (Stderr).
type Output struct {
	Stdout, Stderr io.Writer
}

// indexStdin indexes the document read from r, named by o.SourceURL.
func indexStdin(ctx context.Context, r io.Reader, m rag.Memory, o *Options, sum *Summary) error {
	data, err := io.ReadAll(io.LimitReader(r, maxFileSize+1))
	if err != nil {
		return fmt.Errorf("read stdin: %w", err)
	}
	if len(data) > maxFileSize {
		return fmt.Errorf("stdin is larger than %d MiB", maxFileSize>>20)
	}
	f := chunk.Text
	if o.Format != "" {
		if f, err = chunk.ParseFormat(o.Format); err != nil {
			return err
		}
	}
	content := string(data)
	if f != chunk.HTML && chunk.Binary(content) {
		return rag.ErrBinaryContent // judged on the bytes read, before validText
	}
	res, err := indexDocs(ctx, m, []index.Document{{SourceURL: o.SourceURL, Title: o.Title, Content: validText(content), Format: f, DocType: o.DocType, Attrs: o.Attrs}})
	if err != nil {
		return err
	}
	if res[0].Err != nil {
		return res[0].Err
	}
	sum.add(res[0])
	return nil
}

// Target is one PATH argument: a file, or a folder kept in sync.
type Target struct {
	path     string         // absolute
	dir      bool           // a folder
	walker   *folder.Walker // for a folder
	unlisted *[]string      // for a folder: the subfolders the last walk could not read
}

// NewTarget is the target of path (a file of a kind index reads, or a
// folder walked without what exclude and its ignore files exclude); warn
// hears of what a walk cannot read.
func NewTarget(path string, exclude []string, warn io.Writer) (Target, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Target{}, err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return Target{}, err
	}
	if !st.IsDir() {
		if _, ok := fileKind(abs); !ok {
			return Target{}, fmt.Errorf("%s: unsupported file type (want %s)", path, Exts())
		}
		return Target{path: abs}, nil
	}
	unlisted := new([]string)
	w, err := folder.New(abs, &folder.Options{Exclude: exclude, Warn: func(p string, err error) {
		fmt.Fprintf(warn, "ragmem: %s: %v\n", p, err)
	}, Unlisted: func(p string) { *unlisted = append(*unlisted, p) }})
	if err != nil {
		return Target{}, err
	}
	return Target{path: abs, dir: true, walker: w, unlisted: unlisted}, nil
}

// Files lists the indexable files of t, sorted.
func (t Target) Files() ([]string, error) {
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
func folderPrefix(dir string) string { return UnderURL(FileURL(dir)) }

// UnderURL is the prefix of the source URLs under a folder's URL.
func UnderURL(u string) string { return strings.TrimSuffix(u, "/") + "/" }

// Sync indexes the files of t and, for a folder, removes the sources
// under it that are not among its files any more.
func Sync(ctx context.Context, g Output, m rag.Memory, o *Options, t Target, sum *Summary) error {
	files, err := t.Files()
	if err != nil {
		return err
	}
	if t.dir && len(files) == 0 && o.KeepMissing {
		fmt.Fprintf(g.Stderr, "ragmem: %s: no %s files\n", t.path, Exts())
	}
	present, err := Files(ctx, g, m, files, o, sum)
	if err != nil {
		return err
	}
	if !t.dir || o.KeepMissing {
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
func prune(ctx context.Context, g Output, m rag.Memory, o *Options, dir string, present map[string]bool, spare []string, sum *Summary) error {
	under := index.SourceUnder(folderPrefix(dir))
	srcs, err := AllSources(ctx, m, []string{o.DocType}, under)
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
			sum.Removed++
			if path, ok := FilePath(s.URL); ok {
				if _, err := os.Lstat(path); err == nil {
					// Still there: excluded (--exclude, .gitignore,
					// .ragmemignore), not gone.
					excluded++
					excludedChunks += n
					continue
				}
				fmt.Fprintf(g.Stderr, "ragmem: %s: no longer in the folder; removed (%d chunks)\n", path, n)
			}
		}
	}
	if excluded > 0 {
		fmt.Fprintf(g.Stderr, "ragmem: %s: removed %d files now excluded (%d chunks)\n", dir, excluded, excludedChunks)
	}
	return nil
}

// FileURL is the source URL of a file: file:// plus its absolute path.
func FileURL(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
}

// FilePath is the path of a file:// source URL.
func FilePath(u string) (string, bool) {
	p, err := url.Parse(u)
	if err != nil || p.Scheme != "file" || p.Path == "" {
		return "", false
	}
	return filepath.FromSlash(p.Path), true
}

// Summary counts what a run of index did.
type Summary struct {
	Total, Indexed, Unchanged, Failed, Skipped, Removed, Chunks, Replaced int
}

func (s *Summary) add(r index.Result) {
	s.Total++
	switch {
	case r.Err != nil:
		s.Failed++
	case r.Unchanged:
		s.Unchanged++
	default:
		s.Indexed++
		s.Chunks += r.Chunks
		s.Replaced += r.Removed
	}
}

func (s Summary) String() string {
	msg := fmt.Sprintf("indexed %d documents (%d chunks), %d unchanged", s.Indexed, s.Chunks, s.Unchanged)
	if s.Replaced > 0 {
		msg += fmt.Sprintf(", %d old chunks replaced", s.Replaced)
	}
	if s.Skipped > 0 {
		msg += fmt.Sprintf(", %d skipped", s.Skipped)
	}
	if s.Removed > 0 {
		msg += fmt.Sprintf(", %d removed", s.Removed)
	}
	if s.Failed > 0 {
		msg += fmt.Sprintf(", %d failed", s.Failed)
	}
	return msg
}

// Files indexes files in batches and returns the source URLs that the
// store holds for them now: indexed, unchanged, or failed for a reason that
// says nothing of the file (its old version is kept). Skipped files (empty,
// binary, too large) are not among them.
func Files(ctx context.Context, g Output, m rag.Memory, files []string, o *Options, sum *Summary) (map[string]bool, error) {
	present := map[string]bool{}
	batch := o.Batch
	if batch <= 0 {
		batch = 64
	}
	var bar *progressbar.ProgressBar
	if f, ok := g.Stderr.(*os.File); ok && len(files) > 1 && term.IsTerminal(int(f.Fd())) {
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
				sum.Skipped++
				present[index.CanonicalURL(FileURL(p))] = true // what was indexed of it stays
				fmt.Fprintf(g.Stderr, "ragmem: %s: skipped: %s\n", p, keep.reason)
			case skip != "":
				sum.Skipped++
				fmt.Fprintf(g.Stderr, "ragmem: %s: skipped: %s\n", p, skip)
			case err != nil:
				sum.Total++
				sum.Failed++
				present[index.CanonicalURL(FileURL(p))] = true // unreadable now, not gone
				fmt.Fprintf(g.Stderr, "ragmem: %s: %v\n", p, err)
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
				sum.Skipped++
				fmt.Fprintf(g.Stderr, "ragmem: %s: skipped: %s\n", pathOf(docs[i].SourceURL), skipReason(r.Err))
				continue
			case r.Err != nil:
				fmt.Fprintf(g.Stderr, "ragmem: %s: %v\n", pathOf(docs[i].SourceURL), r.Err)
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
	if p, ok := FilePath(u); ok {
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

// AllSources lists every source of the types that matches where.
func AllSources(ctx context.Context, m rag.Memory, types []string, where *index.Expr) ([]rag.SourceJSON, error) {
	srcs, _, err := ListSources(ctx, m, types, where, 0, 0)
	return srcs, err
}

// ListSources lists the sources of the types that match where, from
// offset on, at most limit of them (0: all), with how many match in all:
// page by page, Memory.Sources returning at most rag.MaxListLimit at a
// time.
func ListSources(ctx context.Context, m rag.Memory, types []string, where *index.Expr, offset, limit int) ([]rag.SourceJSON, int, error) {
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
func readDocument(ctx context.Context, path string, o *Options) (d index.Document, skip string, err error) {
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
	d = index.Document{SourceURL: FileURL(path), DocType: o.DocType, Attrs: o.Attrs}
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

// Run indexes the document on stdin (when it is not nil) and the targets
// into m, prints the summary, and with o.Watch keeps the targets in sync
// until ctx is done.
func Run(ctx context.Context, g Output, m rag.Memory, o *Options, stdin io.Reader, targets []Target) (Summary, error) {
	sum := Summary{}
	if stdin != nil {
		if err := indexStdin(ctx, stdin, m, o, &sum); err != nil {
			return sum, err
		}
	}
	for _, t := range targets {
		if err := Sync(ctx, g, m, o, t, &sum); err != nil {
			return sum, err
		}
	}
	fmt.Fprintln(g.Stdout, sum.String())
	if o.Watch {
		return sum, Watch(ctx, g, m, o, targets)
	}
	return sum, nil
}
