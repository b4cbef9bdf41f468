package memory

import (
	"context"
	"path/filepath"
	"sync"

	"github.com/ragmem/ragmem/internal/index/engine"
)

// Stores keeps one open Store per memory directory, for servers that serve
// several directories (one per namespace) over indexes that may be closed
// and reopened: a directory whose index changed is opened again over the
// new one. It is safe for concurrent use.
type Stores struct {
	opts Options
	max  int

	mu    sync.Mutex
	open  map[string]*Store
	order []string // directories, least recently opened first
}

// NewStores returns an empty set. opts (nil for the defaults) is used for
// every Store, with Index set per call; at most 64 stores are kept.
func NewStores(opts *Options) *Stores {
	var o Options
	if opts != nil {
		o = *opts
	}
	return &Stores{opts: o, max: 64, open: map[string]*Store{}}
}

// Get returns the Store of dir over ix (nil: no index), opening it on first
// use or when its index is no longer ix.
func (ss *Stores) Get(ctx context.Context, dir string, ix *engine.Index) (*Store, error) {
	key, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s, ok := ss.open[key]; ok && s.ix == ix {
		return s, nil
	}
	o := ss.opts
	o.Index = ix
	s, err := Open(ctx, dir, &o)
	if err != nil {
		return nil, err
	}
	if _, ok := ss.open[key]; !ok {
		ss.order = append(ss.order, key)
	}
	ss.open[key] = s
	for len(ss.order) > ss.max {
		delete(ss.open, ss.order[0])
		ss.order = ss.order[1:]
	}
	return s, nil
}
