package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ragmem/ragmem/index"

	"github.com/ragmem/ragmem/chunk"
	"github.com/ragmem/ragmem/internal/embed"
)

type asyncCounters struct {
	enqueued, done, unchanged, failed, retries, dropped, replayed, cancelled atomic.Int64
}

type job struct {
	id       string
	doc      index.Document
	queued   time.Time
	replayed bool
	attempts int       // failed attempts so far
	retryAt  time.Time // not before
	bytes    int64
	// cancelled: RemoveSource removed the page's source; it is neither
	// written nor retried. Set holding commitMu and qmu; read holding
	// either.
	cancelled bool
	// committed: the page's chunks were written (under commitMu).
	committed bool
}

// errCancelled is the outcome of a page whose job was cancelled.
var errCancelled = errors.New("index: the page's source was removed before it was indexed")

// cancelledMsg is the Error of a cancelled job.
const cancelledMsg = "cancelled: its page was deleted before it was indexed"

// Defaults and bounds of the auto-indexer.
const (
	// DefaultMaxAttempts is Options.MaxAttempts's default.
	DefaultMaxAttempts = 3
	// DefaultQueueBytes is Options.QueueBytes's default.
	DefaultQueueBytes = 64 << 20
	// DefaultRetryDelay is Options.RetryDelay's default.
	DefaultRetryDelay = time.Second
	// maxRetryDelay caps the backoff between attempts.
	maxRetryDelay = 5 * time.Minute
	// maxJobs bounds how many finished jobs are remembered for Job lookups.
	maxJobs = 10000
	// maxDead bounds the dead letters; past it the oldest is dropped.
	maxDead = 1000
	// maxAsyncBatch is how many queued pages the worker indexes in one
	// batch, and maxBatchBytes how much text (a larger page goes alone).
	maxAsyncBatch = 32
	maxBatchBytes = 1 << 20
)

// Errors of the dead letters.
var (
	// ErrNoJob is returned by RetryJob and DropJob for a job that is not a
	// dead letter.
	ErrNoJob = errors.New("index: no such dead letter")
)

// newJobID returns an id unique across restarts: the time and 48 random bits.
func newJobID(now time.Time) string {
	var r [6]byte
	_, _ = rand.Read(r[:])
	return "job_" + strconv.FormatInt(now.UnixMilli(), 36) + "_" + hex.EncodeToString(r[:])
}

func docBytes(d *index.Document) int64 {
	return int64(len(d.Content) + len(d.Title) + len(d.SourceURL))
}

