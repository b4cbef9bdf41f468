package local

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	bolt "go.etcd.io/bbolt"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
)

// How ragmem keeps bleve (scorch) durable and checkable.
//
// Batches are "unsafe" in scorch's terms: Batch returns once the batch is
// searchable, and scorch's persister writes it to disk in the background
// (segment files fsynced, then the root bolt file). ragmem's journal is what
// makes a mutation durable; bleve is derived data. Each bleve batch records
// the journal sequence it applied (seqKey), so that on open bleve can be
// brought forward by replaying what it missed. The sequence of the last
// batch scorch has persisted is tracked through persisted callbacks: the
// journals bleve still needs are not pruned, and Close waits for it.
//
// Every document carries a stored check field, "<hash> <source URL>", where
// the hash covers what bleve indexed. Check compares it with the records,
// and reconciliation re-indexes only the documents that differ.
//
// Before bleve is opened its files are verified: the root bolt file is walked
// completely (bolt panics on damaged pages; the walk recovers) and every zap
// segment's CRC-32 footer is checked. A damaged index is quarantined and
// rebuilt from the records rather than trusted.

const (
	fieldCheck   = "chk"           // stored only: "<chunk hash> <source URL>"
	formatKey    = "ragmem.format" // bleve internal key: document layout version
	bleveFormat  = "2"             // 2: documents carry fieldCheck
	bleveDirName = "bleve"
)

// storeMapping is the BM25 mapping of ft plus the stored check field.
func storeMapping(ft *fullText) (mapping.IndexMapping, error) {
	im, err := ft.mapping()
	if err != nil {
		return nil, fmt.Errorf("index: full-text mapping: %w", err)
	}
	impl, ok := im.(*mapping.IndexMappingImpl)
	if !ok || impl.DefaultMapping == nil {
		return im, nil
	}
	chk := keywordField()
	chk.Index, chk.Store = false, true // stored only: read back, never searched
	impl.DefaultMapping.AddFieldMappingsAt(fieldCheck, chk)
	return impl, nil
}

// storeDoc is the bleve document of a record, with its check field.
func storeDoc(r *index.Record) map[string]any {
	d := bleveDoc(r)
	d[fieldCheck] = chunkHash(r) + " " + r.SourceURL
	return d
}

// chunkHash identifies the version of a chunk as the indexes see it: its id,
// source, type, title, heading path and text.
func chunkHash(r *index.Record) string {
	h := sha256.New()
	var n [8]byte
	put := func(s string) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		io.WriteString(h, s)
	}
	put(r.ID)
	put(r.SourceURL)
	put(r.DocType)
	put(r.Title)
	for _, p := range r.HeadingPath {
		put(p)
	}
	put(r.Content)
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// unsafeBatches is false only in the benchmark that measures what scorch's
// own per-batch persistence would cost.
var unsafeBatches = true

func scorchConfig(readOnly bool) map[string]any {
	if readOnly {
		return map[string]any{"read_only": true}
	}
	return map[string]any{"unsafe_batch": unsafeBatches}
}

// openFullText opens the bleve index at path, or creates it with ft's
// analysis when there is none (created = true). readOnly opens an existing
// index without writing.
func openFullText(path string, readOnly bool, ft *fullText) (bi bleve.Index, created bool, err error) {
	if _, serr := os.Stat(path); errors.Is(serr, os.ErrNotExist) {
		if readOnly {
			return nil, false, serr
		}
		m, err := storeMapping(ft)
		if err != nil {
			return nil, false, err
		}
		bi, err = bleve.NewUsing(path, m, scorch.Name, scorch.Name, scorchConfig(false))
		if err == nil {
			err = setFormatDurably(bi, ft)
		}
		return bi, true, err
	}
	defer func() {
		if p := recover(); p != nil {
			bi, err = nil, fmt.Errorf("%w: full-text index panicked on open: %v", driver.ErrCorrupt, p)
		}
	}()
	bi, err = bleve.OpenUsing(path, scorchConfig(readOnly))
	return bi, false, err
}

// setFormatDurably records the document layout and analysis versions in a new index and
// waits until scorch has persisted it, so that a store closed at once (or a
// crash right after) does not look like one an older version built.
func setFormatDurably(bi bleve.Index, ft *fullText) error {
	persisted := make(chan error, 1)
	bb := bi.NewBatch()
	bb.SetInternal([]byte(formatKey), []byte(bleveFormat))
	bb.SetInternal([]byte(analysisKey), []byte(ft.analysisVersion()))
	bb.SetPersistedCallback(func(err error) { persisted <- err })
	if err := bi.Batch(bb); err != nil {
		return err
	}
	select {
	case err := <-persisted:
		return err
	case <-time.After(bleveWait):
		return fmt.Errorf("index: the new full-text index was not persisted within %v", bleveWait)
	}
}

// bleveFormatOf returns the document layout version of an open index.
func bleveFormatOf(bi bleve.Index) string {
	v, err := bi.GetInternal([]byte(formatKey))
	if err != nil {
		return ""
	}
	return string(v)
}

