package embed

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// specCases are specs of every kind that Parse accepts, for round trips.
var specCases = []string{
	"", "lexical", "lexical:dim=512", "lexical:dim=64,ngram=2-4,char=0.5,word=2,bigram=0.25,stem=0,stop=false",
	"lexical:char=0", "lexical:word=0,bigram=1", "lexical:ngram=4", "LEXICAL: Dimension = 100 ",
	"randproj", "randproj:dim=32", "randproj:dim=16,seed=7,lexdim=64,char=0,stop=0",
	"openai:text-embedding-3-small", "openai:nomic-embed-text:latest,dim=768,batch=8,retries=0,base=http://localhost:11434/v1",
	"openai:m,concurrency=8,request_tokens=1000,timeout=5s,max_retries=3,batch_size=16",
	"openai:org/model-name,base=https://u:p@example.com/v1?api-version=2",
}

func TestParseSpecRoundTrip(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	for _, spec := range specCases {
		s, err := ParseSpec(spec)
		if err != nil {
			t.Errorf("ParseSpec(%q): %v", spec, err)
			continue
		}
		again, err := ParseSpec(s.String())
		if err != nil || !reflect.DeepEqual(again, s) {
			t.Errorf("ParseSpec(%q).String() = %q reparses to %+v, %v; want %+v", spec, s.String(), again, err, s)
		}
		e1, err := Parse(spec)
		if err != nil {
			t.Fatalf("Parse(%q): %v", spec, err)
		}
		// The embedder describes itself by a spec that builds the same embedder.
		self, ok := SpecOf(e1)
		if !ok {
			t.Fatalf("SpecOf(Parse(%q)) = false", spec)
		}
		e2, err := New(self, nil)
		if err != nil {
			t.Fatalf("New(SpecOf(Parse(%q)) = %s): %v", spec, self, err)
		}
		if e1.Identity() != e2.Identity() {
			t.Errorf("%q: identity %q, rebuilt from %s: %q", spec, e1.Identity(), self, e2.Identity())
		}
		if !reflect.DeepEqual(self, mustSpecOf(t, e2)) {
			t.Errorf("%q: spec %+v, rebuilt spec %+v", spec, self, mustSpecOf(t, e2))
		}
	}
}

func mustSpecOf(t *testing.T, e Embedder) Spec {
	t.Helper()
	s, ok := SpecOf(e)
	if !ok {
		t.Fatalf("%T has no spec", e)
	}
	return s
}

