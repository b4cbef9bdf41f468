package index

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/ragmem/ragmem/internal/wal"
)

// The durable queue behind IndexPageAsync: an append-only log in the queue
// directory. A page is appended and fsynced before IndexPageAsync returns, so
// a crash before it is indexed loses nothing: the next Open replays it. When
// a job finishes, a record saying so is appended without waiting for the
// disk; if a crash loses that record, the replayed job finds its source
// indexed after the page was queued and skips it, so a replay never
// overwrites something newer. The log is compacted once it has grown: the
// pages still waiting and the last maxJobs finished jobs are rewritten to a
// new file (temp file, fsync, rename, fsync of the directory).
//
//	<QueueDir>/queue.rgq    "RGMQUE01", then one JSON record per wal frame
//	<QueueDir>/queue.lock   held while the queue is open

const (
	queueFile  = "queue.rgq"
	queueLock  = "queue.lock"
	queueMagic = "RGMQUE01"
	// queueCompactBytes is the log size past which it is compacted.
	queueCompactBytes = 8 << 20
)

// ErrQueueLocked is returned by Open when another process holds the queue directory.
var ErrQueueLocked = errors.New("index: indexing queue is locked")

// queueRecord is one entry of the queue log.
type queueRecord struct {
	Kind string    `json:"k"`             // "page": queued with its document; "done": finished
	Job  Job       `json:"job"`           // the job as it stands
	Doc  *Document `json:"doc,omitempty"` // with "page"
}

// queueLog is the persisted queue. Safe for concurrent use.
type queueLog struct {
	mu       sync.Mutex
	fs       wal.FS
	dir      string
	log      *wal.Log
	lock     *wal.Lock
	logger   *slog.Logger
	pending  map[string]*queueRecord // queued, not finished: kept for compaction
	order    []string                // pending ids in queue order
	finished []Job                   // recent finished jobs, oldest first, at most maxJobs
}

// queueState is what opening a queue log found.
type queueState struct {
	pending  []*queueRecord // pages to index, in queue order
	finished []Job          // finished jobs to remember
	notes    []string       // recovery notes (torn tail cut, damage quarantined)
}

// openQueue opens (or creates) the queue log in dir.
func openQueue(fs wal.FS, dir string, logger *slog.Logger) (*queueLog, *queueState, error) {
	if err := fs.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("index: create queue directory: %w", err)
	}
	lock, err := wal.TryLock(filepath.Join(dir, queueLock))
	if err != nil {
		var le *wal.LockedError
		if errors.As(err, &le) {
			return nil, nil, fmt.Errorf("%w by pid %s (%s)", ErrQueueLocked, le.PID, dir)
		}
		return nil, nil, fmt.Errorf("index: lock indexing queue: %w", err)
	}
	q := &queueLog{fs: fs, dir: dir, lock: lock, logger: logger, pending: map[string]*queueRecord{}}
	st, validEnd, err := q.load()
	if err == nil {
		if validEnd < 0 {
			q.log, err = wal.CreateLog(fs, q.path(), []byte(queueMagic))
		} else {
			q.log, err = wal.OpenLog(fs, q.path(), validEnd)
		}
	}
	if err == nil && q.log.Size() > queueCompactBytes/2 {
		err = q.compactLocked()
	}
	if err != nil {
		_ = lock.Unlock()
		return nil, nil, fmt.Errorf("index: open indexing queue: %w", err)
	}
	return q, st, nil
}

func (q *queueLog) path() string { return filepath.Join(q.dir, queueFile) }

