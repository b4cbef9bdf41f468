package main

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

// Ctrl-C (SIGINT) and SIGTERM stop any command within interruptGrace:
// the first cancels the command's context (a document being read in its
// own process is killed with it, loops check the context between files
// and batches, and writes already acknowledged are on disk); if the
// command has not returned when the grace is up, or at a second signal,
// the process exits at once. Exiting then loses nothing acknowledged: the
// store is built to survive kill -9 (docs/durability.md).

// defaultInterruptGrace is how long an interrupted command may take to
// stop on its own, from the signal to the exit.
const defaultInterruptGrace = 1800 * time.Millisecond

// interruptGrace is the grace of the command running; serve lengthens it
// to its --shutdown-timeout (and a second), the drain it promises.
var interruptGrace atomic.Int64

func init() { interruptGrace.Store(int64(defaultInterruptGrace)) }

// setInterruptGrace sets how long an interrupted command may take to stop.
func setInterruptGrace(d time.Duration) { interruptGrace.Store(int64(d)) }

// caughtSignal is the signal that interrupted the process.
type caughtSignal struct {
	name   string
	number int
}

type signalKey struct{}

// interruptible returns a context that is cancelled at the first SIGINT or
// SIGTERM, after which exit is called with 128 + the signal's number when
// the grace is up or at a second signal. stop releases the signals.
func interruptible(parent context.Context, stderr io.Writer, exit func(int)) (context.Context, func()) {
	caught := new(atomic.Pointer[caughtSignal])
	ctx, cancel := context.WithCancelCause(context.WithValue(parent, signalKey{}, caught))
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		var first *caughtSignal
		var deadline <-chan time.Time
		for {
			select {
			case <-done:
				return
			case s := <-ch:
				cs := describe(s)
				if first != nil {
					fmt.Fprintf(stderr, "ragmem: interrupted again (%s); exiting now\n", cs.name)
					exit(128 + first.number)
					return
				}
				first = cs
				caught.Store(cs)
				cancel(fmt.Errorf("%w (%s)", errInterrupted, cs.name))
				deadline = time.After(time.Duration(interruptGrace.Load()))
			case <-deadline:
				fmt.Fprintf(stderr, "ragmem: interrupted (%s); not stopped after %s, exiting now\n", first.name, time.Duration(interruptGrace.Load()).Round(100*time.Millisecond))
				exit(128 + first.number)
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

// errInterrupted is the cause of an interrupted command's context.
var errInterrupted = errors.New("interrupted")

// interrupted returns the signal that interrupted ctx's command, or nil.
func interrupted(ctx context.Context) *caughtSignal {
	if p, ok := ctx.Value(signalKey{}).(*atomic.Pointer[caughtSignal]); ok {
		return p.Load()
	}
	return nil
}

func describe(s os.Signal) *caughtSignal {
	switch s {
	case os.Interrupt:
		return &caughtSignal{name: "SIGINT", number: 2}
	case syscall.SIGTERM:
		return &caughtSignal{name: "SIGTERM", number: 15}
	}
	return &caughtSignal{name: s.String(), number: 1}
}
