//go:build goexperiment.simd

#include "textflag.h"

// The AVX2 (256-bit) versions of ppr_gather_amd64.s's passes: the same operations in
// the same order, lane for lane, so that they return the AVX-512 passes' bits. A
// 64-byte row (8 float64 or 16 float32 lanes) is two registers, and with 16 registers
// instead of 32 the tile passes reduce a slice's 8 rows in two sweeps of 4 rows over
// its groups (each row's chain still runs over the groups in order). A sweep's rows
// are updated before the next sweep gathers: a slice's rows are one colour's nodes,
// never each other's neighbours, so no gathered value changes.

// AROW(o, YA, YR, YZ) finishes 4 rows of a single-query slice (o = 0 for rows 0–3,
// 32 for rows 4–7) from their sums YA: j = d·acc + sv, z = y·str, YR += max(j−z, z−j),
// YZ += z, jy = j·inv in Y8; ASTORE and ARELAX then write it.
#define AROW(o, YA, YR, YZ) \
	VMOVUPD      o(R9)(BX*1), Y8; \
	VBROADCASTSD d+80(FP), Y9; \
	VFMADD231PD  YA, Y9, Y8; \
	VMOVUPD      o(R8)(BX*1), Y2; \
	VMULPD       o(R10)(BX*1), Y2, Y2; \
	VSUBPD       Y2, Y8, Y3; \
	VSUBPD       Y8, Y2, Y10; \
	VMAXPD       Y10, Y3, Y3; \
	VADDPD       Y3, YR, YR; \
	VADDPD       Y2, YZ, YZ; \
	VMULPD       o(R11)(BX*1), Y8, Y8

#define ASTORE(o, YA, YR, YZ) AROW(o, YA, YR, YZ); VMOVUPD Y8, o(R12)(BX*1)

#define ARELAX(o, YA, YR, YZ) AROW(o, YA, YR, YZ); \
	VMOVUPD      o(R12)(BX*1), Y11; \
	VSUBPD       Y11, Y8, Y8; \
	VBROADCASTSD omega+88(FP), Y9; \
	VFMADD231PD  Y9, Y8, Y11; \
	VMOVUPD      Y11, o(R12)(BX*1)

// PF4(off) prefetches into L2 the neighbour rows (64 bytes) of the four columns at
// off(SI), with y at R8 (clobbers AX, DX, R14, R15).
#define PF4(off) \
	MOVL off(SI), AX; MOVL off+4(SI), DX; MOVL off+8(SI), R14; MOVL off+12(SI), R15; \
	SHLQ $6, AX; SHLQ $6, DX; SHLQ $6, R14; SHLQ $6, R15; \
	PREFETCHT1 (R8)(AX*1); PREFETCHT1 (R8)(DX*1); PREFETCHT1 (R8)(R14*1); PREFETCHT1 (R8)(R15*1)

// COLS4(off) loads the row offsets (col·64) of the four columns at off(SI) into AX,
// DX, R14 and R15.
#define COLS4(off) \
	MOVL off(SI), AX; MOVL off+4(SI), DX; MOVL off+8(SI), R14; MOVL off+12(SI), R15; \
	SHLQ $6, AX; SHLQ $6, DX; SHLQ $6, R14; SHLQ $6, R15

// ZERO8 clears the 4 rows' accumulators Y0–Y7 (row r in Y2r, Y2r+1).
#define ZERO8 \
	VXORPD Y0, Y0, Y0; VXORPD Y1, Y1, Y1; VXORPD Y2, Y2, Y2; VXORPD Y3, Y3, Y3; \
	VXORPD Y4, Y4, Y4; VXORPD Y5, Y5, Y5; VXORPD Y6, Y6, Y6; VXORPD Y7, Y7, Y7

// TGROUP(h) adds one group's entries of rows 4h…4h+3 (columns and weights at 16h
// bytes into the group) to Y0–Y7: w·y[col] for the row's 8 lanes, w converted to
// float64 through the frame as pprTilePassAVX512 does.
#define TGROUP(h) \
	PF4(256+16*h); \
	VCVTPS2PD    16*h(DI), Y8; \
	VMOVUPD      Y8, w-32(SP); \
	COLS4(16*h); \
	VBROADCASTSD w-32(SP), Y9; \
	VFMADD231PD  (R8)(AX*1), Y9, Y0; \
	VFMADD231PD  32(R8)(AX*1), Y9, Y1; \
	VBROADCASTSD w-24(SP), Y10; \
	VFMADD231PD  (R8)(DX*1), Y10, Y2; \
	VFMADD231PD  32(R8)(DX*1), Y10, Y3; \
	VBROADCASTSD w-16(SP), Y11; \
	VFMADD231PD  (R8)(R14*1), Y11, Y4; \
	VFMADD231PD  32(R8)(R14*1), Y11, Y5; \
	VBROADCASTSD w-8(SP), Y12; \
	VFMADD231PD  (R8)(R15*1), Y12, Y6; \
	VFMADD231PD  32(R8)(R15*1), Y12, Y7

