package hftok

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

const (
	potionTokenizer    = "../embed/testdata/model2vec/tokenizer.json"
	quantizedTokenizer = "../embed/testdata/model2vec/vocab-quantized/tokenizer.json"
)

// wordPieceVocab reads the vocabulary straight from the file, independently
// of the package, to check that expected pieces have the expected ids.
func wordPieceVocab(t *testing.T) map[string]int {
	t.Helper()
	b, err := os.ReadFile(potionTokenizer)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Model struct {
			Vocab map[string]int `json:"vocab"`
		} `json:"model"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f.Model.Vocab
}

// The expected pieces were worked out by hand with BERT's rules (clean,
// lower-case, strip accents, split at spaces and punctuation, greedy
// longest match with "##" continuations) against the vocabulary, and
// cross-checked with an independent implementation of the original BERT
// tokenizer on 807 SciFact titles and queries. For "unaffable": "una" is the
// longest vocabulary prefix (no "unaf", "unaff", ...), then "##ffa", "##ble".
func TestWordPieceHandChecked(t *testing.T) {
	tk, err := Load(potionTokenizer)
	if err != nil {
		t.Fatal(err)
	}
	vocab := wordPieceVocab(t)
	cases := []struct {
		text   string
		pieces []string
		ids    []int
	}{
		{"hello world", []string{"hello", "world"}, []int{6598, 1094}},
		{"Hello, World!", []string{"hello", ",", "world", "!"}, []int{6598, 16, 1094, 5}},
		{"unaffable", []string{"una", "##ffa", "##ble"}, []int{13483, 19967, 2474}},
		{"naïve café", []string{"naive", "cafe"}, []int{14749, 6674}},
		{"3.14", []string{"3", ".", "14"}, []int{23, 18, 1409}},
		{"[CLS] token", []string{"[CLS]", "token"}, []int{2, 18210}},
		{"日本", []string{"日", "本"}, []int{870, 882}},
		{"xyzzyq", []string{"x", "##y", "##zzy", "##q"}, []int{66, 1106, 27759, 3166}},
		{"☃ snow", []string{"[UNK]", "snow"}, []int{1, 3592}},
		{strings.Repeat("a", 101), []string{"[UNK]"}, []int{1}}, // longer than max_input_chars_per_word
		{"don't", []string{"don", "'", "t"}, []int{1129, 11, 62}},
		{"", nil, nil},
		{" \t\n", nil, nil},
	}
	for _, c := range cases {
		for i, p := range c.pieces {
			if vocab[p] != c.ids[i] {
				t.Fatalf("test table: %q has id %d in the vocabulary, not %d", p, vocab[p], c.ids[i])
			}
		}
		if got := tk.Encode(c.text); !reflect.DeepEqual(got, c.ids) {
			t.Errorf("Encode(%q) = %v, want %v (%q)", c.text, got, c.ids, c.pieces)
		}
	}
	if tk.UnknownID() != 1 || tk.VocabSize() != 29528 {
		t.Errorf("unknown id %d, vocabulary %d; want 1 and 29528", tk.UnknownID(), tk.VocabSize())
	}
}

// The Unigram tokenizer of the vocabulary-quantized fixture: BERT
// normalisation, punctuation padded with spaces, "▁" for spaces and in
// front, then the segmentation with the highest total log-probability. The
// scores of the chosen pieces were checked by hand against the file (e.g.
// "▁hello" -10.37 beats any split of it), and the whole pipeline against an
// independent Viterbi implementation on the same 807 texts.
func TestUnigramHandChecked(t *testing.T) {
	tk, err := Load(quantizedTokenizer)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		text string
		ids  []int
	}{
		{"hello world", []int{6594, 1091}},          // ▁hello ▁world
		{"Hello, World!", []int{6594, 13, 1091, 2}}, // ▁hello ▁, ▁world ▁!
		{"unaffable", []int{13479, 19963, 2470}},    // ▁una ffa ble
		{"naïve café", []int{14745, 6670}},          // ▁naive ▁cafe
		{"☃ snow", []int{1, 3588}},                  // [UNK] (▁ and ☃ fused) ▁snow
		{"", nil},
	}
	for _, c := range cases {
		if got := tk.Encode(c.text); !reflect.DeepEqual(got, c.ids) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.ids)
		}
	}
	toks := tk.Tokens()
	if toks[6594] != "▁hello" || toks[2470] != "ble" {
		t.Errorf("Tokens()[6594], [2470] = %q, %q", toks[6594], toks[2470])
	}
}

func TestFinalSigma(t *testing.T) {
	if got := lower("ΣΊΣΥΦΟΣ Σ"); got != "σίσυφος σ" {
		t.Errorf("lower = %q", got)
	}
}

func TestMetaspaceSplit(t *testing.T) {
	m := metaspace{repl: "▁", scheme: "always", doSplit: true}
	got := m.split("hello  big world", true)
	want := []string{"▁hello", "▁", "▁big", "▁world"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("split = %q, want %q", got, want)
	}
	m.scheme = "first"
	if got := m.split("x y", false); !reflect.DeepEqual(got, []string{"x", "▁y"}) {
		t.Errorf("first scheme, later segment: %q", got)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		json string
		want error
	}{
		{`not json`, ErrFormat},
		{`{}`, ErrFormat},
		{`{"model":{"type":"BPE","vocab":{},"merges":[]}}`, ErrUnsupported},
		{`{"model":{"type":"WordPiece","unk_token":"[UNK]","vocab":{"a":0}}}`, ErrFormat},
		{`{"model":{"type":"WordPiece","unk_token":"a","vocab":{"a":0,"b":0}}}`, ErrFormat},
		{`{"model":{"type":"Unigram","unk_id":5,"vocab":[["a",-1]]}}`, ErrFormat},
		{`{"model":{"type":"Unigram","vocab":[["a"]]}}`, ErrFormat},
		{`{"model":{"type":"Unigram","byte_fallback":true,"vocab":[["a",-1]]}}`, ErrUnsupported},
		{`{"normalizer":{"type":"Precompiled"},"model":{"type":"Unigram","vocab":[["a",-1]]}}`, ErrUnsupported},
		{`{"pre_tokenizer":{"type":"ByteLevel"},"model":{"type":"Unigram","vocab":[["a",-1]]}}`, ErrUnsupported},
		{`{"normalizer":{"type":"Replace","pattern":{"Regex":"(?<=a)b"},"content":""},"model":{"type":"Unigram","vocab":[["a",-1]]}}`, ErrUnsupported},
	}
	for _, c := range cases {
		if _, err := Parse([]byte(c.json)); !errors.Is(err, c.want) {
			t.Errorf("Parse(%s) = %v, want %v", c.json, err, c.want)
		}
	}
}

// A Unigram vocabulary without an unknown token drops what it cannot cover
// instead of emitting an invalid id.
func TestUnigramWithoutUnknown(t *testing.T) {
	tk, err := Parse([]byte(`{"model":{"type":"Unigram","vocab":[["a",-1],["b",-2],["ab",-1]]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := tk.Encode("abxa"); !reflect.DeepEqual(got, []int{2, 0}) {
		t.Errorf("Encode = %v, want [2 0]", got)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"model":{"type":"WordPiece","unk_token":"[UNK]","vocab":{"[UNK]":0,"a":1,"##b":2}},"normalizer":{"type":"BertNormalizer"},"pre_tokenizer":{"type":"BertPreTokenizer"}}`), "ab a")
	f.Add([]byte(`{"model":{"type":"Unigram","unk_id":0,"vocab":[["<unk>",0],["▁a",-1],["b",-2]]},"pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true}}`), "a b ab")
	f.Add([]byte(`{"added_tokens":[{"id":3,"content":"[X]"}],"model":{"type":"Unigram","vocab":[["a",-1]]},"normalizer":{"type":"Sequence","normalizers":[{"type":"NFKC"},{"type":"Strip","strip_left":true}]}}`), "[X]a[X]")
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		tk, err := Parse(data)
		if err != nil {
			return
		}
		for _, id := range tk.Encode(text) {
			if id < 0 || id >= tk.VocabSize() {
				t.Fatalf("id %d outside [0, %d)", id, tk.VocabSize())
			}
		}
	})
}

func FuzzEncode(f *testing.F) {
	for _, s := range []string{"hello world", "Ünïcödé 日本 ☃", "\xff\xfe[CLS]", strings.Repeat("ab", 80)} {
		f.Add(s)
	}
	wp, err := Load(potionTokenizer)
	if err != nil {
		f.Fatal(err)
	}
	uni, err := Load(quantizedTokenizer)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, tk := range []*Tokenizer{wp, uni} {
			for _, id := range tk.Encode(text) {
				if id < 0 || id >= tk.VocabSize() {
					t.Fatalf("Encode(%q): id %d outside [0, %d)", text, id, tk.VocabSize())
				}
			}
		}
	})
}
