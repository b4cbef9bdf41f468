package tokens

import (
	"math"
	"sync"
)

// bpe is one encoding's byte-pair table and its pre-tokenizer.
type bpe struct {
	ranks   map[string]int // token bytes -> rank (= token id)
	decoder []string       // token id -> bytes ("" for ids without bytes)
	special map[int]string // special token ids -> text (decoding only)
	pat     pattern

	cache pieceCache
}

// A part of a piece being merged: where it starts and the rank of merging
// it with the next part (math.MaxInt when that pair is not a token).
type part struct{ start, rank int }

var partPool = sync.Pool{New: func() any { s := make([]part, 0, 64); return &s }}

// merge runs tiktoken's byte-pair merge on piece (len >= 2) and calls emit
// with the bounds of each resulting token, in order. It is the algorithm of
// tiktoken-go's bytePairMerge (the lowest rank merges first; ties go to the
// leftmost pair), without its allocations.
func (b *bpe) merge(piece string, emit func(start, end int)) {
	pp := partPool.Get().(*[]part)
	parts := (*pp)[:0]
	for i := 0; i <= len(piece); i++ {
		parts = append(parts, part{i, math.MaxInt})
	}
	rank := func(i, skip int) int {
		if i+skip+2 < len(parts) {
			if r, ok := b.ranks[piece[parts[i].start:parts[i+skip+2].start]]; ok {
				return r
			}
		}
		return math.MaxInt
	}
	for i := 0; i < len(parts)-2; i++ {
		parts[i].rank = rank(i, 0)
	}
	for len(parts) > 1 {
		minRank, minIdx := math.MaxInt, -1
		for i := 0; i < len(parts)-1; i++ {
			if parts[i].rank < minRank {
				minRank, minIdx = parts[i].rank, i
			}
		}
		if minIdx < 0 {
			break
		}
		i := minIdx
		parts[i].rank = rank(i, 1)
		if i > 0 {
			parts[i-1].rank = rank(i-1, 1)
		}
		parts = append(parts[:i+1], parts[i+2:]...)
	}
	for i := 0; i < len(parts)-1; i++ {
		emit(parts[i].start, parts[i+1].start)
	}
	*pp = parts
	partPool.Put(pp)
}

// appendPiece appends the token ids of one pre-tokenized piece.
func (b *bpe) appendPiece(dst []int, piece string) []int {
	if id, ok := b.ranks[piece]; ok {
		return append(dst, id)
	}
	if len(piece) == 1 {
		return append(dst, b.ranks[piece]) // every byte is a token
	}
	b.merge(piece, func(s, e int) { dst = append(dst, b.ranks[piece[s:e]]) })
	return dst
}

// countPiece returns the number of tokens of one pre-tokenized piece.
func (b *bpe) countPiece(piece string) int {
	if _, ok := b.ranks[piece]; ok || len(piece) == 1 {
		return 1
	}
	if n, ok := b.cache.get(piece); ok {
		return n
	}
	n := 0
	b.merge(piece, func(int, int) { n++ })
	b.cache.put(piece, n)
	return n
}

// encode appends the ids of s (valid UTF-8, no long runs) to dst.
func (b *bpe) encode(dst []int, s string) []int {
	for i := 0; i < len(s); {
		e := b.pat.nextPiece(s, i)
		dst = b.appendPiece(dst, s[i:e])
		i = e
	}
	return dst
}

// count returns the number of tokens of s (valid UTF-8, no long runs).
func (b *bpe) count(s string) int {
	n := 0
	for i := 0; i < len(s); {
		e := b.pat.nextPiece(s, i)
		n += b.countPiece(s[i:e])
		i = e
	}
	return n
}

// pieceCache remembers the token counts of pieces that needed merging (words
// outside the vocabulary recur: names, terms, numbers with units). It is
// bounded: a shard that fills up is emptied. Safe for concurrent use.
type pieceCache struct {
	shards [16]cacheShard
}

type cacheShard struct {
	mu sync.RWMutex
	m  map[string]int32
}

const (
	cacheShardEntries = 4096 // per shard: at most 64k pieces in all
	cacheMaxPiece     = 64   // longer pieces are not cached
)

func (c *pieceCache) shard(s string) *cacheShard {
	// FNV-1a over at most the first 16 bytes and the length.
	h := uint32(2166136261)
	for i := 0; i < len(s) && i < 16; i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	h = (h ^ uint32(len(s))) * 16777619
	return &c.shards[h%uint32(len(c.shards))]
}

func (c *pieceCache) get(s string) (int, bool) {
	if len(s) > cacheMaxPiece {
		return 0, false
	}
	sh := c.shard(s)
	sh.mu.RLock()
	n, ok := sh.m[s]
	sh.mu.RUnlock()
	return int(n), ok
}

func (c *pieceCache) put(s string, n int) {
	if len(s) > cacheMaxPiece {
		return
	}
	sh := c.shard(s)
	sh.mu.Lock()
	if sh.m == nil || len(sh.m) >= cacheShardEntries {
		sh.m = make(map[string]int32, 256)
	}
	sh.m[string([]byte(s))] = int32(n) // own copy: s may be part of a huge text
	sh.mu.Unlock()
}
