package export

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// checkGob walks a gob stream without decoding it into values and fails on
// any count (of a map, slice, array, string or field) larger than the bytes
// left in its message. encoding/gob bounds slices so, but it makes a map of
// whatever size the stream declares before reading a single entry: a few
// bytes can declare billions, and decoding them takes minutes and
// gigabytes. Every well-formed stream passes (each entry takes at least one
// byte); chromem-go decodes it afterwards.
func checkGob(r io.Reader) error {
	sc := &gobScanner{r: bufio.NewReader(r), types: map[int]*gobType{}}
	for {
		n, err := sc.streamUint()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if n == 0 || n > 1<<40 {
			return errGob("message length %d", n)
		}
		sc.left = int64(n)
		if err := sc.message(); err != nil {
			return err
		}
		if sc.left != 0 {
			return errGob("%d bytes left over in a message", sc.left)
		}
	}
}

func errGob(format string, args ...any) error {
	return fmt.Errorf("gob: "+format, args...)
}

// Kinds of wire types, and the built-in type ids.
const (
	gBool, gInt, gUint, gFloat, gBytes, gString, gComplex, gInterface = 1, 2, 3, 4, 5, 6, 7, 8
	gFirstUser                                                        = 64
	gMaxDepth                                                         = 64
)

type gobKind int

const (
	kArray gobKind = iota + 1
	kSlice
	kStruct
	kMap
	kEncoder
)

type gobType struct {
	kind      gobKind
	elem, key int
	fields    []int
}

type gobScanner struct {
	r     *bufio.Reader
	left  int64 // bytes left in the current message
	types map[int]*gobType
}

func (sc *gobScanner) byte() (byte, error) {
	if sc.left <= 0 {
		return 0, errGob("message truncated")
	}
	b, err := sc.r.ReadByte()
	if err != nil {
		return 0, errGob("stream truncated")
	}
	sc.left--
	return b, nil
}

// streamUint reads a message length (outside any message).
func (sc *gobScanner) streamUint() (uint64, error) {
	b, err := sc.r.ReadByte()
	if err == io.EOF {
		return 0, io.EOF
	}
	if err != nil {
		return 0, err
	}
	return gobUint(b, sc.streamByte, "bad length prefix")
}

// streamByte reads a byte outside any message.
func (sc *gobScanner) streamByte() (byte, error) {
	c, err := sc.r.ReadByte()
	if err != nil {
		return 0, errGob("stream truncated")
	}
	return c, nil
}

// gobUint decodes a gob unsigned integer whose first byte is b, reading
// the bytes that follow it with next; bad says what a prefix of more than
// eight bytes is.
func gobUint(b byte, next func() (byte, error), bad string) (uint64, error) {
	if b < 0x80 {
		return uint64(b), nil
	}
	n := -int(int8(b))
	if n > 8 {
		return 0, errGob("%s", bad)
	}
	var x uint64
	for range n {
		c, err := next()
		if err != nil {
			return 0, err
		}
		x = x<<8 | uint64(c)
	}
	return x, nil
}

func (sc *gobScanner) uint() (uint64, error) {
	b, err := sc.byte()
	if err != nil {
		return 0, err
	}
	return gobUint(b, sc.byte, "bad unsigned integer")
}

func (sc *gobScanner) int() (int64, error) {
	u, err := sc.uint()
	if u&1 != 0 {
		return ^int64(u >> 1), err
	}
	return int64(u >> 1), err
}

// count reads a count and checks it against the bytes left.
func (sc *gobScanner) count(what string) (int, error) {
	n, err := sc.uint()
	if err != nil {
		return 0, err
	}
	if n > uint64(sc.left) {
		return 0, errGob("%s of %d in a message with %d bytes left", what, n, sc.left)
	}
	return int(n), nil
}

func (sc *gobScanner) skip(n int) error {
	if int64(n) > sc.left {
		return errGob("message truncated")
	}
	if _, err := sc.r.Discard(n); err != nil {
		return errGob("stream truncated")
	}
	sc.left -= int64(n)
	return nil
}

func (sc *gobScanner) message() error {
	id, err := sc.int()
	if err != nil {
		return err
	}
	if id < 0 {
		return sc.typeDef(int(-id))
	}
	t := int(id)
	if sc.isStruct(t) {
		return sc.value(t, 0)
	}
	if z, err := sc.uint(); err != nil || z != 0 { // a non-struct value is a singleton field
		return errGob("bad singleton")
	}
	return sc.value(t, 0)
}

func (sc *gobScanner) isStruct(id int) bool {
	t := sc.types[id]
	return t != nil && t.kind == kStruct
}

