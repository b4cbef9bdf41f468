// Package export writes a store to one portable file and reads it back
// (`ragmem export FILE`, `ragmem import FILE`).
//
// The file is a chromem-go database export (chromem.DB.ExportToWriter): gob,
// gzip-compressed by default, optionally sealed with AES-256-GCM. It holds
// two collections. "ragmem" has one chromem-go document per stored record:
// its id, its chunk text as the document's content, its vector as the
// document's embedding and everything else (source, title, headings, doc
// type, position, offsets, tokens, creation time, content hash and the
// record's attributes as "attr.KEY") as string metadata. "ragmem-export"
// has one document, "header": what the file is (format, version), the
// embedder that made the vectors (identity, spec without credentials,
// dimension), the store settings carried along, and the record ids in store
// order. Any chromem-go program can open the file with DB.ImportFromFile and
// query the "ragmem" collection with the same embedder.
//
// Snapshot reads every record through the index in one consistent view
// (engine.Index.Records); Import writes them back through the index, so the
// destination's BM25 and vector indexes are rebuilt from the records, and
// the vectors are stored as they were, bit for bit: no embedder is called.
package export

import (
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	chromem "github.com/philippgille/chromem-go"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/embed"
	"github.com/ragmem/ragmem/internal/index/engine"
	"github.com/ragmem/ragmem/internal/wal"
)

// Errors. Each error of this package wraps exactly one of them.
var (
	// ErrFormat: the file is not a readable ragmem export (damaged,
	// truncated, another kind of file, or encrypted and no key was given).
	ErrFormat = errors.New("export: not a readable ragmem export")
	// ErrKey: the key is malformed, or it does not open the file.
	ErrKey = errors.New("export: wrong key")
	// ErrTooLarge: the file, or what it decompresses to, exceeds the limit.
	ErrTooLarge = errors.New("export: file too large")
	// ErrEmbedderMismatch: the file's vectors were made by another embedder
	// than the destination store's.
	ErrEmbedderMismatch = errors.New("export: embedder mismatch")
	// ErrNotEmpty: Import into a store that holds records, without a mode
	// that says what to do with them.
	ErrNotEmpty = errors.New("export: the destination store is not empty")
)

// Names inside the file.
const (
	// Collection is the chromem-go collection of the records.
	Collection = "ragmem"
	// HeaderCollection is the chromem-go collection of the header document.
	HeaderCollection = "ragmem-export"
	headerID         = "header"
	formatName       = "ragmem-export"
	formatVersion    = "1"
)

// KeySize is the length of an encryption key: AES-256.
const KeySize = 32

// DefaultMaxBytes bounds what Read decodes by default: 8 GiB, the most a
// gob message may hold.
const DefaultMaxBytes = 8 << 30

// Snapshot is a store's content at one moment: every record (vectors
// included), the embedder that made the vectors and the settings carried
// along. It is a plain value; do not change it while Import or Write uses
// it.
type Snapshot struct {
	// Embedder is the identity of the embedder that made the vectors.
	Embedder string
	// Spec is how to rebuild that embedder (no credentials); nil when the
	// store records none.
	Spec *embed.Spec
	// Dimension is the length of every vector; 0 when there are none.
	Dimension int
	// Settings are store settings (engine.Index.Setting) by key.
	Settings map[string]string
	// Records are the store's records ordered by source, then position.
	Records []index.Record
	// Taken is when the snapshot was taken (UTC).
	Taken time.Time
}

// Take reads a consistent snapshot of the store: all records in one view
// of the backend (writers may go on meanwhile; the snapshot holds each
// batch entirely or not at all), the embedder the store records and the
// settings named (such as search.CalibrationKey; missing ones are skipped).
func Take(ctx context.Context, ix *engine.Index, settings []string) (*Snapshot, error) {
	rec, ok, err := engine.ReadEmbedderRecord(ctx, ix.Backend())
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	s := &Snapshot{Embedder: ix.Embedder().Identity(), Settings: map[string]string{}, Taken: time.Now().UTC()}
	if ok {
		s.Embedder, s.Spec = rec.Identity, rec.Spec
	}
	for _, k := range settings {
		v, ok, err := ix.Setting(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("export: setting %s: %w", k, err)
		}
		if ok {
			s.Settings[k] = v
		}
	}
	if s.Records, err = ix.Records(ctx, index.Filter{}); err != nil {
		return nil, fmt.Errorf("export: read records: %w", err)
	}
	for i := range s.Records {
		if n := len(s.Records[i].Vector); n > 0 {
			if s.Dimension == 0 {
				s.Dimension = n
			} else if n != s.Dimension {
				return nil, fmt.Errorf("export: record %s has a %d-dimensional vector, others %d", s.Records[i].ID, n, s.Dimension)
			}
		}
	}
	return s, nil
}

