// Package wal holds the durable-file primitives ragmem's stores are built
// on: checksummed frames, an append-only log that is fsynced before a write
// is acknowledged, crash-safe whole-file replacement (WriteFile), an
// advisory directory lock that names the process holding it, and reads and
// opens that refuse anything but a regular file (OpenRegular), for
// directories that users and other programs write to.
//
// A frame is [uint32 length][uint32 CRC-32C of payload][payload],
// little-endian. A log is a fixed header followed by frames. A reader can
// tell a complete frame from one cut short by a crash (ErrTorn) and from one
// damaged after it was written (ErrCorrupt).
//
// File operations go through FS so that tests can inject write, sync,
// rename and disk-full errors.
package wal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Errors reported by readers.
var (
	// ErrTorn reports a frame cut short by the end of the file: the normal
	// trace of a crash during an append that was never acknowledged.
	ErrTorn = errors.New("wal: torn frame")
	// ErrCorrupt reports a frame or header that fails its checksum or has
	// an impossible length.
	ErrCorrupt = errors.New("wal: corrupt data")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// FrameHeader is the size of a frame header in bytes.
const FrameHeader = 8

// MaxFrame bounds a frame's payload; longer payloads are refused on write and
// treated as corruption on read.
const MaxFrame = 1 << 30

// AppendFrame appends the frame of payload to dst.
func AppendFrame(dst, payload []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(payload, castagnoli))
	return append(dst, payload...)
}

// ReadFrame reads one frame from r into buf (grown as needed) and returns
// its payload. It returns io.EOF at a clean end, ErrTorn when r ends inside
// the frame, an ErrCorrupt error for a bad checksum or impossible length,
// and any other read error as it is.
func ReadFrame(r io.Reader, buf []byte) ([]byte, error) {
	var h [FrameHeader]byte
	n, err := io.ReadFull(r, h[:])
	if err == io.EOF {
		return nil, io.EOF
	}
	if err != nil {
		if n > 0 && errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, ErrTorn
		}
		return nil, err
	}
	size := binary.LittleEndian.Uint32(h[:4])
	sum := binary.LittleEndian.Uint32(h[4:])
	if size > MaxFrame {
		return nil, fmt.Errorf("%w: frame length %d", ErrCorrupt, size)
	}
	// Grow the buffer as data arrives rather than trusting the length, so
	// that a damaged length cannot allocate a gigabyte for a short file.
	buf = buf[:0]
	const step = 1 << 20
	for remaining := int(size); remaining > 0; {
		chunk := min(remaining, step)
		if cap(buf)-len(buf) < chunk {
			nb := make([]byte, len(buf), len(buf)+max(chunk, min(remaining, 2*cap(buf))))
			copy(nb, buf)
			buf = nb
		}
		m, err := io.ReadFull(r, buf[len(buf):len(buf)+chunk])
		buf = buf[:len(buf)+m]
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
				return nil, ErrTorn
			}
			return nil, err
		}
		remaining -= chunk
	}
	if crc32.Checksum(buf, castagnoli) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	return buf, nil
}

// ScanResult describes a log read by Scan.
type ScanResult struct {
	// ValidEnd is the offset just after the last good frame (the header's
	// length when there is none).
	ValidEnd int64
	// Frames is the number of good frames.
	Frames int
	// Tail is nil when the log ended cleanly, ErrTorn when it ended inside
	// a frame, or the corruption or decoding error found at ValidEnd.
	Tail error
}

// Scan reads the frames that follow a header of headerLen bytes (already
// consumed from r) and calls fn with each payload, in order. The payload is
// only valid during the call. Scan stops at the first torn or corrupt frame,
// or at the first frame fn rejects with an error wrapping ErrCorrupt, and
// reports it in Tail; any other error from fn or from reading is returned.
func Scan(r io.Reader, headerLen int64, fn func(payload []byte) error) (ScanResult, error) {
	res := ScanResult{ValidEnd: headerLen}
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 1<<20)
	}
	var buf []byte
	for {
		p, err := ReadFrame(br, buf)
		if err == io.EOF {
			return res, nil
		}
		if errors.Is(err, ErrTorn) || errors.Is(err, ErrCorrupt) {
			res.Tail = err
			return res, nil
		}
		if err != nil {
			return res, err
		}
		buf = p
		if err := fn(p); err != nil {
			if errors.Is(err, ErrCorrupt) {
				res.Tail = err
				return res, nil
			}
			return res, err
		}
		res.Frames++
		res.ValidEnd += int64(FrameHeader + len(p))
	}
}
