package engine

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ragmem/ragmem/index"

	"github.com/ragmem/ragmem/internal/perm"
	"github.com/ragmem/ragmem/internal/wal"
)

// The durable queue behind IndexPageAsync: an append-only log in the queue
// directory. A page is appended and fsynced before IndexPageAsync returns, so
// a crash before it is indexed loses nothing: the next Open replays it.
//
// Before the worker indexes a page it appends a "try" record, and after it a
// record of the outcome: "done", "retry" (failed, to be tried again) or
// "dead" (moved to the dead letters). Removing a page's source appends a
// "cancel" record (fsynced) for each of its pages still queued: they are
// finished, never replayed. A "try" with no outcome after it means
// the process stopped while indexing the page: a crash, perhaps caused by
// the page itself. Open counts that as a failed attempt, and a page that has
// failed MaxAttempts times is moved to the dead letters instead of being
// replayed, so no page can crash every start of the store. Outcome records
// are not fsynced: they are written before the process can die of the next
// page, and only a power loss could lose one (the page is then tried again).
//
// A finished job whose record is lost is replayed and finds its source
// indexed after the page was queued, and is skipped, so a replay never
// overwrites something newer. The log is compacted once it has grown: the
// pages still waiting, the dead letters and the last maxJobs finished jobs
// are rewritten to a new file (temp file, fsync, rename, fsync of the
// directory).
//
// Dead letters keep their page in dead/<hash of the job id>.json (written
// atomically), so that the log and memory hold only their summaries; RetryJob
// queues the page again, DropJob deletes it.
//
//	<QueueDir>/queue.rgq    "RGMQUE01", then one JSON record per wal frame
//	<QueueDir>/queue.lock   held while the queue is open
//	<QueueDir>/dead/        the pages of dead letters

const (
	queueFile  = "queue.rgq"
	queueLock  = "queue.lock"
	queueMagic = "RGMQUE01"
	deadDir    = "dead"
	// queueCompactBytes is the log size past which it is compacted.
	queueCompactBytes = 8 << 20
)

// Record kinds of the queue log.
const (
	recPage  = "page"  // queued (again), with the document
	recTry   = "try"   // the worker started on it
	recRetry = "retry" // an attempt failed; the page waits to be tried again
	recDone  = "done"  // finished
	recDead  = "dead"  // moved to the dead letters; its page is in dead/
	recDrop  = "drop"  // a dead letter was dropped
	// recCancel: the page's source was removed before it was indexed; the
	// job is finished, JobCancelled. Written with fsync, before the removal
	// is acknowledged.
	recCancel = "cancel"
)

// ErrQueueLocked is returned by Open when another process holds the queue directory.
var ErrQueueLocked = errors.New("index: indexing queue is locked")

// queueRecord is one entry of the queue log.
type queueRecord struct {
	Kind string          `json:"k"`             // one of the rec* kinds
	Job  index.Job       `json:"job"`           // the job as it stands
	Doc  *index.Document `json:"doc,omitempty"` // with "page"
}

// deadLetter is what dead/<name>.json holds.
type deadLetter struct {
	Job index.Job      `json:"job"`
	Doc index.Document `json:"doc"`
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
	inflight map[string]bool         // pending ids with a "try" and no outcome yet
	dead     map[string]index.Job    // dead letters
	finished []index.Job             // recent finished jobs, oldest first, at most maxJobs
}

// queueState is what opening a queue log found.
type queueState struct {
	pending  []*queueRecord // pages to index, in queue order
	finished []index.Job    // finished jobs to remember
	dead     []index.Job    // dead letters, oldest first
	crashed  []index.Job    // pages whose indexing was interrupted by the end of the process
	notes    []string       // recovery notes (torn tail cut, damage quarantined, pages given up)
}