// THALF(o, YA, rs, zs) is half (4 lanes, o = 0 or 32) of TROW: j = d·acc + sv into
// Y8, z = y·str, the frame's sums rs += max(j−z, z−j) and zs += z, then jy = j·inv in
// Y8. AX holds the reset row's offset, Y14 str, Y13 inv, Y15 d (clobbers Y9–Y11).
#define THALF(o, o64, YA, RS, ZS) \
	VMOVUPD     o(R9)(AX*1), Y8; \
	VFMADD231PD YA, Y15, Y8; \
	VMOVUPD     o64+o(R8)(BX*8), Y9; \
	VMULPD      Y14, Y9, Y9; \
	VSUBPD      Y9, Y8, Y10; \
	VSUBPD      Y8, Y9, Y11; \
	VMAXPD      Y11, Y10, Y10; \
	VADDPD      RS, Y10, Y10; \
	VMOVUPD     Y10, RS; \
	VADDPD      ZS, Y9, Y9; \
	VMOVUPD     Y9, ZS; \
	VMULPD      Y13, Y8, Y8

// TSTORE2 and TRELAX2(o4, o8, o64, YL, YH) finish row r of the slice (o4 = 4r, o8 = 8r,
// o64 = 64r) from its accumulators YL (lanes 0–3) and YH (4–7): THALF for both halves,
// then nxt = jy or nxt = ω·(jy − nxt) + nxt. R14 points at the slice's 8 reset
// row indices (clobbers AX, Y8–Y15).
#define TPRE(o4, o8) \
	MOVL         o4(R14), AX; \
	SHLQ         $6, AX; \
	VBROADCASTSD d+80(FP), Y15; \
	VBROADCASTSD o8(R10)(BX*1), Y14; \
	VBROADCASTSD o8(R11)(BX*1), Y13

#define TSTORE2(o4, o8, o64, YL, YH) \
	TPRE(o4, o8); \
	THALF(0, o64, YL, rs-96(SP), zs-160(SP)); \
	VMOVUPD Y8, o64(R12)(BX*8); \
	THALF(32, o64, YH, rs-64(SP), zs-128(SP)); \
	VMOVUPD Y8, o64+32(R12)(BX*8)

#define TRELAX2(o4, o8, o64, YL, YH) \
	TPRE(o4, o8); \
	VBROADCASTSD omega+88(FP), Y12; \
	THALF(0, o64, YL, rs-96(SP), zs-160(SP)); \
	VMOVUPD      o64(R12)(BX*8), Y9; \
	VSUBPD       Y9, Y8, Y8; \
	VFMADD231PD  Y12, Y8, Y9; \
	VMOVUPD      Y9, o64(R12)(BX*8); \
	THALF(32, o64, YH, rs-64(SP), zs-128(SP)); \
	VMOVUPD      o64+32(R12)(BX*8), Y9; \
	VSUBPD       Y9, Y8, Y8; \
	VFMADD231PD  Y12, Y8, Y9; \
	VMOVUPD      Y9, o64+32(R12)(BX*8)

#define TROWS0(M) M(0, 0, 0, Y0, Y1); M(4, 8, 64, Y2, Y3); M(8, 16, 128, Y4, Y5); M(12, 24, 192, Y6, Y7)
#define TROWS1(M) M(16, 32, 256, Y0, Y1); M(20, 40, 320, Y2, Y3); M(24, 48, 384, Y4, Y5); M(28, 56, 448, Y6, Y7)

