package embed

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Embedder kinds, the part of a spec before the first colon.
const (
	KindLexical   = "lexical"
	KindRandProj  = "randproj"
	KindModel2Vec = "model2vec"
	KindOpenAI    = "openai"
)

// Spec is an embedder configuration written down: what [Parse] reads from a
// command-line spec, what [New] builds, and what a store records so that it
// can rebuild its embedder later. A Spec never holds an API key or HTTP
// headers; those are given to [New] in [BuildOptions]. The zero Spec is the
// lexical default. A Spec is a plain value: reading it from several
// goroutines is safe; [Spec.Clone] it before changing its Options.
type Spec struct {
	// Kind is KindLexical (also for ""), KindRandProj, KindModel2Vec or KindOpenAI.
	Kind string `json:"kind"`
	// Model is the model name of an openai spec, or the model directory
	// (absolute) or pulled owner/name of a model2vec spec.
	Model string `json:"model,omitempty"`
	// BaseURL is the API root of an openai spec ("" = $OPENAI_BASE_URL, else
	// OpenAI's). It is the "base" option of a spec string.
	BaseURL string `json:"base_url,omitempty"`
	// Options are the spec's other k=v options by canonical name (see [Parse]).
	Options map[string]string `json:"options,omitempty"`
}

// BuildOptions are what [New] needs besides a [Spec]: the secrets a Spec
// never holds and the HTTP client. A nil *BuildOptions means the defaults.
// New only reads it.
type BuildOptions struct {
	// APIKey authenticates openai requests. Default: the environment variable
	// named by APIKeyEnv.
	APIKey string
	// APIKeyEnv names the environment variable read when APIKey is empty, and
	// the one error messages tell the user to set. Default "OPENAI_API_KEY".
	APIKeyEnv string
	// Headers are extra HTTP headers sent with every openai request (a
	// gateway's own authentication, an organisation id, ...). Like the key,
	// they may be secret: they are never part of a Spec.
	Headers map[string]string
	// HTTPClient sends openai requests. Default: a client with the spec's
	// timeout (60 s).
	HTTPClient *http.Client
}

// optionAliases maps each kind's accepted option names to the canonical one.
var optionAliases = map[string]map[string]string{
	KindLexical: {
		"dim": "dim", "dimension": "dim", "dimensions": "dim",
		"ngram": "ngram", "ngrams": "ngram",
		"word": "word", "char": "char", "bigram": "bigram", "stem": "stem", "stop": "stop",
	},
	KindRandProj: {
		"dim": "dim", "dimension": "dim", "dimensions": "dim", "seed": "seed", "lexdim": "lexdim",
		"ngram": "ngram", "ngrams": "ngram",
		"word": "word", "char": "char", "bigram": "bigram", "stem": "stem", "stop": "stop",
	},
	KindModel2Vec: {"maxtokens": "maxtokens", "max_tokens": "maxtokens", "max_length": "maxtokens"},
	KindOpenAI: {
		"dim": "dim", "dimension": "dim", "dimensions": "dim",
		"batch": "batch", "batch_size": "batch",
		"retries": "retries", "max_retries": "retries",
		"base": "base", "base_url": "base",
		"concurrency":    "concurrency",
		"request_tokens": "request_tokens", "max_request_tokens": "request_tokens",
		"timeout": "timeout",
	},
}

// maxSpecLen bounds a spec string: specs come from flags, files and stores.
const maxSpecLen = 4096

