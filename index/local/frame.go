package local

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/ragmem/ragmem/index/driver"
)

// A frame is [uint32 length][uint32 CRC-32C of payload][payload], little-endian.
// Frames let a reader tell a complete record from a torn or corrupted one.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const frameHeader = 8

// maxFrame bounds a single frame; a batch larger than this is refused on write.
const maxFrame = 1 << 30

func appendFrame(dst, payload []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(payload, castagnoli))
	return append(dst, payload...)
}

// errTorn reports a frame cut short by the end of the file: the normal
// result of a crash during an append.
var errTorn = errors.New("torn frame")

// readFrame reads one frame. It returns io.EOF at a clean end, errTorn when
// the file ends inside a frame and a driver.ErrCorrupt error for a bad checksum
// or an impossible length.
func readFrame(r io.Reader, buf []byte) ([]byte, error) {
	var h [frameHeader]byte
	n, err := io.ReadFull(r, h[:])
	if err == io.EOF {
		return nil, io.EOF
	}
	if err != nil {
		if n > 0 && errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, errTorn
		}
		return nil, err
	}
	size := binary.LittleEndian.Uint32(h[:4])
	sum := binary.LittleEndian.Uint32(h[4:])
	if size > maxFrame {
		return nil, fmt.Errorf("%w: frame length %d", driver.ErrCorrupt, size)
	}
	if cap(buf) < int(size) {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
			return nil, errTorn
		}
		return nil, err
	}
	if crc32.Checksum(buf, castagnoli) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch", driver.ErrCorrupt)
	}
	return buf, nil
}
