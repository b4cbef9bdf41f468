package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/ragmem/ragmem/internal/clean"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/internal/memory/internal/files"
	"github.com/ragmem/ragmem/internal/perm"
)

// The one place a memory is written: every surface (the CLI's memory add,
// POST /v1/memories, the MCP tool remember) and extraction write through
// Store.Add. Checks that must hold for every new memory (validation, and
// later consolidation with an existing memory or supersession of an older
// one) belong here.

// NewMemory is a memory to write.
type NewMemory struct {
	Frontmatter
	// Content is the Markdown body.
	Content string `json:"content"`
	// Separate writes the memory as its own even when it restates or may
	// contradict an existing one (no consolidation, no supersession).
	// Default false.
	Separate bool `json:"separate,omitempty"`
	// SupersedeUser lets an extracted memory (Author AuthorExtraction)
	// supersede memories the user wrote, be merged into them, or be
	// appended to one of the same title. Default false: what the user wrote
	// stays as it is, and the extracted memory is written beside it as its
	// own memory, marked as conflicting with it (Conflicts), for the user
	// to decide (Store.Supersede).
	SupersedeUser bool `json:"supersedeUser,omitempty"`
}

// AddResult says what Add wrote.
type AddResult struct {
	Memory Memory `json:"memory"`
	// Appended is true when the slug existed and the entry was appended
	// after a "---" separator.
	Appended bool `json:"appended"`
	// Problem is set when the file (as it was, with the new entry
	// appended) does not parse, so the memory is not used until the file is
	// fixed; the new entry is saved all the same.
	Problem *Problem `json:"problem,omitempty"`
	// Consolidated is set when the new memory restated an existing one: it
	// was appended to that memory (Memory) as a merged entry, and its text
	// stays there, searchable.
	Consolidated *Link `json:"consolidated,omitempty"`
	// Superseded lists the older memories the new one replaces (decided by
	// the model, or named by the caller); they stay, marked superseded.
	Superseded []Link `json:"superseded,omitempty"`
	// Conflicts lists memories the new one may contradict, flagged for a
	// decision (Store.Supersede) because no model was there to judge.
	Conflicts []Link `json:"conflicts,omitempty"`
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

// Add writes a memory, consolidating it with the
// memories it restates or supersedes (consolidate.go). The file is
// <dir>/<Slugify(title)>.md; when it exists, the new entry is appended
// after a "---" separator and nothing earlier is changed (append-only). The
// file is replaced atomically (temporary file, fsync, rename, fsync of the
// directory) under a lock shared with other processes. DiscoveredAt
// defaults to now and Importance to medium; Title, WhenToUse and Content
// are required. With an index, the memory is indexed before Add returns; an
// index failure is logged and retried by the next refresh, and does not fail
// the write.
func (s *Store) Add(ctx context.Context, nm NewMemory) (AddResult, error) {
	fm, body, err := s.prepareNew(nm)
	if err != nil {
		return AddResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return AddResult{}, err
	}
	slug := Slugify(fm.Title)
	if err := s.maybeRefresh(ctx); err != nil && !errors.Is(err, engine.ErrEmbedding) {
		return AddResult{}, err
	}
	// An extracted memory leaves what the user wrote alone unless its
	// caller says otherwise: see protect.
	guard := fm.Author == AuthorExtraction && !nm.SupersedeUser
	s.mu.RLock()
	exists := s.files[slug] != nil
	s.mu.RUnlock()
	var res AddResult
	switch {
	case guard && exists && s.userWrote(slug):
		// The same title as a memory of the user's: appended, it would
		// become that memory's text. It is written beside it instead.
		res.Conflicts = append(res.Conflicts, protectedLink(Link{Slug: slug, Title: s.memoryTitle(slug), Similarity: 1, By: "title", Reason: "the same title"}))
		fm.Conflicts = append(fm.Conflicts, slug)
		slug = s.besideSlug(slug)
	case len(fm.Supersedes) > 0:
		if err := s.applySupersedes(&fm, slug, guard, &res); err != nil {
			return AddResult{}, err
		}
	case !exists && !nm.Separate:
		slug = s.consolidateNew(ctx, &fm, body, slug, guard, &res)
	}
	return s.write(ctx, slug, fm, body, res)
}

// prepareNew validates nm and fills the defaults Add writes: the
// discovery time (now, to the second), negative for a title that says
// what not to do, and the user as author. It returns the frontmatter and
// the cleaned body.
func (s *Store) prepareNew(nm NewMemory) (Frontmatter, string, error) {
	if err := nm.Validate(); err != nil {
		return Frontmatter{}, "", err
	}
	fm, body := nm.Frontmatter, clean.Text(nm.Content)
	if len(body) > s.o.MaxContentBytes {
		return Frontmatter{}, "", fmt.Errorf("%w: content is %d bytes; the limit is %d", ErrTooLarge, len(body), s.o.MaxContentBytes)
	}
	if fm.DiscoveredAt.IsZero() {
		fm.DiscoveredAt = s.o.Now().UTC().Truncate(time.Second)
	}
	fm.Negative = fm.Negative || negativeTitle(fm.Title)
	if fm.Author == "" {
		fm.Author = AuthorUser
	}
	return fm, body, nil
}

// memoryTitle is the title of the memory slug, or the slug when it has
// none (no such memory, or an invalid file).
func (s *Store) memoryTitle(slug string) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if st := s.files[slug]; st != nil && st.mem != nil {
		return st.mem.Title
	}
	return slug
}