// load reads the log into q. validEnd is where good data ends, -1 when there
// is no usable log (none yet, or one whose header is damaged).
func (q *queueLog) load() (*queueState, int64, error) {
	st := &queueState{}
	f, err := q.fs.OpenFile(q.path(), os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return st, -1, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	size := int64(-1)
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	res, err := readQueue(bufio.NewReaderSize(f, 1<<20), func(r *queueRecord) { q.add(r) })
	if err != nil {
		q.quarantine(fmt.Sprintf("unreadable (%v); queued pages in it are lost", err), true)
		st.notes = append(st.notes, fmt.Sprintf("indexing queue %s is unreadable (%v); moved it to quarantine/ and started a new one", queueFile, err))
		q.pending, q.order, q.finished = map[string]*queueRecord{}, nil, nil
		return st, -1, nil
	}
	if res.Tail != nil {
		cut := size - res.ValidEnd
		if errors.Is(res.Tail, wal.ErrTorn) {
			st.notes = append(st.notes, fmt.Sprintf("cut %d bytes of an unfinished write from the indexing queue", cut))
		} else {
			q.quarantine(res.Tail.Error(), false)
			st.notes = append(st.notes, fmt.Sprintf("indexing queue is damaged after byte %d (%v); kept a copy in quarantine/, pages queued after it are lost", res.ValidEnd, res.Tail))
		}
	}
	for _, id := range q.order {
		st.pending = append(st.pending, q.pending[id])
	}
	st.finished = append(st.finished, q.finished...)
	return st, res.ValidEnd, nil
}

// readQueue reads a queue log (the fuzz target's entry point): the header,
// then records until the first torn or damaged frame, which is reported in
// the result's Tail. An error means the header is unusable.
func readQueue(r *bufio.Reader, fn func(*queueRecord)) (wal.ScanResult, error) {
	head := make([]byte, len(queueMagic))
	if _, err := io.ReadFull(r, head); err != nil || string(head) != queueMagic {
		return wal.ScanResult{}, fmt.Errorf("%w: indexing queue has no valid header", ErrCorruptQueue)
	}
	return wal.Scan(r, int64(len(queueMagic)), func(p []byte) error {
		var rec queueRecord
		if err := json.Unmarshal(p, &rec); err != nil {
			return fmt.Errorf("%w: %v", wal.ErrCorrupt, err)
		}
		if rec.Job.ID == "" || (rec.Kind == "page") != (rec.Doc != nil) || rec.Kind != "page" && rec.Kind != "done" {
			return fmt.Errorf("%w: malformed queue record", wal.ErrCorrupt)
		}
		fn(&rec)
		return nil
	})
}

// ErrCorruptQueue reports an unreadable queue log.
var ErrCorruptQueue = errors.New("index: corrupt indexing queue")

// add applies one record to the in-memory view.
func (q *queueLog) add(r *queueRecord) {
	switch r.Kind {
	case "page":
		if _, ok := q.pending[r.Job.ID]; !ok {
			q.order = append(q.order, r.Job.ID)
		}
		q.pending[r.Job.ID] = r
	case "done":
		if _, ok := q.pending[r.Job.ID]; ok {
			delete(q.pending, r.Job.ID)
			for i, id := range q.order {
				if id == r.Job.ID {
					q.order = append(q.order[:i], q.order[i+1:]...)
					break
				}
			}
		}
		q.finished = append(q.finished, r.Job)
		if len(q.finished) > maxJobs {
			q.finished = append([]Job(nil), q.finished[len(q.finished)-maxJobs:]...)
		}
	}
}

// quarantine keeps a copy of the damaged log in dir/quarantine; with move
// it moves the file itself.
func (q *queueLog) quarantine(why string, move bool) {
	qdir := filepath.Join(q.dir, "quarantine")
	_ = os.MkdirAll(qdir, 0o700)
	dst := filepath.Join(qdir, queueFile+"."+strconv.FormatInt(time.Now().UnixNano(), 10))
	var err error
	if move {
		err = q.fs.Rename(q.path(), dst)
	} else {
		var data []byte
		if data, err = os.ReadFile(q.path()); err == nil {
			err = os.WriteFile(dst, data, 0o600)
		}
	}
	if err != nil {
		q.logger.Error("index: could not quarantine the damaged indexing queue", "file", q.path(), "why", why, "err", err)
	}
}

func (q *queueLog) append(sync bool, r *queueRecord) error {
	p, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if sync {
		return q.log.Append(p)
	}
	return q.log.AppendNoSync(p)
}

// enqueue makes a page durable.
func (q *queueLog) enqueue(j Job, d *Document) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	r := &queueRecord{Kind: "page", Job: j, Doc: d}
	if err := q.append(true, r); err != nil {
		return err
	}
	q.add(r)
	return nil
}

// finish records that a job finished.
func (q *queueLog) finish(j Job) {
	q.mu.Lock()
	defer q.mu.Unlock()
	r := &queueRecord{Kind: "done", Job: j}
	if err := q.append(false, r); err != nil {
		q.logger.Warn("index: could not record a finished background job; it is replayed (and skipped) on the next open", "job", j.ID, "err", err)
	}
	q.add(r)
	if q.log.Size() > queueCompactBytes {
		if err := q.compactLocked(); err != nil {
			q.logger.Warn("index: compacting the indexing queue failed; it keeps growing until it succeeds", "err", err)
		}
	}
}

