package local

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ragmem/ragmem/index/driver"
)

// TestFaultInjection runs every kind of mutation, a checkpoint and Close
// against every injected file-layer failure, at every point where the
// operation touches the file system. Each time: the operation fails with a
// clear error (or succeeds, when the failure hit work that is not on the
// commit path, such as a checkpoint); the store keeps serving exactly the
// acknowledged state; and after reopening it holds that state and Check is
// clean. bleve's own files are outside the injectable layer; the real
// disk-full test covers them.
func TestFaultInjection(t *testing.T) {
	ctx := context.Background()
	base := state{"https://a/": 1, "https://b/": 2, "https://c/": 3}
	template := t.TempDir()
	{
		b := mustOpen(t, template, &Options{Logger: quietLogger()})
		for src, v := range base {
			if err := b.Apply(ctx, putVersion(src, v)); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
	type op struct {
		name string
		ckpt int64 // CheckpointBytes for the store (small: every write checkpoints)
		run  func(b *Backend) error
		want state // the state if the operation succeeds
	}
	with := func(src string, v int) state { s := base.clone(); s[src] = v; return s }
	without := func(src string) state { s := base.clone(); delete(s, src); return s }
	ops := []op{
		{"add", 0, func(b *Backend) error { return b.Apply(ctx, putVersion("https://new/", 5)) }, with("https://new/", 5)},
		{"replace", 0, func(b *Backend) error { return b.Apply(ctx, putVersion("https://a/", 7)) }, with("https://a/", 7)},
		{"remove", 0, func(b *Backend) error { return b.Apply(ctx, removeSource("https://b/")) }, without("https://b/")},
		{"delete-ids", 0, func(b *Backend) error {
			var ids []string
			for _, r := range versionRecords("https://a/", 1) {
				ids = append(ids, r.ID)
			}
			return b.Apply(ctx, &driver.Batch{DeleteIDs: ids})
		}, without("https://a/")},
		{"set-meta", 0, func(b *Backend) error { return b.SetMeta(ctx, "k", "v") }, base},
		{"replace+checkpoint", 1, func(b *Backend) error { return b.Apply(ctx, putVersion("https://c/", 8)) }, with("https://c/", 8)},
		{"close", 1, func(b *Backend) error { return b.Close() }, base},
	}
	runs, failed := 0, 0
	for _, o := range ops {
		for _, f := range faults {
			for n := 1; ; n++ {
				name := fmt.Sprintf("%s/%s/%d", o.name, f.name, n)
				dir := filepath.Join(t.TempDir(), "store")
				copyDir(t, template, dir)
				ffs := &faultFS{}
				b := mustOpen(t, dir, &Options{Logger: quietLogger(), CheckpointBytes: max(o.ckpt, 0), CheckpointRatio: -1, fs: ffs})
				ffs.arm(f.kind, n, f.err, f.partial)
				err := o.run(b)
				hits := ffs.disarm()
				if hits == 0 {
					b.Close()
					break // the operation makes fewer than n such calls
				}
				runs++
				want := o.want
				if err != nil {
					failed++
					if !clearError(err, f.err) {
						t.Errorf("%s: unclear error %q", name, err)
					}
					if o.name != "close" {
						want = base
					}
				}
				if o.name != "close" {
					// In process: exactly the acknowledged state.
					got, rerr := readState(ctx, b)
					if rerr != nil || got.String() != want.String() {
						t.Fatalf("%s: in-process state %v (%v), want %v (op error: %v)", name, got, rerr, want, err)
					}
					b.Close()
				}
				b = mustOpen(t, dir, &Options{Logger: quietLogger()})
				if r := b.Recovery(); r.Lost != "" {
					t.Errorf("%s: reopen reports lost data: %s", name, r.Lost)
				}
				t.Run(name, func(t *testing.T) { expectState(t, b, want) })
				// The store takes writes again.
				if err := b.Apply(ctx, putVersion("https://after/", 1)); err != nil {
					t.Errorf("%s: write after reopen: %v", name, err)
				}
				b.Close()
			}
		}
	}
	t.Logf("%d injected failures, %d of them failed their operation", runs, failed)
	if failed == 0 {
		t.Fatal("no injected failure reached an operation")
	}
}
