package vecindex

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"unsafe"

	"github.com/ragmem/ragmem/internal/wal"
)

// The persisted codes. A store that keeps its vectors in a file writes the
// codes of the same vectors, in the same order, with a CodesWriter; on open
// it reads them back (ReadCodes) and installs them with Load, so that the
// index is at full speed without encoding anything. The format is a
// sequence of checksummed frames (internal/wal), little-endian:
//
//	header  "RGMVXC01", dim u32, pd u32, seed u64, count u64, flags u8
//	        (1: centred, 2: int8 rows follow each code, 4: sparse data: the
//	        rows go dimension-major), centre dim × f32
//	data    n u32, then n × (pd/64 × u64 code, a f32, ones f32, err f32
//	        [, scale f32, dim × i8 row])             (at most codesPerFrame)
//	end     "RGMVXEND", count u64, the caller's tag
//
// The tag identifies what the codes belong to (the local backend writes
// its snapshot's sequence and vector checksum); nothing may follow the end
// frame.

// ErrCodes reports persisted codes that are damaged, truncated, or do not
// belong to the vectors they are loaded with.
var ErrCodes = errors.New("vecindex: codes unreadable")

const (
	codesMagic    = "RGMVXC01"
	codesEnd      = "RGMVXEND"
	codesPerFrame = 1024
	maxCodesDim   = 1 << 16
	maxCodesCount = 1 << 31
	flagCentred   = 1
	flagInt8      = 2
	flagSparse    = 4
)

// CodesWriter writes the codes of an index's vectors in an order its caller
// chooses. It is not safe for concurrent use, and the index must not be
// modified while it is in use (Add reports ErrCodes if it was).
type CodesWriter struct {
	x       *Index
	w       *bufio.Writer
	coder   *binCoder
	int8    bool // rows follow each code
	dense   bool // they are the index's rows (else computed for the dimension-major store)
	count   int
	n       int
	frame   []byte // payload being built
	inFrame int
	code    []uint64
	row     []int8
	scratch []float32
	err     error
}

// NewCodesWriter starts writing the codes of count vectors to w.
func (x *Index) NewCodesWriter(w io.Writer, count int) (*CodesWriter, error) {
	x.mu.RLock()
	coder, centred, sparse, rows := x.coder, x.centred, x.sparse == 1, x.rows.on
	x.mu.RUnlock()
	int8 := sparse || rows
	if coder == nil {
		return nil, fmt.Errorf("%w: the index has no dimension yet", ErrCodes)
	}
	cw := &CodesWriter{x: x, w: bufio.NewWriterSize(w, 1<<20), coder: coder, int8: int8, dense: rows, count: count,
		code: make([]uint64, coder.words), scratch: make([]float32, coder.pd)}
	h := []byte(codesMagic)
	h = binary.LittleEndian.AppendUint32(h, uint32(coder.dim))
	h = binary.LittleEndian.AppendUint32(h, uint32(coder.pd))
	h = binary.LittleEndian.AppendUint64(h, coder.rot.seed)
	h = binary.LittleEndian.AppendUint64(h, uint64(count))
	var flags byte
	if centred {
		flags |= flagCentred
	}
	if int8 {
		flags |= flagInt8
	}
	if sparse {
		flags |= flagSparse
	}
	h = append(h, flags)
	for _, f := range coder.centre {
		h = binary.LittleEndian.AppendUint32(h, math.Float32bits(f))
	}
	if _, err := cw.w.Write(wal.AppendFrame(nil, h)); err != nil {
		return nil, err
	}
	return cw, nil
}

