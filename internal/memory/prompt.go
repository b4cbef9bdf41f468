package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ragmem/ragmem/rag"
)

// previewChars is the length of a memory's preview in the prompt (seed
// 000).
const previewChars = 500

// Preview returns what the prompt shows of a body: the text before the next first-level heading
// when that heading starts within the first 500 characters, else the first
// 500 characters followed by "..." when the body is longer. Characters are
// Unicode code points, so a preview never splits one.
func Preview(body string) string {
	if i := strings.Index(body, "\n# "); i > 0 && utf8.RuneCountInString(body[:i]) < previewChars {
		return strings.TrimRight(body[:i], " \t\n")
	}
	if utf8.RuneCountInString(body) <= previewChars {
		return body
	}
	n := 0
	for i := range body {
		if n == previewChars {
			return body[:i] + "..."
		}
		n++
	}
	return body
}

// Injected is a selected memory with the body it is shown with.
type Injected struct {
	Match
	// Body is the body of the memory's current entry: the latest that is
	// not a merged restatement (appended entries update a memory, so the
	// latest says most).
	Body string `json:"body"`
	// Replaced are the memories this one superseded: the prompt says what
	// changed and when.
	Replaced []Replaced `json:"replaced,omitempty"`
	// ReplacedBy is the memory that superseded this one (a superseded
	// memory is injected only when asked for by time or history).
	ReplacedBy *Replaced `json:"replacedBy,omitempty"`
	// Conflicts are memories this one may contradict, or that may
	// contradict it, flagged without a decision (no model was there to
	// judge): the prompt names them.
	Conflicts []Replaced `json:"conflicts,omitempty"`
}

// Replaced is a memory related to an injected one by supersession or a
// flagged conflict.
type Replaced struct {
	Slug      string    `json:"slug"`
	Title     string    `json:"title"`
	ValidFrom time.Time `json:"validFrom,omitzero"`
	ValidTo   time.Time `json:"validTo,omitzero"`
	// Preview is the start of its current entry (at most 160 characters).
	Preview string `json:"preview"`
}

// CurrentEntry returns the entry a memory is shown with: the latest that is
// not a merged restatement (the latest when all are).
func CurrentEntry(es []Entry) Entry {
	for i := len(es) - 1; i >= 0; i-- {
		if !es[i].Merged {
			return es[i]
		}
	}
	return es[len(es)-1]
}

// Load reads the bodies of selected memories, with what they replaced and
// flagged conflicts, and counts one injection of each (feedback.go): Load
// is what delivers memories to a prompt. A memory removed since it was
// selected is left out. A failure to count is logged, not returned.
func (s *Store) Load(ctx context.Context, ms []Match) ([]Injected, error) {
	out := make([]Injected, 0, len(ms))
	all := s.view()
	bySlug := make(map[string]*Memory, len(all))
	for i := range all {
		bySlug[all[i].Slug] = &all[i]
	}
	related := func(m *Memory) Replaced {
		r := Replaced{Slug: m.Slug, Title: m.Title, ValidFrom: m.ValidFrom, ValidTo: m.ValidTo}
		if es, err := s.Entries(ctx, m.Slug); err == nil {
			r.Preview = clipRunes(strings.Join(strings.Fields(CurrentEntry(es).Body), " "), 160)
		}
		return r
	}
	var slugs []string
	for _, m := range ms {
		es, err := s.Entries(ctx, m.Memory.Slug)
		if err != nil {
			if isNotFound(err) {
				continue
			}
			return nil, err
		}
		in := Injected{Match: m, Body: CurrentEntry(es).Body}
		for i := range all {
			o := &all[i]
			switch {
			case o.SupersededBy == m.Memory.Slug:
				in.Replaced = append(in.Replaced, related(o))
			case !o.Superseded() && o.Slug != m.Memory.Slug && m.Memory.SupersededBy != o.Slug &&
				(slices.Contains(o.Conflicts, m.Memory.Slug) || slices.Contains(m.Memory.Conflicts, o.Slug)):
				in.Conflicts = append(in.Conflicts, related(o))
			}
		}
		if by := bySlug[m.Memory.SupersededBy]; by != nil {
			r := related(by)
			in.ReplacedBy = &r
		}
		out = append(out, in)
		slugs = append(slugs, m.Memory.Slug)
	}
	if err := s.RecordInjected(ctx, slugs); err != nil {
		s.o.Logger.Warn("memory: counting the injection failed", "err", err)
	}
	return out, nil
}

func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "..."
}

// Heading opens the memory section.
const Heading = "## Background Knowledge from Previous Runs"

// Intro follows the heading.
const Intro = "The following information was learned from prior runs and may be relevant:"