// SGROUP(h) is TGROUP for the float32 pair tile: 16 float32 lanes a row in two
// registers, the weights broadcast straight from vals.
#define SGROUP(h) \
	PF4(256+16*h); \
	COLS4(16*h); \
	VBROADCASTSS 16*h(DI), Y9; \
	VFMADD231PS  (R8)(AX*1), Y9, Y0; \
	VFMADD231PS  32(R8)(AX*1), Y9, Y1; \
	VBROADCASTSS 16*h+4(DI), Y10; \
	VFMADD231PS  (R8)(DX*1), Y10, Y2; \
	VFMADD231PS  32(R8)(DX*1), Y10, Y3; \
	VBROADCASTSS 16*h+8(DI), Y11; \
	VFMADD231PS  (R8)(R14*1), Y11, Y4; \
	VFMADD231PS  32(R8)(R14*1), Y11, Y5; \
	VBROADCASTSS 16*h+12(DI), Y12; \
	VFMADD231PS  (R8)(R15*1), Y12, Y6; \
	VFMADD231PS  32(R8)(R15*1), Y12, Y7

// SHALF(o, o64, YA, RS, ZS, MK) is half (8 lanes, o = 0 or 32) of TROW32 for row r
// (o64 = 64r): j = d·acc + sv, z = y·str, RS += max(j−z, z−j), ZS += z, then
// y = ω·(j·inv − y) + y stored in the lanes the mask MK (on the frame) selects. AX
// holds the reset row's offset, Y15 d, Y14 str, Y13 inv, Y12 ω (clobbers Y8–Y11).
#define SHALF(o, o64, YA, RS, ZS, MK) \
	VMOVUPS     o(R9)(AX*1), Y8; \
	VFMADD231PS YA, Y15, Y8; \
	VMOVUPS     o64+o(R8)(BX*8), Y11; \
	VMULPS      Y14, Y11, Y9; \
	VSUBPS      Y9, Y8, Y10; \
	VSUBPS      Y8, Y9, YA; \
	VMAXPS      YA, Y10, Y10; \
	VADDPS      RS, Y10, Y10; \
	VMOVUPS     Y10, RS; \
	VADDPS      ZS, Y9, Y9; \
	VMOVUPS     Y9, ZS; \
	VMULPS      Y13, Y8, Y8; \
	VSUBPS      Y11, Y8, Y8; \
	VFMADD231PS Y12, Y8, Y11; \
	VMOVUPS     MK, Y10; \
	VMASKMOVPS  Y11, Y10, o64+o(R8)(BX*8)

// SROW(o4, o8, o64, YL, YH) finishes row r of the slice (o4 = 4r, o64 = 64r; o8
// unused) from YL (lanes 0–7) and YH (8–15); str and inv (float32) at R10 and R11
// point at the slice's first row, R14 at its 8 reset row indices (clobbers AX, YL,
// YH, Y8–Y15).
#define SROW(o4, o8, o64, YL, YH) \
	MOVL         o4(R14), AX; \
	SHLQ         $6, AX; \
	VBROADCASTSS d+72(FP), Y15; \
	VBROADCASTSS omega+76(FP), Y12; \
	VBROADCASTSS o4(R10), Y14; \
	VBROADCASTSS o4(R11), Y13; \
	SHALF(0, o64, YL, rs-64(SP), zs-128(SP), mk-192(SP)); \
	SHALF(32, o64, YH, rs-32(SP), zs-96(SP), mk-160(SP))

#define SROWS0 SROW(0, 0, 0, Y0, Y1); SROW(4, 8, 64, Y2, Y3); SROW(8, 16, 128, Y4, Y5); SROW(12, 24, 192, Y6, Y7)
#define SROWS1 SROW(16, 32, 256, Y0, Y1); SROW(20, 40, 320, Y2, Y3); SROW(24, 48, 384, Y4, Y5); SROW(28, 56, 448, Y6, Y7)

// func pprPassAVX2(slicePtr *int32, nslices int, cols *int32, vals *float32, y, sv, str, inv, nxt *float64, i0 int, d, omega float64, relax bool, sums *[2][8]float64)
//
// pprPassAVX512 with rows 0–3 in Y0 (even groups) and Y4 (odd groups) and rows 4–7
// in Y1 and Y5, two VGATHERDPDs of 4 a group; residual sums in Y6 (rows 0–3) and Y7,
// Σz in Y14 and Y15.
TEXT ·pprPassAVX2(SB), NOSPLIT, $0-112
	MOVQ    slicePtr+0(FP), R13
	MOVQ    nslices+8(FP), DX
	MOVQ    cols+16(FP), SI
	MOVQ    vals+24(FP), DI
	MOVQ    y+32(FP), R8
	MOVQ    sv+40(FP), R9
	MOVQ    str+48(FP), R10
	MOVQ    inv+56(FP), R11
	MOVQ    nxt+64(FP), R12
	MOVQ    i0+72(FP), BX
	SHLQ    $3, BX
	VXORPD  Y6, Y6, Y6
	VXORPD  Y7, Y7, Y7
	VXORPD  Y14, Y14, Y14
	VXORPD  Y15, Y15, Y15
	MOVBLZX relax+96(FP), AX
	TESTQ   DX, DX
	JZ      afin

