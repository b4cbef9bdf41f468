package memory

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The file of seed 001 ("File Structure"), as written there.
const seedFile = `---
title: "Authentication Module Structure"
whenToUse:
  - "auth|authentication|login|security"
  - "When implementing security features"
tags: [auth, codebase-structure, important]
importance: high
discoveredAt: 2026-01-23T10:30:00Z
discoveredBy: planner
discoveredIn: "Task: Implement user authentication"
---

# Authentication Module Structure

One-sentence summary.

## Overview

Brief description...
`

func TestParseSeedFile(t *testing.T) {
	es, err := ParseFile([]byte(seedFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 {
		t.Fatalf("%d entries", len(es))
	}
	want := Frontmatter{
		Title:        "Authentication Module Structure",
		WhenToUse:    []string{"auth|authentication|login|security", "When implementing security features"},
		Tags:         []string{"auth", "codebase-structure", "important"},
		Importance:   High,
		DiscoveredAt: time.Date(2026, 1, 23, 10, 30, 0, 0, time.UTC),
		DiscoveredBy: "planner",
		DiscoveredIn: "Task: Implement user authentication",
	}
	if !reflect.DeepEqual(es[0].Frontmatter, want) {
		t.Errorf("frontmatter\n got %+v\nwant %+v", es[0].Frontmatter, want)
	}
	if !strings.HasPrefix(es[0].Body, "# Authentication Module Structure\n\nOne-sentence summary.") || strings.HasSuffix(es[0].Body, "\n") {
		t.Errorf("body %q", es[0].Body)
	}
	if es[0].Line != 1 {
		t.Errorf("line %d", es[0].Line)
	}
}

func TestParseWhenToUseStringAndDefaults(t *testing.T) {
	es, err := ParseFile([]byte("---\ntitle: X\nwhenToUse: auth|login\nunknownField: kept out\n---\nbody"))
	if err != nil {
		t.Fatal(err)
	}
	fm := es[0].Frontmatter
	if !reflect.DeepEqual(fm.WhenToUse, []string{"auth|login"}) || fm.Importance != Medium || !fm.DiscoveredAt.IsZero() {
		t.Errorf("%+v", fm)
	}
}

// Invalid files are reported with the line of the problem.
func TestParseErrorsHaveLines(t *testing.T) {
	cases := []struct {
		name, src string
		line      int
		msg       string
	}{
		{"no frontmatter", "# Just markdown\n", 1, "must start with YAML frontmatter"},
		{"unclosed", "---\ntitle: x\nwhenToUse: y\n", 1, "never closed"},
		{"bad yaml", "---\ntitle: x\nwhenToUse: [a, b\nimportance: high\n---\n", 3, "invalid YAML"},
		{"bad importance", "---\ntitle: x\nwhenToUse: a\nimportance: urgent\n---\n", 4, `importance is "urgent"`},
		{"bad time", "---\ntitle: x\nwhenToUse: a\ndiscoveredAt: yesterday\n---\n", 4, "not an ISO 8601 time"},
		{"missing title", "---\nwhenToUse: a\n---\n", 1, "title is missing"},
		{"missing whenToUse", "---\ntitle: x\n---\n", 1, "whenToUse is missing"},
		{"whenToUse mapping", "---\ntitle: x\nwhenToUse:\n  a: b\n---\n", 4, "whenToUse must be"},
		{"duplicate key", "---\ntitle: x\ntitle: y\nwhenToUse: a\n---\n", 3, "appears twice"},
		{"not a mapping", "---\n- a\n- b\n---\n", 2, "must be a mapping"},
		{"invalid utf8", "---\ntitle: x\nwhenToUse: a\n---\nok\nbad \xff here\n", 6, "not valid UTF-8"},
		{"bad appended entry", "---\ntitle: x\nwhenToUse: a\n---\nbody\n\n---\n\n---\ntitle: y\nimportance: nope\nwhenToUse: b\n---\nmore\n", 11, "importance"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseFile([]byte(c.src))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err %v, want a *ParseError", err)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("not ErrInvalid")
			}
			if pe.Line != c.line || !strings.Contains(pe.Msg, c.msg) {
				t.Errorf("line %d %q, want line %d containing %q", pe.Line, pe.Msg, c.line, c.msg)
			}
		})
	}
}

