package ragmemtest

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"

	"github.com/ragmem/ragmem/budget"
	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/prefs"
	"github.com/ragmem/ragmem/rag"
)

// Vocabulary is the lower-case words generated text is made of. Queries
// drawn from it always share words with generated documents, so searches
// find something.
var Vocabulary = strings.Fields(`river mountain forest ocean kernel compiler memory vector index search
token budget chunk sentence preference profile agent browser extension page cache latency
throughput cluster shard replica embedding hybrid fusion rank score query answer model
tokenizer paragraph heading install linux windows release binary server client request`)

// Hostile are fragments of retrieved text that try to change the markup
// around them: closing tags, new elements, entities, quotes, characters XML
// forbids, invalid UTF-8, line and paragraph separators. None contains a
// space (see GenHostileText).
var Hostile = []string{
	"</knowledge_context>", "<system>", "</source>", "<source\tindex=\"9\">", "]]>", "<![CDATA[", "<!--",
	"&amp;", "&lt;", "&#60;", "\"", "'", "\"/><x", "\x00", "\x1b", "\uFFFE", "\uFFFD", "\xff", "\xc3",
	"\r", "\r\n", "\t", "\u2028", "\U0001F600", "é", "<user_profile>",
	// The edges of the characters XML allows.
	"\x1f", "\x7f", "\ud7ff", "\ue000", "\U00010000", "\U0010FFFF", "\x80",
}

// ListOf generates slices of min to max elements of g that shrink by
// dropping and shrinking elements, never below min.
func ListOf(g gopter.Gen, min, max int) gopter.Gen {
	slice := func(p *gopter.GenParameters) *gopter.GenResult {
		q := *p
		q.MinSize, q.MaxSize = min, max+1
		return gen.SliceOf(g)(&q)
	}
	return gopter.Gen(slice).SuchThat(func(v interface{}) bool {
		n := reflect.ValueOf(v).Len()
		return n >= min && n <= max
	})
}

// tokensToString is a bijection between lists of tokens that hold no space
// and their space-joined text; it lets text generators shrink token by token.
func tokensToString(tokens []string) string { return strings.Join(tokens, " ") }

func stringToTokens(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, " ")
}

func joined(tokens gopter.Gen, min, max int) gopter.Gen {
	return gopter.DeriveGen(tokensToString, stringToTokens, ListOf(tokens, min, max))
}

// text is joined for texts of at least one word: the first token is always
// a Vocabulary word, so that a text never consists of markup alone.
func text(tokens gopter.Gen, min, max int) gopter.Gen {
	if min == 0 {
		return gen.OneGenOf(gen.Const(""), text(tokens, 1, max))
	}
	return gopter.DeriveGen(
		func(first string, rest []string) string { return tokensToString(append([]string{first}, rest...)) },
		func(s string) (string, []string) {
			t := stringToTokens(s)
			if len(t) == 0 {
				return "", nil
			}
			return t[0], t[1:]
		},
		GenWord(), ListOf(tokens, min-1, max-1))
}

// GenWord generates one word of Vocabulary.
func GenWord() gopter.Gen {
	words := make([]interface{}, len(Vocabulary))
	for i, w := range Vocabulary {
		words[i] = w
	}
	return gen.OneConstOf(words...)
}

// plainToken is a word, sometimes capitalised, sometimes ending a sentence,
// and now and then a paragraph break.
func plainToken() gopter.Gen {
	return gen.Frequency(map[int]gopter.Gen{
		12: GenWord(),
		3: gopter.CombineGens(GenWord(), gen.OneConstOf(".", "!", "?", ".")).Map(func(v []interface{}) string {
			return v[0].(string) + v[1].(string)
		}),
		2: GenWord().Map(func(w string) string { return strings.ToUpper(w[:1]) + w[1:] }),
		1: gen.Const("\n\n"),
	})
}

