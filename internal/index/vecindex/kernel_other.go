//go:build !amd64 || purego

package vecindex

// useAVX512 is false: there is no assembly kernel on this platform.
const useAVX512 = false

// scanBlocks computes T of every slot of len(masks) blocks into ts and
// marks the slots whose upper bound reaches q.thr (see scanBlocksGo).
func scanBlocks(codes []uint64, words int, planes []uint64, f scanFactors, q *scanQuery, ts []uint32, masks []uint8) {
	scanBlocksGo(codes, words, planes, f, q, ts, masks)
}
