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
			if e.model == "" || e.batch < 1 || e.Dimension() < 0 {
				t.Fatalf("Parse(%q) = %+v", spec, e)
			}
		default:
			t.Fatalf("Parse(%q) = %T", spec, e)
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
