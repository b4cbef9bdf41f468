package extract

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
)

// A PDF is checked, and decrypted when it opens without a password, before
// the PDF library reads it. The library follows what the file says without
// bounds in places no recover() or deadline reaches: a trailer whose /Prev
// names its own cross-reference section, or object streams whose /Extends
// name each other, are followed forever; an object stream of /N
// 9000000000000000000 objects is searched that many times; a
// cross-reference subsection that starts at object 2^30 allocates an entry
// for every object number below it. scanPDF reads the file's syntax with
// its own small lexer (bounded in depth and in what it keeps) and refuses
// these before the library sees them; what it cannot foresee, the sandbox
// the command line reads documents in (cmd/ragmem/internal/docread) bounds.

// Bounds of the scan.
const (
	pdfMaxDepth      = 64      // nesting of arrays and dictionaries
	pdfKeepArray     = 4096    // array elements kept (the rest are read, not kept)
	pdfMaxSections   = 4096    // cross-reference sections in a /Prev chain
	pdfMaxExtends    = 1024    // object streams in an /Extends chain
	pdfMaxTrailers   = 1024    // trailer and cross-reference stream dictionaries kept
	pdfMaxStringKeep = 4096    // bytes of a string kept decoded
	pdfScanMaxDefs   = 1 << 22 // object definitions
	pdfKeepValues    = 1 << 16 // values kept of one object (the rest are read, not kept)
)

// pdfTokKind is the kind of a PDF token.
type pdfTokKind byte

const (
	tokEOF pdfTokKind = iota
	tokNumber
	tokName
	tokString    // a literal string, (...)
	tokHexString // <...>
	tokKeyword   // obj, endobj, stream, R, true, null, trailer, ...
	tokDictOpen
	tokDictClose
	tokArrayOpen
	tokArrayClose
	tokOther // a stray delimiter
)

// pdfToken is a token: its kind and its span in the file.
type pdfToken struct {
	kind       pdfTokKind
	start, end int
}

func isPDFSpace(c byte) bool {
	switch c {
	case 0, '\t', '\n', '\f', '\r', ' ':
		return true
	}
	return false
}

func isPDFDelim(c byte) bool {
	switch c {
	case '<', '>', '(', ')', '[', ']', '{', '}', '/', '%':
		return true
	}
	return false
}

// pdfLexer tokenizes PDF syntax from a position in a file. It is not safe
// for concurrent use.
type pdfLexer struct {
	b   []byte
	pos int
}

// next returns the next token, skipping white space and comments.
func (l *pdfLexer) next() pdfToken {
	b := l.b
	for l.pos < len(b) {
		c := b[l.pos]
		if isPDFSpace(c) {
			l.pos++
			continue
		}
		if c == '%' {
			for l.pos < len(b) && b[l.pos] != '\n' && b[l.pos] != '\r' {
				l.pos++
			}
			continue
		}
		break
	}
	start := l.pos
	if start >= len(b) {
		return pdfToken{kind: tokEOF, start: start, end: start}
	}
	tok := func(k pdfTokKind) pdfToken { return pdfToken{kind: k, start: start, end: l.pos} }
	switch c := b[start]; c {
	case '(':
		l.pos = literalEnd(b, start+1)
		return tok(tokString)
	case '<':
		if start+1 < len(b) && b[start+1] == '<' {
			l.pos += 2
			return tok(tokDictOpen)
		}
		if i := bytes.IndexByte(b[start+1:], '>'); i >= 0 {
			l.pos = start + 1 + i + 1
		} else {
			l.pos = len(b)
		}
		return tok(tokHexString)
	case '>':
		l.pos++
		if l.pos < len(b) && b[l.pos] == '>' {
			l.pos++
			return tok(tokDictClose)
		}
		return tok(tokOther)
	case '[':
		l.pos++
		return tok(tokArrayOpen)
	case ']':
		l.pos++
		return tok(tokArrayClose)
	case '/':
		l.pos++
		for l.pos < len(b) && !isPDFSpace(b[l.pos]) && !isPDFDelim(b[l.pos]) {
			l.pos++
		}
		return tok(tokName)
	case ')', '{', '}':
		l.pos++
		return tok(tokOther)
	}
	for l.pos < len(b) && !isPDFSpace(b[l.pos]) && !isPDFDelim(b[l.pos]) {
		l.pos++
	}
	if isPDFNumber(b[start:l.pos]) {
		return tok(tokNumber)
	}
	return tok(tokKeyword)
}