// verifyFullText checks bleve's files before bleve is trusted with them: the
// root bolt file is walked completely and every segment it references must
// match the CRC-32 in its footer. A missing index is not an error.
func verifyFullText(path string) (err error) {
	meta := filepath.Join(path, "index_meta.json")
	if _, serr := os.Stat(meta); serr != nil {
		if _, derr := os.Stat(path); errors.Is(derr, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("%w: %s: %v", driver.ErrCorrupt, meta, serr)
	}
	store := filepath.Join(path, "store")
	segs, err := walkRootBolt(filepath.Join(store, "root.bolt"))
	if err != nil {
		return err
	}
	for _, name := range segs {
		if err := verifyZap(filepath.Join(store, name)); err != nil {
			return err
		}
	}
	return nil
}

// walkRootBolt reads every bucket and key of scorch's root.bolt, recovering
// from the panics bolt raises on damaged pages (and from faults on its
// memory map), and returns the segment files its snapshots reference.
func walkRootBolt(path string) (segs []string, err error) {
	st, serr := os.Stat(path)
	if serr != nil {
		return nil, fmt.Errorf("%w: full-text index root: %v", driver.ErrCorrupt, serr)
	}
	if st.Size() == 0 {
		return nil, fmt.Errorf("%w: full-text index root %s is empty", driver.ErrCorrupt, path)
	}
	done := make(chan struct{})
	go func() { // its own goroutine, so that SetPanicOnFault does not leak
		defer close(done)
		debug.SetPanicOnFault(true)
		defer func() {
			if p := recover(); p != nil {
				segs, err = nil, fmt.Errorf("%w: full-text index root %s is damaged: %v", driver.ErrCorrupt, filepath.Base(path), p)
			}
		}()
		db, oerr := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
		if oerr != nil {
			err = fmt.Errorf("%w: full-text index root %s: %v", driver.ErrCorrupt, filepath.Base(path), oerr)
			return
		}
		defer db.Close()
		seen := map[string]bool{}
		err = db.View(func(tx *bolt.Tx) error {
			var walk func(b *bolt.Bucket, depth int) error
			walk = func(b *bolt.Bucket, depth int) error {
				return b.ForEach(func(k, v []byte) error {
					if v == nil {
						if sub := b.Bucket(k); sub != nil && depth < 8 {
							return walk(sub, depth+1)
						}
						return nil
					}
					if len(k) == 1 && k[0] == 'p' && depth == 2 && strings.HasSuffix(string(v), ".zap") {
						if !seen[string(v)] {
							seen[string(v)] = true
							segs = append(segs, string(v))
						}
					}
					return nil
				})
			}
			return tx.ForEach(func(name []byte, b *bolt.Bucket) error { return walk(b, 0) })
		})
		if err != nil {
			err = fmt.Errorf("%w: full-text index root %s: %v", driver.ErrCorrupt, filepath.Base(path), err)
		}
	}()
	<-done
	return segs, err
}

// verifyZap checks a zap segment against the CRC-32 (IEEE, big-endian) of
// everything before it, which zap writes as the file's last four bytes.
func verifyZap(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w: full-text segment %s: %v", driver.ErrCorrupt, filepath.Base(path), err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() < 4 {
		return fmt.Errorf("%w: full-text segment %s is truncated", driver.ErrCorrupt, filepath.Base(path))
	}
	h := crc32.NewIEEE()
	if _, err := io.CopyN(h, f, st.Size()-4); err != nil {
		return fmt.Errorf("%w: full-text segment %s: %v", driver.ErrCorrupt, filepath.Base(path), err)
	}
	var tail [4]byte
	if _, err := io.ReadFull(f, tail[:]); err != nil {
		return fmt.Errorf("%w: full-text segment %s: %v", driver.ErrCorrupt, filepath.Base(path), err)
	}
	if binary.BigEndian.Uint32(tail[:]) != h.Sum32() {
		return fmt.Errorf("%w: full-text segment %s fails its checksum", driver.ErrCorrupt, filepath.Base(path))
	}
	return nil
}

// fullTextDocs lists every document in bleve with its check field ("" when
// it has none), paging in id order.
func fullTextDocs(ctx context.Context, bi bleve.Index) (map[string]string, error) {
	n, err := bi.DocCount()
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, n)
	const page = 10000
	var after []string
	for {
		req := bleve.NewSearchRequestOptions(bleve.NewMatchAllQuery(), page, 0, false)
		req.Score = "none"
		req.Fields = []string{fieldCheck}
		req.SortBy([]string{"_id"})
		if after != nil {
			req.SearchAfter = after
		}
		res, err := bi.SearchInContext(ctx, req)
		if err != nil {
			return nil, err
		}
		for _, h := range res.Hits {
			out[h.ID] = checkField(h)
		}
		if len(res.Hits) < page {
			return out, nil
		}
		after = []string{res.Hits[len(res.Hits)-1].ID}
	}
}

func checkField(h *search.DocumentMatch) string {
	switch v := h.Fields[fieldCheck].(type) {
	case string:
		return v
	case []any:
		if len(v) > 0 {
			if s, ok := v[0].(string); ok {
				return s
			}
		}
	}
	return ""
}

// splitCheck splits a check field into its hash and source URL.
func splitCheck(v string) (hash, source string) {
	hash, source, _ = strings.Cut(v, " ")
	return hash, source
}
