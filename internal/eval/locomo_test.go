package eval

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/search"
)

const tinyLoCoMo = "testdata/locomo/tiny.json"

func TestLoadLoCoMo(t *testing.T) {
	c, err := LoadLoCoMo(tinyLoCoMo)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "tiny" || c.Speakers != [2]string{"Caroline", "Melanie"} {
		t.Errorf("name %q speakers %q", c.Name, c.Speakers)
	}
	// Sessions in number order whatever the file's order; the empty
	// session_4 is no session; session_3's date is unreadable.
	var nums []int
	for _, s := range c.Sessions {
		nums = append(nums, s.Number)
	}
	if !slices.Equal(nums, []int{1, 2, 3}) || c.Turns() != 7 || c.UndatedSessions != 1 {
		t.Fatalf("sessions %v, %d turns, %d undated", nums, c.Turns(), c.UndatedSessions)
	}
	if got := c.Sessions[0].Time; !got.Equal(time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)) {
		t.Errorf("session 1 at %v", got)
	}
	if !c.Sessions[2].Time.IsZero() || c.Sessions[2].Turns[0].ID != "7" {
		t.Errorf("session 3: %+v", c.Sessions[2])
	}
	if tu := c.Sessions[1].Turns[1]; tu.Caption != "a tent by a lake" || tu.Speaker != "Caroline" {
		t.Errorf("D2:2: %+v", tu)
	}
	if !c.End().Equal(time.Date(2023, 6, 27, 10, 37, 0, 0, time.UTC)) {
		t.Errorf("end %v", c.End())
	}
	// Questions: repeated and unknown evidence ids dropped (D9:9 and the
	// malformed "D8:6; D9:17"), the question left without evidence skipped;
	// numeric and adversarial answers read; ids trimmed.
	if c.DroppedEvidence != 2 || c.Skipped != 1 || len(c.Questions) != 4 {
		t.Fatalf("dropped %d, skipped %d, %d questions", c.DroppedEvidence, c.Skipped, len(c.Questions))
	}
	want := []Question{
		{ID: "q0", Text: "When did Caroline go to the support group?", Category: 2, Answer: "7 May 2023", Evidence: []string{"D1:1"}},
		{ID: "q1", Text: "Where did Melanie camp?", Category: 4, Answer: "2022", Evidence: []string{"D2:1"}},
		{ID: "q2", Text: "What does Caroline want to do?", Category: 5, Answer: "counseling", Evidence: []string{"D1:3", "7"}},
		{ID: "q4", Text: "Uncategorised?", Category: 0, Answer: "", Evidence: []string{"D1:2"}},
	}
	for i, q := range c.Questions {
		w := want[i]
		if q.ID != w.ID || q.Text != w.Text || q.Category != w.Category || q.Answer != w.Answer || !slices.Equal(q.Evidence, w.Evidence) {
			t.Errorf("question %d: %+v, want %+v", i, q, w)
		}
	}
}

