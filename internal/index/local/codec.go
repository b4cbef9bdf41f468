package local

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
)

// The on-disk encoding of records and batches: little-endian, length-prefixed,
// versioned by the file headers that contain it. It is hand-written rather than
// gob or JSON because vectors dominate the bytes and must load fast on open.

// maxField bounds any single length read from disk so that a corrupt length
// cannot make the decoder allocate gigabytes.
const maxField = 1 << 30

type encoder struct{ buf []byte }

func (e *encoder) uvarint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v) }
func (e *encoder) varint(v int64)   { e.buf = binary.AppendVarint(e.buf, v) }
func (e *encoder) str(s string)     { e.uvarint(uint64(len(s))); e.buf = append(e.buf, s...) }
func (e *encoder) strs(ss []string) {
	e.uvarint(uint64(len(ss)))
	for _, s := range ss {
		e.str(s)
	}
}

func (e *encoder) record(r *index.Record) {
	e.str(r.ID)
	e.str(r.SourceURL)
	e.str(r.Title)
	e.strs(r.HeadingPath)
	e.str(r.Content)
	e.str(r.DocType)
	e.varint(int64(r.Position))
	e.varint(int64(r.Start))
	e.varint(int64(r.End))
	e.varint(int64(r.Tokens))
	e.varint(r.CreatedAt.UnixNano())
	e.str(r.ContentHash)
	keys := make([]string, 0, len(r.Attrs))
	for k := range r.Attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	e.uvarint(uint64(len(keys)))
	for _, k := range keys {
		e.str(k)
		e.str(r.Attrs[k])
	}
	e.uvarint(uint64(len(r.Vector)))
	e.buf = append(e.buf, vectorBytes(nil, r.Vector)...)
}

// batchOp is one journal entry: a sequence number and the batch it applied,
// or a meta write.
type batchOp struct {
	Seq   uint64
	Batch driver.Batch
	Meta  map[string]string // set store-level settings
}

const (
	opBatch byte = 1
	opMeta  byte = 2
)

