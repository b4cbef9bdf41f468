package owner_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragmem/ragmem/internal/owner"
)

// TestReservationDefersClaims: while a process holds the reservation of a
// data directory's succession, Join elsewhere neither takes the free lock
// nor returns before that process answers; the reserving process's own
// Join takes it; a second reservation is refused, naming the holder.
func TestReservationDefersClaims(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	res, err := owner.Reserve(ctx, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()

	start := time.Now()
	_, err = owner.Reserve(ctx, dir, 0)
	if !errors.Is(err, owner.ErrReserved) || !strings.Contains(err.Error(), fmt.Sprint(os.Getpid())) {
		t.Fatalf("second reservation: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the second reservation took %s to fail", d)
	}

	_, cl, err := owner.Join(ctx, dir, &owner.JoinOptions{Wait: 300 * time.Millisecond})
	if cl != nil || !errors.Is(err, owner.ErrOwned) || !strings.Contains(err.Error(), "is taking") {
		t.Fatalf("Join while reserved: claim %v, err %v", cl != nil, err)
	}
	if held, known := owner.LockHeld(dir); known && held {
		t.Fatal("Join left the owner lock taken")
	}

	// A Join that waits returns the reserving process once it answers.
	joined := make(chan owner.Info, 1)
	go func() {
		in, cl, err := owner.Join(ctx, dir, &owner.JoinOptions{Wait: 20 * time.Second})
		if err != nil || cl != nil {
			t.Errorf("waiting Join: claim %v, err %v", cl != nil, err)
			cl.Release()
		}
		joined <- in
	}()
	time.Sleep(100 * time.Millisecond)
	_, own, err := owner.Join(ctx, dir, &owner.JoinOptions{Successor: res})
	if err != nil || own == nil {
		t.Fatalf("the successor's Join: %v", err)
	}
	defer own.Release()
	ln, err := own.Listen(owner.Info{Kind: owner.KindServe})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go acceptAll(ln)
	select {
	case in := <-joined:
		if in.PID != os.Getpid() || in.Kind != owner.KindServe {
			t.Errorf("the waiting Join found %+v", in)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting Join did not find the successor")
	}

	// Released, the succession is free: the next process may claim.
	if err := res.Release(); err != nil {
		t.Fatal(err)
	}
	if err := res.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	own.Release()
	_, cl, err = owner.Join(ctx, dir, &owner.JoinOptions{Wait: time.Second})
	if err != nil || cl == nil {
		t.Fatalf("Join after the reservation ended: %v", err)
	}
	cl.Release()
	res2, err := owner.Reserve(ctx, dir, 0)
	if err != nil {
		t.Fatalf("Reserve after Release: %v", err)
	}
	res2.Release()
}

func acceptAll(ln *owner.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_ = c.Close()
	}
}

// TestSuccessionConverges: commands claim a data directory one after
// another in tight loops, each owning it a few milliseconds and letting
// go early when asked to hand over (as `ragmem index` does). A successor
// that reserves the succession, then asks each owner it finds to hand
// over, owns the directory after at most one handover, in every try,
// while the loops go on (as its clients once it answers).
func TestSuccessionConverges(t *testing.T) {
	tries := 10
	if testing.Short() {
		tries = 3
	}
	for try := range tries {
		asked, took := succession(t, 3)
		t.Logf("try %d: owned after %d handovers in %s", try, asked, took.Round(time.Millisecond))
		if asked > 1 || took > 5*time.Second {
			t.Errorf("try %d: the successor needed %d handovers and %s", try, asked, took)
		}
	}
}

// succession runs loops command loops on a new directory and a successor
// beside them; it returns how many handovers the successor asked for and
// how long it took to own the directory.
func succession(t *testing.T, loops int) (asked int, took time.Duration) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg       sync.WaitGroup
		handover atomic.Bool // the successor asked the current owner to hand over
		claims   atomic.Int64
		clients  atomic.Int64
	)
	for range loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_, cl, err := owner.Join(ctx, dir, &owner.JoinOptions{Wait: 20 * time.Second})
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("a command's Join: %v", err)
					}
					return
				}
				if cl == nil { // a client: one request
					clients.Add(1)
					time.Sleep(2 * time.Millisecond)
					continue
				}
				claims.Add(1)
				ln, err := cl.Listen(owner.Info{Kind: owner.KindCLI, Command: fmt.Sprint("command ", claims.Load())})
				if err != nil {
					t.Errorf("Listen: %v", err)
					cl.Release()
					return
				}
				go acceptAll(ln)
				for end := time.Now().Add(15 * time.Millisecond); time.Now().Before(end) && !handover.Load(); {
					time.Sleep(time.Millisecond)
				}
				handover.Store(false)
				cl.Release()
				ln.Close()
			}
		}()
	}
	defer func() {
		cancel()
		wg.Wait()
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	res, err := owner.Reserve(ctx, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	last := ""
	for {
		in, cl, err := owner.Join(ctx, dir, &owner.JoinOptions{Successor: res, Wait: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if cl != nil {
			took = time.Since(start)
			ln, err := cl.Listen(owner.Info{Kind: owner.KindServe})
			if err != nil {
				t.Fatal(err)
			}
			go acceptAll(ln)
			_ = res.Release()
			// The loops go on as its clients.
			before := clients.Load()
			for deadline := time.Now().Add(5 * time.Second); clients.Load() < before+10; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Errorf("the commands did not join the successor (%d claims)", claims.Load())
					break
				}
			}
			cancel()
			wg.Wait()
			cl.Release()
			ln.Close()
			return asked, took
		}
		if asked > 20 || time.Since(start) > 30*time.Second {
			t.Fatalf("no ownership after %d handovers in %s", asked, time.Since(start))
		}
		if in.Command == last { // still handing over
			time.Sleep(time.Millisecond)
			continue
		}
		last = in.Command
		handover.Store(true)
		asked++
	}
}
