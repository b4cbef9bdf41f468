package search

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ragmem/ragmem/index"
)

// Conversation units.
//
// A conversation written as memories, one per turn, with the turn's session
// and place in it (index.AttrSession, AttrTurn), can be searched as turns
// (the default), as rounds (a user's turn with the replies to it) or as
// whole sessions (Options.Unit). Turns are ranked as usual, signals
// included; each unit then scores as its best-ranked turn (the turn that
// answers is what counts, not how long the rest of the unit is), ties going
// to the unit with more of its turns ranked, and a unit is one result: its
// record holds the unit's turns in order, one "Speaker: text" line each,
// and Result.Unit names every turn with its own score, so the evidence
// turns stay named. Turns without a session are units of their own.
//
// A round starts at each turn of the user (index.AttrRole "user"); in a
// session without roles, at each turn of the speaker who opened it.

// Units of conversation search (Options.Unit).
const (
	UnitTurn    = "turn"
	UnitRound   = "round"
	UnitSession = "session"
)

// ErrBadUnit is returned for an unknown Options.Unit.
var ErrBadUnit = fmt.Errorf("search: unknown unit")

// Unit describes a round or session result: its kind and session, and its
// turns in order.
type Unit struct {
	Kind    string       `json:"kind"`
	Session string       `json:"session"`
	Turns   []UnitMember `json:"turns"`
}

// UnitMember is one turn of a unit: its source, speaker and place, and its
// own score in the ranking (0 when it was not ranked).
type UnitMember struct {
	SourceURL string  `json:"sourceUrl"`
	Speaker   string  `json:"speaker,omitempty"`
	Turn      int     `json:"turn"`
	Score     float64 `json:"score,omitempty"`
}

// ParseUnit parses "turn", "round" or "session" ("" is turn).
func ParseUnit(s string) (string, error) {
	switch u := strings.ToLower(strings.TrimSpace(s)); u {
	case "", UnitTurn, "turns":
		return UnitTurn, nil
	case UnitRound, "rounds":
		return UnitRound, nil
	case UnitSession, "sessions":
		return UnitSession, nil
	}
	return "", fmt.Errorf("%w %q (want turn, round or session)", ErrBadUnit, s)
}

// recordLister is implemented by retrievers that list the records matching
// a filter, as *engine.Index does.
type recordLister interface {
	Records(ctx context.Context, f index.Filter) ([]index.Record, error)
}

// sessionTurn is one turn of a session: its chunks, in order.
type sessionTurn struct {
	source  string
	speaker string
	role    string
	turn    int
	chunks  []index.Record
}

