// Package prefs keeps the user's profile: short preference statements
// (expertise, style, domain, custom) stored in the index as documents of type
// "preference" under the source URL "preference://user", detected in chat
// messages (DetectPreferenceIntent, Property 10) and formatted for the
// <user_profile> section of the knowledge context, which is included whatever
// the query (Property 11).
package prefs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ragmem/ragmem/budget"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/clean"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/internal/reserved"
)

// SourceURL is the source every preference is stored under.
const SourceURL = "preference://user"

// MaxContentLen bounds a preference statement, in bytes. It is above the
// 300-rune cap of detected intents even for 4-byte runes, so every detected
// preference can be stored.
const MaxContentLen = 2000

// Errors.
var (
	ErrEmpty   = errors.New("prefs: preference is empty")
	ErrTooLong = fmt.Errorf("prefs: preference is longer than %d bytes", MaxContentLen)
)

// Preference is one stored statement about the user.
type Preference struct {
	ID        string    `json:"id"`
	Type      Type      `json:"type"`
	Content   string    `json:"content"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Store manages preferences in an index. It is safe for concurrent use. It
// caches the last list it read or wrote, so that the profile can still be
// formatted when the index cannot be read (see Cached).
type Store struct {
	ix  *engine.Index
	now func() time.Time

	mu     sync.Mutex // serialises read-modify-write operations
	cacheM sync.RWMutex
	cache  []Preference
	cached bool
}

// NewStore returns a Store over ix.
func NewStore(ix *engine.Index) *Store { return &Store{ix: ix, now: time.Now} }

func typeTitle(t Type) string {
	s := string(t)
	if s == "" {
		return "Custom"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "pref_" + hex.EncodeToString(b[:])
}

// Add stores a preference. Adding a statement equal (ignoring case and
// spacing) to an existing one of the same type returns the existing one.
func (s *Store) Add(ctx context.Context, t Type, content string) (Preference, error) {
	if _, err := ParseType(string(t)); err != nil {
		return Preference{}, err
	}
	content = clean.Line(content)
	if content == "" {
		return Preference{}, ErrEmpty
	}
	if len(content) > MaxContentLen {
		return Preference{}, ErrTooLong
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	all, err := s.List(ctx)
	if err != nil {
		return Preference{}, err
	}
	for _, p := range all {
		if p.Type == t && strings.EqualFold(p.Content, content) {
			return p, nil
		}
	}
	now := s.now().UTC()
	p := Preference{ID: newID(), Type: t, Content: content, CreatedAt: now, UpdatedAt: now}
	if err := s.ix.Put(ctx, []index.Record{toRecord(p)}); err != nil {
		return Preference{}, err
	}
	s.setCache(append(all, p))
	return p, nil
}

func toRecord(p Preference) index.Record {
	return index.Record{
		ID:          p.ID,
		SourceURL:   SourceURL,
		Title:       "User Preference: " + typeTitle(p.Type),
		HeadingPath: []string{"preferences", string(p.Type)},
		Content:     p.Content,
		DocType:     index.DocPreference,
		CreatedAt:   p.CreatedAt,
		Tokens:      budget.CounterForModel("").Count(p.Content),
		End:         len(p.Content),
		Attrs: map[string]string{
			reserved.AttrPreference: string(p.Type),
			"updatedAt":             p.UpdatedAt.Format(time.RFC3339Nano),
		},
	}
}

func fromRecord(r index.Record) Preference {
	p := Preference{ID: r.ID, Type: Type(r.Attrs[reserved.AttrPreference]), Content: r.Content, CreatedAt: r.CreatedAt, UpdatedAt: r.CreatedAt}
	if u, err := time.Parse(time.RFC3339Nano, r.Attrs["updatedAt"]); err == nil {
		p.UpdatedAt = u
	}
	if _, err := ParseType(string(p.Type)); err != nil {
		p.Type = Custom
	}
	return p
}

// List returns every preference, oldest first.
func (s *Store) List(ctx context.Context) ([]Preference, error) {
	recs, err := s.ix.Records(ctx, index.Filter{DocTypes: []string{index.DocPreference}})
	if err != nil {
		return nil, err
	}
	out := make([]Preference, 0, len(recs))
	for _, r := range recs {
		out = append(out, fromRecord(r))
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	s.setCache(out)
	return out, nil
}

// Remove deletes a preference and reports whether it existed.
func (s *Store) Remove(ctx context.Context, id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all, err := s.List(ctx)
	if err != nil {
		return false, err
	}
	var kept []Preference
	found := false
	for _, p := range all {
		if p.ID == id {
			found = true
		} else {
			kept = append(kept, p)
		}
	}
	if !found {
		return false, nil
	}
	if err := s.ix.Delete(ctx, []string{id}); err != nil {
		return false, err
	}
	s.setCache(kept)
	return true, nil
}

// Clear deletes every preference and returns how many there were.
func (s *Store) Clear(ctx context.Context) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.ix.Remove(ctx, SourceURL)
	if err != nil {
		return 0, err
	}
	s.setCache(nil)
	return n, nil
}

func (s *Store) setCache(ps []Preference) {
	c := append([]Preference(nil), ps...)
	s.cacheM.Lock()
	s.cache, s.cached = c, true
	s.cacheM.Unlock()
}

// Cached returns the preferences last read or written, and whether there is
// such a list. Agents use it when the index cannot be read.
func (s *Store) Cached() ([]Preference, bool) {
	s.cacheM.RLock()
	defer s.cacheM.RUnlock()
	return append([]Preference(nil), s.cache...), s.cached
}

// typeOrder is the order of the profile's lines: who the user is first.
var typeOrder = map[Type]int{Expertise: 0, Domain: 1, Style: 2, Custom: 3}

// profileRank is where a preference of type t goes in the profile: a type
// Format does not know (an empty one, titled "Custom") goes with custom.
func profileRank(t Type) int {
	if r, ok := typeOrder[t]; ok {
		return r
	}
	return typeOrder[Custom]
}

// Format renders preferences as profile text, one statement per line, each
// ending with sentence punctuation, ordered expertise, domain, style, custom
// (other types with custom; in the given order within a type: List's is
// oldest first), truncated at a sentence boundary to budgetTokens. It
// returns "" when there are none or nothing fits.
func Format(ps []Preference, budgetTokens int, c budget.Counter) string {
	if len(ps) == 0 || budgetTokens <= 0 {
		return ""
	}
	sorted := append([]Preference(nil), ps...)
	sort.SliceStable(sorted, func(i, j int) bool { return profileRank(sorted[i].Type) < profileRank(sorted[j].Type) })
	var b strings.Builder
	for _, p := range sorted {
		line := clean.Line(p.Content)
		if line == "" {
			continue
		}
		if r, _ := utf8.DecodeLastRuneInString(line); !strings.ContainsRune(".!?。！？…", r) {
			line += "."
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(typeTitle(p.Type))
		b.WriteString(": ")
		b.WriteString(line)
	}
	out, _ := budget.TruncateAtSentence(b.String(), budgetTokens, c)
	return out
}

// FormatForContext lists the preferences and formats them (see Format).
// When the index cannot be read it falls back to the cached list, if any,
// and returns the read error alongside the text.
func (s *Store) FormatForContext(ctx context.Context, budgetTokens int, c budget.Counter) (string, error) {
	ps, err := s.List(ctx)
	if err != nil {
		cached, ok := s.Cached()
		if !ok {
			return "", err
		}
		return Format(cached, budgetTokens, c), err
	}
	return Format(ps, budgetTokens, c), nil
}
