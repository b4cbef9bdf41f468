package server

import (
	"context"
	"sync"
)

// fairSlots shares n slots of CPU-bound work (HTML extraction) among
// namespaces, so that one namespace's slow or hostile pages cannot stall the
// others: a namespace holds at most perNS slots (n−1 when n > 1, so one slot
// is always left for the others), and a freed slot goes to the waiting
// namespace that holds the fewest, the one waiting longest among equals.
// It is safe for concurrent use.
type fairSlots struct {
	n, perNS int

	mu      sync.Mutex
	free    int
	held    map[string]int
	waiting map[string][]*waiter // per namespace, first come first served
	order   []string             // namespaces with waiters, oldest first
}

type waiter struct {
	ready   chan struct{}
	granted bool
}

func newFairSlots(n int) *fairSlots {
	per := n
	if n > 1 {
		per = n - 1
	}
	return &fairSlots{n: n, perNS: per, free: n, held: map[string]int{}, waiting: map[string][]*waiter{}}
}

// acquire takes a slot for namespace ns, waiting as long as ctx allows; the
// release function gives it back.
func (f *fairSlots) acquire(ctx context.Context, ns string) (func(), error) {
	f.mu.Lock()
	if f.free > 0 && f.held[ns] < f.perNS && len(f.order) == 0 {
		f.take(ns)
		f.mu.Unlock()
		return f.releaser(ns), nil
	}
	w := &waiter{ready: make(chan struct{})}
	if len(f.waiting[ns]) == 0 {
		f.order = append(f.order, ns)
	}
	f.waiting[ns] = append(f.waiting[ns], w)
	f.dispatch()
	f.mu.Unlock()
	select {
	case <-w.ready:
		return f.releaser(ns), nil
	case <-ctx.Done():
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if w.granted { // granted as the context ended: give it back
		f.give(ns)
		return nil, ctx.Err()
	}
	ws := f.waiting[ns]
	for i, x := range ws {
		if x == w {
			f.waiting[ns] = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(f.waiting[ns]) == 0 {
		f.dropOrder(ns)
	}
	return nil, ctx.Err()
}

func (f *fairSlots) releaser(ns string) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			f.give(ns)
			f.mu.Unlock()
		})
	}
}

func (f *fairSlots) take(ns string) {
	f.free--
	f.held[ns]++
}

func (f *fairSlots) give(ns string) {
	f.free++
	if f.held[ns]--; f.held[ns] <= 0 {
		delete(f.held, ns)
	}
	f.dispatch()
}

// dispatch hands free slots to waiters: the namespace holding the fewest
// slots first, the longest waiting among equals.
func (f *fairSlots) dispatch() {
	for f.free > 0 {
		best := -1
		for i, ns := range f.order {
			if f.held[ns] >= f.perNS {
				continue
			}
			if best < 0 || f.held[ns] < f.held[f.order[best]] {
				best = i
			}
		}
		if best < 0 {
			return
		}
		ns := f.order[best]
		w := f.waiting[ns][0]
		f.waiting[ns] = f.waiting[ns][1:]
		if len(f.waiting[ns]) == 0 {
			delete(f.waiting, ns)
			f.order = append(f.order[:best], f.order[best+1:]...)
		} else {
			// Round robin: the namespace goes to the back of the line.
			f.order = append(append(f.order[:best], f.order[best+1:]...), ns)
		}
		f.take(ns)
		w.granted = true
		close(w.ready)
	}
}

func (f *fairSlots) dropOrder(ns string) {
	delete(f.waiting, ns)
	for i, x := range f.order {
		if x == ns {
			f.order = append(f.order[:i], f.order[i+1:]...)
			return
		}
	}
}

// busy returns the slots in use.
func (f *fairSlots) busy() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n - f.free
}
