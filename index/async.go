package index

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// JobState is the state of an IndexPageAsync job.
type JobState string

const (
	JobQueued  JobState = "queued"
	JobRunning JobState = "running"
	JobDone    JobState = "done"
	JobFailed  JobState = "failed"
)

// Job reports one IndexPageAsync call.
type Job struct {
	ID        string    `json:"id"`
	SourceURL string    `json:"sourceUrl"`
	State     JobState  `json:"state"`
	Chunks    int       `json:"chunks,omitempty"`
	Unchanged bool      `json:"unchanged,omitempty"` // same content was already indexed, or newer content since the page was queued
	Error     string    `json:"error,omitempty"`
	Queued    time.Time `json:"queued"`
	Finished  time.Time `json:"finished,omitzero"`
	Replayed  bool      `json:"replayed,omitempty"` // queued before the last restart and indexed after it
}

// QueueStats counts IndexPageAsync work since Open.
type QueueStats struct {
	Depth     int   `json:"depth"`     // jobs waiting
	Enqueued  int64 `json:"enqueued"`  // jobs accepted
	Done      int64 `json:"done"`      // jobs indexed (or found unchanged)
	Unchanged int64 `json:"unchanged"` // of Done, those that were no-ops
	Failed    int64 `json:"failed"`    // jobs whose indexing failed
	Dropped   int64 `json:"dropped"`   // jobs refused: queue full, index closed, or the page could not be persisted
	Replayed  int64 `json:"replayed"`  // jobs queued before the last restart and replayed at Open
	Durable   bool  `json:"durable"`   // queued pages survive a crash (a queue directory is in use)
}

type asyncCounters struct {
	enqueued, done, unchanged, failed, dropped, replayed atomic.Int64
}

type job struct {
	id       string
	doc      Document
	queued   time.Time
	replayed bool
}

// maxJobs bounds how many finished jobs are remembered for Job lookups.
const maxJobs = 10000

// maxAsyncBatch is how many queued pages the worker indexes in one batch.
const maxAsyncBatch = 32

// newJobID returns an id unique across restarts: the time and 48 random bits.
func newJobID(now time.Time) string {
	var r [6]byte
	_, _ = rand.Read(r[:])
	return "job_" + strconv.FormatInt(now.UnixMilli(), 36) + "_" + hex.EncodeToString(r[:])
}

// IndexPageAsync queues a page for indexing and returns at once with a job id
// that Job reports on. It never returns an error: when the queue is full, the
// index closed or the page cannot be persisted, the job is marked failed,
// counted as dropped and logged.
//
// With a queue directory (the default for the local store; Options.QueueDir
// otherwise) the page is persisted (fsynced) before the call returns: a page
// not yet indexed when the process dies is indexed by the next Open, and its
// job id stays valid across the restart. Without one, queued pages live in
// memory only and are lost in a crash; QueueStats().Durable says which.
func (ix *Index) IndexPageAsync(d Document) string {
	now := ix.now().UTC()
	id := newJobID(now)
	j := &Job{ID: id, SourceURL: d.SourceURL, State: JobQueued, Queued: now}
	ix.remember(j)
	ix.qmu.RLock()
	defer ix.qmu.RUnlock()
	if ix.closing {
		ix.fail(id, "index is closed")
		ix.stats.dropped.Add(1)
		return id
	}
	if len(ix.queue) >= ix.queueSize {
		ix.fail(id, "indexing queue is full")
		ix.stats.dropped.Add(1)
		ix.log.Error("index: page dropped, queue full", "source", d.SourceURL, "queue", ix.queueSize)
		return id
	}
	if ix.q != nil {
		if err := ix.q.enqueue(*j, &d); err != nil {
			ix.fail(id, "could not persist the page for background indexing: "+err.Error())
			ix.stats.dropped.Add(1)
			ix.log.Error("index: page dropped, queue not writable", "source", d.SourceURL, "err", err)
			return id
		}
	}
	select {
	case ix.queue <- &job{id: id, doc: d, queued: now}:
		ix.stats.enqueued.Add(1)
	default:
		// Concurrent callers filled the queue since the check above.
		ix.fail(id, "indexing queue is full")
		ix.stats.dropped.Add(1)
		ix.log.Error("index: page dropped, queue full", "source", d.SourceURL, "queue", ix.queueSize)
		if ix.q != nil {
			jj, _ := ix.Job(id)
			ix.q.finish(jj)
		}
	}
	return id
}

// replayQueue queues the pages a previous process persisted but did not
// index, and remembers the jobs it finished. Called by Open before the worker
// starts.
func (ix *Index) replayQueue(st *queueState) {
	for _, n := range st.notes {
		ix.log.Warn("index: "+n, "dir", ix.q.dir)
	}
	for _, j := range st.finished {
		jj := j
		ix.remember(&jj)
	}
	for _, r := range st.pending {
		j := r.Job
		j.State, j.Replayed = JobQueued, true
		ix.remember(&j)
		ix.queue <- &job{id: j.ID, doc: *r.Doc, queued: j.Queued, replayed: true}
		ix.stats.enqueued.Add(1)
		ix.stats.replayed.Add(1)
	}
	if len(st.pending) > 0 {
		ix.log.Info("index: indexing pages queued before the restart", "pages", len(st.pending))
	}
}

