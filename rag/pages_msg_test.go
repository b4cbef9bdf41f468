package rag

import (
	"errors"
	"strings"
	"testing"

	"github.com/ragmem/ragmem/index"
)

// TestReservedSchemeMessages: the refusal names what the scheme is for,
// in plain English.
func TestReservedSchemeMessages(t *testing.T) {
	for u, want := range map[string]string{
		"memory:notes.md":         `the URL scheme "memory" is reserved for the agent memories, written only through the memory API`,
		"MEMORY://x":              `the URL scheme "MEMORY" is reserved for the agent memories`,
		"Memory-Layer://episodic": `the URL scheme "Memory-Layer" is reserved for the agent memories`,
		"preference://user":       `the URL scheme "preference" is reserved for the user's preferences, written only through the preference API`,
	} {
		if _, err := CheckPageURL(u); err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrReserved) {
			t.Errorf("%s: %v, want %q", u, err, want)
		}
	}
}

// TestCheckPageURLHostAndPort: a page URL with an authority names a host
// and a real port, and loses its user info.
func TestCheckPageURLHostAndPort(t *testing.T) {
	for u, want := range map[string]string{
		"https:///x":                    "names no host",
		"http://:80/x":                  "names no host",
		"https://user:pw@/x":            "names no host",
		"https://example.com:65536/a":   "is not a port number",
		"https://example.com:99999999/": "is not a port number",
		"ftp://:21/pub":                 "names no host",
	} {
		if _, err := CheckPageURL(u); err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrBadURL) {
			t.Errorf("%s: %v, want %q", u, err, want)
		}
	}
	for in, want := range map[string]string{
		"https://example.com:65535/a":           "https://example.com:65535/a",
		"file:///home/me/notes.md":              "file:///home/me/notes.md",
		"urn:isbn:0451450523":                   "urn:isbn:0451450523",
		"https://user:pw@example.com/a?b=1#c":   "https://example.com/a?b=1#c",
		"https://alice@example.com:8443/secret": "https://example.com:8443/secret",
	} {
		if got, err := CheckPageURL(in); err != nil || got != want {
			t.Errorf("CheckPageURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestForgetPageStoredWithCredentials: a page stored with user info in its
// URL before canonicalisation dropped it is still deleted by that URL.
func TestForgetPageStoredWithCredentials(t *testing.T) {
	e := openEngine(t, nil)
	const legacy = "https://alice:pw@legacy.example/x"
	if err := e.Store().Put(ctx, []index.Record{{ID: "legacy-1", SourceURL: legacy, Content: "old page text", DocType: index.DocKnowledge}}); err != nil {
		t.Fatal(err)
	}
	if rm, err := e.Forget(ctx, legacy); err != nil || rm.Chunks != 1 {
		t.Fatalf("ForgetPage: %+v %v", rm, err)
	}
	if recs, _ := e.Store().Backend().Source(ctx, legacy); len(recs) != 0 {
		t.Fatalf("still stored: %+v", recs)
	}
}
