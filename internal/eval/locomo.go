package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/clean"
)

// LoCoMo (Maharana et al., ACL 2024) is a set of long conversations between
// two people over many sessions, each session dated, with questions whose
// evidence is a list of dialogue turns. ReadLoCoMo reads one conversation
// file; [Conversation.Dataset] turns it into a data set whose documents are
// the turns, written as an agent writes memories (see docs/evaluation.md).

// MaxLoCoMoBytes bounds a LoCoMo file. The published conversations are
// 150–300 KB; a larger file is refused before it is parsed.
const MaxLoCoMoBytes = 64 << 20

// Conversation is one LoCoMo conversation. It is read-only once loaded and
// then safe for concurrent use.
type Conversation struct {
	Name     string    // the file's base name without ".json"
	Speakers [2]string // speaker_a and speaker_b ("" when missing)
	Sessions []Session // by session number
	// Questions are the questions that keep at least one evidence turn, in
	// file order.
	Questions []Question
	// Skipped counts questions left without a valid evidence turn, and
	// DroppedEvidence the evidence ids (of all questions) that name no turn
	// of the conversation. Ids are matched exactly as written, as the BEIR
	// conversion of the same files does ("D8:6; D9:17" names no turn).
	Skipped, DroppedEvidence int
	// UndatedSessions counts sessions whose date could not be read; their
	// turns have no time.
	UndatedSessions int
}

// Session is one dated session of a conversation.
type Session struct {
	Number   int
	DateTime string    // as written, e.g. "1:56 pm on 8 May, 2023"
	Time     time.Time // DateTime read as UTC; zero when unreadable or missing
	Turns    []Turn
}

// Turn is one dialogue turn.
type Turn struct {
	ID      string // dia_id, e.g. "D1:3"
	Speaker string
	Text    string
	Caption string // the caption of an image shared with the turn, if any
}

// Question is one question and its evidence.
type Question struct {
	ID       string // "q" and the question's index in the file, as in the BEIR conversion
	Text     string
	Category int    // 1–5 in the published files (5: adversarial); 0 when missing
	Answer   string // the answer (or adversarial answer) as text
	Evidence []string
}

// LoadLoCoMo reads a LoCoMo conversation file.
func LoadLoCoMo(path string) (*Conversation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDataset, err)
	}
	defer f.Close()
	c, err := ReadLoCoMo(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	return c, nil
}

var sessionKey = regexp.MustCompile(`^session_([0-9]{1,6})$`)

