package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"

	"github.com/ragmem/ragmem/internal/wal"
)

// maxReplayBytes bounds the journal operations kept in memory on open to
// bring bleve forward; beyond it bleve is reconciled against the records.
const maxReplayBytes = 256 << 20

func (b *Backend) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	b.report.Problems = append(b.report.Problems, msg)
	if b.readOnly {
		return // reported through Check
	}
	b.log.Warn("index recovery: "+msg, "dir", b.dir)
}

// needsFix records, in read-only mode, something a normal open would repair.
func (b *Backend) needsFix(kind, msg string) { b.needsFixFile(kind, "", msg) }

// needsFixFile is needsFix for a problem with one of the store's files.
func (b *Backend) needsFixFile(kind, file, msg string) {
	b.pendingFix = append(b.pendingFix, Problem{Kind: kind, ID: file, Msg: msg})
	b.report.Problems = append(b.report.Problems, msg)
}

// quarantine moves a damaged file or directory into dir/quarantine.
func (b *Backend) quarantine(path, why string) {
	if b.readOnly {
		b.needsFixFile("damaged", filepath.Base(path), fmt.Sprintf("%s is damaged (%s); opening the store moves it to quarantine/", filepath.Base(path), why))
		return
	}
	qdir := filepath.Join(b.dir, "quarantine")
	_ = b.fs.MkdirAll(qdir, 0o700)
	dst := filepath.Join(qdir, filepath.Base(path)+"."+strconv.FormatInt(time.Now().UnixNano(), 10))
	if err := b.fs.Rename(path, dst); err != nil {
		b.note("could not quarantine %s (%s): %v", filepath.Base(path), why, err)
		return
	}
	_ = b.fs.SyncDir(b.dir)
	b.report.Quarantined = append(b.report.Quarantined, dst)
	b.note("moved %s to %s: %s", filepath.Base(path), dst, why)
}

// quarantineCopy keeps a copy of a damaged journal before its tail is cut.
func (b *Backend) quarantineCopy(path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	qdir := filepath.Join(b.dir, "quarantine")
	_ = os.MkdirAll(qdir, 0o700)
	dst := filepath.Join(qdir, filepath.Base(path)+"."+strconv.FormatInt(time.Now().UnixNano(), 10))
	if os.WriteFile(dst, data, 0o600) == nil {
		b.report.Quarantined = append(b.report.Quarantined, dst)
	}
}

// lost records that acknowledged operations are known to be lost.
func (b *Backend) lost(msg string) {
	if b.report.Lost == "" {
		b.report.Lost = msg
	} else {
		b.report.Lost += "; " + msg
	}
	if b.readOnly {
		b.needsFix("lost", msg)
		return
	}
	b.report.Problems = append(b.report.Problems, msg)
	b.log.Error("index recovery: acknowledged data lost: "+msg, "dir", b.dir)
}

// bleveState is what recovery learned about the full-text index.
type bleveState struct {
	usable  bool   // open and trusted
	created bool   // new and empty
	rebuild bool   // open but must be rebuilt (old layout, unreadable sequence)
	damaged bool   // with rebuild: quarantine the old one rather than delete it
	seq     uint64 // the sequence it recorded
}

func (b *Backend) recover(ctx context.Context) error {
	markerSeq, haveMarker, merr := readClosedMarker(b.fs, b.dir)
	if merr != nil {
		b.note("%v; ignoring it", merr)
	}

	b.removeTemporaries()

	// 1. The newest readable snapshot. Its vector codes are read, and its
	// vector index loaded, in the background while the rest is opened.
	pre, vl, err := b.loadSnapshot()
	if pre != nil {
		defer pre.wait()
	}
	if vl != nil {
		defer vl.wait()
	}
	if err != nil {
		return err
	}

	// 2. The full-text index: verified, opened, and asked where it is.
	bs, err := b.openBleve()
	if err != nil {
		return err
	}

	// 3. Journals, in order: operations after the snapshot go to memory;
	// operations after bleve's sequence are kept to bring bleve forward.
	b.replayTouched = map[string]struct{}{}
	defer func() { b.replayTouched = nil }()
	jr, err := b.readJournals(bs)
	if err != nil {
		return err
	}
	if haveMarker && markerSeq > b.seq {
		b.lost(fmt.Sprintf("the store was closed at sequence %d but its files end at %d", markerSeq, b.seq))
	}
	if bs.trusted() && bs.seq > b.seq {
		b.lost(fmt.Sprintf("the full-text index had applied sequence %d but the journal ends at %d", bs.seq, b.seq))
	}
	b.report.SequenceOnOpen = b.seq
	b.report.RecordsOnOpen = len(b.records)

	// 4. The journal to append to.
	if err := b.openActiveJournal(jr); err != nil {
		return err
	}

	// The full-text statistics the first search needs are computed now,
	// while the vector index is still loading in the background, so that
	// the first query runs at full speed.
	if bs.trusted() {
		if err := b.ft.warm(ctx, b.bl); err != nil {
			b.log.Warn("index: full-text statistics not computed at open; the first search computes them", "err", err)
		}
	}

	// 5. The vector index, from its persisted codes where they are sound.
	if err := b.finishVectors(vl, b.replayTouched); err != nil {
		return err
	}
	b.removeOrphanCodes()

	// 6. The BM25 side, brought to the same sequence.
	return b.catchUpBleve(ctx, bs, jr)
}

