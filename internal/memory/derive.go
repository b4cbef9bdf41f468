package memory

import (
	"math"
	"sort"
	"time"
)

// What the store derives from all memories together, on every read, rather
// than writing it into files: which memory supersedes which (a link is
// written once, in the newer memory's frontmatter, so no older file is ever
// rewritten), the feedback counts (the .feedback.json file of the
// directory) and the strength left after decay.

// Decay of a memory that is neither restated, updated nor cited: its
// strength halves every DecayHalfLife(importance), counted from the last
// time it was reinforced (the newest entry's discoveredAt, merged
// restatements included, or its last citation). A memory whose strength is
// below DecayedBelow is listed as decayed (ragmem memory list --decayed).
// Critical memories do not decay.
const DecayedBelow = 0.25

// DecayHalfLife is the half-life of a memory of importance imp: low 30
// days, medium 90 days, high 365 days; 0 (no decay) for critical.
func DecayHalfLife(imp Importance) time.Duration {
	switch imp {
	case Low:
		return 30 * oneDay
	case High:
		return 365 * oneDay
	case Critical:
		return 0
	}
	return 90 * oneDay
}

const oneDay = 24 * time.Hour

// strength is 0.5^(age/half-life), 1 for an age ≤ 0 or no half-life.
func strength(imp Importance, reinforced, now time.Time) float64 {
	hl := DecayHalfLife(imp)
	if hl <= 0 || reinforced.IsZero() {
		return 1
	}
	age := now.Sub(reinforced)
	if age <= 0 {
		return 1
	}
	return round3(math.Pow(0.5, float64(age)/float64(hl)))
}

// newer reports whether a was stored after b: by the time its first entry
// was stored, then ValidFrom, then slug. It is a total order, so supersedes
// links, which only count from a newer memory to an older one, never form
// a cycle.
func newer(a, b *Memory) bool {
	if !a.firstAt.Equal(b.firstAt) {
		return a.firstAt.After(b.firstAt)
	}
	if !a.ValidFrom.Equal(b.ValidFrom) {
		return a.ValidFrom.After(b.ValidFrom)
	}
	return a.Slug > b.Slug
}

// derive sets the derived fields of ms (copies, changed in place): the
// supersession of each memory, its feedback and its strength at now.
//
// A memory X that lists Y in supersedes, and is newer than Y, supersedes
// Y: Y.SupersededBy is X (the oldest such X when several do) and Y.ValidTo
// is X.ValidFrom (not before Y.ValidFrom). Links to memories that do not
// exist, or to newer ones, have no effect.
func derive(ms []Memory, fb map[string]Feedback, now time.Time) {
	idx := make(map[string]int, len(ms))
	for i := range ms {
		idx[ms[i].Slug] = i
		ms[i].SupersededBy, ms[i].ValidTo = "", time.Time{}
	}
	for i := range ms {
		x := &ms[i]
		for _, ys := range x.Supersedes {
			j, ok := idx[ys]
			if !ok || j == i {
				continue
			}
			y := &ms[j]
			if !newer(x, y) {
				continue
			}
			if y.SupersededBy != "" && !newer(&ms[idx[y.SupersededBy]], x) {
				continue // an older memory superseded it first
			}
			y.SupersededBy = x.Slug
			y.ValidTo = x.ValidFrom
			if y.ValidTo.Before(y.ValidFrom) {
				y.ValidTo = y.ValidFrom
			}
		}
	}
	// A flagged conflict is resolved once either memory supersedes the other.
	for i := range ms {
		m := &ms[i]
		if len(m.Conflicts) == 0 {
			continue
		}
		var open []string
		for _, c := range m.Conflicts {
			j, ok := idx[c]
			if ok && (ms[j].SupersededBy == m.Slug || m.SupersededBy == c) {
				continue
			}
			open = append(open, c)
		}
		m.Conflicts = open
	}
	for i := range ms {
		m := &ms[i]
		m.Feedback = fb[m.Slug]
		reinforced := m.DiscoveredAt
		if m.Feedback.LastCited.After(reinforced) {
			reinforced = m.Feedback.LastCited
		}
		m.Strength = strength(m.Importance, reinforced, now)
		m.Decayed = m.Strength < DecayedBelow
	}
}

// Current follows a memory's supersession chain in ms to its end: the memory
// that holds now. ms must come from the same List.
func Current(ms []Memory, slug string) (Memory, bool) {
	idx := make(map[string]int, len(ms))
	for i := range ms {
		idx[ms[i].Slug] = i
	}
	i, ok := idx[slug]
	if !ok {
		return Memory{}, false
	}
	for n := 0; n <= len(ms) && ms[i].SupersededBy != ""; n++ {
		j, ok := idx[ms[i].SupersededBy]
		if !ok {
			break
		}
		i = j
	}
	return ms[i], true
}

// Superseded reports whether a newer memory replaced m.
func (m Memory) Superseded() bool { return m.SupersededBy != "" }

// ValidAt reports whether m held at t: it had begun (ValidFrom not after
// t) and no newer memory had yet superseded it (ValidTo zero or after t).
func (m Memory) ValidAt(t time.Time) bool {
	return !m.ValidFrom.After(t) && (m.ValidTo.IsZero() || m.ValidTo.After(t))
}

// shown reports whether a search or match shows m. With a zero asOf: the
// current memories, and the superseded ones too with withOld. At asOf:
// the memories that held then (ValidAt), whatever superseded them since,
// and with withOld also those superseded before it; never one that began
// after it.
func shown(m *Memory, asOf time.Time, withOld bool) bool {
	if asOf.IsZero() {
		return withOld || !m.Superseded()
	}
	if m.ValidFrom.After(asOf) {
		return false
	}
	return withOld || m.ValidAt(asOf)
}

// view returns copies of the valid memories, by slug, with their derived
// fields. The caller has refreshed.
func (s *Store) view() []Memory {
	s.mu.RLock()
	out := make([]Memory, 0, len(s.files))
	for _, st := range s.files {
		if st.mem != nil {
			out = append(out, *st.mem)
		}
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	derive(out, s.feedback.snapshot(), s.o.Now())
	return out
}
