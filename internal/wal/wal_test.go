package wal

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func scanAll(t *testing.T, path string, headerLen int64) ([]string, ScanResult) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	if _, err := io.CopyN(io.Discard, r, headerLen); err != nil {
		t.Fatal(err)
	}
	var got []string
	res, err := Scan(r, headerLen, func(p []byte) error {
		got = append(got, string(p))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, res
}

func TestLogAppendScanTruncate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	l, err := CreateLog(OS{}, path, []byte("HEAD"))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append([]byte("one")); err != nil {
		t.Fatal(err)
	}
	mark := l.Size()
	if err := l.Append([]byte("two"), []byte("three")); err != nil {
		t.Fatal(err)
	}
	got, res := scanAll(t, path, 4)
	if strings.Join(got, ",") != "one,two,three" || res.Tail != nil || res.ValidEnd != l.Size() {
		t.Fatalf("scan = %v %+v (size %d)", got, res, l.Size())
	}
	if err := l.Truncate(mark); err != nil {
		t.Fatal(err)
	}
	if err := l.Append([]byte("four")); err != nil {
		t.Fatal(err)
	}
	l.Close()
	got, _ = scanAll(t, path, 4)
	if strings.Join(got, ",") != "one,four" {
		t.Fatalf("after truncate: %v", got)
	}
}

func TestScanStopsAtTornAndCorruptFrames(t *testing.T) {
	good := AppendFrame(AppendFrame(nil, []byte("alpha")), []byte("beta"))
	cases := []struct {
		name string
		tail []byte
		want error
	}{
		{"clean", nil, nil},
		{"torn header", []byte{9, 0, 0}, ErrTorn},
		{"torn payload", AppendFrame(nil, []byte("gamma"))[:10], ErrTorn},
		{"bad checksum", func() []byte { f := AppendFrame(nil, []byte("gamma")); f[9] ^= 1; return f }(), ErrCorrupt},
		{"impossible length", []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}, ErrCorrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := append(append([]byte(nil), good...), c.tail...)
			var got []string
			res, err := Scan(bytes.NewReader(data), 0, func(p []byte) error { got = append(got, string(p)); return nil })
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, ",") != "alpha,beta" || res.ValidEnd != int64(len(good)) {
				t.Fatalf("got %v, validEnd %d, want alpha,beta and %d", got, res.ValidEnd, len(good))
			}
			if c.want == nil && res.Tail != nil || c.want != nil && !errors.Is(res.Tail, c.want) {
				t.Fatalf("tail = %v, want %v", res.Tail, c.want)
			}
		})
	}
}

// A damaged length must not make the reader allocate what it claims.
func TestReadFrameHugeLengthOnShortInput(t *testing.T) {
	data := []byte{0, 0, 0, 0x3f, 1, 2, 3, 4, 'x'} // claims ~1 GiB
	_, err := ReadFrame(bytes.NewReader(data), nil)
	if !errors.Is(err, ErrTorn) {
		t.Fatalf("err = %v, want ErrTorn", err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _ = ReadFrame(bytes.NewReader(data), nil)
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 8<<20 {
		t.Fatalf("reading a torn 1 GiB frame allocated %d bytes", n)
	}
}

func TestWriteFileAtomicLeavesOldFileOnFailure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := WriteFileAtomic(OS{}, path, func(w io.Writer) error {
		fmt.Fprint(w, "new but unfinished")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Fatalf("file = %q", b)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temporary file left behind: %v", err)
	}
}

func TestLockNamesHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "LOCK")
	l, err := TryLock(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = TryLock(path)
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) || le.PID != fmt.Sprint(os.Getpid()) {
		t.Fatalf("second lock: %v", err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	l2, err := TryLock(path)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	l2.Unlock()
}
