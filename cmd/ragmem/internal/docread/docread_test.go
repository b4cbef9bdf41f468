package docread

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ragmem/ragmem/internal/extract"
	"github.com/ragmem/ragmem/internal/hostile"
	"github.com/ragmem/ragmem/internal/sandbox"
)

// TestMain lets the test binary act as the child.
func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "testdata", "documents", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestReadsLikeTheReader: through the child, a document reads exactly as
// extract reads it in process, and the reader's refusals keep their error
// and their message.
func TestReadsLikeTheReader(t *testing.T) {
	for _, name := range []string{"guide.pdf", "guide.docx", "guide.epub", "owner-aes256.pdf", "encrypted.pdf", "scanned.pdf"} {
		data := fixture(t, name)
		want, _, wantErr := extract.Document(name, data, nil)
		got, err := Read(context.Background(), name, data, nil)
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Errorf("%s: error %v, want %v", name, err, wantErr)
		}
		for _, e := range []error{extract.ErrEncrypted, extract.ErrNoTextLayer} {
			if errors.Is(wantErr, e) != errors.Is(err, e) {
				t.Errorf("%s: %v does not wrap what %v wraps", name, err, wantErr)
			}
		}
		if got != want {
			t.Errorf("%s: page %+v, want %+v", name, got, want)
		}
	}
	if _, err := Read(context.Background(), "notes.txt", []byte("text"), nil); !errors.Is(err, extract.ErrDamaged) {
		t.Errorf("a text file: %v", err)
	}
}

// TestHostileFilesInTheChild: every hostile file ends in its child with a
// reason, in a few seconds and within the memory the issue allows (peak
// resident set of the child, which starts at about 10 MiB).
func TestHostileFilesInTheChild(t *testing.T) {
	for _, f := range hostile.Files() {
		start := time.Now()
		_, u, err := ReadUsage(context.Background(), f.Name, f.Data, nil)
		took := time.Since(start)
		if !errors.Is(err, extract.ErrDamaged) && !errors.Is(err, extract.ErrLimit) {
			t.Errorf("%s: %v", f.Name, err)
		}
		if took > 30*time.Second {
			t.Errorf("%s: %s", f.Name, took)
		}
		if !raceEnabled && u.MaxRSS > 512<<20 {
			t.Errorf("%s: the child's peak RSS was %d MiB", f.Name, u.MaxRSS>>20)
		}
		t.Logf("%-18s %7d bytes: %5.2fs, CPU %5.2fs, peak RSS %4d MiB: %v", f.Name, len(f.Data), took.Seconds(), u.CPU.Seconds(), u.MaxRSS>>20, err)
	}
}

// TestLimitsCostOneFile: a document the reader's checks let through but
// that takes too long, or too much memory, is stopped by the child's
// limits, with a one-line reason naming the parser and the limit.
func TestLimitsCostOneFile(t *testing.T) {
	slow := hostile.SlowPDF(300)
	start := time.Now()
	_, err := Read(context.Background(), "slow.pdf", slow, &Options{Timeout: 2 * time.Second})
	// The reader's own deadline (nine tenths of the timeout, between pages)
	// or the child's: either way a limit.
	if !errors.Is(err, extract.ErrLimit) || (err.Error() != "the PDF parser exceeded 2s" && !strings.Contains(err.Error(), "not read within the time limit")) {
		t.Errorf("slow: %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("slow: stopped after %s", took)
	}
	mem := int64(64 << 20)
	_, err = Read(context.Background(), "pages.pdf", hostile.Files()[5].Data, &Options{Memory: mem})
	if !errors.Is(err, extract.ErrLimit) || !errors.Is(err, ErrStopped) || err.Error() != "the PDF parser ran out of memory (limit 64 MiB)" {
		t.Errorf("memory: %v", err)
	}
	// The caller's context stops the child at once.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := Read(ctx, "slow.pdf", slow, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cancelled: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("cancelled: returned after %s", took)
	}
}

// FuzzIsolated fuzzes the readers through the child, with tight limits:
// whatever the input, Read returns (the parent never hangs or dies) with a
// page within the text limit or one of the reader's errors.
func FuzzIsolated(f *testing.F) {
	for _, name := range []string{"guide.pdf", "guide.docx", "guide.epub", "owner-rc4-40.pdf"} {
		f.Add(filepath.Ext(name), fixture(f, name))
	}
	for _, h := range hostile.Files() {
		if len(h.Data) < 64<<10 {
			f.Add(filepath.Ext(h.Name), h.Data)
		}
	}
	f.Fuzz(func(t *testing.T, ext string, data []byte) {
		switch ext {
		case ".pdf", ".docx", ".epub":
		default:
			return
		}
		opts := &Options{Timeout: 3 * time.Second, Memory: 128 << 20, Document: &extract.DocumentOptions{MaxText: 1 << 20, MaxParts: 100}}
		p, err := Read(context.Background(), "f"+ext, data, opts)
		if err != nil {
			for _, e := range kinds {
				if errors.Is(err, e) {
					return
				}
			}
			t.Fatalf("error outside extract's: %v", err)
		}
		if len(p.Text) > 1<<20+1024 {
			t.Fatalf("text of %d bytes", len(p.Text))
		}
	})
}

// TestChildErrors: how a child ended becomes a one-line reason naming the
// parser, wrapping the extract error a caller sorts by.
func TestChildErrors(t *testing.T) {
	for _, c := range []struct {
		name    string
		err     error
		want    string
		kind    error
		stopped bool
	}{
		{"a.pdf", &sandbox.LimitError{Reason: "exceeded 30s"}, "the PDF parser exceeded 30s", extract.ErrLimit, true},
		{"b.epub", &sandbox.LimitError{Reason: "ran out of memory (limit 512 MiB)"}, "the EPUB parser ran out of memory (limit 512 MiB)", extract.ErrLimit, true},
		{"c.docx", &sandbox.CrashError{Reason: "crashed (fatal error: stack overflow)"}, "the DOCX parser crashed (fatal error: stack overflow)", extract.ErrDamaged, true},
		{"d.pdf", &sandbox.JobError{Msg: "docread: d.pdf is not a PDF, DOCX or EPUB file"}, "docread: d.pdf is not a PDF, DOCX or EPUB file", extract.ErrDamaged, false},
	} {
		err := childError(c.name, c.err)
		if err.Error() != c.want || !errors.Is(err, c.kind) || errors.Is(err, ErrStopped) != c.stopped {
			t.Errorf("%v: %q, want %q wrapping %v (stopped %v)", c.err, err, c.want, c.kind, c.stopped)
		}
	}
}
