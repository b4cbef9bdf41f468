package owner

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadInfo feeds arbitrary owner files to ReadInfo: it must never
// panic, must not take a damaged file for a missing one, and must refuse
// what names no process or no absolute socket path. The seeds below run in
// the normal suite.
func FuzzReadInfo(f *testing.F) {
	f.Add([]byte(`{"pid":4242,"kind":"serve","since":"2026-01-02T03:04:05Z","version":"v1","socket":"/home/me/.local/share/ragmem/ragmem.sock","http":"http://127.0.0.1:7437"}`))
	f.Add([]byte(`{"pid":0,"socket":"/x.sock"}`))
	f.Add([]byte(`{"pid":7,"socket":"relative.sock"}`))
	f.Add([]byte(`{"pid":7,"socket":"/x.sock","since":"yesterday"}`))
	f.Add([]byte(`{"pid":1e30}`))
	f.Add([]byte(`not json`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, infoFile), b, 0o600); err != nil {
			t.Fatal(err)
		}
		in, err := ReadInfo(dir)
		if err != nil {
			if errors.Is(err, ErrNoOwner) {
				t.Fatalf("an owner file that exists read as no owner: %v", err)
			}
			return
		}
		if in.PID <= 0 || !filepath.IsAbs(in.Socket) {
			t.Fatalf("accepted %+v", in)
		}
	})
}
