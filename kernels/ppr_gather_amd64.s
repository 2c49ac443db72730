//go:build goexperiment.simd

#include "textflag.h"

// PASSARGS loads the arguments both passes share: cols SI, vals DI, y R8, the reset
// R9, str R10, inv R11, nxt R12, the first node's offset i0·8 BX, d and ω broadcast
// in Z20 and Z21, and clears the residual and Σz sums Z22 and Z23.
#define PASSARGS \
	MOVQ cols+16(FP), SI; MOVQ vals+24(FP), DI; MOVQ y+32(FP), R8; MOVQ sv+40(FP), R9; \
	MOVQ str+48(FP), R10; MOVQ inv+56(FP), R11; MOVQ nxt+64(FP), R12; \
	MOVQ i0+72(FP), BX; SHLQ $3, BX; \
	VBROADCASTSD d+80(FP), Z20; VBROADCASTSD omega+88(FP), Z21; \
	VXORPD Z22, Z22, Z22; VXORPD Z23, Z23, Z23

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
	PASSARGS
	MOVBLZX      relax+96(FP), AX
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

// PREFETCH4(off) prefetches the neighbour rows ([node][8] float64, 64 bytes) of the
// four columns at off(SI), with y at R8 (clobbers AX, DX, R14, R15).
#define PREFETCH4(off) \
	MOVL off(SI), AX; MOVL off+4(SI), DX; MOVL off+8(SI), R14; MOVL off+12(SI), R15; \
	SHLQ $6, AX; SHLQ $6, DX; SHLQ $6, R14; SHLQ $6, R15; \
	PREFETCHT1 (R8)(AX*1); PREFETCHT1 (R8)(DX*1); PREFETCHT1 (R8)(R14*1); PREFETCHT1 (R8)(R15*1)

// LOAD4(off, Za, Zb, Zc, Zd) loads the neighbour rows of the four columns at off(SI).
#define LOAD4(off, Za, Zb, Zc, Zd) \
	MOVL off(SI), AX; MOVL off+4(SI), DX; MOVL off+8(SI), R14; MOVL off+12(SI), R15; \
	SHLQ $6, AX; SHLQ $6, DX; SHLQ $6, R14; SHLQ $6, R15; \
	VMOVUPD (R8)(AX*1), Za; VMOVUPD (R8)(DX*1), Zb; VMOVUPD (R8)(R14*1), Zc; VMOVUPD (R8)(R15*1), Zd

// TROW(o4, o8, o64, ZA) finishes row r of the slice (o4 = 4r, o8 = 8r, o64 = 64r)
// from its accumulator ZA: j = d·acc + sv, z = y·str, rs += max(j−z, z−j), zs += z,
// jy = j·inv into Z8; TSTORE and TRELAX then write it. The row's reset is row
// sidx[r] of the compacted reset tile at R9, R14 pointing at the slice's 8 indices
// (clobbers AX).
#define TROW(o4, o8, o64, ZA) \
	MOVL             o4(R14), AX; \
	SHLQ             $6, AX; \
	VMOVUPD          (R9)(AX*1), Z8; \
	VFMADD231PD      ZA, Z20, Z8; \
	VMOVUPD          o64(R8)(BX*8), Z9; \
	VMULPD.BCST      o8(R10)(BX*1), Z9, Z9; \
	VSUBPD           Z9, Z8, Z10; \
	VSUBPD           Z8, Z9, Z11; \
	VMAXPD           Z11, Z10, Z10; \
	VADDPD           Z10, Z22, Z22; \
	VADDPD           Z9, Z23, Z23; \
	VMULPD.BCST      o8(R11)(BX*1), Z8, Z8

// TROWS(M) finishes the slice's 8 rows in order with M, TSTORE or TRELAX.
#define TROWS(M) \
	M(0, 0, 0, Z0); M(4, 8, 64, Z1); M(8, 16, 128, Z2); M(12, 24, 192, Z3); \
	M(16, 32, 256, Z4); M(20, 40, 320, Z5); M(24, 48, 384, Z6); M(28, 56, 448, Z7)

#define TSTORE(o4, o8, o64, ZA) TROW(o4, o8, o64, ZA); VMOVUPD Z8, o64(R12)(BX*8)

#define TRELAX(o4, o8, o64, ZA) TROW(o4, o8, o64, ZA); \
	VMOVUPD     o64(R12)(BX*8), Z12; \
	VSUBPD      Z12, Z8, Z8; \
	VFMADD231PD Z21, Z8, Z12; \
	VMOVUPD     Z12, o64(R12)(BX*8)

