package memory

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ragmem/ragmem/rag"
)

// previewChars is the length of a memory's preview in the prompt (seed
// 000).
const previewChars = 500

// Preview returns what the prompt shows of a body (seed 000,
// formatMemoriesForPrompt): the text before the next first-level heading
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

// Injected is a selected memory with the body it is shown with. It is a
// plain value.
type Injected struct {
	Match
	// Body is the body of the memory's latest entry (appended entries
	// update a memory, so the latest says most).
	Body string `json:"body"`
}

// Load reads the bodies of selected memories. A memory removed since it was
// selected is left out.
func (s *Store) Load(ctx context.Context, ms []Match) ([]Injected, error) {
	out := make([]Injected, 0, len(ms))
	for _, m := range ms {
		es, err := s.Entries(ctx, m.Memory.Slug)
		if err != nil {
			if isNotFound(err) {
				continue
			}
			return nil, err
		}
		out = append(out, Injected{Match: m, Body: es[len(es)-1].Body})
	}
	return out, nil
}

// Heading opens the memory section (seed 000).
const Heading = "## Background Knowledge from Previous Runs"

// Intro follows the heading (seed 000).
const Intro = "The following information was learned from prior runs and may be relevant:"

// FormatMemory renders one memory as the seed does: "### title", its
// importance and discoverer in italics, and the preview of its body.
func FormatMemory(in Injected) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n", in.Memory.Title)
	fmt.Fprintf(&b, "*Importance: %s*\n", strings.ToUpper(in.Memory.Importance.String()))
	by := in.Memory.DiscoveredBy
	if len(in.Memory.Discoverers) > 1 {
		by = strings.Join(in.Memory.Discoverers, ", ")
	}
	if by == "" {
		by = "unknown"
	}
	fmt.Fprintf(&b, "*Discovered by: %s*\n", by)
	if in.Memory.Entries > 1 {
		fmt.Fprintf(&b, "*Updated %d times; the latest entry is shown*\n", in.Memory.Entries-1)
	}
	b.WriteString("\n")
	b.WriteString(Preview(in.Body))
	return b.String()
}

// FormatForPrompt renders the selected memories as the seed's Markdown
// section ("" when there are none). The text is not escaped: to send it to
// a model use ContextMessage, which marks it as untrusted data.
func FormatForPrompt(ins []Injected) string {
	if len(ins) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(Heading + "\n\n" + Intro + "\n\n")
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