aslice:
	MOVL   4(R13), CX
	SUBL   0(R13), CX
	ADDQ   $4, R13
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	TESTQ  CX, CX
	JZ     arows

agloop:
	VMOVDQU     (SI), X8
	VMOVDQU     16(SI), X9
	VPCMPEQD    Y10, Y10, Y10
	VPCMPEQD    Y11, Y11, Y11
	VGATHERDPD  Y10, (R8)(X8*8), Y2
	VGATHERDPD  Y11, (R8)(X9*8), Y3
	VCVTPS2PD   (DI), Y12
	VCVTPS2PD   16(DI), Y13
	VFMADD231PD Y12, Y2, Y0
	VFMADD231PD Y13, Y3, Y1
	ADDQ        $32, SI
	ADDQ        $32, DI
	DECQ        CX
	JZ          arows
	VMOVDQU     (SI), X8
	VMOVDQU     16(SI), X9
	VPCMPEQD    Y10, Y10, Y10
	VPCMPEQD    Y11, Y11, Y11
	VGATHERDPD  Y10, (R8)(X8*8), Y2
	VGATHERDPD  Y11, (R8)(X9*8), Y3
	VCVTPS2PD   (DI), Y12
	VCVTPS2PD   16(DI), Y13
	VFMADD231PD Y12, Y2, Y4
	VFMADD231PD Y13, Y3, Y5
	ADDQ        $32, SI
	ADDQ        $32, DI
	DECQ        CX
	JNZ         agloop

arows:
	VADDPD Y4, Y0, Y0
	VADDPD Y5, Y1, Y1
	TESTQ  AX, AX
	JNZ    arelax
	ASTORE(0, Y0, Y6, Y14)
	ASTORE(32, Y1, Y7, Y15)
	JMP    anext

arelax:
	ARELAX(0, Y0, Y6, Y14)
	ARELAX(32, Y1, Y7, Y15)

anext:
	ADDQ   $64, BX
	DECQ   DX
	JNZ    aslice

afin:
	MOVQ    sums+104(FP), R9
	VMOVUPD Y6, 0(R9)
	VMOVUPD Y7, 32(R9)
	VMOVUPD Y14, 64(R9)
	VMOVUPD Y15, 96(R9)
	VZEROUPPER
	RET

// func pprTilePassAVX2(slicePtr *int32, nslices int, cols *int32, vals *float32, y, sv, str, inv, nxt *float64, i0 int, d, omega float64, relax bool, sums *[2][8]float64, sidx *uint32)
//
// pprTilePassAVX512 in 256-bit registers: per slice, two sweeps over its groups, rows
// 0–3 then rows 4–7, each row's two registers accumulating one fused multiply-add per
// entry and half-row, each sweep prefetching its 4 columns' rows 8 groups ahead and
// finishing its rows in order (TSTORE2, TRELAX2). The residual and Σz sums live on the
// frame (rs, zs), the weights of a group's half as float64 in w.
TEXT ·pprTilePassAVX2(SB), NOSPLIT, $208-120
	MOVQ    slicePtr+0(FP), R13
	MOVQ    nslices+8(FP), AX
	MOVQ    AX, left-168(SP)
	MOVQ    sidx+112(FP), AX
	MOVQ    AX, ix-176(SP)
	MOVQ    cols+16(FP), SI
	MOVQ    vals+24(FP), DI
	MOVQ    y+32(FP), R8
	MOVQ    sv+40(FP), R9
	MOVQ    str+48(FP), R10
	MOVQ    inv+56(FP), R11
	MOVQ    nxt+64(FP), R12
	MOVQ    i0+72(FP), BX
	SHLQ    $3, BX
	VXORPD  Y8, Y8, Y8
	VMOVUPD Y8, rs-96(SP)
	VMOVUPD Y8, rs-64(SP)
	VMOVUPD Y8, zs-160(SP)
	VMOVUPD Y8, zs-128(SP)
	MOVQ    left-168(SP), AX
	TESTQ   AX, AX
	JZ      vfin

