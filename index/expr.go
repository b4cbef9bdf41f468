package index

import (
	"strconv"
	"strings"
	"time"
)

// Op is the operator of an Expr node.
type Op string

// Operators. And, Or and Not combine Args; the others compare Field.
const (
	OpAnd    Op = "and"    // every Arg holds
	OpOr     Op = "or"     // some Arg holds
	OpNot    Op = "not"    // Args[0] does not hold
	OpEq     Op = "="      // Field equals Values[0]
	OpNe     Op = "!="     // Field does not equal Values[0] (true when the attribute is missing)
	OpIn     Op = "in"     // Field equals one of Values
	OpPrefix Op = "prefix" // Field starts with Values[0]
	OpExists Op = "exists" // the attribute is set (a built-in field: is not empty)
	OpLt     Op = "<"      // created before Time
	OpLe     Op = "<="     // created at or before Time
	OpGt     Op = ">"      // created after Time
	OpGe     Op = ">="     // created at or after Time
)

// Built-in fields of a filter expression. Any other Field names an
// attribute (Record.Attrs).
const (
	FieldSource  = "source"  // Record.SourceURL
	FieldTitle   = "title"   // Record.Title
	FieldType    = "type"    // Record.DocType
	FieldCreated = "created" // Record.CreatedAt; only the time operators
)

// AttrField returns the Field of an attribute whose key is also the name of
// a built-in field ("attr.source" is the attribute "source").
func AttrField(key string) string { return "attr." + key }

// Expr is a filter expression: a tree of comparisons of a record's fields
// combined with and, or and not. The parser (index.ParseFilter) builds it
// from the one filter syntax every surface accepts; backends evaluate it
// with Match or translate it. An Expr is a plain value: it is not changed
// by Match, and safe to share once built.
type Expr struct {
	Op     Op
	Field  string    // the compared field: a Field* constant or an attribute key
	Values []string  // OpEq, OpNe, OpPrefix: one; OpIn: one or more
	Time   time.Time // OpLt, OpLe, OpGt, OpGe
	Args   []*Expr   // OpAnd, OpOr: two or more; OpNot: one
}

// Attr returns the attribute key e compares and whether it compares one (not
// a built-in field).
func (e *Expr) Attr() (string, bool) {
	switch e.Field {
	case FieldSource, FieldTitle, FieldType, FieldCreated:
		return "", false
	}
	if k, ok := strings.CutPrefix(e.Field, "attr."); ok {
		return k, true
	}
	return e.Field, true
}

// field returns the value of e's field in r and whether it is set.
func (e *Expr) field(r *Record) (string, bool) {
	switch e.Field {
	case FieldSource:
		return r.SourceURL, r.SourceURL != ""
	case FieldTitle:
		return r.Title, r.Title != ""
	case FieldType:
		return r.DocType, r.DocType != ""
	}
	k, _ := e.Attr()
	v, ok := r.Attrs[k]
	return v, ok
}

// Match reports whether r satisfies e. A nil Expr matches every record.
func (e *Expr) Match(r *Record) bool {
	if e == nil {
		return true
	}
	switch e.Op {
	case OpAnd:
		for _, a := range e.Args {
			if !a.Match(r) {
				return false
			}
		}
		return true
	case OpOr:
		for _, a := range e.Args {
			if a.Match(r) {
				return true
			}
		}
		return false
	case OpNot:
		return len(e.Args) == 1 && !e.Args[0].Match(r)
	case OpLt, OpLe, OpGt, OpGe:
		if e.Field != FieldCreated {
			return false
		}
		c := r.CreatedAt
		switch e.Op {
		case OpLt:
			return c.Before(e.Time)
		case OpLe:
			return !c.After(e.Time)
		case OpGt:
			return c.After(e.Time)
		default:
			return !c.Before(e.Time)
		}
	}
	v, ok := e.field(r)
	switch e.Op {
	case OpExists:
		return ok
	case OpEq:
		return ok && len(e.Values) == 1 && v == e.Values[0]
	case OpNe:
		return !ok || len(e.Values) != 1 || v != e.Values[0]
	case OpIn:
		if !ok {
			return false
		}
		for _, x := range e.Values {
			if v == x {
				return true
			}
		}
		return false
	case OpPrefix:
		return ok && len(e.Values) == 1 && strings.HasPrefix(v, e.Values[0])
	}
	return false
}

// Walk calls visit for e and every node below it, parents first; visit
// returns false to skip a node's children.
func (e *Expr) Walk(visit func(*Expr) bool) {
	if e == nil || !visit(e) {
		return
	}
	for _, a := range e.Args {
		a.Walk(visit)
	}
}

// String renders e in the filter syntax (index.ParseFilter reads it back to
// an equal Expr): values always quoted, sub-expressions parenthesised.
func (e *Expr) String() string {
	if e == nil {
		return ""
	}
	var b strings.Builder
	e.write(&b)
	return b.String()
}

func (e *Expr) write(b *strings.Builder) {
	switch e.Op {
	case OpAnd, OpOr:
		for i, a := range e.Args {
			if i > 0 {
				b.WriteString(" " + strings.ToUpper(string(e.Op)) + " ")
			}
			paren := a.Op == OpAnd || a.Op == OpOr
			if paren {
				b.WriteByte('(')
			}
			a.write(b)
			if paren {
				b.WriteByte(')')
			}
		}
		return
	case OpNot:
		b.WriteString("NOT (")
		if len(e.Args) == 1 {
			e.Args[0].write(b)
		}
		b.WriteByte(')')
		return
	}
	b.WriteString(quoteField(e.Field))
	switch e.Op {
	case OpExists:
		b.WriteString(" EXISTS")
	case OpIn:
		b.WriteString(" IN [")
		for i, v := range e.Values {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Quote(v))
		}
		b.WriteByte(']')
	case OpPrefix:
		b.WriteString(" STARTS WITH ")
		b.WriteString(strconv.Quote(first(e.Values)))
	case OpLt, OpLe, OpGt, OpGe:
		b.WriteString(" " + string(e.Op) + " ")
		b.WriteString(e.Time.UTC().Format(time.RFC3339Nano))
	default:
		b.WriteString(" " + string(e.Op) + " ")
		b.WriteString(strconv.Quote(first(e.Values)))
	}
}

// quoteField renders a field name so that the filter syntax reads it back as
// the same field: as it is when it is a simple name, else quoted.
func quoteField(f string) string {
	simple := f != ""
	for i, r := range f {
		ok := r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && (r >= '0' && r <= '9' || r == '.' || r == '-' || r == ':')
		if !ok {
			simple = false
			break
		}
	}
	if simple {
		switch strings.ToLower(f) {
		case "and", "or", "not", "in", "exists", "starts", "with":
			simple = false
		}
	}
	if simple {
		return f
	}
	return strconv.Quote(f)
}

func first(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}
