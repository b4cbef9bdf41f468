package weaviate

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/weaviate/weaviate/entities/models"
	pb "github.com/weaviate/weaviate/grpc/generated/protocol/v1"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/index/indextest"
	"github.com/ragmem/ragmem/internal/wvtest"
)

// crashAfter runs the first steps of Apply's protocol for a replacement of
// src by newRecs, as a writer that crashed after them would leave it: the
// intent (pending or committed) and the new records written, nothing deleted.
func crashAfter(t *testing.T, b *Backend, src string, newRecs []index.Record, commit bool) {
	t.Helper()
	ctx := context.Background()
	old, err := b.objectIDs(ctx, fEq(pSourceKey, key(src)))
	if err != nil {
		t.Fatal(err)
	}
	in := intent{State: statePending, Owner: "another-process", Del: old}
	objs := make([]*pb.BatchObject, len(newRecs))
	for i := range newRecs {
		objs[i] = b.object(&newRecs[i])
		in.Add = append(in.Add, b.objectID(newRecs[i].ID))
	}
	if commit {
		in.State = stateCommitted
	}
	if err := b.writeIntent(ctx, "6d1f0a9e-0000-4000-8000-00000000000"+map[bool]string{false: "1", true: "2"}[commit], &in); err != nil {
		t.Fatal(err)
	}
	if err := b.putObjects(ctx, "write", objs); err != nil {
		t.Fatal(err)
	}
}

func contents(t *testing.T, b *Backend, src string) string {
	t.Helper()
	rs, err := b.Source(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	var cs []string
	for _, r := range rs {
		cs = append(cs, r.Content)
	}
	return strings.Join(cs, "|")
}

// TestRecoveryUndoesAndFinishes leaves one batch pending and one committed,
// as crashed writers would, and checks that the next Open undoes the first
// (the old version stays whole) and finishes the second (only the new one
// remains), while the pending one is left alone as long as it is young.
func TestRecoveryUndoesAndFinishes(t *testing.T) {
	ctx := context.Background()
	url := wvtest.URL(t)
	ns := uniqueNS(t, "recover")
	now := time.Now()
	clock := func() time.Time { return now }
	b, err := Open(ctx, url, &Options{Namespace: ns, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Drop(ctx)
	pend, comm := "https://pending.example/", "https://committed.example/"
	for _, src := range []string{pend, comm} {
		if err := b.Apply(ctx, &driver.Batch{Put: []index.Record{indextest.Rec(src, 0, "old a", 1), indextest.Rec(src, 1, "old b", 2)}}); err != nil {
			t.Fatal(err)
		}
	}
	newRec := func(src string) []index.Record {
		r := indextest.Rec(src, 0, "new", 3)
		r.ID = src + "-new"
		return []index.Record{r}
	}
	crashAfter(t, b, pend, newRec(pend), false)
	crashAfter(t, b, comm, newRec(comm), true)
	if got := contents(t, b, pend); got != "new|old a|old b" && got != "old a|new|old b" {
		t.Logf("mid-crash view of the pending source: %s", got)
	}

	// A young pending intent of another process is left alone: it may
	// still be running. The committed one is finished.
	b2, err := Open(ctx, url, &Options{Namespace: ns, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if got := contents(t, b2, comm); got != "new" {
		t.Fatalf("committed batch not finished: %q", got)
	}
	if got := contents(t, b2, pend); !strings.Contains(got, "new") {
		t.Fatalf("young pending batch undone too early: %q", got)
	}
	// Once it is older than IntentTimeout, it is undone.
	later := func() time.Time { return now.Add(11 * time.Minute) }
	b3, err := Open(ctx, url, &Options{Namespace: ns, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if got := contents(t, b3, pend); got != "old a|old b" {
		t.Fatalf("stale pending batch not undone: %q", got)
	}
	if objs, err := b3.metaObjects(ctx, "intents", fAnd(fEq(mNamespace, ns), fEq(mKind, kindIntent))); err != nil || len(objs) != 0 {
		t.Fatalf("intents left: %d, %v", len(objs), err)
	}
	st, _ := b3.Stats(ctx)
	if st.Records != 3 {
		t.Fatalf("records after recovery: %d, want 3", st.Records)
	}
}

// TestSchemaDiffers opens a namespace whose collection was made by someone
// else and expects a clear error naming the differences.
func TestSchemaDiffers(t *testing.T) {
	ctx := context.Background()
	url := wvtest.URL(t)
	ns := uniqueNS(t, "schema")
	b, err := Open(ctx, url, &Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Drop(ctx)
	other := ns + "_x"
	cls := &models.Class{Class: ClassName(other), Vectorizer: "none", VectorIndexConfig: map[string]any{"distance": "l2-squared"},
		Properties: []*models.Property{{Name: pContent, DataType: []string{"int"}}}}
	if _, err := b.createClass(ctx, cls); err != nil {
		t.Fatal(err)
	}
	defer b.deleteClass(ctx, cls.Class)
	_, err = Open(ctx, url, &Options{Namespace: other})
	if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), "distance") || !strings.Contains(err.Error(), "property content has type") ||
		!strings.Contains(err.Error(), "property terms is missing") {
		t.Fatalf("Open on a foreign collection: %v", err)
	}
}

// TestUnreachable needs no server: a closed port is one clear error, fast.
func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	start := time.Now()
	_, err = Open(context.Background(), "http://"+addr, nil)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "cannot reach http://"+addr) {
		t.Fatalf("Open on a closed port: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v", d)
	}
	for _, bad := range []string{"", "127.0.0.1:8080", "ftp://x", "http://h:1/path"} {
		if _, err := Open(context.Background(), bad, nil); !errors.Is(err, ErrConfig) {
			t.Errorf("URL %q: %v", bad, err)
		}
	}
	if _, err := Open(context.Background(), "http://"+addr, &Options{Namespace: "a-b"}); !errors.Is(err, ErrConfig) {
		t.Errorf("bad namespace: %v", err)
	}
	if _, err := Open(context.Background(), "http://"+addr, &Options{ConsistencyLevel: "most"}); !errors.Is(err, ErrConfig) {
		t.Errorf("bad consistency: %v", err)
	}
}
