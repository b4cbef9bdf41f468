package interrupt

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
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
		var stderr bytes.Buffer
		var mu sync.Mutex
		exited := make(chan int, 1)
		ctx, stop := Notify(context.Background(), &lockedWriter{mu: &mu, w: &stderr}, func(code int) { exited <- code })
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
			mu.Lock()
			msg := stderr.String()
			mu.Unlock()
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

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