func (e *encoder) op(o *batchOp) {
	e.uvarint(o.Seq)
	if o.Meta != nil {
		e.buf = append(e.buf, opMeta)
		keys := make([]string, 0, len(o.Meta))
		for k := range o.Meta {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		e.uvarint(uint64(len(keys)))
		for _, k := range keys {
			e.str(k)
			e.str(o.Meta[k])
		}
		return
	}
	e.buf = append(e.buf, opBatch)
	e.strs(o.Batch.DeleteSources)
	e.strs(o.Batch.DeleteIDs)
	e.uvarint(uint64(len(o.Batch.Put)))
	for i := range o.Batch.Put {
		e.record(&o.Batch.Put[i])
	}
}

type decoder struct {
	buf []byte
	err error
	// src, when set, holds the same bytes as buf did at the start: strings
	// are then cut from it instead of each being allocated (see
	// decodeRecordShared).
	src string
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", driver.ErrCorrupt, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) uvarint() uint64 { return readVarint(d, binary.Uvarint, "bad uvarint") }

func (d *decoder) varint() int64 { return readVarint(d, binary.Varint, "bad varint") }

// readVarint decodes one varint of d's buffer with read (binary.Uvarint
// or binary.Varint); a bad one fails d with bad.
func readVarint[T uint64 | int64](d *decoder, read func([]byte) (T, int), bad string) T {
	if d.err != nil {
		return 0
	}
	v, n := read(d.buf)
	if n <= 0 {
		d.fail("%s", bad)
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *decoder) int() int {
	v := d.varint()
	if v > math.MaxInt32 || v < math.MinInt32 {
		d.fail("integer out of range")
		return 0
	}
	return int(v)
}

func (d *decoder) length() int {
	n := d.uvarint()
	if n > maxField || n > uint64(len(d.buf)) {
		d.fail("length %d exceeds remaining %d bytes", n, len(d.buf))
		return 0
	}
	return int(n)
}

func (d *decoder) str() string {
	n := d.length()
	if d.err != nil {
		return ""
	}
	var s string
	if d.src != "" {
		at := len(d.src) - len(d.buf)
		s = d.src[at : at+n]
	} else {
		s = string(d.buf[:n])
	}
	d.buf = d.buf[n:]
	return s
}

func (d *decoder) strs() []string {
	n := d.length() // every string takes at least one byte, so n <= len(buf)
	if d.err != nil || n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.str()
	}
	return out
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.buf) == 0 {
		d.fail("unexpected end")
		return 0
	}
	b := d.buf[0]
	d.buf = d.buf[1:]
	return b
}

func (d *decoder) record(r *index.Record) {
	r.ID = d.str()
	r.SourceURL = d.str()
	r.Title = d.str()
	r.HeadingPath = d.strs()
	r.Content = d.str()
	r.DocType = d.str()
	r.Position = d.int()
	r.Start = d.int()
	r.End = d.int()
	r.Tokens = d.int()
	r.CreatedAt = time.Unix(0, d.varint()).UTC()
	r.ContentHash = d.str()
	if n := d.length(); n > 0 && d.err == nil {
		r.Attrs = make(map[string]string, n)
		for i := 0; i < n && d.err == nil; i++ {
			k := d.str()
			r.Attrs[k] = d.str()
		}
	}
	dim := d.uvarint()
	if d.err != nil {
		return
	}
	if dim > uint64(len(d.buf))/4 {
		d.fail("vector of %d floats exceeds remaining %d bytes", dim, len(d.buf))
		return
	}
	if dim > 0 {
		r.Vector = make([]float32, dim)
		for i := range r.Vector {
			f := math.Float32frombits(binary.LittleEndian.Uint32(d.buf[4*i:]))
			if f != f || math.IsInf(float64(f), 0) {
				// Writes refuse non-finite vectors; one here is damage.
				d.fail("non-finite vector component")
				return
			}
			r.Vector[i] = f
		}
		d.buf = d.buf[4*dim:]
	}
	if r.ID == "" {
		d.fail("record without id")
	}
}

func (d *decoder) op(o *batchOp) {
	o.Seq = d.uvarint()
	switch kind := d.byte(); kind {
	case opMeta:
		n := d.length()
		o.Meta = make(map[string]string, n)
		for i := 0; i < n && d.err == nil; i++ {
			k := d.str()
			o.Meta[k] = d.str()
		}
	case opBatch:
		o.Batch.DeleteSources = d.strs()
		o.Batch.DeleteIDs = d.strs()
		n := d.length()
		if d.err == nil && n > 0 {
			o.Batch.Put = make([]index.Record, n)
			for i := 0; i < n && d.err == nil; i++ {
				d.record(&o.Batch.Put[i])
			}
		}
	default:
		if d.err == nil {
			d.fail("unknown operation kind %d", kind)
		}
	}
	if d.err == nil && len(d.buf) != 0 {
		d.fail("%d trailing bytes", len(d.buf))
	}
}

func encodeOp(o *batchOp) []byte {
	e := encoder{}
	e.op(o)
	return e.buf
}

func decodeOp(p []byte) (batchOp, error) {
	var o batchOp
	d := decoder{buf: p}
	d.op(&o)
	return o, d.err
}

func encodeRecord(r *index.Record) []byte {
	e := encoder{}
	e.record(r)
	return e.buf
}

func decodeRecord(p []byte) (index.Record, error) {
	return decodeRecordFrom(decoder{buf: p})
}

// decodeRecordShared decodes a record without its vector (a format-2
// snapshot's) with one allocation for all its strings: they are cut from
// one copy of p, which they keep alive together (a record's strings live
// and die with it).
func decodeRecordShared(p []byte) (index.Record, error) {
	return decodeRecordFrom(decoder{buf: p, src: string(p)})
}

func decodeRecordFrom(d decoder) (index.Record, error) {
	var r index.Record
	d.record(&r)
	if d.err == nil && len(d.buf) != 0 {
		d.fail("%d trailing bytes", len(d.buf))
	}
	return r, d.err
}