// ParseSpec reads a command-line spec (see [Parse]) into a [Spec] and checks
// every option. It loads nothing and contacts nothing.
func ParseSpec(spec string) (Spec, error) {
	if len(spec) > maxSpecLen {
		return Spec{}, fmt.Errorf("%w: spec of %d bytes (at most %d)", ErrBadSpec, len(spec), maxSpecLen)
	}
	spec = strings.TrimSpace(spec)
	kind, rest, _ := strings.Cut(spec, ":")
	s := Spec{Kind: strings.ToLower(strings.TrimSpace(kind))}
	if s.Kind == "" {
		s.Kind = KindLexical
	}
	aliases, ok := optionAliases[s.Kind]
	if !ok {
		return Spec{}, fmt.Errorf("%w: unknown kind %q (want \"lexical\", \"randproj\", \"model2vec:DIR\" or \"openai:MODEL\")", ErrBadSpec, truncateForError(kind))
	}
	parts := []string{}
	if strings.TrimSpace(rest) != "" {
		parts = strings.Split(rest, ",")
	}
	if s.Kind == KindOpenAI || s.Kind == KindModel2Vec {
		if len(parts) == 0 {
			parts = []string{""}
		}
		s.Model = strings.TrimSpace(parts[0])
		parts = parts[1:]
	}
	for _, kv := range parts {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return Spec{}, fmt.Errorf("%w: %s option %q is not key=value", ErrBadSpec, s.Kind, truncateForError(kv))
		}
		canon, ok := aliases[k]
		if !ok {
			return Spec{}, fmt.Errorf("%w: unknown %s option %q", ErrBadSpec, s.Kind, truncateForError(k))
		}
		if _, dup := s.Options[canon]; dup || (canon == "base" && s.BaseURL != "") {
			return Spec{}, fmt.Errorf("%w: %s option %q given twice", ErrBadSpec, s.Kind, truncateForError(k))
		}
		if canon == "base" {
			s.BaseURL = v
			continue
		}
		if s.Options == nil {
			s.Options = map[string]string{}
		}
		s.Options[canon] = v
	}
	if err := s.Validate(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// Validate checks the spec's kind, model and options without loading or
// contacting anything. Option names must be canonical.
func (s Spec) Validate() error {
	kind := s.kind()
	aliases, ok := optionAliases[kind]
	if !ok {
		return fmt.Errorf("%w: unknown kind %q", ErrBadSpec, truncateForError(s.Kind))
	}
	for k := range s.Options {
		if aliases[k] != k || k == "base" {
			return fmt.Errorf("%w: unknown %s option %q", ErrBadSpec, kind, truncateForError(k))
		}
	}
	if kind != KindOpenAI && kind != KindModel2Vec && s.Model != "" {
		return fmt.Errorf("%w: %s takes no model (got %q)", ErrBadSpec, kind, truncateForError(s.Model))
	}
	if kind != KindOpenAI && s.BaseURL != "" {
		return fmt.Errorf("%w: %s takes no base URL", ErrBadSpec, kind)
	}
	var err error
	switch kind {
	case KindLexical:
		_, err = lexicalOptionsFrom(s.Options)
	case KindRandProj:
		_, err = randProjOptionsFrom(s.Options)
	case KindModel2Vec:
		if s.Model == "" {
			return fmt.Errorf("%w: model2vec needs a model directory or a pulled model, e.g. \"model2vec:/path/to/potion-base-8M\" or \"model2vec:minishlab/potion-base-8M\"", ErrBadSpec)
		}
		_, err = model2VecOptionsFrom(s.Options)
	case KindOpenAI:
		if s.Model == "" {
			return fmt.Errorf("%w: openai needs a model, e.g. \"openai:text-embedding-3-small\"", ErrBadSpec)
		}
		if s.BaseURL != "" {
			if err := checkBaseURL(s.BaseURL); err != nil {
				return fmt.Errorf("%w: %w", ErrBadSpec, err)
			}
		}
		_, err = openAIOptionsFrom(s, nil)
	}
	return err
}

func (s Spec) kind() string {
	k := strings.ToLower(strings.TrimSpace(s.Kind))
	if k == "" {
		return KindLexical
	}
	return k
}

// String returns the spec in the form [Parse] reads, options sorted by name,
// e.g. "openai:nomic-embed-text,dim=768,base=http://localhost:11434/v1".
func (s Spec) String() string {
	var b strings.Builder
	b.WriteString(s.kind())
	sep := ":"
	if s.Model != "" {
		b.WriteString(":" + s.Model)
		sep = ","
	}
	for _, k := range slices.Sorted(maps.Keys(s.Options)) {
		b.WriteString(sep + k + "=" + s.Options[k])
		sep = ","
	}
	if s.BaseURL != "" {
		b.WriteString(sep + "base=" + s.BaseURL)
	}
	return b.String()
}

// SameModel reports whether s and o name the same kind and model, so that
// the options of one may complete the other's.
func (s Spec) SameModel(o Spec) bool {
	return s.kind() == o.kind() && s.Model == o.Model
}

// Clone returns a deep copy of s.
func (s Spec) Clone() Spec {
	s.Options = maps.Clone(s.Options)
	return s
}

// Public returns s without credentials, as a store records it: the base
// URL's user and password and any query parameter that looks like a secret
// are removed. removed names what was taken out, for a warning.
func (s Spec) Public() (pub Spec, removed []string) {
	pub = s.Clone()
	if pub.BaseURL == "" {
		return pub, nil
	}
	u, err := url.Parse(pub.BaseURL)
	if err != nil {
		return pub, nil // Validate rejects it; nothing to keep safe in an unparsable URL
	}
	if u.User != nil {
		u.User = nil
		removed = append(removed, "the user and password of the base URL")
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			if secretName(k) {
				q.Del(k)
				removed = append(removed, "the base URL's query parameter "+strconv.Quote(k))
			}
		}
		u.RawQuery = q.Encode()
	}
	slices.Sort(removed)
	pub.BaseURL = u.String()
	return pub, removed
}

