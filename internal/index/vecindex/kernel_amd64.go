//go:build amd64 && !purego

package vecindex

import "golang.org/x/sys/cpu"

// useAVX512 selects the AVX-512 kernel (kernel_amd64.s) on CPUs with
// AVX-512 VPOPCNTDQ (and FMA); others run scanBlocksGo.
var useAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VPOPCNTDQ && cpu.X86.HasFMA

//go:noescape
func scanBlocksAVX512(codes *uint64, nblocks, words int, planes *uint64, f *scanFactors, q *scanQuery, ts *uint32, masks *uint8)

// scanBlocks computes T of every slot of len(masks) blocks into ts and
// marks the slots whose upper bound reaches q.thr (see scanBlocksGo).
func scanBlocks(codes []uint64, words int, planes []uint64, f scanFactors, q *scanQuery, ts []uint32, masks []uint8) {
	nb := len(masks)
	if nb == 0 {
		return
	}
	if !useAVX512 {
		scanBlocksGo(codes, words, planes, f, q, ts, masks)
		return
	}
	n := nb * codeBlock
	_, _, _, _, _ = codes[n*words-1], planes[4*words-1], f.a[n-1], f.ones[n-1], f.err[n-1]
	_ = ts[n-1]
	scanBlocksAVX512(&codes[0], nb, words, &planes[0], &f, q, &ts[0], &masks[0])
}
