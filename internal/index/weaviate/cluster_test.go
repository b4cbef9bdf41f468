package weaviate

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
	"github.com/ragmem/ragmem/index/indextest"
	"github.com/ragmem/ragmem/internal/wvtest"
)

// TestClusterSurvivesANodeKill starts a 3-node cluster on loopback, writes
// through one node into a collection replicated 3 times with QUORUM writes,
// kills that node with SIGKILL, and checks through the survivors that
// searches still answer, every acknowledged record is there with its
// content, and writes still succeed.
func TestClusterSurvivesANodeKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three servers")
	}
	nodes := wvtest.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	opts := &Options{Namespace: "cluster", Replicas: 3, ConsistencyLevel: Quorum}
	b, err := Open(ctx, nodes[0].Backend, opts)
	if err != nil {
		t.Fatalf("Open on %s: %v", nodes[0].Name, err)
	}
	acked := map[string]index.Record{}
	sources := 0
	write := func(b *Backend, round int) {
		t.Helper()
		for s := 0; s < 10; s++ {
			src := fmt.Sprintf("https://cluster.example/%d/%d", round, s)
			var put []index.Record
			for p := 0; p < 3; p++ {
				put = append(put, indextest.Rec(src, p, fmt.Sprintf("round %d source %d chunk %d replicated fox", round, s, p), uint64(round*1000+s*10+p)))
			}
			if err := b.Apply(ctx, &driver.Batch{DeleteSources: []string{src}, Put: put}); err != nil {
				t.Fatalf("Apply round %d source %d: %v", round, s, err)
			}
			for _, r := range put {
				acked[r.ID] = r
			}
			sources++
		}
	}
	write(b, 0)
	// A replaced source: only the new version may survive.
	replaced := indextest.Rec("https://cluster.example/0/0", 0, "replaced version of the first source", 77)
	replaced.ID = "replaced-0"
	if err := b.Apply(ctx, &driver.Batch{DeleteSources: []string{replaced.SourceURL}, Put: []index.Record{replaced}}); err != nil {
		t.Fatal(err)
	}
	for id, r := range acked {
		if r.SourceURL == replaced.SourceURL {
			delete(acked, id)
		}
	}
	acked[replaced.ID] = replaced
	if err := b.SetMeta(ctx, "embedder", "lexical-v1/d16"); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()

	nodes[0].Kill()
	t.Logf("killed %s; reading through %s", nodes[0].Name, nodes[1].Name)
	if err := wvtest.WaitLeader(ctx, nodes[1].URL); err != nil {
		t.Fatalf("%v\n%s", err, nodes[1].Tail(30))
	}

	b2, err := Open(ctx, nodes[1].Backend, opts)
	if err != nil {
		t.Fatalf("Open on a survivor: %v\n%s", err, nodes[1].Tail(30))
	}
	defer b2.Close()
	check := func(when string) {
		t.Helper()
		ids := make([]string, 0, len(acked))
		for id := range acked {
			ids = append(ids, id)
		}
		got, err := b2.Get(ctx, ids)
		if err != nil {
			t.Fatalf("%s: Get: %v", when, err)
		}
		if len(got) != len(acked) {
			t.Fatalf("%s: %d of %d acknowledged records found", when, len(got), len(acked))
		}
		for _, g := range got {
			if want := acked[g.ID]; g.Content != want.Content || g.SourceURL != want.SourceURL || len(g.Vector) != indextest.Dim {
				t.Fatalf("%s: record %s = %q, want %q", when, g.ID, g.Content, want.Content)
			}
		}
		st, err := b2.Stats(ctx)
		if err != nil {
			t.Fatalf("%s: Stats: %v", when, err)
		}
		if st.Records != len(acked) || st.Sources != sources {
			t.Fatalf("%s: Stats = %d records in %d sources, want %d in %d", when, st.Records, st.Sources, len(acked), sources)
		}
		old, err := b2.SearchText(ctx, "chunk replicated", 100, index.Filter{SourceURL: replaced.SourceURL})
		if err != nil || len(old) != 0 {
			t.Fatalf("%s: the replaced version answers: %v, %v", when, len(old), err)
		}
		hits, err := b2.SearchText(ctx, "replicated fox", 5, index.Filter{})
		if err != nil || len(hits) != 5 {
			t.Fatalf("%s: full-text search: %d hits, %v", when, len(hits), err)
		}
		vh, err := b2.SearchVector(ctx, replaced.Vector, 3, index.Filter{})
		if err != nil || len(vh) != 3 || vh[0].Record.ID != replaced.ID {
			t.Fatalf("%s: vector search: %v, %v", when, len(vh), err)
		}
		hh, err := b2.SearchHybrid(ctx, driver.HybridQuery{Text: "replaced version", Vector: replaced.Vector, K: 3, Alpha: 0.5, Fusion: driver.FusionRanked})
		if err != nil || len(hh) == 0 || hh[0].Record.ID != replaced.ID {
			t.Fatalf("%s: hybrid search: %v, %v", when, len(hh), err)
		}
		if v, ok, err := b2.Meta(ctx, "embedder"); err != nil || !ok || v != "lexical-v1/d16" {
			t.Fatalf("%s: Meta = %q %v %v", when, v, ok, err)
		}
	}
	check("after the kill")
	// QUORUM writes still succeed with two of three replicas.
	write(b2, 1)
	check("after writing with a node down")
}
