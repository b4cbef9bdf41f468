package rag

import (
	"strings"
	"testing"
)

// TestReservedSchemeMessages: the refusal names what the scheme is for,
// in plain English.
func TestReservedSchemeMessages(t *testing.T) {
	for u, want := range map[string]string{
		"memory:notes.md":   `the URL scheme "memory" is reserved for memories`,
		"MEMORY://x":        `the URL scheme "MEMORY" is reserved for memories`,
		"preference://user": `the URL scheme "preference" is reserved for preferences`,
	} {
		if _, err := CheckPageURL(u); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", u, err, want)
		}
	}
}