// openQueue opens (or creates) the queue log in dir. A page whose
// interrupted and failed attempts reach maxAttempts is moved to the dead
// letters.
func openQueue(fs wal.FS, dir string, logger *slog.Logger, maxAttempts int) (*queueLog, *queueState, error) {
	if _, ok := fs.(wal.OS); ok {
		if err := perm.BeforeCreate(dir); err != nil {
			return nil, nil, fmt.Errorf("index: the queue directory: %w", err)
		}
	}
	if err := fs.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("index: create queue directory: %w", err)
	}
	if _, ok := fs.(wal.OS); ok {
		note, err := perm.Dir(dir) // queued pages are written to the store: the same rule
		if err != nil {
			return nil, nil, fmt.Errorf("index: the queue directory: %w", err)
		}
		if note != "" {
			logger.Info(note)
		}
	}
	lock, err := wal.TryLock(filepath.Join(dir, queueLock))
	if err != nil {
		var le *wal.LockedError
		if errors.As(err, &le) {
			return nil, nil, fmt.Errorf("%w by pid %s (%s)", ErrQueueLocked, le.PID, dir)
		}
		return nil, nil, fmt.Errorf("index: lock indexing queue: %w", err)
	}
	q := &queueLog{fs: fs, dir: dir, lock: lock, logger: logger}
	q.reset()
	st, validEnd, err := q.load()
	if err == nil {
		if validEnd < 0 {
			q.log, err = wal.CreateLog(fs, q.path(), []byte(queueMagic))
		} else {
			q.log, err = wal.OpenLog(fs, q.path(), validEnd)
		}
	}
	if err == nil {
		q.settle(st, maxAttempts)
		if q.log.Size() > queueCompactBytes/2 {
			err = q.compactLocked()
		}
	}
	if err != nil {
		_ = lock.Unlock()
		return nil, nil, fmt.Errorf("index: open indexing queue: %w", err)
	}
	q.removeOrphans()
	return q, st, nil
}

func (q *queueLog) reset() {
	q.pending, q.order, q.finished = map[string]*queueRecord{}, nil, nil
	q.inflight, q.dead = map[string]bool{}, map[string]index.Job{}
}

func (q *queueLog) path() string { return filepath.Join(q.dir, queueFile) }

// deadPath is where the page of a dead letter is kept. Job ids come from
// the log, so the file name is derived from a hash, never from the id.
func (q *queueLog) deadPath(id string) string {
	h := sha256.Sum256([]byte(id))
	return filepath.Join(q.dir, deadDir, hex.EncodeToString(h[:12])+".json")
}

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
	res, err := readQueue(bufio.NewReaderSize(f, 1<<20), q.add)
	if err != nil {
		q.quarantine(fmt.Sprintf("unreadable (%v); queued pages in it are lost", err), true)
		st.notes = append(st.notes, fmt.Sprintf("indexing queue %s is unreadable (%v); moved it to quarantine/ and started a new one", queueFile, err))
		q.reset()
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
	return st, res.ValidEnd, nil
}

// settle counts the attempts interrupted by the end of the last process,
// moves the pages that have failed maxAttempts times to the dead letters,
// and fills st.
func (q *queueLog) settle(st *queueState, maxAttempts int) {
	for _, id := range append([]string(nil), q.order...) {
		r := q.pending[id]
		if !q.inflight[id] {
			continue
		}
		delete(q.inflight, id)
		r.Job.Attempts++
		r.Job.Error = "the process stopped while indexing this page (a crash, a kill or running out of memory)"
		st.crashed = append(st.crashed, r.Job)
		if r.Job.Attempts < maxAttempts {
			continue
		}
		j := r.Job
		j.Error = fmt.Sprintf("gave up after %d attempts: the process stopped while indexing this page each time", j.Attempts)
		if err := q.deadLocked(j, r.Doc); err != nil {
			q.logger.Error("index: could not move a page that keeps stopping the process to the dead letters; it is tried again", "job", id, "err", err)
			continue
		}
		st.notes = append(st.notes, fmt.Sprintf("moved %s (job %s) to the dead letters: %s; 'ragmem jobs retry %s' queues it again", j.SourceURL, id, j.Error, id))
	}
	for _, id := range q.order {
		st.pending = append(st.pending, q.pending[id])
	}
	st.finished = append(st.finished, q.finished...)
	st.dead = q.deadList()
}

