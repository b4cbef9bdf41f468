package embed

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestParseLexical(t *testing.T) {
	cases := []struct {
		spec, identity string
	}{
		{"", "lexical-v1/d768/w1/c3-5x0.35/b0/stem/stop"},
		{"lexical", "lexical-v1/d768/w1/c3-5x0.35/b0/stem/stop"},
		{"  LEXICAL  ", "lexical-v1/d768/w1/c3-5x0.35/b0/stem/stop"},
		{"lexical:", "lexical-v1/d768/w1/c3-5x0.35/b0/stem/stop"},
		{"lexical:dim=512", "lexical-v1/d512/w1/c3-5x0.35/b0/stem/stop"},
		{"lexical: dim = 64 , ngram = 4 ", "lexical-v1/d64/w1/c4-4x0.35/b0/stem/stop"},
		{"lexical:dim=512,ngram=2-4,char=0.5,word=2,bigram=0.25,stem=0,stop=false",
			"lexical-v1/d512/w2/c2-4x0.5/b0.25"},
		{"lexical:char=0", "lexical-v1/d768/w1/c0/b0/stem/stop"},
		{"lexical:word=0,bigram=1", "lexical-v1/d768/w0/c3-5x0.35/b1/stem/stop"},
		{"lexical:stem=1,stop=true", "lexical-v1/d768/w1/c3-5x0.35/b0/stem/stop"},
	}
	for _, c := range cases {
		e, err := Parse(c.spec)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.spec, err)
			continue
		}
		if _, ok := e.(*Lexical); !ok {
			t.Errorf("Parse(%q) = %T", c.spec, e)
		}
		if e.Identity() != c.identity {
			t.Errorf("Parse(%q).Identity() = %q, want %q", c.spec, e.Identity(), c.identity)
		}
	}
}

func TestParseErrors(t *testing.T) {
	specs := []string{
		"bert", "model2vec:/tmp/x", "lexical:dim", "lexical:dim=", "lexical:=3", "lexical:dim=0", "lexical:dim=abc",
		"lexical:dim=70000", "lexical:dim=-1", "lexical:foo=1", "lexical:dim=1,dim=2",
		"lexical:ngram=5-3", "lexical:ngram=0-3", "lexical:ngram=3-9", "lexical:ngram=a-b",
		"lexical:char=-1", "lexical:char=NaN", "lexical:char=Inf", "lexical:word=1e9",
		"lexical:word=0,char=0,bigram=0", "lexical:stem=maybe", "lexical:dim=384,,",
		"openai", "openai:", "openai:  ", "openai:,dim=3", "openai:m,dim=x", "openai:m,dim=0",
		"openai:m,foo=1", "openai:m,base=ftp://x", "openai:m,batch=0", "openai:m,batch=9999",
		"openai:m,retries=-2", "openai:m,dim=8,dim=8", "openai:m,novalue",
		"lexical:" + strings.Repeat("x", 10000) + "=1",
	}
	for _, s := range specs {
		e, err := Parse(s)
		if !errors.Is(err, ErrBadSpec) {
			t.Errorf("Parse(%.40q) = %v, %v; want ErrBadSpec", s, e, err)
			continue
		}
		if len(err.Error()) > 300 {
			t.Errorf("Parse(%.40q): error message of %d bytes", s, len(err.Error()))
		}
	}
}

func TestParseOpenAI(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("OPENAI_API_KEY", "")
	e, err := Parse("openai:nomic-embed-text:latest,dim=768,batch=8,retries=0,base=http://localhost:11434/v1/")
	if err != nil {
		t.Fatal(err)
	}
	o, ok := e.(*OpenAI)
	if !ok {
		t.Fatalf("%T", e)
	}
	if o.model != "nomic-embed-text:latest" || o.wantDim != 768 || o.requestDims || o.batch != 8 ||
		o.maxRetries != 0 || o.base != "http://localhost:11434/v1" || o.apiKey != "" {
		t.Errorf("parsed %+v", o)
	}
	if o.Identity() != "openai/nomic-embed-text:latest/d768" {
		t.Errorf("identity %q", o.Identity())
	}
	e, err = Parse("openai:text-embedding-3-small")
	if err != nil {
		t.Fatal(err)
	}
	o = e.(*OpenAI)
	if o.base != defaultOpenAIBaseURL || o.batch != defaultBatchSize || o.maxRetries != defaultMaxRetries || o.Dimension() != 0 {
		t.Errorf("defaults: %+v", o)
	}
}

func TestParseOpenAIEmbedsViaEnvironment(t *testing.T) {
	f := newFakeServer(t, 8)
	t.Setenv("OPENAI_BASE_URL", f.baseURL())
	t.Setenv("OPENAI_API_KEY", testKey)
	e, err := Parse("openai:text-embedding-3-small,dim=8")
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := e.Embed(context.Background(), []string{"parsed"})
	if err != nil {
		t.Fatal(err)
	}
	checkUnit(t, vecs[0], 8)
	if r := f.request(0); r.Dimensions == nil || *r.Dimensions != 8 {
		t.Errorf("dimensions not requested: %s", r.raw)
	}
}