vslice:
	MOVL 4(R13), CX
	SUBL 0(R13), CX
	ADDQ $4, R13
	MOVQ CX, ng-184(SP)
	MOVQ SI, gsi-192(SP)
	MOVQ DI, gdi-200(SP)
	ZERO8
	TESTQ CX, CX
	JZ    vrows0

vg0:
	TGROUP(0)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  vg0

vrows0:
	MOVQ ix-176(SP), R14
	CMPB relax+96(FP), $0
	JNE  vrelax0
	TROWS0(TSTORE2)
	JMP  vsweep1

vrelax0:
	TROWS0(TRELAX2)

vsweep1:
	MOVQ ng-184(SP), CX
	MOVQ gsi-192(SP), SI
	MOVQ gdi-200(SP), DI
	ZERO8
	TESTQ CX, CX
	JZ    vrows1

vg1:
	TGROUP(1)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  vg1

vrows1:
	MOVQ ix-176(SP), R14
	CMPB relax+96(FP), $0
	JNE  vrelax1
	TROWS1(TSTORE2)
	JMP  vnext

vrelax1:
	TROWS1(TRELAX2)

vnext:
	ADDQ $32, ix-176(SP)
	ADDQ $64, BX
	DECQ left-168(SP)
	JNZ  vslice

vfin:
	MOVQ    sums+104(FP), AX
	VMOVUPD rs-96(SP), Y8
	VMOVUPD Y8, 0(AX)
	VMOVUPD rs-64(SP), Y8
	VMOVUPD Y8, 32(AX)
	VMOVUPD zs-160(SP), Y8
	VMOVUPD Y8, 64(AX)
	VMOVUPD zs-128(SP), Y8
	VMOVUPD Y8, 96(AX)
	VZEROUPPER
	RET

// func pprTilePass32AVX2(slicePtr *int32, nslices int, cols *int32, vals *float32, y, sv, str, inv *float32, i0 int, d, omega float32, masks *[16]int32, sums *[2][16]float32, sidx *uint32)
//
// pprTilePass32AVX512 in 256-bit registers, as pprTilePassAVX2 is pprTilePassAVX512:
// two sweeps of 4 rows over a slice's groups, each row's 16 lanes in two registers.
// masks holds −1 in the active lanes and 0 in the others (VMASKMOVPS stores the
// active lanes only). The sums and masks live on the frame.
TEXT ·pprTilePass32AVX2(SB), NOSPLIT, $232-104
	MOVQ    slicePtr+0(FP), R13
	MOVQ    nslices+8(FP), AX
	MOVQ    AX, left-200(SP)
	MOVQ    sidx+96(FP), AX
	MOVQ    AX, ix-208(SP)
	MOVQ    masks+80(FP), AX
	VMOVDQU (AX), Y8
	VMOVDQU Y8, mk-192(SP)
	VMOVDQU 32(AX), Y8
	VMOVDQU Y8, mk-160(SP)
	MOVQ    cols+16(FP), SI
	MOVQ    vals+24(FP), DI
	MOVQ    y+32(FP), R8
	MOVQ    sv+40(FP), R9
	MOVQ    i0+64(FP), BX
	MOVQ    str+48(FP), R10
	LEAQ    (R10)(BX*4), R10
	MOVQ    inv+56(FP), R11
	LEAQ    (R11)(BX*4), R11
	SHLQ    $3, BX
	VXORPS  Y8, Y8, Y8
	VMOVUPS Y8, rs-64(SP)
	VMOVUPS Y8, rs-32(SP)
	VMOVUPS Y8, zs-128(SP)
	VMOVUPS Y8, zs-96(SP)
	MOVQ    left-200(SP), AX
	TESTQ   AX, AX
	JZ      wfin

wslice:
	MOVL  4(R13), CX
	SUBL  0(R13), CX
	ADDQ  $4, R13
	MOVQ  CX, ng-216(SP)
	MOVQ  SI, gsi-224(SP)
	MOVQ  DI, gdi-232(SP)
	ZERO8
	TESTQ CX, CX
	JZ    wrows0

wg0:
	SGROUP(0)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  wg0

