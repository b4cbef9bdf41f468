package search

import (
	"strings"
	"time"
	"unicode"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/internal/when"
)

// Ranking signals of conversation memories.
//
// A memory written from a conversation says who spoke (index.AttrSpeaker)
// and when (index.AttrOccurredAt). A question about it often names both:
// "What did Caroline research?", "What did Maria donate in December 2023?".
// Search multiplies the score of such a memory by 1+SpeakerWeight when the
// query names its speaker, and by 1+TimeWeight when it happened within a time
// the query names (package when: "on 7 July, 2023", "in May 2023", "last
// week", resolved against Options.Now), or up to TimeSlack after it: people
// talk about what they did a few days later. The factors apply to the
// candidates of the mode (the fused pool in hybrid search, a pool of
// CandidatePool BM25 or vector matches otherwise) before they are cut to
// TopK, so a memory below the top can rise into it. They are multiplicative,
// so they do not depend on the scale of the mode's scores, and a memory that
// matches nothing else gains nothing. Records without the attributes are
// never affected.
//
// The weights were chosen on LoCoMo's development conversations with
// leave-one-conversation-out checks (docs/evaluation.md).
const (
	DefaultSpeakerWeight  = 0.2
	DefaultTimeWeight     = 0.5
	DefaultQuestionWeight = 0.5
	DefaultTimeSlack      = 7 * 24 * time.Hour
)

// recall holds one query's memory signals.
type recall struct {
	words     map[string]bool // the query's words, lower-cased, without possessive 's
	capitals  []string        // words written with a capital letter, lower-cased
	ranges    []when.Range
	speakerW  float64
	timeW     float64
	questionW float64
	slack     time.Duration
	named     map[string]bool // speaker -> named by the query (cache)
	self      bool            // the query is in the first person: it names the user (index.AttrRole)
}

// newRecall returns the signals of query under o, or nil when none can
// apply: memories are not searched, or both weights are off.
func newRecall(query string, o *Options) *recall {
	memories := false
	for _, t := range o.DocTypes {
		memories = memories || t == index.DocMemory
	}
	if !memories || o.SpeakerWeight <= 0 && o.TimeWeight <= 0 && o.QuestionWeight <= 0 {
		return nil
	}
	rc := &recall{
		words: map[string]bool{}, named: map[string]bool{},
		speakerW: max(0, o.SpeakerWeight), timeW: max(0, o.TimeWeight), questionW: max(0, o.QuestionWeight), slack: o.TimeSlack,
	}
	if rc.timeW > 0 {
		now := o.Now
		if now.IsZero() {
			now = time.Now()
		}
		rc.ranges = when.Find(query, now)
	}
	if rc.speakerW > 0 {
		for i, w := range strings.FieldsFunc(query, notWordRune) {
			w = strings.TrimSuffix(strings.TrimSuffix(w, "'s"), "\u2019s")
			low := strings.ToLower(w)
			rc.words[low] = true
			if firstPerson[strings.ReplaceAll(low, "\u2019", "'")] {
				rc.self = true
			}
			// A capital at the start says nothing ("How", "What").
			if r := []rune(w); i > 0 && len(r) >= 3 && unicode.IsUpper(r[0]) {
				rc.capitals = append(rc.capitals, low)
			}
		}
	}
	return rc
}

func notWordRune(r rune) bool {
	return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '\u2019' && r != '-'
}

// factor is the boost of record r and the signals that gave it.
func (rc *recall) factor(r *index.Record) (float64, []string) {
	f := 1.0
	var why []string
	if rc.speakerW > 0 && rc.speaks(r) {
		f *= 1 + rc.speakerW
		why = append(why, "speaker")
	}
	if len(rc.ranges) > 0 {
		if at := r.Attrs[index.AttrOccurredAt]; at != "" {
			if t, err := time.Parse(time.RFC3339, at); err == nil && rc.inRange(t) {
				f *= 1 + rc.timeW
				why = append(why, "time")
			}
		}
	}
	if rc.questionW > 0 && r.Attrs[index.AttrSpeaker] != "" && asksOnly(r.Content) {
		f /= 1 + rc.questionW
		why = append(why, "question")
	}
	return f, why
}

// isQuestion reports whether a turn's text ends with a question mark.
func isQuestion(text string) bool {
	text = strings.TrimRightFunc(text, unicode.IsSpace)
	return strings.HasSuffix(text, "?") || strings.HasSuffix(text, "\uff1f")
}

// asksOnly reports whether a turn asks without telling anything of its
// speaker: its text ends with a question and has no word in the first
// person ("I", "my", "we", ...). "What did you paint?" only asks; "Can you
// help me move my Flask app to Postgres?" also says what its speaker uses.
func asksOnly(text string) bool {
	if !isQuestion(text) {
		return false
	}
	for _, w := range strings.FieldsFunc(text, notWordRune) {
		if firstPerson[strings.ToLower(strings.ReplaceAll(w, "\u2019", "'"))] {
			return false
		}
	}
	return true
}

// firstPerson are English words in the first person, with their usual
// contractions.
var firstPerson = map[string]bool{
	"i": true, "i'm": true, "i've": true, "i'd": true, "i'll": true, "me": true, "my": true, "mine": true, "myself": true,
	"we": true, "we're": true, "we've": true, "we'd": true, "we'll": true, "us": true, "our": true, "ours": true, "ourselves": true,
}

// speaks reports whether the query names the speaker of memory r: by name,
// or in the first person when r is the user's (see index.AttrRole).
func (rc *recall) speaks(r *index.Record) bool {
	sp := r.Attrs[index.AttrSpeaker]
	if rc.self {
		role := r.Attrs[index.AttrRole]
		if strings.EqualFold(role, "user") || role == "" && strings.EqualFold(strings.TrimSpace(sp), "user") {
			return true
		}
	}
	return sp != "" && rc.namesSpeaker(sp)
}

// namesSpeaker reports whether the query names speaker: one of its names as
// a word, or a capitalised word of three letters or more that begins one
// ("Mel" for Melanie).
func (rc *recall) namesSpeaker(speaker string) bool {
	if v, ok := rc.named[speaker]; ok {
		return v
	}
	named := false
	for _, n := range strings.FieldsFunc(strings.ToLower(speaker), notWordRune) {
		if rc.words[n] {
			named = true
			break
		}
		for _, c := range rc.capitals {
			if strings.HasPrefix(n, c) {
				named = true
				break
			}
		}
	}
	rc.named[speaker] = named
	return named
}

func (rc *recall) inRange(t time.Time) bool {
	for _, r := range rc.ranges {
		if !t.Before(r.From) && t.Before(r.To.Add(rc.slack)) {
			return true
		}
	}
	return false
}

// boost applies the signals to results (in place) and reorders them; it
// returns them for convenience.
func (rc *recall) boost(rs []Result) []Result {
	if rc == nil {
		return rs
	}
	for i := range rs {
		f, why := rc.factor(&rs[i].Record)
		if f == 1 {
			continue
		}
		rs[i].Score *= f
		rs[i].Explanation.Fused = rs[i].Score
		rs[i].Explanation.Boost, rs[i].Explanation.Signals = f, why
	}
	sortResults(rs)
	return rs
}