// ReadLoCoMo reads one conversation: a JSON object with speaker_a,
// speaker_b, session_N (a list of turns {speaker, dia_id, text,
// blip_caption}), session_N_date_time and qa (a list of {question, answer or
// adversarial_answer, evidence, category}). The sessions may also sit in a
// "conversation" object, as in the released locomo10.json. Other keys are
// ignored. A turn needs a dia_id, unique in the file; a session needs at
// least one turn. Input over MaxLoCoMoBytes, and input that is not such an
// object, is an error wrapping ErrBadDataset.
func ReadLoCoMo(r io.Reader) (*Conversation, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxLoCoMoBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadDataset, err)
	}
	if len(b) > MaxLoCoMoBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrBadDataset, MaxLoCoMoBytes)
	}
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("%w: not a LoCoMo conversation object: %v", ErrBadDataset, err)
	}
	conv := top
	if raw, ok := top["conversation"]; ok {
		if err := json.Unmarshal(raw, &conv); err != nil {
			return nil, fmt.Errorf("%w: \"conversation\" is not an object: %v", ErrBadDataset, err)
		}
	}
	c := &Conversation{}
	for i, k := range []string{"speaker_a", "speaker_b"} {
		if raw, ok := conv[k]; ok {
			if err := json.Unmarshal(raw, &c.Speakers[i]); err != nil {
				return nil, fmt.Errorf("%w: %s is not a string", ErrBadDataset, k)
			}
			c.Speakers[i] = validUTF8(strings.TrimSpace(c.Speakers[i]))
		}
	}
	seen, err := c.readSessions(conv)
	if err != nil {
		return nil, err
	}
	if raw, ok := top["qa"]; ok {
		if err := c.readQuestions(raw, seen); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// readSessions reads the sessions of conv (session_N and its
// session_N_date_time) into c in the order of their numbers, and returns
// the turn IDs it met.
func (c *Conversation) readSessions(conv map[string]json.RawMessage) (map[string]bool, error) {
	seen := map[string]bool{}
	numbers := map[int]string{}
	for k, raw := range conv {
		m := sessionKey.FindStringSubmatch(k)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		if other, ok := numbers[n]; ok {
			return nil, fmt.Errorf("%w: %s and %s are the same session", ErrBadDataset, min(k, other), max(k, other))
		}
		numbers[n] = k
		s := Session{Number: n}
		if err := s.readTurns(k, raw, seen); err != nil {
			return nil, err
		}
		if len(s.Turns) == 0 {
			continue
		}
		if raw, ok := conv[k+"_date_time"]; ok {
			if err := json.Unmarshal(raw, &s.DateTime); err != nil {
				return nil, fmt.Errorf("%w: %s_date_time is not a string", ErrBadDataset, k)
			}
			s.DateTime = validUTF8(strings.TrimSpace(s.DateTime))
			s.Time, _ = ParseSessionTime(s.DateTime)
		}
		if s.Time.IsZero() {
			c.UndatedSessions++
		}
		c.Sessions = append(c.Sessions, s)
	}
	if len(c.Sessions) == 0 {
		return nil, fmt.Errorf("%w: no session with turns", ErrBadDataset)
	}
	sort.Slice(c.Sessions, func(i, j int) bool { return c.Sessions[i].Number < c.Sessions[j].Number })
	return seen, nil
}

// readTurns reads the turns of session k from raw; each needs a dia_id not
// in seen, where it is added.
func (s *Session) readTurns(k string, raw json.RawMessage, seen map[string]bool) error {
	var turns []struct {
		Speaker *string `json:"speaker"`
		ID      *jsonID `json:"dia_id"`
		Text    *string `json:"text"`
		Caption *string `json:"blip_caption"`
	}
	if err := json.Unmarshal(raw, &turns); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadDataset, k, err)
	}
	for i, t := range turns {
		if t.ID == nil || strings.TrimSpace(string(*t.ID)) == "" {
			return fmt.Errorf("%w: %s, turn %d: no dia_id", ErrBadDataset, k, i+1)
		}
		id := cleanID(string(*t.ID))
		if seen[id] {
			return fmt.Errorf("%w: %s: dia_id %q appears twice", ErrBadDataset, k, clip(id))
		}
		seen[id] = true
		s.Turns = append(s.Turns, Turn{ID: id, Speaker: trimmed(t.Speaker), Text: trimmed(t.Text), Caption: trimmed(t.Caption)})
	}
	return nil
}

