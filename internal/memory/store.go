package memory

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/ragmem/ragmem/budget"
	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/clean"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/internal/memory/internal/files"
	"github.com/ragmem/ragmem/internal/memory/internal/pattern"
	"github.com/ragmem/ragmem/internal/perm"
	"github.com/ragmem/ragmem/internal/reserved"
	"github.com/ragmem/ragmem/internal/wal"
	"github.com/ragmem/ragmem/rag"
)

// AttrDir is the attribute that names the memory directory (its absolute
// path) on every index record of a memory: it keeps the memories of
// different directories apart in one index. Servers leave it out of their
// answers.
const AttrDir = reserved.AttrMemoryDir

// Attributes and document type of the memory records in the index (the
// values persist in existing indexes).
const (
	attrSlug    = reserved.AttrMemorySlug    // the memory's slug (file name without .md)
	attrKind    = reserved.AttrMemoryKind    // recordContent or recordPattern
	attrPattern = reserved.AttrMemoryPattern // a natural-language pattern as written

	// docPattern is the document type of the records that index
	// natural-language whenToUse patterns: matching metadata rather than
	// memories, so they are kept apart from docType "memory" (not counted
	// as memories, not returned by searches for memories).
	docPattern = reserved.DocMemoryPattern

	recordContent = "content" // chunks of a memory file's bodies
	recordPattern = "pattern" // one natural-language whenToUse pattern
)

// DefaultMaxMemories is how many memories Match selects by default.
const DefaultMaxMemories = 5

// Defaults of Options.
const (
	defaultRefreshInterval = time.Second
	defaultMaxFileBytes    = 1 << 20
	defaultMaxContentBytes = 64 << 10
	defaultRelevanceWeight = 10.0
	defaultFeedbackWeight  = 10.0
	defaultDecayWeight     = 10.0
	defaultRecencyWeight   = 0.2
	defaultRecencyHalfLife = 30 * 24 * time.Hour
)

// Options configure Open. A nil *Options means all defaults. It is a plain
// value, copied by Open.
type Options struct {
	// Index holds the memories for hybrid search: their contents are
	// indexed there with docType "memory", their natural-language patterns
	// with docType "memory-pattern". Default nil: no
	// index, so natural-language patterns match by their words only,
	// relevance is 0 and there are no weak matches.
	Index *engine.Index
	// Logger receives index problems and skipped files. Default
	// slog.Default().
	Logger *slog.Logger
	// Now is the clock for recency and discoveredAt (tests). Default
	// time.Now.
	Now func() time.Time
	// AgentTags maps agent names (lower case) to their specialty tags.
	// Default DefaultAgentTags.
	AgentTags map[string][]string
	// RefreshInterval is how old the view of the directory may get before a
	// read (List, Match, ...) checks the directory again. Default 1 s; a
	// negative value checks only on Open, Add and Refresh.
	RefreshInterval time.Duration
	// MaxFileBytes caps a memory file; larger files are reported and
	// skipped, and appends that would exceed it fail. Default 1 MiB.
	MaxFileBytes int64
	// MaxContentBytes caps the body of one new entry. Default 64 KiB.
	MaxContentBytes int
	// SemanticThreshold is the embedding similarity at which a
	// natural-language pattern fires. Default 0.3 with the lexical embedder,
	// 0.5 with others.
	SemanticThreshold float64
	// MinCoverage is the weighted share of a natural-language pattern's
	// content words that must occur in the task. Default 0.5.
	MinCoverage float64
	// RelevanceWeight scales retrieval relevance (0–1) into the ranking:
	// rank = score + RelevanceWeight × relevance. Default 10; negative
	// means 0 (rank by score alone).
	RelevanceWeight float64
	// FeedbackWeight scales the feedback term of the ranking (rank.go):
	// FeedbackWeight × (cite rate − 0.5). Default 10; negative means 0.
	FeedbackWeight float64
	// DecayWeight scales the decay term of the ranking: −DecayWeight × (1 −
	// strength). Default 10; negative means 0.
	DecayWeight float64
	// RecencyWeight scales recency in Search: RecencyWeight × 0.5^(age /
	// RecencyHalfLife), added to a relevance of 0–1. Default 0.2; negative
	// means 0.
	RecencyWeight float64
	// RecencyHalfLife is the half-life of recency in Search. Default 30
	// days.
	RecencyHalfLife time.Duration
	// LLM is a chat model that judges whether a new memory restates or
	// contradicts the similar ones (Store.Add). Default nil: restatements
	// are merged by similarity, and likely contradictions are only flagged
	// (conflicts), never applied.
	LLM *rag.LLM
	// DuplicateThreshold is the similarity at which, without a model, a
	// new memory with no conflicting value is merged into an existing one.
	// Default 0.8 with the lexical embedder, 0.9 with others.
	DuplicateThreshold float64
	// ConflictThreshold is the similarity at which an existing memory is a
	// candidate: shown to the model, or compared for conflicting values.
	// Default 0.5 with the lexical embedder, 0.7 with others.
	ConflictThreshold float64
}