// literalEnd returns the index after the ')' that closes a literal string
// whose content starts at i (or len(b)).
func literalEnd(b []byte, i int) int {
	depth := 1
	for i < len(b) {
		switch b[i] {
		case '\\':
			i += 2
			continue
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return i + 1
			}
		}
		i++
	}
	return len(b)
}

func isPDFNumber(s []byte) bool {
	if len(s) == 0 {
		return false
	}
	if s[0] == '+' || s[0] == '-' {
		s = s[1:]
	}
	digits, dots := 0, 0
	for _, c := range s {
		switch {
		case '0' <= c && c <= '9':
			digits++
		case c == '.':
			dots++
		default:
			return false
		}
	}
	return digits > 0 && dots <= 1
}

// decodeString returns the bytes a string token stands for.
func decodeString(b []byte, t pdfToken) []byte {
	raw := b[t.start:t.end]
	var out []byte
	if t.kind == tokHexString {
		raw = bytes.TrimSuffix(raw[1:], []byte(">"))
		var hi int = -1
		for _, c := range raw {
			v := unhexDigit(c)
			if v < 0 {
				continue
			}
			if hi < 0 {
				hi = v
				continue
			}
			out = append(out, byte(hi<<4|v))
			hi = -1
		}
		if hi >= 0 {
			out = append(out, byte(hi<<4))
		}
		return out
	}
	raw = raw[1:]
	if len(raw) > 0 && raw[len(raw)-1] == ')' {
		raw = raw[:len(raw)-1]
	}
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' || i+1 >= len(raw) {
			out = append(out, c)
			continue
		}
		i++
		switch c = raw[i]; c {
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case '\r':
			if i+1 < len(raw) && raw[i+1] == '\n' {
				i++
			}
		case '\n':
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := int(c - '0')
			for k := 0; k < 2 && i+1 < len(raw) && '0' <= raw[i+1] && raw[i+1] <= '7'; k++ {
				i++
				v = v*8 + int(raw[i]-'0')
			}
			out = append(out, byte(v))
		default:
			out = append(out, c)
		}
	}
	return out
}

