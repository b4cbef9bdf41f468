//go:build race

package memory

// raceEnabled reports a -race build, which runs several times slower: the
// generated streams and histories are shorter there (the figures in the
// docs come from runs without -race).
const raceEnabled = true