// applySupersedes checks the memories the caller says fm supersedes
// (provenance "user" unless given) and lists them in res. With guard (an
// extracted memory), a memory of the user's is flagged as a conflict
// instead of superseded. Any other name that is not another memory of the
// directory is an error.
func (s *Store) applySupersedes(fm *Frontmatter, slug string, guard bool, res *AddResult) error {
	if fm.Provenance == "" {
		fm.Provenance = "user"
	}
	if guard {
		kept := fm.Supersedes[:0:0]
		for _, o := range fm.Supersedes {
			if !s.userWrote(o) {
				kept = append(kept, o)
				continue
			}
			res.Conflicts = append(res.Conflicts, protectedLink(Link{Slug: o, Title: s.memoryTitle(o), By: "user", Reason: fm.Provenance}))
			fm.Conflicts = append(fm.Conflicts, o)
		}
		fm.Supersedes = kept
	}
	for _, o := range fm.Supersedes {
		s.mu.RLock()
		st := s.files[o]
		s.mu.RUnlock()
		if st == nil || st.mem == nil || o == slug {
			return fmt.Errorf("%w: supersedes names %q, which is not another memory of the directory", ErrInvalid, clean.Clip(o, 80))
		}
		res.Superseded = append(res.Superseded, Link{Slug: o, Title: st.mem.Title, By: "user", Reason: fm.Provenance})
	}
	return nil
}

// consolidateNew compares a new memory with the directory's (decide) and
// applies the decision to fm and res: it restates a memory (merged into
// that memory's file, whose slug it returns), supersedes some, or may
// contradict some. With guard, memories of the user's are only flagged
// (protect). When the comparison fails, the memory is written as new.
func (s *Store) consolidateNew(ctx context.Context, fm *Frontmatter, body, slug string, guard bool, res *AddResult) string {
	d, err := s.decide(ctx, NewMemory{Frontmatter: *fm, Content: body}, slug)
	if err != nil {
		s.o.Logger.Warn("memory: could not compare the new memory with the existing ones; it is written as new", "title", fm.Title, "err", err)
	}
	if guard {
		d = s.protect(d)
	}
	switch {
	case d.mergeInto != nil:
		slug = d.mergeInto.Slug
		fm.Merged = true
		fm.Provenance = fmt.Sprintf("restates %s (%s)", slug, d.mergeInto.Reason)
		if d.mergeInto.By == "model" {
			fm.Provenance = fmt.Sprintf("model %s: restates %s: %s", s.o.LLM.Model, slug, d.mergeInto.Reason)
		}
		res.Consolidated = d.mergeInto
	case len(d.supersede) > 0 || len(d.conflicts) > 0:
		if len(d.supersede) > 0 {
			var reasons []string
			for _, l := range d.supersede {
				fm.Supersedes = append(fm.Supersedes, l.Slug)
				reasons = append(reasons, l.Slug+": "+l.Reason)
			}
			fm.Provenance = fmt.Sprintf("model %s: %s", s.o.LLM.Model, strings.Join(reasons, "; "))
			res.Superseded = d.supersede
		}
		for _, l := range d.conflicts {
			fm.Conflicts = append(fm.Conflicts, l.Slug)
		}
		res.Conflicts = append(res.Conflicts, d.conflicts...)
	}
	fm.Provenance = clean.Clip(fm.Provenance, 2*maxPatternLen)
	return slug
}

// userWrote reports whether the memory slug is the user's: a memory with
// an entry that was not extracted, or a file that does not parse (a file
// being written by hand).
func (s *Store) userWrote(slug string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := s.files[slug]
	return st != nil && (st.mem == nil || st.mem.Author != AuthorExtraction)
}