func unhexDigit(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// decodeName returns a name token's name, #xx escapes decoded.
func decodeName(b []byte, t pdfToken) string {
	raw := b[t.start+1 : t.end]
	if bytes.IndexByte(raw, '#') < 0 {
		return string(raw)
	}
	var out []byte
	for i := 0; i < len(raw); i++ {
		if raw[i] == '#' && i+2 < len(raw) {
			if hi, lo := unhexDigit(raw[i+1]), unhexDigit(raw[i+2]); hi >= 0 && lo >= 0 {
				out = append(out, byte(hi<<4|lo))
				i += 2
				continue
			}
		}
		out = append(out, raw[i])
	}
	return string(out)
}

// pdfKind is the kind of a PDF value.
type pdfKind byte

const (
	pdfNull pdfKind = iota
	pdfInt
	pdfReal
	pdfBool
	pdfNameKind
	pdfString
	pdfArray
	pdfDict
	pdfRef
	pdfKeyword
)

// pdfObj is a value read by the scan. Arrays keep their first pdfKeepArray
// elements, strings their first pdfMaxStringKeep bytes; the span is the
// value's in the file.
type pdfObj struct {
	kind       pdfKind
	i          int64 // pdfInt (saturated), pdfRef: the object number
	gen        int64 // pdfRef
	s          string
	start, end int
	arr        []*pdfObj
	dict       map[string]*pdfObj
}

func (o *pdfObj) key(k string) *pdfObj {
	if o == nil || o.kind != pdfDict {
		return nil
	}
	return o.dict[k]
}

func (o *pdfObj) isName(n string) bool { return o != nil && o.kind == pdfNameKind && o.s == n }

// intValue returns an integer, following a reference through ints (the
// scan's direct integer objects).
func (o *pdfObj) intValue(ints map[int64]int64) (int64, bool) {
	switch {
	case o == nil:
		return 0, false
	case o.kind == pdfInt:
		return o.i, true
	case o.kind == pdfRef && ints != nil:
		v, ok := ints[o.i]
		return v, ok
	}
	return 0, false
}

// pdfSpan is the span of a string token that the scan met, and whether it
// is to be left as it is when the file is decrypted (a signature's bytes).
type pdfSpan struct {
	tok  pdfToken
	keep bool
}

// pdfParser reads values with a lexer. It is not safe for concurrent use.
type pdfParser struct {
	lex     pdfLexer
	peeked  []pdfToken
	strings []pdfSpan // strings read since the last reset
	kept    int       // values kept since the last reset
}

// reset starts a new top-level value.
func (p *pdfParser) reset() {
	p.strings = p.strings[:0]
	p.kept = 0
}

// keep reports whether one more value may be kept.
func (p *pdfParser) keep() bool {
	p.kept++
	return p.kept <= pdfKeepValues
}

func (p *pdfParser) token() pdfToken {
	if n := len(p.peeked); n > 0 {
		t := p.peeked[n-1]
		p.peeked = p.peeked[:n-1]
		return t
	}
	return p.lex.next()
}

func (p *pdfParser) unread(t pdfToken) { p.peeked = append(p.peeked, t) }

func (p *pdfParser) text(t pdfToken) []byte { return p.lex.b[t.start:t.end] }

func parseInt(s []byte) int64 {
	n, err := strconv.ParseInt(string(s), 10, 64)
	if err != nil {
		if len(s) > 0 && s[0] == '-' {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	return n
}

func isIntToken(b []byte, t pdfToken) bool {
	return t.kind == tokNumber && bytes.IndexByte(b[t.start:t.end], '.') < 0
}

// value reads one value starting with t. A closing delimiter, or the end
// of the file, reads as nil.
func (p *pdfParser) value(t pdfToken, depth int) *pdfObj {
	b := p.lex.b
	o := &pdfObj{start: t.start, end: t.end}
	switch t.kind {
	case tokEOF, tokDictClose, tokArrayClose:
		return nil
	case tokNumber:
		p.number(o, t)
	case tokName:
		o.kind, o.s = pdfNameKind, decodeName(b, t)
	case tokString, tokHexString:
		o.kind = pdfString
		p.strings = append(p.strings, pdfSpan{tok: t})
		if t.end-t.start <= 2*pdfMaxStringKeep+2 {
			s := decodeString(b, t)
			o.s = string(s[:min(len(s), pdfMaxStringKeep)])
		}
	case tokKeyword:
		switch string(p.text(t)) {
		case "true", "false":
			o.kind = pdfBool
			o.s = string(p.text(t))
		case "null":
			o.kind = pdfNull
		default:
			o.kind, o.s = pdfKeyword, string(p.text(t))
		}
	case tokArrayOpen:
		p.array(o, depth)
	case tokDictOpen:
		p.dict(o, depth)
	}
	return o
}

// number makes o of number token t: a real, an integer, or the reference
// "n g R" an integer starts.
func (p *pdfParser) number(o *pdfObj, t pdfToken) {
	b := p.lex.b
	if !isIntToken(b, t) {
		o.kind = pdfReal
		return
	}
	o.kind, o.i = pdfInt, parseInt(p.text(t))
	t2 := p.token()
	if isIntToken(b, t2) {
		t3 := p.token()
		if t3.kind == tokKeyword && string(p.text(t3)) == "R" {
			o.kind, o.gen, o.end = pdfRef, parseInt(p.text(t2)), t3.end
			return
		}
		p.unread(t3)
	}
	p.unread(t2)
}

// array reads the elements of the array o opens, up to its end, keeping
// at most pdfKeepArray of them and nothing deeper than pdfMaxDepth.
func (p *pdfParser) array(o *pdfObj, depth int) {
	o.kind = pdfArray
	for {
		n := p.token()
		if n.kind == tokArrayClose || n.kind == tokEOF {
			o.end = n.end
			return
		}
		if depth >= pdfMaxDepth {
			continue // read past, keep nothing
		}
		v := p.value(n, depth+1)
		if v != nil && len(o.arr) < pdfKeepArray && p.keep() {
			o.arr = append(o.arr, v)
		}
	}
}

// dict reads the entries of the dictionary o opens, up to its end, and
// marks a signature's /Contents to be kept as it is.
func (p *pdfParser) dict(o *pdfObj, depth int) {
	o.kind, o.dict = pdfDict, map[string]*pdfObj{}
	first := len(p.strings)
	for {
		k := p.token()
		if k.kind == tokDictClose || k.kind == tokEOF {
			o.end = k.end
			break
		}
		if k.kind != tokName || depth >= pdfMaxDepth {
			if depth < pdfMaxDepth {
				p.value(k, depth+1) // a stray value: read past it
			}
			continue
		}
		name := decodeName(p.lex.b, k)
		v := p.value(p.token(), depth+1)
		if v != nil && p.keep() {
			o.dict[name] = v
		}
	}
	// A signature's /Contents is its bytes, never encrypted.
	if o.dict["ByteRange"] != nil || o.key("Type").isName("Sig") || o.key("Type").isName("DocTimeStamp") {
		if c := o.dict["Contents"]; c != nil && c.kind == pdfString {
			for i := first; i < len(p.strings); i++ {
				if p.strings[i].tok.start == c.start {
					p.strings[i].keep = true
				}
			}
		}
	}
}

// pdfDef is one object definition of a file: "num gen obj ... endobj",
// with what the checks and the decryption need of it.
type pdfDef struct {
	num, gen   int64
	typ        string  // its /Type
	val        *pdfObj // kept for cross-reference streams, object streams and encryption dictionaries only
	strings    []pdfSpan
	stream     bool
	crypt      bool   // a stream with its own /Crypt filter: left as it is
	data       [2]int // a stream's data: [start, end)
	eol        int    // bytes taken as the end-of-line before endstream, when the data's length was not known
	lengthSpan [2]int // a direct /Length's token, to rewrite; [0 0] when none
	lengthRef  int64  // the object a /Length refers to (0: none)
	intSpan    [2]int // an object that is a bare integer: its token
}

// pdfScan is what the scan learned of a file.
type pdfScan struct {
	defs     []*pdfDef
	ints     map[int64]int64   // direct integer objects
	intDefs  map[int64]*pdfDef // and their definitions
	objByNum map[int64]*pdfDef // the last definition of each number
	trailers []*pdfObj         // trailer dictionaries and cross-reference stream dictionaries, in file order
}

// scanPDF reads every object definition and trailer of a file in order,
// as a reader that repairs files does: the cross-reference table is not
// trusted for this.
func scanPDF(b []byte) (*pdfScan, error) {
	s := &pdfScan{ints: map[int64]int64{}, intDefs: map[int64]*pdfDef{}, objByNum: map[int64]*pdfDef{}}
	p := &pdfParser{lex: pdfLexer{b: b}}
	for {
		t := p.token()
		switch {
		case t.kind == tokEOF:
			return s, nil
		case t.kind == tokKeyword && string(p.text(t)) == "trailer":
			p.reset()
			d := p.value(p.token(), 0)
			if d != nil && d.kind == pdfDict && len(s.trailers) < pdfMaxTrailers {
				s.trailers = append(s.trailers, d)
			}
		case isIntToken(b, t):
			t2 := p.token()
			if !isIntToken(b, t2) {
				p.unread(t2)
				continue
			}
			t3 := p.token()
			if t3.kind != tokKeyword || string(p.text(t3)) != "obj" {
				p.unread(t3)
				p.unread(t2)
				continue
			}
			if len(s.defs) >= pdfScanMaxDefs {
				return nil, fmt.Errorf("%w: more than %d objects", ErrLimit, pdfScanMaxDefs)
			}
			def := &pdfDef{num: parseInt(p.text(t)), gen: parseInt(p.text(t2))}
			p.reset()
			v := p.value(p.token(), 0)
			if len(p.strings) > 0 {
				def.strings = append([]pdfSpan(nil), p.strings...)
			}
			if v != nil && v.kind == pdfInt {
				s.ints[def.num] = v.i
				s.intDefs[def.num] = def
				def.intSpan = [2]int{v.start, v.end}
			}
			if t := v.key("Type"); t != nil && t.kind == pdfNameKind {
				def.typ = t.s
			}
			n := p.token()
			if n.kind == tokKeyword && string(p.text(n)) == "stream" && v != nil && v.kind == pdfDict {
				s.readStream(p, def, v, n)
			} else {
				p.unread(n)
			}
			s.defs = append(s.defs, def)
			s.objByNum[def.num] = def
			switch {
			case def.typ == "XRef":
				if len(s.trailers) < pdfMaxTrailers {
					s.trailers = append(s.trailers, v)
				}
				def.val = v
			case def.typ == "ObjStm", v.key("Filter") != nil && v.key("O") != nil && v.key("U") != nil:
				def.val = v
			}
		}
	}
}

// readStream finds a stream's data after the stream keyword kw: /Length
// bytes when a direct /Length ends at "endstream", else up to the next
// "endstream" (an indirect /Length is not known yet while the file is
// read in order).
func (s *pdfScan) readStream(p *pdfParser, def *pdfDef, v *pdfObj, kw pdfToken) {
	b := p.lex.b
	start := kw.end
	if start < len(b) && b[start] == '\r' {
		start++
	}
	if start < len(b) && b[start] == '\n' {
		start++
	}
	def.stream = true
	if f := v.key("Filter"); f.isName("Crypt") || f != nil && f.kind == pdfArray && len(f.arr) > 0 && f.arr[0].isName("Crypt") {
		def.crypt = true
	}
	end := -1
	if l := v.key("Length"); l != nil {
		switch l.kind {
		case pdfInt:
			def.lengthSpan = [2]int{l.start, l.end}
			if l.i >= 0 && l.i <= int64(len(b)-start) {
				at := start + int(l.i)
				rest := b[at:]
				k := 0
				for k < len(rest) && k < 64 && isPDFSpace(rest[k]) {
					k++
				}
				if bytes.HasPrefix(rest[k:], []byte("endstream")) {
					end = at
				}
			}
		case pdfRef:
			def.lengthRef = l.i
		}
	}
	if end < 0 {
		i := bytes.Index(b[start:], []byte("endstream"))
		if i < 0 {
			end = len(b)
		} else {
			end = start + i
			// The end-of-line marker before endstream is not data
			// (though a last byte of encrypted data may look like one:
			// see pdfDecrypt).
			if end > start && b[end-1] == '\n' {
				end--
				def.eol++
			}
			if end > start && b[end-1] == '\r' {
				end--
				def.eol++
			}
		}
	}
	def.data = [2]int{start, end}
	p.lex.pos = end
	p.peeked = p.peeked[:0]
	if n := p.token(); n.kind != tokKeyword || string(p.text(n)) != "endstream" {
		p.unread(n)
	}
}

// checkStructure refuses what would make the PDF library loop or allocate
// without bound: a cross-reference chain that loops or is too long, a
// subsection that starts past the object limit, an object stream of too
// many objects, object streams that extend each other in a loop.
func checkStructure(b []byte, s *pdfScan) error {
	if err := checkXrefChain(b); err != nil {
		return err
	}
	extends := map[int64]int64{}
	for _, d := range s.defs {
		v := d.val
		if d.typ != "ObjStm" || v == nil {
			continue
		}
		if n, ok := v.key("N").intValue(s.ints); ok && (n < 0 || n > pdfMaxObjects) {
			return fmt.Errorf("%w: an object stream of %d objects", ErrLimit, n)
		}
		if e := v.key("Extends"); e != nil && e.kind == pdfRef {
			extends[d.num] = e.i
		}
	}
	for start := range extends {
		seen := map[int64]bool{start: true}
		for cur, n := start, 0; ; n++ {
			next, ok := extends[cur]
			if !ok {
				break
			}
			if seen[next] {
				return fmt.Errorf("%w: object streams extend each other in a loop (/Extends)", ErrDamaged)
			}
			if n > pdfMaxExtends {
				return fmt.Errorf("%w: a chain of more than %d object streams (/Extends)", ErrLimit, pdfMaxExtends)
			}
			seen[next] = true
			cur = next
		}
	}
	return nil
}

// checkXrefChain follows the cross-reference sections as the library does,
// from the last startxref through each /Prev.
func checkXrefChain(b []byte) error {
	off, ok := lastStartxref(b)
	if !ok {
		return nil // the library refuses the file on its own
	}
	seen := map[int64]bool{}
	for n := 0; ; n++ {
		if off < 0 || off >= int64(len(b)) {
			return nil
		}
		if seen[off] {
			return fmt.Errorf("%w: the cross-reference sections refer to each other in a loop (/Prev)", ErrDamaged)
		}
		if n >= pdfMaxSections {
			return fmt.Errorf("%w: more than %d cross-reference sections", ErrLimit, pdfMaxSections)
		}
		seen[off] = true
		p := &pdfParser{lex: pdfLexer{b: b, pos: int(off)}}
		t := p.token()
		var trailer *pdfObj
		switch {
		case t.kind == tokKeyword && string(p.text(t)) == "xref":
			for {
				t = p.token()
				if t.kind == tokKeyword && string(p.text(t)) == "trailer" {
					p.reset()
					trailer = p.value(p.token(), 0)
					break
				}
				if !isIntToken(b, t) {
					return nil
				}
				t2 := p.token()
				if !isIntToken(b, t2) {
					return nil
				}
				start, count := parseInt(p.text(t)), parseInt(p.text(t2))
				if start < 0 || count < 0 || start > pdfMaxObjects || count > pdfMaxObjects-start {
					return fmt.Errorf("%w: a cross-reference subsection of %s objects from object %s", ErrLimit, p.text(t2), p.text(t))
				}
				for i := int64(0); i < 3*count; i++ {
					if p.token().kind == tokEOF {
						return nil
					}
				}
			}
		case isIntToken(b, t):
			if t2 := p.token(); !isIntToken(b, t2) {
				return nil
			}
			if t3 := p.token(); t3.kind != tokKeyword || string(p.text(t3)) != "obj" {
				return nil
			}
			trailer = p.value(p.token(), 0)
		default:
			return nil
		}
		prev := trailer.key("Prev")
		if prev == nil || prev.kind != pdfInt {
			return nil
		}
		off = prev.i
	}
}

// lastStartxref finds the offset after the last startxref the way the
// library does: in the last 100 bytes, which end with %%EOF.
func lastStartxref(b []byte) (int64, bool) {
	tail := b[max(0, len(b)-100):]
	tail = bytes.TrimRight(tail, "\r\n\t ")
	if !bytes.HasSuffix(tail, []byte("%%EOF")) {
		return 0, false
	}
	i := bytes.LastIndex(tail, []byte("startxref"))
	if i < 0 {
		return 0, false
	}
	l := pdfLexer{b: tail, pos: i + len("startxref")}
	t := l.next()
	if !isIntToken(tail, t) {
		return 0, false
	}
	return parseInt(tail[t.start:t.end]), true
}