// IndexPageAsync queues a page for indexing and returns at once with a job id
// that Job reports on. It never returns an error: when the queue is full
// (Options.QueueSize pages or Options.QueueBytes of text), the index closed
// or the page cannot be persisted, the job is marked failed, counted as
// dropped and logged.
//
// A page whose indexing fails is tried again, up to Options.MaxAttempts
// times with a growing delay, then moved to the dead letters (ListJobs,
// RetryJob, DropJob); a page that cannot be chunked within the limits
// (ErrTooManyChunks, ErrEmptyDocument) or does not fit the quota goes there
// at once. While the embedder is unavailable (embed.ErrUnavailable) pages
// wait, without using up attempts, and are indexed once it is back.
//
// With a queue directory (the default for the local store; Options.QueueDir
// otherwise) the page is persisted (fsynced) before the call returns: a page
// not yet indexed when the process dies is indexed by the next Open, and its
// job id stays valid across the restart. A page whose indexing the end of
// the process interrupted counts a failed attempt, so a page that crashes
// the process is given up on after MaxAttempts starts. Without a queue
// directory, queued pages live in memory only and are lost in a crash;
// QueueStats().Durable says which.
func (ix *Index) IndexPageAsync(d index.Document) string {
	d.SourceURL = ix.CanonicalURL(d.SourceURL)
	now := ix.now().UTC()
	id := newJobID(now)
	j := &index.Job{ID: id, SourceURL: d.SourceURL, State: index.JobQueued, Queued: now}
	ix.remember(j)
	size := docBytes(&d)
	refuse := func(msg string) string {
		ix.fail(id, msg)
		ix.stats.dropped.Add(1)
		ix.log.Error("index: page dropped", "source", d.SourceURL, "why", msg)
		return id
	}
	ix.qmu.Lock()
	defer ix.qmu.Unlock()
	switch {
	case ix.closing:
		ix.fail(id, "index is closed")
		ix.stats.dropped.Add(1)
		return id
	case len(ix.ready)+len(ix.waiting) >= ix.queueSize:
		return refuse(fmt.Sprintf("indexing queue is full (%d pages waiting)", ix.queueSize))
	case ix.queuedBytes > 0 && ix.queuedBytes+size > ix.queueBytes:
		return refuse(fmt.Sprintf("indexing queue is full (%d bytes of text waiting; the limit is %d)", ix.queuedBytes, ix.queueBytes))
	}
	if ix.q != nil {
		if err := ix.q.enqueue(*j, &d); err != nil {
			// The job's error is for clients: it says what happened, not
			// where (the queue file's path); the log has the whole error.
			ix.log.Error("index: could not persist a page for background indexing", "job", id, "source", d.SourceURL, "err", err)
			return refuse("could not persist the page for background indexing: " + ioCause(err))
		}
	}
	ix.pushLocked(&job{id: id, doc: d, queued: now, bytes: size})
	ix.stats.enqueued.Add(1)
	return id
}

// pushLocked queues jb for the worker.
func (ix *Index) pushLocked(jb *job) {
	if jb.retryAt.IsZero() {
		ix.ready = append(ix.ready, jb)
	} else {
		ix.waiting = append(ix.waiting, jb)
	}
	ix.queuedBytes += jb.bytes
	ix.wakeWorker()
}

func (ix *Index) wakeWorker() {
	select {
	case ix.wake <- struct{}{}:
	default:
	}
}

// replayQueue queues the pages a previous process persisted but did not
// index, and remembers the jobs it finished and the dead letters. Called by
// Open before the worker starts.
func (ix *Index) replayQueue(st *queueState) {
	for _, n := range st.notes {
		ix.log.Warn("index: "+n, "dir", ix.q.dir)
	}
	for _, j := range st.finished {
		jj := j
		ix.remember(&jj)
	}
	for _, j := range st.dead {
		jj := j
		jj.State = index.JobDead
		ix.remember(&jj)
	}
	for _, r := range st.pending {
		j := r.Job
		j.State, j.Replayed = index.JobQueued, true
		ix.remember(&j)
		ix.pushLocked(&job{id: j.ID, doc: *r.Doc, queued: j.Queued, replayed: true, attempts: j.Attempts, bytes: docBytes(r.Doc)})
		ix.stats.enqueued.Add(1)
		ix.stats.replayed.Add(1)
	}
	if len(st.pending) > 0 {
		ix.log.Info("index: indexing pages queued before the restart", "pages", len(st.pending), "interrupted", len(st.crashed))
	}
}

func (ix *Index) remember(j *index.Job) {
	ix.jobsMu.Lock()
	defer ix.jobsMu.Unlock()
	if _, ok := ix.jobs[j.ID]; !ok {
		ix.jobList = append(ix.jobList, j.ID)
	}
	ix.jobs[j.ID] = j
	if len(ix.jobList) <= maxJobs+maxJobs/4 {
		return
	}
	// Forget the oldest finished jobs; unfinished jobs and dead letters
	// are always remembered.
	excess := len(ix.jobList) - maxJobs
	kept := ix.jobList[:0]
	for _, id := range ix.jobList {
		oj := ix.jobs[id]
		if excess > 0 && oj != nil && (oj.State == index.JobDone || oj.State == index.JobFailed || oj.State == index.JobCancelled) {
			delete(ix.jobs, id)
			excess--
			continue
		}
		kept = append(kept, id)
	}
	ix.jobList = kept
}

