package search

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
)

// chat is a retriever over conversation turns that also lists them: its
// full-text ranking is given, its records are every turn.
type chat struct {
	*fakeRetriever
	recs   []index.Record
	listed int
}

func (c *chat) Records(_ context.Context, f index.Filter) ([]index.Record, error) {
	c.listed++
	var out []index.Record
	for _, r := range c.recs {
		if f.Match(&r) {
			out = append(out, r)
		}
	}
	return out, nil
}

// chatTurn is turn pos of session sess, said by speaker (role may be "").
func chatTurn(sess string, pos int, speaker, role, text string) index.Record {
	r := index.Record{ID: fmt.Sprintf("%s-%d", sess, pos), SourceURL: fmt.Sprintf("memory://%s/%d", sess, pos), DocType: index.DocMemory,
		Content: text, Attrs: map[string]string{index.AttrSession: sess, index.AttrTurn: fmt.Sprint(pos), index.AttrSpeaker: speaker}}
	if role != "" {
		r.Attrs[index.AttrRole] = role
	}
	return r
}

// newChat is two sessions: s1 of a user and an assistant (rounds by role),
// s2 of two people (rounds by who opened it), and a turn without a session;
// BM25 ranks the turns given, best first.
func newChat(ranked ...string) *chat {
	recs := []index.Record{
		chatTurn("s1", 0, "User", "user", "I moved to Lisbon."),
		chatTurn("s1", 1, "Assistant", "assistant", "Lisbon is lovely; here are ten things about Lisbon."),
		chatTurn("s1", 2, "User", "user", "I start work on Monday."),
		chatTurn("s1", 3, "Assistant", "assistant", "Good luck on Monday."),
		chatTurn("s1", 4, "Assistant", "assistant", "Anything else?"),
		chatTurn("s2", 0, "Ann", "", "We went to the lake."),
		chatTurn("s2", 1, "Bob", "", "Was the lake cold?"),
		chatTurn("s2", 2, "Ann", "", "Freezing, but we swam."),
		{ID: "loose", SourceURL: "memory://loose", DocType: index.DocMemory, Content: "A note on Lisbon."},
	}
	byID := map[string]index.Record{}
	for _, r := range recs {
		byID[r.ID] = r
	}
	var text []driver.Hit
	for i, id := range ranked {
		text = append(text, driver.Hit{Record: byID[id], Score: float64(10 - i)})
	}
	return &chat{fakeRetriever: &fakeRetriever{text: text}, recs: recs}
}

func unitOpts(unit string, topK int) *Options {
	o := memOpts(FullText, topK)
	o.Unit = unit
	o.SpeakerWeight, o.TimeWeight, o.QuestionWeight = -1, -1, -1
	return o
}

func memberSources(r Result) []string {
	var out []string
	for _, t := range r.Unit.Turns {
		out = append(out, t.SourceURL)
	}
	return out
}

// A round is a user's turn with the replies to it; a unit scores as its
// best turn, holds its turns' text in order, and names each with its own
// score (0 for a turn the search did not rank).
func TestRounds(t *testing.T) {
	c := newChat("s1-1", "s2-1", "loose", "s1-0", "s2-2")
	rs, err := Search(context.Background(), c, "lisbon lake", unitOpts(UnitRound, 10))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 4 {
		t.Fatalf("%d results: %v", len(rs), ids(rs))
	}
	first := rs[0]
	if first.Score != 10 || first.Unit == nil || first.Unit.Kind != UnitRound || first.Unit.Session != "s1" ||
		!slices.Equal(memberSources(first), []string{"memory://s1/0", "memory://s1/1"}) ||
		first.Record.Content != "User: I moved to Lisbon.\nAssistant: Lisbon is lovely; here are ten things about Lisbon." ||
		first.Record.ID != "unit:round:s1-1" || first.Unit.Turns[0].Score != 7 || first.Unit.Turns[1].Score != 10 {
		t.Errorf("first: %+v %+v", first, first.Unit)
	}
	// Without roles a round starts at each turn of who opened the session:
	// Bob's question belongs to Ann's turn before it.
	if u := rs[1].Unit; u == nil || !slices.Equal(memberSources(rs[1]), []string{"memory://s2/0", "memory://s2/1"}) || u.Turns[0].Score != 0 || u.Turns[1].Score != 9 {
		t.Errorf("second: %+v", rs[1])
	}
	// A turn without a session is a result of its own.
	if rs[2].Unit != nil || rs[2].Record.ID != "loose" || rs[2].Score != 8 {
		t.Errorf("third: %+v", rs[2])
	}
	if rs[3].Unit == nil || !slices.Equal(memberSources(rs[3]), []string{"memory://s2/2"}) {
		t.Errorf("fourth: %+v", rs[3])
	}
	// A user's round runs to the next user turn: s1's second round has two
	// replies.
	c = newChat("s1-4")
	rs, _ = Search(context.Background(), c, "else", unitOpts(UnitRound, 10))
	if len(rs) != 1 || !slices.Equal(memberSources(rs[0]), []string{"memory://s1/2", "memory://s1/3", "memory://s1/4"}) {
		t.Errorf("second round of s1: %+v", rs)
	}
}

