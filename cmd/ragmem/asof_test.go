package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// ragmem memory search and match --as-of: what held at a date or in a
// period named in words, a fact superseded since with its old text.
func TestMemoryAsOfCLI(t *testing.T) {
	dir := t.TempDir()
	mem := filepath.Join(t.TempDir(), "memories")
	run := func(args ...string) string {
		t.Helper()
		return mustRun(t, append([]string{"--dir", dir, "memory"}, append(args[:1:1], append([]string{"--memories", mem}, args[1:]...)...)...)...)
	}
	run("add", "--separate", "--title", "Invoices in Postgres", "--when", "billing|invoice", "--at", "2025-03-02T00:00:00Z",
		"--occurred-at", "2025-03-01", "The billing service stores its invoices in Postgres.")
	run("add", "--separate", "--title", "Invoices in MySQL", "--when", "billing|invoice", "--at", "2025-06-02T00:00:00Z",
		"--occurred-at", "2025-06-01", "The billing service stores its invoices in MySQL.")
	run("supersede", "invoices-in-mysql", "invoices-in-postgres")

	out := run("search", "where are billing invoices stored")
	if !strings.HasPrefix(out, "1. invoices-in-mysql") || strings.Contains(out, ". invoices-in-postgres") {
		t.Fatalf("today: %s", out)
	}
	for _, asOf := range []string{"2025-04-15", "in May 2025", "2025-05-31T23:00:00Z"} {
		out = run("search", "--as-of", asOf, "where are billing invoices stored")
		if !strings.HasPrefix(out, "1. invoices-in-postgres") || strings.Contains(out, ". invoices-in-mysql") || !strings.Contains(out, "superseded on 2025-06-01") {
			t.Fatalf("--as-of %s: %s", asOf, out)
		}
	}
	out = run("search", "--as-of", "2025-02-01", "where are billing invoices stored")
	if !strings.Contains(out, "no memories found") {
		t.Fatalf("before either: %s", out)
	}
	out = run("match", "--agent", "developer", "--prompt", "--as-of", "2025-04-15", "move the billing invoices")
	if !strings.Contains(out, "stores its invoices in Postgres") || strings.Contains(out, "in MySQL.") {
		t.Fatalf("match --as-of: %s", out)
	}
	if _, _, err := runCLI(t, "--dir", dir, "memory", "search", "--memories", mem, "--as-of", "since May", "x"); err == nil || !strings.Contains(err.Error(), "--as-of") {
		t.Fatalf("a bad --as-of: %v", err)
	}
}