// secretName reports whether a query parameter or header name looks like it
// carries a credential.
func secretName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"key", "token", "secret", "password", "passwd", "auth", "sig", "credential", "session", "cookie"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// New builds the embedder a spec describes. A model2vec spec loads the model
// from disk; an openai spec contacts nothing until its first Embed. Errors
// wrap ErrBadSpec.
func New(s Spec, o *BuildOptions) (Embedder, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	switch s.kind() {
	case KindRandProj:
		ro, _ := randProjOptionsFrom(s.Options)
		return NewRandProj(ro), nil
	case KindModel2Vec:
		mo, _ := model2VecOptionsFrom(s.Options)
		return loadModel2VecSpec(s.Model, mo)
	case KindOpenAI:
		oo, err := openAIOptionsFrom(s, o)
		if err != nil {
			return nil, err
		}
		e, err := NewOpenAI(oo)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadSpec, err)
		}
		return e, nil
	default:
		lo, _ := lexicalOptionsFrom(s.Options)
		return NewLexical(lo), nil
	}
}

// Specifier is implemented by embedders that can describe themselves as a
// [Spec]; every embedder of this package does.
type Specifier interface {
	Spec() Spec
}

// Unwrapper is implemented by embedders that wrap another one (a cache, a
// circuit breaker, a metrics decorator). [SpecOf] and [Inner] look through it.
type Unwrapper interface {
	Unwrap() Embedder
}

// Inner returns the innermost embedder under any [Unwrapper] wrappers.
func Inner(e Embedder) Embedder {
	for i := 0; i < 64 && e != nil; i++ {
		u, ok := e.(Unwrapper)
		if !ok {
			return e
		}
		e = u.Unwrap()
	}
	return e
}