// units groups ranked turn results into units of kind (UnitRound or
// UnitSession), best first, under f (the search's filter, which the
// session's turns are listed under). r must list records; a turn without a
// session or place is a unit of its own, as it was ranked.
func units(ctx context.Context, r Retriever, ranked []Result, kind string, f index.Filter) ([]Result, error) {
	lister, ok := r.(recordLister)
	if !ok {
		return nil, fmt.Errorf("%w: this store cannot list a session's turns", ErrBadUnit)
	}
	type group struct {
		key    string
		best   int // index in ranked of the best turn
		ranked int // turns of the unit ranked
		unit   *Unit
		text   string
	}
	sessions := map[string][]sessionTurn{} // by session, sorted by turn
	score := map[string]float64{}          // a ranked turn's (source's) best score
	var groups []*group
	byKey := map[string]*group{}
	for i, res := range ranked {
		src := res.Record.SourceURL
		if _, seen := score[src]; seen {
			continue
		}
		score[src] = res.Score
		sess := res.Record.Attrs[index.AttrSession]
		pos, err := strconv.Atoi(res.Record.Attrs[index.AttrTurn])
		if sess == "" || err != nil {
			g := &group{key: "turn\x00" + src, best: i, ranked: 1}
			groups = append(groups, g)
			continue
		}
		turns, ok := sessions[sess]
		if !ok {
			g := f
			g.Attrs = map[string]string{index.AttrSession: sess}
			g.SourceURL = ""
			recs, err := lister.Records(ctx, g)
			if err != nil {
				return nil, fmt.Errorf("search: listing session %q: %w", sess, err)
			}
			turns = sessionTurns(recs)
			sessions[sess] = turns
		}
		lo, hi := unitSpan(turns, pos, kind)
		key := sess + "\x00" + strconv.Itoa(lo)
		if g, ok := byKey[key]; ok {
			g.ranked++
			continue
		}
		g := &group{key: key, best: i, ranked: 1}
		if lo < hi {
			g.unit = &Unit{Kind: kind, Session: sess}
			var lines []string
			for _, t := range turns[lo:hi] {
				g.unit.Turns = append(g.unit.Turns, UnitMember{SourceURL: t.source, Speaker: t.speaker, Turn: t.turn})
				var text []string
				for _, c := range t.chunks {
					text = append(text, c.Content)
				}
				line := strings.Join(text, " ")
				if t.speaker != "" {
					line = t.speaker + ": " + line
				}
				lines = append(lines, line)
			}
			g.text = strings.Join(lines, "\n")
		}
		byKey[key] = g
		groups = append(groups, g)
	}
	out := make([]Result, 0, len(groups))
	for _, g := range groups {
		res := ranked[g.best]
		if g.unit != nil {
			for i, t := range g.unit.Turns {
				g.unit.Turns[i].Score = score[t.SourceURL]
			}
			rec := res.Record
			rec.ID = "unit:" + g.unit.Kind + ":" + rec.ID
			rec.Content = g.text
			rec.Position = 0
			rec.Vector = nil
			res.Record, res.Unit = rec, g.unit
		}
		out = append(out, res)
	}
	// Ranked by their best turns already; more ranked turns break a tie.
	slices.SortStableFunc(out, func(a, b Result) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(rankedTurns(b, score), rankedTurns(a, score))
	})
	return out, nil
}

// rankedTurns is how many of a result's turns were ranked (1 for a turn).
func rankedTurns(r Result, score map[string]float64) int {
	if r.Unit == nil {
		return 1
	}
	n := 0
	for _, t := range r.Unit.Turns {
		if _, ok := score[t.SourceURL]; ok {
			n++
		}
	}
	return n
}

// sessionTurns groups a session's records by turn, in turn order, each
// turn's chunks by position.
func sessionTurns(recs []index.Record) []sessionTurn {
	byTurn := map[int]*sessionTurn{}
	for _, r := range recs {
		pos, err := strconv.Atoi(r.Attrs[index.AttrTurn])
		if err != nil {
			continue
		}
		t := byTurn[pos]
		if t == nil {
			t = &sessionTurn{source: r.SourceURL, speaker: r.Attrs[index.AttrSpeaker], role: r.Attrs[index.AttrRole], turn: pos}
			byTurn[pos] = t
		}
		t.chunks = append(t.chunks, r)
	}
	out := make([]sessionTurn, 0, len(byTurn))
	for _, t := range byTurn {
		slices.SortFunc(t.chunks, func(a, b index.Record) int { return cmp.Compare(a.Position, b.Position) })
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b sessionTurn) int { return cmp.Compare(a.turn, b.turn) })
	return out
}

// unitSpan returns the turns [lo, hi) of turns (a session's, in order) in
// the unit of kind holding the turn at place pos.
func unitSpan(turns []sessionTurn, pos int, kind string) (lo, hi int) {
	at, found := slices.BinarySearchFunc(turns, pos, func(t sessionTurn, p int) int { return cmp.Compare(t.turn, p) })
	if !found {
		return 0, 0
	}
	if kind == UnitSession {
		return 0, len(turns)
	}
	roles := false
	for _, t := range turns {
		roles = roles || t.role != ""
	}
	starts := func(i int) bool {
		if roles {
			return strings.EqualFold(turns[i].role, "user")
		}
		return turns[i].speaker == turns[0].speaker
	}
	lo = at
	for lo > 0 && !starts(lo) {
		lo--
	}
	hi = at + 1
	for hi < len(turns) && !starts(hi) {
		hi++
	}
	return lo, hi
}
