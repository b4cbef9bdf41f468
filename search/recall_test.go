package search

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
)

// turn is a conversation memory hit.
func turn(id, speaker, at, text string, score float64) driver.Hit {
	h := hit(id, score)
	h.Record.DocType = index.DocMemory
	h.Record.Content = id + ": " + text // distinct: diversification shows identical texts once
	h.Record.Attrs = map[string]string{}
	if speaker != "" {
		h.Record.Attrs[index.AttrSpeaker] = speaker
	}
	if at != "" {
		h.Record.Attrs[index.AttrOccurredAt] = at
	}
	return h
}

var asked = time.Date(2023, 8, 16, 12, 0, 0, 0, time.UTC)

func memOpts(mode Mode, topK int) *Options {
	return &Options{Mode: mode, TopK: topK, SimilarityThreshold: -1, DocTypes: []string{index.DocMemory}, Now: asked}
}

// The speaker named in the question lifts that speaker's memories by
// 1+SpeakerWeight, a nickname included; others are untouched.
func TestSpeakerSignal(t *testing.T) {
	f := &fakeRetriever{text: []driver.Hit{
		turn("m1", "Melanie", "", "Caroline went to the support group.", 10),
		turn("c1", "Caroline", "", "I went to a support group yesterday.", 9),
		turn("x", "", "", "A support group meets on Fridays.", 8.5),
	}}
	rs, err := Search(context.Background(), f, "Where did Caroline go?", memOpts(FullText, 3))
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(rs); !eq(got, []string{"c1", "m1", "x"}) {
		t.Fatalf("ranking %v, want c1 (9×1.2 = 10.8) first", got)
	}
	if e := rs[0].Explanation; math.Abs(rs[0].Score-9*(1+DefaultSpeakerWeight)) > 1e-9 || e.Boost != 1+DefaultSpeakerWeight ||
		!slices.Equal(e.Signals, []string{"speaker"}) || e.BM25Score != 9 || e.Fused != rs[0].Score {
		t.Errorf("c1: score %v, explanation %+v", rs[0].Score, e)
	}
	if rs[1].Explanation.Boost != 0 || rs[1].Explanation.Signals != nil {
		t.Errorf("m1 boosted: %+v", rs[1].Explanation)
	}
	// "Mel" is Melanie; a capitalised first word is not a name.
	rs, _ = Search(context.Background(), f, "What did Mel say?", memOpts(FullText, 3))
	if rs[0].Record.ID != "m1" || rs[0].Explanation.Boost == 0 {
		t.Errorf("nickname: %v %+v", ids(rs), rs[0].Explanation)
	}
	f.text = append(f.text, turn("h", "Howard", "", "support", 9.5))
	rs, _ = Search(context.Background(), f, "How was the group?", memOpts(FullText, 4))
	for _, r := range rs {
		if r.Explanation.Boost != 0 {
			t.Errorf("%s boosted by %q: %+v", r.Record.ID, "How", r.Explanation)
		}
	}
	// Off, it changes nothing.
	o := memOpts(FullText, 3)
	o.SpeakerWeight = -1
	if rs, _ := Search(context.Background(), f, "Where did Caroline go?", o); rs[0].Record.ID != "m1" {
		t.Errorf("speaker signal off: %v", ids(rs))
	}
}

