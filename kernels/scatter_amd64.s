//go:build goexperiment.simd

#include "textflag.h"

// func addScaledAtAVX512(out *float32, n int, idx *int32, vals *float32, blocks int, w float32) int
//
// out[idx[k]] += vals[k]·w for k < 16·blocks, 16 entries a block, two blocks a round:
// both gathers issue before either scatter. The product is rounded (VMULPS) before
// the add (VADDPS), as the scalar loop does; distinct indices make the
// gather–add–scatter exact. Every index is compared (unsigned) with n, the length of
// out, before its block is touched: at the first block with one out of range it stops
// and returns the number of blocks done.
TEXT ·addScaledAtAVX512(SB), NOSPLIT, $0-56
	MOVQ         out+0(FP), DI
	MOVQ         n+8(FP), R9
	MOVQ         idx+16(FP), SI
	MOVQ         vals+24(FP), DX
	MOVQ         blocks+32(FP), CX
	VBROADCASTSS w+40(FP), Z0
	VPBROADCASTD R9, Z7
	XORQ         AX, AX
	MOVQ         CX, R8
	SHRQ         $1, R8
	TESTQ        R8, R8
	JZ           one

pair:
	VMOVDQU32    (SI), Z1
	VMOVDQU32    64(SI), Z4
	VPCMPUD      $1, Z7, Z1, K5
	KORTESTW     K5, K5
	JCC          done
	VPCMPUD      $1, Z7, Z4, K6
	KORTESTW     K6, K6
	JCC          one
	VMULPS       (DX), Z0, Z2
	VMULPS       64(DX), Z0, Z5
	KXNORW       K1, K1, K1
	KXNORW       K3, K3, K3
	VGATHERDPS   (DI)(Z1*4), K1, Z3
	VGATHERDPS   (DI)(Z4*4), K3, Z6
	VADDPS       Z2, Z3, Z3
	VADDPS       Z5, Z6, Z6
	KXNORW       K2, K2, K2
	KXNORW       K4, K4, K4
	VSCATTERDPS  Z3, K2, (DI)(Z1*4)
	VSCATTERDPS  Z6, K4, (DI)(Z4*4)
	ADDQ         $128, SI
	ADDQ         $128, DX
	ADDQ         $2, AX
	DECQ         R8
	JNZ          pair

one:
	CMPQ         AX, CX
	JGE          done
	VMOVDQU32    (SI), Z1
	VPCMPUD      $1, Z7, Z1, K5
	KORTESTW     K5, K5
	JCC          done
	VMULPS       (DX), Z0, Z2
	KXNORW       K1, K1, K1
	VGATHERDPS   (DI)(Z1*4), K1, Z3
	VADDPS       Z2, Z3, Z3
	KXNORW       K2, K2, K2
	VSCATTERDPS  Z3, K2, (DI)(Z1*4)
	INCQ         AX

done:
	MOVQ         AX, ret+48(FP)
	VZEROUPPER
	RET
