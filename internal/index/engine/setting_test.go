package engine

import (
	"context"
	"errors"
	"testing"

	"github.com/ragmem/ragmem/index"
)

// Settings of other packages are durable, namespaced, and read from the
// backend once.
func TestSettings(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ix := open(t, dir, nil)
	if _, err := ix.Add(ctx, index.Document{SourceURL: "u", Content: "Zebras have stripes."}); err != nil { // records the embedder
		t.Fatal(err)
	}
	if _, ok, err := ix.Setting(ctx, "search.fusion"); ok || err != nil {
		t.Fatalf("unset setting: %v %v", ok, err)
	}
	if err := ix.SetSetting(ctx, "search.fusion", `{"alpha":0.2}`); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := ix.Setting(ctx, "search.fusion"); v != `{"alpha":0.2}` || !ok || err != nil {
		t.Fatalf("Setting = %q %v %v", v, ok, err)
	}
	for _, bad := range []string{"embedder", "dimension", "index.embedder", ".x", "x.", ""} {
		if err := ix.SetSetting(ctx, bad, "v"); !errors.Is(err, ErrBadSetting) {
			t.Errorf("SetSetting(%q): %v", bad, err)
		}
		if _, _, err := ix.Setting(ctx, bad); !errors.Is(err, ErrBadSetting) {
			t.Errorf("Setting(%q): %v", bad, err)
		}
	}
	// Answered from memory: a value written behind the index's back is not
	// seen until the store is reopened.
	if err := ix.Backend().SetMeta(ctx, "search.fusion", "behind"); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := ix.Setting(ctx, "search.fusion"); v != `{"alpha":0.2}` {
		t.Errorf("cached setting = %q", v)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	ix = open(t, dir, nil)
	defer ix.Close()
	if v, ok, _ := ix.Setting(ctx, "search.fusion"); v != "behind" || !ok {
		t.Errorf("after reopening: %q %v", v, ok)
	}
	// A value read from the backend is kept too.
	if err := ix.Backend().SetMeta(ctx, "search.fusion", "behind again"); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := ix.Setting(ctx, "search.fusion"); v != "behind" {
		t.Errorf("the setting read was not kept: %q", v)
	}
	if v, _, _ := ix.Backend().Meta(ctx, "embedder"); v == "" {
		t.Error("the index's own setting is gone")
	}
}
