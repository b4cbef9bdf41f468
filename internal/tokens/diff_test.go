package tokens

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// The reference is tiktoken-go itself: every test here checks that this
// package's tokenizer yields exactly its ids.

var (
	refOnce sync.Once
	refMu   sync.Mutex
	refs    = map[string]*tiktoken.Tiktoken{}
)

func reference(t testing.TB, name string) *tiktoken.Tiktoken {
	refOnce.Do(func() { tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader()) })
	refMu.Lock()
	defer refMu.Unlock()
	if tk, ok := refs[name]; ok {
		return tk
	}
	tk, err := tiktoken.GetEncoding(name)
	if err != nil {
		t.Fatal(err)
	}
	refs[name] = tk
	return tk
}

// refEncode is what Encode must return: tiktoken-go's ordinary encoding of
// each long-run-free segment of the text.
func refEncode(tk *tiktoken.Tiktoken, s string) []int {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	ids := []int{}
	start := 0
	for _, c := range append(longRunCuts(s), len(s)) {
		ids = append(ids, tk.EncodeOrdinary(s[start:c])...)
		start = c
	}
	return ids
}

var allEncodings = []string{CL100K, O200K, P50K, R50K}

// checkSame compares one text under an encoding and reports the first
// differing token with its context.
func checkSame(t testing.TB, name, s string) bool {
	t.Helper()
	want := refEncode(reference(t, name), s)
	e := MustGet(name)
	got := e.Encode(s)
	if !slices.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		lo := max(0, i-3)
		t.Errorf("%s: text %.80q: token %d differs:\n got  %q\n want %q", name, s, i,
			pieces(e, got[lo:min(len(got), i+3)]), pieces(e, want[lo:min(len(want), i+3)]))
		return false
	}
	if n := e.Count(s); n != len(want) {
		t.Errorf("%s: Count(%.80q) = %d, want %d", name, s, n, len(want))
		return false
	}
	return true
}

func pieces(e *Encoding, ids []int) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = e.Decode([]int{id})
	}
	return out
}

// edgeCases exercise every alternative of the three patterns and their
// backtracking: contractions in every case, leading punctuation, marks,
// titlecase and modifier letters, digit runs, line breaks inside and at the
// end of whitespace, slashes after punctuation (o200k), Unicode spaces.
var edgeCases = []string{
	"", " ", "  ", "\n", "\r\n", " \n ", "\t\t\n\n  x", "a  b", "a \n b", "a\u00a0\u00a0b", "x\u3000\u3000",
	"I'm you're we've they'll he'd it's can't I'M YOU'RE WE'VE THEY'LL HE'D IT'S CAN'T",
	"'s 't 're 've 'm 'll 'd 'S 'T 'RE 'Ve 'x '", "don'tdon't", "rock'n'roll", "O'Neil's", "’s",
	"hello world", "Hello World", "HELLO wORLD", "camelCaseWords XMLHttpRequest iPhone McDonald",
	"ǅemal ǲ Ǆ ǈ ǋ", "ʰʲʷ modifier ˈstress", "naïve café résumé", "e\u0301\u0301\u0301 a\u0308",
	"\u0301start", " \u0301x", "...\u0301", "12345678 1,234.56 ٣٤٥٦ ①②③ Ⅻ ½", "x1y22z333w4444",
	"!!! ??? ... --- /// *** +++", "a/b//c///d", "path/to/file.go:12", "http://example.com/a?b=c&d=e#f",
	"foo()\n\tbar[]\r\n{}\n\n\n", "    indented\n        more\n", "end with spaces   ", "end with newline\n",
	"emoji 🎉🎉 ok 👩‍👩‍👧‍👦 🇫🇷", "日本語のテキスト。中文文本，한국어 텍스트", "Ελληνικά Русский עברית العربية हिन्दी",
	"<|endoftext|> <|fim_prefix|>", "\x00\x01\x02 control \x7f", "tab\tsep\tvalues\t",
	"'hello", "\"quoted\"", "(parens) [brackets] {braces}", "a\u2028b\u2029c\u0085d",
	"ﬁﬂ ligatures", "ÅK Kelvin K Ångström Å", "İstanbul ıi", "ſ long s 'ſ 'ſt",
}