// deadList returns the dead letters, oldest first.
func (q *queueLog) deadList() []index.Job {
	out := make([]index.Job, 0, len(q.dead))
	for _, j := range q.dead {
		out = append(out, j)
	}
	sort.Slice(out, func(a, b int) bool {
		if !out[a].Finished.Equal(out[b].Finished) {
			return out[a].Finished.Before(out[b].Finished)
		}
		return out[a].ID < out[b].ID
	})
	return out
}

// removeOrphans deletes dead-letter files no dead letter refers to (a crash
// between writing one and recording it, or between retrying one and
// deleting its file).
func (q *queueLog) removeOrphans() {
	ents, err := os.ReadDir(filepath.Join(q.dir, deadDir))
	if err != nil {
		return
	}
	keep := map[string]bool{}
	for id := range q.dead {
		keep[filepath.Base(q.deadPath(id))] = true
	}
	for _, e := range ents {
		if !keep[e.Name()] {
			_ = q.fs.Remove(filepath.Join(q.dir, deadDir, e.Name()))
		}
	}
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
		if !wellFormed(&rec) {
			return fmt.Errorf("%w: malformed queue record", wal.ErrCorrupt)
		}
		fn(&rec)
		return nil
	})
}

func wellFormed(r *queueRecord) bool {
	if r.Job.ID == "" || (r.Kind == recPage) != (r.Doc != nil) || r.Job.Attempts < 0 {
		return false
	}
	switch r.Kind {
	case recPage, recTry, recRetry, recDone, recDead, recDrop, recCancel:
		return true
	}
	return false
}

// ErrCorruptQueue reports an unreadable queue log.
var ErrCorruptQueue = errors.New("index: corrupt indexing queue")

// add applies one record to the in-memory view.
func (q *queueLog) add(r *queueRecord) {
	id := r.Job.ID
	switch r.Kind {
	case recPage:
		if _, ok := q.pending[id]; !ok {
			q.order = append(q.order, id)
		}
		q.pending[id] = r
		delete(q.inflight, id)
		delete(q.dead, id) // retried
	case recTry:
		if p, ok := q.pending[id]; ok {
			q.inflight[id] = true
			p.Job.Attempts = r.Job.Attempts
		}
	case recRetry:
		if p, ok := q.pending[id]; ok {
			delete(q.inflight, id)
			p.Job.Attempts, p.Job.Error = r.Job.Attempts, r.Job.Error
		}
	case recDone, recDead, recCancel:
		q.unpend(id)
		if r.Kind == recDead {
			q.dead[id] = r.Job
			return
		}
		q.finished = append(q.finished, r.Job)
		if len(q.finished) > maxJobs {
			q.finished = append([]index.Job(nil), q.finished[len(q.finished)-maxJobs:]...)
		}
	case recDrop:
		delete(q.dead, id)
	}
}

func (q *queueLog) unpend(id string) {
	if _, ok := q.pending[id]; !ok {
		return
	}
	delete(q.pending, id)
	delete(q.inflight, id)
	for i, x := range q.order {
		if x == id {
			q.order = append(q.order[:i], q.order[i+1:]...)
			break
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

func (q *queueLog) append(sync bool, rs ...*queueRecord) error {
	ps := make([][]byte, len(rs))
	for i, r := range rs {
		p, err := json.Marshal(r)
		if err != nil {
			return err
		}
		ps[i] = p
	}
	if sync {
		return q.log.Append(ps...)
	}
	return q.log.AppendNoSync(ps...)
}

// enqueue makes a page durable.
func (q *queueLog) enqueue(j index.Job, d *index.Document) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.appendAdd(true, &queueRecord{Kind: recPage, Job: j, Doc: d})
}

// appendAdd appends records to the log (synced when sync is set) and then
// applies them to the pending set. The caller holds q.mu.
func (q *queueLog) appendAdd(sync bool, rs ...*queueRecord) error {
	if err := q.append(sync, rs...); err != nil {
		return err
	}
	for _, r := range rs {
		q.add(r)
	}
	return nil
}

// try records that the worker starts on jobs: if the process dies before an
// outcome is recorded, the next Open counts a failed attempt.
func (q *queueLog) try(jobs []index.Job) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	rs := make([]*queueRecord, len(jobs))
	for i, j := range jobs {
		rs[i] = &queueRecord{Kind: recTry, Job: index.Job{ID: j.ID, Attempts: j.Attempts}}
	}
	return q.appendAdd(false, rs...)
}

// retry records a failed attempt of a page that waits to be tried again.
func (q *queueLog) retry(j index.Job) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.record(&queueRecord{Kind: recRetry, Job: index.Job{ID: j.ID, Attempts: j.Attempts, Error: j.Error}})
}