// A session unit holds every turn of it; each session is listed once.
func TestSessions(t *testing.T) {
	c := newChat("s1-3", "s1-0", "s2-2", "s1-1")
	rs, err := Search(context.Background(), c, "monday", unitOpts(UnitSession, 10))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || len(rs[0].Unit.Turns) != 5 || len(rs[1].Unit.Turns) != 3 || rs[0].Score != 10 || rs[1].Score != 8 {
		t.Fatalf("%+v", rs)
	}
	if c.listed != 2 {
		t.Errorf("sessions listed %d times, want once each", c.listed)
	}
	if !strings.HasPrefix(rs[0].Record.Content, "User: I moved to Lisbon.\n") || strings.Count(rs[0].Record.Content, "\n") != 4 {
		t.Errorf("session text %q", rs[0].Record.Content)
	}
	// Top k is of units, and two units of equal best score are ranked by
	// how many of their turns the search found.
	rs, _ = Search(context.Background(), c, "monday", unitOpts(UnitSession, 1))
	if len(rs) != 1 || rs[0].Unit.Session != "s1" {
		t.Errorf("top 1: %+v", rs)
	}
	c = newChat("s1-0", "s2-0")
	c.text[1].Score = c.text[0].Score // a tie, s1's turn ranked first
	c.text = append(c.text, driver.Hit{Record: c.recs[6], Score: 1})
	rs, _ = Search(context.Background(), c, "x", unitOpts(UnitSession, 2))
	if len(rs) != 2 || rs[0].Unit.Session != "s2" {
		t.Errorf("tie: %v", ids(rs))
	}
}

// Turns, the default, change nothing; an unknown unit, or a store that
// cannot list a session's turns, is an error.
func TestUnitsOptions(t *testing.T) {
	for _, u := range []string{"", "turn", "TURNS"} {
		c := newChat("s1-1", "s1-0")
		rs, err := Search(context.Background(), c, "lisbon", unitOpts(u, 10))
		if err != nil || !eq(ids(rs), []string{"s1-1", "s1-0"}) || rs[0].Unit != nil || c.listed != 0 {
			t.Errorf("%q: %v %v", u, ids(rs), err)
		}
	}
	if _, err := Search(context.Background(), newChat("s1-1"), "lisbon", unitOpts("paragraph", 10)); !errors.Is(err, ErrBadUnit) {
		t.Errorf("unknown unit: %v", err)
	}
	f := &fakeRetriever{text: []driver.Hit{{Record: chatTurn("s1", 0, "User", "user", "hi"), Score: 1}}}
	if _, err := Search(context.Background(), f, "hi", unitOpts(UnitRound, 10)); !errors.Is(err, ErrBadUnit) {
		t.Errorf("a store that cannot list: %v", err)
	}
	for in, want := range map[string]string{"round": UnitRound, " Sessions ": UnitSession, "": UnitTurn} {
		if got, err := ParseUnit(in); got != want || err != nil {
			t.Errorf("ParseUnit(%q) = %q, %v", in, got, err)
		}
	}
}