// trusted reports whether the full-text index opened as it was left: usable,
// not new and not to be rebuilt, so its sequence says what it holds.
func (bs bleveState) trusted() bool { return bs.usable && !bs.created && !bs.rebuild }

// loadSnapshot loads the newest readable snapshot into memory, moving the
// unreadable ones newer than it to quarantine. It returns the background
// read of the newest snapshot's vector codes and the background load of the
// vector index (each nil when not started); the caller waits for both.
func (b *Backend) loadSnapshot() (*codesRead, *vectorLoad, error) {
	snaps, err := listGenerations(b.fs, b.dir, snapPrefix, snapSuffix)
	if err != nil {
		return nil, nil, fmt.Errorf("index: read store directory: %w", err)
	}
	var pre *codesRead
	if len(snaps) > 0 {
		// The newest snapshot's vector codes are read while its records
		// are decoded.
		pre = b.readCodesAsync(snaps[len(snaps)-1])
	}
	for i := len(snaps) - 1; i >= 0; i-- {
		path := filepath.Join(b.dir, snapName(snaps[i]))
		sd, err := readSnapshot(b.fs, path)
		if err != nil {
			b.quarantine(path, err.Error())
			continue
		}
		var vl *vectorLoad
		if sd.version == 2 && len(sd.records) > 0 {
			// The vector index is loaded from the snapshot's codes while
			// the rest of the store is opened.
			vl = b.startVectors(sd, pre)
		}
		b.adoptSnapshot(sd, path)
		return pre, vl, nil
	}
	if len(snaps) > 0 {
		b.note("no readable snapshot; recovering from journals only")
	}
	return pre, nil, nil
}

// adoptSnapshot puts a snapshot read from path into memory: its metadata,
// its records and the sequence it holds.
func (b *Backend) adoptSnapshot(sd *snapshotData, path string) {
	for k, v := range sd.meta {
		b.meta[k] = v
	}
	if len(b.records) == 0 {
		b.presize(sd.records)
	}
	for j := range sd.records {
		if sd.version == 1 {
			// Format 2 stores unit vectors; older stores may not have.
			sd.records[j].Vector = unitVector(sd.records[j].Vector)
		}
		b.putMem(&sd.records[j])
	}
	if sd.dim > 0 {
		b.dim = sd.dim
	}
	b.vecs, b.snapVersion = sd.vecs, sd.version
	if sd.version == 2 {
		b.snapTag = codesTag(sd.seq, len(sd.records), sd.dim, sd.fingerprint)
	}
	b.seq, b.snapSeq = sd.seq, sd.seq
	b.report.Snapshot = filepath.Base(path)
	if st, err := b.fs.Stat(path); err == nil {
		b.snapBytes = st.Size()
		b.nextCkpt = b.checkpointAt()
	}
}

// journalsRead is what reading the journals on open found.
type journalsRead struct {
	bases []uint64 // the journals' base sequences, in order

	// replay holds the operations bleve lacks, from its sequence on, while
	// collect is true (collection stops when they pass maxReplayBytes);
	// replayNext is the sequence of the next operation bleve needs.
	replay     []batchOp
	replayNext uint64
	collect    bool

	// The last journal, to append to when it ends at the store's sequence:
	// its index in bases (-1 when unreadable), where its good frames end and
	// its last sequence.
	active     int
	activeEnd  int64
	activeLast uint64
}