// Add appends the codes of the vector v stored under id: copied from the
// index when it holds that vector, computed otherwise.
func (cw *CodesWriter) Add(id string, v []float32) error {
	if cw.err != nil {
		return cw.err
	}
	if cw.n == cw.count {
		cw.err = fmt.Errorf("%w: more than the %d vectors announced", ErrCodes, cw.count)
		return cw.err
	}
	if len(v) != cw.coder.dim {
		cw.err = fmt.Errorf("%w: %q has %d dimensions, the codes %d", ErrDimension, id, len(v), cw.coder.dim)
		return cw.err
	}
	x := cw.x
	var f binFactor
	x.mu.RLock()
	if x.coder != cw.coder {
		x.mu.RUnlock()
		cw.err = fmt.Errorf("%w: the index changed while its codes were written", ErrCodes)
		return cw.err
	}
	slot, ok := x.slotOf[id]
	held := ok && SameVector(x.vecs[slot], v)
	var rowScale float32
	var row []int8
	if held {
		blockCode(cw.code, x.codes, cw.coder.words, int(slot))
		f = x.fac.get(int(slot))
		if cw.dense {
			cw.row = append(cw.row[:0], x.rows.row(int(slot))...)
			rowScale, row = x.rows.scale[slot], cw.row
		}
	}
	x.mu.RUnlock()
	nv := normalised(v)
	if !held {
		f = cw.coder.encode(cw.code, nv, cw.scratch)
	}
	if cw.int8 && row == nil {
		cw.row = append(cw.row[:0], make([]int8, len(nv))...)
		rowScale, row = quantRow(cw.row, nv), cw.row
	}
	if cw.inFrame == 0 {
		cw.frame = append(cw.frame[:0], 0, 0, 0, 0)
	}
	for _, c := range cw.code {
		cw.frame = binary.LittleEndian.AppendUint64(cw.frame, c)
	}
	for _, g := range []float32{f.a, f.ones, f.err} {
		cw.frame = binary.LittleEndian.AppendUint32(cw.frame, math.Float32bits(g))
	}
	if cw.int8 {
		cw.frame = binary.LittleEndian.AppendUint32(cw.frame, math.Float32bits(rowScale))
		for _, b := range row {
			cw.frame = append(cw.frame, byte(b))
		}
	}
	cw.inFrame++
	cw.n++
	if cw.inFrame == codesPerFrame {
		cw.err = cw.flush()
	}
	return cw.err
}

// SameVector reports whether a and b hold the same values; it answers at
// once when they are the same memory, as a vector read back from the index
// usually is.
func SameVector(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (cw *CodesWriter) flush() error {
	if cw.inFrame == 0 {
		return nil
	}
	binary.LittleEndian.PutUint32(cw.frame, uint32(cw.inFrame))
	cw.inFrame = 0
	_, err := cw.w.Write(wal.AppendFrame(nil, cw.frame))
	return err
}

// Finish writes the end frame with tag and flushes. Exactly the announced
// number of vectors must have been added.
func (cw *CodesWriter) Finish(tag []byte) error {
	if cw.err != nil {
		return cw.err
	}
	if cw.n != cw.count {
		return fmt.Errorf("%w: %d vectors added, %d announced", ErrCodes, cw.n, cw.count)
	}
	if err := cw.flush(); err != nil {
		return err
	}
	end := binary.LittleEndian.AppendUint64([]byte(codesEnd), uint64(cw.count))
	end = append(end, tag...)
	if _, err := cw.w.Write(wal.AppendFrame(nil, end)); err != nil {
		return err
	}
	return cw.w.Flush()
}

// Codes is the decoded form of persisted codes, ready for Load. It is a
// plain value that Load takes over.
type Codes struct {
	dim, pd int
	seed    uint64
	centred bool
	centre  []float32
	count   int
	codes   []uint64 // block layout
	fac     scanFactors
	sparse  bool
	quant   quantStore // sparse data's rows, dimension-major
	rows    rowStore   // dense data's rows
}

// Len returns the number of vectors the codes describe.
func (c *Codes) Len() int { return c.count }

// Dim returns their dimension.
func (c *Codes) Dim() int { return c.dim }

// ReadCodes reads persisted codes of size bytes (the length of what r
// holds; negative when unknown) and returns them with the tag they were
// written with. Every frame's checksum is verified; damage, truncation or
// anything inconsistent is an error wrapping ErrCodes. With size known, a
// header whose count the bytes cannot hold is refused at once and the
// codes are allocated once, at their final size; without it, memory grows
// with the data actually read, not with the counts the header claims.
func ReadCodes(r io.Reader, size int64) (*Codes, []byte, error) {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 1<<20)
	}
	c, h, err := readCodesHeader(br, size)
	if err != nil {
		return nil, nil, err
	}
	fr := &codesFrames{c: c, codesHeader: h, code: make([]uint64, c.pd/64)}
	var buf []byte
	for {
		p, err := wal.ReadFrame(br, buf)
		if err != nil {
			return nil, nil, badCodes("after %d vectors: %v", fr.n, err)
		}
		buf = p
		if len(p) >= len(codesEnd)+8 && string(p[:len(codesEnd)]) == codesEnd {
			if got := binary.LittleEndian.Uint64(p[len(codesEnd):]); got != h.count || fr.n != c.count {
				return nil, nil, badCodes("end frame counts %d vectors, read %d, header %d", got, fr.n, h.count)
			}
			tag := append([]byte(nil), p[len(codesEnd)+8:]...)
			if _, err := br.ReadByte(); err != io.EOF {
				return nil, nil, badCodes("data after the end frame")
			}
			return c, tag, nil
		}
		if err := fr.read(p); err != nil {
			return nil, nil, err
		}
	}
}