// WriteOptions configure Write. A nil *WriteOptions means all defaults.
type WriteOptions struct {
	// Key, when set, encrypts the file with AES-256-GCM; it must be KeySize
	// bytes. Default none: the file is not encrypted.
	Key []byte
	// NoCompress writes plain gob. Default false: gzip.
	NoCompress bool
}

// Write writes s to w as a chromem-go database export (see the package
// comment). It holds the whole database in memory while it encodes, and
// with a key the whole encrypted file too (chromem-go seals it in one
// piece).
func (s *Snapshot) Write(ctx context.Context, w io.Writer, opts *WriteOptions) error {
	var o WriteOptions
	if opts != nil {
		o = *opts
	}
	if o.Key != nil && len(o.Key) != KeySize {
		return fmt.Errorf("%w: the key has %d bytes; it must have %d", ErrKey, len(o.Key), KeySize)
	}
	db, err := s.db(ctx)
	if err != nil {
		return err
	}
	if err := db.ExportToWriter(w, !o.NoCompress, string(o.Key)); err != nil {
		return fmt.Errorf("export: write: %w", err)
	}
	return nil
}

// Header document metadata keys.
const (
	hFormat    = "format"
	hVersion   = "version"
	hEmbedder  = "embedder"
	hSpec      = "embedderSpec"
	hDimension = "dimension"
	hRecords   = "records"
	hTaken     = "taken"
	hSetting   = "setting."
)

// Record metadata keys.
const (
	mSource   = "source"
	mTitle    = "title"
	mHeadings = "headings"
	mType     = "type"
	mPosition = "position"
	mStart    = "start"
	mEnd      = "end"
	mTokens   = "tokens"
	mCreated  = "created"
	mHash     = "hash"
	mVector   = "vector" // base64 little-endian float32s, when the embedding cannot carry the vector exactly
	mAttr     = "attr."
)

// db builds the chromem-go database of s.
func (s *Snapshot) db(ctx context.Context) (*chromem.DB, error) {
	db := chromem.NewDB()
	noEmbed := func(context.Context, string) ([]float32, error) {
		return nil, errors.New("export: no embedder while exporting")
	}
	hmeta := map[string]string{
		hFormat: formatName, hVersion: formatVersion, hEmbedder: s.Embedder,
		hDimension: strconv.Itoa(s.Dimension), hRecords: strconv.Itoa(len(s.Records)),
		hTaken: s.Taken.UTC().Format(time.RFC3339Nano),
	}
	if s.Spec != nil {
		b, err := json.Marshal(s.Spec)
		if err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
		hmeta[hSpec] = string(b)
	}
	for k, v := range s.Settings {
		hmeta[hSetting+k] = v
	}
	ids := make([]string, len(s.Records))
	for i := range s.Records {
		ids[i] = s.Records[i].ID
	}
	idJSON, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	hc, err := db.CreateCollection(HeaderCollection, hmeta, noEmbed)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if err := hc.AddDocument(ctx, chromem.Document{ID: headerID, Metadata: hmeta, Embedding: []float32{1}, Content: string(idJSON)}); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	c, err := db.CreateCollection(Collection, nil, noEmbed)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	for i := range s.Records {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r := &s.Records[i]
		doc := chromem.Document{ID: r.ID, Metadata: recordMeta(r), Embedding: r.Vector, Content: r.Content}
		if len(r.Vector) == 0 {
			doc.Embedding = []float32{1} // chromem-go wants one; "vector" says there is none
			doc.Metadata[mVector] = ""
		}
		if err := c.AddDocument(ctx, doc); err != nil {
			return nil, fmt.Errorf("export: record %s: %w", r.ID, err)
		}
		if len(r.Vector) == 0 {
			continue
		}
		// chromem-go renormalises a vector that is not of unit length
		// (within 1e-6): then the exact vector goes into the metadata.
		got, err := c.GetByID(ctx, r.ID)
		if err != nil {
			return nil, fmt.Errorf("export: record %s: %w", r.ID, err)
		}
		if !sameBits(got.Embedding, r.Vector) {
			doc.Metadata[mVector] = encodeVector(r.Vector)
			if err := c.AddDocument(ctx, doc); err != nil {
				return nil, fmt.Errorf("export: record %s: %w", r.ID, err)
			}
		}
	}
	return db, nil
}

