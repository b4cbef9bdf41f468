package index

import (
	"context"
	"strconv"
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
	Unchanged bool      `json:"unchanged,omitempty"` // same content was already indexed
	Error     string    `json:"error,omitempty"`
	Queued    time.Time `json:"queued"`
	Finished  time.Time `json:"finished,omitzero"`
}

// QueueStats counts IndexPageAsync work since Open.
type QueueStats struct {
	Depth     int   `json:"depth"`     // jobs waiting
	Enqueued  int64 `json:"enqueued"`  // jobs accepted
	Done      int64 `json:"done"`      // jobs indexed (or found unchanged)
	Unchanged int64 `json:"unchanged"` // of Done, those that were no-ops
	Failed    int64 `json:"failed"`    // jobs whose indexing failed
	Dropped   int64 `json:"dropped"`   // jobs refused because the queue was full or closed
}

type asyncCounters struct {
	enqueued, done, unchanged, failed, dropped atomic.Int64
}

type job struct {
	id  string
	doc Document
}

// maxJobs bounds how many finished jobs are remembered for Job lookups.
const maxJobs = 10000

// maxAsyncBatch is how many queued pages the worker indexes in one batch.
const maxAsyncBatch = 32

// IndexPageAsync queues a page for indexing and returns at once with a job id
// that Job reports on. It never blocks and never returns an error: when the
// queue is full or the index closed the job is marked failed, counted as
// dropped and logged. Queued pages are held in memory only: pages not yet
// indexed when the process dies are lost, which Job reports as never done.
func (ix *Index) IndexPageAsync(d Document) string {
	id := "job_" + strconv.FormatUint(ix.nextJob.Add(1), 10) + "_" + strconv.FormatInt(ix.now().UnixNano()%1e9, 36)
	j := &Job{ID: id, SourceURL: d.SourceURL, State: JobQueued, Queued: ix.now().UTC()}
	ix.remember(j)
	ix.qmu.RLock()
	defer ix.qmu.RUnlock()
	if ix.closing {
		ix.fail(id, "index is closed")
		ix.stats.dropped.Add(1)
		return id
	}
	select {
	case ix.queue <- &job{id: id, doc: d}:
		ix.stats.enqueued.Add(1)
	default:
		ix.fail(id, "indexing queue is full")
		ix.stats.dropped.Add(1)
		ix.log.Error("index: page dropped, queue full", "source", d.SourceURL, "queue", cap(ix.queue))
	}
	return id
}

func (ix *Index) remember(j *Job) {
	ix.jobsMu.Lock()
	defer ix.jobsMu.Unlock()
	ix.jobs[j.ID] = j
	ix.jobList = append(ix.jobList, j.ID)
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
// remembered up to the last 10,000.
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
	docs := make([]Document, len(batch))
	for i, j := range batch {
		docs[i] = j.doc
		ix.update(j.id, func(x *Job) { x.State = JobRunning })
	}
	ctx := context.Background()
	results, err := ix.AddMany(ctx, docs)
	if err != nil && len(batch) > 1 {
		// One bad page must not sink the others: retry them one by one.
		for _, j := range batch {
			ix.runBatch([]*job{j})
		}
		return
	}
	now := ix.now().UTC()
	for i, j := range batch {
		var r Result
		if err == nil {
			r = results[i]
		} else {
			r.Err = err
		}
		if r.Err != nil {
			ix.stats.failed.Add(1)
			ix.log.Error("index: background indexing failed", "source", j.doc.SourceURL, "job", j.id, "err", r.Err)
			ix.update(j.id, func(x *Job) { x.State, x.Error, x.Finished = JobFailed, r.Err.Error(), now })
			continue
		}
		ix.stats.done.Add(1)
		if r.Unchanged || r.Superseded {
			ix.stats.unchanged.Add(1)
		}
		ix.update(j.id, func(x *Job) {
			x.State, x.Chunks, x.Unchanged, x.Finished = JobDone, r.Chunks, r.Unchanged, now
		})
	}
}