// Memory is the metadata of one memory file: its frontmatter merged over
// its entries (title of the first; whenToUse, tags and related memories of
// all; the highest importance; the latest discoveredAt, discoveredBy,
// discoveredIn and source; the author AuthorExtraction when every entry was
// extracted, else AuthorUser). The bodies are read on demand (Store.Entries).
type Memory struct {
	Slug string `json:"slug"`
	Path string `json:"path"`
	// URL is the file's URL, the memory's source URL in the index.
	URL string `json:"url"`
	Frontmatter
	// Discoverers are the agents of all entries, first discoverer first.
	Discoverers []string  `json:"discoverers,omitempty"`
	Entries     int       `json:"entries"`
	Size        int64     `json:"size"`
	ModTime     time.Time `json:"modTime"`
	// Hash is the SHA-256 of the file (hex, 32 characters).
	Hash string `json:"hash"`
	// Confirmations counts the merged entries: restatements of the memory
	// in other words that consolidation appended instead of writing a copy.
	Confirmations int `json:"confirmations,omitempty"`

	// The fields below are derived by the store from all memories and the
	// feedback log (they are not in the file).

	// ValidFrom is when the memory became true: OccurredAt, else when it
	// was first stored.
	ValidFrom time.Time `json:"validFrom,omitzero"`
	// ValidTo is when a newer memory superseded it (zero while current).
	ValidTo time.Time `json:"validTo,omitzero"`
	// SupersededBy is the slug of the memory that superseded it.
	SupersededBy string `json:"supersededBy,omitempty"`
	// Feedback counts the memory's injections and citations.
	Feedback Feedback `json:"feedback"`
	// Strength (0–1) is what is left of the memory after decay (decay.go).
	Strength float64 `json:"strength"`
	// Decayed is true when Strength fell below DecayedBelow.
	Decayed bool `json:"decayed,omitempty"`

	firstAt  time.Time // discoveredAt of the first entry
	links    int       // merged entries that only add supersedes links
	patterns []*pattern.Pattern
	kwText   string          // lower-cased title, whenToUse and tags, for keyword points
	tagSet   map[string]bool // normalised tags
}

func (m *Memory) keywordText() string {
	var b strings.Builder
	b.WriteString(strings.ToLower(m.Title))
	for _, p := range m.WhenToUse {
		b.WriteByte(' ')
		b.WriteString(strings.ToLower(p))
	}
	for _, t := range m.Tags {
		b.WriteByte(' ')
		b.WriteString(strings.ToLower(t))
	}
	return b.String()
}

// fileState is what the store knows of one file.
type fileState struct {
	size    int64
	mtime   time.Time
	hash    string
	mem     *Memory     // nil when the file is invalid
	problem *ParseError // why it is invalid
	indexed string      // hash of the version known to be in the index
	records int         // index records of the memory (chunks and patterns)
}

// Store is a directory of memory files. It is safe for concurrent use, and
// several processes may append to the same directory (writes take a file
// lock).
//
// The files are the truth; the index is derived from them. The store keeps
// each file's size, modification time and SHA-256 and checks the directory
// on Open, on Refresh, after its own writes, and before a read when its view
// is older than Options.RefreshInterval. A file whose size or time changed
// (or whose time is too recent to trust) is read again; if its hash changed
// it is parsed and re-indexed, and a removed or invalid file leaves the
// index. Frontmatter is kept in memory; bodies are read from disk when asked
// for.
type Store struct {
	dir     string
	abs     string
	o       Options
	ix      *engine.Index
	thresh  float64
	lexical bool // the index's embedder is the lexical one

	dupThresh, conflictThresh float64

	refreshMu sync.Mutex // one refresh (and index reconciliation) at a time
	lock      *dirLock   // one writer at a time, in this process and across processes
	fs        wal.FS     // where writes go (tests inject failures)
	feedback  *feedbackFile

	mu          sync.RWMutex // guards the fields below
	files       map[string]*fileState
	lastRefresh time.Time
	lastScan    time.Time // wall-clock start of the last directory scan
	swept       bool      // stale index sources of the directory were removed
	dirErr      error     // the last directory read error
	retryIndex  time.Time // automatic refreshes leave the index alone until then

	gen       atomic.Uint64
	stemCache sync.Map // chunk id -> map[string]bool
	stemCount atomic.Int64
}

