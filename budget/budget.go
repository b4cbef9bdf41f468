// Package budget splits a model's context window into token budgets and fits
// retrieved text into them.
//
// CalculateTokenBudgets divides what is left of the context window after the
// system prompt, the user's query and the reserved response into a budget for
// the user profile, a budget for retrieved knowledge and the remainder
// (Property 4 of docs/spec.md: knowledge = min(base, (available − preferences) ×
// 0.3)). Select fills the knowledge budget with the highest-scoring items first
// and never lets a lower-scoring item in while a higher-scoring one is left out
// (Property 7); the one item that does not fit whole is cut at a sentence
// boundary by TruncateAtSentence (Property 8).
//
// All arithmetic is exact integer arithmetic: no floating-point rounding and
// no overflow for any int inputs. Token counts come from a Counter, normally a
// tiktoken encoding from internal/tokens.
package budget

import (
	"github.com/ragmem/ragmem/internal/tokens"
)

// Counter counts the tokens of a text. *tokens.Encoding satisfies it.
// Implementations used with this package must be safe for concurrent use if
// the functions of this package are called concurrently with the same Counter.
type Counter interface{ Count(string) int }

// CounterForModel returns the tiktoken encoding for a chat model name (see
// tokens.EncodingNameForModel; unknown models get cl100k_base). The result is
// shared and safe for concurrent use.
func CounterForModel(model string) Counter { return tokens.ForModel(model) }

// Defaults used by CalculateTokenBudgets for zero Config fields.
const (
	DefaultBaseBudget       = 2000
	DefaultPreferenceBudget = 500
)

// Config holds the two configured budgets. The zero value means the defaults.
// A Config is a plain value, safe to copy and share.
type Config struct {
	// BaseBudget caps the knowledge budget. 0 means DefaultBaseBudget (2000);
	// a negative value caps it at 0 (no knowledge is included).
	BaseBudget int
	// PreferenceBudget is the number of tokens reserved for the user profile.
	// 0 means DefaultPreferenceBudget (500); a negative value means 0.
	PreferenceBudget int
}

// Budgets is the split of a context window computed by CalculateTokenBudgets.
// Every field is >= 0 and PreferenceBudget + KnowledgeBudget + Remaining ==
// TotalAvailable.
type Budgets struct {
	// TotalAvailable is modelContextLimit − systemPromptTokens −
	// userQueryTokens − responseReserve, clamped to 0 when the prompt and
	// reserve already fill the window.
	TotalAvailable int `json:"totalAvailable"`
	// PreferenceBudget is the configured preference budget clamped to
	// TotalAvailable: the profile can never claim more than there is.
	PreferenceBudget int `json:"preference"`
	// KnowledgeBudget is min(BaseBudget, floor((TotalAvailable −
	// PreferenceBudget) × 0.3)), and 0 when that is negative.
	KnowledgeBudget int `json:"knowledge"`
	// Remaining is what is left for everything else: TotalAvailable −
	// PreferenceBudget − KnowledgeBudget.
	Remaining int `json:"remaining"`
}

// CalculateTokenBudgets splits a model's context window (Property 4).
//
// Token counts are never negative, so negative arguments are treated as 0.
// TotalAvailable is clamped to 0, PreferenceBudget to [0, TotalAvailable],
// and KnowledgeBudget is CalculateKnowledgeBudget(TotalAvailable,
// PreferenceBudget, BaseBudget) with the Config defaults applied. For example
// a 128000-token window with a 1500-token system prompt, a 200-token query and
// a 4000-token response reserve leaves 122300 tokens: 500 for preferences,
// min(2000, 36540) = 2000 for knowledge and 119800 remaining.
func CalculateTokenBudgets(modelContextLimit, systemPromptTokens, userQueryTokens, responseReserve int, cfg Config) Budgets {
	base := cfg.BaseBudget
	if base == 0 {
		base = DefaultBaseBudget
	}
	pref := cfg.PreferenceBudget
	switch {
	case pref == 0:
		pref = DefaultPreferenceBudget
	case pref < 0:
		pref = 0
	}

	// Subtract one non-negative amount at a time from a non-negative total,
	// clamping at 0: equal to max(0, limit − s − q − r) and never overflows.
	total := nonNeg(modelContextLimit)
	for _, n := range [...]int{systemPromptTokens, userQueryTokens, responseReserve} {
		total = max(0, total-nonNeg(n))
	}
	pref = min(pref, total)
	knowledge := CalculateKnowledgeBudget(total, pref, base)
	return Budgets{
		TotalAvailable:   total,
		PreferenceBudget: pref,
		KnowledgeBudget:  knowledge,
		Remaining:        total - pref - knowledge,
	}
}

// CalculateKnowledgeBudget returns max(0, min(baseBudget,
// floor((totalAvailable − preferenceBudget) × 0.3))), computed exactly with
// integers. Negative totalAvailable and preferenceBudget are treated as 0; a
// preferenceBudget larger than totalAvailable leaves nothing (0). Unlike
// Config, a baseBudget of 0 is taken literally and yields 0.
func CalculateKnowledgeBudget(totalAvailable, preferenceBudget, baseBudget int) int {
	total := nonNeg(totalAvailable)
	pref := min(nonNeg(preferenceBudget), total)
	x := total - pref // 0 <= x <= total: no overflow
	// floor(x*3/10) without computing x*3, which could overflow.
	k := (x/10)*3 + (x%10)*3/10
	return max(0, min(baseBudget, k))
}

func nonNeg(n int) int { return max(0, n) }
