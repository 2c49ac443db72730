//go:build goexperiment.simd

#include "textflag.h"

// PREFETCH4(off) prefetches the neighbour rows ([node][8] float64, 64 bytes) of the
// four columns at off(SI), with y at R8 (clobbers AX, BX, DX, R10).
#define PREFETCH4(off) \
	MOVL off(SI), AX; MOVL off+4(SI), BX; MOVL off+8(SI), DX; MOVL off+12(SI), R10; \
	SHLQ $6, AX; SHLQ $6, BX; SHLQ $6, DX; SHLQ $6, R10; \
	PREFETCHT0 (R8)(AX*1); PREFETCHT0 (R8)(BX*1); PREFETCHT0 (R8)(DX*1); PREFETCHT0 (R8)(R10*1)

// func pprTileGatherAVX512(cols *int32, vals *float32, groups int, y *float64, acc *[8][8]float64)
//
// acc[r][b] = Σ_k vals[8k+r]·y[8·cols[8k+r]+b] for k < groups: the 8 rows of one SELL-8
// slice for a tile of 8 queries stored [node][8], one 64-byte load and one fused
// multiply-add per entry, 8 accumulators Z0–Z7. The tile (64 bytes a node) outgrows
// the core's L2 from ~30K nodes, so each group first prefetches the neighbour rows of
// the group 8 ahead (pprPrefetchGroups; 256 bytes of cols, which the layout pads
// past its last group): the loads then overlap instead of waiting on L3 one by one.
TEXT ·pprTileGatherAVX512(SB), NOSPLIT, $64-40
	MOVQ    cols+0(FP), SI
	MOVQ    vals+8(FP), DI
	MOVQ    groups+16(FP), CX
	MOVQ    y+24(FP), R8
	MOVQ    acc+32(FP), R9
	VXORPD  Z0, Z0, Z0
	VXORPD  Z1, Z1, Z1
	VXORPD  Z2, Z2, Z2
	VXORPD  Z3, Z3, Z3
	VXORPD  Z4, Z4, Z4
	VXORPD  Z5, Z5, Z5
	VXORPD  Z6, Z6, Z6
	VXORPD  Z7, Z7, Z7
	TESTQ   CX, CX
	JZ      pdone

ploop:
	PREFETCH4(256)
	PREFETCH4(272)
	VCVTPS2PD (DI), Z8
	VMOVUPD   Z8, w-64(SP)
	MOVL      0(SI), AX
	MOVL      4(SI), BX
	MOVL      8(SI), DX
	MOVL      12(SI), R10
	SHLQ      $6, AX
	SHLQ      $6, BX
	SHLQ      $6, DX
	SHLQ      $6, R10
	VMOVUPD   (R8)(AX*1), Z9
	VMOVUPD   (R8)(BX*1), Z10
	VMOVUPD   (R8)(DX*1), Z11
	VMOVUPD   (R8)(R10*1), Z12
	VFMADD231PD.BCST w-64(SP), Z9, Z0
	VFMADD231PD.BCST w-56(SP), Z10, Z1
	VFMADD231PD.BCST w-48(SP), Z11, Z2
	VFMADD231PD.BCST w-40(SP), Z12, Z3
	MOVL      16(SI), AX
	MOVL      20(SI), BX
	MOVL      24(SI), DX
	MOVL      28(SI), R10
	SHLQ      $6, AX
	SHLQ      $6, BX
	SHLQ      $6, DX
	SHLQ      $6, R10
	VMOVUPD   (R8)(AX*1), Z13
	VMOVUPD   (R8)(BX*1), Z14
	VMOVUPD   (R8)(DX*1), Z15
	VMOVUPD   (R8)(R10*1), Z16
	VFMADD231PD.BCST w-32(SP), Z13, Z4
	VFMADD231PD.BCST w-24(SP), Z14, Z5
	VFMADD231PD.BCST w-16(SP), Z15, Z6
	VFMADD231PD.BCST w-8(SP), Z16, Z7
	ADDQ      $32, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       ploop

pdone:
	VMOVUPD Z0, 0(R9)
	VMOVUPD Z1, 64(R9)
	VMOVUPD Z2, 128(R9)
	VMOVUPD Z3, 192(R9)
	VMOVUPD Z4, 256(R9)
	VMOVUPD Z5, 320(R9)
	VMOVUPD Z6, 384(R9)
	VMOVUPD Z7, 448(R9)
	VZEROUPPER
	RET