// CiteHint follows the intro: it asks the model to cite the memories it
// relies on by their ids, which feed the feedback loop (Store.Cite).
const CiteHint = "When your answer relies on one of these memories, cite its id, like [memory:some-slug]."

// FormatMemory renders one memory: "### title" with the
// memory's id to cite, its importance and discoverer in italics, and the
// preview of its body. Lines in italics follow when they apply: a negative
// memory's warning, when it happened, what it replaced and when, that it
// was itself replaced, flagged conflicts, confirmations and updates.
func FormatMemory(in Injected) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s %s\n", in.Memory.Title, CiteID(in.Memory.Slug))
	fmt.Fprintf(&b, "*Importance: %s*\n", strings.ToUpper(in.Memory.Importance.String()))
	by := in.Memory.DiscoveredBy
	if len(in.Memory.Discoverers) > 1 {
		by = strings.Join(in.Memory.Discoverers, ", ")
	}
	if by == "" {
		by = "unknown"
	}
	fmt.Fprintf(&b, "*Discovered by: %s*\n", by)
	if in.Memory.Negative {
		b.WriteString("*DON'T: this memory is a practice to avoid*\n")
	}
	if !in.Memory.OccurredAt.IsZero() {
		fmt.Fprintf(&b, "*Happened: %s*\n", dateOf(in.Memory.OccurredAt))
	}
	for _, r := range in.Replaced {
		fmt.Fprintf(&b, "*Changed on %s: this replaces %q, held since %s, which said: %s*\n", dateOf(r.ValidTo), r.Title, dateOf(r.ValidFrom), r.Preview)
	}
	if r := in.ReplacedBy; r != nil {
		fmt.Fprintf(&b, "*Superseded on %s by %q %s; shown for history, no longer current*\n", dateOf(in.Memory.ValidTo), r.Title, CiteID(r.Slug))
	}
	for _, r := range in.Conflicts {
		fmt.Fprintf(&b, "*May contradict %q %s (since %s); not resolved, check before relying on either*\n", r.Title, CiteID(r.Slug), dateOf(r.ValidFrom))
	}
	if in.Memory.Confirmations > 0 {
		fmt.Fprintf(&b, "*Confirmed in other words: %d more time(s)*\n", in.Memory.Confirmations)
	}
	if updates := in.Memory.Entries - 1 - in.Memory.Confirmations - in.Memory.links; updates > 0 {
		fmt.Fprintf(&b, "*Updated %d times; the latest entry is shown*\n", updates)
	}
	b.WriteString("\n")
	b.WriteString(Preview(in.Body))
	return b.String()
}

// FormatForPrompt renders the selected memories as a Markdown section under
// Heading ("" when there are none). The text is not escaped: to send it to
// a model use ContextMessage, which marks it as untrusted data.
func FormatForPrompt(ins []Injected) string {
	if len(ins) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(Heading + "\n\n" + Intro + "\n" + CiteHint + "\n\n")
	for _, in := range ins {
		b.WriteString(FormatMemory(in))
		b.WriteString("\n\n")
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// contextBlock wraps rendered memory text (Markdown from FormatForPrompt,
// and rule lines) in the knowledge-context markup, escaped with
// rag.EscapeText so that no memory can close the block or add tags:
//
//	<knowledge_context>
//	<agent_memory>
//	...
//	</agent_memory>
//	</knowledge_context>
//
// It returns "" for empty text.
func contextBlock(text string) string {
	if strings.TrimSpace(text) == "" {
		return ""
	}
	return "<knowledge_context>\n<agent_memory>\n" + rag.EscapeText(strings.TrimRight(text, "\n")) + "\n</agent_memory>\n</knowledge_context>"
}

// ContextMessage is the chat message that delivers memories to a model: an
// assistant message starting with rag.UntrustedPrefix, holding text (Markdown
// from FormatForPrompt, and rule lines) escaped with rag.EscapeText inside
// <knowledge_context><agent_memory>...</agent_memory></knowledge_context>,
// so that no memory can close the block or add tags. It goes between the system prompt and the user's
// message, never into the system prompt; the system prompt carries
// rag.ReferenceRule, which covers it. The message is empty when text is.
func ContextMessage(text string) openai.ChatCompletionMessage {
	block := contextBlock(text)
	if block == "" {
		return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant}
	}
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: rag.UntrustedPrefix + "\n" + block}
}

// dateOf formats a time as its date (UTC), or "an unknown date".
func dateOf(t time.Time) string {
	if t.IsZero() {
		return "an unknown date"
	}
	return t.UTC().Format("2006-01-02")
}
