package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// ragmem memory over time: add consolidates a restatement and flags a
// conflicting value, supersede confirms it, search and match filter by time
// and history, cite and stats close the feedback loop, list shows the
// superseded and decayed memories.
func TestMemoryHistoryCLI(t *testing.T) {
	dir := t.TempDir()
	mem := filepath.Join(t.TempDir(), "memories")
	run := func(args ...string) string {
		t.Helper()
		return mustRun(t, append([]string{"--dir", dir, "memory"}, append(args[:1:1], append([]string{"--memories", mem}, args[1:]...)...)...)...)
	}
	out := run("add", "--title", "Billing stores invoices in Postgres", "--when", "billing|invoice", "--at", "2025-05-02T00:00:00Z",
		"--occurred-at", "2025-05-01", "The billing service stores its invoices in Postgres.")
	if !strings.HasPrefix(out, "wrote ") {
		t.Fatalf("add: %q", out)
	}
	out = run("add", "--title", "Invoices live in Postgres", "--when", "billing|invoice", "Invoices of the billing service are stored in Postgres.")
	if !strings.Contains(out, "already known (similarity 0.") || !strings.Contains(out, "merged as entry 2 of") || !strings.Contains(out, "billing-stores-invoices-in-postgres.md") {
		t.Fatalf("restatement: %q", out)
	}
	out = run("add", "--title", "Billing invoices moved", "--when", "billing|invoice", "The billing service stores its invoices in MySQL.")
	if !strings.Contains(out, "may contradict billing-stores-invoices-in-postgres") || !strings.Contains(out, "ragmem memory supersede billing-invoices-moved billing-stores-invoices-in-postgres") {
		t.Fatalf("conflict: %q", out)
	}
	out = run("add", "--title", "Never run migrations on Fridays", "--when", "migration", "A Friday migration broke billing for the weekend.", "--importance", "low", "--at", "2020-01-01T00:00:00Z")
	if !strings.HasPrefix(out, "wrote ") {
		t.Fatal(out)
	}
	out = run("supersede", "billing-invoices-moved", "billing-stores-invoices-in-postgres", "--why", "checked the DSN")
	if !strings.HasPrefix(out, "billing-invoices-moved supersedes billing-stores-invoices-in-postgres") {
		t.Fatalf("supersede: %q", out)
	}
	out = run("search", "where are billing invoices stored")
	if !strings.Contains(out, "1. billing-invoices-moved") || strings.Contains(out, ". billing-stores-invoices-in-postgres") {
		t.Fatalf("search: %s", out)
	}
	out = run("search", "--history", "where are billing invoices stored")
	if !strings.Contains(out, "billing-stores-invoices-in-postgres") || !strings.Contains(out, "superseded on") {
		t.Fatalf("search --history: %s", out)
	}
	out = run("search", "--when", "in May 2025")
	if !strings.HasPrefix(out, "1. billing-stores-invoices-in-postgres") || strings.Count(out, "rank ") != 1 {
		t.Fatalf("search --when: %s", out)
	}
	out = run("match", "--agent", "developer", "--prompt", "--history", "move the billing invoices")
	if !strings.Contains(out, "*Changed on ") || !strings.Contains(out, "*Superseded on ") || !strings.Contains(out, "[memory:billing-invoices-moved]") {
		t.Fatalf("match --history --prompt: %s", out)
	}
	out = run("match", "--agent", "developer", "--prompt", "plan a migration")
	if !strings.Contains(out, "*DON'T: this memory is a practice to avoid*") {
		t.Fatalf("negative: %s", out)
	}
	out = run("cite", "--injected", "billing-invoices-moved", "It is MySQL now [memory:billing-invoices-moved] [memory:nope].")
	if strings.TrimSpace(out) != "cited: billing-invoices-moved" {
		t.Fatalf("cite: %q", out)
	}
	out = run("stats")
	if !strings.HasPrefix(out, "3 memories: 1 superseded, 1 decayed, 1 negative; 3 injections, 1 citations") ||
		!strings.Contains(out, "superseded by billing-invoices-moved") || !strings.Contains(out, "DON'T; decayed") {
		t.Fatalf("stats:\n%s", out)
	}
	out = run("list", "--decayed")
	if !strings.Contains(out, "never-run-migrations-on-fridays") || strings.Contains(out, "billing") || !strings.Contains(out, "DON'T; decayed (strength 0.00)") {
		t.Fatalf("list --decayed:\n%s", out)
	}
	out = run("list", "--superseded")
	if !strings.Contains(out, "billing-stores-invoices-in-postgres") || strings.Count(out, "when:") != 1 {
		t.Fatalf("list --superseded:\n%s", out)
	}
	if _, _, err := runCLI(t, "--dir", dir, "memory", "search", "--memories", mem, "--when", "sometime"); err == nil {
		t.Error("a bad time expression was accepted")
	}
}