wrows0:
	MOVQ ix-208(SP), R14
	SROWS0
	MOVQ ng-216(SP), CX
	MOVQ gsi-224(SP), SI
	MOVQ gdi-232(SP), DI
	ZERO8
	TESTQ CX, CX
	JZ    wrows1

wg1:
	SGROUP(1)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  wg1

wrows1:
	MOVQ ix-208(SP), R14
	SROWS1
	ADDQ $32, ix-208(SP)
	ADDQ $32, R10
	ADDQ $32, R11
	ADDQ $64, BX
	DECQ left-200(SP)
	JNZ  wslice

wfin:
	MOVQ    sums+88(FP), AX
	VMOVUPS rs-64(SP), Y8
	VMOVUPS Y8, 0(AX)
	VMOVUPS rs-32(SP), Y8
	VMOVUPS Y8, 32(AX)
	VMOVUPS zs-128(SP), Y8
	VMOVUPS Y8, 64(AX)
	VMOVUPS zs-96(SP), Y8
	VMOVUPS Y8, 96(AX)
	VZEROUPPER
	RET

// func pprInterleaveAVX2(nodes, rows *int32, n int, lanes *[8]unsafe.Pointer, scales *[8]float64, masks *[8]int64, s unsafe.Pointer, f32 bool)
//
// pprInterleaveAVX512 in 256-bit registers: a row's 8 lanes are two VGATHERQPDs of 4
// (the lanes in the mask given as masks, −1 in, 0 out; the others stay 0), multiplied
// by the scales and stored as 64 bytes, or rounded to float32 and stored as 32.
TEXT ·pprInterleaveAVX2(SB), NOSPLIT, $0-57
	MOVQ         nodes+0(FP), SI
	MOVQ         rows+8(FP), R8
	MOVQ         n+16(FP), CX
	MOVQ         lanes+24(FP), AX
	VMOVDQU      (AX), Y10
	VMOVDQU      32(AX), Y11
	MOVQ         scales+32(FP), AX
	VMOVUPD      (AX), Y12
	VMOVUPD      32(AX), Y13
	MOVQ         masks+40(FP), AX
	VMOVDQU      (AX), Y14
	VMOVDQU      32(AX), Y15
	MOVQ         s+48(FP), DI
	MOVBQZX      f32+56(FP), R10
	XORQ         DX, DX
	TESTQ        CX, CX
	JZ           i2fin

i2loop:
	MOVLQSX      (SI), BX
	MOVLQSX      (R8), R9
	SHLQ         $6, R9
	VXORPD       Y0, Y0, Y0
	VXORPD       Y1, Y1, Y1
	TESTQ        BX, BX
	JS           i2store
	SHLQ         $3, BX
	VMOVQ        BX, X2
	VPBROADCASTQ X2, Y2
	VPADDQ       Y10, Y2, Y3
	VPADDQ       Y11, Y2, Y4
	VMOVDQU      Y14, Y5
	VMOVDQU      Y15, Y6
	VGATHERQPD   Y5, (DX)(Y3*1), Y0
	VGATHERQPD   Y6, (DX)(Y4*1), Y1
	VMULPD       Y12, Y0, Y0
	VMULPD       Y13, Y1, Y1

i2store:
	TESTQ        R10, R10
	JNZ          i2store32
	VMOVUPD      Y0, (DI)(R9*1)
	VMOVUPD      Y1, 32(DI)(R9*1)
	JMP          i2next

i2store32:
	VCVTPD2PSY   Y0, X0
	VCVTPD2PSY   Y1, X1
	VMOVUPS      X0, (DI)(R9*1)
	VMOVUPS      X1, 16(DI)(R9*1)

i2next:
	ADDQ         $4, SI
	ADDQ         $4, R8
	DECQ         CX
	JNZ          i2loop

i2fin:
	VZEROUPPER
	RET

// X2ROW(off, YL, YH) loads lanes 0–3 and 4–7 of the row of the output node at pos
// off(SI) into YL and YH as (y·full)·inv, row 0 standing in for an eliminated node
// (clobbers AX, R10, R11, Y12).
#define X2ROW(off, YL, YH) \
	MOVLQSX off(SI), AX; XORL R10, R10; TESTQ AX, AX; CMOVQLT R10, AX; \
	MOVQ AX, R11; SHLQ $6, R11; \
	VBROADCASTSD (R9)(AX*8), Y12; \
	VMULPD (R8)(R11*1), Y12, YL; VMULPD 32(R8)(R11*1), Y12, YH; \
	VMULPD Y14, YL, YL; VMULPD Y15, YH, YH