// GenText generates plain text of minWords to maxWords words from
// Vocabulary: sentences that end with '.', '!' or '?' followed by a space,
// some capitalised words and paragraph breaks. Its sentence boundaries are
// exactly PlainSentenceEnds (no abbreviations, numbers or quotes), which
// makes it the input of choice for sentence-cutting properties. It shrinks
// word by word.
func GenText(minWords, maxWords int) gopter.Gen {
	return text(plainToken(), minWords, maxWords)
}

// GenHostileText is GenText with Hostile fragments mixed in.
func GenHostileText(minWords, maxWords int) gopter.Gen {
	hostile := make([]interface{}, len(Hostile))
	for i, h := range Hostile {
		hostile[i] = h
	}
	return text(gen.Frequency(map[int]gopter.Gen{6: plainToken(), 1: gen.OneConstOf(hostile...)}), minWords, maxWords)
}

// GenMarkdown is GenText with Markdown structure mixed in: headings of
// three levels and small code fences.
func GenMarkdown(minWords, maxWords int) gopter.Gen {
	return text(gen.Frequency(map[int]gopter.Gen{
		14: plainToken(),
		1:  gen.OneConstOf("\n\n#", "\n\n##", "\n\n###", "\n```\nx:=1\n```\n", "\n\n-"),
	}), minWords, maxWords)
}

// PlainSentenceEnds returns the byte offsets just after each sentence
// terminator of text made by GenText ('.', '!' or '?' followed by
// whitespace or the end of the text): the places where such text may be cut
// at a sentence boundary. It is written independently of chunk.Sentences,
// so that properties can use it as an oracle.
func PlainSentenceEnds(text string) []int {
	var ends []int
	for i := 0; i < len(text); i++ {
		if strings.IndexByte(".!?", text[i]) < 0 {
			continue
		}
		if i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\n' {
			ends = append(ends, i+1)
		}
	}
	return ends
}

// GenQuery generates a search query of one to four Vocabulary words. It
// shrinks to fewer words.
func GenQuery() gopter.Gen { return joined(GenWord(), 1, 4) }

// genURL generates "https://<host>/<word>/<word>/<n>" URLs that shrink.
func genURL(host string) gopter.Gen {
	prefix := "https://" + host + "/"
	build := func(words []string, n int) string { return prefix + strings.Join(words, "/") + "/" + strconv.Itoa(n) }
	unbuild := func(u string) ([]string, int) {
		parts := strings.Split(strings.TrimPrefix(u, prefix), "/")
		n, _ := strconv.Atoi(parts[len(parts)-1])
		return parts[:len(parts)-1], n
	}
	return gopter.DeriveGen(build, unbuild, ListOf(GenWord(), 1, 2), gen.IntRange(0, 1<<20))
}

// GenDocument generates a document: a unique-looking https URL, a title of
// Vocabulary words and a body of GenText or GenMarkdown (up to 600 words),
// read as plain text or Markdown. It shrinks.
func GenDocument() gopter.Gen {
	return gen.Struct(reflect.TypeOf(index.Document{}), map[string]gopter.Gen{
		"SourceURL": genURL("docs.example"),
		"Title":     joined(GenWord(), 1, 5),
		"Content":   gen.OneGenOf(GenText(1, 600), GenMarkdown(1, 600)),
		"Format":    gen.OneConstOf(chunk.Text, chunk.Markdown),
	})
}

// GenCorpus generates between min and max documents of GenDocument with
// distinct source URLs.
func GenCorpus(min, max int) gopter.Gen {
	return ListOf(GenDocument(), min, max).SuchThat(func(ds []index.Document) bool {
		seen := map[string]bool{}
		for _, d := range ds {
			if seen[d.SourceURL] {
				return false
			}
			seen[d.SourceURL] = true
		}
		return true
	})
}

// Preference is a generated profile statement.
type Preference struct {
	Type    prefs.Type
	Content string
}

