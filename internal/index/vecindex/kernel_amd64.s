//go:build amd64 && !purego

#include "textflag.h"

// func scanBlocksAVX512(codes *uint64, nblocks, words int, planes *uint64, f *scanFactors, q *scanQuery, ts *uint32, masks *uint8)
//
// For each block of 8 slots: Z0..Z3 accumulate, lane by lane, the popcounts
// of (word w of the 8 codes) AND (word w of plane j, broadcast). Then
// T = Z0 + 2·Z1 + 4·Z2 + 8·Z3 is narrowed to 8 uint32 and stored in ts, and
// bit l of the block's mask byte is set when slot l's upper bound
// cq + a·(2Δ·T + 2lo·ones − Σ) + eps·err reaches thr.
TEXT ·scanBlocksAVX512(SB), NOSPLIT, $0-64
	MOVQ codes+0(FP), SI
	MOVQ nblocks+8(FP), R8
	MOVQ words+16(FP), R9
	MOVQ planes+24(FP), R10
	MOVQ f+32(FP), R11
	MOVQ q+40(FP), R12
	MOVQ ts+48(FP), DX
	MOVQ masks+56(FP), BX
	MOVQ 0(R11), R13 // a
	MOVQ 24(R11), R14 // ones
	MOVQ 48(R11), R15 // err
	VBROADCASTSS 0(R12), Y9   // cq
	VBROADCASTSS 4(R12), Y10  // 2Δ
	VBROADCASTSS 8(R12), Y11  // 2lo
	VBROADCASTSS 12(R12), Y12 // Σ
	VBROADCASTSS 16(R12), Y13 // eps
	VBROADCASTSS 20(R12), Y14 // thr

block:
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
	MOVQ R10, DI
	MOVQ R9, CX

word:
	VMOVDQU64 (SI), Z4
	VPANDQ.BCST 0(DI), Z4, Z5
	VPOPCNTQ Z5, Z5
	VPADDQ Z5, Z0, Z0
	VPANDQ.BCST 8(DI), Z4, Z6
	VPOPCNTQ Z6, Z6
	VPADDQ Z6, Z1, Z1
	VPANDQ.BCST 16(DI), Z4, Z7
	VPOPCNTQ Z7, Z7
	VPADDQ Z7, Z2, Z2
	VPANDQ.BCST 24(DI), Z4, Z8
	VPOPCNTQ Z8, Z8
	VPADDQ Z8, Z3, Z3
	ADDQ $64, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  word

	VPSLLQ $1, Z1, Z1
	VPSLLQ $2, Z2, Z2
	VPSLLQ $3, Z3, Z3
	VPADDQ Z1, Z0, Z0
	VPADDQ Z3, Z2, Z2
	VPADDQ Z2, Z0, Z0
	VPMOVQD Z0, Y0
	VMOVDQU Y0, (DX)

	// ub = cq + a·(2Δ·T + 2lo·ones − Σ) + eps·err
	VCVTDQ2PS Y0, Y0
	VMULPS Y10, Y0, Y0
	VMOVUPS (R14), Y5
	VFMADD231PS Y11, Y5, Y0
	VSUBPS Y12, Y0, Y0
	VMOVUPS (R13), Y6
	VMOVAPS Y9, Y7
	VFMADD231PS Y6, Y0, Y7
	VMOVUPS (R15), Y8
	VFMADD231PS Y13, Y8, Y7
	VCMPPS $13, Y14, Y7, Y7
	VMOVMSKPS Y7, AX
	MOVB AX, (BX)

	ADDQ $32, DX
	ADDQ $32, R13
	ADDQ $32, R14
	ADDQ $32, R15
	INCQ BX
	DECQ R8
	JNZ  block

	VZEROUPPER
	RET
