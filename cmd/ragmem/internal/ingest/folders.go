package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ragmem/ragmem/internal/wal"
)

// What `ragmem index` remembers about the folders it indexed, in the data
// directory's folders.json (mode 0600, written atomically under
// folders.lock): each folder's --exclude patterns, so that the next plain
// `ragmem index FOLDER` (or --watch) excludes what the last one was told
// to, as the store remembers --keep-params.
const (
	foldersFile     = "folders.json"
	foldersLockFile = "folders.lock"
	maxFoldersBytes = 4 << 20
	// maxExcludes bounds one folder's patterns, and maxPatternBytes one
	// pattern: the file is written by this program, but read back without
	// trusting it.
	maxExcludes     = 1000
	maxPatternBytes = 4096
)

// folderSettings is folders.json.
type folderSettings struct {
	Version int                      `json:"v"`
	Folders map[string]folderSetting `json:"folders"` // by absolute path
}

// folderSetting is what is remembered about one folder.
type folderSetting struct {
	Exclude []string `json:"exclude,omitempty"`
}

var errFolders = errors.New("folder settings")

// decodeFolders parses folders.json, refusing what this program would not
// have written.
func decodeFolders(b []byte) (folderSettings, error) {
	var set folderSettings
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&set); err != nil {
		return folderSettings{}, fmt.Errorf("%w: %v", errFolders, err)
	}
	if set.Version != 1 {
		return folderSettings{}, fmt.Errorf("%w: version %d, want 1", errFolders, set.Version)
	}
	for dir, s := range set.Folders {
		if !filepath.IsAbs(dir) {
			return folderSettings{}, fmt.Errorf("%w: folder %q is not an absolute path", errFolders, truncateForMessage(dir))
		}
		if len(s.Exclude) > maxExcludes {
			return folderSettings{}, fmt.Errorf("%w: %d patterns for %s", errFolders, len(s.Exclude), dir)
		}
		for _, p := range s.Exclude {
			if p == "" || len(p) > maxPatternBytes || strings.ContainsAny(p, "\n\x00") {
				return folderSettings{}, fmt.Errorf("%w: a bad pattern for %s", errFolders, dir)
			}
		}
	}
	if set.Folders == nil {
		set.Folders = map[string]folderSetting{}
	}
	return set, nil
}

func truncateForMessage(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// loadFolders reads the folder settings of the data directory dir (none
// when there is no file).
func loadFolders(dir string) (folderSettings, error) {
	b, _, err := wal.ReadRegular(filepath.Join(dir, foldersFile), maxFoldersBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return folderSettings{Version: 1, Folders: map[string]folderSetting{}}, nil
	}
	if err != nil {
		return folderSettings{}, fmt.Errorf("%w: %w", errFolders, err)
	}
	s, err := decodeFolders(b)
	if err != nil {
		return folderSettings{}, fmt.Errorf("%s: %w", filepath.Join(dir, foldersFile), err)
	}
	return s, nil
}

// rememberExcludes sets (or, with none, forgets) the exclude patterns of
// folder in the data directory dir.
func rememberExcludes(ctx context.Context, dir, folder string, exclude []string) error {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	lock, err := wal.WaitLock(lctx, filepath.Join(dir, foldersLockFile))
	if err != nil {
		return fmt.Errorf("%w: %w", errFolders, err)
	}
	defer lock.Unlock()
	set, err := loadFolders(dir)
	if err != nil {
		return err
	}
	if slices.Equal(set.Folders[folder].Exclude, exclude) {
		return nil
	}
	if len(exclude) == 0 {
		delete(set.Folders, folder)
	} else {
		set.Folders[folder] = folderSetting{Exclude: exclude}
	}
	b, err := json.MarshalIndent(set, "", "  ")
	if err != nil {
		return err
	}
	return wal.WriteFileAtomic(wal.OS{}, filepath.Join(dir, foldersFile), func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
}

// FolderExcludes resolves the exclude patterns of the folder path for this
// run, remembered in the data directory dir: the ones --exclude gives
// (remembered for the next run; only empty ones forget), else the ones
// remembered, which it says on warn that it applies.
func FolderExcludes(ctx context.Context, dir, path string, given []string, changed bool, warn io.Writer) ([]string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if changed {
		var pats []string
		for _, p := range given {
			if p != "" {
				pats = append(pats, p)
			}
		}
		if len(pats) > maxExcludes {
			return nil, fmt.Errorf("--exclude: %d patterns; at most %d", len(pats), maxExcludes)
		}
		for _, p := range pats {
			if len(p) > maxPatternBytes || strings.ContainsAny(p, "\n\x00") {
				return nil, fmt.Errorf("--exclude: a pattern must be one line of at most %d bytes", maxPatternBytes)
			}
		}
		if err := rememberExcludes(ctx, dir, abs, pats); err != nil {
			return nil, err
		}
		return pats, nil
	}
	set, err := loadFolders(dir)
	if err != nil {
		return nil, err
	}
	pats := set.Folders[abs].Exclude
	if len(pats) > 0 {
		q := make([]string, len(pats))
		for i, p := range pats {
			q[i] = fmt.Sprintf("%q", p)
		}
		fmt.Fprintf(warn, "ragmem: %s: excluding %s, as the last --exclude said (--exclude '' forgets)\n", abs, strings.Join(q, " "))
	}
	return pats, nil
}