// through returns the first embedder in e's chain of [Unwrapper] wrappers
// (e itself first) that implements T, and false when none does (or the
// chain is deeper than 64, which only a cycle makes it).
func through[T any](e Embedder) (T, bool) {
	for i := 0; i < 64 && e != nil; i++ {
		if t, ok := e.(T); ok {
			return t, true
		}
		u, ok := e.(Unwrapper)
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	var zero T
	return zero, false
}

// Concurrency returns the request concurrency of an embedder that splits
// large inputs into concurrent requests itself (an [OpenAI] embedder,
// possibly wrapped), and 0 for one that does not. Callers embedding many
// texts hand the former all of them in one call, and fan out over the latter.
func Concurrency(e Embedder) int {
	if c, ok := through[interface{ Concurrency() int }](e); ok {
		return c.Concurrency()
	}
	return 0
}

// SpecOf returns the spec of e, looking through wrappers, and false when no
// embedder in the chain describes itself.
func SpecOf(e Embedder) (Spec, bool) {
	if s, ok := through[Specifier](e); ok {
		return s.Spec(), true
	}
	return Spec{}, false
}

// SpecFromIdentity derives a spec from an embedder identity, for stores that
// recorded only the identity. It knows the lexical, randproj and openai
// forms; an openai spec so derived has no base URL. ok is false when the
// identity cannot be turned into a spec (model2vec, unknown forms).
func SpecFromIdentity(id string) (Spec, bool) {
	switch {
	case strings.HasPrefix(id, lexicalVersion+"/"):
		opts, ok := lexicalSpecOptions(strings.TrimPrefix(id, lexicalVersion+"/"))
		if !ok {
			return Spec{}, false
		}
		return finishDerived(Spec{Kind: KindLexical, Options: opts}, id)
	case strings.HasPrefix(id, randProjVersion+"/"):
		// randproj-v1/dN/sS/lexical-v1/...
		parts := strings.SplitN(strings.TrimPrefix(id, randProjVersion+"/"), "/", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[0], "d") || !strings.HasPrefix(parts[1], "s") ||
			!strings.HasPrefix(parts[2], lexicalVersion+"/") {
			return Spec{}, false
		}
		opts, ok := lexicalSpecOptions(strings.TrimPrefix(parts[2], lexicalVersion+"/"))
		if !ok {
			return Spec{}, false
		}
		if d, ok := opts["dim"]; ok {
			delete(opts, "dim")
			opts["lexdim"] = d
		}
		opts["dim"] = parts[0][1:]
		opts["seed"] = parts[1][1:]
		return finishDerived(Spec{Kind: KindRandProj, Options: opts}, id)
	case strings.HasPrefix(id, "openai/"):
		rest := strings.TrimPrefix(id, "openai/")
		i := strings.LastIndex(rest, "/d")
		if i <= 0 {
			return Spec{}, false
		}
		d, err := strconv.Atoi(rest[i+2:])
		if err != nil || d < 0 || d > maxOpenAIDim {
			return Spec{}, false
		}
		s := Spec{Kind: KindOpenAI, Model: rest[:i]}
		if d > 0 {
			s.Options = map[string]string{"dim": strconv.Itoa(d)}
		}
		if s.Validate() != nil {
			return Spec{}, false
		}
		return s, true
	}
	return Spec{}, false
}

// finishDerived drops default-valued options and checks that the spec
// rebuilds exactly the identity it came from.
func finishDerived(s Spec, id string) (Spec, bool) {
	if s.Validate() != nil {
		return Spec{}, false
	}
	e, err := New(s, nil)
	if err != nil || e.Identity() != id {
		return Spec{}, false
	}
	if sp, ok := SpecOf(e); ok {
		return sp, true
	}
	return s, true
}

// lexicalSpecOptions reads the parameter part of a lexical identity,
// "d768/w1/c3-5x0.35/b0/stem/stop", into spec options.
func lexicalSpecOptions(params string) (map[string]string, bool) {
	parts := strings.Split(params, "/")
	if len(parts) < 4 {
		return nil, false
	}
	opts := map[string]string{"stem": "0", "stop": "0"}
	if !strings.HasPrefix(parts[0], "d") || !strings.HasPrefix(parts[1], "w") || !strings.HasPrefix(parts[2], "c") || !strings.HasPrefix(parts[3], "b") {
		return nil, false
	}
	opts["dim"] = parts[0][1:]
	opts["word"] = parts[1][1:]
	if c := parts[2][1:]; c == "0" {
		opts["char"] = "0"
	} else {
		ngram, w, ok := strings.Cut(c, "x")
		if !ok {
			return nil, false
		}
		opts["ngram"], opts["char"] = ngram, w
	}
	opts["bigram"] = parts[3][1:]
	for _, p := range parts[4:] {
		switch p {
		case "stem":
			opts["stem"] = "1"
		case "stop":
			opts["stop"] = "1"
		default:
			return nil, false
		}
	}
	if opts["word"] == "0" && opts["char"] == "0" && opts["bigram"] == "0" {
		return nil, false
	}
	return opts, true
}

// Spec describes the lexical embedder; options at their defaults are left out.
func (l *Lexical) Spec() Spec {
	return Spec{Kind: KindLexical, Options: l.specOptions(true)}
}

// specOptions lists the non-default options; withDim includes "dim".
func (l *Lexical) specOptions(withDim bool) map[string]string {
	o := map[string]string{}
	if withDim && l.dim != defaultLexicalDim {
		o["dim"] = strconv.Itoa(l.dim)
	}
	weight := func(key string, w float32, def float64) {
		if float64(w) != float64(float32(def)) {
			o[key] = formatWeight(float64(w))
		}
	}
	weight("word", l.weights[famWord], defaultWordWeight)
	weight("char", l.weights[famChar], defaultCharWeight)
	weight("bigram", l.weights[famBigram], defaultBigramWeight)
	if l.weights[famChar] != 0 && (l.minN != defaultMinN || l.maxN != defaultMaxN) {
		o["ngram"] = strconv.Itoa(l.minN) + "-" + strconv.Itoa(l.maxN)
	}
	if !l.stem {
		o["stem"] = "0"
	}
	if !l.dropStop {
		o["stop"] = "0"
	}
	if len(o) == 0 {
		return nil
	}
	return o
}

// Spec describes the random-projection embedder; options at their
// defaults are left out.
func (p *RandProj) Spec() Spec {
	o := p.lex.specOptions(false)
	if o == nil {
		o = map[string]string{}
	}
	if p.dim != defaultRandProjDim {
		o["dim"] = strconv.Itoa(p.dim)
	}
	if p.seed != defaultRandProjSeed {
		o["seed"] = strconv.FormatUint(p.seed, 10)
	}
	if p.in != defaultLexicalDim {
		o["lexdim"] = strconv.Itoa(p.in)
	}
	if len(o) == 0 {
		o = nil
	}
	return Spec{Kind: KindRandProj, Options: o}
}

// Spec describes the model: its pulled owner/name when it was loaded by
// that name, else its absolute directory.
func (m *Model2Vec) Spec() Spec {
	s := Spec{Kind: KindModel2Vec, Model: m.source}
	if m.maxTokens != DefaultModel2VecMaxTokens {
		s.Options = map[string]string{"maxtokens": strconv.Itoa(m.maxTokens)}
	}
	return s
}

// Spec describes the client: model, base URL (as configured, which may hold
// credentials: see [Spec.Public]) and the options not at their defaults.
// "dim" is the configured dimension, else the one learned from the server.
func (o *OpenAI) Spec() Spec {
	s := Spec{Kind: KindOpenAI, Model: o.model, BaseURL: o.base}
	opts := map[string]string{}
	if d := o.Dimension(); d > 0 {
		opts["dim"] = strconv.Itoa(d)
	}
	if o.batch != defaultBatchSize {
		opts["batch"] = strconv.Itoa(o.batch)
	}
	if o.maxRetries != defaultMaxRetries {
		opts["retries"] = strconv.Itoa(o.maxRetries)
	}
	if o.concurrency != DefaultConcurrency {
		opts["concurrency"] = strconv.Itoa(o.concurrency)
	}
	if o.maxTokens != DefaultMaxRequestTokens {
		opts["request_tokens"] = strconv.Itoa(o.maxTokens)
	}
	if o.timeout != defaultHTTPTimeout {
		opts["timeout"] = o.timeout.String()
	}
	if len(opts) > 0 {
		s.Options = opts
	}
	return s
}

// lexicalOptionsFrom turns canonical lexical options into LexicalOptions.
func lexicalOptionsFrom(opts map[string]string) (*LexicalOptions, error) {
	o := &LexicalOptions{}
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		v := strings.TrimSpace(opts[k])
		switch k {
		case "dim":
			n, err := parseIntRange(k, v, 1, maxLexicalDim)
			if err != nil {
				return nil, err
			}
			o.Dimension = n
		case "ngram":
			lo, hi, found := strings.Cut(v, "-")
			if !found {
				hi = lo
			}
			a, err := parseIntRange(k, lo, 1, maxNGram)
			if err != nil {
				return nil, err
			}
			b, err := parseIntRange(k, hi, a, maxNGram)
			if err != nil {
				return nil, err
			}
			o.MinN, o.MaxN = a, b
		case "word", "char", "bigram":
			w, err := parseWeight(k, v)
			if err != nil {
				return nil, err
			}
			switch k {
			case "word":
				o.WordWeight = w
			case "char":
				o.CharWeight = w
			default:
				o.BigramWeight = w
			}
		case "stem", "stop":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("%w: %s=%q: want 0 or 1", ErrBadSpec, k, truncateForError(v))
			}
			if k == "stem" {
				o.NoStemming = !b
			} else {
				o.KeepStopWords = !b
			}
		default:
			return nil, fmt.Errorf("%w: unknown lexical option %q", ErrBadSpec, truncateForError(k))
		}
	}
	if o.WordWeight < 0 && o.CharWeight < 0 && o.BigramWeight < 0 {
		return nil, fmt.Errorf("%w: lexical: every feature family is switched off", ErrBadSpec)
	}
	return o, nil
}