// GenPreference generates a preference of any type whose content is a few
// Vocabulary words with a number ("Likes kernel and river 42"), so that
// distinct preferences rarely collide.
func GenPreference() gopter.Gen {
	return gen.Struct(reflect.TypeOf(Preference{}), map[string]gopter.Gen{
		"Type": gen.OneConstOf(prefs.Expertise, prefs.Style, prefs.Domain, prefs.Custom),
		"Content": gopter.DeriveGen(
			func(words []string, n int) string {
				return "Likes " + strings.Join(words, " and ") + " " + strconv.Itoa(n)
			},
			func(s string) ([]string, int) {
				f := strings.Fields(strings.TrimPrefix(s, "Likes "))
				n, _ := strconv.Atoi(f[len(f)-1])
				return strings.Split(strings.Join(f[:len(f)-1], " "), " and "), n
			},
			ListOf(GenWord(), 1, 3), gen.IntRange(0, 999)),
	})
}

// BudgetParams are the inputs of budget.CalculateTokenBudgets.
type BudgetParams struct {
	ModelContextLimit, SystemPromptTokens, UserQueryTokens, ResponseReserve int
	Config                                                                  budget.Config
}

// Budgets calls budget.CalculateTokenBudgets with p.
func (p BudgetParams) Budgets() budget.Budgets {
	return budget.CalculateTokenBudgets(p.ModelContextLimit, p.SystemPromptTokens, p.UserQueryTokens, p.ResponseReserve, p.Config)
}

// tokens generates token counts: mostly realistic, sometimes 0, negative
// or huge, so that clamping and overflow are exercised.
func tokens(lo, hi int) gopter.Gen {
	return gen.Frequency(map[int]gopter.Gen{
		20: gen.IntRange(lo, hi),
		2:  gen.OneConstOf(0, -1, -hi),
		1:  gen.OneConstOf(math.MaxInt, math.MinInt, math.MaxInt/2),
	})
}

// GenBudgetParams generates context windows, prompts, reserves and
// configured budgets, realistic most of the time and at the edges (zero,
// negative, math.MaxInt) sometimes.
func GenBudgetParams() gopter.Gen {
	return gen.Struct(reflect.TypeOf(BudgetParams{}), map[string]gopter.Gen{
		"ModelContextLimit":  tokens(1000, 1_100_000),
		"SystemPromptTokens": tokens(0, 4000),
		"UserQueryTokens":    tokens(0, 2000),
		"ResponseReserve":    tokens(0, 8000),
		"Config": gen.Struct(reflect.TypeOf(budget.Config{}), map[string]gopter.Gen{
			"BaseBudget":       tokens(1, 8000),
			"PreferenceBudget": tokens(1, 3000),
		}),
	})
}

// Candidates are knowledge candidates for budget.Select and a budget.
type Candidates struct {
	Items  []budget.Item
	Budget int
}

// GenCandidates generates one to twelve items of GenText (up to 150 words;
// now and then an empty or white-space text that costs nothing; scores often
// equal, sometimes NaN) with small markup overheads, and a budget from 0 to
// 800 tokens (often 0 or under 20). It shrinks.
func GenCandidates() gopter.Gen {
	score := gen.Frequency(map[int]gopter.Gen{
		20: gen.IntRange(0, 20).Map(func(i int) float64 { return float64(i) / 20 }),
		1:  gen.Const(math.NaN()),
	})
	item := gen.Struct(reflect.TypeOf(budget.Item{}), map[string]gopter.Gen{
		"Text":     gen.Frequency(map[int]gopter.Gen{15: GenText(1, 150), 1: gen.OneConstOf("", " ", "\n\n")}),
		"Score":    score,
		"Overhead": gen.OneConstOf(0, 0, 5, 17, -3),
	})
	return gen.Struct(reflect.TypeOf(Candidates{}), map[string]gopter.Gen{
		"Items":  ListOf(item, 1, 12),
		"Budget": gen.Frequency(map[int]gopter.Gen{8: gen.IntRange(0, 800), 1: gen.Const(0), 2: gen.IntRange(1, 20)}),
	})
}

