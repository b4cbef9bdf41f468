// Package safetensors reads the safetensors format
// (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length, a JSON header naming each tensor's dtype, shape and byte
// range, then the tensor data.
//
// Parse validates everything a malformed or hostile file could get wrong
// (header size, overlapping or out-of-range offsets, sizes that disagree with
// shapes, overflowing shapes) and never panics. A *File is read-only and safe
// for concurrent use.
package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// ErrFormat is returned (wrapped) for any malformed file.
var ErrFormat = errors.New("safetensors: malformed file")

// ErrNotFound is returned by File.Tensor for a name the file lacks.
var ErrNotFound = errors.New("safetensors: no such tensor")

// maxHeader bounds the JSON header, as the reference implementation does.
const maxHeader = 100 << 20

// Tensor is one tensor of a file. Data aliases the file's bytes; a Tensor is
// read-only and safe for concurrent use.
type Tensor struct {
	Name  string
	DType string // "F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL", ...
	Shape []int
	Data  []byte
}

// File is a parsed safetensors file.
type File struct {
	Metadata map[string]string
	tensors  map[string]*Tensor
}

var dtypeSize = map[string]int{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4,
	"I64": 8, "U64": 8, "F64": 8,
}

// Parse parses a whole safetensors file held in b. The returned tensors
// alias b.
func Parse(b []byte) (*File, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("%w: %d bytes, too short for a header", ErrFormat, len(b))
	}
	n := binary.LittleEndian.Uint64(b[:8])
	if n > maxHeader || n > uint64(len(b)-8) {
		return nil, fmt.Errorf("%w: header of %d bytes in a file of %d", ErrFormat, n, len(b))
	}
	header := b[8 : 8+n]
	data := b[8+n:]
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(header, &raw); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrFormat, err)
	}
	f := &File{tensors: map[string]*Tensor{}}
	type span struct {
		lo, hi uint64
		name   string
	}
	var spans []span
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &f.Metadata); err != nil {
				return nil, fmt.Errorf("%w: __metadata__: %v", ErrFormat, err)
			}
			continue
		}
		var info struct {
			DType   string   `json:"dtype"`
			Shape   []int64  `json:"shape"`
			Offsets []uint64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(msg, &info); err != nil {
			return nil, fmt.Errorf("%w: tensor %q: %v", ErrFormat, clip(name), err)
		}
		size, ok := dtypeSize[info.DType]
		if !ok {
			return nil, fmt.Errorf("%w: tensor %q has unknown dtype %q", ErrFormat, clip(name), clip(info.DType))
		}
		if len(info.Offsets) != 2 || info.Offsets[0] > info.Offsets[1] || info.Offsets[1] > uint64(len(data)) {
			return nil, fmt.Errorf("%w: tensor %q has data offsets %v outside the %d data bytes", ErrFormat, clip(name), info.Offsets, len(data))
		}
		elems := uint64(1)
		shape := make([]int, len(info.Shape))
		for i, d := range info.Shape {
			if d < 0 || d > math.MaxInt32 {
				return nil, fmt.Errorf("%w: tensor %q has dimension %d", ErrFormat, clip(name), d)
			}
			shape[i] = int(d)
			if d != 0 && elems > math.MaxUint64/uint64(d) {
				return nil, fmt.Errorf("%w: tensor %q has an overflowing shape", ErrFormat, clip(name))
			}
			elems *= uint64(d)
		}
		if elems > math.MaxUint64/uint64(size) || elems*uint64(size) != info.Offsets[1]-info.Offsets[0] {
			return nil, fmt.Errorf("%w: tensor %q: shape %v of %s needs %d bytes, offsets give %d",
				ErrFormat, clip(name), info.Shape, info.DType, elems*uint64(size), info.Offsets[1]-info.Offsets[0])
		}
		f.tensors[name] = &Tensor{Name: name, DType: info.DType, Shape: shape, Data: data[info.Offsets[0]:info.Offsets[1]:info.Offsets[1]]}
		spans = append(spans, span{info.Offsets[0], info.Offsets[1], name})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	for i := 1; i < len(spans); i++ {
		if spans[i].lo < spans[i-1].hi {
			return nil, fmt.Errorf("%w: tensors %q and %q overlap", ErrFormat, clip(spans[i-1].name), clip(spans[i].name))
		}
	}
	return f, nil
}

