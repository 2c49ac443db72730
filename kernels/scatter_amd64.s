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

// SCAT4 stores the four float32 lanes of XS at out[idx[k]] for the four indices at
// k(SI) (DI: out; clobbers R10).
#define SCAT4(k, XS) \
	MOVLQSX    k(SI), R10; \
	VMOVSS     XS, (DI)(R10*4); \
	MOVLQSX    k+4(SI), R10; \
	VEXTRACTPS $1, XS, (DI)(R10*4); \
	MOVLQSX    k+8(SI), R10; \
	VEXTRACTPS $2, XS, (DI)(R10*4); \
	MOVLQSX    k+12(SI), R10; \
	VEXTRACTPS $3, XS, (DI)(R10*4)

// INRANGE jumps to bad unless every index of block YI is in [0, n): an index is
// compared unsigned with n by flipping both sign bits (Y6: 2³¹ in every lane, Y7:
// n ⊕ 2³¹) and comparing signed (clobbers Y8, R10).
#define INRANGE(YI, bad) \
	VPXOR      Y6, YI, Y8; \
	VPCMPGTD   Y8, Y7, Y8; \
	VMOVMSKPS  Y8, R10; \
	CMPL       R10, $0xff; \
	JNE        bad

// func addScaledAtAVX2(out *float32, n int, idx *int32, vals *float32, blocks int, w float32) int
//
// addScaledAtAVX512 in 256-bit registers, 8 entries a block, two blocks a round: the
// products (VMULPS, rounded) and the gathered sums (VADDPS) are vectors as there, both
// gathers issue before either block's stores, and the stores (AVX2 has no scatter) are
// one VMOVSS or VEXTRACTPS a lane, from the indices in memory. Distinct indices make
// the gather–add–store exact, so the bits are the scalar loop's. n ≤ 2³¹.
TEXT ·addScaledAtAVX2(SB), NOSPLIT, $0-56
	MOVQ         out+0(FP), DI
	MOVQ         n+8(FP), R9
	MOVQ         idx+16(FP), SI
	MOVQ         vals+24(FP), DX
	MOVQ         blocks+32(FP), CX
	VBROADCASTSS w+40(FP), Y0
	MOVL         $0x80000000, R10
	VMOVQ        R10, X6
	VPBROADCASTD X6, Y6
	XORL         R10, R9
	VMOVQ        R9, X7
	VPBROADCASTD X7, Y7
	XORQ         AX, AX
	MOVQ         CX, R8
	SHRQ         $1, R8
	TESTQ        R8, R8
	JZ           one2

pair2:
	VMOVDQU      (SI), Y1
	VMOVDQU      32(SI), Y4
	INRANGE(Y1, done2)
	INRANGE(Y4, one2)
	VMULPS       (DX), Y0, Y2
	VMULPS       32(DX), Y0, Y5
	VPCMPEQD     Y9, Y9, Y9
	VPCMPEQD     Y10, Y10, Y10
	VXORPS       Y3, Y3, Y3
	VXORPS       Y11, Y11, Y11
	VGATHERDPS   Y9, (DI)(Y1*4), Y3
	VGATHERDPS   Y10, (DI)(Y4*4), Y11
	VADDPS       Y2, Y3, Y3
	VADDPS       Y5, Y11, Y11
	SCAT4(0, X3)
	VEXTRACTF128 $1, Y3, X3
	SCAT4(16, X3)
	SCAT4(32, X11)
	VEXTRACTF128 $1, Y11, X11
	SCAT4(48, X11)
	ADDQ         $64, SI
	ADDQ         $64, DX
	ADDQ         $2, AX
	DECQ         R8
	JNZ          pair2

one2:
	CMPQ         AX, CX
	JGE          done2
	VMOVDQU      (SI), Y1
	INRANGE(Y1, done2)
	VMULPS       (DX), Y0, Y2
	VPCMPEQD     Y9, Y9, Y9
	VXORPS       Y3, Y3, Y3
	VGATHERDPS   Y9, (DI)(Y1*4), Y3
	VADDPS       Y2, Y3, Y3
	SCAT4(0, X3)
	VEXTRACTF128 $1, Y3, X3
	SCAT4(16, X3)
	INCQ         AX

done2:
	MOVQ         AX, ret+48(FP)
	VZEROUPPER
	RET