// A memory from within a time the question names, or up to TimeSlack after
// it, is lifted by 1+TimeWeight; a memory without a time, or a search of
// knowledge only, is not.
func TestTimeSignal(t *testing.T) {
	f := &fakeRetriever{text: []driver.Hit{
		turn("june", "A", "2023-06-20T10:00:00Z", "we adopted a dog", 10),
		turn("may", "A", "2023-05-20T10:00:00Z", "we adopted a dog", 9),
		turn("early-june", "A", "2023-06-05T10:00:00Z", "we adopted a dog", 8),
		turn("undated", "A", "", "we adopted a dog", 9.5),
		turn("bad", "A", "last tuesday", "we adopted a dog", 9.4),
	}}
	rs, err := Search(context.Background(), f, "What did they adopt in May 2023?", memOpts(FullText, 5))
	if err != nil {
		t.Fatal(err)
	}
	// may: 9×1.5 = 13.5; early-june is 5 days after May, within the
	// slack: 8×1.5 = 12; june is not.
	if got := ids(rs); !eq(got, []string{"may", "early-june", "june", "undated", "bad"}) {
		t.Fatalf("ranking %v", got)
	}
	if !slices.Equal(rs[0].Explanation.Signals, []string{"time"}) || rs[0].Explanation.Boost != 1+DefaultTimeWeight {
		t.Errorf("explanation %+v", rs[0].Explanation)
	}
	o := memOpts(FullText, 5)
	o.TimeSlack = -1
	rs, _ = Search(context.Background(), f, "What did they adopt in May 2023?", o)
	if got := ids(rs); !eq(got, []string{"may", "june", "undated", "bad", "early-june"}) {
		t.Errorf("without slack: %v", got)
	}
	// Relative to Now: "last month" from 16 August is July.
	f.text = append(f.text, turn("july", "A", "2023-07-02T10:00:00Z", "we adopted a dog", 7))
	rs, _ = Search(context.Background(), f, "What did they adopt last month?", memOpts(FullText, 1))
	if rs[0].Record.ID != "july" {
		t.Errorf("last month: %v", ids(rs))
	}
	// Knowledge searches are never touched, nor is the pool asked for.
	k := memOpts(FullText, 1)
	k.DocTypes = []string{index.DocKnowledge}
	rs, _ = Search(context.Background(), f, "What did they adopt in May 2023?", k)
	if rs[0].Record.ID != "june" || f.textK >= MinCandidatePool {
		t.Errorf("knowledge search: %v, k %d", ids(rs), f.textK)
	}
}

// A conversation memory that asks is divided by 1+QuestionWeight; text
// without a speaker is not a turn.
func TestQuestionSignal(t *testing.T) {
	f := &fakeRetriever{text: []driver.Hit{
		turn("ask", "A", "", "How long have you been married? ", 10),
		turn("tell", "B", "", "Five years already!", 9.5),
		turn("note", "", "", "Married how long?", 9.8),
	}}
	rs, _ := Search(context.Background(), f, "How long have they been married?", memOpts(FullText, 3))
	if got := ids(rs); !eq(got, []string{"note", "tell", "ask"}) {
		t.Fatalf("ranking %v", got)
	}
	if e := rs[2].Explanation; !slices.Equal(e.Signals, []string{"question"}) || math.Abs(e.Boost-1/(1+DefaultQuestionWeight)) > 1e-12 {
		t.Errorf("explanation %+v", e)
	}
}

// A turn that asks and says something of its speaker (a word in the first
// person) is a statement with a question at its end, not a question only:
// it keeps its score, as does a question in a curly quote's contraction.
func TestQuestionThatTellsIsNotDivided(t *testing.T) {
	f := &fakeRetriever{text: []driver.Hit{
		turn("mine", "User", "", "I moved my Flask app to Postgres 16; can you check the pool size?", 10),
		turn("ours", "A", "", "We\u2019re painting the fence. Want to help?", 9.9),
		turn("yours", "B", "", "Which Postgres do you run?", 9.8),
	}}
	rs, _ := Search(context.Background(), f, "Which Postgres version?", memOpts(FullText, 3))
	for _, r := range rs {
		asked := slices.Contains(r.Explanation.Signals, "question")
		if asked != (r.Record.ID == "yours") {
			t.Errorf("%s: signals %v", r.Record.ID, r.Explanation.Signals)
		}
	}
	for text, want := range map[string]bool{"What did you paint?": true, "Did I say that?": false, "Is it mine?": false,
		"Are we there yet?": false, "Our plan?": false, "Use MY key?": false, "Statement.": false, "": false, "i?": false} {
		if got := asksOnly(text); got != want {
			t.Errorf("asksOnly(%q) = %v, want %v", text, got, want)
		}
	}
}

