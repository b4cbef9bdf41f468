package driver

import (
	"strings"
	"testing"

	"github.com/ragmem/ragmem/index"
)

func TestSearchText(t *testing.T) {
	r := &index.Record{Title: "Guide", HeadingPath: []string{"Guide", "Install", "Linux"}, Content: "Run make."}
	got := SearchText(r)
	if want := "Guide\nInstall\nLinux\nRun make."; got != want {
		t.Fatalf("SearchText = %q, want %q", got, want)
	}
	if head := got[:len(got)-len(r.Content)]; head != "Guide\nInstall\nLinux\n" || !strings.HasSuffix(got, r.Content) {
		t.Fatalf("head %q", head)
	}
	if got := SearchText(&index.Record{Content: "only text"}); got != "only text" {
		t.Fatalf("no title: %q", got)
	}
}