// pendingJobs returns the jobs of the pending pages whose URL matches.
func (q *queueLog) pendingJobs(match func(string) bool) []index.Job {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []index.Job
	for _, id := range q.order {
		if r := q.pending[id]; r.Doc != nil && match(r.Doc.SourceURL) {
			out = append(out, r.Job)
		}
	}
	return out
}

// cancel records, durably, that pending jobs were cancelled: they are
// finished and never replayed.
func (q *queueLog) cancel(jobs []index.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	rs := make([]*queueRecord, len(jobs))
	for i, j := range jobs {
		rs[i] = &queueRecord{Kind: recCancel, Job: j}
	}
	return q.appendAdd(true, rs...)
}

// finish records that a job finished.
func (q *queueLog) finish(j index.Job) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.record(&queueRecord{Kind: recDone, Job: j})
}

// bury moves a job to the dead letters, with its page.
func (q *queueLog) bury(j index.Job, d *index.Document) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.deadLocked(j, d)
}

func (q *queueLog) deadLocked(j index.Job, d *index.Document) error {
	if d == nil {
		if p, ok := q.pending[j.ID]; ok {
			d = p.Doc
		}
	}
	if d == nil {
		return fmt.Errorf("index: no page for job %s", j.ID)
	}
	if err := q.fs.MkdirAll(filepath.Join(q.dir, deadDir), 0o700); err != nil {
		return err
	}
	err := wal.WriteFileAtomic(q.fs, q.deadPath(j.ID), func(w io.Writer) error {
		return json.NewEncoder(w).Encode(deadLetter{Job: j, Doc: *d})
	})
	if err != nil {
		return err
	}
	q.record(&queueRecord{Kind: recDead, Job: j})
	return nil
}

// record appends an outcome without waiting for the disk, applies it, and
// compacts the log once it has grown.
func (q *queueLog) record(r *queueRecord) {
	if err := q.append(false, r); err != nil {
		q.logger.Warn("index: could not record the outcome of a background job; it is replayed on the next open", "job", r.Job.ID, "outcome", r.Kind, "err", err)
	}
	q.add(r)
	if q.log.Size() > queueCompactBytes {
		if err := q.compactLocked(); err != nil {
			q.logger.Warn("index: compacting the indexing queue failed; it keeps growing until it succeeds", "err", err)
		}
	}
}

// deadDoc reads the page of a dead letter.
func (q *queueLog) deadDoc(id string) (*deadLetter, error) {
	f, err := q.fs.OpenFile(q.deadPath(id), os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var dl deadLetter
	if err := json.NewDecoder(f).Decode(&dl); err != nil {
		return nil, fmt.Errorf("%w: dead letter of job %s: %v", ErrCorruptQueue, id, err)
	}
	if dl.Job.ID != id {
		return nil, fmt.Errorf("%w: dead letter file of job %s holds job %q", ErrCorruptQueue, id, dl.Job.ID)
	}
	return &dl, nil
}

// revive queues a dead letter's page again, as job j, and deletes its file.
func (q *queueLog) revive(j index.Job, d *index.Document) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	r := &queueRecord{Kind: recPage, Job: j, Doc: d}
	if err := q.append(true, r); err != nil {
		return err
	}
	q.add(r)
	_ = q.fs.Remove(q.deadPath(j.ID))
	return nil
}