// A question in the first person names the user: their turns (role "user",
// or a speaker called User when there are no roles) are lifted as a named
// speaker's are; the assistant's, and a third person's, are not.
func TestFirstPersonNamesTheUser(t *testing.T) {
	user := turn("u", "Sam", "", "I set the sprint to end on March 29.", 9)
	user.Record.Attrs[index.AttrRole] = "user"
	bare := turn("b", "User", "", "The first sprint ends soon.", 8.9)
	asst := turn("a", "Assistant", "", "Your sprint ending on March 29 is planned.", 9.5)
	asst.Record.Attrs[index.AttrRole] = "assistant"
	other := turn("o", "Kim", "", "Kim's sprint ends in April.", 9.4)
	f := &fakeRetriever{text: []driver.Hit{user, bare, asst, other}}
	rs, _ := Search(context.Background(), f, "When does my first sprint end?", memOpts(FullText, 4))
	if got := ids(rs); !eq(got, []string{"u", "b", "a", "o"}) {
		t.Fatalf("ranking %v, want the user's turns (9×1.2, 8.9×1.2) first", got)
	}
	for _, r := range rs {
		lifted := slices.Contains(r.Explanation.Signals, "speaker")
		if lifted != (r.Record.ID == "u" || r.Record.ID == "b") {
			t.Errorf("%s: signals %v", r.Record.ID, r.Explanation.Signals)
		}
	}
	// In the third person, no one is the user.
	rs, _ = Search(context.Background(), f, "When does the first sprint end?", memOpts(FullText, 4))
	if rs[0].Record.ID != "a" || rs[0].Explanation.Boost != 0 {
		t.Errorf("third person: %v %+v", ids(rs), rs[0].Explanation)
	}
}

// In one-mode searches with memories, a pool is ranked so that a boost can
// lift a memory from below TopK; hybrid search boosts the fused pool.
func TestSignalsRankThePool(t *testing.T) {
	var text, vec []driver.Hit
	for i := range 20 {
		text = append(text, turn(string(rune('a'+i)), "B", "", "x", float64(100-i)))
		vec = append(vec, turn(string(rune('a'+i)), "B", "", "x", 0.9-float64(i)/100))
	}
	// z is 21st in both lists; w, last, is there so that min-max
	// normalisation does not make z's fused score 0 (which no factor lifts).
	text = append(text, turn("z", "Caroline", "", "x", 70), turn("w", "B", "", "x", 10))
	vec = append(vec, turn("z", "Caroline", "", "x", 0.5), turn("w", "B", "", "x", 0.1))
	for _, mode := range []Mode{FullText, Vector, Hybrid} {
		f := &fakeRetriever{text: text, vec: vec}
		o := memOpts(mode, 3)
		o.SpeakerWeight = 2
		rs, err := Search(context.Background(), f, "What did Caroline say?", o)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != 3 || rs[0].Record.ID != "z" {
			t.Errorf("%s: %v, want z lifted from rank 21 to the top", mode, ids(rs))
		}
		if mode != Vector && f.textK < 21 || mode != FullText && f.vecK < 21 {
			t.Errorf("%s: asked for %d / %d candidates", mode, f.textK, f.vecK)
		}
	}
}