// What FormatEntry writes, ParseFile reads back, for one entry and for
// entries appended with the separator.
func TestFormatRoundTrip(t *testing.T) {
	fm := Frontmatter{
		Title: `A "quoted": title # with yaml: chars`, WhenToUse: []string{"a|b", "- looks like a list", "When: colons"},
		Tags: []string{"x", "y z"}, Importance: Critical, DiscoveredAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		DiscoveredBy: "dev", DiscoveredIn: "Task: it's", Source: "s", RelatedMemories: []string{"other.md"},
	}
	if err := validateFrontmatter(&fm); err != nil {
		t.Fatal(err)
	}
	body := "# Heading\n\nText.\n\n---\n\n---\n\nMore after two rules.\nSetext\n---\n"
	one := FormatEntry(fm, body)
	es, err := ParseFile(one)
	if err != nil {
		t.Fatalf("%v\n%s", err, one)
	}
	if len(es) != 1 || !reflect.DeepEqual(es[0].Frontmatter, fm) {
		t.Fatalf("got %+v\n%s", es, one)
	}
	// Thematic breaks after a blank line are written as "***"; a setext
	// underline stays.
	wantBody := "# Heading\n\nText.\n\n***\n\n***\n\nMore after two rules.\nSetext\n---"
	if es[0].Body != wantBody {
		t.Errorf("body %q, want %q", es[0].Body, wantBody)
	}
	fm2 := fm
	fm2.Importance = Low
	two := append(append(one, separator[1:]...), FormatEntry(fm2, "second")...)
	es, err = ParseFile(two)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[1].Importance != Low || es[1].Body != "second" || es[0].Body != wantBody {
		t.Fatalf("%d entries: %+v\n%s", len(es), es, two)
	}
	if es[1].Line != strings.Count(string(one), "\n")+4 {
		t.Errorf("second entry at line %d", es[1].Line)
	}
}

func TestSlugify(t *testing.T) {
	cases := map[string]string{
		"OAuth2 Integration Was Too Broad": "oauth2-integration-was-too-broad",
		"Express middleware pattern":       "express-middleware-pattern",
		"../../etc/passwd":                 "etc-passwd",
		"Don't use `eval`!":                "dont-use-eval",
		"Datenbank-Schema für Ärzte":       "datenbank-schema-für-ärzte",
		"CON":                              "con-memory",
		"   ":                              Slugify("   "),
		"Database schema version 2.1":      "database-schema-version-2-1",
	}
	for in, want := range cases {
		if got := Slugify(in); got != want {
			t.Errorf("Slugify(%q) = %q, want %q", in, got, want)
		}
	}
	if s := Slugify("   "); !strings.HasPrefix(s, "memory-") {
		t.Errorf("blank title: %q", s)
	}
	long := Slugify(strings.Repeat("abcdefghij ", 30))
	if len(long) > maxSlugLen || strings.HasSuffix(long, "-") {
		t.Errorf("long slug %q", long)
	}
}

func TestPreview(t *testing.T) {
	short := "# T\n\nshort body"
	if Preview(short) != short {
		t.Error("short body changed")
	}
	long := strings.Repeat("é", 600)
	if p := Preview(long); p != strings.Repeat("é", 500)+"..." {
		t.Errorf("long preview has %d runes", len([]rune(p)))
	}
	h := "# First\n\nIntro.\n# Second\n\n" + strings.Repeat("x", 600)
	if p := Preview(h); p != "# First\n\nIntro." {
		t.Errorf("heading preview %q", p)
	}
}

