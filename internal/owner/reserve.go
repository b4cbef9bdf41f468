package owner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/ragmem/ragmem/internal/wal"
)

// nextFile is the succession lock: held by a process that is taking the
// data directory over (a starting `ragmem serve`, or the background owner
// of `ragmem mcp`), from before it asks the owner to hand over until it
// answers on the socket itself.
const nextFile = "owner.next"

func nextPath(dir string) string { return filepath.Join(dir, nextFile) }

// ErrReserved: another process has reserved the succession of the data
// directory (it is taking it over).
var ErrReserved = errors.New("owner: another process is taking the data directory over")

// minReserveWait is how long Reserve retries at least: processes that
// check the reservation hold the succession lock shared for a few
// microseconds, which a single try could meet.
const minReserveWait = 250 * time.Millisecond

// Reservation is the succession of a data directory, reserved by the
// process that will own it next. While it is held, Join in every other
// process neither takes the owner lock nor hands the store to anyone else:
// it joins the current owner while that answers, and then waits for the
// reserving process to answer (or for the reservation to end: the kernel
// releases it when the process dies). So a store that commands keep
// opening and closing in a loop converges on the process that reserved
// it. Release it once the process answers on the owner socket. It is safe
// for concurrent use.
type Reservation struct {
	mu   sync.Mutex
	lock *wal.Lock
}

// Reserve reserves the succession of dir (which must exist) for this
// process. When another process holds the reservation it waits
// for it up to wait (at least 250 ms), or until ctx ends, then fails with
// an error wrapping ErrReserved that names that process.
func Reserve(ctx context.Context, dir string, wait time.Duration) (*Reservation, error) {
	wait = max(wait, minReserveWait)
	deadline := time.Now().Add(wait)
	delay := time.Millisecond
	for {
		l, err := wal.TryLock(nextPath(dir))
		if err == nil {
			return &Reservation{lock: l}, nil
		}
		var le *wal.LockedError
		if !errors.As(err, &le) {
			return nil, fmt.Errorf("owner: reserve the succession: %w", err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w (pid %s)", ErrReserved, le.PID)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// Release ends the reservation. It is safe to call more than once, and on
// a nil *Reservation.
func (r *Reservation) Release() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.lock.Unlock()
	r.lock = nil
	return err
}