// readJournals applies the journals' operations after the snapshot to
// memory and collects those after bleve's sequence to bring it forward.
// Journals that start after the store's sequence, or that cannot be read,
// are moved to quarantine; damaged tails are handled by journalTail.
func (b *Backend) readJournals(bs bleveState) (*journalsRead, error) {
	bases, err := listGenerations(b.fs, b.dir, journalPrefix, journalSuffix)
	if err != nil {
		return nil, fmt.Errorf("index: read store directory: %w", err)
	}
	jr := &journalsRead{bases: bases, replayNext: bs.seq + 1, collect: bs.trusted(), active: -1}
	replayBytes := 0
	for i, base := range bases {
		path := filepath.Join(b.dir, journalName(base))
		if base > b.seq {
			msg := fmt.Sprintf("journal %s starts after sequence %d but the store is at %d; the operations in between are missing", filepath.Base(path), base, b.seq)
			b.quarantine(path, msg)
			b.lost(fmt.Sprintf("operations %d to %d are missing", b.seq+1, base))
			continue
		}
		if i+1 < len(bases) && bases[i+1] <= b.seq && (!jr.collect || bases[i+1] <= bs.seq) {
			// Every operation in it is in the snapshot and in bleve (or
			// bleve is rebuilt anyway): it is kept as the fallback
			// snapshot's journal and read only if that is needed. Check
			// reads it.
			continue
		}
		js, err := scanJournal(b.fs, path, func(o *batchOp) error {
			if o.Seq > b.seq {
				b.applyMem(o)
				b.seq = o.Seq
				b.report.JournalOps++
			}
			if jr.collect && o.Seq == jr.replayNext {
				jr.replayNext++
				jr.replay = append(jr.replay, *o)
				replayBytes += 64 + opSizeHint(o)
				if replayBytes > maxReplayBytes {
					jr.collect, jr.replay = false, nil
				}
			}
			return nil
		})
		if err != nil {
			b.quarantine(path, err.Error())
			continue
		}
		last := i == len(bases)-1
		if js.tail != nil {
			b.journalTail(path, js, last)
		}
		if last {
			jr.active, jr.activeEnd, jr.activeLast = i, js.validEnd, js.lastSeq
		}
	}
	return jr, nil
}

// journalTail handles a journal whose frames end before the file does: a
// torn last write is cut (nothing acknowledged is lost), damage in the last
// journal loses the operations after it, and damage in an older journal is
// cut after keeping a copy. In read-only mode each is recorded as a fix an
// open would make.
func (b *Backend) journalTail(path string, js journalScan, last bool) {
	name := filepath.Base(path)
	cut := js.size - js.validEnd
	switch {
	case last && tailLooksTorn(b.fs, path, js):
		if b.readOnly {
			b.needsFixFile("journal-tail", name, fmt.Sprintf("journal %s ends in %d bytes of an unfinished write that was never acknowledged; opening the store cuts them", name, cut))
		} else {
			b.report.TornTailBytes = cut
			b.note("cut %d bytes of an unfinished write from %s", cut, name)
		}
	case last:
		if !b.readOnly {
			b.report.TornTailBytes = cut
			b.quarantineCopy(path)
		}
		b.lost(fmt.Sprintf("journal %s is damaged after byte %d (%v); the operations after sequence %d in it are lost", name, js.validEnd, js.tail, js.lastSeq))
	case b.readOnly:
		b.needsFixFile("damaged", name, fmt.Sprintf("journal %s is damaged after byte %d (%v); opening the store keeps a copy in quarantine/ and cuts it there", name, js.validEnd, js.tail))
	default:
		// An older journal: what it holds past the damage is either
		// covered by a later snapshot or reported lost below.
		b.quarantineCopy(path)
		if l, err := wal.OpenLog(b.fs, path, js.validEnd); err == nil {
			_ = l.Close()
		}
		b.note("journal %s is damaged after byte %d (%v); kept a copy and cut it there", name, js.validEnd, js.tail)
	}
}

// openActiveJournal opens the journal to append to: the last one when it
// ends at the store's sequence, else a new one from that sequence. A
// read-only store appends nothing.
func (b *Backend) openActiveJournal(jr *journalsRead) error {
	if b.readOnly {
		return nil
	}
	var err error
	if jr.active >= 0 && jr.activeLast == b.seq {
		base := jr.bases[jr.active]
		b.journal, err = openJournal(b.fs, filepath.Join(b.dir, journalName(base)), base, jr.activeEnd)
	} else {
		b.journal, err = createJournal(b.fs, b.dir, b.seq)
	}
	return err
}