// Open opens the memory directory dir (it need not exist yet: it is created
// by the first Add) and reads the frontmatter of its files. Invalid files
// are reported by Problems and skipped. With an index, the memories are
// indexed; an index failure is returned, as is a directory that cannot be
// read.
func Open(ctx context.Context, dir string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if dir == "" {
		return nil, fmt.Errorf("%w: no memory directory given", ErrInvalid)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	o.setDefaults()
	s := &Store{dir: dir, abs: abs, o: o, ix: o.Index, files: map[string]*fileState{}, lock: newDirLock(filepath.Join(abs, ".lock")), fs: wal.OS{},
		feedback: &feedbackFile{path: feedbackPath(abs), logger: o.Logger}}
	s.setThresholds()
	if _, err := os.Stat(abs); err == nil {
		// Memory files go into agents' prompts as the user's own: the
		// directory must be the user's (internal/perm: ssh's rule).
		note, err := perm.Dir(abs)
		if err != nil {
			return nil, fmt.Errorf("memory: the memory directory: %w", err)
		}
		if note != "" {
			o.Logger.Info(note)
		}
	}
	wal.RemoveStaleTemps(abs, staleTempAge)
	if _, err := s.Refresh(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// setDefaults gives each zero option its default (Options says which);
// a negative weight turns its signal off.
func (o *Options) setDefaults() {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.AgentTags == nil {
		o.AgentTags = DefaultAgentTags
	}
	if o.RefreshInterval == 0 {
		o.RefreshInterval = defaultRefreshInterval
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = defaultMaxFileBytes
	}
	if o.MaxContentBytes <= 0 {
		o.MaxContentBytes = defaultMaxContentBytes
	}
	if o.MinCoverage <= 0 || o.MinCoverage > 1 {
		o.MinCoverage = pattern.MinCoverage
	}
	if o.RecencyHalfLife <= 0 {
		o.RecencyHalfLife = defaultRecencyHalfLife
	}
	for _, w := range []struct {
		p   *float64
		def float64
	}{{&o.RelevanceWeight, defaultRelevanceWeight}, {&o.FeedbackWeight, defaultFeedbackWeight}, {&o.DecayWeight, defaultDecayWeight}, {&o.RecencyWeight, defaultRecencyWeight}} {
		if *w.p == 0 {
			*w.p = w.def
		}
		if *w.p < 0 {
			*w.p = 0
		}
	}
}

// setThresholds sets the similarity thresholds of pattern matching,
// duplicates and conflicts: the options', else the defaults for the
// index's embedder (lexical ones for a lexical embedder or no index).
func (s *Store) setThresholds() {
	s.lexical = pattern.Lexical(s.ix)
	s.thresh = s.o.SemanticThreshold
	if s.thresh <= 0 {
		s.thresh = pattern.Threshold(s.ix)
	}
	s.dupThresh, s.conflictThresh = s.o.DuplicateThreshold, s.o.ConflictThreshold
	lexical := s.lexical || s.ix == nil
	if s.dupThresh <= 0 {
		s.dupThresh = denseDuplicateThreshold
		if lexical {
			s.dupThresh = lexicalDuplicateThreshold
		}
	}
	if s.conflictThresh <= 0 {
		s.conflictThresh = denseConflictThreshold
		if lexical {
			s.conflictThresh = lexicalConflictThreshold
		}
	}
}

// Dir returns the memory directory as given to Open.
func (s *Store) Dir() string { return s.dir }

// Index returns the index the store uses (nil when none).
func (s *Store) Index() *engine.Index { return s.ix }

// Generation increases whenever the store sees a memory change (an Add, or
// a file added, changed or removed on disk); the directory is checked first
// when the store's view is older than Options.RefreshInterval. Caches key
// on it.
func (s *Store) Generation(ctx context.Context) (uint64, error) {
	if err := s.maybeRefresh(ctx); err != nil {
		return 0, err
	}
	return s.gen.Load(), nil
}

// Problem is an invalid file, skipped.
type Problem struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
	Msg  string `json:"message"`
}

func (p Problem) String() string {
	return (&ParseError{File: p.File, Line: p.Line, Msg: p.Msg}).Error()
}

// RefreshReport says what a refresh found.
type RefreshReport struct {
	Added     []string  `json:"added"` // slugs
	Changed   []string  `json:"changed"`
	Removed   []string  `json:"removed"`
	Unchanged []string  `json:"unchanged"`
	Problems  []Problem `json:"problems"`
	Reindexed int       `json:"reindexed"` // memories (re)indexed
}

// changed reports whether any memory was added, changed or removed.
func (r RefreshReport) changed() bool {
	return len(r.Added)+len(r.Changed)+len(r.Removed) > 0
}

// racyWindow: a file modified this close to (or after) the previous scan
// may change again without its size or time changing, so it is hashed again.
const racyWindow = 2 * time.Second

// validName reports whether name (without .md) may name a memory file: a
// plain file name, not hidden, not a path.
func validName(name string) bool {
	return name != "" && len(name) <= 250 && utf8.ValidString(name) &&
		!strings.ContainsAny(name, "/\\\x00") && !strings.HasPrefix(name, ".") && name != ".."
}

// Refresh checks the directory now and brings the index up to date.
func (s *Store) Refresh(ctx context.Context) (RefreshReport, error) {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	return s.refreshLocked(ctx, false)
}

// maybeRefresh refreshes when the view is older than RefreshInterval.
func (s *Store) maybeRefresh(ctx context.Context) error {
	if s.o.RefreshInterval < 0 {
		s.mu.RLock()
		err := s.dirErr
		s.mu.RUnlock()
		return err
	}
	s.mu.RLock()
	fresh := time.Since(s.lastRefresh) < s.o.RefreshInterval && !s.lastRefresh.IsZero()
	err := s.dirErr
	s.mu.RUnlock()
	if fresh {
		return err
	}
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	_, err = s.refreshLocked(ctx, true)
	return err
}

// refreshLocked checks the directory; auto marks a refresh made for a read.
func (s *Store) refreshLocked(ctx context.Context, auto bool) (RefreshReport, error) {
	scanStart := time.Now()
	s.mu.RLock()
	prevScan := s.lastScan
	prev := maps.Clone(s.files)
	s.mu.RUnlock()

	ents, err := os.ReadDir(s.abs)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		err = fmt.Errorf("memory: read directory %s: %w", s.dir, err)
		s.mu.Lock()
		s.dirErr = err
		s.mu.Unlock()
		return RefreshReport{}, err
	}
	next, rep := s.scanEntries(ents, prev, prevScan)

	s.mu.Lock()
	s.files = next
	s.lastScan = scanStart
	s.lastRefresh = time.Now()
	s.dirErr = nil
	s.mu.Unlock()
	if rep.changed() {
		s.gen.Add(1)
	}
	err = s.reindexAfterScan(ctx, auto, &rep)
	return rep, err
}

// fileChange is how a file compares with the previous scan.
type fileChange int

const (
	fileUnchanged fileChange = iota
	fileAdded
	fileChanged
)

// scanEntries reads the directory's memory files against the previous
// scan (prev, made at prevScan): the new state of each file, and the
// report of what was added, changed, removed and left as it was, sorted,
// with the invalid files' problems.
func (s *Store) scanEntries(ents []os.DirEntry, prev map[string]*fileState, prevScan time.Time) (map[string]*fileState, RefreshReport) {
	var rep RefreshReport
	next := make(map[string]*fileState, len(ents))
	for _, e := range ents {
		name := e.Name()
		slug := strings.TrimSuffix(name, ".md")
		if !strings.HasSuffix(name, ".md") || !validName(slug) {
			continue
		}
		st, change := s.scanEntry(e, prev[slug], prevScan)
		if st == nil {
			continue
		}
		next[slug] = st
		switch change {
		case fileAdded:
			rep.Added = append(rep.Added, slug)
		case fileChanged:
			rep.Changed = append(rep.Changed, slug)
		default:
			rep.Unchanged = append(rep.Unchanged, slug)
		}
	}
	for slug := range prev {
		if _, ok := next[slug]; !ok {
			rep.Removed = append(rep.Removed, slug)
		}
	}
	sort.Strings(rep.Added)
	sort.Strings(rep.Changed)
	sort.Strings(rep.Removed)
	sort.Strings(rep.Unchanged)
	for _, st := range next {
		if st.problem != nil {
			rep.Problems = append(rep.Problems, Problem{File: st.problem.File, Line: st.problem.Line, Msg: st.problem.Msg})
		}
	}
	sortProblems(rep.Problems)
	return next, rep
}

// scanEntry reads one directory entry named like a memory file, given its
// state at the previous scan (old, nil for a new file). A symbolic link is
// an invalid file (never followed); anything else that is not a regular
// file, or is gone, is nil. A file whose size and time did not change
// since a scan made after it was written is not read again, and one read
// again with the same content keeps its parsed memory.
func (s *Store) scanEntry(e os.DirEntry, old *fileState, prevScan time.Time) (*fileState, fileChange) {
	name := e.Name()
	if e.Type()&os.ModeSymlink != 0 {
		st := &fileState{hash: "symlink", problem: &ParseError{File: name, Msg: "symbolic links are not followed; copy the file into the memory directory"}}
		if old == nil || old.hash != "symlink" {
			return st, fileAdded
		}
		return st, fileUnchanged
	}
	if !e.Type().IsRegular() {
		return nil, fileUnchanged
	}
	info, err := e.Info()
	if err != nil {
		return nil, fileUnchanged // removed while we read the directory
	}
	if old != nil && old.size == info.Size() && old.mtime.Equal(info.ModTime()) &&
		info.ModTime().Before(prevScan.Add(-racyWindow)) {
		return old, fileUnchanged
	}
	st := s.readFile(strings.TrimSuffix(name, ".md"), info)
	if old != nil && old.hash == st.hash && st.hash != "" {
		cp := *old
		cp.size, cp.mtime = st.size, st.mtime
		if cp.mem != nil {
			m := *cp.mem
			m.Size, m.ModTime = st.size, st.mtime
			cp.mem = &m
		}
		return &cp, fileUnchanged
	}
	if st.problem != nil {
		s.o.Logger.Warn("memory: skipping invalid memory file", "problem", st.problem.Error())
	}
	if old == nil {
		return st, fileAdded
	}
	return st, fileChanged
}

// reindexAfterScan brings the index in line with the scanned files and
// counts the memories it (re)indexed in rep. After the embedder failed,
// automatic refreshes wait indexRetryDelay before trying again rather
// than on every read; Refresh retries at once.
func (s *Store) reindexAfterScan(ctx context.Context, auto bool, rep *RefreshReport) error {
	if s.ix == nil {
		return nil
	}
	s.mu.RLock()
	wait := auto && time.Now().Before(s.retryIndex)
	s.mu.RUnlock()
	if wait {
		return nil
	}
	n, err := s.reconcile(ctx, rep.Removed)
	rep.Reindexed = n
	s.mu.Lock()
	if err != nil && errors.Is(err, engine.ErrEmbedding) {
		s.retryIndex = time.Now().Add(indexRetryDelay)
	} else {
		s.retryIndex = time.Time{}
	}
	s.mu.Unlock()
	return err
}

// indexRetryDelay is how long automatic refreshes wait before indexing
// again after the embedder failed.
const indexRetryDelay = 30 * time.Second

func sortProblems(ps []Problem) {
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].File != ps[j].File {
			return ps[i].File < ps[j].File
		}
		return ps[i].Line < ps[j].Line
	})
}