// badCodes returns an error wrapping ErrCodes that says what is wrong.
func badCodes(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCodes, fmt.Sprintf(format, args...))
}

// codesHeader is what the header of persisted codes says beyond the Codes
// it starts.
type codesHeader struct {
	count    uint64 // vectors
	per      int    // bytes a vector takes in a frame
	withRows bool   // int8 rows follow each code
}

// readCodesHeader reads and checks the header frame and returns the Codes
// it describes, without vectors yet (allocated at their final size when
// size, the bytes of the codes, is known and can hold them).
func readCodesHeader(br *bufio.Reader, size int64) (*Codes, codesHeader, error) {
	var h codesHeader
	p, err := wal.ReadFrame(br, nil)
	if err != nil {
		return nil, h, badCodes("header: %v", err)
	}
	const fixed = len(codesMagic) + 4 + 4 + 8 + 8 + 1
	if len(p) < fixed || string(p[:len(codesMagic)]) != codesMagic {
		return nil, h, badCodes("bad header")
	}
	b := p[len(codesMagic):]
	c := &Codes{dim: int(binary.LittleEndian.Uint32(b)), pd: int(binary.LittleEndian.Uint32(b[4:])), seed: binary.LittleEndian.Uint64(b[8:])}
	h.count = binary.LittleEndian.Uint64(b[16:])
	flags := b[24]
	if c.dim <= 0 || c.dim > maxCodesDim || c.pd != (c.dim+63)/64*64 || h.count > maxCodesCount || flags&^(flagCentred|flagInt8|flagSparse) != 0 || flags&flagSparse != 0 && flags&flagInt8 == 0 {
		return nil, h, badCodes("impossible header (dimension %d, padded %d, count %d, flags %d)", c.dim, c.pd, h.count, flags)
	}
	if len(p) != fixed+4*c.dim {
		return nil, h, badCodes("header of %d bytes, want %d", len(p), fixed+4*c.dim)
	}
	c.count = int(h.count)
	c.centred, c.sparse = flags&flagCentred != 0, flags&flagSparse != 0
	h.withRows = flags&flagInt8 != 0
	c.centre = make([]float32, c.dim)
	for i := range c.centre {
		f := math.Float32frombits(binary.LittleEndian.Uint32(p[fixed+4*i:]))
		if !finite(f) {
			return nil, h, badCodes("non-finite centre")
		}
		c.centre[i] = f
	}
	h.per = 8*(c.pd/64) + 12
	if h.withRows {
		h.per += 4 + c.dim
		if c.sparse {
			c.quant.reset(c.dim)
		} else {
			c.rows = rowStore{on: true, dim: c.dim}
		}
	}
	if size >= 0 {
		// Each frame of up to codesPerFrame vectors costs its frame header
		// and count besides the vectors themselves.
		frames := (h.count + codesPerFrame - 1) / codesPerFrame
		if need := h.count*uint64(h.per) + frames*uint64(wal.FrameHeader+4); need > uint64(size) {
			return nil, h, badCodes("%d vectors need %d bytes, the codes have %d", h.count, need, size)
		}
		c.reserve(c.count)
	}
	return c, h, nil
}

// codesFrames reads the frames of vectors into c, n of them so far.
type codesFrames struct {
	c *Codes
	codesHeader
	n            int
	code         []uint64 // scratch: one vector's code
	sparseRows   [][]byte
	sparseScales []float32
}

