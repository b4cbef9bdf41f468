package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ragmem/ragmem/internal/clean"
	"github.com/ragmem/ragmem/internal/memory/internal/files"
)

// Feedback: which memories were injected into a model's context and which
// the model's answers cited. Every memory in a context block carries its id,
// [memory:slug]; an answer that relies on it cites the id. The counts live
// in <dir>/.feedback.json (replaced atomically under the directory's lock),
// not in the memory files, which stay append-only and are not rewritten on
// every injection. They feed the ranking (rank.go) and the decay
// (derive.go): a memory injected many times and never cited sinks.

// Feedback counts a memory's injections and citations.
type Feedback struct {
	Injected     int       `json:"injected"`
	Cited        int       `json:"cited"`
	LastInjected time.Time `json:"lastInjected,omitzero"`
	LastCited    time.Time `json:"lastCited,omitzero"`
}

// CiteRate is (cited+1)/(injected+2): 0.5 for a memory never injected,
// falling towards 0 for one injected often and never cited.
func (f Feedback) CiteRate() float64 {
	return float64(f.Cited+1) / float64(f.Injected+2)
}

// observedRate is cited/injected, nil for a memory never used (neither
// injected nor cited). A memory cited more often than it was injected
// (cited without being injected) has 1.
func (f Feedback) observedRate() *float64 {
	n := max(f.Injected, f.Cited)
	if n <= 0 {
		return nil
	}
	r := round3(float64(f.Cited) / float64(n))
	return &r
}

// feedbackName is the file of the counts in the memory directory; its dot
// keeps it out of the memories.
const feedbackName = ".feedback.json"

// maxFeedbackBytes bounds the file.
const maxFeedbackBytes = 8 << 20

// feedbackFile caches the counts, reloading them when the file changes
// (other processes record too). It is safe for concurrent use.
type feedbackFile struct {
	path   string
	logger *slog.Logger

	mu    sync.Mutex
	size  int64
	mtime time.Time
	data  map[string]Feedback
}

type feedbackDoc struct {
	Version  int                 `json:"version"`
	Memories map[string]Feedback `json:"memories"`
}

// load reads the file; a missing file is empty.
func (f *feedbackFile) load() (map[string]Feedback, os.FileInfo, error) {
	data, fi, err := files.Read(f.path, maxFeedbackBytes)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]Feedback{}, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var doc feedbackDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fi, fmt.Errorf("%w: %s is not valid: %v", ErrInvalid, feedbackName, err)
	}
	if doc.Memories == nil {
		doc.Memories = map[string]Feedback{}
	}
	return doc.Memories, fi, nil
}

// snapshot returns the counts (a copy). A file that cannot be read is
// logged and counts as empty; it is never overwritten by a snapshot.
func (f *feedbackFile) snapshot() map[string]Feedback {
	f.mu.Lock()
	defer f.mu.Unlock()
	fi, err := os.Lstat(f.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		f.data, f.size, f.mtime = nil, 0, time.Time{}
	case err == nil && (f.data == nil || fi.Size() != f.size || !fi.ModTime().Equal(f.mtime)):
		data, rfi, err := f.load()
		if err != nil {
			f.logger.Warn("memory: ignoring the feedback counts", "err", err)
			data = map[string]Feedback{}
		}
		if rfi != nil {
			fi = rfi
		}
		f.data, f.size, f.mtime = data, fi.Size(), fi.ModTime()
	}
	out := make(map[string]Feedback, len(f.data))
	for k, v := range f.data {
		out[k] = v
	}
	return out
}

// update changes the counts of the file under the directory lock and
// writes it atomically. Slugs that are no longer memories are dropped.
func (s *Store) updateFeedback(ctx context.Context, fn func(map[string]Feedback)) error {
	if err := os.MkdirAll(s.abs, 0o700); err != nil {
		return fmt.Errorf("memory: create the memory directory: %s", files.Pathless(err))
	}
	valid := map[string]bool{}
	s.mu.RLock()
	for slug, st := range s.files {
		if st.mem != nil {
			valid[slug] = true
		}
	}
	s.mu.RUnlock()
	f := s.feedback
	return s.lock.with(ctx, func() error {
		cur, _, err := f.load()
		if err != nil && !errors.Is(err, ErrInvalid) {
			return err
		}
		if cur == nil {
			cur = map[string]Feedback{} // an invalid file is replaced (its counts are lost, its memories are not)
		}
		fn(cur)
		for k := range cur {
			if !valid[k] {
				delete(cur, k)
			}
		}
		data, err := json.MarshalIndent(feedbackDoc{Version: 1, Memories: cur}, "", " ")
		if err != nil {
			return err
		}
		if err := files.Write(s.fs, f.path, append(data, '\n'), 0o600); err != nil {
			return err
		}
		f.mu.Lock()
		f.data = nil // reload on the next snapshot
		f.mu.Unlock()
		return nil
	})
}

// RecordInjected counts one injection of each memory (Load calls it for
// the memories it delivers). Unknown slugs are ignored.
func (s *Store) RecordInjected(ctx context.Context, slugs []string) error {
	if len(slugs) == 0 {
		return nil
	}
	now := s.o.Now().UTC()
	return s.updateFeedback(ctx, func(m map[string]Feedback) {
		for _, sl := range dedupe(slugs) {
			f := m[sl]
			f.Injected++
			f.LastInjected = now
			m[sl] = f
		}
	})
}

// CiteRequest reports an answer that may cite injected memories.
type CiteRequest struct {
	// Answer is the model's answer; its [memory:slug] ids are citations.
	Answer string `json:"answer,omitempty"`
	// Cited names cited memories directly (slugs), for callers that know.
	Cited []string `json:"cited,omitempty"`
	// Injected, when given, limits the citations to these memories (what
	// the context block held); other ids are reported as Unknown.
	Injected []string `json:"injected,omitempty"`
}

