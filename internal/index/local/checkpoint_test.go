package local

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/index/indextest"
)

// ckptLog records the sizes of the snapshots that checkpoints write.
type ckptLog struct {
	mu    sync.Mutex
	sizes []int64
}

func (c *ckptLog) Enabled(context.Context, slog.Level) bool { return true }
func (c *ckptLog) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *ckptLog) WithGroup(string) slog.Handler            { return c }
func (c *ckptLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "index: checkpoint" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "bytes" {
			c.mu.Lock()
			c.sizes = append(c.sizes, a.Value.Int64())
			c.mu.Unlock()
		}
		return true
	})
	return nil
}

// TestCheckpointsGrowWithTheStore fills a store in small batches with a
// tiny CheckpointBytes. With the default CheckpointRatio the snapshots
// written add up to a small multiple of the final one; with a fixed
// threshold every few batches rewrite the whole store, and the total grows
// with the square of its size.
func TestCheckpointsGrowWithTheStore(t *testing.T) {
	run := func(ratio float64) (total, last int64, n int) {
		log := &ckptLog{}
		b := mustOpen(t, t.TempDir(), &Options{Logger: slog.New(log), CheckpointBytes: 8 << 10, CheckpointRatio: ratio})
		defer b.Close()
		body := strings.Repeat("lorem ipsum dolor sit amet ", 20)
		for i := 0; i < 150; i++ {
			var put []index.Record
			for j := 0; j < 4; j++ {
				put = append(put, indextest.Rec(fmt.Sprintf("https://s%d.example/", i), j, body, uint64(4*i+j+1)))
			}
			if err := b.Apply(context.Background(), &driver.Batch{Put: put}); err != nil {
				t.Fatal(err)
			}
		}
		log.mu.Lock()
		defer log.mu.Unlock()
		for _, s := range log.sizes {
			if s <= 0 {
				t.Fatalf("checkpoint logged size %d", s)
			}
			total += s
		}
		if len(log.sizes) == 0 {
			t.Fatalf("ratio %v: no checkpoint", ratio)
		}
		return total, log.sizes[len(log.sizes)-1], len(log.sizes)
	}
	total, last, n := run(0) // the default, 0.5
	t.Logf("ratio 0.5: %d checkpoints wrote %d bytes; the last snapshot has %d", n, total, last)
	if total > 4*last {
		t.Errorf("default ratio: checkpoints wrote %.1f× the final snapshot", float64(total)/float64(last))
	}
	ftotal, flast, fn := run(-1)
	t.Logf("fixed threshold: %d checkpoints wrote %d bytes; the last snapshot has %d", fn, ftotal, flast)
	if ftotal < 10*flast || fn <= 2*n {
		t.Errorf("fixed threshold: %d checkpoints, %.1f× the final snapshot; the test no longer tells the two apart", fn, float64(ftotal)/float64(flast))
	}
}