// catchUpBleve brings the full-text index to the store's sequence: rebuilt
// when it must be, replayed from the collected operations when it is
// behind and they are all there, and reconciled against the records
// otherwise. In read-only mode it only records how far behind it is.
func (b *Backend) catchUpBleve(ctx context.Context, bs bleveState, jr *journalsRead) error {
	if b.readOnly {
		if bs.usable && !bs.rebuild && bs.seq < b.seq {
			b.needsFix("fulltext-behind", fmt.Sprintf("the full-text index is at sequence %d, the journal at %d: %d acknowledged operations are not applied to it yet; opening the store applies them", bs.seq, b.seq, b.seq-bs.seq))
		}
		b.bleveSeq = bs.seq
		return nil
	}
	b.bleveDurable.Store(bs.seq)
	b.bleveSeq = bs.seq
	switch {
	case bs.rebuild:
		return b.rebuildBleve(ctx, bs.damaged)
	case bs.created:
		if len(b.records) > 0 {
			b.note("full-text index missing; rebuilding it from %d records", len(b.records))
			return b.rebuildBleve(ctx, false)
		}
		if b.seq > 0 {
			return b.bleveApply(ctx, nil, nil)
		}
		return nil
	case bs.seq == b.seq:
		if n, err := b.bl.DocCount(); err != nil || n != uint64(len(b.records)) {
			b.note("full-text index holds %d documents but the store %d records; reconciling", n, len(b.records))
			return b.reconcileBleve(ctx)
		}
		b.report.OpenedCleanShut = true
		return nil
	case bs.seq < b.seq && jr.collect && jr.replayNext == b.seq+1:
		if err := b.replayBleve(ctx, jr.replay); err != nil {
			b.note("bringing the full-text index forward failed (%v); rebuilding it", err)
			return b.rebuildBleve(ctx, true)
		}
		if n, err := b.bl.DocCount(); err != nil || n != uint64(len(b.records)) {
			b.note("full-text index holds %d documents after replay but the store %d records; reconciling", n, len(b.records))
			return b.reconcileBleve(ctx)
		}
		return nil
	default:
		b.note("full-text index is at sequence %d but the records at %d; reconciling", bs.seq, b.seq)
		return b.reconcileBleve(ctx)
	}
}

// removeTemporaries deletes the temporary files of snapshot, journal or
// marker writes a crash interrupted (they were never renamed into place).
func (b *Backend) removeTemporaries() {
	if b.readOnly {
		return
	}
	entries, err := b.fs.ReadDir(b.dir)
	if err != nil {
		return
	}
	removed := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".tmp") {
			continue
		}
		if strings.HasPrefix(name, snapPrefix) || strings.HasPrefix(name, journalPrefix) || strings.HasPrefix(name, closedName) || strings.HasPrefix(name, codesPrefix) {
			if b.fs.Remove(filepath.Join(b.dir, name)) == nil {
				removed++
			}
		}
	}
	if removed > 0 {
		_ = b.fs.SyncDir(b.dir)
		b.log.Info("index recovery: removed temporary files of an interrupted write", "dir", b.dir, "files", removed)
	}
}

// tailLooksTorn reports whether the bad data at the end of a journal is an
// unfinished append (a frame that runs to the end of the file, or zeros a
// crash left behind) rather than damage to acknowledged frames.
func tailLooksTorn(fsys wal.FS, path string, js journalScan) bool {
	if js.torn() {
		return true
	}
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if _, err := f.Seek(js.validEnd, io.SeekStart); err != nil {
		return false
	}
	rest, err := io.ReadAll(io.LimitReader(f, js.size-js.validEnd))
	if err != nil || len(rest) < wal.FrameHeader {
		return err == nil
	}
	n := int64(rest[0]) | int64(rest[1])<<8 | int64(rest[2])<<16 | int64(rest[3])<<24
	if int64(wal.FrameHeader)+n >= int64(len(rest)) {
		return true
	}
	return len(bytes.Trim(rest, "\x00")) == 0
}