func (ix *Index) update(id string, f func(*index.Job)) {
	ix.jobsMu.Lock()
	defer ix.jobsMu.Unlock()
	if j := ix.jobs[id]; j != nil {
		f(j)
	}
}

func (ix *Index) fail(id, msg string) {
	ix.update(id, func(j *index.Job) { j.State, j.Error, j.Finished = index.JobFailed, msg, ix.now().UTC() })
}

// Job returns the state of an IndexPageAsync job. Finished jobs are
// remembered up to the last 10,000, across restarts when the queue is
// durable; unfinished jobs and dead letters always.
func (ix *Index) Job(id string) (index.Job, bool) {
	ix.jobsMu.Lock()
	defer ix.jobsMu.Unlock()
	j, ok := ix.jobs[id]
	if !ok {
		return index.Job{}, false
	}
	return *j, true
}

// ListJobs returns the remembered jobs in the given states (all states when
// none is given), most recently queued first.
func (ix *Index) ListJobs(states ...index.JobState) []index.Job {
	want := map[index.JobState]bool{}
	for _, s := range states {
		want[s] = true
	}
	ix.jobsMu.Lock()
	out := make([]index.Job, 0, len(ix.jobs))
	for _, j := range ix.jobs {
		if len(want) == 0 || want[j.State] {
			out = append(out, *j)
		}
	}
	ix.jobsMu.Unlock()
	sort.Slice(out, func(a, b int) bool {
		if !out[a].Queued.Equal(out[b].Queued) {
			return out[a].Queued.After(out[b].Queued)
		}
		return out[a].ID > out[b].ID
	})
	return out
}

// RetryJob queues a dead letter's page again, with its attempts reset, and
// returns the job. It fails with ErrNoJob for a job that is not a dead
// letter.
func (ix *Index) RetryJob(ctx context.Context, id string) (index.Job, error) {
	if err := ctx.Err(); err != nil {
		return index.Job{}, err
	}
	j, ok := ix.Job(id)
	if !ok || j.State != index.JobDead {
		return index.Job{}, fmt.Errorf("%w: %q", ErrNoJob, id)
	}
	ix.qmu.Lock()
	defer ix.qmu.Unlock()
	if ix.closing {
		return index.Job{}, ErrClosed
	}
	var doc *index.Document
	if ix.q != nil {
		dl, err := ix.q.deadDoc(id)
		if err != nil {
			return index.Job{}, fmt.Errorf("index: read the page of dead letter %s: %w", id, err)
		}
		doc = &dl.Doc
	} else if doc = ix.deadDocs[id]; doc == nil {
		return index.Job{}, fmt.Errorf("%w: %q", ErrNoJob, id)
	}
	nj := index.Job{ID: id, SourceURL: j.SourceURL, State: index.JobQueued, Queued: ix.now().UTC()}
	if ix.q != nil {
		if err := ix.q.revive(nj, doc); err != nil {
			return index.Job{}, fmt.Errorf("index: queue the page again: %w", err)
		}
	}
	delete(ix.deadDocs, id)
	ix.remember(&nj)
	ix.pushLocked(&job{id: id, doc: *doc, queued: nj.Queued, bytes: docBytes(doc)})
	ix.stats.enqueued.Add(1)
	return nj, nil
}

// DropJob deletes a dead letter and its page. It fails with ErrNoJob for a
// job that is not a dead letter.
func (ix *Index) DropJob(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	j, ok := ix.Job(id)
	if !ok || j.State != index.JobDead {
		return fmt.Errorf("%w: %q", ErrNoJob, id)
	}
	ix.qmu.Lock()
	defer ix.qmu.Unlock()
	if ix.q != nil {
		if err := ix.q.drop(id); err != nil {
			return fmt.Errorf("index: drop dead letter %s: %w", id, err)
		}
	}
	delete(ix.deadDocs, id)
	ix.jobsMu.Lock()
	delete(ix.jobs, id)
	for i, x := range ix.jobList {
		if x == id {
			ix.jobList = append(ix.jobList[:i], ix.jobList[i+1:]...)
			break
		}
	}
	ix.jobsMu.Unlock()
	return nil
}