// readFile reads and parses one file.
func (s *Store) readFile(slug string, info os.FileInfo) *fileState {
	path := filepath.Join(s.abs, slug+".md")
	st := &fileState{size: info.Size(), mtime: info.ModTime()}
	name := slug + ".md"
	if info.Size() > s.o.MaxFileBytes {
		st.problem = &ParseError{File: name, Msg: fmt.Sprintf("the file is larger than %d bytes", s.o.MaxFileBytes)}
		st.hash = fmt.Sprintf("size:%d:%d", info.Size(), info.ModTime().UnixNano())
		return st
	}
	data, _, err := files.Read(path, s.o.MaxFileBytes)
	switch {
	case errors.Is(err, ErrNotRegular):
		st.problem = &ParseError{File: name, Msg: "is not a regular file (links, pipes and devices are not read); copy the file into the memory directory"}
		st.hash = "special"
		return st
	case errors.Is(err, ErrTooLarge):
		st.problem = &ParseError{File: name, Msg: fmt.Sprintf("the file is larger than %d bytes", s.o.MaxFileBytes)}
		st.hash = fmt.Sprintf("size:%d:%d", info.Size(), info.ModTime().UnixNano())
		return st
	case err != nil:
		st.problem = &ParseError{File: name, Msg: "cannot be read: " + files.Pathless(err)}
		return st
	}
	st.size = int64(len(data))
	return s.parseState(slug, data, st)
}

