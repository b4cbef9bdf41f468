package main

import (
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"
	"github.com/spf13/cobra"

	"github.com/ragmem/ragmem/rag"
	"github.com/ragmem/ragmem/search"
)

// defaultSystemPrompt is the system prompt shown with --json: a plain
// assistant prompt plus the one standing rule about reference data.
const defaultSystemPrompt = "You are a helpful assistant."

func newContextCmd(g *globals) *cobra.Command {
	var model, mode, system, filter, source string
	var limit, sysTokens, reserve, topK, base int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "context [flags] QUERY",
		Short: "Print the knowledge-context message an agent would receive for QUERY",
		Long: "Build the <knowledge_context> block for QUERY within the token budget of --model's context\n" +
			"window and print it as the separate untrusted-data chat message. --json prints the whole chat\n" +
			"context with its tokens, budgets and sources, and the chat messages array [system, context, user].",
		Example: "  ragmem context --model gpt-4o \"how do I install on linux?\"\n  ragmem context --json --context-limit 8192 \"what is rrf?\"",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// A flag not given stays zero: the engine decides (the same
			// defaults as POST /v1/context and the get_context tool).
			if cmd.Flags().Changed("mode") {
				if _, err := search.ParseMode(mode); err != nil {
					return err
				}
			} else {
				mode = ""
			}
			query := strings.Join(args, " ")
			where, err := searchFilter(filter, source)
			if err != nil {
				return err
			}
			return g.withStore(cmd.Context(), func(st rag.Memory) error {
				sys := system + "\n\n" + rag.ReferenceRule
				c, err := st.BuildContext(cmd.Context(), rag.ContextRequest{
					Query: query, Model: model, ModelContextLimit: limit, SystemPrompt: sys, SystemPromptTokens: sysTokens,
					ResponseReserve: reserve, Filter: where.String(), Mode: mode, TopK: topK, KnowledgeBudget: base,
				})
				if err != nil {
					return err
				}
				if c.Degraded != "" {
					fmt.Fprintf(g.Stderr, "ragmem: knowledge retrieved by %s search: %s\n", c.Mode, c.Degraded)
				}
				if asJSON {
					msgs := []rag.MessageJSON{{Role: openai.ChatMessageRoleSystem, Content: sys}}
					if !c.Empty {
						msgs = append(msgs, c.Message)
					}
					msgs = append(msgs, rag.MessageJSON{Role: openai.ChatMessageRoleUser, Content: query})
					return writeJSON(g.stdout, struct {
						*rag.ContextJSON
						Messages []rag.MessageJSON `json:"messages"` // system, context (when not empty), user: ready to send
					}{c, msgs})
				}
				if c.Empty {
					fmt.Fprintln(g.Stderr, "ragmem: no preferences and nothing relevant in the memory for this query")
					return nil
				}
				fmt.Fprintln(g.stdout, c.Message.Content)
				fmt.Fprintf(g.Stderr, "\n# role=%s; %s; %d tokens (profile %d, knowledge %d) of a %d-token knowledge budget\n",
					c.Message.Role, c.Summary, c.Tokens.Total, c.Tokens.Profile, c.Tokens.Knowledge, c.Budgets.KnowledgeBudget)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&model, "model", "", "chat model: chooses the tokenizer and the default context limit (default: the engine's, an 8192-token window)")
	f.IntVar(&limit, "context-limit", 0, "model context window in tokens (default: known for the model, else 8192)")
	f.StringVar(&system, "system-prompt", defaultSystemPrompt, "system prompt whose tokens are deducted")
	f.IntVar(&sysTokens, "system-prompt-tokens", 0, "system prompt tokens (default: counted from --system-prompt)")
	f.IntVar(&reserve, "response-reserve", 0, "tokens reserved for the answer (default 1024)")
	f.IntVar(&topK, "top-k", 0, "chunks retrieved (default 5)")
	f.IntVar(&base, "knowledge-budget", 0, "base knowledge budget in tokens (default 2000)")
	f.StringVar(&mode, "mode", "hybrid", "search mode: hybrid, vector or fulltext")
	f.StringVar(&filter, "filter", "", "only use chunks that match this filter expression (see ragmem search --help)")
	f.StringVar(&source, "source", "", "only use this source: a URL, a file, or a folder or URL ending in / (every source under it)")
	f.BoolVar(&asJSON, "json", false, "print JSON: the block, its tokens, budgets and sources, and the chat messages array")
	return cmd
}
