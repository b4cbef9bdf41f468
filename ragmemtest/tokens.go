package ragmemtest

import (
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/ragmem/ragmem/budget"
)

var (
	oracleOnce sync.Once
	oracleMu   sync.Mutex
	oracles    = map[string]*oracle{}
)

// oracle counts tokens with tiktoken-go.
type oracle struct {
	mu sync.Mutex
	tk *tiktoken.Tiktoken
}

func (o *oracle) Count(s string) int {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.tk.EncodeOrdinary(s))
}

// TokenOracle returns a budget.Counter that counts with tiktoken-go itself
// (its offline BPE files), not with ragmem's own tokenizer: an independent
// oracle for the token counts the budget properties check. It uses the
// encoding tiktoken-go assigns to model, and cl100k_base for models it does
// not know (ragmem's conservative default). Special-token text such as
// "<|endoftext|>" counts as ordinary text, as in ragmem. The two tokenizers
// agree on every text without runs of more than 256 bytes of one character
// class (ragmem cuts such runs; see internal/tokens), which generated text
// never has. The counter is safe for concurrent use, and much slower than
// ragmem's.
func TokenOracle(model string) budget.Counter {
	oracleOnce.Do(func() { tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader()) })
	oracleMu.Lock()
	defer oracleMu.Unlock()
	if o, ok := oracles[model]; ok {
		return o
	}
	tk, err := tiktoken.EncodingForModel(model)
	if err != nil {
		if tk, err = tiktoken.GetEncoding("cl100k_base"); err != nil {
			panic("ragmemtest: tiktoken-go cannot load cl100k_base offline: " + err.Error())
		}
	}
	o := &oracle{tk: tk}
	oracles[model] = o
	return o
}
