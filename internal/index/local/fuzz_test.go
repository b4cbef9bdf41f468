package local

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/internal/wal"
)

// fuzzJournal is a valid journal of a few operations, the fuzzers' seed.
func fuzzJournal() []byte {
	data := journalHead(7)
	ops := []batchOp{
		{Seq: 8, Batch: *putVersion("https://f/a", 3)},
		{Seq: 9, Meta: map[string]string{"embedder": "lexical", "dimension": "16"}},
		{Seq: 10, Batch: driver.Batch{DeleteSources: []string{"https://f/a"}, DeleteIDs: []string{"x", ""}}},
	}
	ops[0].Batch.Put[0].Attrs = map[string]string{"k": "v"}
	for i := range ops {
		data = wal.AppendFrame(data, encodeOp(&ops[i]))
	}
	return data
}

// FuzzReadJournal feeds arbitrary bytes to the journal reader. It must never
// panic; what it accepts must be consecutive operations that survive an
// encode/decode round trip; and it must report where the good data ends.
func FuzzReadJournal(f *testing.F) {
	good := fuzzJournal()
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add(append(append([]byte(nil), good...), 0, 0, 0, 0, 0, 0, 0, 0))
	f.Add([]byte(journalMagic))
	f.Add(encodeOp(&batchOp{Seq: 1, Batch: *putVersion("https://f/b", 2)}))
	f.Fuzz(func(t *testing.T, data []byte) {
		// The bytes as a journal file, and as the payload of a journal's
		// only frame (so that the decoder is reached past the checksum).
		checkJournal(t, data)
		checkJournal(t, wal.AppendFrame(journalHead(0), data))
	})
}

func checkJournal(t *testing.T, data []byte) {
	{
		var ops []batchOp
		js, err := readJournal(bufio.NewReader(bytes.NewReader(data)), "fuzz", int64(len(data)), func(o *batchOp) error {
			ops = append(ops, *o)
			return nil
		})
		if err != nil {
			return // a bad header
		}
		if js.validEnd > int64(len(data)) || js.ops != len(ops) {
			t.Fatalf("validEnd %d of %d bytes, %d ops counted, %d seen", js.validEnd, len(data), js.ops, len(ops))
		}
		if js.tail == nil && js.validEnd != int64(len(data)) {
			t.Fatalf("clean end at %d of %d bytes", js.validEnd, len(data))
		}
		for i := range ops {
			if ops[i].Seq != js.base+uint64(i)+1 {
				t.Fatalf("op %d has sequence %d after base %d", i, ops[i].Seq, js.base)
			}
			again, err := decodeOp(encodeOp(&ops[i]))
			if err != nil || !reflect.DeepEqual(again, ops[i]) {
				t.Fatalf("op %d does not survive a round trip: %v\n%+v\n%+v", i, err, ops[i], again)
			}
		}
		// Reading only the good prefix gives the same operations, cleanly.
		var again []batchOp
		js2, err := readJournal(bufio.NewReader(bytes.NewReader(data[:js.validEnd])), "fuzz", js.validEnd, func(o *batchOp) error {
			again = append(again, *o)
			return nil
		})
		if err != nil || js2.tail != nil || !reflect.DeepEqual(again, ops) {
			t.Fatalf("the good prefix reads differently: %v %v", err, js2.tail)
		}
	}
}

// encodeSnapshotV1 writes the format-1 snapshot older versions of ragmem
// wrote (vectors inline), for the tests of reading and upgrading them.
func encodeSnapshotV1(w io.Writer, seq uint64, meta map[string]string, records []*index.Record) error {
	head := []byte(snapMagic)
	head = binary.LittleEndian.AppendUint64(head, seq)
	head = binary.LittleEndian.AppendUint64(head, uint64(len(records)))
	if meta == nil {
		meta = map[string]string{}
	}
	head = wal.AppendFrame(head, encodeOp(&batchOp{Seq: seq, Meta: meta}))
	for _, r := range records {
		head = wal.AppendFrame(head, encodeRecord(r))
	}
	head = wal.AppendFrame(head, binary.LittleEndian.AppendUint64([]byte(snapEnd), uint64(len(records))))
	_, err := w.Write(head)
	return err
}