func (ix *Index) remember(j *Job) {
	ix.jobsMu.Lock()
	defer ix.jobsMu.Unlock()
	if _, ok := ix.jobs[j.ID]; !ok {
		ix.jobList = append(ix.jobList, j.ID)
	}
	ix.jobs[j.ID] = j
	for len(ix.jobList) > maxJobs {
		old := ix.jobList[0]
		if oj := ix.jobs[old]; oj != nil && (oj.State == JobQueued || oj.State == JobRunning) {
			break // never forget unfinished jobs
		}
		delete(ix.jobs, old)
		ix.jobList = ix.jobList[1:]
	}
}

func (ix *Index) update(id string, f func(*Job)) {
	ix.jobsMu.Lock()
	defer ix.jobsMu.Unlock()
	if j := ix.jobs[id]; j != nil {
		f(j)
	}
}

func (ix *Index) fail(id, msg string) {
	ix.update(id, func(j *Job) { j.State, j.Error, j.Finished = JobFailed, msg, ix.now().UTC() })
}

// Job returns the state of an IndexPageAsync job. Finished jobs are
// remembered up to the last 10,000, across restarts when the queue is durable.
func (ix *Index) Job(id string) (Job, bool) {
	ix.jobsMu.Lock()
	defer ix.jobsMu.Unlock()
	j, ok := ix.jobs[id]
	if !ok {
		return Job{}, false
	}
	return *j, true
}

// QueueStats returns the auto-indexer's counters.
func (ix *Index) QueueStats() QueueStats {
	return QueueStats{
		Depth:     len(ix.queue),
		Enqueued:  ix.stats.enqueued.Load(),
		Done:      ix.stats.done.Load(),
		Unchanged: ix.stats.unchanged.Load(),
		Failed:    ix.stats.failed.Load(),
		Dropped:   ix.stats.dropped.Load(),
		Replayed:  ix.stats.replayed.Load(),
		Durable:   ix.q != nil,
	}
}

// Flush waits until every page queued before the call has been processed.
func (ix *Index) Flush(ctx context.Context) error {
	target := ix.stats.enqueued.Load()
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for {
		if ix.stats.done.Load()+ix.stats.failed.Load() >= target {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// run is the auto-indexer: it takes whatever is queued (up to maxAsyncBatch
// pages) and indexes it in one batch, so bursts of pages cost one write.
func (ix *Index) run() {
	defer ix.worker.Done()
	for first := range ix.queue {
		batch := []*job{first}
	more:
		for len(batch) < maxAsyncBatch {
			select {
			case j, ok := <-ix.queue:
				if !ok {
					break more
				}
				batch = append(batch, j)
			default:
				break more
			}
		}
		ix.runBatch(batch)
	}
}

func (ix *Index) runBatch(batch []*job) {
	ctx := context.Background()
	// A replayed page whose source was indexed after the page was queued
	// (by this very job before the crash, or by a newer write) is skipped:
	// a replay never puts back older content.
	var run []*job
	for _, j := range batch {
		if j.replayed {
			if ex, _, err := ix.be.Sources(ctx, Filter{SourceURL: strings.TrimSpace(j.doc.SourceURL)}, 0, 1); err == nil && len(ex) == 1 && !ex[0].CreatedAt.Before(j.queued) {
				ix.finishJob(j, Result{Unchanged: true, Chunks: ex[0].Chunks}, ix.now().UTC())
				continue
			}
		}
		run = append(run, j)
	}
	if len(run) == 0 {
		return
	}
	docs := make([]Document, len(run))
	for i, j := range run {
		docs[i] = j.doc
		ix.update(j.id, func(x *Job) { x.State = JobRunning })
	}
	results, err := ix.AddMany(ctx, docs)
	if err != nil && len(run) > 1 {
		// One bad page must not sink the others: retry them one by one.
		for _, j := range run {
			ix.runBatch([]*job{j})
		}
		return
	}
	now := ix.now().UTC()
	for i, j := range run {
		var r Result
		if err == nil {
			r = results[i]
		} else {
			r.Err = err
		}
		ix.finishJob(j, r, now)
	}
}

// finishJob records a job's outcome in memory and in the queue log.
func (ix *Index) finishJob(j *job, r Result, now time.Time) {
	if r.Err != nil {
		ix.stats.failed.Add(1)
		ix.log.Error("index: background indexing failed", "source", j.doc.SourceURL, "job", j.id, "err", r.Err)
		ix.update(j.id, func(x *Job) { x.State, x.Error, x.Finished = JobFailed, r.Err.Error(), now })
	} else {
		ix.stats.done.Add(1)
		if r.Unchanged || r.Superseded {
			ix.stats.unchanged.Add(1)
		}
		ix.update(j.id, func(x *Job) {
			x.State, x.Chunks, x.Unchanged, x.Finished = JobDone, r.Chunks, r.Unchanged || r.Superseded, now
		})
	}
	if ix.q != nil {
		if jj, ok := ix.Job(j.id); ok {
			ix.q.finish(jj)
		}
	}
}