// openBleve verifies and opens the full-text index, quarantining it and
// starting a new one when it is damaged.
func (b *Backend) openBleve() (bleveState, error) {
	if b.memory {
		return b.openMemoryBleve()
	}
	var bs bleveState
	path := filepath.Join(b.dir, bleveDirName)
	verr := verifyFullText(path)
	var bi bleve.Index
	var created bool
	var err error
	if verr == nil {
		bi, created, err = openFullText(path, b.readOnly, b.ft)
		if err != nil && b.readOnly && errors.Is(err, os.ErrNotExist) {
			b.needsFix("fulltext-absent", "the full-text index is missing; opening the store rebuilds it")
			return bs, nil
		}
		if err != nil {
			verr = err
		}
	}
	if verr != nil {
		if b.readOnly {
			b.needsFix("fulltext-damaged", fmt.Sprintf("the full-text index is unreadable (%v); opening the store quarantines and rebuilds it", verr))
			return bs, nil
		}
		b.quarantine(path, "full-text index unreadable: "+verr.Error())
		if bi, created, err = openFullText(path, false, b.ft); err != nil {
			return bs, fmt.Errorf("index: create full-text index: %w", err)
		}
		if !created {
			_ = bi.Close()
			return bs, fmt.Errorf("index: full-text index %s could not be moved aside", path)
		}
	}
	b.bl = bi
	bs.usable, bs.created = true, created
	if created {
		return bs, nil
	}
	if f := bleveFormatOf(bi); f != bleveFormat {
		if b.readOnly {
			b.needsFix("fulltext-format", "the full-text index was built by an older ragmem without check fields; opening the store rebuilds it")
			bs.rebuild = true
			return bs, nil
		}
		b.note("the full-text index was built by an older ragmem (format %q); rebuilding it", f)
		bs.rebuild = true
		return bs, nil
	}
	if why := analysisStale(bi, b.ft); why != "" {
		if b.readOnly {
			b.needsFix("fulltext-analysis", "the full-text index must be rebuilt: "+why+"; opening the store rebuilds it")
		} else {
			b.note("rebuilding the full-text index: %s", why)
		}
		bs.rebuild = true
		return bs, nil
	}
	seq, err := bleveSeq(bi)
	if err != nil {
		if b.readOnly {
			b.needsFix("fulltext-damaged", fmt.Sprintf("the full-text index's sequence is unreadable (%v); opening the store rebuilds it", err))
		} else {
			b.note("full-text index sequence unreadable (%v); rebuilding it", err)
		}
		bs.rebuild, bs.damaged = true, true
		return bs, nil
	}
	bs.seq = seq
	b.report.BleveSeqOnOpen = seq
	return bs, nil
}

// removeOrphanCodes deletes vector index codes whose snapshot is gone (a
// crash between the two renames of a checkpoint, or a pruned generation).
func (b *Backend) removeOrphanCodes() {
	if b.readOnly {
		return
	}
	codes, err := listGenerations(b.fs, b.dir, codesPrefix, codesSuffix)
	if err != nil {
		return
	}
	removed := false
	for _, s := range codes {
		if _, err := b.fs.Stat(filepath.Join(b.dir, snapName(s))); errors.Is(err, os.ErrNotExist) {
			removed = b.fs.Remove(filepath.Join(b.dir, codesName(s))) == nil || removed
		}
	}
	if removed {
		_ = b.fs.SyncDir(b.dir)
	}
}

// replayBleve brings bleve forward over the operations it missed by
// re-indexing, from the records, every document they touched: the net effect
// of replaying them in order. Deleting a source touches the documents bleve
// holds for it.
func (b *Backend) replayBleve(ctx context.Context, ops []batchOp) error {
	touched := map[string]bool{}
	seenSource := map[string]bool{}
	for i := range ops {
		o := &ops[i]
		if o.Meta != nil {
			continue
		}
		for _, s := range o.Batch.DeleteSources {
			if seenSource[s] {
				continue
			}
			seenSource[s] = true
			ids, err := b.bleveSourceIDs(ctx, s)
			if err != nil {
				return err
			}
			for _, id := range ids {
				touched[id] = true
			}
		}
		for _, id := range o.Batch.DeleteIDs {
			touched[id] = true
		}
		for j := range o.Batch.Put {
			touched[o.Batch.Put[j].ID] = true
		}
	}
	var index, del []string
	for id := range touched {
		if _, ok := b.records[id]; ok {
			index = append(index, id)
		} else {
			del = append(del, id)
		}
	}
	if err := b.bleveApply(ctx, index, del); err != nil {
		return err
	}
	b.report.BleveReplayed = len(ops)
	b.report.BleveAdded += len(index)
	b.report.BleveRemoved += len(del)
	b.note("brought the full-text index forward over %d journal operations (%d documents indexed, %d removed)", len(ops), len(index), len(del))
	return nil
}