// A signal that is off names no reason, even when another signal lifts
// the memory; with every signal off, a memory search ranks no pool.
func TestSignalsOff(t *testing.T) {
	f := &fakeRetriever{text: []driver.Hit{
		turn("q", "Caroline", "2023-05-20T10:00:00Z", "Did we adopt a dog?", 10),
		turn("o", "B", "", "a dog", 9),
	}}
	const query = "What did Caroline adopt in May 2023?"
	for _, c := range []struct {
		name               string
		speaker, time, ask float64
		wantSignals        []string
		wantBoost          float64
	}{
		{"time and question off", 1, -1, -1, []string{"speaker"}, 2},
		{"question off", 1, 1, -1, []string{"speaker", "time"}, 2 * 2},
		{"speaker and question off", -1, 1, -1, []string{"time"}, 2},
	} {
		o := memOpts(FullText, 2)
		o.SpeakerWeight, o.TimeWeight, o.QuestionWeight = c.speaker, c.time, c.ask
		rs, err := Search(context.Background(), f, query, o)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 0 || rs[0].Record.ID != "q" {
			t.Fatalf("%s: %v", c.name, ids(rs))
		}
		if e := rs[0].Explanation; !slices.Equal(e.Signals, c.wantSignals) || e.Boost != c.wantBoost {
			t.Errorf("%s: explanation %+v, want signals %v, boost %v", c.name, e, c.wantSignals, c.wantBoost)
		}
	}
	o := memOpts(FullText, 2)
	o.SpeakerWeight, o.TimeWeight, o.QuestionWeight = -1, -1, -1
	rs, err := Search(context.Background(), f, query, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Explanation.Signals != nil || rs[0].Explanation.Boost != 0 {
		t.Errorf("all off: %+v", rs)
	}
	// Diversification ranks 3×TopK; no pool of CandidatePool.
	if f.textK != 3*2 {
		t.Errorf("all off: asked for %d candidates, want %d", f.textK, 3*2)
	}
}

func TestParseSignals(t *testing.T) {
	o, err := ParseSignals("speaker=0.5, time=0,question=2,slack=3d")
	if err != nil {
		t.Fatal(err)
	}
	if o.SpeakerWeight != 0.5 || o.TimeWeight != -1 || o.QuestionWeight != 2 || o.TimeSlack != 72*time.Hour {
		t.Errorf("%+v", o)
	}
	if o, err := ParseSignals("slack=36h"); err != nil || o.TimeSlack != 36*time.Hour {
		t.Errorf("slack=36h: %+v %v", o, err)
	}
	if o, err := ParseSignals(""); err != nil || o.SpeakerWeight != 0 || o.TimeSlack != 0 {
		t.Errorf("empty: %+v %v", o, err)
	}
	if o, err := ParseSignals("speaker=100,slack=0"); err != nil || o.SpeakerWeight != 100 || o.TimeSlack != -1 {
		t.Errorf("speaker=100,slack=0: %+v %v", o, err)
	}
	if o, err := ParseSignals("slack=3650d"); err != nil || o.TimeSlack != 3650*24*time.Hour {
		t.Errorf("slack=3650d (ten years): %+v %v", o, err)
	}
	// Exactly maxSpec bytes, and one more.
	if o, err := ParseSignals("speaker=1" + strings.Repeat(",", maxSpec-len("speaker=1"))); err != nil || o.SpeakerWeight != 1 {
		t.Errorf("a spec of maxSpec bytes: %+v %v", o, err)
	}
	if _, err := ParseSignals("speaker=1" + strings.Repeat(",", maxSpec+1-len("speaker=1"))); !errors.Is(err, ErrBadSignals) {
		t.Errorf("a spec over maxSpec bytes: %v", err)
	}
	for _, bad := range []string{"speaker", "speaker=x", "speaker=-1", "time=101", "slack=-2d", "slack=9999d", "recency=1", "time=1,time=2", "speaker=NaN"} {
		if _, err := ParseSignals(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzParseSignals(f *testing.F) {
	for _, s := range []string{"", "speaker=0.5,time=0,question=2,slack=3d", "slack=36h", "speaker=1e2", "slack=-0", "time=,", "=,="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseSignals(s)
		if err != nil {
			if !errors.Is(err, ErrBadSignals) {
				t.Fatalf("%q: error %v does not wrap ErrBadSignals", s, err)
			}
			return
		}
		r := o.withDefaults()
		for _, w := range []float64{r.SpeakerWeight, r.TimeWeight, r.QuestionWeight} {
			if !(w >= 0 && w <= 100) {
				t.Fatalf("%q: weights %+v", s, r)
			}
		}
		if r.TimeSlack < 0 || r.TimeSlack > 3650*24*time.Hour {
			t.Fatalf("%q: slack %v", s, r.TimeSlack)
		}
	})
}
