package hostile

import (
	"archive/zip"
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestArchivesAreWhatTheySay: every archive opens, its small parts
// decompress whole (their checksums hold), and its large parts decompress
// past 64 MiB to what they repeat: the pieces written once and repeated
// form one valid deflate stream.
func TestArchivesAreWhatTheySay(t *testing.T) {
	for _, f := range Files() {
		if !strings.HasSuffix(f.Name, ".epub") && !strings.HasSuffix(f.Name, ".docx") {
			if !bytes.HasPrefix(f.Data, []byte("%PDF-1.7")) || !bytes.HasSuffix(f.Data, []byte("%%EOF\n")) {
				t.Errorf("%s: not a PDF file", f.Name)
			}
			continue
		}
		zr, err := zip.NewReader(bytes.NewReader(f.Data), int64(len(f.Data)))
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		largest := uint64(0)
		for _, e := range zr.File {
			largest = max(largest, e.UncompressedSize64)
			rc, err := e.Open()
			if err != nil {
				t.Fatalf("%s %s: %v", f.Name, e.Name, err)
			}
			var n int64
			if e.UncompressedSize64 <= 8<<20 {
				n, err = io.Copy(io.Discard, rc) // the checksum is checked at the end
			} else {
				want := min(int64(e.UncompressedSize64), 64<<20)
				n, err = io.Copy(io.Discard, io.LimitReader(rc, want))
				if n != want {
					t.Errorf("%s %s: %d bytes, want %d", f.Name, e.Name, n, want)
				}
			}
			rc.Close()
			if err != nil {
				t.Errorf("%s %s: %v after %d bytes", f.Name, e.Name, err, n)
			}
		}
		if largest < 16<<20 {
			t.Errorf("%s: its largest part is %d bytes", f.Name, largest)
		}
		t.Logf("%-18s %8d bytes, largest part %5d MiB", f.Name, len(f.Data), largest>>20)
	}
}
