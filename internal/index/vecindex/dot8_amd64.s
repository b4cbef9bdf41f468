//go:build amd64 && !purego

#include "textflag.h"

// func dot8AVX2(a, b *int8, n int) int32
//
// Σ a[i]·b[i] over n bytes (n a positive multiple of 16): 16 bytes of each
// are sign-extended to 16 bits, multiplied and summed in pairs to 8 int32
// (VPMADDWD, exact: |a·b| ≤ 2^14), and accumulated; the 8 lanes are summed
// at the end.
TEXT ·dot8AVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y4, Y4, Y4
	CMPQ CX, $32
	JLT tail

loop32:
	VPMOVSXBW (SI), Y1
	VPMOVSXBW (DI), Y2
	VPMADDWD Y1, Y2, Y3
	VPADDD Y3, Y0, Y0
	VPMOVSXBW 16(SI), Y5
	VPMOVSXBW 16(DI), Y6
	VPMADDWD Y5, Y6, Y7
	VPADDD Y7, Y4, Y4
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $32, CX
	CMPQ CX, $32
	JGE loop32

tail:
	TESTQ CX, CX
	JZ done
	VPMOVSXBW (SI), Y1
	VPMOVSXBW (DI), Y2
	VPMADDWD Y1, Y2, Y3
	VPADDD Y3, Y0, Y0

done:
	VPADDD Y4, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0x4E, X0, X1
	VPADDD X1, X0, X0
	VPSHUFD $0xB1, X0, X1
	VPADDD X1, X0, X0
	VMOVD X0, AX
	VZEROUPPER
	MOVL AX, ret+24(FP)
	RET
