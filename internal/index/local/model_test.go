package local

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/index/indextest"
)

// The tests' model of a store: every source holds exactly one version n of
// itself, 1+n%4 chunks whose ids, text and vectors derive from (source, n),
// all carrying content hash "v<n>". A store state is a map source → version.

type state map[string]int

func (s state) clone() state {
	c := make(state, len(s))
	for k, v := range s {
		c[k] = v
	}
	return c
}

func (s state) String() string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=v%d ", k, s[k])
	}
	return strings.TrimSpace(b.String())
}

func chunkCount(v int) int { return 1 + v%4 }

func seedOf(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// versionRecords are the chunks of version v of src.
func versionRecords(src string, v int) []index.Record {
	n := chunkCount(v)
	out := make([]index.Record, n)
	for p := 0; p < n; p++ {
		seed := seedOf(src, strconv.Itoa(v), strconv.Itoa(p))
		text := fmt.Sprintf("version %d of %s, chunk %d: durable searchable words w%d w%d", v, src, p, seed%97, seed%89)
		r := indextest.Rec(src, p, text, seed)
		r.ID = fmt.Sprintf("%016x", seed)
		r.ContentHash = "v" + strconv.Itoa(v)
		out[p] = r
	}
	return out
}

// putVersion is the batch that makes src hold version v.
func putVersion(src string, v int) *driver.Batch {
	return &driver.Batch{DeleteSources: []string{src}, Put: versionRecords(src, v)}
}

func removeSource(src string) *driver.Batch { return &driver.Batch{DeleteSources: []string{src}} }

// readState reads a store back into a state, failing on anything the model
// cannot produce: a source mixing versions, missing or extra chunks, or a
// chunk whose fields differ from what its version says.
func readState(ctx context.Context, b driver.Backend) (state, error) {
	recs, err := b.Records(ctx, index.Filter{})
	if err != nil {
		return nil, err
	}
	bySrc := map[string][]index.Record{}
	for _, r := range recs {
		bySrc[r.SourceURL] = append(bySrc[r.SourceURL], r)
	}
	st := state{}
	for src, rs := range bySrc {
		v, err := strconv.Atoi(strings.TrimPrefix(rs[0].ContentHash, "v"))
		if err != nil {
			return nil, fmt.Errorf("source %s: unexpected content hash %q", src, rs[0].ContentHash)
		}
		want := versionRecords(src, v)
		if len(rs) != len(want) {
			return nil, fmt.Errorf("source %s: %d chunks, version %d has %d (mixed or partial)", src, len(rs), v, len(want))
		}
		sort.Slice(rs, func(i, j int) bool { return rs[i].Position < rs[j].Position })
		for i := range rs {
			g, w := rs[i], want[i]
			if g.ID != w.ID || g.Content != w.Content || g.ContentHash != w.ContentHash || g.Position != w.Position || !sameDirection(w.Vector, g.Vector) {
				return nil, fmt.Errorf("source %s: chunk %d is not version %d's (id %s, hash %s)", src, i, v, g.ID, g.ContentHash)
			}
		}
		st[src] = v
	}
	return st, nil
}

// expectState fails unless b holds exactly want and Check finds nothing.
func expectState(t *testing.T, b *Backend, want state) {
	t.Helper()
	got, err := readState(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Fatalf("store holds  %v\nwant         %v", got, want)
	}
	probs, err := b.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) > 0 {
		t.Fatalf("check found %d problems: %v", len(probs), probs)
	}
}

// sameDirection reports whether got is want normalised (the store keeps
// unit vectors).
func sameDirection(got, want []float32) bool {
	if len(got) != len(want) {
		return false
	}
	var norm float64
	for _, x := range want {
		norm += float64(x) * float64(x)
	}
	norm = math.Sqrt(norm)
	if norm == 0 {
		return false
	}
	for i := range got {
		if math.Abs(float64(got[i])-float64(want[i])/norm) > 1e-5 {
			return false
		}
	}
	return true
}
