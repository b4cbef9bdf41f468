package loadtest

import (
	"math"
	"math/rand/v2"
	"sort"
	"strings"
)

// Corpus generates synthetic pages and queries: pseudo-words drawn from a
// Zipf distribution (s = 1.1), as word frequencies are in real text. It is
// safe for concurrent use; randomness comes from the caller's generator.
type Corpus struct {
	words []string
	cum   []float64 // cumulative Zipf weights, normalised to 1
}

// Page is one generated page.
type Page struct {
	URL, Title, Text string
}

const vocabSize = 8000

var (
	onsets = []string{"b", "br", "c", "ch", "d", "dr", "f", "fl", "g", "gr", "h", "j", "k", "l", "m", "n", "p", "pl", "qu", "r", "s", "sh", "st", "t", "th", "tr", "v", "w", "z"}
	nuclei = []string{"a", "e", "i", "o", "u", "ai", "ea", "io", "ou", "y"}
	codas  = []string{"", "", "n", "r", "s", "t", "l", "m", "nd", "st", "x"}
)

// NewCorpus returns the corpus of a seed.
func NewCorpus(seed uint64) *Corpus {
	rng := rand.New(rand.NewPCG(seed, 0xc0ffee))
	seen := map[string]bool{}
	c := &Corpus{}
	for len(c.words) < vocabSize {
		var b strings.Builder
		for s := 0; s < 2+rng.IntN(2); s++ {
			b.WriteString(onsets[rng.IntN(len(onsets))])
			b.WriteString(nuclei[rng.IntN(len(nuclei))])
			b.WriteString(codas[rng.IntN(len(codas))])
		}
		w := b.String()
		if !seen[w] {
			seen[w] = true
			c.words = append(c.words, w)
		}
	}
	c.cum = make([]float64, vocabSize)
	total := 0.0
	for k := range c.cum {
		total += 1 / math.Pow(float64(k+1), 1.1)
		c.cum[k] = total
	}
	for k := range c.cum {
		c.cum[k] /= total
	}
	return c
}

// word draws a word; from skips the most frequent ones.
func (c *Corpus) word(rng *rand.Rand, from int) string {
	for {
		k := sort.SearchFloat64s(c.cum, rng.Float64())
		if k >= vocabSize {
			k = vocabSize - 1
		}
		if k >= from {
			return c.words[k]
		}
	}
}

func (c *Corpus) sentence(rng *rand.Rand, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = c.word(rng, 0)
	}
	s := strings.Join(ws, " ")
	return strings.ToUpper(s[:1]) + s[1:] + "."
}

// Page generates a Markdown page of sections sections, each a heading and
// about 50 words (some 250 tokens), which the chunker keeps as one chunk.
func (c *Corpus) Page(rng *rand.Rand, url string, sections int) Page {
	var b strings.Builder
	title := strings.TrimSuffix(c.sentence(rng, 3), ".")
	for s := 0; s < sections; s++ {
		b.WriteString("## " + strings.TrimSuffix(c.sentence(rng, 2), ".") + "\n\n")
		for p := 0; p < 2; p++ {
			for k := 0; k < 3; k++ {
				b.WriteString(c.sentence(rng, 7+rng.IntN(4)))
				b.WriteByte(' ')
			}
			b.WriteString("\n\n")
		}
	}
	return Page{URL: url, Title: title, Text: b.String()}
}

// Query generates a search query of two to four mid-frequency words.
func (c *Corpus) Query(rng *rand.Rand) string {
	n := 2 + rng.IntN(3)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = c.word(rng, 30)
	}
	return strings.Join(ws, " ")
}
