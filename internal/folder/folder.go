// Package folder walks a folder the way `ragmem index` reads it: it honours
// .gitignore and .ragmemignore files at every level of the folder and
// exclude patterns given by the user, all in gitignore syntax (matched by
// go-git's gitignore package, the matcher behind go-git's own status), and
// skips hidden folders (.git, .cache, ...) and node_modules.
//
// A Walker is safe for concurrent use once made; it keeps no state between
// walks.
package folder

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// DefaultIgnoreFiles are the ignore files read in every folder.
var DefaultIgnoreFiles = []string{".gitignore", ".ragmemignore"}

// Bounds on ignore files: a longer file is read up to the limit (and the
// rest is reported), so that a stray binary named .gitignore costs little.
const (
	MaxIgnoreFileBytes = 1 << 20
	MaxPatternBytes    = 4096
)

// ErrBadPattern is returned for an exclude pattern that cannot be used.
var ErrBadPattern = errors.New("folder: invalid exclude pattern")

// Options configure New. A nil *Options means all defaults.
type Options struct {
	// Exclude are extra patterns in gitignore syntax, relative to the
	// walked folder, that take precedence over the ignore files
	// ("*.log", "drafts/", "**/generated/**"; "!keep.md" re-includes).
	// Default none.
	Exclude []string
	// IgnoreFiles are the names of the ignore files read in each folder.
	// Default DefaultIgnoreFiles.
	IgnoreFiles []string
	// Warn receives problems that do not stop the walk (an unreadable
	// ignore file). Default: ignored.
	Warn func(path string, err error)
	// Unlisted is called, besides Warn, for each folder below the root
	// whose entries could not be read (permission denied): it may hold
	// files the walk did not visit, so a caller that removes what it did
	// not see must spare what lies under it. Default: none.
	Unlisted func(dir string)
}

// Walker walks one folder. See the package comment.
type Walker struct {
	root    string
	exclude []gitignore.Pattern
	files   []string
	warn    func(string, error)
	unlist  func(string)
}

// New returns a Walker of root (a folder) under opts.
func New(root string, opts *Options) (*Walker, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.IgnoreFiles == nil {
		o.IgnoreFiles = DefaultIgnoreFiles
	}
	if o.Warn == nil {
		o.Warn = func(string, error) {}
	}
	if o.Unlisted == nil {
		o.Unlisted = func(string) {}
	}
	w := &Walker{root: filepath.Clean(root), files: o.IgnoreFiles, warn: o.Warn, unlist: o.Unlisted}
	for _, p := range o.Exclude {
		if err := checkPattern(p); err != nil {
			return nil, err
		}
		w.exclude = append(w.exclude, gitignore.ParsePattern(strings.TrimPrefix(p, "./"), nil))
	}
	return w, nil
}

func checkPattern(p string) error {
	switch {
	case strings.TrimSpace(p) == "" || strings.TrimSpace(p) == "!":
		return fmt.Errorf("%w: the pattern is empty", ErrBadPattern)
	case len(p) > MaxPatternBytes:
		return fmt.Errorf("%w: longer than %d bytes", ErrBadPattern, MaxPatternBytes)
	case !utf8.ValidString(p) || strings.ContainsAny(p, "\x00\n\r"):
		return fmt.Errorf("%w: %q holds invalid characters", ErrBadPattern, p)
	}
	return nil
}

// ParseIgnore reads the patterns of an ignore file found in the folder
// domain (its path components below the walked folder; nil at the top):
// one pattern a line, blank lines and # comments skipped, a UTF-8 BOM and
// CR line ends allowed. Lines that are not valid UTF-8 or longer than
// MaxPatternBytes are skipped.
func ParseIgnore(data []byte, domain []string) []gitignore.Pattern {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), MaxIgnoreFileBytes+1)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" || strings.HasPrefix(line, "#") || len(line) > MaxPatternBytes || !utf8.ValidString(line) {
			continue
		}
		if strings.TrimSpace(line) == "" || strings.TrimSpace(line) == "!" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
}

// readIgnores reads the ignore files of the folder dir (domain below the
// root).
func (w *Walker) readIgnores(dir string, domain []string) []gitignore.Pattern {
	var ps []gitignore.Pattern
	for _, name := range w.files {
		p := filepath.Join(dir, name)
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			w.warn(p, err)
			continue
		}
		data, err := io.ReadAll(io.LimitReader(f, MaxIgnoreFileBytes+1))
		f.Close()
		if err != nil {
			w.warn(p, err)
			continue
		}
		if len(data) > MaxIgnoreFileBytes {
			w.warn(p, fmt.Errorf("longer than %d bytes; the rest is not read", MaxIgnoreFileBytes))
			data = data[:MaxIgnoreFileBytes]
		}
		ps = append(ps, ParseIgnore(data, domain)...)
	}
	return ps
}

// hidden reports whether a folder is skipped whatever the ignore files say.
func hidden(name string) bool { return strings.HasPrefix(name, ".") || name == "node_modules" }

// Walk calls visit for every regular file under the folder that no ignore
// file or exclude pattern excludes, in lexical order. A folder that is
// excluded is not entered. visit may return filepath.SkipAll to stop.
func (w *Walker) Walk(visit func(path string, d fs.DirEntry) error) error {
	pats := map[string][]gitignore.Pattern{}
	err := filepath.WalkDir(w.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p != w.root && errors.Is(err, fs.ErrPermission) {
				w.warn(p, err)
				w.unlist(p)
				return nil
			}
			return err
		}
		rel, err := filepath.Rel(w.root, p)
		if err != nil {
			return err
		}
		parts := []string(nil)
		if rel != "." {
			parts = strings.Split(filepath.ToSlash(rel), "/")
		}
		parent := filepath.Dir(p)
		if d.IsDir() {
			if p != w.root && (hidden(d.Name()) || w.match(pats[parent], parts, true)) {
				return filepath.SkipDir
			}
			own := w.readIgnores(p, parts)
			inherited := pats[parent]
			pats[p] = append(inherited[:len(inherited):len(inherited)], own...)
			return nil
		}
		if !d.Type().IsRegular() || w.match(pats[parent], parts, false) {
			return nil
		}
		return visit(p, d)
	})
	if errors.Is(err, filepath.SkipAll) {
		return nil
	}
	return err
}

// match reports whether path (components below the root) is excluded by
// the ignore patterns in force, then the exclude patterns.
func (w *Walker) match(ps []gitignore.Pattern, path []string, isDir bool) bool {
	all := make([]gitignore.Pattern, 0, len(ps)+len(w.exclude))
	all = append(append(all, ps...), w.exclude...)
	return gitignore.NewMatcher(all).Match(path, isDir)
}

// Excluded reports whether the file or folder at path, inside the walked
// folder, would be skipped by Walk: it or a folder above it is hidden or
// excluded. It reads the ignore files on the way down, so it sees changes
// made since the last walk. A path outside the folder is excluded.
func (w *Walker) Excluded(path string, isDir bool) bool {
	rel, err := filepath.Rel(w.root, filepath.Clean(path))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return true
	}
	if rel == "." {
		return false
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	ps := w.readIgnores(w.root, nil)
	dir := w.root
	for i, name := range parts {
		last := i == len(parts)-1
		if !last || isDir {
			if hidden(name) || w.match(ps, parts[:i+1], true) {
				return true
			}
		} else if w.match(ps, parts, false) {
			return true
		}
		if !last {
			dir = filepath.Join(dir, name)
			ps = append(ps[:len(ps):len(ps)], w.readIgnores(dir, parts[:i+1])...)
		}
	}
	return false
}
