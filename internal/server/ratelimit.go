package server

import (
	"math"
	"sort"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// limiters holds one token bucket per client key. Idle buckets are dropped
// once there are many, so the map stays bounded. It is safe for concurrent use.
type limiters struct {
	rate  rate.Limit
	burst int

	mu      sync.Mutex
	m       map[string]*bucket
	maxKeys int
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

// newLimiters returns nil (no limiting) when perSecond <= 0.
func newLimiters(perSecond float64, burst int) *limiters {
	if perSecond <= 0 {
		return nil
	}
	if burst < 1 {
		burst = 1
	}
	return &limiters{rate: rate.Limit(perSecond), burst: burst, m: map[string]*bucket{}, maxKeys: 10000}
}

// allow takes one token from key's bucket. When the bucket is empty it
// returns false and how long until a token is available.
func (l *limiters) allow(key string, now time.Time) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	l.mu.Lock()
	b, ok := l.m[key]
	if !ok {
		if len(l.m) >= l.maxKeys {
			l.gcLocked(now)
		}
		b = &bucket{lim: rate.NewLimiter(l.rate, l.burst)}
		l.m[key] = b
	}
	b.seen = now
	l.mu.Unlock()
	r := b.lim.ReserveN(now, 1)
	if !r.OK() {
		return false, time.Second
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// gcLocked drops buckets that have been idle long enough to be full again;
// if that frees nothing, the oldest half goes.
func (l *limiters) gcLocked(now time.Time) {
	full := time.Duration(math.Ceil(float64(l.burst)/float64(l.rate))) * time.Second
	for k, b := range l.m {
		if now.Sub(b.seen) > full {
			delete(l.m, k)
		}
	}
	if len(l.m) < l.maxKeys {
		return
	}
	times := make([]time.Time, 0, len(l.m))
	for _, b := range l.m {
		times = append(times, b.seen)
	}
	cutoff := median(times)
	for k, b := range l.m {
		if !b.seen.After(cutoff) {
			delete(l.m, k)
		}
	}
}

func median(ts []time.Time) time.Time {
	sorted := append([]time.Time(nil), ts...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Before(sorted[j]) })
	return sorted[len(sorted)/2]
}
