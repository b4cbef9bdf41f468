package local

// Sequence returns the journal sequence of the last operation the store
// applied (the one Recovery().SequenceOnOpen reports as of Open).
func (b *Backend) Sequence() uint64 {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.seq
}
