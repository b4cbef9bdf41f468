package index

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// ErrBadFilter is returned by ParseFilter for an expression it cannot read;
// the message says where and what was expected.
var ErrBadFilter = errors.New("index: invalid filter")

// Bounds of a filter expression.
const (
	MaxFilterBytes  = 4096 // longest expression
	MaxFilterDepth  = 32   // deepest nesting of parentheses and NOT
	MaxFilterNodes  = 512  // comparisons and operators in one expression
	MaxFilterValues = 1024 // values in one IN [...] set
)

// ParseFilter parses a filter expression, the one filter syntax of every
// surface (CLI --filter, the HTTP API's and MCP tools' "filter"):
//
//	lang = en AND (team IN [search, infra] OR NOT draft EXISTS)
//	source STARTS WITH "https://docs.rs/" AND created >= 2025-01-01
//	type = memory AND created > now-7d
//
// A comparison is FIELD OP VALUE. FIELD is source (the source URL), title,
// type (knowledge, memory or preference), created (when the chunk was
// indexed), or else the key of an attribute set when the source was indexed
// (attr.KEY names an attribute whose key is one of the built-in names). The
// operators are
//
//	=  !=                     equal, not equal (!= also holds when the attribute is missing)
//	IN [v1, v2, ...]          equal to one of the values
//	STARTS WITH v             begins with v (for source: a site or a folder)
//	EXISTS                    the attribute is set
//	<  <=  >  >=              created before or after a time
//
// and comparisons combine with AND, OR, NOT and parentheses (NOT binds
// tightest, then AND, then OR). Keywords are case-insensitive; field names
// and values are not. A value is a word (letters, digits and any of
// ._-:/@+*#%~, so URLs need no quotes unless they hold other characters) or
// a quoted string ("..." or '...', with backslash escapes). A time is RFC
// 3339 (2025-01-31T12:00:00Z), a date (2025-01-31, midnight UTC) or now-N
// with a unit s, m, h, d or w (now-7d). Source values are canonicalised like
// every source URL (see CanonicalURL) when the filter is used.
//
// Errors wrap ErrBadFilter and give the column (1-based) of the problem.
func ParseFilter(s string) (*Expr, error) { return parseFilter(s, time.Now()) }

func parseFilter(s string, now time.Time) (*Expr, error) {
	if len(s) > MaxFilterBytes {
		return nil, fmt.Errorf("%w: the expression is longer than %d bytes", ErrBadFilter, MaxFilterBytes)
	}
	if !utf8.ValidString(s) {
		return nil, fmt.Errorf("%w: the expression is not valid UTF-8", ErrBadFilter)
	}
	p := &filterParser{src: s, now: now.UTC()}
	if err := p.lex(); err != nil {
		return nil, err
	}
	if len(p.toks) == 1 {
		return nil, fmt.Errorf("%w: the expression is empty", ErrBadFilter)
	}
	e, err := p.or(0)
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.errAt(t, "expected AND, OR or the end of the expression, found %s", t.desc())
	}
	return e, nil
}

type tokKind int

const (
	tEOF tokKind = iota
	tWord
	tString
	tOp     // = != < <= > >=
	tLParen // (
	tRParen // )
	tLBrack // [
	tRBrack // ]
	tComma
)

type token struct {
	kind tokKind
	text string // the word, the unquoted string or the operator
	col  int    // 1-based column (in runes) where it starts
}

func (t token) desc() string {
	switch t.kind {
	case tEOF:
		return "the end of the expression"
	case tString:
		return strconv.Quote(t.text)
	}
	return fmt.Sprintf("%q", t.text)
}

// keyword reports whether t is the keyword kw (case-insensitive).
func (t token) keyword(kw string) bool { return t.kind == tWord && strings.EqualFold(t.text, kw) }

type filterParser struct {
	src   string
	now   time.Time
	toks  []token
	pos   int
	nodes int
}

func (p *filterParser) errAt(t token, format string, args ...any) error {
	return fmt.Errorf("%w: column %d: %s", ErrBadFilter, t.col, fmt.Sprintf(format, args...))
}

func wordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("._-:/@+*#%~", r)
}

func (p *filterParser) lex() error {
	s := p.src
	col := 1
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		start := col
		switch {
		case unicode.IsSpace(r):
			i += n
			col++
			continue
		case r == '(' || r == ')' || r == '[' || r == ']' || r == ',':
			k := map[rune]tokKind{'(': tLParen, ')': tRParen, '[': tLBrack, ']': tRBrack, ',': tComma}[r]
			p.toks = append(p.toks, token{k, string(r), start})
			i += n
			col++
			continue
		case r == '=' || r == '!' || r == '<' || r == '>':
			op, used := string(r), 1
			if i+1 < len(s) && s[i+1] == '=' {
				op, used = op+"=", 2
			}
			switch op {
			case "!":
				return fmt.Errorf("%w: column %d: \"!\" must be followed by \"=\" (use NOT to negate)", ErrBadFilter, start)
			case "==":
				op = "="
			}
			p.toks = append(p.toks, token{tOp, op, start})
			i += used
			col += used
			continue
		case r == '"' || r == '\'':
			str, used, err := unquote(s[i:], byte(r))
			if err != nil {
				return fmt.Errorf("%w: column %d: %v", ErrBadFilter, start, err)
			}
			p.toks = append(p.toks, token{tString, str, start})
			col += utf8.RuneCountInString(s[i : i+used])
			i += used
			continue
		case wordRune(r):
			j := i
			for j < len(s) {
				r2, n2 := utf8.DecodeRuneInString(s[j:])
				if !wordRune(r2) {
					break
				}
				j += n2
			}
			p.toks = append(p.toks, token{tWord, s[i:j], start})
			col += utf8.RuneCountInString(s[i:j])
			i = j
			continue
		}
		return fmt.Errorf("%w: column %d: unexpected character %q", ErrBadFilter, start, r)
	}
	p.toks = append(p.toks, token{kind: tEOF, col: col})
	return nil
}

// unquote reads a quoted string at the start of s, returning its value and
// the bytes it took.
func unquote(s string, q byte) (string, int, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == q:
			return b.String(), i + 1, nil
		case c == '\\':
			if i+1 >= len(s) {
				return "", 0, errors.New("unterminated string")
			}
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'v':
				b.WriteByte('\v')
			case '\\', '"', '\'':
				b.WriteByte(s[i])
			case 'u', 'U', 'x':
				// \xHH, \uHHHH, \UHHHHHHHH, as Go reads them.
				w := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[i]]
				if i+w >= len(s) {
					return "", 0, errors.New("unterminated escape in string")
				}
				v, err := strconv.ParseUint(s[i+1:i+1+w], 16, 32)
				if err != nil || v > unicode.MaxRune || (s[i] == 'x' && v >= 0x80) {
					return "", 0, fmt.Errorf("invalid escape \\%s", s[i:i+1+w])
				}
				b.WriteRune(rune(v))
				i += w
			default:
				return "", 0, fmt.Errorf("unknown escape \\%c in string", s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, errors.New("unterminated string")
}

func (p *filterParser) peek() token { return p.toks[p.pos] }

func (p *filterParser) next() token {
	t := p.toks[p.pos]
	if t.kind != tEOF {
		p.pos++
	}
	return t
}

func (p *filterParser) node(t token) error {
	p.nodes++
	if p.nodes > MaxFilterNodes {
		return p.errAt(t, "the expression has more than %d parts", MaxFilterNodes)
	}
	return nil
}

// or := and (OR and)*
func (p *filterParser) or(depth int) (*Expr, error) {
	return p.chain(depth, "OR", OpOr, p.and)
}

// and := unary (AND unary)*
func (p *filterParser) and(depth int) (*Expr, error) {
	return p.chain(depth, "AND", OpAnd, p.unary)
}

