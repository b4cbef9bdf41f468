package interrupt

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInterruptible: the first signal cancels the command's context; a
// command that does not return within the grace is ended, as it is at a
// second signal.
func TestInterruptible(t *testing.T) {
	old := time.Duration(grace.Load())
	defer SetGrace(old)
	SetGrace(300 * time.Millisecond)
	for _, twice := range []bool{false, true} {
		// Notify writes to stderr only just before it calls exit, whose
		// send on exited orders that write before the test reads it.
		var stderr bytes.Buffer
		exited := make(chan int, 1)
		ctx, stop := Notify(context.Background(), &stderr, func(code int) { exited <- code })
		if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("SIGTERM did not cancel the context")
		}
		if !errors.Is(context.Cause(ctx), ErrInterrupted) || Caught(ctx) == nil || Caught(ctx).Name != "SIGTERM" {
			t.Errorf("cause %v, signal %+v", context.Cause(ctx), Caught(ctx))
		}
		start := time.Now()
		if twice {
			if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case code := <-exited:
			took := time.Since(start)
			msg := stderr.String()
			if code != 143 {
				t.Errorf("exit %d", code)
			}
			if twice && (took > 200*time.Millisecond || !strings.Contains(msg, "interrupted again (SIGINT); exiting now")) {
				t.Errorf("second signal: exit after %s: %q", took, msg)
			}
			if !twice && (took < 250*time.Millisecond || !strings.Contains(msg, "interrupted (SIGTERM); not stopped after 300ms, exiting now")) {
				t.Errorf("grace: exit after %s: %q", took, msg)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no exit after the grace")
		}
		stop()
	}
}
