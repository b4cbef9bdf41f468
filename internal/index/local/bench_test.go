package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/index/indextest"
)

// The measurements behind docs/durability.md:
//
//	go test -run xxx -bench . -benchtime 200x ./internal/index/local/

// benchRecord is a chunk-sized record: about 300 words and a 384-dimensional vector.
func benchRecord(src string, pos int, seed uint64) index.Record {
	r := indextest.Rec(src, pos, "", seed)
	text := make([]byte, 0, 2000)
	for i := 0; len(text) < 1900; i++ {
		text = fmt.Appendf(text, "word%d lorem ipsum %d ", (i*7+int(seed))%997, i)
	}
	r.Content = string(text)
	r.Vector = make([]float32, 384)
	for i := range r.Vector {
		r.Vector[i] = float32((int(seed)+i)%13) - 6
	}
	return r
}

// BenchmarkFsync is the floor: appending 2 KiB to a file and fsyncing it.
func BenchmarkFsync(b *testing.B) {
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "f"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 2048)
	for b.Loop() {
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBleveBatch indexes one chunk per batch, waiting for scorch to
// persist it (safe) or not (unsafe, what the store uses).
func BenchmarkBleveBatch(b *testing.B) {
	for _, unsafe := range []bool{false, true} {
		b.Run(map[bool]string{false: "safe", true: "unsafe"}[unsafe], func(b *testing.B) {
			cfg := map[string]any{}
			if unsafe {
				cfg["unsafe_batch"] = true
			}
			bi, err := bleve.NewUsing(filepath.Join(b.TempDir(), "bl"), mustMapping(b, newFullText(nil)), scorch.Name, scorch.Name, cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer bi.Close()
			i := 0
			for b.Loop() {
				r := benchRecord("https://bench/", i, uint64(i))
				bb := bi.NewBatch()
				if err := bb.Index(r.ID, storeDoc(&r)); err != nil {
					b.Fatal(err)
				}
				if err := bi.Batch(bb); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkApply measures a whole durable mutation: one record (a
// preference or memory), or a 20-chunk source replacing its previous version;
// and the same with bleve persisting every batch itself before Apply returns
// (the design this store replaced).
func BenchmarkApply(b *testing.B) {
	for _, c := range []struct {
		n    int
		safe bool
	}{{1, false}, {20, false}, {1, true}, {20, true}} {
		name := fmt.Sprintf("records=%d", c.n)
		if c.safe {
			name += "/bleve-persists-each-batch"
		}
		n := c.n
		b.Run(name, func(b *testing.B) {
			unsafeBatches = !c.safe
			defer func() { unsafeBatches = true }()
			be, err := Open(context.Background(), b.TempDir(), &Options{Logger: quietLogger()})
			if err != nil {
				b.Fatal(err)
			}
			defer be.Close()
			i := 0
			for b.Loop() {
				src := fmt.Sprintf("https://bench/%d", i%50)
				bt := driver.Batch{DeleteSources: []string{src}}
				for p := 0; p < n; p++ {
					bt.Put = append(bt.Put, benchRecord(src, p, uint64(i*100+p)))
				}
				if err := be.Apply(context.Background(), &bt); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkApplyConcurrent runs one-record mutations from 8 goroutines, with
// group commit and with every mutation committed alone.
func BenchmarkApplyConcurrent(b *testing.B) {
	for _, limit := range []int{0, 1} {
		b.Run(map[int]string{0: "grouped", 1: "one-per-fsync"}[limit], func(b *testing.B) {
			be, err := Open(context.Background(), b.TempDir(), &Options{Logger: quietLogger(), groupLimit: limit})
			if err != nil {
				b.Fatal(err)
			}
			defer be.Close()
			var next atomic.Int64
			b.SetParallelism(4) // 4 × GOMAXPROCS goroutines
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := next.Add(1)
					src := fmt.Sprintf("https://bench/%d", i)
					bt := driver.Batch{Put: []index.Record{benchRecord(src, 0, uint64(i))}}
					if err := be.Apply(context.Background(), &bt); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// benchStore builds a closed store of n chunk-sized records.
func benchStore(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	be, err := Open(context.Background(), dir, &Options{Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	for lo := 0; lo < n; lo += 500 {
		var bt driver.Batch
		for i := lo; i < min(lo+500, n); i++ {
			bt.Put = append(bt.Put, benchRecord(fmt.Sprintf("https://bench/%d", i/10), i%10, uint64(i)))
		}
		if err := be.Apply(context.Background(), &bt); err != nil {
			b.Fatal(err)
		}
	}
	if err := be.Close(); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkOpen opens and closes a cleanly closed store of 10,000 chunks:
// snapshot load, vector collection, bleve verification and open.
func BenchmarkOpen(b *testing.B) {
	dir := benchStore(b, 10000)
	for b.Loop() {
		be, err := Open(context.Background(), dir, &Options{Logger: quietLogger()})
		if err != nil {
			b.Fatal(err)
		}
		if !be.Recovery().OpenedCleanShut {
			b.Fatalf("recovery: %v", be.Recovery().Problems)
		}
		be.Close()
	}
}

// BenchmarkVerifyFullText is the part of Open that checks bleve's files.
func BenchmarkVerifyFullText(b *testing.B) {
	dir := benchStore(b, 10000)
	for b.Loop() {
		if err := verifyFullText(filepath.Join(dir, bleveDirName)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheck runs Check over a store of 10,000 chunks.
func BenchmarkCheck(b *testing.B) {
	dir := benchStore(b, 10000)
	be, err := Open(context.Background(), dir, &Options{Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	for b.Loop() {
		if probs, err := be.Check(context.Background()); err != nil || len(probs) > 0 {
			b.Fatal(probs, err)
		}
	}
}

// BenchmarkCheckpoint writes a snapshot of a store of 10,000 chunks (and
// starts a new journal), which holds the writer lock while it runs.
func BenchmarkCheckpoint(b *testing.B) {
	dir := benchStore(b, 10000)
	be, err := Open(context.Background(), dir, &Options{Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	i := 0
	for b.Loop() {
		b.StopTimer()
		r := benchRecord("https://bench/ckpt", 0, uint64(i))
		if err := be.Apply(context.Background(), &driver.Batch{Put: []index.Record{r}}); err != nil {
			b.Fatal(err)
		}
		i++
		b.StartTimer()
		if err := be.Checkpoint(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

func mustMapping(tb testing.TB, ft *fullText) mapping.IndexMapping {
	m, err := storeMapping(ft)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}