// readQuestions reads the qa list into c. Evidence that names no turn of
// seen is dropped (counted in DroppedEvidence), and a question left without
// evidence is skipped (counted in Skipped).
func (c *Conversation) readQuestions(raw json.RawMessage, seen map[string]bool) error {
	var qa []struct {
		Question    *string           `json:"question"`
		Answer      json.RawMessage   `json:"answer"`
		Adversarial json.RawMessage   `json:"adversarial_answer"`
		Evidence    []json.RawMessage `json:"evidence"`
		Category    *json.Number      `json:"category"`
	}
	if err := json.Unmarshal(raw, &qa); err != nil {
		return fmt.Errorf("%w: qa: %v", ErrBadDataset, err)
	}
	for i, q := range qa {
		if q.Question == nil {
			return fmt.Errorf("%w: qa %d: no question", ErrBadDataset, i)
		}
		cat := 0
		if q.Category != nil {
			n, err := strconv.Atoi(q.Category.String())
			if err != nil || n < 0 || n > 1000 {
				return fmt.Errorf("%w: qa %d: category %q is not a small integer", ErrBadDataset, i, clip(q.Category.String()))
			}
			cat = n
		}
		qu := Question{ID: "q" + strconv.Itoa(i), Text: validUTF8(strings.TrimSpace(*q.Question)), Category: cat, Answer: answerText(q.Answer)}
		if qu.Answer == "" {
			qu.Answer = answerText(q.Adversarial)
		}
		have := map[string]bool{}
		for _, e := range q.Evidence {
			var id string
			if json.Unmarshal(e, &id) != nil || !seen[cleanID(id)] {
				c.DroppedEvidence++
				continue
			}
			if id = cleanID(id); !have[id] {
				have[id] = true
				qu.Evidence = append(qu.Evidence, id)
			}
		}
		if len(qu.Evidence) == 0 {
			c.Skipped++
			continue
		}
		c.Questions = append(c.Questions, qu)
	}
	return nil
}

func trimmed(s *string) string {
	if s == nil {
		return ""
	}
	return validUTF8(strings.TrimSpace(*s))
}

// answerText renders an answer that may be a string, a number or null.
func answerText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return validUTF8(s)
	}
	return clip(validUTF8(string(raw)))
}

// sessionLayouts are the date formats of LoCoMo sessions; they are matched
// against the lower-cased date (month names match in any case).
var sessionLayouts = []string{
	"3:04 pm on 2 January, 2006",
	"3:04 pm on 2 January 2006",
	"3:04 pm on January 2, 2006",
	"15:04 on 2 January, 2006",
	"2 January, 2006",
	"2 January 2006",
	"January 2, 2006",
}