// read reads one frame of vectors p: its count, then for each vector its
// code, its factors and, with rows, its scale and int8 row.
func (fr *codesFrames) read(p []byte) error {
	c := fr.c
	if len(p) < 4 {
		return badCodes("short frame after %d vectors", fr.n)
	}
	m := int(binary.LittleEndian.Uint32(p))
	if m == 0 || m > codesPerFrame || len(p) != 4+m*fr.per || fr.n+m > c.count {
		return badCodes("frame of %d bytes for %d vectors after %d", len(p), m, fr.n)
	}
	c.grow(fr.n + m)
	words := len(fr.code)
	d := p[4:]
	first := fr.n
	fr.sparseRows, fr.sparseScales = fr.sparseRows[:0], fr.sparseScales[:0]
	for i := 0; i < m; i++ {
		for w := range fr.code {
			fr.code[w] = binary.LittleEndian.Uint64(d[8*w:])
		}
		d = d[8*words:]
		setBlockCode(c.codes, words, fr.n, fr.code)
		f := binFactor{
			a:    math.Float32frombits(binary.LittleEndian.Uint32(d)),
			ones: math.Float32frombits(binary.LittleEndian.Uint32(d[4:])),
			err:  math.Float32frombits(binary.LittleEndian.Uint32(d[8:])),
		}
		if !finite(f.a) || !finite(f.ones) || !finite(f.err) || f.ones < 0 || f.ones > float32(c.pd) {
			return badCodes("vector %d has impossible factors", fr.n)
		}
		c.fac.set(fr.n, f)
		d = d[12:]
		if fr.withRows {
			if err := fr.row(d[:4+c.dim]); err != nil {
				return err
			}
			d = d[4+c.dim:]
		}
		fr.n++
	}
	if len(fr.sparseRows) > 0 {
		c.quant.setRows(first, fr.sparseScales, fr.sparseRows)
	}
	return nil
}

// row reads the scale and int8 row of vector n from d.
func (fr *codesFrames) row(d []byte) error {
	scale := math.Float32frombits(binary.LittleEndian.Uint32(d))
	if !finite(scale) || scale < 0 {
		return badCodes("vector %d has an impossible scale", fr.n)
	}
	if fr.c.sparse {
		// Stored dimension-major: the frame's rows are transposed
		// together at its end.
		fr.sparseRows = append(fr.sparseRows, d[4:])
		fr.sparseScales = append(fr.sparseScales, scale)
	} else {
		fr.c.rows.set(fr.n, scale, bytesToInt8(d[4:]))
	}
	return nil
}

func finite(f float32) bool { return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) }

// reserve allocates room for n vectors at once, so that reading them
// copies nothing twice.
func (c *Codes) reserve(n int) {
	words := c.pd / 64
	c.codes = make([]uint64, 0, (n+codeBlock-1)/codeBlock*codeBlock*words)
	blocks := (n + codeBlock - 1) / codeBlock * codeBlock
	c.fac = scanFactors{a: make([]float32, 0, blocks), ones: make([]float32, 0, blocks), err: make([]float32, 0, blocks)}
	if c.rows.on {
		c.rows.codes = make([]int8, 0, n*c.dim)
		c.rows.scale = make([]float32, 0, n)
	}
	if c.sparse {
		c.quant.reserve(n)
	}
}

// grow makes room for n vectors.
func (c *Codes) grow(n int) {
	words := c.pd / 64
	need := (n + codeBlock - 1) / codeBlock * codeBlock * words
	if need > len(c.codes) {
		if need <= cap(c.codes) {
			c.codes = c.codes[:need]
		} else {
			nc := make([]uint64, need, max(need, 2*len(c.codes)))
			copy(nc, c.codes)
			c.codes = nc
		}
	}
	c.fac.grow(n)
	if c.sparse {
		c.quant.grow(n)
	}
}

func bytesToInt8(b []byte) []int8 {
	return unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(b))), len(b))
}

