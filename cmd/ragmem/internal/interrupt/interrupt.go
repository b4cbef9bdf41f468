// Package interrupt is how a ragmem command stops on Ctrl-C (SIGINT) or
// SIGTERM.
package interrupt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

// Ctrl-C (SIGINT) and SIGTERM stop any command within the grace:
// the first cancels the command's context (a document being read in its
// own process is killed with it, loops check the context between files
// and batches, and writes already acknowledged are on disk); if the
// command has not returned when the grace is up, or at a second signal,
// the process exits at once. Exiting then loses nothing acknowledged: the
// store is built to survive kill -9 (docs/durability.md).

// defaultGrace is how long an interrupted command may take to
// stop on its own, from the signal to the exit.
const defaultGrace = 1800 * time.Millisecond

// grace is the grace of the command running; serve lengthens it
// to its --shutdown-timeout (and a second), the drain it promises.
var grace atomic.Int64

func init() { grace.Store(int64(defaultGrace)) }

// SetGrace sets how long an interrupted command may take to stop.
func SetGrace(d time.Duration) { grace.Store(int64(d)) }

// Signal is the signal that interrupted the process.
type Signal struct {
	Name   string
	Number int
}

type signalKey struct{}

// Notify returns a context that is cancelled at the first SIGINT or
// SIGTERM, after which exit is called with 128 + the signal's number when
// the grace is up or at a second signal. stop releases the signals.
func Notify(parent context.Context, stderr io.Writer, exit func(int)) (context.Context, func()) {
	caught := new(atomic.Pointer[Signal])
	ctx, cancel := context.WithCancelCause(context.WithValue(parent, signalKey{}, caught))
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		var first *Signal
		var deadline <-chan time.Time
		for {
			select {
			case <-done:
				return
			case s := <-ch:
				cs := describe(s)
				if first != nil {
					fmt.Fprintf(stderr, "ragmem: interrupted again (%s); exiting now\n", cs.Name)
					exit(128 + first.Number)
					return
				}
				first = cs
				caught.Store(cs)
				cancel(fmt.Errorf("%w (%s)", ErrInterrupted, cs.Name))
				deadline = time.After(time.Duration(grace.Load()))
			case <-deadline:
				fmt.Fprintf(stderr, "ragmem: interrupted (%s); not stopped after %s, exiting now\n", first.Name, time.Duration(grace.Load()).Round(100*time.Millisecond))
				exit(128 + first.Number)
				return
			}
		}
	}()
	var once atomic.Bool
	return ctx, func() {
		if once.CompareAndSwap(false, true) {
			signal.Stop(ch)
			close(done)
			cancel(nil)
		}
	}
}

// ErrInterrupted is the cause of an interrupted command's context.
var ErrInterrupted = errors.New("interrupted")

// Caught returns the signal that interrupted ctx's command, or nil.
func Caught(ctx context.Context) *Signal {
	if p, ok := ctx.Value(signalKey{}).(*atomic.Pointer[Signal]); ok {
		return p.Load()
	}
	return nil
}

func describe(s os.Signal) *Signal {
	switch s {
	case os.Interrupt:
		return &Signal{Name: "SIGINT", Number: 2}
	case syscall.SIGTERM:
		return &Signal{Name: "SIGTERM", Number: 15}
	}
	return &Signal{Name: s.String(), Number: 1}
}