func TestConversationDataset(t *testing.T) {
	c, err := LoadLoCoMo(tinyLoCoMo)
	if err != nil {
		t.Fatal(err)
	}
	ds := c.Dataset(&TurnOptions{Title: "speaker+date", Context: 2, Next: 1})
	if ds.DocType != index.DocMemory || ds.Memories != "title=speaker+date context=2 next=1" || !ds.AskedAt.Equal(c.End()) {
		t.Errorf("doc type %q, memories %q, asked at %v", ds.DocType, ds.Memories, ds.AskedAt)
	}
	if len(ds.Corpus) != 7 || len(ds.Order) != 4 {
		t.Fatalf("%d docs, %d queries", len(ds.Corpus), len(ds.Order))
	}
	byID := map[string]Doc{}
	for _, d := range ds.Corpus {
		byID[d.ID] = d
	}
	d := byID["D2:2"]
	if d.Title != "Caroline, 27 June 2023" || d.Text != "How were the kids? [image: a tent by a lake]" {
		t.Errorf("D2:2: %+v", d)
	}
	wantAttrs := map[string]string{
		index.AttrSpeaker:    "Caroline",
		index.AttrOccurredAt: "2023-06-27T10:37:00Z",
		// The two turns before it in its session (there is one), then the next.
		index.AttrContext: "Melanie: We went camping at the lake last weekend. Melanie: They loved roasting marshmallows.",
		// Session 2, its second turn; no role: the speakers are people.
		index.AttrSession: "2",
		index.AttrTurn:    "1",
	}
	if !mapsEqual(d.Attrs, wantAttrs) {
		t.Errorf("D2:2 attrs %q, want %q", d.Attrs, wantAttrs)
	}
	// Context never crosses sessions: D2:1 has only the turn after it, D1:3
	// (the last of its session) only the two before.
	if got := byID["D2:1"].Attrs[index.AttrContext]; got != "Caroline: How were the kids? [image: a tent by a lake]" {
		t.Errorf("D2:1 context %q", got)
	}
	if got := byID["D1:3"].Attrs[index.AttrContext]; got != "Caroline: I went to a LGBTQ support group yesterday. Melanie: That sounds powerful! What did you learn?" {
		t.Errorf("D1:3 context %q", got)
	}
	// An undated session: the date as written in the title, no time.
	if d := byID["7"]; d.Title != "Caroline, sometime in July" || d.Attrs[index.AttrOccurredAt] != "" || d.Attrs[index.AttrContext] != "" {
		t.Errorf("7: %+v", d)
	}
	if ds.Qrels["q2"]["D1:3"] != 1 || ds.Qrels["q2"]["7"] != 1 || len(ds.Qrels["q1"]) != 1 || ds.Categories["q2"] != "5 adversarial" || ds.Categories["q4"] != "0" {
		t.Errorf("qrels %v, categories %v", ds.Qrels, ds.Categories)
	}

	// A context attribute passes every surface's checks however long and
	// odd the turns: one line, at most index.MaxAttrValueBytes.
	long := &Conversation{Sessions: []Session{{Number: 1, Turns: []Turn{
		{ID: "a", Speaker: "A\u200b\tB", Text: strings.Repeat("word ", 400)},
		{ID: "b", Speaker: "C", Text: "ok"},
		{ID: "c", Speaker: "D", Text: "line\nbreak " + strings.Repeat("é", 600)},
	}}}}
	for _, d := range long.Dataset(nil).Corpus {
		if err := index.CheckAttrs(d.Attrs); err != nil || len(d.Attrs[index.AttrContext]) > index.MaxAttrValueBytes {
			t.Errorf("%s: attrs %q: %v", d.ID, d.Attrs, err)
		}
		if d.ID == "b" && (!strings.HasPrefix(d.Attrs[index.AttrContext], "A B: word word") || !strings.Contains(d.Attrs[index.AttrContext], " D: line break é")) {
			t.Errorf("b: context %q", d.Attrs[index.AttrContext])
		}
	}

	// Other shapes: the speaker in the text, no attributes, no context.
	ds = c.Dataset(&TurnOptions{Title: "none", Prefix: true, Context: -1, Next: -1, NoAttrs: true})
	d = ds.Corpus[0]
	if d.ID != "D1:1" || d.Title != "" || d.Text != "Caroline: I went to a LGBTQ support group yesterday." || d.Attrs != nil {
		t.Errorf("prefixed: %+v", d)
	}
	ds = c.Dataset(&TurnOptions{Title: "session", Context: 1, Next: -1})
	if d := ds.Corpus[1]; d.Title != "1:56 pm on 8 May, 2023" || d.Attrs[index.AttrContext] != "Caroline: I went to a LGBTQ support group yesterday." {
		t.Errorf("session title, one turn of context: %+v", d)
	}
}