func (s *Store) parseState(slug string, data []byte, st *fileState) *fileState {
	sum := sha256.Sum256(data)
	st.hash = hex.EncodeToString(sum[:16])
	name := slug + ".md"
	entries, err := ParseFile(data)
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			cp := *pe
			cp.File = name
			st.problem = &cp
		} else {
			st.problem = &ParseError{File: name, Msg: err.Error()}
		}
		return st
	}
	m, err := mergeEntries(entries)
	if err != nil {
		st.problem = &ParseError{File: name, Msg: err.Error()}
		return st
	}
	path := filepath.Join(s.abs, name)
	m.Slug, m.Path, m.URL = slug, path, fileURL(path)
	m.Size, m.ModTime, m.Hash = st.size, st.mtime, st.hash
	st.mem = m
	return st
}

func fileURL(path string) string {
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // Windows: file:///C:/...
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

// mergeEntries builds a memory's metadata from its entries: the lists
// are the union of the entries' (mergeLists), the single values come from
// the entries in order (mergeValues), and the patterns and search fields
// are derived from the result (prepareMerged).
func mergeEntries(es []Entry) (*Memory, error) {
	if len(es) == 0 {
		return nil, fmt.Errorf("%w: no entries", ErrInvalid)
	}
	m := &Memory{Entries: len(es)}
	m.Title = es[0].Title
	lists := newEntryLists()
	for _, e := range es {
		lists.merge(m, e)
		mergeValues(m, e)
	}
	if m.Author == "" {
		m.Author = AuthorExtraction // every entry was extracted
	}
	if err := prepareMerged(m); err != nil {
		return nil, err
	}
	return m, nil
}

// entryLists holds what a memory's lists have seen so far, so that each
// value is kept once, in the order first seen. Tags and discoverers are
// told apart without case; empty supersedes, conflicts and discoverers
// are never kept.
type entryLists struct {
	when, tags, related, supersedes, conflicts, discoverers map[string]bool
}

func newEntryLists() *entryLists {
	return &entryLists{
		when: map[string]bool{}, tags: map[string]bool{}, related: map[string]bool{},
		supersedes: map[string]bool{"": true}, conflicts: map[string]bool{"": true}, discoverers: map[string]bool{"": true},
	}
}

// merge adds entry e's list values to m's lists.
func (l *entryLists) merge(m *Memory, e Entry) {
	m.WhenToUse = unionInto(m.WhenToUse, l.when, false, e.WhenToUse...)
	m.Tags = unionInto(m.Tags, l.tags, true, e.Tags...)
	m.RelatedMemories = unionInto(m.RelatedMemories, l.related, false, e.RelatedMemories...)
	m.Supersedes = unionInto(m.Supersedes, l.supersedes, false, e.Supersedes...)
	m.Conflicts = unionInto(m.Conflicts, l.conflicts, false, e.Conflicts...)
	m.Discoverers = unionInto(m.Discoverers, l.discoverers, true, e.DiscoveredBy)
}

// unionInto appends to dst each of vals not seen yet, marking it seen;
// with fold, values are compared lower-cased.
func unionInto(dst []string, seen map[string]bool, fold bool, vals ...string) []string {
	for _, v := range vals {
		k := v
		if fold {
			k = strings.ToLower(v)
		}
		if !seen[k] {
			seen[k] = true
			dst = append(dst, v)
		}
	}
	return dst
}

// mergeValues folds entry e's single values into m: the highest
// importance, the latest discovery, the last non-empty by/in/source, the
// first entry's time as firstAt; an entry that restates (merged) counts as
// a confirmation and does not change what the memory says happened.
func mergeValues(m *Memory, e Entry) {
	m.Negative = m.Negative || e.Negative
	switch {
	case e.Merged && len(e.Supersedes) == 0:
		m.Confirmations++ // a restatement; an entry that only links (Store.Supersede) is not one
	case e.Merged:
		m.links++
	default:
		if !e.OccurredAt.IsZero() {
			m.OccurredAt = e.OccurredAt
		}
		if e.Provenance != "" {
			m.Provenance = e.Provenance
		}
	}
	if m.firstAt.IsZero() {
		m.firstAt = e.DiscoveredAt
	}
	m.Importance = max(m.Importance, e.Importance)
	if !e.DiscoveredAt.IsZero() && !e.DiscoveredAt.Before(m.DiscoveredAt) {
		m.DiscoveredAt = e.DiscoveredAt
	}
	m.DiscoveredBy = cmp.Or(e.DiscoveredBy, m.DiscoveredBy)
	m.DiscoveredIn = cmp.Or(e.DiscoveredIn, m.DiscoveredIn)
	m.Source = cmp.Or(e.Source, m.Source)
	if e.Author != AuthorExtraction {
		m.Author = AuthorUser // the user wrote (or edited) an entry: the memory is theirs
	}
}

// prepareMerged compiles a merged memory's patterns (at most MaxPatterns)
// and derives its search fields and the time it is valid from: when it
// happened, else its first entry's discovery, else its latest.
func prepareMerged(m *Memory) error {
	if len(m.WhenToUse) > MaxPatterns {
		m.WhenToUse = m.WhenToUse[:MaxPatterns]
	}
	for _, w := range m.WhenToUse {
		p, err := compilePattern(w)
		if err != nil {
			return err
		}
		m.patterns = append(m.patterns, p)
	}
	m.kwText = m.keywordText()
	m.tagSet = normTags(m.Tags)
	m.ValidFrom = firstTime(m.OccurredAt, m.firstAt, m.DiscoveredAt)
	return nil
}

// firstTime returns the first of ts that is not zero (IsZero), or the zero
// time.
func firstTime(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// List returns the valid memories, by slug, superseded and decayed ones
// included, with their derived fields (supersession, feedback, strength).
func (s *Store) List(ctx context.Context) ([]Memory, error) {
	if err := s.maybeRefresh(ctx); err != nil {
		return nil, err
	}
	return s.view(), nil
}

// Problems returns the invalid files of the last refresh, by file and line.
func (s *Store) Problems() []Problem {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Problem
	for _, st := range s.files {
		if st.problem != nil {
			out = append(out, Problem{File: st.problem.File, Line: st.problem.Line, Msg: st.problem.Msg})
		}
	}
	sortProblems(out)
	return out
}

// Get returns one memory's metadata. name is its slug, or its file name.
func (s *Store) Get(ctx context.Context, name string) (Memory, error) {
	slug := strings.TrimSuffix(name, ".md")
	if !validName(slug) {
		return Memory{}, fmt.Errorf("%w: %q is not a memory name", ErrInvalid, clean.Clip(name, 80))
	}
	if err := s.maybeRefresh(ctx); err != nil {
		return Memory{}, err
	}
	s.mu.RLock()
	st := s.files[slug]
	s.mu.RUnlock()
	if st == nil {
		return Memory{}, fmt.Errorf("%w: no memory %q in %s", ErrNotFound, slug, s.dir)
	}
	if st.mem == nil {
		return Memory{}, fmt.Errorf("%w: %s", ErrInvalid, st.problem.Error())
	}
	for _, m := range s.view() {
		if m.Slug == slug {
			return m, nil
		}
	}
	return *st.mem, nil
}

// Entries reads a memory's file and returns its entries with their bodies,
// oldest first.
func (s *Store) Entries(ctx context.Context, name string) ([]Entry, error) {
	m, err := s.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	data, _, err := files.Read(m.Path, s.o.MaxFileBytes)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			s.invalidate()
			return nil, fmt.Errorf("%w: %s was removed", ErrNotFound, m.Slug)
		}
		if errors.Is(err, ErrNotRegular) || errors.Is(err, ErrTooLarge) {
			s.invalidate()
			return nil, err
		}
		return nil, fmt.Errorf("memory: read %s: %s", m.Slug, files.Pathless(err))
	}
	es, err := ParseFile(data)
	if err != nil {
		s.invalidate()
		var pe *ParseError
		if errors.As(err, &pe) {
			pe.File = m.Slug + ".md"
		}
		return nil, err
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:16]) != m.Hash {
		s.invalidate() // changed since the last refresh: see it next time
	}
	return es, nil
}