func TestEdgeCasesMatchTiktoken(t *testing.T) {
	for _, name := range allEncodings {
		for _, s := range edgeCases {
			checkSame(t, name, s)
		}
	}
}

// TestEveryRuneMatchesTiktoken tokenizes every Unicode code point in the
// contexts where the patterns treat it differently: alone, after a space,
// between letters, after an apostrophe, before a line break and between
// digits. With RAGMEM_LONG_TESTS=1 it is the exhaustive check of the
// character classes (about a minute); by default it takes every code point
// below U+3000 (Latin, Greek, Cyrillic, Arabic, Indic scripts, combining
// marks, Unicode spaces and punctuation) and every 13th above (under -race,
// every code point below U+0400 and every 211th above).
func TestEveryRuneMatchesTiktoken(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	dense, step := rune(0x3000), rune(13)
	if raceEnabled {
		dense, step = 0x400, 211
	}
	if os.Getenv("RAGMEM_LONG_TESTS") != "" {
		dense, step = unicode.MaxRune, 1
	}
	for _, name := range []string{CL100K, O200K} {
		var sb strings.Builder
		n := 0
		flush := func() {
			if sb.Len() > 0 {
				checkSame(t, name, sb.String())
				sb.Reset()
			}
		}
		for r := rune(0); r <= unicode.MaxRune; {
			if r >= 0xd800 && r <= 0xdfff {
				r = 0xe000
				continue
			}
			c := string(r)
			fmt.Fprintf(&sb, "%s %sa%sb '%s %s\n1%s2 ", c, c, c, c, c, c)
			if n++; n%512 == 0 {
				flush()
				if t.Failed() {
					return
				}
			}
			if r < dense {
				r++
			} else {
				r += step
			}
		}
		flush()
	}
}

// findUp looks for rel in the directories above the test's.
func findUp(rel string) string {
	dir, _ := os.Getwd()
	for range 6 {
		p := filepath.Join(dir, rel)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		dir = filepath.Dir(dir)
	}
	return ""
}