// A chat's speakers User and Assistant are its roles (index.AttrRole), in
// any case; people's names are not.
func TestChatRoles(t *testing.T) {
	c, err := ReadLoCoMo(strings.NewReader(`{"session_1":[{"dia_id":"D1:1","speaker":"User","text":"I use Flask."},` +
		`{"dia_id":"D1:2","speaker":"ASSISTANT","text":"Good."},{"dia_id":"D1:3","speaker":"Userson","text":"Hi."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"D1:1": "user", "D1:2": "assistant", "D1:3": ""}
	for _, d := range c.Dataset(nil).Corpus {
		if got := d.Attrs[index.AttrRole]; got != want[d.ID] {
			t.Errorf("%s (%s): role %q, want %q", d.ID, d.Attrs[index.AttrSpeaker], got, want[d.ID])
		}
	}
	if got := c.Dataset(&TurnOptions{NoAttrs: true}).Corpus[0].Attrs[index.AttrRole]; got != "" {
		t.Errorf("attrs=0 wrote a role %q", got)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestReadLoCoMoRejects(t *testing.T) {
	turn := `[{"speaker":"A","dia_id":"D1:1","text":"hi"}]`
	for name, in := range map[string]string{
		"not json":           `{"session_1": [`,
		"an array":           `[]`,
		"no sessions":        `{"speaker_a":"A","qa":[]}`,
		"only empty":         `{"session_1":[]}`,
		"turns not a list":   `{"session_1":{"x":1}}`,
		"no dia_id":          `{"session_1":[{"speaker":"A","text":"hi"}]}`,
		"blank dia_id":       `{"session_1":[{"dia_id":"  ","text":"hi"}]}`,
		"dia_id twice":       `{"session_1":` + turn + `,"session_2":` + turn + `}`,
		"same session twice": `{"session_1":` + turn + `,"session_01":[{"dia_id":"D2:1"}]}`,
		"speaker not text":   `{"speaker_a":3,"session_1":` + turn + `}`,
		"date not text":      `{"session_1":` + turn + `,"session_1_date_time":[1]}`,
		"conversation list":  `{"conversation":[1]}`,
		"qa not a list":      `{"session_1":` + turn + `,"qa":{}}`,
		"question missing":   `{"session_1":` + turn + `,"qa":[{"evidence":["D1:1"]}]}`,
		"category fraction":  `{"session_1":` + turn + `,"qa":[{"question":"q","evidence":["D1:1"],"category":2.5}]}`,
		"category huge":      `{"session_1":` + turn + `,"qa":[{"question":"q","evidence":["D1:1"],"category":1e9}]}`,
	} {
		if _, err := ReadLoCoMo(strings.NewReader(in)); !errors.Is(err, ErrBadDataset) {
			t.Errorf("%s: %v", name, err)
		}
	}
	big := `{"session_1":` + turn + `,"x":"` + strings.Repeat("a", MaxLoCoMoBytes) + `"}`
	if _, err := ReadLoCoMo(strings.NewReader(big)); !errors.Is(err, ErrBadDataset) || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("over MaxLoCoMoBytes: %v", err)
	}
	if _, err := LoadLoCoMo("testdata/locomo/none.json"); !errors.Is(err, ErrBadDataset) {
		t.Errorf("missing file: %v", err)
	}
	// Tolerated: a BOM, a numeric dia_id, invalid UTF-8, unknown keys.
	c, err := ReadLoCoMo(strings.NewReader("\ufeff{\"session_1\":[{\"dia_id\":12,\"speaker\":\"A\xff\",\"text\":\"x\"}],\"other\":1," +
		"\"qa\":[{\"question\":\"q\",\"evidence\":[12, \"12\"]}]}"))
	if err != nil || c.Sessions[0].Turns[0].ID != "12" || c.Sessions[0].Turns[0].Speaker != "A\ufffd" || len(c.Questions) != 1 || c.DroppedEvidence != 1 {
		t.Errorf("lenient: %+v %v", c, err)
	}
}

func TestParseSessionTime(t *testing.T) {
	at := func(y int, m time.Month, d, h, mi int) time.Time { return time.Date(y, m, d, h, mi, 0, 0, time.UTC) }
	for in, want := range map[string]time.Time{
		"1:56 pm on 8 May, 2023":     at(2023, 5, 8, 13, 56),
		"10:37 am on 27 June, 2023":  at(2023, 6, 27, 10, 37),
		"12:09 am on 13 March, 2023": at(2023, 3, 13, 0, 9),
		"7:55 PM on 20 Jan, 2023":    at(2023, 1, 20, 19, 55),
		"  4:04 pm  on 9 July 2023":  at(2023, 7, 9, 16, 4),
		"3:00 pm on January 5, 2024": at(2024, 1, 5, 15, 0),
		"17:30 on 2 August, 2023":    at(2023, 8, 2, 17, 30),
		"8 May, 2023":                at(2023, 5, 8, 0, 0),
		"May 8, 2023":                at(2023, 5, 8, 0, 0),
		"2023-05-08":                 at(2023, 5, 8, 0, 0),
		"2023-05-08T13:56:00+02:00":  at(2023, 5, 8, 11, 56),
	} {
		got, err := ParseSessionTime(in)
		if err != nil || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "sometime in July", "13:56 pm on 8 May, 2023", "1:56 pm on 31 June, 2023", "yesterday"} {
		if got, err := ParseSessionTime(bad); !errors.Is(err, ErrBadDataset) || !got.IsZero() {
			t.Errorf("%q: %v %v", bad, got, err)
		}
	}
}

func TestParseTurnOptions(t *testing.T) {
	if o, err := ParseTurnOptions(" "); err != nil || o != nil || o.String() != "title=speaker+date context=2 next=1" {
		t.Errorf("empty: %+v %v %q", o, err, o.String())
	}
	o, err := ParseTurnOptions("title=Speaker, prefix=1,context=0,next=0,attrs=0")
	if err != nil || *o != (TurnOptions{Title: "speaker", Prefix: true, Context: -1, Next: -1, NoAttrs: true}) {
		t.Fatalf("%+v %v", o, err)
	}
	if s := o.String(); s != "title=speaker prefix context=0 next=0 no-attrs" {
		t.Errorf("String %q", s)
	}
	if o, err := ParseTurnOptions("context=3,next=2"); err != nil || o.Context != 3 || o.Next != 2 || o.String() != "title=speaker+date context=3 next=2" {
		t.Errorf("context=3,next=2: %+v %v", o, err)
	}
	for _, bad := range []string{"title", "title=nobody", "prefix=maybe", "context=-1", "context=21", "context=x", "next=off", "next=21", "colour=red", "next=1,next=0", "=1"} {
		if _, err := ParseTurnOptions(bad); !errors.Is(err, ErrBadDataset) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// A conversation runs through Run as memories, with a row per category.
func TestRunLoCoMo(t *testing.T) {
	c, err := LoadLoCoMo(tinyLoCoMo)
	if err != nil {
		t.Fatal(err)
	}
	ds := c.Dataset(nil)
	rep, err := Run(context.Background(), ds, &Options{Modes: []search.Mode{search.FullText, search.Hybrid}, Dir: t.TempDir(), PerQuery: true, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Documents != 7 || rep.Queries != 4 || rep.Memories != ds.Memories {
		t.Errorf("report %+v", rep)
	}
	for _, m := range rep.Results {
		var labels []string
		n := 0
		for _, cr := range m.Categories {
			labels = append(labels, cr.Category)
			n += cr.Queries
		}
		if !slices.Equal(labels, []string{"0", "2 temporal", "4 single-hop", "5 adversarial"}) || n != 4 {
			t.Errorf("%s: categories %v (%d queries)", m.Mode, labels, n)
		}
		// Seven documents: every question's evidence is ranked, but for the
		// question that shares no word with any turn, which BM25 alone
		// cannot answer.
		if want := map[string]float64{"fulltext": 0.75, "hybrid": 1}[m.Mode]; m.Recall100 != want {
			t.Errorf("%s: R@100 %v, want %v", m.Mode, m.Recall100, want)
		}
		for _, q := range m.PerQuery {
			if q.Category != ds.Categories[q.ID] {
				t.Errorf("%s %s: category %q", m.Mode, q.ID, q.Category)
			}
		}
	}
	macro := Macro([]*Report{rep, rep})
	if len(macro) != 2 || len(macro[0].Categories) != 4 || macro[0].Categories[0].Datasets != 2 || macro[0].Categories[1].Queries != 2 {
		t.Errorf("macro %+v", macro)
	}
}

func FuzzReadLoCoMo(f *testing.F) {
	seed, err := os.ReadFile(tinyLoCoMo)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(seed))
	for _, s := range []string{
		`{"session_1":[{"dia_id":"D1:1","speaker":"A","text":"hi"}],"qa":[{"question":"q","evidence":["D1:1"],"category":1}]}`,
		`{"conversation":{"session_2":[{"dia_id":1}],"session_2_date_time":"1:56 pm on 8 May, 2023"},"qa":[{"question":"","evidence":[1,"1",null]}]}`,
		`{"session_1":[{"dia_id":"a"},{"dia_id":"b","blip_caption":"c"}],"session_3":[{"dia_id":"c"}]}`,
		`{"session_999999":[{"dia_id":"\u0000"}]}`,
		`[`, `null`, `{}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		c, err := ReadLoCoMo(strings.NewReader(in))
		if err != nil {
			if !errors.Is(err, ErrBadDataset) {
				t.Fatalf("error %v does not wrap ErrBadDataset", err)
			}
			return
		}
		if len(c.Sessions) == 0 {
			t.Fatal("no sessions")
		}
		turns := map[string]bool{}
		for i, s := range c.Sessions {
			if len(s.Turns) == 0 || i > 0 && c.Sessions[i-1].Number >= s.Number {
				t.Fatalf("sessions %+v", c.Sessions)
			}
			for _, tu := range s.Turns {
				if tu.ID == "" || turns[tu.ID] || !utf8.ValidString(tu.ID+tu.Speaker+tu.Text+tu.Caption) {
					t.Fatalf("turn %+v", tu)
				}
				turns[tu.ID] = true
			}
		}
		for _, q := range c.Questions {
			if len(q.Evidence) == 0 || !utf8.ValidString(q.Text+q.Answer) {
				t.Fatalf("question %+v", q)
			}
			for i, e := range q.Evidence {
				if !turns[e] || slices.Contains(q.Evidence[:i], e) {
					t.Fatalf("question %+v: evidence %q", q, e)
				}
			}
		}
		ds := c.Dataset(nil)
		if len(ds.Corpus) != len(turns) || len(ds.Order) != len(c.Questions) {
			t.Fatalf("%d docs for %d turns, %d queries", len(ds.Corpus), len(turns), len(ds.Order))
		}
		for _, d := range ds.Corpus {
			if !utf8.ValidString(d.Title + d.Text) {
				t.Fatalf("doc %+v", d)
			}
			// What every surface accepts.
			if err := index.CheckAttrs(d.Attrs); err != nil {
				t.Fatalf("doc %+v: %v", d, err)
			}
		}
		for q, rel := range ds.Qrels {
			for id := range rel {
				if !turns[id] {
					t.Fatalf("%s judges %q, not a turn", q, id)
				}
			}
		}
	})
}

func FuzzParseTurnOptions(f *testing.F) {
	for _, s := range []string{"", "title=speaker,prefix=1,context=0,next=2,attrs=0", "context=20", "title=", ",,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseTurnOptions(s)
		if err != nil {
			if !errors.Is(err, ErrBadDataset) {
				t.Fatalf("%q: error %v does not wrap ErrBadDataset", s, err)
			}
			return
		}
		r := o.resolved()
		if r.Context > 20 || r.Next > 20 || r.Context == 0 || r.Next == 0 || !utf8.ValidString(o.String()) {
			t.Fatalf("%q resolved to %+v", s, r)
		}
	})
}