// bleveSourceIDs lists the ids bleve holds for a source.
func (b *Backend) bleveSourceIDs(ctx context.Context, source string) ([]string, error) {
	var ids []string
	const page = 10000
	var after []string
	for {
		q := bleve.NewTermQuery(source)
		q.SetField(fieldSource)
		req := bleve.NewSearchRequestOptions(q, page, 0, false)
		req.Score = "none"
		req.SortBy([]string{"_id"})
		if after != nil {
			req.SearchAfter = after
		}
		res, err := b.bl.SearchInContext(ctx, req)
		if err != nil {
			return nil, err
		}
		for _, h := range res.Hits {
			ids = append(ids, h.ID)
		}
		if len(res.Hits) < page {
			return ids, nil
		}
		after = []string{res.Hits[len(res.Hits)-1].ID}
	}
}

// rebuildBleve replaces the bleve index by one built from the records. The
// old one is quarantined when damaged, removed when merely outdated.
func (b *Backend) rebuildBleve(ctx context.Context, damaged bool) error {
	path := filepath.Join(b.dir, bleveDirName)
	if b.bl != nil {
		_ = b.bl.Close()
		b.bl = nil
	}
	if damaged {
		b.quarantine(path, "full-text index rebuilt from the records")
	}
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("index: remove old full-text index: %w", err)
	}
	bi, _, err := openFullText(path, false, b.ft)
	if err != nil {
		return fmt.Errorf("index: create full-text index: %w", err)
	}
	b.bl = bi
	b.bleveDurable.Store(0)
	b.bleveSeq = 0
	b.report.BleveRebuilt = true
	ids := make([]string, 0, len(b.records))
	for id := range b.records {
		ids = append(ids, id)
	}
	if err := b.bleveApply(ctx, ids, nil); err != nil {
		return err
	}
	b.report.BleveAdded = len(ids)
	b.note("rebuilt the full-text index from %d records", len(ids))
	return nil
}

// reconcileBleve makes bleve hold exactly the records: documents it has that
// the records do not are deleted, and records it lacks or holds in another
// version (by the check field) are indexed.
func (b *Backend) reconcileBleve(ctx context.Context) error {
	have, err := fullTextDocs(ctx, b.bl)
	if err != nil {
		b.note("listing full-text documents failed (%v); rebuilding the index", err)
		return b.rebuildBleve(ctx, true)
	}
	index, del := b.bleveDiff(have)
	if err := b.bleveApply(ctx, index, del); err != nil {
		return err
	}
	b.report.BleveRemoved += len(del)
	b.report.BleveAdded += len(index)
	b.note("reconciled the full-text index: removed %d stale documents, indexed %d missing or outdated ones", len(del), len(index))
	return nil
}

// bleveDiff compares bleve's documents with the records: the ids to index
// and the ids to delete so that bleve matches.
func (b *Backend) bleveDiff(have map[string]string) (index, del []string) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for id := range have {
		if _, ok := b.records[id]; !ok {
			del = append(del, id)
		}
	}
	for id, r := range b.records {
		if chk, ok := have[id]; !ok || chk != chunkHash(r)+" "+r.SourceURL {
			index = append(index, id)
		}
	}
	return index, del
}

// bleveApply indexes the records of index and deletes del in batches, and
// records the current sequence with the last batch.
func (b *Backend) bleveApply(ctx context.Context, index, del []string) error {
	sort.Strings(index)
	sort.Strings(del)
	const batchSize = 2000
	bb := b.bl.NewBatch()
	n := 0
	flush := func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := b.bl.Batch(bb); err != nil {
			return fmt.Errorf("index: write full-text index: %w", err)
		}
		bb, n = b.bl.NewBatch(), 0
		return nil
	}
	for _, id := range del {
		bb.Delete(id)
		if n++; n == batchSize {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	for _, id := range index {
		r, ok := b.records[id]
		if !ok {
			continue
		}
		if err := bb.Index(id, storeDoc(r)); err != nil {
			return fmt.Errorf("index: full-text index %s: %w", id, err)
		}
		if n++; n == batchSize {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return b.commitBleve(bb, b.seq)
}