// ParseSessionTime reads a session date such as "1:56 pm on 8 May, 2023"
// (also with abbreviated months, without the time or the comma, or in ISO
// 8601) as UTC: the files give no time zone.
func ParseSessionTime(s string) (time.Time, error) {
	s = strings.Join(strings.Fields(s), " ")
	for _, layout := range []string{time.RFC3339, "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	low := strings.ToLower(s)
	for _, l := range sessionLayouts {
		for _, layout := range []string{l, strings.Replace(l, "January", "Jan", 1)} {
			if t, err := time.Parse(layout, low); err == nil {
				return t.UTC(), nil
			}
		}
	}
	return time.Time{}, fmt.Errorf("%w: session date %q is not a date", ErrBadDataset, clip(s))
}

// Turns returns the number of turns of the conversation.
func (c *Conversation) Turns() int {
	n := 0
	for _, s := range c.Sessions {
		n += len(s.Turns)
	}
	return n
}

// End is the time of the last dated session (zero when none is dated): when
// the questions are asked.
func (c *Conversation) End() time.Time {
	var end time.Time
	for _, s := range c.Sessions {
		if s.Time.After(end) {
			end = s.Time
		}
	}
	return end
}

// Categories of LoCoMo questions, as the BEIR conversion names them.
var locomoCategories = map[int]string{1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}

// CategoryLabel is the label of a LoCoMo question category: "1 multi-hop",
// ..., "5 adversarial", or the number alone for any other.
func CategoryLabel(c int) string {
	if n, ok := locomoCategories[c]; ok {
		return strconv.Itoa(c) + " " + n
	}
	return strconv.Itoa(c)
}

// TurnOptions say how Conversation.Dataset writes each turn as a memory. A
// nil *TurnOptions, and each zero field, means the default; the defaults are
// how an agent should write conversation memories, as measured in
// docs/evaluation.md.
type TurnOptions struct {
	// Title of each memory: "speaker" (the speaker's name), "date" (the
	// session's day, "8 May 2023"), "speaker+date" ("Caroline, 8 May
	// 2023"), "session" (the session's date and time as written, as the
	// BEIR conversion titles turns) or "none" (the source URL stands for
	// it, as the index does for untitled documents). Default
	// "speaker+date".
	Title string
	// Prefix writes "<speaker>: " before the text, as the BEIR conversion
	// of LoCoMo does. Default false: the speaker is metadata.
	Prefix bool
	// Context is how many turns before this one, in its session, are its
	// context (index.AttrContext, searched at a lower weight). Default 2;
	// negative: none.
	Context int
	// Next is how many turns after this one, in its session, are also its
	// context: an agent that writes a turn's memory once the reply is known
	// (one turn later) can add it. Default 1; negative: none.
	Next int
	// NoAttrs leaves out the speaker and time attributes (for measuring
	// what they bring). Default false.
	NoAttrs bool
}

// ParseTurnOptions parses a comma-separated list of key=value settings
// ("" gives nil, all defaults): title=speaker|date|speaker+date|session|none,
// prefix=0|1, context=N (turns before; 0: none), next=N (turns after; 0:
// none), attrs=0|1.
func ParseTurnOptions(spec string) (*TurnOptions, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, nil
	}
	o := &TurnOptions{}
	seen := map[string]bool{}
	for _, kv := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.ToLower(strings.TrimSpace(v))
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("%w: --turns: %q is not key=value", ErrBadDataset, clip(kv))
		}
		if seen[k] {
			return nil, fmt.Errorf("%w: --turns: %q given twice", ErrBadDataset, clip(k))
		}
		seen[k] = true
		flag := func() (bool, error) {
			switch v {
			case "1", "true", "on", "yes":
				return true, nil
			case "0", "false", "off", "no":
				return false, nil
			}
			return false, fmt.Errorf("%w: --turns: %s=%q: want 0 or 1", ErrBadDataset, k, clip(v))
		}
		var err error
		switch k {
		case "title":
			switch v {
			case "speaker", "date", "speaker+date", "session", "none":
				o.Title = v
			default:
				err = fmt.Errorf("%w: --turns: title=%q: want speaker, date, speaker+date, session or none", ErrBadDataset, clip(v))
			}
		case "prefix":
			o.Prefix, err = flag()
		case "context", "next":
			n, cerr := strconv.Atoi(v)
			if cerr != nil || n < 0 || n > 20 {
				err = fmt.Errorf("%w: --turns: %s=%q: want a number of turns from 0 to 20", ErrBadDataset, k, clip(v))
				break
			}
			if n == 0 {
				n = -1
			}
			if k == "context" {
				o.Context = n
			} else {
				o.Next = n
			}
		case "attrs":
			var on bool
			on, err = flag()
			o.NoAttrs = !on
		default:
			err = fmt.Errorf("%w: --turns: unknown key %q (want title, prefix, context, next or attrs)", ErrBadDataset, clip(k))
		}
		if err != nil {
			return nil, err
		}
	}
	return o, nil
}

// String describes the options for reports, e.g. "title=speaker+date
// context=2 next=1".
func (o *TurnOptions) String() string {
	return o.resolved().describe()
}

func (r TurnOptions) describe() string {
	s := "title=" + r.Title
	if r.Prefix {
		s += " prefix"
	}
	s += " context=" + strconv.Itoa(max(r.Context, 0))
	s += " next=" + strconv.Itoa(max(r.Next, 0))
	if r.NoAttrs {
		s += " no-attrs"
	}
	return s
}

func (o *TurnOptions) resolved() TurnOptions {
	var r TurnOptions
	if o != nil {
		r = *o
	}
	if r.Title == "" {
		r.Title = "speaker+date"
	}
	if r.Context == 0 {
		r.Context = 2
	}
	if r.Next == 0 {
		r.Next = 1
	}
	return r
}

// turnText is what the turn says: its text and the caption of the image it
// shares, if any.
func (t *Turn) turnText() string {
	if t.Caption == "" {
		return t.Text
	}
	if t.Text == "" {
		return "[image: " + t.Caption + "]"
	}
	return t.Text + " [image: " + t.Caption + "]"
}