// func pprTilePassAVX512(slicePtr *int32, nslices int, cols *int32, vals *float32, y, sv, str, inv, nxt *float64, i0 int, d, omega float64, relax bool, sums *[2][8]float64, sidx *uint32)
//
// One pass of pprTilePassSIMD over nslices consecutive SELL-8 slices for a tile of 8
// queries stored [node][8], the first slice holding internal nodes i0…i0+7. Per slice,
// acc[r] = Σ_k vals[8k+r]·y[cols[8k+r]][0:8] in Z0–Z7, one 64-byte load and one fused
// multiply-add per entry; then each of its 8 rows, in order, as TROW says, and
// nxt = relax ? ω·(jy − nxt) + nxt : jy: pprTilePass's operations in its order, with
// fused multiply-adds for d·acc + sv, the entries' products and the relaxation. The
// tile (64 bytes a node) outgrows the core's L2 from ~30K nodes, so each group first
// prefetches the neighbour rows of the group 8 ahead (pprPrefetchGroups; 256 bytes of
// cols, which the layout pads past its last group) into L2 (PREFETCHT1): the loads then
// overlap instead of waiting on L3 one by one. Into L1 (PREFETCHT0), probably, the 64
// rows in flight crowd out the lines the pass streams; on an AMD EPYC (Zen 4) batch of
// 32 queries T1 took ~20 % less time than T0, at 4 to 16 groups ahead alike. cols and
// vals point at the first slice's first group (the slices' groups are contiguous),
// slicePtr at the first slice's entry, y, sv (the compacted reset tile, pprTile) and
// nxt at node 0's row, str and inv at node 0, sidx at the first slice's first row's
// reset row index (the cursor lives in ix-80(SP)). sums receives the residual and Σz
// of each lane.
TEXT ·pprTilePassAVX512(SB), NOSPLIT, $80-120
	MOVQ         slicePtr+0(FP), R13
	MOVQ         nslices+8(FP), AX
	MOVQ         AX, left-72(SP)
	MOVQ         sidx+112(FP), AX
	MOVQ         AX, ix-80(SP)
	PASSARGS
	TESTQ        AX, AX
	JZ           tfin

tslice:
	MOVL    4(R13), CX
	SUBL    0(R13), CX
	ADDQ    $4, R13
	VXORPD  Z0, Z0, Z0
	VXORPD  Z1, Z1, Z1
	VXORPD  Z2, Z2, Z2
	VXORPD  Z3, Z3, Z3
	VXORPD  Z4, Z4, Z4
	VXORPD  Z5, Z5, Z5
	VXORPD  Z6, Z6, Z6
	VXORPD  Z7, Z7, Z7
	TESTQ   CX, CX
	JZ      trows

tgloop:
	PREFETCH4(256)
	PREFETCH4(272)
	VCVTPS2PD (DI), Z8
	VMOVUPD   Z8, w-64(SP)
	LOAD4(0, Z9, Z10, Z11, Z12)
	VFMADD231PD.BCST w-64(SP), Z9, Z0
	VFMADD231PD.BCST w-56(SP), Z10, Z1
	VFMADD231PD.BCST w-48(SP), Z11, Z2
	VFMADD231PD.BCST w-40(SP), Z12, Z3
	LOAD4(16, Z13, Z14, Z15, Z16)
	VFMADD231PD.BCST w-32(SP), Z13, Z4
	VFMADD231PD.BCST w-24(SP), Z14, Z5
	VFMADD231PD.BCST w-16(SP), Z15, Z6
	VFMADD231PD.BCST w-8(SP), Z16, Z7
	ADDQ      $32, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       tgloop

trows:
	MOVQ ix-80(SP), R14
	ADDQ $32, ix-80(SP)
	CMPB relax+96(FP), $0
	JNE  trelax
	TROWS(TSTORE)
	JMP  tnext

trelax:
	TROWS(TRELAX)

tnext:
	ADDQ $64, BX
	DECQ left-72(SP)
	JNZ  tslice

tfin:
	MOVQ    sums+104(FP), AX
	VMOVUPD Z22, 0(AX)
	VMOVUPD Z23, 64(AX)
	VZEROUPPER
	RET