func (p *filterParser) chain(depth int, kw string, op Op, sub func(int) (*Expr, error)) (*Expr, error) {
	e, err := sub(depth)
	if err != nil {
		return nil, err
	}
	var args []*Expr
	for p.peek().keyword(kw) {
		t := p.next()
		if args == nil {
			if err := p.node(t); err != nil {
				return nil, err
			}
			args = []*Expr{e}
		}
		e2, err := sub(depth)
		if err != nil {
			return nil, err
		}
		args = append(args, e2)
	}
	if args == nil {
		return e, nil
	}
	return &Expr{Op: op, Args: args}, nil
}

// unary := NOT unary | ( or ) | comparison
func (p *filterParser) unary(depth int) (*Expr, error) {
	t := p.peek()
	if depth >= MaxFilterDepth {
		return nil, p.errAt(t, "the expression nests deeper than %d levels", MaxFilterDepth)
	}
	switch {
	case t.keyword("NOT"):
		p.next()
		if err := p.node(t); err != nil {
			return nil, err
		}
		e, err := p.unary(depth + 1)
		if err != nil {
			return nil, err
		}
		return &Expr{Op: OpNot, Args: []*Expr{e}}, nil
	case t.kind == tLParen:
		p.next()
		e, err := p.or(depth + 1)
		if err != nil {
			return nil, err
		}
		if c := p.next(); c.kind != tRParen {
			return nil, p.errAt(c, "expected \")\" to close the \"(\" at column %d, found %s", t.col, c.desc())
		}
		return e, nil
	}
	return p.comparison()
}