// Dataset turns the conversation into a data set of memories, one per turn
// (id: its dia_id), as an agent would write them while the conversation
// happens: the turn's text (and shared image's caption), with its speaker
// (index.AttrSpeaker, and index.AttrRole when the speakers are a chat's
// "User" and "Assistant"), the session's time (index.AttrOccurredAt, RFC
// 3339 UTC), its session and place in it (index.AttrSession, AttrTurn) and
// the turns around it (index.AttrContext), shaped by o. Every
// question is a query (category labels from CategoryLabel); its evidence
// turns are its relevant documents, grade 1. The questions are asked at the
// end of the conversation (its last session's time).
func (c *Conversation) Dataset(o *TurnOptions) *Dataset {
	r := o.resolved()
	ds := &Dataset{
		Name: c.Name, Split: "qa", DocType: index.DocMemory, Memories: r.describe(),
		Queries: map[string]string{}, Qrels: Qrels{}, Categories: map[string]string{}, AskedAt: c.End(),
	}
	if ds.Name == "" {
		ds.Name = "conversation"
	}
	for _, s := range c.Sessions {
		for i, t := range s.Turns {
			text := t.turnText()
			if r.Prefix && t.Speaker != "" {
				text = t.Speaker + ": " + text
			}
			day := s.DateTime
			if !s.Time.IsZero() {
				day = s.Time.Format("2 January 2006")
			}
			var title string
			switch r.Title {
			case "speaker":
				title = t.Speaker
			case "date":
				title = day
			case "speaker+date":
				title = strings.Trim(t.Speaker+", "+day, ", ")
			case "session":
				title = s.DateTime
			}
			attrs := map[string]string{}
			if !r.NoAttrs {
				if t.Speaker != "" {
					attrs[index.AttrSpeaker] = clean.Clip(clean.Line(t.Speaker), index.MaxAttrValueBytes)
					// A chat transcript's speakers are its roles.
					if role := strings.ToLower(t.Speaker); role == "user" || role == "assistant" {
						attrs[index.AttrRole] = role
					}
				}
				if !s.Time.IsZero() {
					attrs[index.AttrOccurredAt] = s.Time.UTC().Format(time.RFC3339)
				}
				attrs[index.AttrSession] = strconv.Itoa(s.Number)
				attrs[index.AttrTurn] = strconv.Itoa(i)
			}
			var ctx []string
			for j := max(0, i-r.Context); j < i && r.Context > 0; j++ {
				ctx = append(ctx, s.Turns[j].said())
			}
			for j := i + 1; j <= i+r.Next && j < len(s.Turns); j++ {
				ctx = append(ctx, s.Turns[j].said())
			}
			if len(ctx) > 0 {
				// An attribute every surface accepts: one line, each turn
				// clipped to its share of index.MaxAttrValueBytes.
				share := index.MaxAttrValueBytes/len(ctx) - 1
				for j := range ctx {
					ctx[j] = clean.Clip(clean.Line(ctx[j]), share)
				}
				attrs[index.AttrContext] = strings.Join(ctx, " ")
			}
			if len(attrs) == 0 {
				attrs = nil
			}
			ds.Corpus = append(ds.Corpus, Doc{ID: t.ID, Title: title, Text: text, Attrs: attrs})
		}
	}
	for _, q := range c.Questions {
		ds.Queries[q.ID] = q.Text
		ds.Order = append(ds.Order, q.ID)
		ds.Categories[q.ID] = CategoryLabel(q.Category)
		ds.Qrels[q.ID] = map[string]int{}
		for _, e := range q.Evidence {
			ds.Qrels[q.ID][e] = 1
		}
	}
	return ds
}

// said is a turn as a line of the conversation: "<speaker>: <text>".
func (t *Turn) said() string {
	if t.Speaker == "" {
		return t.turnText()
	}
	return t.Speaker + ": " + t.turnText()
}
