package ownerd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/ragmem/ragmem/internal/owner"
)

// ErrOwnerRunning: a background owner found the data directory owned.
var ErrOwnerRunning = errors.New("the data directory has an owner")

// maxHandovers bounds how often serve asks owners to hand over before it
// gives up (another process keeps taking the store back: with the
// succession reserved only a ragmem that does not know reservations does).
const maxHandovers = 3

// handoverWait bounds how long `ragmem serve` waits for an owner that
// agreed to hand over to let go (it finishes the requests in flight
// first).
const handoverWait = 2 * time.Minute

// reserveWait bounds how long `ragmem serve` waits for another process
// that is taking the data directory over (a background owner starting)
// before it asks that one to hand over in turn.
const reserveWait = 2 * time.Minute

// claimForServe takes the ownership of dir for `ragmem serve`: at once when
// no process owns it; from a background owner or a ragmem command that
// owns it, by asking it to hand over (it finishes what it is doing and
// lets go; its clients follow). Another `ragmem serve` is an error. A
// background owner (kind daemon) takes the store over from a ragmem
// command the same way, and returns ErrOwnerRunning when it finds a
// serve, another background owner, or another process taking the store
// over: it is not needed.
//
// It first reserves the succession (see owner.Reserve), so that commands
// started meanwhile, in a loop or not, join the owner and then this
// process instead of taking the store back; the caller releases the
// reservation once it answers on the owner socket.
func claimForServe(ctx context.Context, stderr io.Writer, dir string, kind owner.Kind) (*owner.Claim, *owner.Reservation, error) {
	res, err := owner.Reserve(ctx, dir, 0)
	if errors.Is(err, owner.ErrReserved) {
		if kind == owner.KindDaemon {
			return nil, nil, ErrOwnerRunning
		}
		fmt.Fprintf(stderr, "ragmem: waiting for another process that is taking %s over (%v)\n", dir, err)
		res, err = owner.Reserve(ctx, dir, reserveWait)
	}
	if err != nil {
		return nil, nil, err
	}
	claim, err := claimReserved(ctx, stderr, dir, kind, res)
	if err != nil {
		_ = res.Release()
		return nil, nil, err
	}
	return claim, res, nil
}

// claimReserved is claimForServe once the succession is reserved.
func claimReserved(ctx context.Context, stderr io.Writer, dir string, kind owner.Kind, res *owner.Reservation) (*owner.Claim, error) {
	asked := 0
	var (
		leaving    owner.Info // the owner last asked to hand over
		leavingEnd time.Time  // when to give up waiting for it
	)
	for {
		info, claim, err := owner.Join(ctx, dir, &owner.JoinOptions{Successor: res, Waiting: func(pid int) {
			if kind == owner.KindServe && asked == 0 {
				fmt.Fprintf(stderr, "ragmem: waiting for pid %d, which is opening the store in %s\n", pid, dir)
			}
		}})
		if err != nil {
			return nil, err
		}
		if claim != nil {
			return claim, nil
		}
		if info.Kind == owner.KindServe {
			if kind == owner.KindDaemon {
				return nil, ErrOwnerRunning
			}
			return nil, fmt.Errorf("%s is already served by pid %d (ragmem serve since %s%s); stop it first, or use it: every ragmem command on this directory goes through it",
				dir, info.PID, info.Since.Local().Format(time.RFC3339), httpSuffix(info.HTTP))
		}
		if kind == owner.KindDaemon && info.Kind != owner.KindCLI {
			return nil, ErrOwnerRunning
		}
		if asked > 0 && info.PID == leaving.PID && info.Since.Equal(leaving.Since) {
			// It is still finishing what it was doing before it lets go:
			// asking again would only count it twice.
			if time.Now().After(leavingEnd) {
				return nil, fmt.Errorf("%s: pid %d (%s) agreed to hand the store over but still holds it after %s; stop it first", dir, info.PID, DescribeKind(info.Kind, info.Command), handoverWait)
			}
			t := time.NewTimer(20 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
			continue
		}
		if asked >= maxHandovers {
			return nil, fmt.Errorf("%s: pid %d (%s) took the store back after %d handovers; stop it first", dir, info.PID, DescribeKind(info.Kind, info.Command), asked)
		}
		c, err := owner.NewClient(dir, info, nil)
		if err != nil {
			return nil, err
		}
		err = c.Handover(ctx)
		c.Close()
		if err != nil {
			if errors.Is(err, owner.ErrGone) {
				continue // it went away by itself: look again
			}
			return nil, fmt.Errorf("asking pid %d (%s) to hand %s over: %w", info.PID, DescribeKind(info.Kind, info.Command), dir, err)
		}
		asked++
		leaving, leavingEnd = info, time.Now().Add(handoverWait)
		to := "this server"
		if kind == owner.KindDaemon {
			to = "this background owner"
		}
		fmt.Fprintf(stderr, "ragmem: pid %d (%s) is handing %s over to %s; its clients follow\n", info.PID, DescribeKind(info.Kind, info.Command), dir, to)
	}
}

func httpSuffix(u string) string {
	if u == "" {
		return ""
	}
	return ", on " + u
}

// displayAddr is a listener's address as a client dials it.
func displayAddr(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	host := ta.IP.String()
	if ta.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, strconv.Itoa(ta.Port))
}