// QueueStats returns the auto-indexer's counters.
func (ix *Index) QueueStats() index.QueueStats {
	ix.qmu.Lock()
	depth, waiting, bytes := len(ix.ready)+len(ix.waiting)+ix.running, len(ix.waiting), ix.queuedBytes
	ix.qmu.Unlock()
	dead := 0
	ix.jobsMu.Lock()
	for _, j := range ix.jobs {
		if j.State == index.JobDead {
			dead++
		}
	}
	ix.jobsMu.Unlock()
	return index.QueueStats{
		Depth:     depth,
		Waiting:   waiting,
		Bytes:     bytes,
		Enqueued:  ix.stats.enqueued.Load(),
		Done:      ix.stats.done.Load(),
		Unchanged: ix.stats.unchanged.Load(),
		Failed:    ix.stats.failed.Load(),
		Retries:   ix.stats.retries.Load(),
		Dead:      dead,
		Dropped:   ix.stats.dropped.Load(),
		Cancelled: ix.stats.cancelled.Load(),
		Replayed:  ix.stats.replayed.Load(),
		Durable:   ix.q != nil,
	}
}

// Flush waits until the worker is idle: every page queued before the call
// has been indexed, moved to the dead letters, or set aside to be tried
// again after a failure (QueueStats().Waiting).
func (ix *Index) Flush(ctx context.Context) error {
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for {
		ix.qmu.Lock()
		idle := len(ix.ready) == 0 && ix.running == 0
		ix.qmu.Unlock()
		if idle {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// run is the auto-indexer: it takes what is ready (up to maxAsyncBatch
// pages and maxBatchBytes of text) and indexes it in one batch, so bursts of
// small pages cost one write. Pages waiting to be tried again join the
// ready ones when their time comes. Once the index is closing, every page
// left is tried once more, and the worker stops.
func (ix *Index) run() {
	defer ix.worker.Done()
	for {
		batch := ix.nextBatch()
		if batch == nil {
			return
		}
		ix.runBatch(batch)
		ix.qmu.Lock()
		ix.running, ix.inBatch = 0, nil
		ix.qmu.Unlock()
	}
}

// nextBatch waits for work; nil means the worker is done.
func (ix *Index) nextBatch() []*job {
	ix.qmu.Lock()
	defer ix.qmu.Unlock()
	for {
		now := ix.now()
		var next time.Time
		kept := ix.waiting[:0]
		for _, jb := range ix.waiting {
			if ix.closing || !jb.retryAt.After(now) {
				ix.ready = append(ix.ready, jb)
				continue
			}
			if next.IsZero() || jb.retryAt.Before(next) {
				next = jb.retryAt
			}
			kept = append(kept, jb)
		}
		clear(ix.waiting[len(kept):])
		ix.waiting = kept
		if len(ix.ready) > 0 {
			return ix.takeLocked()
		}
		if ix.closing {
			return nil
		}
		var timer <-chan time.Time
		if !next.IsZero() {
			t := time.NewTimer(next.Sub(now))
			defer t.Stop()
			timer = t.C
		}
		ix.qmu.Unlock()
		select {
		case <-ix.wake:
		case <-timer:
		}
		ix.qmu.Lock()
	}
}

// takeLocked takes the next batch from the ready pages. A page that was
// interrupted or failed before goes alone: if it is what stops the process,
// it uses up only its own attempts.
func (ix *Index) takeLocked() []*job {
	first := ix.ready[0]
	n, size := 1, first.bytes
	if first.attempts == 0 {
		for n < len(ix.ready) && n < maxAsyncBatch {
			jb := ix.ready[n]
			if jb.attempts > 0 || size+jb.bytes > maxBatchBytes {
				break
			}
			size += jb.bytes
			n++
		}
	}
	batch := append([]*job(nil), ix.ready[:n]...)
	clear(ix.ready[:n])
	ix.ready = ix.ready[n:]
	for _, jb := range batch {
		ix.queuedBytes -= jb.bytes
	}
	ix.running = len(batch)
	ix.inBatch = append([]*job(nil), batch...)
	return batch
}

// cancelSource cancels the background jobs of a source: those waiting,
// those waiting to be tried again and those of the running batch not yet
// written, in memory and, durably, in the queue log (also any the log
// still holds that memory does not). It returns their ids. The caller
// holds commitMu.
func (ix *Index) cancelSource(raw string) ([]string, error) {
	c, t := ix.CanonicalURL(raw), strings.TrimSpace(raw)
	match := func(u string) bool {
		u = strings.TrimSpace(u)
		return u == t || u == c || ix.CanonicalURL(u) == c
	}
	ix.qmu.Lock()
	defer ix.qmu.Unlock()
	var hit []*job
	seen := map[string]bool{}
	skip := map[string]bool{} // written already: the removal deletes them, their job is done
	for _, list := range [][]*job{ix.ready, ix.waiting, ix.inBatch} {
		for _, jb := range list {
			switch {
			case seen[jb.id] || jb.cancelled || !match(jb.doc.SourceURL):
			case jb.committed:
				skip[jb.id] = true
			default:
				seen[jb.id] = true
				hit = append(hit, jb)
			}
		}
	}
	now := ix.now().UTC()
	var ids []string
	var cancel []index.Job
	add := func(j index.Job) {
		j.State, j.Error, j.Finished, j.RetryAt = index.JobCancelled, cancelledMsg, now, time.Time{}
		ids = append(ids, j.ID)
		cancel = append(cancel, j)
	}
	for _, jb := range hit {
		j, ok := ix.Job(jb.id)
		if !ok {
			j = index.Job{ID: jb.id, SourceURL: jb.doc.SourceURL, Queued: jb.queued}
		}
		add(j)
	}
	if ix.q != nil {
		for _, j := range ix.q.pendingJobs(match) {
			if !seen[j.ID] && !skip[j.ID] {
				seen[j.ID] = true
				add(j)
			}
		}
		if err := ix.q.cancel(cancel); err != nil {
			return nil, fmt.Errorf("index: cancel the queued pages of %s: %w", t, err)
		}
	}
	for _, jb := range hit {
		jb.cancelled = true
	}
	drop := func(list []*job) []*job {
		kept := list[:0]
		for _, jb := range list {
			if jb.cancelled {
				ix.queuedBytes -= jb.bytes
				continue
			}
			kept = append(kept, jb)
		}
		clear(list[len(kept):])
		return kept
	}
	ix.ready, ix.waiting = drop(ix.ready), drop(ix.waiting)
	for i := range cancel {
		j := cancel[i]
		ix.remember(&j)
	}
	ix.stats.cancelled.Add(int64(len(cancel)))
	if len(cancel) > 0 {
		ix.log.Info("index: cancelled the background indexing of a removed source", "source", t, "jobs", len(cancel))
	}
	return ids, nil
}

// leaveBatchLocked takes a job out of the running batch once its outcome
// is recorded. The caller holds qmu.
func (ix *Index) leaveBatchLocked(j *job) {
	for i, x := range ix.inBatch {
		if x == j {
			ix.inBatch = append(ix.inBatch[:i], ix.inBatch[i+1:]...)
			return
		}
	}
}

func (ix *Index) runBatch(batch []*job) {
	ctx := context.Background()
	// A replayed page whose source was indexed after the page was queued
	// (by this very job before the crash, or by a newer write) is skipped:
	// a replay never puts back older content. A cancelled page is skipped.
	var run []*job
	for _, j := range batch {
		ix.qmu.Lock()
		cancelled := j.cancelled
		if cancelled {
			ix.leaveBatchLocked(j)
		}
		ix.qmu.Unlock()
		if cancelled {
			continue
		}
		if j.replayed {
			if ex, _, err := ix.be.Sources(ctx, index.Filter{SourceURL: ix.CanonicalURL(j.doc.SourceURL)}, 0, 1); err == nil && len(ex) == 1 && !ex[0].CreatedAt.Before(j.queued) {
				ix.finishJob(j, index.Result{Unchanged: true, Chunks: ex[0].Chunks}, ix.now().UTC())
				continue
			}
		}
		run = append(run, j)
	}
	if len(run) == 0 {
		return
	}
	docs := make([]index.Document, len(run))
	tries := make([]index.Job, len(run))
	for i, j := range run {
		docs[i] = j.doc
		tries[i] = index.Job{ID: j.id, Attempts: j.attempts}
		ix.update(j.id, func(x *index.Job) {
			if x.State != index.JobCancelled {
				x.State, x.RetryAt = index.JobRunning, time.Time{}
			}
		})
	}
	if ix.q != nil {
		if err := ix.q.try(tries); err != nil {
			ix.log.Warn("index: could not record the start of background indexing", "err", err)
		}
	}
	results, err := ix.addMany(ctx, docs, run)
	if err != nil && len(run) > 1 {
		// One bad page must not sink the others: retry them one by one.
		for _, j := range run {
			ix.runBatch([]*job{j})
		}
		return
	}
	now := ix.now().UTC()
	for i, j := range run {
		var r index.Result
		if err == nil {
			r = results[i]
		} else {
			r.Err = err
		}
		ix.finishJob(j, r, now)
	}
}

// permanent reports whether an indexing error would recur on every attempt:
// the page itself is at fault (or would replace a memory or a preference),
// or the store's quota is full.
func permanent(err error) bool {
	return errors.Is(err, chunk.ErrTooManyChunks) || errors.Is(err, ErrTooManyChunks) || errors.Is(err, ErrEmptyDocument) ||
		errors.Is(err, ErrNoSource) || errors.Is(err, ErrQuotaExceeded) || errors.Is(err, ErrReserved)
}

// finishJob records a job's outcome in memory and in the queue log: done,
// waiting for another attempt, or moved to the dead letters; nothing for a
// job RemoveSource cancelled, which it recorded itself. It holds qmu, so
// that a cancellation sees the job either still in the batch or where its
// outcome put it.
func (ix *Index) finishJob(j *job, r index.Result, now time.Time) {
	ix.qmu.Lock()
	prune := ix.finishLocked(j, r, now)
	ix.qmu.Unlock()
	if prune {
		ix.pruneDead()
	}
}

// finishLocked is finishJob holding qmu; it reports whether a dead letter
// was added.
func (ix *Index) finishLocked(j *job, r index.Result, now time.Time) bool {
	ix.leaveBatchLocked(j)
	if j.cancelled {
		return false
	}
	if r.Err == nil {
		ix.stats.done.Add(1)
		if r.Unchanged || r.Superseded {
			ix.stats.unchanged.Add(1)
		}
		ix.update(j.id, func(x *index.Job) {
			x.State, x.Chunks, x.Unchanged, x.Finished, x.Error = index.JobDone, r.Chunks, r.Unchanged || r.Superseded, now, ""
			x.Attempts = j.attempts
		})
		if ix.q != nil {
			if jj, ok := ix.Job(j.id); ok {
				ix.q.finish(jj)
			}
		}
		return false
	}
	msg := jobError(r.Err)
	outage := errors.Is(r.Err, embed.ErrUnavailable)
	if !outage {
		j.attempts++
	}
	closing := ix.closing
	if !permanent(r.Err) && j.attempts < ix.maxAttempts {
		// Try again later: after the embedder's own retry time during an
		// outage, else after a delay doubling with each attempt.
		delay := ix.retryDelay << min(max(j.attempts-1, 0), 16)
		if outage {
			delay = ix.retryDelay
			var ue *embed.UnavailableError
			if errors.As(r.Err, &ue) && ue.RetryAt.After(now) {
				delay = ue.RetryAt.Sub(now)
			}
		}
		delay = min(delay, maxRetryDelay)
		j.retryAt = now.Add(delay)
		ix.stats.retries.Add(1)
		ix.update(j.id, func(x *index.Job) {
			x.State, x.Error, x.Attempts, x.RetryAt = index.JobQueued, msg, j.attempts, j.retryAt
		})
		if ix.q != nil {
			ix.q.retry(index.Job{ID: j.id, Attempts: j.attempts, Error: msg})
		}
		if closing {
			if ix.q == nil {
				ix.log.Error("index: background indexing failed while closing; the page is lost (the queue is not durable)", "source", j.doc.SourceURL, "job", j.id, "err", r.Err)
			} else {
				ix.log.Warn("index: background indexing failed while closing; the next open tries again", "source", j.doc.SourceURL, "job", j.id, "err", r.Err)
			}
			return false
		}
		ix.log.Warn("index: background indexing failed; trying again later", "source", j.doc.SourceURL, "job", j.id, "attempts", j.attempts, "retryIn", delay.String(), "err", r.Err)
		ix.pushLocked(j)
		return false
	}
	if !permanent(r.Err) {
		msg = fmt.Sprintf("gave up after %d attempts: %s", j.attempts, msg)
	}
	ix.buryLocked(j, msg, now)
	return true
}

// jobError is what a job reports of its failure: the message of the
// index's own errors, which are written for people, or else what kind of
// failure it was, without the error's text (which may name files and
// servers; the log has it).
func jobError(err error) string {
	switch {
	case permanent(err):
		return strings.TrimPrefix(firstLine(err.Error()), "index: ")
	case errors.Is(err, embed.ErrUnavailable):
		return "the embedder is unavailable (" + embed.Reason(err) + "); the page waits and is indexed once it is back"
	case errors.Is(err, ErrEmbedding):
		return "the embedder failed (" + embed.Reason(err) + ")"
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return "the disk is full"
	case errors.Is(err, ErrClosed):
		return "the store was closed"
	}
	return "storing the page failed (the log has the details)"
}

// buryLocked moves a job to the dead letters. The caller holds qmu, and
// calls pruneDead after releasing it.
func (ix *Index) buryLocked(j *job, msg string, now time.Time) {
	ix.stats.failed.Add(1)
	ix.log.Error("index: background indexing failed; the page is kept in the dead letters (ragmem jobs list)", "source", j.doc.SourceURL, "job", j.id, "attempts", j.attempts, "err", msg)
	ix.update(j.id, func(x *index.Job) {
		x.State, x.Error, x.Attempts, x.Finished, x.RetryAt = index.JobDead, msg, j.attempts, now, time.Time{}
	})
	jj, _ := ix.Job(j.id)
	if ix.q != nil {
		if err := ix.q.bury(jj, &j.doc); err != nil {
			ix.log.Error("index: could not keep the page in the dead letters", "job", j.id, "err", err)
		}
	} else {
		ix.deadDocs[j.id] = &j.doc
	}
}

// pruneDead drops the oldest dead letters past maxDead.
func (ix *Index) pruneDead() {
	dead := ix.ListJobs(index.JobDead)
	for i := len(dead) - 1; i >= maxDead; i-- {
		if err := ix.DropJob(context.Background(), dead[i].ID); err == nil {
			ix.log.Warn("index: dropped the oldest dead letter", "job", dead[i].ID, "source", dead[i].SourceURL, "limit", maxDead)
		}
	}
}

// ioCause describes a failed write by its cause alone ("the disk is full",
// "input/output error"), without the file it concerns.
func ioCause(err error) string {
	var errno syscall.Errno
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return "the disk is full"
	case errors.As(err, &errno):
		return errno.Error()
	}
	return "the queue could not be written (the server's log has the details)"
}