// fields walks a struct's delta-encoded fields, calling fn for each.
func (sc *gobScanner) fields(max int, fn func(field int) error) error {
	f := -1
	for {
		d, err := sc.uint()
		if err != nil {
			return err
		}
		if d == 0 {
			return nil
		}
		if d > uint64(max) || f+int(d) >= max {
			return errGob("field %d out of range", f+int(d))
		}
		f += int(d)
		if err := fn(f); err != nil {
			return err
		}
	}
}

// commonType reads a CommonType struct (Name, Id).
func (sc *gobScanner) commonType() error {
	return sc.fields(2, func(f int) error {
		if f == 0 {
			n, err := sc.count("a name")
			if err != nil {
				return err
			}
			return sc.skip(n)
		}
		_, err := sc.int()
		return err
	})
}

// typeDef reads a wireType.
func (sc *gobScanner) typeDef(id int) error {
	if id < gFirstUser {
		return errGob("type id %d redefined", id)
	}
	if _, ok := sc.types[id]; ok {
		return errGob("type id %d defined twice", id)
	}
	var t *gobType
	err := sc.fields(7, func(f int) error {
		if t != nil {
			return errGob("type %d has two definitions", id)
		}
		switch f {
		case 0: // ArrayT: CommonType, Elem, Len
			t = &gobType{kind: kArray}
			return sc.fields(3, func(g int) error {
				switch g {
				case 0:
					return sc.commonType()
				case 1:
					e, err := sc.int()
					t.elem = int(e)
					return err
				}
				_, err := sc.int()
				return err
			})
		case 1: // SliceT: CommonType, Elem
			t = &gobType{kind: kSlice}
			return sc.fields(2, func(g int) error {
				if g == 0 {
					return sc.commonType()
				}
				e, err := sc.int()
				t.elem = int(e)
				return err
			})
		case 2: // StructT: CommonType, Field []fieldType{Name, Id}
			t = &gobType{kind: kStruct}
			return sc.fields(2, func(g int) error {
				if g == 0 {
					return sc.commonType()
				}
				n, err := sc.count("a field list")
				if err != nil {
					return err
				}
				for range n {
					fid := 0
					if err := sc.fields(2, func(h int) error {
						if h == 0 {
							n, err := sc.count("a field name")
							if err != nil {
								return err
							}
							return sc.skip(n)
						}
						x, err := sc.int()
						fid = int(x)
						return err
					}); err != nil {
						return err
					}
					t.fields = append(t.fields, fid)
				}
				return nil
			})
		case 3: // MapT: CommonType, Key, Elem
			t = &gobType{kind: kMap}
			return sc.fields(3, func(g int) error {
				switch g {
				case 0:
					return sc.commonType()
				case 1:
					k, err := sc.int()
					t.key = int(k)
					return err
				}
				e, err := sc.int()
				t.elem = int(e)
				return err
			})
		default: // GobEncoderT, BinaryMarshalerT, TextMarshalerT: CommonType
			t = &gobType{kind: kEncoder}
			return sc.fields(1, func(int) error { return sc.commonType() })
		}
	})
	if err != nil {
		return err
	}
	if t == nil {
		return errGob("empty definition of type %d", id)
	}
	sc.types[id] = t
	return nil
}

// value skips one value of type id.
func (sc *gobScanner) value(id, depth int) error {
	if depth > gMaxDepth {
		return errGob("values nested too deep")
	}
	switch id {
	case gBool, gInt, gUint, gFloat:
		_, err := sc.uint()
		return err
	case gComplex:
		if _, err := sc.uint(); err != nil {
			return err
		}
		_, err := sc.uint()
		return err
	case gBytes, gString:
		n, err := sc.count("a string")
		if err != nil {
			return err
		}
		return sc.skip(n)
	case gInterface:
		return errGob("interface values are not expected")
	}
	t := sc.types[id]
	if t == nil {
		return errGob("undefined type id %d", id)
	}
	switch t.kind {
	case kEncoder:
		n, err := sc.count("an encoded value")
		if err != nil {
			return err
		}
		return sc.skip(n)
	case kArray, kSlice:
		n, err := sc.count("a list")
		if err != nil {
			return err
		}
		for range n {
			if err := sc.value(t.elem, depth+1); err != nil {
				return err
			}
		}
		return nil
	case kMap:
		n, err := sc.count("a map")
		if err != nil {
			return err
		}
		for range n {
			if err := sc.value(t.key, depth+1); err != nil {
				return err
			}
			if err := sc.value(t.elem, depth+1); err != nil {
				return err
			}
		}
		return nil
	case kStruct:
		return sc.fields(len(t.fields), func(f int) error { return sc.value(t.fields[f], depth+1) })
	}
	return errors.New("gob: unknown kind")
}