// func pprPassAVX512(slicePtr *int32, nslices int, cols *int32, vals *float32, y, sv, str, inv, nxt *float64, i0 int, d, omega float64, relax bool, sums *[2][8]float64)
//
// One pass of pprPass1SIMD over nslices consecutive SELL-8 slices, the first holding
// internal nodes i0…i0+7: per slice, acc = Σ_k vals·y[cols] in two FMA chains (Z0 even
// groups, Z4 odd groups, summed), then for its 8 rows
//	j = d·acc + sv, z = y·str, rs += max(j−z, z−j), zs += z, jy = j·inv,
//	nxt = relax ? ω·(jy − nxt) + nxt : jy,
// the same operations in the same order as the Go epilogue. cols and vals point at
// the first slice's first group; the slices' groups are contiguous, so the cursors
// run on. slicePtr points at the first slice's entry. sums receives rs and zs.
TEXT ·pprPassAVX512(SB), NOSPLIT, $0-112
	MOVQ         slicePtr+0(FP), R13
	MOVQ         nslices+8(FP), DX
	MOVQ         cols+16(FP), SI
	MOVQ         vals+24(FP), DI
	MOVQ         y+32(FP), R8
	MOVQ         sv+40(FP), R9
	MOVQ         str+48(FP), R10
	MOVQ         inv+56(FP), R11
	MOVQ         nxt+64(FP), R12
	MOVQ         i0+72(FP), BX
	SHLQ         $3, BX
	VBROADCASTSD d+80(FP), Z20
	VBROADCASTSD omega+88(FP), Z21
	MOVBLZX      relax+96(FP), AX
	VXORPD       Z22, Z22, Z22
	VXORPD       Z23, Z23, Z23
	TESTQ        DX, DX
	JZ           fin

slice:
	MOVL    4(R13), CX
	SUBL    0(R13), CX
	ADDQ    $4, R13
	VXORPD  Z0, Z0, Z0
	VXORPD  Z4, Z4, Z4
	TESTQ   CX, CX
	JZ      rows

gloop:
	VMOVDQU32   (SI), Y1
	KXNORW      K1, K1, K1
	VGATHERDPD  (R8)(Y1*8), K1, Z2
	VCVTPS2PD   (DI), Z3
	VFMADD231PD Z3, Z2, Z0
	ADDQ        $32, SI
	ADDQ        $32, DI
	DECQ        CX
	JZ          rows
	VMOVDQU32   (SI), Y5
	KXNORW      K2, K2, K2
	VGATHERDPD  (R8)(Y5*8), K2, Z6
	VCVTPS2PD   (DI), Z7
	VFMADD231PD Z7, Z6, Z4
	ADDQ        $32, SI
	ADDQ        $32, DI
	DECQ        CX
	JNZ         gloop

rows:
	VADDPD      Z4, Z0, Z0
	VMOVUPD     (R9)(BX*1), Z1
	VFMADD231PD Z0, Z20, Z1          // j = d·acc + sv
	VMOVUPD     (R8)(BX*1), Z2
	VMULPD      (R10)(BX*1), Z2, Z2  // z = y·str
	VSUBPD      Z2, Z1, Z3           // j − z
	VSUBPD      Z1, Z2, Z5           // z − j
	VMAXPD      Z5, Z3, Z3
	VADDPD      Z3, Z22, Z22
	VADDPD      Z2, Z23, Z23
	VMULPD      (R11)(BX*1), Z1, Z1  // jy = j·inv
	TESTQ       AX, AX
	JZ          store
	VMOVUPD     (R12)(BX*1), Z6      // yp
	VSUBPD      Z6, Z1, Z1           // jy − yp
	VFMADD231PD Z21, Z1, Z6          // ω·(jy − yp) + yp
	VMOVUPD     Z6, (R12)(BX*1)
	JMP         next

store:
	VMOVUPD Z1, (R12)(BX*1)

next:
	ADDQ $64, BX
	DECQ DX
	JNZ  slice

fin:
	MOVQ    sums+104(FP), R9
	VMOVUPD Z22, 0(R9)
	VMOVUPD Z23, 64(R9)
	VZEROUPPER
	RET
