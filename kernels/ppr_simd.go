//go:build goexperiment.simd && amd64

package kernels

import (
	"simd/archsimd"
	"unsafe"
)

// pprSIMDAvailable reports whether the AVX-512 tile kernel can run on this CPU.
func pprSIMDAvailable() bool { return archsimd.X86.AVX512() }

// pprTilePassSIMD is pprTilePass with AVX-512: the 8 rows of a slice accumulate in 8
// registers (pprTileGatherAVX512, assembly: the Go compiler spills 8 vector
// accumulators), each entry costing one 64-byte load of the neighbour's 8 lanes and one
// fused multiply-add; the node update is one register per node.
//
// The neighbour loads skip bounds checks: every column is an internal node < np (built
// by newPPRLayout) and cur has np·pprLanes entries.
func pprTilePassSIMD(l *pprLayout, sT []float64, d, omega float64, cheb bool, cur, nxt []float64, s0, s1 int, res, zsum *pprLaneSums) {
	e := pprTileEpilogue{str: l.str, inv: l.inv, sT: sT, cur: cur, nxt: nxt,
		dv: archsimd.BroadcastFloat64x8(d), om: archsimd.BroadcastFloat64x8(omega), cheb: cheb}
	y := unsafe.SliceData(cur[:l.np*pprLanes])
	var acc [pprSellRows][pprLanes]float64
	for sl := s0; sl < s1; sl++ {
		g0, g1 := int(l.slicePtr[sl])*pprSellRows, int(l.slicePtr[sl+1])*pprSellRows
		pprTileGatherAVX512(unsafe.SliceData(l.col[g0:g1]), unsafe.SliceData(l.val[g0:g1]), (g1-g0)/pprSellRows, y, &acc)
		i := sl * pprSellRows
		for r := range acc {
			e.row(i+r, archsimd.LoadFloat64x8(&acc[r]))
		}
	}
	e.r.Store((*[pprLanes]float64)(res))
	e.zs.Store((*[pprLanes]float64)(zsum))
}

// pprTileEpilogue finishes the nodes of a tile pass (see pprPass1) and accumulates
// the residual and Σz of each lane.
type pprTileEpilogue struct {
	str, inv, sT  []float64
	cur, nxt      []float64
	dv, om, r, zs archsimd.Float64x8
	cheb          bool
}

// row updates internal node i from its accumulated Σ w·y.
func (e *pprTileEpilogue) row(i int, acc archsimd.Float64x8) {
	off := i * pprLanes
	sv := archsimd.LoadFloat64x8((*[pprLanes]float64)(e.sT[off:]))
	yc := archsimd.LoadFloat64x8((*[pprLanes]float64)(e.cur[off:]))
	j := e.dv.MulAdd(acc, sv)
	z := yc.Mul(archsimd.BroadcastFloat64x8(e.str[i]))
	e.r = e.r.Add(j.Sub(z).Max(z.Sub(j)))
	e.zs = e.zs.Add(z)
	jy := j.Mul(archsimd.BroadcastFloat64x8(e.inv[i]))
	out := (*[pprLanes]float64)(e.nxt[off:])
	if e.cheb {
		yp := archsimd.LoadFloat64x8(out)
		jy = e.om.MulAdd(jy.Sub(yp), yp)
	}
	jy.Store(out)
}

// pprPass1SIMD is pprPass1 with AVX-512, the whole pass over slices [s0, s1) in one
// assembly loop (pprPassAVX512): the 8 rows of a slice are reduced in the 8 lanes of
// one register with one VGATHERDPD per group of entries (package archsimd has no
// gather), and the node update is vectorised over the slice's 8 rows, which are 8
// consecutive internal nodes. simd = false runs pprPass1.
func pprPass1SIMD(simd bool, l *pprLayout, sv []float64, d, omega float64, cheb bool, cur, nxt []float64, s0, s1 int) (res, zsum float64) {
	if !simd {
		return pprPass1(l, sv, d, omega, cheb, cur, nxt, s0, s1)
	}
	if s1 <= s0 {
		return 0, 0
	}
	// Every slice's rows are internal nodes < np, every column indexes cur[:np], and
	// the five node arrays hold np entries (newPPRLayout); the checks below make an
	// out-of-range slice range panic here instead of reading past an array.
	n := l.np
	_, _, _, _, _ = cur[n-1], sv[n-1], l.str[n-1], l.inv[n-1], nxt[n-1]
	if s1*pprSellRows > n {
		panic("kernels: PPR pass past the internal nodes")
	}
	g0 := int(l.slicePtr[s0]) * pprSellRows
	_ = l.slicePtr[s1]
	var sums [2][pprSellRows]float64
	pprPassAVX512(&l.slicePtr[s0], s1-s0, unsafe.SliceData(l.col[g0:]), unsafe.SliceData(l.val[g0:]),
		unsafe.SliceData(cur), unsafe.SliceData(sv), unsafe.SliceData(l.str), unsafe.SliceData(l.inv), unsafe.SliceData(nxt),
		s0*pprSellRows, d, omega, cheb, &sums)
	for r := range sums[0] {
		res += sums[0][r]
		zsum += sums[1][r]
	}
	return res, zsum
}

// pprPassAVX512 runs one pass of pprPass1SIMD over nslices slices from slicePtr's, the
// first of them holding nodes i0…i0+7 (ppr_gather_amd64.s). cols and vals point at the
// first slice's first group; y, sv, str, inv and nxt at node 0. sums receives the 8
// lanes of the residual and of Σz.
//
//go:noescape
func pprPassAVX512(slicePtr *int32, nslices int, cols *int32, vals *float32, y, sv, str, inv, nxt *float64, i0 int, d, omega float64, relax bool, sums *[2][pprSellRows]float64)

// pprTileGatherAVX512 sets acc[r] = Σ_k vals[8k+r]·y[cols[8k+r]][0:8], k < groups, for
// the 8 rows of one slice and a tile stored [node][8] (ppr_gather_amd64.s). It reads
// the columns of pprPrefetchGroups groups past the last (prefetch only): the layout's
// col holds them.
//
//go:noescape
func pprTileGatherAVX512(cols *int32, vals *float32, groups int, y *float64, acc *[pprSellRows][pprLanes]float64)
