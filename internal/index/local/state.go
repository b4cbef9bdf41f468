package local

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/wal"
)

// The closed marker records the sequence a store was at when it was last
// closed cleanly: one wal frame holding "RGMCLOSE" + uint64 sequence. On open,
// a journal that ends before it means acknowledged operations were lost
// (a truncated or deleted journal), which is reported instead of silently
// starting with less. It is rewritten at every clean Close and never needs
// removing: after a crash it is older than the journal, which is harmless.

const (
	closedName  = "closed.rgm"
	closedMagic = "RGMCLOSE"
)

func writeClosedMarker(fsys wal.FS, dir string, seq uint64) error {
	payload := binary.LittleEndian.AppendUint64([]byte(closedMagic), seq)
	return wal.WriteFileAtomic(fsys, filepath.Join(dir, closedName), func(w io.Writer) error {
		_, err := w.Write(wal.AppendFrame(nil, payload))
		return err
	})
}

// readClosedMarker returns the recorded sequence; ok is false when there is
// no marker. A damaged marker is an error wrapping driver.ErrCorrupt.
func readClosedMarker(fsys wal.FS, dir string) (seq uint64, ok bool, err error) {
	f, err := fsys.OpenFile(filepath.Join(dir, closedName), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	p, err := wal.ReadFrame(bufio.NewReader(io.LimitReader(f, 64)), nil)
	if err != nil || len(p) != len(closedMagic)+8 || string(p[:len(closedMagic)]) != closedMagic {
		return 0, false, fmt.Errorf("%w: %s is damaged", driver.ErrCorrupt, closedName)
	}
	return binary.LittleEndian.Uint64(p[len(closedMagic):]), true, nil
}
