package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
)

// TestRealDiskFull fills a real, small file system (a 6 MiB tmpfs, which
// needs root; skipped otherwise) until a write fails. The failure must say
// the disk is full, every write acknowledged before it must still be there,
// bleve's own persistence failing in the background must not corrupt
// anything, and once there is room again the store takes writes and reopens
// consistent.
func TestRealDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
	ctx := context.Background()
	dir := filepath.Join(mnt, "store")
	b := mustOpen(t, dir, &Options{Logger: quietLogger(), CheckpointBytes: 1 << 20, CheckpointRatio: -1})
	want := state{}
	var failure error
	for i := 0; i < 10000 && failure == nil; i++ {
		src := fmt.Sprintf("https://full/%d", i)
		bt := putVersion(src, i)
		for j := range bt.Put { // chunk-sized text so the disk fills quickly
			bt.Put[j].Content += fmt.Sprintf(" %0900d durable", i)
		}
		if err := b.Apply(ctx, bt); err != nil {
			failure = err
			break
		}
		want[src] = i
	}
	if failure == nil {
		t.Fatal("the disk never filled up")
	}
	if !clearError(failure, syscall.ENOSPC) {
		t.Fatalf("disk-full error is unclear: %v", failure)
	}
	t.Logf("first failure after %d sources written: %v", len(want), failure)
	got, err := readStateLoose(ctx, b)
	if err != nil || got.String() != want.String() {
		t.Fatalf("in-process state after the failure: %v (%v)\nwant %v", got, err, want)
	}
	// Room again: the same process takes writes.
	if out, err := exec.Command("mount", "-o", "remount,size=64m", mnt).CombinedOutput(); err != nil {
		t.Fatalf("remount: %v %s", err, out)
	}
	if err := b.Apply(ctx, putVersion("https://full/after", 1)); err != nil {
		t.Fatalf("write after space was freed: %v", err)
	}
	want["https://full/after"] = 1
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	b = mustOpen(t, dir, &Options{Logger: quietLogger()})
	defer b.Close()
	if r := b.Recovery(); r.Lost != "" {
		t.Fatalf("reopen reports lost data: %s", r.Lost)
	}
	got, err = readStateLoose(ctx, b)
	if err != nil || got.String() != want.String() {
		t.Fatalf("after reopening: %v (%v)\nwant %v", got, err, want)
	}
	if probs, err := b.Check(ctx); err != nil || len(probs) > 0 {
		t.Fatalf("check: %v %v", probs, err)
	}
}

// readStateLoose is readState for records whose content was extended.
func readStateLoose(ctx context.Context, b driver.Backend) (state, error) {
	recs, err := b.Records(ctx, index.Filter{})
	if err != nil {
		return nil, err
	}
	st := state{}
	for _, r := range recs {
		var v int
		if _, err := fmt.Sscanf(r.ContentHash, "v%d", &v); err != nil {
			return nil, err
		}
		if old, ok := st[r.SourceURL]; ok && old != v {
			return nil, fmt.Errorf("source %s mixes versions %d and %d", r.SourceURL, old, v)
		}
		st[r.SourceURL] = v
	}
	for src, v := range st {
		n := 0
		for _, r := range recs {
			if r.SourceURL == src {
				n++
			}
		}
		if n != chunkCount(v) {
			return nil, fmt.Errorf("source %s has %d chunks, version %d has %d", src, n, v, chunkCount(v))
		}
	}
	return st, nil
}