// Load installs codes read with ReadCodes for items (item i is vector i of
// the codes) into an empty index. The vectors are referenced, not read,
// except for a sample that is encoded again and compared with its codes:
// codes that do not belong to the vectors fail with ErrCodes and leave the
// index empty. Vectors must be of unit length, as Add would make them.
func (x *Index) Load(items []Item, c *Codes) error {
	if c.count != len(items) {
		return fmt.Errorf("%w: %d codes for %d vectors", ErrCodes, c.count, len(items))
	}
	if _, err := checkDims(items, c.dim); err != nil {
		return err
	}
	coder := newBinCoder(c.dim, c.seed, c.centre)
	if err := spotCheck(coder, items, c); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.vecs) != 0 || x.dim != 0 {
		return fmt.Errorf("%w: Load needs an empty index", ErrCodes)
	}
	x.dim, x.coder, x.centred = c.dim, coder, c.centred
	x.codes, x.fac = c.codes, c.fac
	x.vecs = make([][]float32, 0, len(items))
	x.ids = make([]string, 0, len(items))
	x.idKeys = make([]uint64, 0, len(items))
	x.docType = make([]uint8, 0, len(items))
	x.source = make([]int32, 0, len(items))
	x.slotOf = make(map[string]int32, len(items))
	x.sources = make(map[string]int32, len(items))
	x.bySrc = make(map[int32][]int32, len(items))
	for i := range items {
		it := &items[i]
		slot := int32(len(x.vecs))
		if old, ok := x.slotOf[it.ID]; ok {
			x.deleteSlot(old) // a repeated id: the last one wins, as with Add
		}
		t := x.typeOf(it.DocType)
		s := x.sourceOf(it.Source)
		x.vecs = append(x.vecs, it.Vector)
		x.ids = append(x.ids, it.ID)
		x.idKeys = append(x.idKeys, idKey(it.ID))
		x.docType = append(x.docType, t)
		x.source = append(x.source, s)
		x.slotOf[it.ID] = slot
		x.nType[t]++
		x.bySrc[s] = append(x.bySrc[s], slot)
	}
	switch {
	case x.opt.Sparse == SparseNever || x.opt.Sparse == SparseAuto && !c.sparse:
		x.sparse = -1
	case c.sparse:
		x.sparse, x.quant = 1, c.quant
		for slot, v := range x.vecs {
			if v == nil {
				x.quant.clear(slot)
			}
		}
	default: // SparseAlways with codes of dense data
		x.sparse = 1
		x.quant.reset(x.dim)
		x.quantise(0, len(x.vecs))
	}
	x.rows = rowStore{on: x.sparse == -1 && !x.opt.NoRows, dim: x.dim}
	if x.rows.on {
		if c.rows.on {
			x.rows = c.rows
		} else {
			// Codes without rows: compute them (this reads every vector).
			row := make([]int8, x.dim)
			for slot, v := range x.vecs {
				if v != nil {
					x.rows.set(slot, quantRow(row, v), row)
				} else {
					clear(row)
					x.rows.set(slot, 0, row)
				}
			}
		}
	}
	x.maintain()
	return nil
}

// spotCheck encodes up to 16 evenly spaced vectors again and compares them
// with their codes; a few differing bits are tolerated (float rounding on
// another CPU), not more.
func spotCheck(coder *binCoder, items []Item, c *Codes) error {
	n := len(items)
	if n == 0 {
		return nil
	}
	code, back := make([]uint64, coder.words), make([]uint64, coder.words)
	scratch := make([]float32, coder.pd)
	for i := 0; i < min(n, 16); i++ {
		slot := i * n / min(n, 16)
		v := items[slot].Vector
		var norm float64
		for _, f := range v {
			norm += float64(f) * float64(f)
		}
		if math.Abs(norm-1) > 1e-3 {
			return fmt.Errorf("%w: vector %d is not of unit length", ErrCodes, slot)
		}
		f := coder.encode(code, v, scratch)
		blockCode(back, c.codes, coder.words, slot)
		diff := 0
		for w := range code {
			diff += bits.OnesCount64(code[w] ^ back[w])
		}
		g := c.fac.get(slot)
		if diff > coder.pd/32 || math.Abs(float64(f.a-g.a)) > 1e-3*math.Abs(float64(f.a))+1e-6 {
			return fmt.Errorf("%w: vector %d does not match its code (%d bits differ)", ErrCodes, slot, diff)
		}
	}
	return nil
}
