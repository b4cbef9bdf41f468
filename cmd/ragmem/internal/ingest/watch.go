package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/ragmem/ragmem/internal/folder"
	"github.com/ragmem/ragmem/rag"
)

// watchSettle is how long a burst of file events must be quiet before the
// changed files are indexed: an editor's save is several events.
const watchSettle = 300 * time.Millisecond

// Watch keeps targets in sync until ctx is done: changed and new files are
// indexed, deleted (or newly excluded) ones removed, and a changed ignore
// file syncs its whole folder again.
func Watch(ctx context.Context, g Output, m rag.Memory, o *Options, targets []Target) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer w.Close()
	folders := 0
	for _, t := range targets {
		if !t.dir {
			// Editors often save by replacing the file: watch its folder.
			if err := w.Add(filepath.Dir(t.path)); err != nil {
				return fmt.Errorf("watch %s: %w", t.path, err)
			}
			continue
		}
		n, err := watchTree(w, t, t.path)
		if err != nil {
			return err
		}
		folders += n
	}
	fmt.Fprintf(g.Stderr, "ragmem: watching %d folders for changes; interrupt (Ctrl-C) to stop\n", folders+countFiles(targets))
	pending := map[string]bool{}
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			fmt.Fprintf(g.Stderr, "ragmem: watch: %v\n", err)
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			t, ok := targetOf(targets, ev.Name)
			if !ok {
				continue
			}
			if ev.Has(fsnotify.Create) && t.dir {
				if st, err := os.Stat(ev.Name); err == nil && st.IsDir() && !t.walker.Excluded(ev.Name, true) {
					if _, err := watchTree(w, t, ev.Name); err != nil {
						fmt.Fprintf(g.Stderr, "ragmem: watch: %v\n", err)
					}
				}
			}
			pending[ev.Name] = true
			settle.Reset(watchSettle)
		case <-settle.C:
			paths := make([]string, 0, len(pending))
			for p := range pending {
				paths = append(paths, p)
			}
			clear(pending)
			sort.Strings(paths)
			if err := applyChanges(ctx, g, m, o, targets, paths); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
	}
}

func countFiles(ts []Target) int {
	n := 0
	for _, t := range ts {
		if !t.dir {
			n++
		}
	}
	return n
}

// watchTree watches dir and the folders below it that t does not exclude,
// and returns how many it added.
func watchTree(w *fsnotify.Watcher, t Target, dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p != dir && errors.Is(err, fs.ErrPermission) {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if p != t.path && t.walker.Excluded(p, true) {
			return filepath.SkipDir
		}
		if err := w.Add(p); err != nil {
			return fmt.Errorf("watch %s: %w", p, err)
		}
		n++
		return nil
	})
	return n, err
}

// targetOf returns the Target a changed path belongs to.
func targetOf(targets []Target, p string) (Target, bool) {
	for _, t := range targets {
		if t.dir && (p == t.path || strings.HasPrefix(p, t.path+string(filepath.Separator))) || !t.dir && p == t.path {
			return t, true
		}
	}
	return Target{}, false
}

// isIgnoreFile reports whether a path is an ignore file.
func isIgnoreFile(p string) bool { return slices.Contains(folder.DefaultIgnoreFiles, filepath.Base(p)) }

// applyChanges brings the store in line with the changed paths.
func applyChanges(ctx context.Context, g Output, m rag.Memory, o *Options, targets []Target, paths []string) error {
	var files []string
	resync := map[string]Target{}
	for _, p := range paths {
		t, ok := targetOf(targets, p)
		if !ok {
			continue
		}
		if t.dir && isIgnoreFile(p) {
			resync[t.path] = t
			continue
		}
		st, err := os.Stat(p)
		switch {
		case err == nil && st.IsDir():
			if !t.walker.Excluded(p, true) {
				// A new or moved-in folder: everything in it.
				sub := Target{path: t.path, dir: true, walker: t.walker, unlisted: t.unlisted}
				fs, err := sub.filesUnder(p)
				if err != nil {
					fmt.Fprintf(g.Stderr, "ragmem: watch: %v\n", err)
				}
				files = append(files, fs...)
				continue
			}
			if err := removeUnder(ctx, g, m, o, p); err != nil {
				return err
			}
		case err == nil && st.Mode().IsRegular():
			if _, ok := fileKind(p); !ok {
				continue
			}
			if t.dir && t.walker.Excluded(p, false) {
				if err := removeFile(ctx, g, m, o, p); err != nil {
					return err
				}
				continue
			}
			files = append(files, p)
		case errors.Is(err, fs.ErrNotExist):
			// Gone: a file, or a whole folder.
			if err := removeFile(ctx, g, m, o, p); err != nil {
				return err
			}
			if err := removeUnder(ctx, g, m, o, p); err != nil {
				return err
			}
		}
	}
	if len(files) > 0 {
		sum := Summary{}
		if _, err := Files(ctx, g, m, files, o, &sum); err != nil {
			return err
		}
		if sum.Indexed+sum.Failed+sum.Skipped > 0 {
			fmt.Fprintf(g.Stdout, "%s %s\n", time.Now().Format("15:04:05"), sum.String())
		}
	}
	for _, t := range resync {
		sum := Summary{}
		if err := Sync(ctx, g, m, o, t, &sum); err != nil {
			return err
		}
		fmt.Fprintf(g.Stdout, "%s %s: ignore rules changed; %s\n", time.Now().Format("15:04:05"), t.path, sum.String())
	}
	return nil
}

// filesUnder lists the indexable files under dir, a folder inside t.
func (t Target) filesUnder(dir string) ([]string, error) {
	all, err := t.Files()
	if err != nil {
		return nil, err
	}
	prefix := dir + string(filepath.Separator)
	var out []string
	for _, p := range all {
		if strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	return out, nil
}

// removeFile removes the source of a file that is gone or excluded.
func removeFile(ctx context.Context, g Output, m rag.Memory, o *Options, p string) error {
	if o.KeepMissing {
		return nil
	}
	n, err := m.Remove(ctx, FileURL(p))
	if errors.Is(err, rag.ErrReserved) {
		return nil // a memory file: its store follows it
	}
	if err == nil && n > 0 {
		fmt.Fprintf(g.Stdout, "%s removed %s (%d chunks)\n", time.Now().Format("15:04:05"), p, n)
	}
	return err
}

// removeUnder removes the sources of the files under a folder that is gone
// or excluded.
func removeUnder(ctx context.Context, g Output, m rag.Memory, o *Options, dir string) error {
	if o.KeepMissing {
		return nil
	}
	return prune(ctx, g, m, o, dir, nil, nil, &Summary{})
}