// comparison := field (= | != | < | <= | > | >=) value | field IN [values] |
// field STARTS WITH value | field EXISTS
func (p *filterParser) comparison() (*Expr, error) {
	ft := p.next()
	field, err := p.fieldName(ft)
	if err != nil {
		return nil, err
	}
	ot := p.next()
	switch {
	case ot.kind == tOp:
		return p.opComparison(field, ot)
	case ot.keyword("IN"):
		if field == FieldCreated {
			return nil, p.errAt(ot, "created takes <, <=, > or >= (a time range), not IN")
		}
		vs, err := p.valueSet(ot)
		if err != nil {
			return nil, err
		}
		return &Expr{Op: OpIn, Field: field, Values: vs}, nil
	case ot.keyword("STARTS"):
		if w := p.next(); !w.keyword("WITH") {
			return nil, p.errAt(w, "expected WITH after STARTS, found %s", w.desc())
		}
		if field == FieldCreated {
			return nil, p.errAt(ot, "created takes <, <=, > or >= (a time range), not STARTS WITH")
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		return &Expr{Op: OpPrefix, Field: field, Values: []string{v}}, nil
	case ot.keyword("EXISTS"):
		if field == FieldCreated {
			return nil, p.errAt(ot, "every chunk has a created time; EXISTS does not apply to it")
		}
		return &Expr{Op: OpExists, Field: field}, nil
	}
	return nil, p.errAt(ot, "expected an operator (=, !=, IN, STARTS WITH, EXISTS, <, <=, >, >=) after %s, found %s", quoteField(field), ot.desc())
}

// fieldName checks that token ft names a field (a word that is not a
// keyword, or a quoted string; attr. followed by a key) and returns it.
func (p *filterParser) fieldName(ft token) (string, error) {
	if err := p.node(ft); err != nil {
		return "", err
	}
	switch {
	case ft.kind == tString:
	case ft.kind == tWord && isKeyword(ft.text):
		return "", p.errAt(ft, "expected a field name, found the keyword %s", strings.ToUpper(ft.text))
	case ft.kind == tWord:
	default:
		return "", p.errAt(ft, "expected a field name (source, title, type, created or an attribute), found %s", ft.desc())
	}
	if ft.text == "" {
		return "", p.errAt(ft, "the field name is empty")
	}
	if ft.kind == tWord && ft.text == "attr." {
		return "", p.errAt(ft, "attr. must be followed by an attribute key")
	}
	return ft.text, nil
}

// opComparison reads the value of field compared by operator ot: a time
// for created (a range only), a value for = and != on any other field.
func (p *filterParser) opComparison(field string, ot token) (*Expr, error) {
	if field == FieldCreated {
		if ot.text == "=" || ot.text == "!=" {
			return nil, p.errAt(ot, "created takes <, <=, > or >= (a time range), not %s", ot.text)
		}
		tm, err := p.timeValue(p.next())
		if err != nil {
			return nil, err
		}
		return &Expr{Op: Op(ot.text), Field: field, Time: tm}, nil
	}
	if ot.text != "=" && ot.text != "!=" {
		return nil, p.errAt(ot, "%s compares times and only works on created; %s takes =, !=, IN, STARTS WITH or EXISTS", ot.text, field)
	}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	return &Expr{Op: Op(ot.text), Field: field, Values: []string{v}}, nil
}

// valueSet reads the set [a, b, c] after IN (token in): at least one and
// at most MaxFilterValues values.
func (p *filterParser) valueSet(in token) ([]string, error) {
	if b := p.next(); b.kind != tLBrack {
		return nil, p.errAt(b, "expected \"[\" after IN (a set is written [a, b, c]), found %s", b.desc())
	}
	var vs []string
	for {
		if p.peek().kind == tRBrack && len(vs) == 0 {
			return nil, p.errAt(p.peek(), "the set after IN is empty")
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		if len(vs) == MaxFilterValues {
			return nil, p.errAt(in, "the set after IN has more than %d values", MaxFilterValues)
		}
		vs = append(vs, v)
		c := p.next()
		if c.kind == tRBrack {
			return vs, nil
		}
		if c.kind != tComma {
			return nil, p.errAt(c, "expected \",\" or \"]\" in the set, found %s", c.desc())
		}
	}
}

func isKeyword(w string) bool {
	switch strings.ToUpper(w) {
	case "AND", "OR", "NOT", "IN", "STARTS", "WITH", "EXISTS":
		return true
	}
	return false
}

func (p *filterParser) value() (string, error) {
	t := p.next()
	switch {
	case t.kind == tString:
		return t.text, nil
	case t.kind == tWord && !isKeyword(t.text):
		return t.text, nil
	}
	return "", p.errAt(t, "expected a value (a word or a quoted string), found %s", t.desc())
}

// timeValue reads RFC 3339, a date, or now-N<unit>.
func (p *filterParser) timeValue(t token) (time.Time, error) {
	if t.kind != tWord && t.kind != tString {
		return time.Time{}, p.errAt(t, "expected a time (2025-01-31, 2025-01-31T12:00:00Z or now-7d), found %s", t.desc())
	}
	s := t.text
	if tm, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return tm.UTC(), nil
	}
	if tm, err := time.Parse("2006-01-02", s); err == nil {
		return tm, nil
	}
	if strings.EqualFold(s, "now") {
		return p.now, nil
	}
	if rest, ok := cutPrefixFold(s, "now-"); ok && len(rest) >= 2 {
		unit := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour, 'w': 7 * 24 * time.Hour}[rest[len(rest)-1]]
		n, err := strconv.ParseUint(rest[:len(rest)-1], 10, 32)
		if unit != 0 && err == nil && n <= 100*366 {
			d := time.Duration(n) * unit
			if d/unit == time.Duration(n) {
				return p.now.Add(-d), nil
			}
		}
	}
	return time.Time{}, p.errAt(t, "%s is not a time: write 2025-01-31, 2025-01-31T12:00:00Z or now-7d (units s, m, h, d, w)", t.desc())
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// SourceIs is the expression "the source URL is u".
func SourceIs(u string) *Expr {
	return &Expr{Op: OpEq, Field: FieldSource, Values: []string{u}}
}

// SourceUnder is the expression "the source URL starts with prefix".
func SourceUnder(prefix string) *Expr {
	return &Expr{Op: OpPrefix, Field: FieldSource, Values: []string{prefix}}
}

// AllOf is the conjunction of parts, nil ones left out: nil when none is
// left, the one part when one is.
func AllOf(parts ...*Expr) *Expr {
	parts = slices.DeleteFunc(slices.Clone(parts), func(e *Expr) bool { return e == nil })
	switch len(parts) {
	case 0:
		return nil
	case 1:
		return parts[0]
	}
	return &Expr{Op: OpAnd, Args: parts}
}
