// Package memory gives agents long-term memory (seeds 000–003): memory
// files that are matched against each task and injected as background
// knowledge, four memory layers, an injector with a token limit and a
// cache, and extraction of new memories by a language model.
//
// # Memory files
//
// A memory directory (by default <data dir>/memories, or a project's
// .ragmem/memories) holds Markdown files with YAML frontmatter: title,
// whenToUse, tags, importance, discoveredAt, discoveredBy, discoveredIn,
// source and relatedMemories (see Frontmatter). A Store reads the
// frontmatter of every file and leaves bodies on disk until they are
// needed; invalid files are reported (Problems, with file and line) and
// skipped. Writes are append-only (Store.Add): a memory whose slug exists is
// appended after a "---" separator, through a temporary file, fsync, rename
// and directory fsync.
//
// Store.Match selects memories for an agent's task: whenToUse patterns
// (pipe alternatives, wildcards, regular expressions, substrings, and
// natural language matched by content words and, through ragmem's hybrid
// search over the indexed patterns, by embedding similarity), scored with
// the seed's table (importance, recency, keywords, agent specialty, same
// discoverer; 0–100) and ranked together with retrieval relevance. Memory
// files are indexed with docType "memory" and re-indexed when they change
// on disk.
//
// FormatForPrompt renders the seed's "Background Knowledge from Previous
// Runs"; ContextMessage delivers it as untrusted reference data in its own
// message, never inside the system prompt.
//
// # Layers, injector, extraction
//
// A Manager holds working, episodic, semantic and procedural memory (seed
// 002). An Injector retrieves memory files, rules and episodes for a step
// within a token budget and caches the result (seed 003). An Extractor asks
// a model whether an execution is worth remembering and writes the memory
// (seed 001).
//
// Store, Manager, Injector and Extractor are safe for concurrent use.
package memory
