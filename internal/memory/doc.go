// Package memory gives agents long-term memory as files: Markdown files with YAML frontmatter in a memory directory, matched
// against each task and delivered to a model as background knowledge.
//
// # Memory files
//
// A memory directory (by default <data dir>/memories, or a project's
// .ragmem/memories) holds Markdown files with YAML frontmatter: title,
// whenToUse, tags, importance, discoveredAt, discoveredBy, discoveredIn,
// source and relatedMemories (see Frontmatter). A Store reads the
// frontmatter of every file and leaves bodies on disk until they are
// needed; invalid files are reported (Problems, with file and line) and
// skipped. Writes are append-only (Store.Add, the one place a memory is
// written): a memory whose slug exists is appended after a "---"
// separator, through a temporary file, fsync, rename and directory fsync.
//
// # Matching and ranking
//
// Store.Match selects memories for an agent's task: whenToUse patterns
// (pipe alternatives, wildcards, regular expressions, substrings, and
// natural language matched by content words and, through ragmem's hybrid
// search over the indexed patterns, by embedding similarity), scored with
// one table (importance, recency, keywords, agent specialty, same
// discoverer; 0–100) and ranked together with retrieval relevance, in one
// place (rank.go). Memory files are indexed with docType "memory" and
// re-indexed when they change on disk.
//
// FormatForPrompt renders the "Background Knowledge from Previous Runs"
// section; ContextMessage delivers it as untrusted reference data in its own
// message, never inside the system prompt.
//
// # The other agent-memory packages
//
//   - memory/extraction: a chat model decides whether an agent's run is
//     worth remembering and writes the memory (CLI, HTTP and MCP).
//   - memory/layers: working, episodic, semantic and procedural memory,
//     a library for agent loops.
//   - memory/inject: the memory files, rules and episodes for an agent's
//     next step in one message within a token limit, a library.
//   - memory/memhttp and memory/memmcp: the HTTP endpoints and MCP tools.
//
// The CLI is ragmem memory; docs/memory.md describes all of it.
//
// Store and Stores are safe for concurrent use; the other types are plain
// values.
package memory