func TestSpecOfDefaultsAreEmpty(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	if s := mustSpecOf(t, Default()); s.String() != "lexical" || s.Options != nil {
		t.Errorf("default spec %+v", s)
	}
	if s := mustSpecOf(t, NewRandProj(nil)); s.String() != "randproj" {
		t.Errorf("randproj spec %q", s)
	}
	o, err := NewOpenAI(OpenAIOptions{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if s := o.Spec(); s.String() != "openai:m,base=https://api.openai.com/v1" {
		t.Errorf("openai spec %q", s)
	}
	o, err = NewOpenAI(OpenAIOptions{Model: "m", BaseURL: "http://h/v1/", Dimensions: 8, Concurrency: 2, MaxRequestTokens: 99, Timeout: 1500e6, MaxRetries: -1, BatchSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	if s := o.Spec(); s.String() != "openai:m,batch=3,concurrency=2,dim=8,request_tokens=99,retries=0,timeout=1.5s,base=http://h/v1" {
		t.Errorf("openai spec %q", s)
	}
}

func TestSpecModel2Vec(t *testing.T) {
	dir := fixtureModel(t, "int8")
	rel, err := filepath.Rel(mustGetwd(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	e, err := Parse("model2vec:" + rel + ",maxtokens=64")
	if err != nil {
		t.Fatal(err)
	}
	s := mustSpecOf(t, e)
	if s.Kind != KindModel2Vec || s.Model != dir || s.Options["maxtokens"] != "64" {
		t.Errorf("spec %+v: want the absolute directory %s", s, dir)
	}
	e2, err := New(s, nil)
	if err != nil || e2.Identity() != e.Identity() {
		t.Errorf("rebuilt %v, %v", e2, err)
	}
	if _, ok := SpecFromIdentity(e.Identity()); ok {
		t.Errorf("a model2vec identity gave a spec")
	}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSpecFromIdentity(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	for _, spec := range specCases {
		e, err := Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		s, ok := SpecFromIdentity(e.Identity())
		if !ok {
			t.Errorf("SpecFromIdentity(%q) = false", e.Identity())
			continue
		}
		if s.Kind == KindOpenAI {
			if s.Model != mustSpecOf(t, e).Model || s.BaseURL != "" {
				t.Errorf("%q: derived %+v", e.Identity(), s)
			}
			continue
		}
		e2, err := New(s, nil)
		if err != nil || e2.Identity() != e.Identity() {
			t.Errorf("SpecFromIdentity(%q) = %s, which builds %v (%v)", e.Identity(), s, e2, err)
		}
	}
	o, err := NewOpenAI(OpenAIOptions{Model: "org/name:tag", Dimensions: 12})
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := SpecFromIdentity(o.Identity()); !ok || s.Model != "org/name:tag" || s.Options["dim"] != "12" {
		t.Errorf("SpecFromIdentity(%q) = %+v, %v", o.Identity(), s, ok)
	}
	for _, id := range []string{"", "x", "lexical-v1/", "lexical-v1/d768", "lexical-v1/d0/w1/c3-5x0.35/b0", "lexical-v1/d768/w1/c3-5x0.35/b0/stem/bogus",
		"lexical-v2/d768/w1/c3-5x0.35/b0/stem/stop", "randproj-v1/d8/lexical-v1/d768/w1/c0/b0", "openai/", "openai/m", "openai/m/dx", "openai//d8",
		"model2vec/minishlab_potion/0123456789ab/d256/t512", "lexical-v1/d768/w0/c0/b0/stem/stop"} {
		if s, ok := SpecFromIdentity(id); ok {
			t.Errorf("SpecFromIdentity(%q) = %+v", id, s)
		}
	}
}

func TestSpecPublic(t *testing.T) {
	s, err := ParseSpec("openai:m,base=https://user:hunter2@gw.example.com/v1?api-version=2024-02-01&api_key=sk-secret&Token=t")
	if err != nil {
		t.Fatal(err)
	}
	pub, removed := s.Public()
	if strings.Contains(pub.String(), "hunter2") || strings.Contains(pub.String(), "sk-secret") || strings.Contains(pub.String(), "user") ||
		strings.Contains(pub.BaseURL, "Token") {
		t.Errorf("public spec %q keeps a credential", pub)
	}
	if !strings.Contains(pub.BaseURL, "api-version=2024-02-01") || !strings.HasPrefix(pub.BaseURL, "https://gw.example.com/v1?") {
		t.Errorf("public base URL %q lost what is not secret", pub.BaseURL)
	}
	if len(removed) != 3 {
		t.Errorf("removed %q", removed)
	}
	if s.BaseURL == pub.BaseURL {
		t.Errorf("Public changed nothing")
	}
	plain, _ := ParseSpec("openai:m,base=http://localhost:11434/v1")
	if p, removed := plain.Public(); p.BaseURL != plain.BaseURL || removed != nil {
		t.Errorf("plain URL: %q %q", p.BaseURL, removed)
	}
}

func TestSpecValidate(t *testing.T) {
	bad := []Spec{
		{Kind: "bert"},
		{Kind: KindLexical, Model: "m"},
		{Kind: KindLexical, BaseURL: "http://h"},
		{Kind: KindLexical, Options: map[string]string{"dimension": "8"}}, // not canonical
		{Kind: KindOpenAI},
		{Kind: KindOpenAI, Model: "m", Options: map[string]string{"base": "http://h"}},
		{Kind: KindOpenAI, Model: "m", BaseURL: "ftp://h"},
		{Kind: KindOpenAI, Model: "m", Options: map[string]string{"timeout": "-1s"}},
		{Kind: KindOpenAI, Model: "m", Options: map[string]string{"timeout": "2h"}},
		{Kind: KindOpenAI, Model: "m", Options: map[string]string{"concurrency": "0"}},
		{Kind: KindOpenAI, Model: "m", Options: map[string]string{"request_tokens": "0"}},
		{Kind: KindModel2Vec},
		{Kind: KindModel2Vec, Model: "d", Options: map[string]string{"maxtokens": "0"}},
		{Kind: KindRandProj, Options: map[string]string{"seed": "0"}},
		{Kind: KindRandProj, Options: map[string]string{"dim": "8192", "lexdim": "65536"}}, // a 2 GiB matrix
	}
	for _, s := range bad {
		if err := s.Validate(); !errors.Is(err, ErrBadSpec) {
			t.Errorf("Validate(%+v) = %v", s, err)
		}
		if _, err := New(s, nil); !errors.Is(err, ErrBadSpec) {
			t.Errorf("New(%+v) = %v", s, err)
		}
	}
	if err := (Spec{}).Validate(); err != nil {
		t.Errorf("zero spec: %v", err)
	}
	if e, err := New(Spec{}, nil); err != nil || e.Identity() != Default().Identity() {
		t.Errorf("New(Spec{}) = %v, %v", e, err)
	}
}

func TestSameModel(t *testing.T) {
	a, _ := ParseSpec("openai:m,dim=8")
	b, _ := ParseSpec("OpenAI:m,concurrency=2")
	c, _ := ParseSpec("openai:n")
	if !a.SameModel(b) || a.SameModel(c) || !(Spec{}).SameModel(Spec{Kind: "lexical"}) {
		t.Errorf("SameModel")
	}
}

// wrapped is a decorator that hides its inner embedder's methods but for Unwrap.
type wrapped struct{ Embedder }

func (w wrapped) Unwrap() Embedder { return w.Embedder }

func TestSpecOfAndConcurrencyLookThroughWrappers(t *testing.T) {
	o, err := NewOpenAI(OpenAIOptions{Model: "m", BaseURL: "http://h/v1", Concurrency: 3})
	if err != nil {
		t.Fatal(err)
	}
	var e Embedder = wrapped{wrapped{o}}
	if s, ok := SpecOf(e); !ok || s.Model != "m" {
		t.Errorf("SpecOf(wrapped) = %+v, %v", s, ok)
	}
	if Concurrency(e) != 3 || Concurrency(Default()) != 0 || Inner(e) != Embedder(o) {
		t.Errorf("Concurrency(wrapped) = %d; Inner = %T", Concurrency(e), Inner(e))
	}
	type hidden struct{ Embedder } // no Unwrap: nothing to see
	if _, ok := SpecOf(hidden{o}); ok {
		t.Errorf("SpecOf saw through a wrapper without Unwrap")
	}
	// Whether vectors encode words is seen through wrappers too (a bench
	// memo, the breaker), so a wrapped lexical embedder keeps its weight.
	rp := NewRandProj(&RandProjOptions{Dimension: 16})
	for _, c := range []struct {
		e    Embedder
		want bool
	}{{Default(), true}, {wrapped{wrapped{Default()}}, true}, {wrapped{rp}, true}, {NewBreaker(Default(), nil), true}, {e, false}, {o, false}, {hidden{Default()}, false}, {nil, false}} {
		if got := MatchesWords(c.e); got != c.want {
			t.Errorf("MatchesWords(%T) = %v, want %v", c.e, got, c.want)
		}
	}
}

func TestNewOpenAIBuildOptions(t *testing.T) {
	f := newFakeServer(t, 8)
	t.Setenv("MY_EMBED_KEY", testKey)
	t.Setenv("OPENAI_API_KEY", "wrong")
	s, err := ParseSpec("openai:m,base=" + f.baseURL())
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(s, &BuildOptions{APIKeyEnv: "MY_EMBED_KEY", Headers: map[string]string{"X-Gateway": "g"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Embed(context.Background(), []string{"with the key from MY_EMBED_KEY"}); err != nil {
		t.Fatal(err)
	}
}
