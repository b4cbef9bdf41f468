package embed

import (
	"context"
	"errors"
	"testing"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "lexical", "lexical:dim=512,ngram=2-4", "openai:m,dim=8", "openai:a:b,base=http://h/v1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		e, err := Parse(spec)
		if err != nil {
			if !errors.Is(err, ErrBadSpec) {
				t.Fatalf("Parse(%q): error %v is not ErrBadSpec", spec, err)
			}
			return
		}
		if e == nil || e.Identity() == "" {
			t.Fatalf("Parse(%q) = %v with no error", spec, e)
		}
		switch e := e.(type) {
		case *Lexical:
			if d := e.Dimension(); d < 1 || d > maxLexicalDim {
				t.Fatalf("Parse(%q): dimension %d", spec, d)
			}
			checkUnit(t, e.EmbedText("fuzzing the spec parser"), e.Dimension())
		case *OpenAI:
			if e.model == "" || e.batch < 1 || e.Dimension() < 0 || e.concurrency < 1 || e.maxTokens < 1 {
				t.Fatalf("Parse(%q) = %+v", spec, e)
			}
		case *RandProj, *Model2Vec:
		default:
			t.Fatalf("Parse(%q) = %T", spec, e)
		}
	})
}

// FuzzParseSpec checks that every spec ParseSpec accepts prints as a spec
// that parses back to the same Spec, and that identities never make
// SpecFromIdentity panic or invent a spec that builds another embedder.
func FuzzParseSpec(f *testing.F) {
	for _, s := range specCases {
		f.Add(s)
	}
	for _, s := range []string{"openai:a,base=http://h/v1?x=1,timeout=3s", "randproj:seed=18446744073709551615", "model2vec:x,max_length=9",
		"lexical-v1/d768/w1/c3-5x0.35/b0/stem/stop", "randproj-v1/d8/s2/lexical-v1/d64/w1/c0/b0", "openai/a/b/d0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := ParseSpec(spec)
		if err != nil {
			if !errors.Is(err, ErrBadSpec) {
				t.Fatalf("ParseSpec(%q): error %v is not ErrBadSpec", spec, err)
			}
		} else {
			again, err := ParseSpec(s.String())
			if err != nil || again.String() != s.String() || !again.SameModel(s) || again.BaseURL != s.BaseURL || len(again.Options) != len(s.Options) {
				t.Fatalf("ParseSpec(%q) = %+v prints as %q, which parses to %+v, %v", spec, s, s.String(), again, err)
			}
			if s.kind() != KindModel2Vec { // which would read the disk
				e, err := New(s, nil)
				if err != nil {
					t.Fatalf("New(%+v) of a valid spec: %v", s, err)
				}
				if e.Identity() == "" {
					t.Fatalf("New(%+v): no identity", s)
				}
			}
		}
		if d, ok := SpecFromIdentity(spec); ok {
			if err := d.Validate(); err != nil {
				t.Fatalf("SpecFromIdentity(%q) = %+v: %v", spec, d, err)
			}
			if d.kind() != KindOpenAI {
				e, err := New(d, nil)
				if err != nil || e.Identity() != spec {
					t.Fatalf("SpecFromIdentity(%q) = %s builds %v, %v", spec, d, e, err)
				}
			}
		}
	})
}

func FuzzLexicalEmbed(f *testing.F) {
	f.Add("Hybrid search: BM25 + vectors.", uint16(384), uint8(0))
	f.Add("", uint16(1), uint8(0))
	f.Add("\xff\xfe", uint16(7), uint8(255))
	f.Add("日本語 café nai\u0308ve", uint16(0), uint8(3))
	f.Fuzz(func(t *testing.T, text string, dim uint16, flags uint8) {
		opts := &LexicalOptions{
			Dimension:     int(dim) % 2048,
			MinN:          int(flags & 7),
			MaxN:          int(flags>>3) & 7,
			NoStemming:    flags&64 != 0,
			KeepStopWords: flags&128 != 0,
		}
		if flags&1 != 0 {
			opts.BigramWeight = 0.5
		}
		l := NewLexical(opts)
		vs, err := l.Embed(context.Background(), []string{text, text})
		if err != nil {
			t.Fatal(err)
		}
		checkUnit(t, vs[0], l.Dimension())
		for i := range vs[0] {
			if vs[0][i] != vs[1][i] {
				t.Fatalf("not deterministic at %d", i)
			}
		}
	})
}