// Each frontmatter field reads its kind of value and reports a bad one at
// the value's line with its own message.
func TestParseFrontmatterFieldKinds(t *testing.T) {
	manyNames := func(n int) string {
		var b strings.Builder
		b.WriteString("[")
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("m" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strings.Repeat("y", i/26))
		}
		return b.String() + "]"
	}
	bad := []struct {
		name, field string
		line        int
		msg         string
	}{
		{"title list", "title: [a, b]", 2, "title must be a single value"},
		{"whenToUse too many", "whenToUse: " + manyNames(MaxPatterns+1), 3, "whenToUse has 51 patterns; at most 50 are allowed"},
		{"whenToUse too long", "whenToUse: " + strings.Repeat("p", maxPatternLen+1), 3, "a whenToUse pattern is longer than"},
		{"tags mapping", "tags: {a: b}", 4, "tags must be a string or a list of strings"},
		{"tags too many", "tags: " + manyNames(maxTags+1), 4, "tags has 51 entries; at most 50 are allowed"},
		{"importance list", "importance: [high]", 4, "importance must be a single value"},
		{"discoveredAt list", "discoveredAt: [1]", 4, "discoveredAt must be a single value"},
		{"discoveredBy list", "discoveredBy: [a]", 4, "discoveredBy must be a single value"},
		{"discoveredIn list", "discoveredIn: {a: b}", 4, "discoveredIn must be a single value"},
		{"source list", "source: [a]", 4, "source must be a single value"},
		{"relatedMemories too many", "relatedMemories: " + manyNames(maxTags+1), 4, "relatedMemories has 51 entries"},
		{"relatedMemories mapping", "relatedMemories: {a: b}", 4, "relatedMemories must be a string or a list"},
		{"occurredAt bad", "occurredAt: soon", 4, `occurredAt "soon" is not an ISO 8601 time`},
		{"occurredAt list", "occurredAt: [1]", 4, "occurredAt must be a single value"},
		{"negative bad", "negative: maybe", 4, `negative is "maybe"; use true or false`},
		{"merged bad", "merged: often", 4, `merged is "often"; use true or false`},
		{"merged list", "merged: [true]", 4, "merged must be a single value"},
		{"supersedes too many", "supersedes: " + manyNames(maxTags+1), 4, "supersedes has 51 entries"},
		{"conflicts mapping", "conflicts: {a: b}", 4, "conflicts must be a string or a list"},
		{"provenance list", "provenance: [a]", 4, "provenance must be a single value"},
		{"extractedHash list", "extractedHash: [a]", 4, "extractedHash must be a single value"},
		{"author bad", "author: robot", 4, `author is "robot"; use user or extraction`},
		{"author list", "author: [user]", 4, "author must be a single value"},
		{"key not a word", "[a]: b", 4, "field names must be plain words"},
		{"too large", "source: " + strings.Repeat("s", maxFrontmatterBytes), 1, "larger than"},
		{"empty", "", 1, "the frontmatter is empty"},
		{"title too long", "", 1, "title is longer than 200 bytes"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			var src string
			switch {
			case strings.HasPrefix(c.field, "title:"):
				src = "---\n" + c.field + "\nwhenToUse: a\n---\n"
			case strings.HasPrefix(c.field, "whenToUse:"):
				src = "---\ntitle: x\n" + c.field + "\n---\n"
			case c.name == "empty":
				src = "---\n---\n"
			case c.name == "title too long":
				src = "---\ntitle: " + strings.Repeat("t", MaxTitleLen+1) + "\nwhenToUse: a\n---\n"
			default:
				src = "---\ntitle: x\nwhenToUse: a\n" + c.field + "\n---\n"
			}
			_, err := ParseFile([]byte(src))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err %v, want a *ParseError", err)
			}
			if pe.Line != c.line || !strings.Contains(pe.Msg, c.msg) {
				t.Errorf("line %d %q, want line %d containing %q", pe.Line, pe.Msg, c.line, c.msg)
			}
		})
	}

	src := "---\ntitle: \" Spaced\\ttitle \"\nwhenToUse: \"a, b\"\ntags: \"x, y, x\"\nimportance: critical\n" +
		"discoveredAt: 2026-01-02\noccurredAt: 2025-12-31T08:00\ndiscoveredBy: \" dev \"\ndiscoveredIn: task\nsource: doc.md\n" +
		"relatedMemories: [one.md, two]\nnegative: true\nmerged: \"false\"\nsupersedes: old.md, older\nconflicts: [rival.md]\n" +
		"provenance: " + strings.Repeat("p", 3*maxPatternLen) + "\nauthor: \" User \"\nextractedHash: \" 00ff \"\nextra: [kept, out]\n---\nbody\n"
	es, err := ParseFile([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	fm := es[0].Frontmatter
	want := Frontmatter{
		Title: "Spaced title", WhenToUse: []string{"a, b"}, Tags: []string{"x", "y"}, Importance: Critical,
		DiscoveredAt: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), OccurredAt: time.Date(2025, 12, 31, 8, 0, 0, 0, time.UTC),
		DiscoveredBy: "dev", DiscoveredIn: "task", Source: "doc.md", RelatedMemories: []string{"one.md", "two"},
		Negative: true, Supersedes: []string{"old", "older"}, Conflicts: []string{"rival"},
		Provenance: fm.Provenance, Author: AuthorUser,
	}
	if !reflect.DeepEqual(fm, want) {
		t.Errorf("frontmatter\n got %+v\nwant %+v", fm, want)
	}
	if len(fm.Provenance) >= 3*maxPatternLen || !strings.HasPrefix(fm.Provenance, "ppp") {
		t.Errorf("provenance is %d bytes, want it clipped", len(fm.Provenance))
	}
}