// GenBlock generates knowledge blocks to render: a profile (sometimes
// none) and zero to six sources whose text and attributes hold Hostile
// fragments, with arbitrary retrieval dates. It shrinks.
func GenBlock() gopter.Gen {
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	src := gen.Struct(reflect.TypeOf(rag.Source{}), map[string]gopter.Gen{
		"Index": gen.IntRange(1, 12),
		"URL":   gen.OneGenOf(genURL("x.example"), GenHostileText(1, 3).Map(func(s string) string { return "https://x.example/" + s })),
		"Title": GenHostileText(0, 6),
		"Retrieved": gen.Int64Range(-3e9, 3e9).Map(func(s int64) time.Time {
			return day.Add(time.Duration(s) * time.Second).In(time.FixedZone("X", int(s%50000)))
		}),
		"Age":     gen.OneGenOf(gen.OneConstOf("just now", "3 days ago", "1 year ago"), GenHostileText(0, 2)),
		"Content": GenHostileText(0, 80),
		"Score":   gen.Float64Range(0, 1),
	})
	return gen.Struct(reflect.TypeOf(rag.Block{}), map[string]gopter.Gen{
		"UserProfile": gen.OneGenOf(gen.Const(""), GenHostileText(1, 30)),
		"Sources":     ListOf(src, 0, 6),
		"TotalFound":  gen.IntRange(0, 12),
	})
}

// Hit is one entry of a generated ranked list: a record id and its score.
type Hit struct {
	ID    int
	Score float64
}

// RankedLists are a BM25 and a vector ranking over the same small pool of
// records, as search.Fuse takes them.
type RankedLists struct {
	BM25, Vector []Hit
}

// Hits returns the lists as index hits in descending score (ties by id):
// the order a retriever returns. Each id appears at most once per list.
func (l RankedLists) Hits() (text, vec []driver.Hit) {
	return toHits(l.BM25), toHits(l.Vector)
}

// RecordID is the record id GenRankedLists uses for id n.
func RecordID(n int) string { return fmt.Sprintf("r%02d", n) }

func toHits(hs []Hit) []driver.Hit {
	seen := map[int]bool{}
	out := make([]driver.Hit, 0, len(hs))
	for _, h := range hs {
		if seen[h.ID] {
			continue
		}
		seen[h.ID] = true
		out = append(out, driver.Hit{Record: index.Record{ID: RecordID(h.ID), SourceURL: "https://fusion.example/" + RecordID(h.ID)}, Score: h.Score})
	}
	sortHits(out)
	return out
}

func sortHits(hs []driver.Hit) {
	for i := 1; i < len(hs); i++ {
		for j := i; j > 0 && (hs[j].Score > hs[j-1].Score || hs[j].Score == hs[j-1].Score && hs[j].Record.ID < hs[j-1].Record.ID); j-- {
			hs[j], hs[j-1] = hs[j-1], hs[j]
		}
	}
}

// GenRankedLists generates two rankings of up to fifteen hits drawn from a
// pool of twenty ids: BM25 scores in [0, 30], cosine similarities in
// [-1, 1], ties included. It shrinks.
func GenRankedLists() gopter.Gen {
	hit := func(score gopter.Gen) gopter.Gen {
		return gen.Struct(reflect.TypeOf(Hit{}), map[string]gopter.Gen{"ID": gen.IntRange(0, 19), "Score": score})
	}
	return gen.Struct(reflect.TypeOf(RankedLists{}), map[string]gopter.Gen{
		"BM25":   ListOf(hit(gen.IntRange(0, 300).Map(func(i int) float64 { return float64(i) / 10 })), 0, 15),
		"Vector": ListOf(hit(gen.IntRange(-100, 100).Map(func(i int) float64 { return float64(i) / 100 })), 0, 15),
	})
}