// TestSciFactMatchesTiktoken compares every document of the SciFact corpus
// (../shared/eval/scifact; about 5,000 abstracts of scientific English with
// numbers, units, Greek letters and symbols). Under -short it takes every
// tenth document, under -race every fortieth; RAGMEM_SCIFACT names the
// corpus file elsewhere.
func TestSciFactMatchesTiktoken(t *testing.T) {
	path := os.Getenv("RAGMEM_SCIFACT")
	if path == "" {
		path = findUp(filepath.Join("shared", "eval", "scifact", "corpus.jsonl"))
	}
	if path == "" {
		t.Skip("SciFact corpus not found (set RAGMEM_SCIFACT)")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	every := 1
	switch {
	case raceEnabled:
		every = 40
	case testing.Short():
		every = 10
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	docs, bytes := 0, 0
	for i := 0; sc.Scan(); i++ {
		if i%every != 0 {
			continue
		}
		var d struct{ Title, Text string }
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		s := d.Title + "\n\n" + d.Text
		for _, name := range []string{CL100K, O200K} {
			if !checkSame(t, name, s) {
				return
			}
		}
		docs++
		bytes += len(s)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if docs < 5183/every-1 {
		t.Fatalf("only %d documents read from %s", docs, path)
	}
	t.Logf("%d SciFact documents (%d bytes) identical under cl100k_base and o200k_base", docs, bytes)
}

// variedText builds text from fragments of many scripts and shapes, glued
// with random separators, so that pieces meet in unusual combinations.
func variedText(r *rand.Rand, n int) string {
	frags := []string{
		"The quick brown fox", "jumps over 13 lazy dogs.", "func main() {\n\tfmt.Println(\"hi\")\n}\n",
		"if (x <= 0x1F && y != nil) { return -1; }", "SELECT * FROM t WHERE id = 42;", "```go\ncode\n```",
		"日本語の文章です。", "中文，标点！", "한국어 문장입니다.", "Привет, мир!", "مرحبا بالعالم", "שלום עולם",
		"नमस्ते दुनिया", "ไทย", "🎉", "👩‍💻", "🇯🇵", "✓✗→←", "½ ¼ ² ³", "α β γ δ", "Ω≈ç√∫",
		"I'm", "you'RE", "'ll", "O'Reilly", "it’s", " ", "  ", "\t", "\n", "\r\n", "\n\n\n", "   \n  ",
		"\u00a0", "\u2003", "\u200b", "\ufeff", "e\u0301", "\u0301", "...", "!!!", "///", "--", "==",
		"https://x.example/a/b?c=1", "C:\\path\\file.txt", "user@example.com", "3.14159", "1,000,000",
		"x²+y²", "ǅ", "ʰ", "İ", "ﬁ", "\x00", "\x7f", "<|endoftext|>", "A", "a", "1", "'", "\"",
	}
	var sb strings.Builder
	for sb.Len() < n {
		sb.WriteString(frags[r.Intn(len(frags))])
		switch r.Intn(4) {
		case 0:
			sb.WriteByte(' ')
		case 1:
			sb.WriteString([]string{"\n", ", ", ". ", "  ", "\t", "/", "'"}[r.Intn(7)])
		}
	}
	return sb.String()
}

// TestVariedTextMatchesTiktoken compares random mixtures of code, prose in
// many scripts, emoji and whitespace oddities.
func TestVariedTextMatchesTiktoken(t *testing.T) {
	seed := rand.Int63()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	cases := 200
	if raceEnabled {
		cases = 20
	}
	for i := 0; i < cases; i++ {
		s := variedText(r, 64+r.Intn(2000))
		for _, name := range allEncodings {
			if !checkSame(t, name, s) {
				return
			}
		}
	}
}

// TestRepositorySourcesMatchTiktoken compares this module's own Go sources:
// real code with comments, string literals and indentation.
func TestRepositorySourcesMatchTiktoken(t *testing.T) {
	root := findUp("go.mod")
	if root == "" {
		t.Skip("module root not found")
	}
	var files []string
	_ = filepath.WalkDir(filepath.Dir(root), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".go") || strings.HasSuffix(p, ".md")) {
			files = append(files, p)
		}
		return nil
	})
	if raceEnabled && len(files) > 8 {
		files = files[:8]
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !checkSame(t, CL100K, string(b)) || !checkSame(t, O200K, string(b)) {
			return
		}
	}
	t.Logf("%d source files identical", len(files))
}

// FuzzMatchesTiktoken is the differential fuzz target: for any input the
// ids (and the count) must be those of tiktoken-go, under every encoding.
func FuzzMatchesTiktoken(f *testing.F) {
	for _, s := range edgeCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			s = s[:4096]
		}
		for _, name := range allEncodings {
			checkSame(t, name, s)
		}
	})
}

// BenchmarkCountVsTiktoken compares Count with tiktoken-go's encoder on the
// same English prose.
func BenchmarkCountVsTiktoken(b *testing.B) {
	text := variedText(rand.New(rand.NewSource(1)), 0) + strings.Repeat("Retrieval-augmented generation combines a retriever with a generator; the retriever's index holds 12,345 chunks. ", 40)
	b.Run("ragmem", func(b *testing.B) {
		e := Default()
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			e.Count(text)
		}
	})
	b.Run("tiktoken-go", func(b *testing.B) {
		tk := reference(b, CL100K)
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			tk.EncodeOrdinary(text)
		}
	})
}