func recordMeta(r *index.Record) map[string]string {
	m := make(map[string]string, 10+len(r.Attrs))
	m[mSource] = r.SourceURL
	m[mTitle] = r.Title
	if len(r.HeadingPath) > 0 {
		b, _ := json.Marshal(r.HeadingPath) // strings always marshal
		m[mHeadings] = string(b)
	}
	m[mType] = r.DocType
	m[mPosition] = strconv.Itoa(r.Position)
	m[mStart] = strconv.Itoa(r.Start)
	m[mEnd] = strconv.Itoa(r.End)
	m[mTokens] = strconv.Itoa(r.Tokens)
	m[mCreated] = r.CreatedAt.UTC().Format(time.RFC3339Nano)
	m[mHash] = r.ContentHash
	for k, v := range r.Attrs {
		m[mAttr+k] = v
	}
	return m
}

func sameBits(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

func encodeVector(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

func decodeVector(s string) ([]float32, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b)%4 != 0 {
		return nil, errors.New("bad vector")
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// ReadOptions configure Read. A nil *ReadOptions means all defaults.
type ReadOptions struct {
	// Key opens an encrypted file; it must be KeySize bytes. Default none.
	Key []byte
	// MaxBytes bounds the file and, for a file without encryption, what it
	// decompresses to; larger ones fail with ErrTooLarge before they are
	// decoded. Default DefaultMaxBytes. (An encrypted file is authenticated
	// by its key, so only the holder of the key can have made it; its size
	// is bounded, what it decompresses to is not checked.)
	MaxBytes int64
}

// Read reads a file written by Write and checks it whole: the header, every
// record the header lists and nothing else, every field of every record.
func Read(ctx context.Context, r io.ReadSeeker, opts *ReadOptions) (*Snapshot, error) {
	var o ReadOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Key != nil && len(o.Key) != KeySize {
		return nil, fmt.Errorf("%w: the key has %d bytes; it must have %d", ErrKey, len(o.Key), KeySize)
	}
	size, err := r.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if size > o.MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes; the limit is %d", ErrTooLarge, size, o.MaxBytes)
	}
	if size < 2 {
		return nil, fmt.Errorf("%w: the file is empty or truncated (%d bytes)", ErrFormat, size)
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if o.Key == nil {
		if err := checkPlain(r, o.MaxBytes); err != nil {
			return nil, err
		}
	}
	db := chromem.NewDB()
	if err := db.ImportFromReader(r, string(o.Key)); err != nil {
		return nil, readError(err, o.Key != nil)
	}
	return fromDB(ctx, db)
}

// checkPlain bounds an unencrypted file before chromem-go decodes it: what
// it holds (decompressed, for gzip) must fit in max bytes, and its gob
// stream must declare no count larger than the bytes that follow (see
// checkGob). A gzip stream is read to its end, so that its checksum catches
// damage that would otherwise surface as a confusing gob error.
func checkPlain(r io.ReadSeeker, max int64) error {
	var magic [2]byte
	if _, err := io.ReadFull(r, magic[:]); err != nil {
		return fmt.Errorf("%w: %v", ErrFormat, err)
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	var src io.Reader = r
	if magic == [2]byte{0x1f, 0x8b} {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return fmt.Errorf("%w: gzip: %v", ErrFormat, err)
		}
		src = zr
	}
	lr := &io.LimitedReader{R: src, N: max + 1}
	err := checkGob(lr)
	if err == nil {
		_, err = io.Copy(io.Discard, lr) // the gzip checksum; nothing for plain gob
	}
	switch {
	case lr.N <= 0:
		return fmt.Errorf("%w: it decompresses to more than %d bytes", ErrTooLarge, max)
	case err != nil && src != io.Reader(r):
		return fmt.Errorf("%w: the file is damaged or truncated (%v)", ErrFormat, err)
	case err != nil:
		return fmt.Errorf("%w: the file is damaged, truncated, encrypted, or not an export (%v)", ErrFormat, err)
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// readError translates chromem-go's import error.
func readError(err error, keyed bool) error {
	msg := err.Error()
	switch {
	case keyed && strings.Contains(msg, "decrypt"):
		return fmt.Errorf("%w: the key does not open this file (or the file is not encrypted, or it is damaged)", ErrKey)
	case keyed:
		return fmt.Errorf("%w: the file opens with the key but does not decode (%v)", ErrFormat, err)
	}
	return fmt.Errorf("%w: the file is damaged, truncated, encrypted, or not an export: %v", ErrFormat, err)
}

// fromDB turns an imported chromem-go database into a snapshot, checking
// everything.
func fromDB(ctx context.Context, db *chromem.DB) (*Snapshot, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrFormat, fmt.Sprintf(format, args...))
	}
	hc := db.GetCollection(HeaderCollection, nil)
	c := db.GetCollection(Collection, nil)
	if hc == nil || c == nil {
		return nil, bad("it has no %q and %q collections; it is not a ragmem export", HeaderCollection, Collection)
	}
	hd, err := hc.GetByID(ctx, headerID)
	if err != nil {
		return nil, bad("no header document")
	}
	h := hd.Metadata
	if h[hFormat] != formatName {
		return nil, bad("format %q, want %q", h[hFormat], formatName)
	}
	if h[hVersion] != formatVersion {
		return nil, bad("version %q; this ragmem reads version %s", h[hVersion], formatVersion)
	}
	s := &Snapshot{Embedder: h[hEmbedder], Settings: map[string]string{}}
	if s.Embedder == "" {
		return nil, bad("the header names no embedder")
	}
	if s.Dimension, err = strconv.Atoi(h[hDimension]); err != nil || s.Dimension < 0 {
		return nil, bad("dimension %q", h[hDimension])
	}
	if s.Taken, err = time.Parse(time.RFC3339Nano, h[hTaken]); err != nil {
		return nil, bad("time %q", h[hTaken])
	}
	if raw, ok := h[hSpec]; ok {
		var sp embed.Spec
		if err := json.Unmarshal([]byte(raw), &sp); err != nil {
			return nil, bad("embedder spec: %v", err)
		}
		if err := sp.Validate(); err != nil {
			return nil, bad("embedder spec: %v", err)
		}
		s.Spec = &sp
	}
	for k, v := range h {
		if name, ok := strings.CutPrefix(k, hSetting); ok {
			s.Settings[name] = v
		}
	}
	var ids []string
	if err := json.Unmarshal([]byte(hd.Content), &ids); err != nil {
		return nil, bad("record list: %v", err)
	}
	n, err := strconv.Atoi(h[hRecords])
	if err != nil || n != len(ids) || n != c.Count() {
		return nil, bad("the header counts %s records and lists %d; the file holds %d", h[hRecords], len(ids), c.Count())
	}
	s.Records = make([]index.Record, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if id == "" || seen[id] {
			return nil, bad("record id %q is empty or listed twice", id)
		}
		seen[id] = true
		doc, err := c.GetByID(ctx, id)
		if err != nil {
			return nil, bad("record %q is listed but missing", id)
		}
		r, err := toRecord(&doc)
		if err != nil {
			return nil, bad("record %q: %v", id, err)
		}
		if len(r.Vector) > 0 && len(r.Vector) != s.Dimension {
			return nil, bad("record %q has a %d-dimensional vector; the header says %d", id, len(r.Vector), s.Dimension)
		}
		s.Records = append(s.Records, r)
	}
	return s, nil
}

func toRecord(d *chromem.Document) (index.Record, error) {
	m := d.Metadata
	r := index.Record{ID: d.ID, Content: d.Content, SourceURL: m[mSource], Title: m[mTitle], DocType: m[mType], ContentHash: m[mHash]}
	if r.SourceURL == "" {
		return r, errors.New("no source")
	}
	if r.DocType == "" {
		return r, errors.New("no doc type")
	}
	if raw, ok := m[mHeadings]; ok {
		if err := json.Unmarshal([]byte(raw), &r.HeadingPath); err != nil {
			return r, fmt.Errorf("headings: %v", err)
		}
	}
	for _, f := range []struct {
		key string
		dst *int
	}{{mPosition, &r.Position}, {mStart, &r.Start}, {mEnd, &r.End}, {mTokens, &r.Tokens}} {
		v, err := strconv.Atoi(m[f.key])
		if err != nil || v < 0 {
			return r, fmt.Errorf("%s %q", f.key, m[f.key])
		}
		*f.dst = v
	}
	var err error
	if r.CreatedAt, err = time.Parse(time.RFC3339Nano, m[mCreated]); err != nil {
		return r, fmt.Errorf("created %q", m[mCreated])
	}
	for k, v := range m {
		if name, ok := strings.CutPrefix(k, mAttr); ok {
			if r.Attrs == nil {
				r.Attrs = map[string]string{}
			}
			r.Attrs[name] = v
		}
	}
	if raw, ok := m[mVector]; ok {
		if raw != "" {
			if r.Vector, err = decodeVector(raw); err != nil {
				return r, err
			}
		}
	} else {
		r.Vector = d.Embedding
	}
	for _, x := range r.Vector {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return r, errors.New("a vector value is not finite")
		}
	}
	return r, nil
}

// Mode says what Import does with a destination that holds records.
type Mode int

// Import modes.
const (
	// Empty refuses a destination that holds any record (ErrNotEmpty).
	Empty Mode = iota
	// Merge replaces each source the file holds (all its records) and
	// leaves the destination's other sources alone.
	Merge
	// Replace makes the destination hold exactly the file's records: Merge,
	// then every source the file does not hold is removed.
	Replace
)

// ImportOptions configure Import. A nil *ImportOptions means all defaults.
type ImportOptions struct {
	// Mode is what to do with a destination that holds records. Default
	// Empty.
	Mode Mode
	// BatchRecords is the number of records per atomic batch; a source is
	// never split. Default 500.
	BatchRecords int
	// Progress is called after each batch with the records written so far
	// and the total. Default none.
	Progress func(done, total int)
}

// ImportReport says what Import did.
type ImportReport struct {
	Records  int            // records written
	Sources  map[string]int // sources written, per doc type
	Removed  int            // sources removed (Replace)
	Settings []string       // settings written
}

// Import writes the snapshot's records into ix, vectors as they are, in
// atomic batches that never split a source; the destination's BM25 and
// vector indexes are built from them as from any write. A destination whose
// embedder is not the one that made the vectors is refused before anything
// is written (ErrEmbedderMismatch), and so is one that holds records unless
// opts.Mode says Merge or Replace (ErrNotEmpty). Settings are written last.
// A failure part way leaves the batches written so far; importing the same
// file again with Merge completes it.
func Import(ctx context.Context, ix *engine.Index, s *Snapshot, opts *ImportOptions) (*ImportReport, error) {
	var o ImportOptions
	if opts != nil {
		o = *opts
	}
	if o.BatchRecords <= 0 {
		o.BatchRecords = 500
	}
	existing, total, err := checkImportTarget(ctx, ix, s, o.Mode)
	if err != nil {
		return nil, err
	}
	be := ix.Backend()
	im := &importer{ctx: ctx, be: be, o: &o, want: len(s.Records), rep: &ImportReport{Sources: map[string]int{}}}
	inFile, err := im.writeRecords(s.Records, total > 0)
	if err != nil {
		return im.rep, err
	}
	if o.Mode == Replace {
		for _, src := range existing {
			if !inFile[src.SourceURL] {
				im.bt.DeleteSources = append(im.bt.DeleteSources, src.SourceURL)
				im.rep.Removed++
			}
		}
		if err := im.flush(); err != nil {
			return im.rep, err
		}
	}
	if s.Dimension > 0 { // a store whose embedder learns its dimension on first use learns it now
		dimKey := engine.MetaKeys[1]
		if _, ok, err := be.Meta(ctx, dimKey); err == nil && !ok {
			if err := be.SetMeta(ctx, dimKey, strconv.Itoa(s.Dimension)); err != nil {
				return im.rep, fmt.Errorf("export: import: %w", err)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Settings)) {
		if err := ix.SetSetting(ctx, k, s.Settings[k]); err != nil {
			return im.rep, fmt.Errorf("export: import setting %s: %w", k, err)
		}
		im.rep.Settings = append(im.rep.Settings, k)
	}
	return im.rep, nil
}

// checkImportTarget refuses a destination whose embedder did not make the
// snapshot's vectors, or that holds sources when mode is Empty; it returns
// the destination's sources and their number, and binds the embedder to a
// store the snapshot's records go into.
func checkImportTarget(ctx context.Context, ix *engine.Index, s *Snapshot, mode Mode) ([]index.SourceInfo, int, error) {
	if id := ix.Embedder().Identity(); !engine.SameEmbedder(s.Embedder, id) {
		return nil, 0, fmt.Errorf("%w: the file's vectors were made by %q but the store uses %q", ErrEmbedderMismatch, s.Embedder, id)
	}
	if d := ix.Embedder().Dimension(); d > 0 && s.Dimension > 0 && d != s.Dimension {
		return nil, 0, fmt.Errorf("%w: the file holds %d-dimensional vectors; the store's embedder gives %d", ErrEmbedderMismatch, s.Dimension, d)
	}
	existing, total, err := ix.Sources(ctx, index.Filter{}, 0, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("export: %w", err)
	}
	if total > 0 && mode == Empty {
		return nil, 0, fmt.Errorf("%w: it holds %d sources", ErrNotEmpty, total)
	}
	if len(s.Records) > 0 {
		// The records are written to the backend directly: the store
		// records the embedder that made their vectors first.
		if err := ix.BindEmbedder(ctx); err != nil {
			return nil, 0, fmt.Errorf("export: import: %w", err)
		}
	}
	return existing, total, nil
}

// importer writes an import's batches to the backend.
type importer struct {
	ctx  context.Context
	be   driver.Backend
	o    *ImportOptions
	want int // records in the snapshot, for Progress
	rep  *ImportReport
	bt   driver.Batch
}

// flush applies the pending batch, if any.
func (im *importer) flush() error {
	if im.bt.Empty() {
		return nil
	}
	if err := im.be.Apply(im.ctx, &im.bt); err != nil {
		return fmt.Errorf("export: import: %w", err)
	}
	im.rep.Records += len(im.bt.Put)
	if im.o.Progress != nil {
		im.o.Progress(im.rep.Records, im.want)
	}
	im.bt = driver.Batch{}
	return nil
}

// writeRecords writes recs (ordered by source) in batches of at most
// BatchRecords that never split a source (a source larger than that is a
// batch of its own), each source replacing its old version when replace is
// set. It returns the sources written.
func (im *importer) writeRecords(recs []index.Record, replace bool) (map[string]bool, error) {
	inFile := map[string]bool{}
	for i := 0; i < len(recs); {
		j := i + 1
		for j < len(recs) && recs[j].SourceURL == recs[i].SourceURL {
			j++
		}
		if len(im.bt.Put) > 0 && len(im.bt.Put)+(j-i) > im.o.BatchRecords {
			if err := im.flush(); err != nil {
				return nil, err
			}
		}
		src := recs[i].SourceURL
		if !inFile[src] {
			inFile[src] = true
			im.rep.Sources[recs[i].DocType]++
			if replace {
				im.bt.DeleteSources = append(im.bt.DeleteSources, src)
			}
		}
		im.bt.Put = append(im.bt.Put, recs[i:j]...)
		i = j
	}
	return inFile, im.flush()
}

// WriteFile writes s to path (see Write) the durable way: a temporary file
// beside it, fsynced, renamed over path, and the directory fsynced. A
// failure leaves path as it was.
func (s *Snapshot) WriteFile(ctx context.Context, path string, opts *WriteOptions) error {
	return wal.WriteFile(wal.OS{}, path, &wal.WriteOptions{Shared: true}, func(w io.Writer) error {
		return s.Write(ctx, w, opts)
	})
}

// ReadFile reads the export at path (see Read). It must be a regular file;
// a symbolic link is not followed.
func ReadFile(ctx context.Context, path string, opts *ReadOptions) (*Snapshot, error) {
	f, _, err := wal.OpenRegular(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	defer f.Close()
	return Read(ctx, f, opts)
}
