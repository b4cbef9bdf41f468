package safetensors

import (
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"testing"
)

func file(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(b, header...), data...)
}

func TestParse(t *testing.T) {
	// A 2×2 F32 matrix [[1, -2], [0.5, 3]] and an I32 vector [7, -1].
	data := []byte{
		0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0, 0x00, 0x00, 0x00, 0x3f, 0x00, 0x00, 0x40, 0x40,
		7, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
	}
	b := file(`{"__metadata__":{"format":"pt"},"m":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"v":{"dtype":"I32","shape":[2],"data_offsets":[16,24]}}  `, data)
	f, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata["format"] != "pt" || !reflect.DeepEqual(f.Names(), []string{"m", "v"}) {
		t.Fatalf("metadata %v names %v", f.Metadata, f.Names())
	}
	m, _ := f.Tensor("m")
	got, err := m.Float32()
	if err != nil || !reflect.DeepEqual(got, []float32{1, -2, 0.5, 3}) || !reflect.DeepEqual(m.Shape, []int{2, 2}) {
		t.Errorf("m = %v %v (%v)", got, m.Shape, err)
	}
	v, _ := f.Tensor("v")
	ints, err := v.Int64()
	if err != nil || !reflect.DeepEqual(ints, []int64{7, -1}) {
		t.Errorf("v = %v (%v)", ints, err)
	}
	if _, err := f.Tensor("x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing tensor: %v", err)
	}
	if _, err := m.Int64(); !errors.Is(err, ErrFormat) {
		t.Errorf("F32 as integers: %v", err)
	}
}

func TestParseRejects(t *testing.T) {
	cases := map[string][]byte{
		"short":          {1, 2, 3},
		"header too big": append(binary.LittleEndian.AppendUint64(nil, 1<<40), "{}"...),
		"bad json":       file(`{"a":`, nil),
		"unknown dtype":  file(`{"a":{"dtype":"F7","shape":[1],"data_offsets":[0,1]}}`, []byte{0}),
		"out of range":   file(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}`, []byte{0, 0}),
		"reversed":       file(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[2,1]}}`, []byte{0, 0}),
		"size mismatch":  file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, make([]byte, 4)),
		"negative dim":   file(`{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}}`, nil),
		"overflow":       file(`{"a":{"dtype":"F64","shape":[2147483647,2147483647,2147483647],"data_offsets":[0,8]}}`, make([]byte, 8)),
		"overlap": file(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}`,
			make([]byte, 3)),
		"bad metadata": file(`{"__metadata__":{"a":1}}`, nil),
	}
	for name, b := range cases {
		if _, err := Parse(b); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v, want ErrFormat", name, err)
		}
	}
	// A NaN weight is refused when decoded.
	f, err := Parse(file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, []byte{0, 0, 0xc0, 0x7f}))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := f.Tensor("a")
	if _, err := a.Float32(); !errors.Is(err, ErrFormat) {
		t.Errorf("NaN: %v", err)
	}
}

func TestFloat16(t *testing.T) {
	cases := map[uint16]float32{
		0x3c00: 1, 0xc000: -2, 0x3555: 0.333251953125, 0x7bff: 65504,
		0x0001: float32(math.Ldexp(1, -24)), 0x0400: float32(math.Ldexp(1, -14)), 0x8000: float32(math.Copysign(0, -1)),
	}
	for h, want := range cases {
		if got := Float16(h); got != want || math.Signbit(float64(got)) != math.Signbit(float64(want)) {
			t.Errorf("Float16(%#04x) = %v, want %v", h, got, want)
		}
	}
	if !math.IsInf(float64(Float16(0x7c00)), 1) || !math.IsNaN(float64(Float16(0x7e00))) {
		t.Error("Float16 infinity or NaN")
	}
}

func FuzzParse(f *testing.F) {
	f.Add(file(`{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}`, []byte{0, 0x3c, 0, 0xc0}))
	f.Add(file(`{"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},"m":{"dtype":"I32","shape":[1],"data_offsets":[8,12]}}`, make([]byte, 12)))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		sf, err := Parse(b)
		if err != nil {
			return
		}
		for _, n := range sf.Names() {
			tn, _ := sf.Tensor(n)
			fs, ferr := tn.Float32()
			is, ierr := tn.Int64()
			if ferr == nil && len(fs) != tn.Len() || ierr == nil && len(is) != tn.Len() {
				t.Fatalf("tensor %q decoded to the wrong length", n)
			}
		}
	})
}
