// Package sample holds the sample corpus of `ragmem demo`, embedded in the
// binary so that the demo runs from any folder. Its folder, corpus, is also
// the corpus the tests read (the golden and property tests, export's round
// trip, the CLI's and the clients' tests), so the demo shows what the tests
// measure.
package sample

import (
	"bytes"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ragmem/ragmem/internal/wal"
)

//go:embed corpus
var files embed.FS

// Corpus is the sample corpus: a flat folder of Markdown, text and HTML
// files. It is read-only and safe for concurrent use.
func Corpus() fs.FS {
	sub, err := fs.Sub(files, "corpus")
	if err != nil {
		panic(err) // "corpus" is a valid path embedded above
	}
	return sub
}

// Write writes the sample corpus into dir (created if missing), each file
// atomically; files that already hold the same content are left alone, and
// other files in dir are not touched. It returns the paths written or
// found, sorted.
func Write(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sample: %w", err)
	}
	entries, err := fs.ReadDir(Corpus(), ".")
	if err != nil {
		return nil, fmt.Errorf("sample: %w", err)
	}
	var paths []string
	for _, e := range entries {
		b, err := fs.ReadFile(Corpus(), e.Name())
		if err != nil {
			return nil, fmt.Errorf("sample: %w", err)
		}
		p := filepath.Join(dir, e.Name())
		paths = append(paths, p)
		if old, err := os.ReadFile(p); err == nil && bytes.Equal(old, b) {
			continue
		}
		if err := wal.WriteFileAtomic(wal.OS{}, p, func(w io.Writer) error {
			_, err := w.Write(b)
			return err
		}); err != nil {
			return nil, fmt.Errorf("sample: %w", err)
		}
	}
	return paths, nil
}