// Names lists the tensors, sorted.
func (f *File) Names() []string {
	out := make([]string, 0, len(f.tensors))
	for n := range f.tensors {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Tensor returns the named tensor or an error wrapping ErrNotFound.
func (f *File) Tensor(name string) (*Tensor, error) {
	t, ok := f.tensors[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q (the file has %s)", ErrNotFound, clip(name), strings.Join(f.Names(), ", "))
	}
	return t, nil
}

// Len is the number of elements.
func (t *Tensor) Len() int { return len(t.Data) / dtypeSize[t.DType] }

// Float32 decodes a floating-point or integer tensor into float32 values
// (integers by value: an I8 of -3 becomes -3.0).
func (t *Tensor) Float32() ([]float32, error) {
	d := t.Data
	n := t.Len()
	out := make([]float32, n)
	switch t.DType {
	case "F32":
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(d[4*i:]))
		}
	case "F64":
		for i := range out {
			out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(d[8*i:])))
		}
	case "F16":
		for i := range out {
			out[i] = Float16(binary.LittleEndian.Uint16(d[2*i:]))
		}
	case "BF16":
		for i := range out {
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(d[2*i:])) << 16)
		}
	case "I8":
		for i := range out {
			out[i] = float32(int8(d[i]))
		}
	case "U8":
		for i := range out {
			out[i] = float32(d[i])
		}
	case "I16":
		for i := range out {
			out[i] = float32(int16(binary.LittleEndian.Uint16(d[2*i:])))
		}
	case "I32":
		for i := range out {
			out[i] = float32(int32(binary.LittleEndian.Uint32(d[4*i:])))
		}
	default:
		return nil, fmt.Errorf("%w: tensor %q: cannot read %s as float32", ErrFormat, clip(t.Name), t.DType)
	}
	for i, v := range out {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("%w: tensor %q: element %d is not finite", ErrFormat, clip(t.Name), i)
		}
	}
	return out, nil
}

// Int64 decodes an integer tensor.
func (t *Tensor) Int64() ([]int64, error) {
	d := t.Data
	out := make([]int64, t.Len())
	switch t.DType {
	case "I64":
		for i := range out {
			out[i] = int64(binary.LittleEndian.Uint64(d[8*i:]))
		}
	case "U64":
		for i := range out {
			v := binary.LittleEndian.Uint64(d[8*i:])
			if v > math.MaxInt64 {
				return nil, fmt.Errorf("%w: tensor %q: element %d overflows", ErrFormat, clip(t.Name), i)
			}
			out[i] = int64(v)
		}
	case "I32":
		for i := range out {
			out[i] = int64(int32(binary.LittleEndian.Uint32(d[4*i:])))
		}
	case "U32":
		for i := range out {
			out[i] = int64(binary.LittleEndian.Uint32(d[4*i:]))
		}
	case "I16":
		for i := range out {
			out[i] = int64(int16(binary.LittleEndian.Uint16(d[2*i:])))
		}
	case "U16":
		for i := range out {
			out[i] = int64(binary.LittleEndian.Uint16(d[2*i:]))
		}
	case "I8":
		for i := range out {
			out[i] = int64(int8(d[i]))
		}
	case "U8":
		for i := range out {
			out[i] = int64(d[i])
		}
	default:
		return nil, fmt.Errorf("%w: tensor %q: cannot read %s as integers", ErrFormat, clip(t.Name), t.DType)
	}
	return out, nil
}

// Float16 converts an IEEE 754 half-precision value to float32 (exactly:
// every half is representable).
func Float16(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: frac · 2^-24
		v := float32(frac) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
}

func clip(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= 60 {
		return s
	}
	cut := 60
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
