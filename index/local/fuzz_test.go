package local

import (
	"bufio"
	"bytes"
	"reflect"
	"testing"

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

// FuzzReadSnapshot feeds arbitrary bytes to the snapshot reader. It must
// never panic, and a snapshot it accepts must write back to one that reads
// the same.
func FuzzReadSnapshot(f *testing.F) {
	recs := versionRecords("https://f/s", 3)
	recs[1].Attrs = map[string]string{"preferenceType": "style"}
	ptrs := []*driver.Record{&recs[0], &recs[1], &recs[2]}
	var buf bytes.Buffer
	if err := encodeSnapshot(&buf, 42, map[string]string{"embedder": "lexical"}, ptrs); err != nil {
		f.Fatal(err)
	}
	good := buf.Bytes()
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add(good[:len(snapMagic)+16])
	f.Add(encodeRecord(&recs[0]))
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
	{
		s, err := readSnapshotFrom(bufio.NewReader(bytes.NewReader(data)), "fuzz")
		if err != nil {
			return
		}
		ptrs := make([]*driver.Record, len(s.records))
		for i := range s.records {
			ptrs[i] = &s.records[i]
		}
		var out bytes.Buffer
		if err := encodeSnapshot(&out, s.seq, s.meta, ptrs); err != nil {
			t.Fatal(err)
		}
		s2, err := readSnapshotFrom(bufio.NewReader(bytes.NewReader(out.Bytes())), "fuzz")
		if err != nil || !reflect.DeepEqual(s, s2) {
			t.Fatalf("accepted snapshot does not survive a round trip: %v", err)
		}
	}
}