// snapshotBytes writes a format-2 snapshot with writeSnapshot (in memory
// where the system has a tmpfs, so that fuzzing does not wait for disks)
// and returns its bytes.
func snapshotBytes(t testing.TB, seq uint64, meta map[string]string, records []*index.Record, dim int) []byte {
	base := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		base = "/dev/shm"
	}
	dir, err := os.MkdirTemp(base, "ragmem-snap-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if _, err := writeSnapshot(wal.OS{}, dir, seq, meta, records, dim, nil); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, snapName(seq)))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// FuzzReadSnapshot feeds arbitrary bytes to the snapshot reader (both
// formats). It must never panic, and a snapshot it accepts must write back
// to one that reads the same.
func FuzzReadSnapshot(f *testing.F) {
	recs := versionRecords("https://f/s", 3)
	recs[1].Attrs = map[string]string{"preferenceType": "style"}
	ptrs := []*index.Record{&recs[0], &recs[1], &recs[2]}
	var buf bytes.Buffer
	if err := encodeSnapshotV1(&buf, 42, map[string]string{"embedder": "lexical"}, ptrs); err != nil {
		f.Fatal(err)
	}
	good := buf.Bytes()
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add(good[:len(snapMagic)+16])
	f.Add(encodeRecord(&recs[0]))
	v2 := snapshotBytes(f, 42, map[string]string{"embedder": "lexical"}, ptrs, len(recs[0].Vector))
	f.Add(v2)
	f.Add(v2[:len(v2)-1])
	f.Add(v2[:snapVecOff+10])
	f.Add(snapshotBytes(f, 7, nil, nil, 0))
	f.Fuzz(func(t *testing.T, data []byte) {
		// The bytes as a snapshot file, and as the only record of one.
		checkSnapshot(t, data)
		one := append([]byte(snapMagic), 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0)
		one = wal.AppendFrame(one, encodeOp(&batchOp{Seq: 1, Meta: map[string]string{}}))
		one = wal.AppendFrame(one, data)
		one = wal.AppendFrame(one, append([]byte(snapEnd), 1, 0, 0, 0, 0, 0, 0, 0))
		checkSnapshot(t, one)
	})
}

func checkSnapshot(t *testing.T, data []byte) {
	s, err := readSnapshotAt(bytes.NewReader(data), int64(len(data)), "fuzz", nil)
	if err != nil {
		return
	}
	ptrs := make([]*index.Record, len(s.records))
	for i := range s.records {
		ptrs[i] = &s.records[i]
		if len(s.records[i].Vector) != s.dim {
			if s.version == 1 {
				return // format 1 allowed mixed dimensions; format 2 does not
			}
			t.Fatalf("record %d has %d dimensions, the snapshot %d", i, len(s.records[i].Vector), s.dim)
		}
	}
	out := snapshotBytes(t, s.seq, s.meta, ptrs, s.dim)
	s2, err := readSnapshotAt(bytes.NewReader(out), int64(len(out)), "fuzz", nil)
	if err != nil {
		t.Fatalf("accepted snapshot does not write back: %v", err)
	}
	if len(s.records) == 0 {
		s.records, s2.records = nil, nil
	}
	if s2.seq != s.seq || !reflect.DeepEqual(s2.meta, s.meta) || !reflect.DeepEqual(s2.records, s.records) {
		t.Fatalf("accepted snapshot does not survive a round trip")
	}
}

// FuzzDecodeRecordShared: a snapshot's records are decoded with their
// strings cut from one copy of the frame; the result and the verdict must be
// those of the plain decoder, whatever the bytes.
func FuzzDecodeRecordShared(f *testing.F) {
	r := putVersion("https://f/a", 3).Put[0]
	r.Attrs = map[string]string{"k": "v", "empty": ""}
	r.HeadingPath = []string{"A", "", "B"}
	f.Add(encodeRecord(&r))
	r.Vector = nil
	f.Add(encodeRecord(&r))
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, data []byte) {
		a, errA := decodeRecord(data)
		b, errB := decodeRecordShared(data)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("plain: %v, shared: %v", errA, errB)
		}
		if errA == nil && !reflect.DeepEqual(a, b) {
			t.Fatalf("plain %+v, shared %+v", a, b)
		}
	})
}