// X2T4(R0, R1, R2, R3) transposes 4 rows' 4 lanes: afterwards Rk holds lane k of the
// 4 rows (clobbers Y8–Y11).
#define X2T4(R0, R1, R2, R3) \
	VUNPCKLPD  R1, R0, Y8; \
	VUNPCKHPD  R1, R0, Y9; \
	VUNPCKLPD  R3, R2, Y10; \
	VUNPCKHPD  R3, R2, Y11; \
	VPERM2F128 $0x20, Y10, Y8, R0; \
	VPERM2F128 $0x20, Y11, Y9, R1; \
	VPERM2F128 $0x31, Y10, Y8, R2; \
	VPERM2F128 $0x31, Y11, Y9, R3

// X2STORE(b, OP, R) stores R with OP at outs[b] + BX when lane b is in the mask R13
// (clobbers AX).
#define X2STORE(b, OP, R) \
	BTQ $b, R13; JCC 3(PC); MOVQ (b*8)(R12), AX; OP R, (AX)(BX*1)

// func pprExtractAVX2(pos *int32, n, j0 int, y, full *float64, outs *[8]unsafe.Pointer, inv *[8]float64, mask uint64)
//
// pprExtractAVX512 in 256-bit registers: whole blocks of 4 outputs load their 4 rows
// as 8 registers, transpose each half (unpacks, then 128-bit permutes) and store 32
// bytes per lane; the remaining outputs are stored one lane at a time. The same
// products in the same order, so the same bits; an eliminated node's outputs get row
// 0's values in a block and are left alone in the tail, as there.
TEXT ·pprExtractAVX2(SB), NOSPLIT, $0-64
	MOVQ    pos+0(FP), SI
	MOVQ    n+8(FP), CX
	MOVQ    j0+16(FP), BX
	SHLQ    $3, BX
	MOVQ    y+24(FP), R8
	MOVQ    full+32(FP), R9
	MOVQ    outs+40(FP), R12
	MOVQ    inv+48(FP), AX
	VMOVUPD (AX), Y14
	VMOVUPD 32(AX), Y15
	MOVQ    mask+56(FP), R13
	TESTQ   CX, CX
	JZ      x2fin

x2block:
	CMPQ    CX, $4
	JLT     x2tail
	X2ROW(0, Y0, Y1)
	X2ROW(4, Y2, Y3)
	X2ROW(8, Y4, Y5)
	X2ROW(12, Y6, Y7)
	X2T4(Y0, Y2, Y4, Y6)
	X2STORE(0, VMOVUPD, Y0)
	X2STORE(1, VMOVUPD, Y2)
	X2STORE(2, VMOVUPD, Y4)
	X2STORE(3, VMOVUPD, Y6)
	X2T4(Y1, Y3, Y5, Y7)
	X2STORE(4, VMOVUPD, Y1)
	X2STORE(5, VMOVUPD, Y3)
	X2STORE(6, VMOVUPD, Y5)
	X2STORE(7, VMOVUPD, Y7)
	ADDQ    $16, SI
	ADDQ    $32, BX
	SUBQ    $4, CX
	JNZ     x2block
	JMP     x2fin

x2tail:
	MOVLQSX      (SI), AX
	TESTQ        AX, AX
	JS           x2next
	MOVQ         AX, R10
	SHLQ         $6, R10
	VBROADCASTSD (R9)(AX*8), Y12
	VMULPD       (R8)(R10*1), Y12, Y0
	VMULPD       32(R8)(R10*1), Y12, Y1
	VMULPD       Y14, Y0, Y0
	VMULPD       Y15, Y1, Y1
	VEXTRACTF128 $1, Y0, X2
	VEXTRACTF128 $1, Y1, X3
	X2STORE(0, VMOVSD, X0)
	X2STORE(1, VMOVHPD, X0)
	X2STORE(2, VMOVSD, X2)
	X2STORE(3, VMOVHPD, X2)
	X2STORE(4, VMOVSD, X1)
	X2STORE(5, VMOVHPD, X1)
	X2STORE(6, VMOVSD, X3)
	X2STORE(7, VMOVHPD, X3)

x2next:
	ADDQ         $4, SI
	ADDQ         $8, BX
	DECQ         CX
	JNZ          x2tail

x2fin:
	VZEROUPPER
	RET