// Raw returns a memory file's bytes as stored.
func (s *Store) Raw(ctx context.Context, name string) ([]byte, error) {
	slug := strings.TrimSuffix(name, ".md")
	if !validName(slug) {
		return nil, fmt.Errorf("%w: %q is not a memory name", ErrInvalid, clean.Clip(name, 80))
	}
	if err := s.maybeRefresh(ctx); err != nil {
		return nil, err
	}
	s.mu.RLock()
	st := s.files[slug]
	s.mu.RUnlock()
	if st == nil {
		return nil, fmt.Errorf("%w: no memory %q in %s", ErrNotFound, slug, s.dir)
	}
	data, _, err := files.Read(filepath.Join(s.abs, slug+".md"), s.o.MaxFileBytes)
	if errors.Is(err, os.ErrNotExist) {
		s.invalidate()
		return nil, fmt.Errorf("%w: %s was removed", ErrNotFound, slug)
	}
	if errors.Is(err, ErrNotRegular) || errors.Is(err, ErrTooLarge) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("memory: read %s: %s", slug, files.Pathless(err))
	}
	return data, nil
}

// invalidate makes the next read check the directory again.
func (s *Store) invalidate() {
	s.mu.Lock()
	s.lastRefresh = time.Time{}
	s.mu.Unlock()
}

