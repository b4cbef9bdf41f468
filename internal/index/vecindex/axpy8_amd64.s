//go:build amd64 && !purego

#include "textflag.h"

// func axpy8AVX2(acc *float32, col *int8, n int, q float32)
//
// acc[i] += q·float32(col[i]) for n elements (n a positive multiple of 8):
// 8 bytes at a time are sign-extended to int32 (VPMOVSXBD), converted to
// float32 (exact: |col[i]| ≤ 128), multiplied by q and added to acc, the
// product and the sum each rounded as Go rounds them (no fused
// multiply-add), 32 elements per iteration while they last.
TEXT ·axpy8AVX2(SB), NOSPLIT, $0-28
	MOVQ acc+0(FP), DI
	MOVQ col+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS q+24(FP), Y0
	CMPQ CX, $32
	JLT tail8

loop32:
	VPMOVSXBD (SI), Y1
	VPMOVSXBD 8(SI), Y2
	VPMOVSXBD 16(SI), Y3
	VPMOVSXBD 24(SI), Y4
	VCVTDQ2PS Y1, Y1
	VCVTDQ2PS Y2, Y2
	VCVTDQ2PS Y3, Y3
	VCVTDQ2PS Y4, Y4
	VMULPS Y0, Y1, Y1
	VMULPS Y0, Y2, Y2
	VMULPS Y0, Y3, Y3
	VMULPS Y0, Y4, Y4
	VADDPS (DI), Y1, Y1
	VADDPS 32(DI), Y2, Y2
	VADDPS 64(DI), Y3, Y3
	VADDPS 96(DI), Y4, Y4
	VMOVUPS Y1, (DI)
	VMOVUPS Y2, 32(DI)
	VMOVUPS Y3, 64(DI)
	VMOVUPS Y4, 96(DI)
	ADDQ $32, SI
	ADDQ $128, DI
	SUBQ $32, CX
	CMPQ CX, $32
	JGE loop32

tail8:
	TESTQ CX, CX
	JZ done
	VPMOVSXBD (SI), Y1
	VCVTDQ2PS Y1, Y1
	VMULPS Y0, Y1, Y1
	VADDPS (DI), Y1, Y1
	VMOVUPS Y1, (DI)
	ADDQ $8, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP tail8

done:
	VZEROUPPER
	RET