// protect applies the rule of NewMemory.SupersedeUser to what Add decided
// for an extracted memory: a memory of the user's it would merge into or
// supersede is flagged as a conflict instead, and the extracted memory is
// written as its own.
func (s *Store) protect(d decision) decision {
	var out decision
	if d.mergeInto != nil {
		if s.userWrote(d.mergeInto.Slug) {
			out.conflicts = append(out.conflicts, protectedLink(*d.mergeInto))
		} else {
			out.mergeInto = d.mergeInto
		}
	}
	for _, l := range d.supersede {
		if s.userWrote(l.Slug) {
			out.conflicts = append(out.conflicts, protectedLink(l))
		} else {
			out.supersede = append(out.supersede, l)
		}
	}
	if out.mergeInto != nil {
		out.supersede = nil // as decide: a restatement does not also replace others
	}
	out.conflicts = append(out.conflicts, d.conflicts...)
	return out
}

// protectedLink is l, a memory of the user's that an extracted memory would
// have replaced, restated or been appended to, as a flagged conflict.
func protectedLink(l Link) Link {
	l.Reason = clean.Clip("written by the user, so extraction does not replace it unless asked (supersedeUser); "+l.By+": "+l.Reason, 2*maxPatternLen)
	l.By = "author"
	return l
}

// besideSlug is the slug an extracted memory takes when its title's slug
// is a memory of the user's: <slug>-extracted, or -extracted-2, ... past
// memories of the user's of those names (an extracted one of the name is
// appended to, as an update).
func (s *Store) besideSlug(slug string) string {
	base := slug
	if len(base) > maxSlugLen-len("-extracted-99") {
		base = strings.TrimRight(base[:maxSlugLen-len("-extracted-99")], "-")
	}
	cand := base + "-extracted"
	for i := 2; s.userWrote(cand) && i < 100; i++ {
		cand = fmt.Sprintf("%s-extracted-%d", base, i)
	}
	return cand
}

// write appends an entry to <slug>.md (creating it), under the lock, and
// brings the store's view and the index up to date.
func (s *Store) write(ctx context.Context, slug string, fm Frontmatter, body string, res AddResult) (AddResult, error) {
	entry := FormatEntry(fm, body)
	path := filepath.Join(s.abs, slug+".md")

	if err := perm.BeforeCreate(s.abs); err != nil {
		return AddResult{}, fmt.Errorf("memory: the memory directory: %w", err)
	}
	if err := os.MkdirAll(s.abs, 0o700); err != nil {
		return AddResult{}, fmt.Errorf("memory: create the memory directory: %s", files.Pathless(err))
	}
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
	for _, m := range s.view() {
		if m.Slug == slug {
			res.Memory = m
		}
	}
	return res, nil
}

var negativeTitleRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)^\s*(don'?t|do not|never|avoid|stop)\b`) })

// negativeTitle reports whether a title says what not to do.
func negativeTitle(title string) bool {
	return negativeTitleRE().MatchString(strings.ReplaceAll(title, "’", "'"))
}

// Supersede records that the memory newer replaces the memory older (for
// example to confirm a flagged conflict): an entry is appended to newer's
// file, merged (its shown body does not change), with supersedes: [older]
// and the provenance (default "user"). older is not touched; it is read as
// superseded from newer's time on. newer must have been stored after
// older.
func (s *Store) Supersede(ctx context.Context, newerName, olderName, provenance string) (AddResult, error) {
	nm, err := s.Get(ctx, newerName)
	if err != nil {
		return AddResult{}, err
	}
	om, err := s.Get(ctx, olderName)
	if err != nil {
		return AddResult{}, err
	}
	if nm.Slug == om.Slug {
		return AddResult{}, fmt.Errorf("%w: a memory cannot supersede itself", ErrInvalid)
	}
	if !newer(&nm, &om) {
		return AddResult{}, fmt.Errorf("%w: %s was stored before %s, so it cannot supersede it; supersede the other way round", ErrInvalid, nm.Slug, om.Slug)
	}
	if provenance = clean.Line(provenance); provenance == "" {
		provenance = "user"
	}
	fm := Frontmatter{Title: nm.Title, WhenToUse: nm.WhenToUse[:1], Importance: nm.Importance, Supersedes: []string{om.Slug},
		Merged: true, Provenance: provenance, DiscoveredBy: nm.DiscoveredBy}
	body := fmt.Sprintf("Supersedes %q (%s): %s.", om.Title, om.Slug, provenance)
	fm.DiscoveredAt = s.o.Now().UTC().Truncate(time.Second)
	return s.write(ctx, nm.Slug, fm, body, AddResult{Superseded: []Link{{Slug: om.Slug, Title: om.Title, By: "user", Reason: provenance}}})
}