// func pprInterleaveAVX512(nodes, rows *int32, n int, lanes *[8]unsafe.Pointer, scales *[8]float64, mask uint64, s unsafe.Pointer, f32 bool)
//
// Writes n rows of a reset tile: row rows[j]'s lane b is lanes[b][nodes[j]]·scales[b]
// for the lanes in mask (one VGATHERQPD of the 8 resets' entries), 0 for the others
// and for a padding row (node −1). s points at the row rows are counted from; rows are
// 64 bytes apart. With f32 the 8 lanes are rounded to float32 (one VCVTPD2PS) and
// stored in the row's first 32 bytes: half a row of a pair's float32 tile.
TEXT ·pprInterleaveAVX512(SB), NOSPLIT, $0-57
	MOVQ      nodes+0(FP), SI
	MOVQ      rows+8(FP), R8
	MOVQ      n+16(FP), CX
	MOVQ      lanes+24(FP), AX
	VMOVDQU64 (AX), Z20
	MOVQ      scales+32(FP), AX
	VMOVUPD   (AX), Z21
	MOVQ      mask+40(FP), AX
	KMOVW     AX, K3
	MOVQ      s+48(FP), DI
	MOVBQZX   f32+56(FP), R10
	XORQ      DX, DX
	TESTQ     CX, CX
	JZ        ifin

iloop:
	MOVLQSX      (SI), BX
	MOVLQSX      (R8), R9
	SHLQ         $6, R9
	VXORPD       Z0, Z0, Z0
	TESTQ        BX, BX
	JS           istore
	SHLQ         $3, BX
	VPBROADCASTQ BX, Z1
	VPADDQ       Z20, Z1, Z1
	KMOVW        K3, K1
	VGATHERQPD   (DX)(Z1*1), K1, Z0
	VMULPD       Z21, Z0, Z0

istore:
	TESTQ     R10, R10
	JNZ       istore32
	VMOVUPD   Z0, (DI)(R9*1)
	JMP       inext

istore32:
	VCVTPD2PS Z0, Y0
	VMOVUPS   Y0, (DI)(R9*1)

inext:
	ADDQ $4, SI
	ADDQ $4, R8
	DECQ CX
	JNZ  iloop

ifin:
	VZEROUPPER
	RET

// XPF(off) prefetches the row and strength of the output node at pos off(SI) (row 0
// for an eliminated node) into L1 (clobbers AX, R10).
#define XPF(off) \
	MOVLQSX off(SI), AX; XORL R10, R10; TESTQ AX, AX; CMOVQLT R10, AX; \
	PREFETCHT0 (R9)(AX*8); SHLQ $6, AX; PREFETCHT0 (R8)(AX*1)

// XROWB(off, ZR) loads the row of the output node at pos off(SI) into ZR as
// (y·full)·inv, row 0 standing in for an eliminated node (clobbers AX, R10, R11).
#define XROWB(off, ZR) \
	MOVLQSX off(SI), AX; XORL R10, R10; TESTQ AX, AX; CMOVQLT R10, AX; \
	MOVQ AX, R11; SHLQ $6, R11; \
	VMOVUPD (R8)(R11*1), ZR; VMULPD.BCST (R9)(AX*8), ZR, ZR; VMULPD Z21, ZR, ZR

// XSTORE(b, ZR) stores the 8 outputs ZR of lane b at outs[b][j…j+7] (BX = 8j) when
// lane b is in the mask R13 (clobbers AX).
#define XSTORE(b, ZR) \
	BTQ $b, R13; JCC 3(PC); MOVQ (b*8)(R12), AX; VMOVUPD ZR, (AX)(BX*1)

// func pprExtractAVX512(pos *int32, n, j0 int, y, full *float64, outs *[8]unsafe.Pointer, inv *[8]float64, mask uint64)
//
// For the n outputs j = j0… whose pos[j] = p is a row (p ≥ 0), writes lane b of
// (y[p]·full[p])·inv, for the lanes in mask, to outs[b][j]. Whole blocks of 8 outputs
// load their 8 rows, transpose them in registers (8×8 doubles: unpacks, then two rounds
// of 128-bit shuffles) and store one 64-byte vector per lane; the remaining outputs
// are scattered one node at a time (VSCATTERQPD). An eliminated node's outputs (p < 0)
// get row 0's values in a block and are left alone in the tail: the caller writes
// them afterwards. pos points at pos[j0], y at row 0's lanes.
TEXT ·pprExtractAVX512(SB), NOSPLIT, $0-64
	MOVQ      pos+0(FP), SI
	MOVQ      n+8(FP), CX
	MOVQ      j0+16(FP), BX
	SHLQ      $3, BX
	MOVQ      y+24(FP), R8
	MOVQ      full+32(FP), R9
	MOVQ      outs+40(FP), R12
	VMOVDQU64 (R12), Z20
	MOVQ      inv+48(FP), AX
	VMOVUPD   (AX), Z21
	MOVQ      mask+56(FP), R13
	KMOVW     R13, K3
	XORQ      DX, DX
	TESTQ     CX, CX
	JZ        xfin

