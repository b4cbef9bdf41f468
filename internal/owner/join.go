package owner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ragmem/ragmem/internal/perm"
)

// defaultJoinWait is how long Join waits, by default, for an owner that
// holds the lock but does not answer yet: opening a large store, or a
// slow embedder's first call, takes that long at worst.
const defaultJoinWait = 2 * time.Minute

// JoinOptions configure Join. A nil *JoinOptions means all defaults.
type JoinOptions struct {
	// Wait bounds how long Join waits for an owner that holds the lock
	// but does not answer on its socket yet. Default 2 min.
	Wait time.Duration
	// Waiting, if set, is called once when Join starts waiting, with the
	// pid of the process holding the lock (0 when unknown).
	Waiting func(pid int)
	// NoClaim makes Join only look for an owner: it returns ErrNoOwner
	// at once, without taking the lock or waiting, when none answers.
	NoClaim bool
	// ClaimAfter keeps Join from taking the lock during its first
	// ClaimAfter: after a handover, the process the owner handed over to
	// gets it first. Default 0.
	ClaimAfter time.Duration
	// Successor is the caller's reservation of dir's succession (see
	// Reserve): Join takes the lock in spite of it. Without it, Join does
	// not take the lock while another process holds the reservation; it
	// waits for that process to answer. Default nil.
	Successor *Reservation
}

// Join finds the process that owns dir or makes this process the owner.
// When an owner answers on its socket, Join returns its Info (and a nil
// Claim): this process is its client. When the lock is free, Join takes it
// and returns the Claim: this process is the owner (whatever owner file
// and socket a dead owner left are stale, and Claim.Listen removes them).
// When another process holds the lock without answering (it is opening
// the store), or has reserved the succession (it is taking the store
// over), Join waits for it, up to Options.Wait.
func Join(ctx context.Context, dir string, opts *JoinOptions) (Info, *Claim, error) {
	var o JoinOptions
	if opts != nil {
		o = *opts
	}
	if o.Wait <= 0 {
		o.Wait = defaultJoinWait
	}
	if _, err := os.Stat(dir); err == nil {
		// The owner file names the socket this process would talk to:
		// read only from a directory that is the user's (internal/perm).
		if _, err := perm.Dir(dir); err != nil {
			return Info{}, nil, fmt.Errorf("owner: the data directory: %w", err)
		}
	}
	start := time.Now()
	deadline := start.Add(o.Wait + o.ClaimAfter)
	delay := 5 * time.Millisecond
	waiting := false
	for {
		in, err := ReadInfo(dir)
		if err == nil {
			c, derr := dial(ctx, in.Socket)
			if derr == nil {
				_ = c.Close()
				return in, nil, nil
			}
			if errors.Is(derr, ErrForeignPeer) || errors.Is(derr, ErrUnsupported) {
				return Info{}, nil, derr
			}
		} else if !errors.Is(err, ErrNoOwner) && o.NoClaim {
			return Info{}, nil, err
		}
		if o.NoClaim {
			return Info{}, nil, ErrNoOwner
		}
		successor, reserved := 0, false
		if o.Successor == nil {
			successor, reserved = reservedBy(dir)
		}
		if !reserved && time.Since(start) >= o.ClaimAfter {
			cl, cerr := TryClaim(dir)
			if cerr == nil {
				// A process that reserved the succession between the
				// check and the claim gets the store: it may already be
				// waiting for the lock.
				if o.Successor == nil {
					successor, reserved = reservedBy(dir)
				}
				if !reserved {
					return Info{}, cl, nil
				}
				_ = cl.Release()
			} else if !errors.Is(cerr, ErrOwned) {
				return Info{}, nil, cerr
			}
		}
		if time.Now().After(deadline) {
			if reserved {
				return Info{}, nil, fmt.Errorf("%w: pid %d is taking %s over but has not answered on its socket for %s (see ragmem status)",
					ErrOwned, successor, dir, o.Wait)
			}
			return Info{}, nil, fmt.Errorf("%w: pid %d holds %s but has not answered on its socket for %s (it may still be opening the store; see ragmem status)",
				ErrOwned, LockHolder(dir), dir, o.Wait)
		}
		if !waiting {
			waiting = true
			if o.Waiting != nil {
				pid := LockHolder(dir)
				if reserved {
					pid = successor
				}
				o.Waiting(pid)
			}
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return Info{}, nil, ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, 100*time.Millisecond)
	}
}
