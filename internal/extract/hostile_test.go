package extract_test

import (
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragmem/ragmem/internal/extract"
	"github.com/ragmem/ragmem/internal/hostile"
)

// hostileOutcomes says how each of hostile.Files ends when read in
// process: the error and what it says.
var hostileOutcomes = map[string]struct {
	err  error
	says string
}{
	"self-parent.pdf":   {extract.ErrDamaged, "a page's /Parent chain loops"},
	"self-prev.pdf":     {extract.ErrDamaged, "in a loop (/Prev)"},
	"objstm-n.pdf":      {extract.ErrLimit, "an object stream of 9000000000000000000 objects"},
	"extends-cycle.pdf": {extract.ErrDamaged, "in a loop (/Extends)"},
	"xref-2e30.pdf":     {extract.ErrLimit, "a cross-reference subsection of 1 objects from object 1073741824"},
	"repeat-pages.pdf":  {extract.ErrLimit, "bytes of text"},
	"deep-tree.pdf":     {extract.ErrDamaged, "nested deeper than 64 levels"},
	"nav-bomb.epub":     {extract.ErrLimit, "OEBPS/nav.xhtml is larger than 16 MiB"},
	"big-chapter.epub":  {extract.ErrLimit, "chapter 1: OEBPS/c0.xhtml is larger than 10 MiB"},
	"reading-list.epub": {extract.ErrLimit, "more than 10000 chapters"},
	"docx-bomb.docx":    {extract.ErrLimit, "more than 1000000 paragraphs"},
	"docx-run.docx":     {extract.ErrLimit, "an XML token longer than 1 MiB"},
	"docx-deep.docx":    {extract.ErrLimit, "nests elements deeper than 256"},
}

// TestHostileFiles: each hostile file is refused by the readers
// themselves, with its reason, fast and within bounded memory: the loops
// and allocations the PDF library would make are foreseen, and every
// container part is read through the bounded reader. (The sandbox the
// command line reads documents in is the second line: see
// cmd/ragmem/internal/docread.)
func TestHostileFiles(t *testing.T) {
	within, heapBound := 15*time.Second, uint64(512<<20)
	if raceEnabled {
		within, heapBound = 2*time.Minute, 4<<30
	}
	for _, f := range hostile.Files() {
		want, ok := hostileOutcomes[f.Name]
		if !ok {
			t.Errorf("%s: no expected outcome", f.Name)
			continue
		}
		stop := heapPeak()
		start := time.Now()
		done := make(chan error, 1)
		go func() {
			_, _, err := extract.Document(f.Name, f.Data, nil)
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(within):
			t.Fatalf("%s (%s): not done within %s", f.Name, f.Does, within)
		}
		took := time.Since(start)
		grew := stop()
		if !errors.Is(err, want.err) || !strings.Contains(err.Error(), want.says) {
			t.Errorf("%s: %v, want %v saying %q", f.Name, err, want.err, want.says)
		}
		if grew > heapBound {
			t.Errorf("%s: the heap grew by %d MiB", f.Name, grew>>20)
		}
		t.Logf("%-18s %7d bytes: %6.2fs, heap +%4d MiB: %v", f.Name, len(f.Data), took.Seconds(), grew>>20, err)
	}
}

// heapPeak samples the heap in use until stop, which returns its largest
// growth over the start.
func heapPeak() func() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	quit, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > base && ms.HeapInuse-base > peak.Load() {
				peak.Store(ms.HeapInuse - base)
			}
			select {
			case <-quit:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(quit)
		<-finished
		return peak.Load()
	}
}
