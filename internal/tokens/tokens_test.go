package tokens

import (
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func TestCountKnownValues(t *testing.T) {
	// Reference counts from OpenAI's tiktoken (Python) for the same strings.
	cases := []struct {
		enc, text string
		want      int
	}{
		{CL100K, "hello world", 2},
		{CL100K, "", 0},
		{CL100K, "tiktoken is great!", 6},
		{O200K, "hello world", 2},
		{CL100K, "<|endoftext|>", 7},
	}
	for _, c := range cases {
		got := MustGet(c.enc).Count(c.text)
		if got != c.want {
			t.Errorf("%s Count(%q) = %d, want %d", c.enc, c.text, got, c.want)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	e := Default()
	for _, s := range []string{"Dr. Smith went to Washington.", "日本語のテキスト。", "emoji 🎉 ok", "<|endoftext|> injected"} {
		if got := e.Decode(e.Encode(s)); got != s {
			t.Errorf("round trip %q -> %q", s, got)
		}
	}
}

func TestInvalidUTF8DoesNotPanic(t *testing.T) {
	s := "abc\xff\xfe def"
	if n := Default().Count(s); n == 0 {
		t.Fatalf("Count of invalid UTF-8 = 0")
	}
}

func TestEncodingNameForModel(t *testing.T) {
	cases := map[string]string{
		"gpt-4o":                 O200K,
		"gpt-4o-mini":            O200K,
		"openai/gpt-4.1":         O200K,
		"o3-mini":                O200K,
		"o1":                     O200K,
		"gpt-5":                  O200K,
		"gpt-4":                  CL100K,
		"gpt-4-turbo":            CL100K,
		"gpt-3.5-turbo":          CL100K,
		"text-embedding-3-small": CL100K,
		"llama3.1:8b":            DefaultEncoding,
		"":                       DefaultEncoding,
		"ollama":                 DefaultEncoding,
	}
	for model, want := range cases {
		if got := EncodingNameForModel(model); got != want {
			t.Errorf("EncodingNameForModel(%q) = %s, want %s", model, got, want)
		}
	}
}

func TestGetUnknown(t *testing.T) {
	if _, err := Get("nope"); err == nil || !strings.Contains(err.Error(), "unknown encoding") {
		t.Fatalf("Get(nope) err = %v", err)
	}
}

func TestConcurrentLoadSharesEncoding(t *testing.T) {
	var wg sync.WaitGroup
	encs := make([]*Encoding, 8)
	for i := range encs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			encs[i] = MustGet(O200K)
			encs[i].Count("concurrent use")
		}(i)
	}
	wg.Wait()
	for _, e := range encs[1:] {
		if e != encs[0] {
			t.Fatal("encoding loaded more than once")
		}
	}
}

func BenchmarkCount(b *testing.B) {
	e := Default()
	text := strings.Repeat("Retrieval-augmented generation combines a retriever with a generator. ", 30)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		e.Count(text)
	}
}

// TestLongRunsAreBounded checks the guard against the quadratic byte-pair
// merge structurally: no same-class run handed to the merge exceeds maxRun
// bytes (plus one rune), and the pieces still encode and decode losslessly.
func TestLongRunsAreBounded(t *testing.T) {
	e := Default()
	for _, s := range []string{
		strings.Repeat("x", 1<<16),
		strings.Repeat("=", 1<<16),
		strings.Repeat(" ", 1<<16),
		strings.Repeat("9", 1<<16),
		strings.Repeat("日", 1<<14),
		"prefix " + strings.Repeat("ab", 1<<15) + " suffix",
	} {
		prev := 0
		for _, c := range append(longRunCuts(s), len(s)) {
			if c-prev > maxRun+utf8.UTFMax && longestRun(s[prev:c]) > maxRun+utf8.UTFMax {
				t.Fatalf("a piece of %d bytes holds a run longer than %d", c-prev, maxRun)
			}
			prev = c
		}
		ids := e.Encode(s)
		if got := e.Decode(ids); got != s {
			t.Fatalf("round trip of a long run changed it")
		}
		if len(ids) == 0 || len(ids) > len(s) {
			t.Fatalf("%d tokens for %d bytes", len(ids), len(s))
		}
	}
}

// longestRun is the byte length of the longest run of one runClass in s.
func longestRun(s string) int {
	longest, class, start := 0, 0, 0
	for i, r := range s {
		if c := runClass(r); c != class {
			class, start = c, i
		}
		longest = max(longest, i+utf8.RuneLen(r)-start)
	}
	return longest
}

func TestOrdinaryTextIsExact(t *testing.T) {
	// Text without long runs takes the unsplit path.
	text := strings.Repeat("Ordinary words, numbers like 12345 and punctuation!! ", 200)
	if longRunCuts(text) != nil {
		t.Fatal("ordinary text was cut")
	}
	if got, want := Default().Count(text), len(reference(t, CL100K).EncodeOrdinary(text)); got != want {
		t.Fatalf("Count = %d, tiktoken = %d", got, want)
	}
	cuts := longRunCuts(strings.Repeat("y", 1000))
	if len(cuts) != 3 || cuts[0] != maxRun {
		t.Fatalf("cuts of a 1000-byte run = %v", cuts)
	}
}