// parseWeight reads a feature weight; 0 switches the family off (-1).
func parseWeight(k, v string) (float64, error) {
	w, err := strconv.ParseFloat(v, 64)
	if err != nil || w != w || w < 0 || w > 1e6 {
		return 0, fmt.Errorf("%w: %s=%q: want a weight between 0 and 1e6", ErrBadSpec, k, truncateForError(v))
	}
	if w == 0 {
		w = -1 // switched off
	}
	return w, nil
}

// randProjOptionsFrom turns canonical randproj options into RandProjOptions.
func randProjOptionsFrom(opts map[string]string) (*RandProjOptions, error) {
	o := &RandProjOptions{}
	lex := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		v := strings.TrimSpace(opts[k])
		switch k {
		case "dim":
			n, err := parseIntRange(k, v, 1, maxRandProjDim)
			if err != nil {
				return nil, err
			}
			o.Dimension = n
		case "seed":
			s, err := strconv.ParseUint(v, 10, 64)
			if err != nil || s == 0 {
				return nil, fmt.Errorf("%w: seed=%q: want a positive integer", ErrBadSpec, truncateForError(v))
			}
			o.Seed = s
		case "lexdim":
			lex["dim"] = v
		default:
			lex[k] = v
		}
	}
	lo, err := lexicalOptionsFrom(lex)
	if err != nil {
		return nil, err
	}
	o.Lexical = lo
	in, out := cmp.Or(lo.Dimension, defaultLexicalDim), cmp.Or(o.Dimension, defaultRandProjDim)
	if in*out > maxRandProjMatrix {
		return nil, fmt.Errorf("%w: randproj: lexdim × dim = %d × %d is more than %d matrix entries", ErrBadSpec, in, out, maxRandProjMatrix)
	}
	return o, nil
}