// reconcile brings the index in line with the files: removed and invalid
// memories leave it, new and changed ones are (re)indexed, in at most three
// atomic batches (contents, new patterns, stale records). Callers hold
// refreshMu.
func (s *Store) reconcile(ctx context.Context, removed []string) (int, error) {
	w, swept := s.indexWork(removed)
	if swept && len(w.todo) == 0 && len(w.gone) == 0 {
		return 0, nil
	}
	have, err := s.heldRecords(ctx)
	if err != nil {
		return 0, err
	}
	b, err := s.indexBatches(w, have)
	if err != nil {
		return 0, err
	}
	if err := s.applyBatches(ctx, w, &b); err != nil {
		return 0, err
	}
	s.markIndexed(w, b.counts)
	return len(w.todo), nil
}

// indexWork is what reconcile has to do: the memories to (re)index, by
// slug, the slugs whose records must go (removed files and files that
// became invalid), and the slugs of the valid memories.
type indexWork struct {
	todo        []*fileState
	gone, valid map[string]bool
}

// indexWork reads what the last scan left to index; swept tells whether
// a reconcile has already swept the index once (until then, records of
// memories removed while no store was open may remain).
func (s *Store) indexWork(removed []string) (w indexWork, swept bool) {
	w.gone, w.valid = map[string]bool{}, map[string]bool{}
	s.mu.RLock()
	swept = s.swept
	for slug, st := range s.files {
		if st.mem == nil {
			if st.indexed != "-" {
				w.gone[slug] = true
			}
			continue
		}
		w.valid[slug] = true
		if st.indexed != st.hash {
			w.todo = append(w.todo, st)
		}
	}
	s.mu.RUnlock()
	for _, slug := range removed {
		if !w.valid[slug] {
			w.gone[slug] = true
		}
	}
	sort.Slice(w.todo, func(i, j int) bool { return w.todo[i].mem.Slug < w.todo[j].mem.Slug })
	return w, swept
}

// heldMemory is what the index holds of one memory: its pattern records,
// with the hash of their set, and its content records.
type heldMemory struct {
	patternHash string
	patternIDs  []string
	contentIDs  []string
}

// heldRecords reads what the index holds of this directory's memories,
// per slug.
func (s *Store) heldRecords(ctx context.Context) (map[string]*heldMemory, error) {
	recs, err := s.ix.Records(ctx, index.Filter{DocTypes: []string{index.DocMemory, docPattern}, Attrs: map[string]string{AttrDir: s.abs}})
	if err != nil {
		return nil, err
	}
	have := map[string]*heldMemory{}
	for i := range recs {
		r := &recs[i]
		slug := r.Attrs[attrSlug]
		h := have[slug]
		if h == nil {
			h = &heldMemory{}
			have[slug] = h
		}
		if r.Attrs[attrKind] == recordPattern {
			h.patternHash = r.ContentHash
			h.patternIDs = append(h.patternIDs, r.ID)
		} else {
			h.contentIDs = append(h.contentIDs, r.ID)
		}
	}
	return have, nil
}

// indexBatches are reconcile's three batches: the contents to add, the
// pattern records to put and the record IDs to delete; counts[i] is the
// number of records of todo[i], patterns first (contents are added to it
// once indexed).
type indexBatches struct {
	docs   []index.Document
	put    []index.Record
	del    []string
	counts []int
}