// CiteResult says what was recorded.
type CiteResult struct {
	Cited   []string `json:"cited"`
	Unknown []string `json:"unknown"`
}

// maxAnswerBytes bounds the answer searched for citations.
const maxAnswerBytes = 1 << 20

var citeRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[memory:([^\[\]\s]{1,250})\]`) })

// ParseCitations returns the memory ids an answer cites, "[memory:slug]",
// each once, in order. It reads at most 1 MiB and never panics.
func ParseCitations(answer string) []string {
	answer = clean.Clip(answer, maxAnswerBytes)
	var out []string
	for _, m := range citeRE().FindAllStringSubmatch(answer, 1000) {
		slug := strings.TrimSuffix(m[1], ".md")
		if validName(slug) {
			out = append(out, slug)
		}
	}
	return dedupe(out)
}

// CiteID is the id a context block gives a memory and an answer cites.
func CiteID(slug string) string { return "[memory:" + slug + "]" }

// Cite records the memories an answer cites: each known memory (and, with
// Injected, only those injected) counts one citation, which also reinforces
// it against decay.
func (s *Store) Cite(ctx context.Context, req CiteRequest) (CiteResult, error) {
	if len(req.Answer) > maxAnswerBytes {
		return CiteResult{}, fmt.Errorf("%w: the answer is longer than %d bytes", ErrInvalid, maxAnswerBytes)
	}
	if err := s.maybeRefresh(ctx); err != nil {
		return CiteResult{}, err
	}
	ids := ParseCitations(req.Answer)
	for _, c := range req.Cited {
		ids = append(ids, strings.TrimSuffix(strings.TrimSpace(c), ".md"))
	}
	ids = dedupe(ids)
	allowed := map[string]bool{}
	for _, sl := range req.Injected {
		allowed[strings.TrimSuffix(sl, ".md")] = true
	}
	res := CiteResult{Cited: []string{}, Unknown: []string{}}
	s.mu.RLock()
	for _, id := range ids {
		st := s.files[id]
		if st == nil || st.mem == nil || (len(allowed) > 0 && !allowed[id]) {
			res.Unknown = append(res.Unknown, clean.Clip(id, 80))
			continue
		}
		res.Cited = append(res.Cited, id)
	}
	s.mu.RUnlock()
	if len(res.Cited) == 0 {
		return res, nil
	}
	now := s.o.Now().UTC()
	err := s.updateFeedback(ctx, func(m map[string]Feedback) {
		for _, sl := range res.Cited {
			f := m[sl]
			f.Cited++
			f.LastCited = now
			m[sl] = f
		}
	})
	return res, err
}

// StatsReport is the feedback loop and the state of every memory.
type StatsReport struct {
	Memories   int `json:"memories"`
	Superseded int `json:"superseded"`
	Decayed    int `json:"decayed"`
	Negative   int `json:"negative"`
	Injections int `json:"injections"`
	Citations  int `json:"citations"`
	// Items lists every memory, the most cited first, then the most
	// injected, then by slug.
	Items []StatsItem `json:"items"`
}

// StatsItem is one memory's line of the report.
type StatsItem struct {
	Slug       string   `json:"slug"`
	Title      string   `json:"title"`
	Importance string   `json:"importance"`
	Feedback   Feedback `json:"feedback"`
	// CiteRate is the share of the memory's injections that were cited,
	// absent for a memory never used: it has no rate yet (the ranking
	// smooths it: Feedback.CiteRate).
	CiteRate      *float64  `json:"citeRate,omitempty"`
	Strength      float64   `json:"strength"`
	Decayed       bool      `json:"decayed,omitempty"`
	Negative      bool      `json:"negative,omitempty"`
	Confirmations int       `json:"confirmations,omitempty"`
	SupersededBy  string    `json:"supersededBy,omitempty"`
	ValidFrom     time.Time `json:"validFrom,omitzero"`
	ValidTo       time.Time `json:"validTo,omitzero"`
}

// Stats reports the feedback loop: injections, citations, cite rates,
// strength after decay and supersession of every memory.
func (s *Store) Stats(ctx context.Context) (StatsReport, error) {
	if err := s.maybeRefresh(ctx); err != nil {
		return StatsReport{}, err
	}
	ms := s.view()
	rep := StatsReport{Memories: len(ms), Items: make([]StatsItem, 0, len(ms))}
	for _, m := range ms {
		rep.Injections += m.Feedback.Injected
		rep.Citations += m.Feedback.Cited
		if m.Superseded() {
			rep.Superseded++
		}
		if m.Decayed {
			rep.Decayed++
		}
		if m.Negative {
			rep.Negative++
		}
		rep.Items = append(rep.Items, StatsItem{Slug: m.Slug, Title: m.Title, Importance: m.Importance.String(), Feedback: m.Feedback,
			CiteRate: m.Feedback.observedRate(), Strength: m.Strength, Decayed: m.Decayed, Negative: m.Negative,
			Confirmations: m.Confirmations, SupersededBy: m.SupersededBy, ValidFrom: m.ValidFrom, ValidTo: m.ValidTo})
	}
	sort.SliceStable(rep.Items, func(i, j int) bool {
		a, b := rep.Items[i], rep.Items[j]
		if a.Feedback.Cited != b.Feedback.Cited {
			return a.Feedback.Cited > b.Feedback.Cited
		}
		return a.Feedback.Injected > b.Feedback.Injected
	})
	return rep, nil
}

func feedbackPath(abs string) string { return filepath.Join(abs, feedbackName) }