xblock:
	CMPQ CX, $8
	JLT  xloop
	CMPQ CX, $24
	JLT  xbrows
	XPF(64)
	XPF(68)
	XPF(72)
	XPF(76)
	XPF(80)
	XPF(84)
	XPF(88)
	XPF(92)

xbrows:
	XROWB(0, Z0)
	XROWB(4, Z1)
	XROWB(8, Z2)
	XROWB(12, Z3)
	XROWB(16, Z4)
	XROWB(20, Z5)
	XROWB(24, Z6)
	XROWB(28, Z7)
	VUNPCKLPD  Z1, Z0, Z8 // lanes 0 2 4 6 of rows 0, 1
	VUNPCKHPD  Z1, Z0, Z9 // lanes 1 3 5 7 of rows 0, 1
	VUNPCKLPD  Z3, Z2, Z10
	VUNPCKHPD  Z3, Z2, Z11
	VUNPCKLPD  Z5, Z4, Z12
	VUNPCKHPD  Z5, Z4, Z13
	VUNPCKLPD  Z7, Z6, Z14
	VUNPCKHPD  Z7, Z6, Z15
	VSHUFF64X2 $0x44, Z10, Z8, Z16 // lanes 0 2 of rows 0–3
	VSHUFF64X2 $0xee, Z10, Z8, Z17 // lanes 4 6 of rows 0–3
	VSHUFF64X2 $0x44, Z14, Z12, Z18 // lanes 0 2 of rows 4–7
	VSHUFF64X2 $0xee, Z14, Z12, Z19 // lanes 4 6 of rows 4–7
	VSHUFF64X2 $0x44, Z11, Z9, Z22
	VSHUFF64X2 $0xee, Z11, Z9, Z23
	VSHUFF64X2 $0x44, Z15, Z13, Z24
	VSHUFF64X2 $0xee, Z15, Z13, Z25
	VSHUFF64X2 $0x88, Z18, Z16, Z0 // lane 0 of rows 0–7
	VSHUFF64X2 $0xdd, Z18, Z16, Z2 // lane 2
	VSHUFF64X2 $0x88, Z19, Z17, Z4 // lane 4
	VSHUFF64X2 $0xdd, Z19, Z17, Z6 // lane 6
	VSHUFF64X2 $0x88, Z24, Z22, Z1 // lane 1
	VSHUFF64X2 $0xdd, Z24, Z22, Z3 // lane 3
	VSHUFF64X2 $0x88, Z25, Z23, Z5 // lane 5
	VSHUFF64X2 $0xdd, Z25, Z23, Z7 // lane 7
	XSTORE(0, Z0)
	XSTORE(1, Z1)
	XSTORE(2, Z2)
	XSTORE(3, Z3)
	XSTORE(4, Z4)
	XSTORE(5, Z5)
	XSTORE(6, Z6)
	XSTORE(7, Z7)
	ADDQ $32, SI
	ADDQ $64, BX
	SUBQ $8, CX
	JNZ  xblock
	JMP  xfin

xloop:
	CMPQ         CX, $17
	JLT          xload
	MOVLQSX      64(SI), R11
	TESTQ        R11, R11
	JS           xload
	PREFETCHT0   (R9)(R11*8)
	SHLQ         $6, R11
	PREFETCHT0   (R8)(R11*1)

xload:
	MOVLQSX      (SI), AX
	TESTQ        AX, AX
	JS           xnext
	MOVQ         AX, R10
	SHLQ         $6, R10
	VMOVUPD      (R8)(R10*1), Z0
	VBROADCASTSD (R9)(AX*8), Z1
	VMULPD       Z1, Z0, Z0
	VMULPD       Z21, Z0, Z0
	VPBROADCASTQ BX, Z2
	VPADDQ       Z20, Z2, Z2
	KMOVW        K3, K1
	VSCATTERQPD  Z0, K1, (DX)(Z2*1)

xnext:
	ADDQ $4, SI
	ADDQ $8, BX
	DECQ CX
	JNZ  xloop

xfin:
	VZEROUPPER
	RET