// compactLocked rewrites the log with only the pending pages and the recent
// finished jobs.
func (q *queueLog) compactLocked() error {
	err := wal.WriteFileAtomic(q.fs, q.path(), func(w io.Writer) error {
		bw := bufio.NewWriter(w)
		if _, err := bw.WriteString(queueMagic); err != nil {
			return err
		}
		write := func(r *queueRecord) error {
			p, err := json.Marshal(r)
			if err != nil {
				return err
			}
			_, err = bw.Write(wal.AppendFrame(nil, p))
			return err
		}
		for _, j := range q.finished {
			if err := write(&queueRecord{Kind: "done", Job: j}); err != nil {
				return err
			}
		}
		for _, id := range q.order {
			if err := write(q.pending[id]); err != nil {
				return err
			}
		}
		return bw.Flush()
	})
	if err != nil {
		return err
	}
	if q.log != nil {
		_ = q.log.Close()
	}
	f, err := q.fs.Stat(q.path())
	if err != nil {
		return err
	}
	q.log, err = wal.OpenLog(q.fs, q.path(), f.Size())
	return err
}

// close compacts the log when it has grown (finished work then leaves only
// its summaries) and releases the directory.
func (q *queueLog) close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	var errs []error
	if q.log != nil && q.log.Broken() == nil && q.log.Size() > queueCompactBytes/8 {
		if err := q.compactLocked(); err != nil {
			errs = append(errs, fmt.Errorf("index: compact indexing queue: %w", err))
		}
	}
	if q.log != nil {
		errs = append(errs, q.log.Close())
	}
	errs = append(errs, q.lock.Unlock())
	return errors.Join(errs...)
}

// QueueCheck describes the persisted indexing queue in a directory. It is a
// plain value.
type QueueCheck struct {
	Pending  int      // pages waiting to be indexed; the next Open indexes them
	Finished int      // finished jobs remembered for Job lookups
	Problems []string // damage found: an unfinished write at the end, an unreadable or damaged log
	Repaired []string // with repair: what was done about it
}

// CheckQueue inspects the indexing queue persisted in dir (the data
// directory, or Options.QueueDir) without changing it, or with repair cuts an
// unfinished write and quarantines damage as Open would. A directory without
// a queue is not an error. It fails with ErrQueueLocked while the queue is open.
func CheckQueue(ctx context.Context, dir string, repair bool) (QueueCheck, error) {
	var qc QueueCheck
	if err := ctx.Err(); err != nil {
		return qc, err
	}
	path := filepath.Join(dir, queueFile)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return qc, nil
	}
	lock, err := wal.TryLock(filepath.Join(dir, queueLock))
	if err != nil {
		var le *wal.LockedError
		if errors.As(err, &le) {
			return qc, fmt.Errorf("%w by pid %s (%s)", ErrQueueLocked, le.PID, dir)
		}
		return qc, err
	}
	if repair {
		_ = lock.Unlock()
		q, st, err := openQueue(wal.OS{}, dir, slog.New(slog.DiscardHandler))
		if err != nil {
			return qc, err
		}
		qc.Pending, qc.Finished, qc.Repaired = len(st.pending), len(st.finished), st.notes
		return qc, q.close()
	}
	defer lock.Unlock()
	f, err := os.Open(path)
	if err != nil {
		return qc, err
	}
	defer f.Close()
	q := &queueLog{pending: map[string]*queueRecord{}}
	res, err := readQueue(bufio.NewReader(f), q.add)
	if err != nil {
		qc.Problems = append(qc.Problems, fmt.Sprintf("the indexing queue %s is unreadable (%v); opening the store quarantines it", path, err))
		return qc, nil
	}
	qc.Pending, qc.Finished = len(q.order), len(q.finished)
	if res.Tail != nil {
		what := "is damaged after byte %d (%v); opening the store keeps a copy in quarantine/ and cuts it there"
		if errors.Is(res.Tail, wal.ErrTorn) {
			what = "ends in an unfinished write after byte %d (%v); opening the store cuts it"
		}
		qc.Problems = append(qc.Problems, fmt.Sprintf("the indexing queue "+what, res.ValidEnd, res.Tail))
	}
	return qc, nil
}
