// Package reserved names what belongs to the user's memory and preference
// stores in an index: their document types, the attributes the memory store
// writes on its records and the URL schemes of their sources. Only those
// stores write and delete such records (memory.Store and prefs.Store, through
// engine.Index); rag.Engine, and with it every route of the HTTP API, the MCP
// tools, the Go adapters and the CLI, refuses them (rag's reserved.go), and
// the index never lets another kind of document replace one of their
// sources.
//
// It is the one list of them: the packages that write reserved records take
// their names from here.
package reserved

import "strings"

// Document types of the stores.
const (
	DocPreference    = "preference"     // a statement of the user's profile (prefs)
	DocMemory        = "memory"         // an agent memory (memory, memory/layers)
	DocMemoryPattern = "memory-pattern" // a memory's natural-language whenToUse pattern (memory)
)

// Attribute keys the memory store writes on its records.
const (
	AttrMemoryDir       = "memoryDir"       // the memory directory (absolute path)
	AttrMemorySlug      = "memorySlug"      // the memory's slug (file name without .md)
	AttrMemoryKind      = "memoryKind"      // content or pattern
	AttrMemoryPattern   = "memoryPattern"   // a natural-language pattern as written
	AttrMemoryAuthor    = "memoryAuthor"    // who wrote the memory: user or extraction
	AttrMemoryConflicts = "memoryConflicts" // memories it may contradict, flagged (slugs, comma-separated)
	AttrPreference      = "preferenceType"
)

// Schemes are the URL schemes of the stores' sources: preference://user,
// the memory layers' memory-layer://… and the memory: names under which
// memory files are shown.
var schemes = []string{"preference", "memory", "memory-layer"}

var attrs = []string{AttrMemoryDir, AttrMemorySlug, AttrMemoryKind, AttrMemoryPattern, AttrMemoryAuthor, AttrMemoryConflicts, AttrPreference}

// DocType reports whether t is a document type of the stores.
func DocType(t string) bool {
	t = strings.TrimSpace(t)
	return t == DocPreference || t == DocMemory || t == DocMemoryPattern
}

// Attr reports whether k is an attribute key of the stores (in any case:
// "MemoryDir" is refused too, so that no near-copy passes for one).
func Attr(k string) bool {
	for _, a := range attrs {
		if strings.EqualFold(strings.TrimSpace(k), a) {
			return true
		}
	}
	return false
}

// Scheme returns the reserved scheme of the URL u, in lower case ("" when
// its scheme is not reserved).
func Scheme(u string) string {
	scheme, _, ok := strings.Cut(strings.TrimSpace(u), ":")
	if !ok {
		return ""
	}
	for _, s := range schemes {
		if strings.EqualFold(scheme, s) {
			return s
		}
	}
	return ""
}

// Owner names, for messages, the store a reserved document type, scheme or
// attribute belongs to and how it is written: "preferences (POST
// /v1/preferences, ragmem prefs, the add_preference tool)" or the memories'.
func Owner(name string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == DocPreference || strings.HasPrefix(n, "preference") {
		return "the user's preferences, written only through the preference API (POST /v1/preferences, ragmem prefs, the add_preference tool)"
	}
	return "the agent memories, written only through the memory API (POST /v1/memories, ragmem memory, the remember tool)"
}