// indexBatches builds the batches: the records of gone and invalid
// memories are deleted, and a memory's patterns are rewritten only when
// their set changed.
func (s *Store) indexBatches(w indexWork, have map[string]*heldMemory) (indexBatches, error) {
	var b indexBatches
	for slug, h := range have {
		if w.gone[slug] || !w.valid[slug] {
			b.del = append(b.del, h.contentIDs...)
			b.del = append(b.del, h.patternIDs...)
		}
	}
	b.counts = make([]int, len(w.todo))
	for i, st := range w.todo {
		doc, pats, hash, err := s.memoryRecords(st.mem)
		if err != nil {
			return b, fmt.Errorf("memory: index %s: %w", st.mem.Slug, err)
		}
		b.docs = append(b.docs, doc)
		b.counts[i] = len(pats)
		if h := have[st.mem.Slug]; h == nil || h.patternHash != hash || len(h.patternIDs) != len(pats) {
			if h != nil {
				b.del = append(b.del, h.patternIDs...)
			}
			b.put = append(b.put, pats...)
		}
	}
	return b, nil
}

// applyBatches writes the batches to the index (contents, patterns, then
// deletions) and counts each memory's content records.
func (s *Store) applyBatches(ctx context.Context, w indexWork, b *indexBatches) error {
	if len(b.docs) > 0 {
		res, err := s.ix.AddMany(ctx, b.docs)
		if err != nil {
			return err
		}
		for i, r := range res {
			if r.Err != nil {
				return fmt.Errorf("memory: index %s: %w", w.todo[i].mem.Slug, r.Err)
			}
			b.counts[i] += r.Chunks
		}
	}
	if len(b.put) > 0 {
		if err := s.ix.Put(ctx, b.put); err != nil {
			return err
		}
	}
	if len(b.del) > 0 {
		return s.ix.Delete(ctx, b.del)
	}
	return nil
}

// markIndexed records what reconcile indexed: each memory's hash and
// record count, unless its file changed meanwhile, and "-" for a gone
// memory whose records left the index.
func (s *Store) markIndexed(w indexWork, counts []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.swept = true
	for i, st := range w.todo {
		if cur := s.files[st.mem.Slug]; cur != nil && cur.hash == st.hash {
			cur.indexed, cur.records = st.hash, counts[i]
		}
	}
	for slug := range w.gone {
		if st := s.files[slug]; st != nil && st.mem == nil {
			st.indexed = "-"
		}
	}
}

const patternFragment = "#whenToUse"

func dedupe(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// memoryRecords builds what the index holds of a memory: its bodies as one
// Markdown document, and one record per natural-language pattern with the
// hash of the set.
func (s *Store) memoryRecords(m *Memory) (index.Document, []index.Record, string, error) {
	data, _, err := files.Read(m.Path, s.o.MaxFileBytes)
	if err != nil {
		return index.Document{}, nil, "", err
	}
	es, err := ParseFile(data)
	if err != nil {
		return index.Document{}, nil, "", err
	}
	var bodies []string
	for _, e := range es {
		if b := strings.TrimSpace(e.Body); b != "" {
			bodies = append(bodies, b)
		}
	}
	content := strings.Join(bodies, "\n\n")
	if content == "" {
		content = m.Title
	}
	doc := index.Document{
		SourceURL: m.URL, Title: m.Title, Content: content, Format: chunk.Markdown, DocType: index.DocMemory,
		Attrs: map[string]string{AttrDir: s.abs, attrSlug: m.Slug, attrKind: recordContent, reserved.AttrMemoryAuthor: m.Author},
	}
	if len(m.Conflicts) > 0 {
		// Shown with the memory's search results: what it may contradict,
		// as flagged in its file.
		doc.Attrs[reserved.AttrMemoryConflicts] = strings.Join(m.Conflicts, ",")
	}
	var parts []*pattern.Phrase
	seen := map[string]bool{}
	for _, p := range m.patterns {
		for _, np := range p.Phrases() {
			if np.Text != "" && !seen[np.Text] {
				seen[np.Text] = true
				parts = append(parts, np)
			}
		}
	}
	src := m.URL + patternFragment
	h := sha256.New()
	for _, np := range parts {
		h.Write([]byte(np.Raw))
		h.Write([]byte{0})
		h.Write([]byte(np.Text))
		h.Write([]byte{0})
	}
	hash := hex.EncodeToString(h.Sum(nil)[:16])
	recs := make([]index.Record, len(parts))
	counter := budget.CounterForModel("")
	for i, np := range parts {
		recs[i] = index.Record{
			ID:          engine.ChunkID(src, hash, i),
			SourceURL:   src,
			Content:     np.Text,
			DocType:     docPattern,
			Position:    i,
			End:         len(np.Text),
			Tokens:      counter.Count(np.Text),
			ContentHash: hash,
			Attrs:       map[string]string{AttrDir: s.abs, attrSlug: m.Slug, attrKind: recordPattern, attrPattern: np.Raw},
		}
	}
	return doc, recs, hash, nil
}

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
