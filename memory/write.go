package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ragmem/ragmem/internal/clean"
	"github.com/ragmem/ragmem/memory/internal/files"
)

// The one place a memory is written: every surface (the CLI's memory add,
// POST /v1/memories, the MCP tool remember) and extraction write through
// Store.Add. Checks that must hold for every new memory (validation, and
// later consolidation with an existing memory or supersession of an older
// one) belong here.

// NewMemory is a memory to write. It is a plain value.
type NewMemory struct {
	Frontmatter
	// Content is the Markdown body.
	Content string `json:"content"`
}

// AddResult says what Add wrote. It is a plain value.
type AddResult struct {
	Memory Memory `json:"memory"`
	// Appended is true when the slug existed and the entry was appended
	// after a "---" separator.
	Appended bool `json:"appended"`
	// Problem is set when the file (as it was, with the new entry
	// appended) does not parse, so the memory is not used until the file is
	// fixed; the new entry is saved all the same.
	Problem *Problem `json:"problem,omitempty"`
}

// Validate checks a memory about to be written and cleans it: its strings
// become single lines without control characters, Importance defaults to
// medium; Title, WhenToUse (patterns that compile) and Content are
// required. Store.Add validates; callers may validate earlier to report
// problems before they write.
func (nm *NewMemory) Validate() error {
	if err := validateFrontmatter(&nm.Frontmatter); err != nil {
		return err
	}
	if strings.TrimSpace(clean.Text(nm.Content)) == "" {
		return fmt.Errorf("%w: content is empty", ErrInvalid)
	}
	return nil
}

// Add writes a memory (seed 001, appendMemory). The file is
// <dir>/<Slugify(title)>.md; when it exists, the new entry is appended
// after a "---" separator and nothing earlier is changed (append-only). The
// file is replaced atomically (temporary file, fsync, rename, fsync of the
// directory) under a lock shared with other processes. DiscoveredAt
// defaults to now and Importance to medium; Title, WhenToUse and Content
// are required. With an index, the memory is indexed before Add returns; an
// index failure is logged and retried by the next refresh, and does not fail
// the write.
func (s *Store) Add(ctx context.Context, nm NewMemory) (AddResult, error) {
	if err := nm.Validate(); err != nil {
		return AddResult{}, err
	}
	fm, body := nm.Frontmatter, clean.Text(nm.Content)
	if len(body) > s.o.MaxContentBytes {
		return AddResult{}, fmt.Errorf("%w: content is %d bytes; the limit is %d", ErrTooLarge, len(body), s.o.MaxContentBytes)
	}
	if fm.DiscoveredAt.IsZero() {
		fm.DiscoveredAt = s.o.Now().UTC().Truncate(time.Second)
	}
	if err := ctx.Err(); err != nil {
		return AddResult{}, err
	}
	slug := Slugify(fm.Title)
	entry := FormatEntry(fm, body)
	path := filepath.Join(s.abs, slug+".md")

	if err := os.MkdirAll(s.abs, 0o700); err != nil {
		return AddResult{}, fmt.Errorf("memory: create the memory directory: %s", files.Pathless(err))
	}
	var res AddResult
	var data []byte
	err := s.lock.with(ctx, func() error {
		old, fi, err := files.Read(path, s.o.MaxFileBytes)
		perm := os.FileMode(0o600)
		switch {
		case err == nil:
			perm = fi.Mode().Perm()
			sep := separator
			if strings.HasSuffix(string(old), "\n") {
				sep = separator[1:]
			}
			data = make([]byte, 0, len(old)+len(sep)+len(entry))
			data = append(append(append(data, old...), sep...), entry...)
			res.Appended = true
		case errors.Is(err, os.ErrNotExist):
			data = entry
		case errors.Is(err, ErrNotRegular):
			return fmt.Errorf("%w; the memory %s was not written", err, slug)
		case errors.Is(err, ErrTooLarge):
			return fmt.Errorf("%w: %s.md is larger than %d bytes; nothing can be appended to it", ErrTooLarge, slug, s.o.MaxFileBytes)
		default:
			return fmt.Errorf("memory: read %s: %s", slug, files.Pathless(err))
		}
		if int64(len(data)) > s.o.MaxFileBytes {
			return fmt.Errorf("%w: appending would make %s.md %d bytes; the limit is %d", ErrTooLarge, slug, len(data), s.o.MaxFileBytes)
		}
		return files.Write(s.fs, path, data, perm)
	})
	if err != nil {
		return AddResult{}, err
	}
	info, err := os.Lstat(path)
	if err != nil {
		return AddResult{}, fmt.Errorf("memory: stat %s: %s", slug, files.Pathless(err))
	}
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	st := s.parseState(slug, data, &fileState{size: info.Size(), mtime: info.ModTime()})
	s.mu.Lock()
	s.files[slug] = st
	s.mu.Unlock()
	s.gen.Add(1)
	if st.mem == nil {
		p := Problem{File: st.problem.File, Line: st.problem.Line, Msg: st.problem.Msg}
		res.Problem = &p
		res.Memory = Memory{Slug: slug, Path: path, URL: fileURL(path), Frontmatter: fm, Entries: 1, Size: info.Size(), ModTime: info.ModTime(), Hash: st.hash}
		return res, nil
	}
	res.Memory = *st.mem
	if s.ix != nil {
		if _, err := s.reconcile(ctx, nil); err != nil {
			s.o.Logger.Warn("memory: indexing the new memory failed; the next refresh retries", "slug", slug, "err", err)
			s.invalidate()
		}
	}
	return res, nil
}