// maxRandProjMatrix bounds the projection matrix a spec may ask for: 2^26
// float32 entries, 256 MiB.
const maxRandProjMatrix = 1 << 26

func model2VecOptionsFrom(opts map[string]string) (*Model2VecOptions, error) {
	o := &Model2VecOptions{}
	for k, v := range opts {
		switch k {
		case "maxtokens":
			n, err := parseIntRange(k, v, 1, 1<<20)
			if err != nil {
				return nil, err
			}
			o.MaxTokens = n
		default:
			return nil, fmt.Errorf("%w: unknown model2vec option %q", ErrBadSpec, truncateForError(k))
		}
	}
	return o, nil
}

// maxSpecTimeout bounds the timeout option.
const maxSpecTimeout = time.Hour

// openAIOptionsFrom turns an openai spec and build options into OpenAIOptions.
func openAIOptionsFrom(s Spec, b *BuildOptions) (OpenAIOptions, error) {
	o := OpenAIOptions{Model: s.Model, BaseURL: s.BaseURL}
	if b != nil {
		o.APIKey, o.APIKeyEnv, o.Headers, o.HTTPClient = b.APIKey, b.APIKeyEnv, b.Headers, b.HTTPClient
	}
	for _, k := range slices.Sorted(maps.Keys(s.Options)) {
		v := strings.TrimSpace(s.Options[k])
		var err error
		switch k {
		case "dim":
			o.Dimensions, err = parseIntRange(k, v, 1, maxOpenAIDim)
		case "batch":
			o.BatchSize, err = parseIntRange(k, v, 1, maxBatchSize)
		case "retries":
			o.MaxRetries, err = parseIntRange(k, v, -1, maxRetriesLimit)
			if err == nil && o.MaxRetries == 0 {
				o.MaxRetries = -1 // "retries=0" means none, not the default
			}
		case "concurrency":
			o.Concurrency, err = parseIntRange(k, v, 1, maxConcurrency)
		case "request_tokens":
			o.MaxRequestTokens, err = parseIntRange(k, v, 1, maxRequestTokensLimit)
		case "timeout":
			d, perr := time.ParseDuration(v)
			if perr != nil || d <= 0 || d > maxSpecTimeout {
				err = fmt.Errorf("%w: timeout=%q: want a duration such as 30s, at most 1h", ErrBadSpec, truncateForError(v))
			}
			o.Timeout = d
		default:
			err = fmt.Errorf("%w: unknown openai option %q", ErrBadSpec, truncateForError(k))
		}
		if err != nil {
			return OpenAIOptions{}, err
		}
	}
	return o, nil
}

// loadModel2VecSpec loads a model2vec spec's model: an existing directory,
// else a pulled owner/name. The spec it reports is an absolute directory,
// or the owner/name it was found by.
func loadModel2VecSpec(target string, opts *Model2VecOptions) (Embedder, error) {
	dir, source := target, ""
	if st, err := os.Stat(target); err != nil || !st.IsDir() {
		cached, cerr := CachedModelDir(target)
		if cerr != nil {
			return nil, fmt.Errorf("%w: model2vec: %q is neither a model directory nor a pulled model (%v); "+
				"download one with \"ragmem model pull minishlab/potion-base-8M\"", ErrBadSpec, truncateForError(target), cerr)
		}
		dir, source = cached, target
	}
	m, err := LoadModel2Vec(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSpec, err)
	}
	if source != "" {
		m.source = source
	}
	return m, nil
}

// absDir returns dir made absolute, or dir itself when that fails.
func absDir(dir string) string {
	if a, err := filepath.Abs(dir); err == nil {
		return a
	}
	return dir
}
