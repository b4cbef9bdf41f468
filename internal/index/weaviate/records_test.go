package weaviate

import (
	"testing"

	"github.com/ragmem/ragmem/index"
	"github.com/ragmem/ragmem/index/driver"
)

// Weaviate's BM25 indexes the terms of driver.SearchText, the text the
// embedder embeds and the local backend indexes (no server needed).
func TestObjectTermsAreTheSearchText(t *testing.T) {
	r := &index.Record{ID: "a", SourceURL: "https://example.com/travel", Title: "Travel notes",
		HeadingPath: []string{"Travel notes", "Zanzibar"}, Content: "Ferries leave the harbour."}
	o := (&Backend{class: "Test"}).object(r)
	if got, want := o.Properties.NonRefProperties.Fields[pTerms].GetStringValue(), terms(driver.SearchText(r)); got != want || want == "" {
		t.Fatalf("terms %q, want %q", got, want)
	}
}