// drop forgets a dead letter and deletes its page.
func (q *queueLog) drop(id string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.fs.Remove(q.deadPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	q.record(&queueRecord{Kind: recDrop, Job: index.Job{ID: id}})
	return nil
}

// compactLocked rewrites the log with only the pending pages, the dead
// letters and the recent finished jobs.
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
			if err := write(&queueRecord{Kind: recDone, Job: j}); err != nil {
				return err
			}
		}
		for _, j := range q.deadList() {
			if err := write(&queueRecord{Kind: recDead, Job: j}); err != nil {
				return err
			}
		}
		for _, id := range q.order {
			r := q.pending[id]
			if err := write(r); err != nil {
				return err
			}
			if q.inflight[id] {
				if err := write(&queueRecord{Kind: recTry, Job: index.Job{ID: id, Attempts: r.Job.Attempts}}); err != nil {
					return err
				}
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

// QueueCheck describes the persisted indexing queue in a directory.
type QueueCheck struct {
	Pending     int         // pages waiting to be indexed; the next Open indexes them
	PendingJobs []index.Job // their jobs, in queue order
	Interrupted int         // of Pending, pages whose indexing the end of the last process interrupted
	Finished    int         // finished jobs remembered for Job lookups
	Cancelled   []index.Job // of those, the jobs cancelled because their source was removed, most recent last
	Dead        []index.Job // dead letters: pages given up on (ragmem jobs list, retry, drop)
	Problems    []string    // damage found: an unreadable or damaged log
	Recovery    []string    // what the next open does by itself, losing nothing queued: cut an unfinished write at the end
	Repaired    []string    // with repair: what was done about it
}

// CheckQueue inspects the indexing queue persisted in dir (the data
// directory, or Options.QueueDir) without changing it, or with repair cuts an
// unfinished write, quarantines damage and moves pages that failed
// DefaultMaxAttempts times to the dead letters, as Open would. A directory
// without a queue is not an error. It fails with ErrQueueLocked while the
// queue is open.
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
		q, st, err := openQueue(wal.OS{}, dir, slog.New(slog.DiscardHandler), DefaultMaxAttempts)
		if err != nil {
			return qc, err
		}
		qc.Pending, qc.Finished, qc.Repaired, qc.Dead = len(st.pending), len(st.finished), st.notes, st.dead
		qc.Cancelled = cancelledJobs(st.finished)
		qc.Interrupted = len(st.crashed)
		for _, r := range st.pending {
			qc.PendingJobs = append(qc.PendingJobs, r.Job)
		}
		return qc, q.close()
	}
	defer lock.Unlock()
	f, err := os.Open(path)
	if err != nil {
		return qc, err
	}
	defer f.Close()
	q := &queueLog{}
	q.reset()
	res, err := readQueue(bufio.NewReader(f), q.add)
	if err != nil {
		qc.Problems = append(qc.Problems, fmt.Sprintf("the indexing queue %s is unreadable (%v); opening the store quarantines it", path, err))
		return qc, nil
	}
	qc.Pending, qc.Finished, qc.Interrupted, qc.Dead = len(q.order), len(q.finished), len(q.inflight), q.deadList()
	qc.Cancelled = cancelledJobs(q.finished)
	for _, id := range q.order {
		j := q.pending[id].Job
		if q.inflight[id] {
			j.State = index.JobRunning // interrupted: the next open counts the attempt
		}
		qc.PendingJobs = append(qc.PendingJobs, j)
	}
	switch {
	case res.Tail == nil:
	case errors.Is(res.Tail, wal.ErrTorn):
		qc.Recovery = append(qc.Recovery, fmt.Sprintf("the indexing queue ends in an unfinished write after byte %d (%v); opening the store cuts it", res.ValidEnd, res.Tail))
	default:
		qc.Problems = append(qc.Problems, fmt.Sprintf("the indexing queue is damaged after byte %d (%v); opening the store keeps a copy in quarantine/ and cuts it there", res.ValidEnd, res.Tail))
	}
	return qc, nil
}

func cancelledJobs(finished []index.Job) []index.Job {
	var out []index.Job
	for _, j := range finished {
		if j.State == index.JobCancelled {
			out = append(out, j)
		}
	}
	return out
}

// firstLine cuts an error message to its first line and a sane length, for
// job records.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 1000 {
		s = s[:1000]
	}
	return s
}