// TROW32(o4, o8, o64, ZA) finishes row r of the slice (o4 = 4r, o64 = 64r; o8 unused)
// from its accumulator ZA, in float32 with 16 lanes: j = d·acc + sv, z = y·str,
// rs += max(j−z, z−j), zs += z, y = ω·(j·inv − y) + y stored in the lanes of K1 only.
// The row's reset is row sidx[r] of the packed reset tile at R9, R14 pointing at the
// slice's 8 indices; str and inv (float32) at R10 and R11 point at the slice's first
// row (clobbers AX).
#define TROW32(o4, o8, o64, ZA) \
	MOVL             o4(R14), AX; \
	SHLQ             $6, AX; \
	VMOVUPS          (R9)(AX*1), Z8; \
	VFMADD231PS      ZA, Z20, Z8; \
	VMOVUPS          o64(R8)(BX*8), Z12; \
	VMULPS.BCST      o4(R10), Z12, Z9; \
	VSUBPS           Z9, Z8, Z10; \
	VSUBPS           Z8, Z9, Z11; \
	VMAXPS           Z11, Z10, Z10; \
	VADDPS           Z10, Z22, Z22; \
	VADDPS           Z9, Z23, Z23; \
	VMULPS.BCST      o4(R11), Z8, Z8; \
	VSUBPS           Z12, Z8, Z8; \
	VFMADD231PS      Z21, Z8, Z12; \
	VMOVUPS          Z12, K1, o64(R8)(BX*8)

// func pprTilePass32AVX512(slicePtr *int32, nslices int, cols *int32, vals *float32, y, sv, str, inv *float32, i0 int, d, omega float32, active uint16, sums *[2][16]float32, sidx *uint32)
//
// One float32 SOR pass of pprTilePass32SIMD over nslices consecutive SELL-8 slices for
// a pair's tile of 16 queries stored [node][16] (64 bytes a node, as the float64
// tile's 8), the first slice holding internal nodes i0…i0+7: pprTilePassAVX512's loop
// (one 64-byte load and one fused multiply-add per entry, the weights broadcast from
// vals, the neighbour rows of the group 8 ahead prefetched), then each of the slice's
// rows as TROW32 says, in place. y is node 0's row, sv the packed reset tile's first
// row, str and inv node 0's; cols, vals, slicePtr and sidx point at the first slice's.
// sums receives each lane's residual and Σz.
TEXT ·pprTilePass32AVX512(SB), NOSPLIT, $8-104
	MOVQ         slicePtr+0(FP), R13
	MOVQ         nslices+8(FP), AX
	MOVQ         AX, left-8(SP)
	MOVQ         cols+16(FP), SI
	MOVQ         vals+24(FP), DI
	MOVQ         y+32(FP), R8
	MOVQ         sv+40(FP), R9
	MOVQ         i0+64(FP), BX
	MOVQ         str+48(FP), R10
	LEAQ         (R10)(BX*4), R10
	MOVQ         inv+56(FP), R11
	LEAQ         (R11)(BX*4), R11
	SHLQ         $3, BX
	MOVQ         sidx+96(FP), R12
	VBROADCASTSS d+72(FP), Z20
	VBROADCASTSS omega+76(FP), Z21
	KMOVW        active+80(FP), K1
	VXORPS       Z22, Z22, Z22
	VXORPS       Z23, Z23, Z23
	TESTQ        AX, AX
	JZ           sfin

sslice:
	MOVL   4(R13), CX
	SUBL   0(R13), CX
	ADDQ   $4, R13
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3
	VXORPS Z4, Z4, Z4
	VXORPS Z5, Z5, Z5
	VXORPS Z6, Z6, Z6
	VXORPS Z7, Z7, Z7
	TESTQ  CX, CX
	JZ     srows

sgloop:
	PREFETCH4(256)
	PREFETCH4(272)
	LOAD4(0, Z9, Z10, Z11, Z12)
	VFMADD231PS.BCST 0(DI), Z9, Z0
	VFMADD231PS.BCST 4(DI), Z10, Z1
	VFMADD231PS.BCST 8(DI), Z11, Z2
	VFMADD231PS.BCST 12(DI), Z12, Z3
	LOAD4(16, Z13, Z14, Z15, Z16)
	VFMADD231PS.BCST 16(DI), Z13, Z4
	VFMADD231PS.BCST 20(DI), Z14, Z5
	VFMADD231PS.BCST 24(DI), Z15, Z6
	VFMADD231PS.BCST 28(DI), Z16, Z7
	ADDQ             $32, SI
	ADDQ             $32, DI
	DECQ             CX
	JNZ              sgloop

srows:
	MOVQ R12, R14
	TROWS(TROW32)
	ADDQ $32, R12
	ADDQ $32, R10
	ADDQ $32, R11
	ADDQ $64, BX
	DECQ left-8(SP)
	JNZ  sslice

sfin:
	MOVQ    sums+88(FP), AX
	VMOVUPS Z22, 0(AX)
	VMOVUPS Z23, 64(AX)
	VZEROUPPER
	RET
