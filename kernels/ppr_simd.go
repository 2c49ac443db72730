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

// pprPass1SIMD is pprPass1 with AVX-512: the 8 rows of a slice are reduced in the 8
// lanes of one register with one VGATHERDPD per group of entries (pprGatherAVX512,
// assembly: package archsimd has no gather), and the node update is vectorised over
// the slice's 8 rows, which are 8 consecutive internal nodes. simd = false runs
// pprPass1.
func pprPass1SIMD(simd bool, l *pprLayout, sv []float64, d, omega float64, cheb bool, cur, nxt []float64, s0, s1 int) (res, zsum float64) {
	if !simd {
		return pprPass1(l, sv, d, omega, cheb, cur, nxt, s0, s1)
	}
	y := unsafe.SliceData(cur[:l.np])
	dv := archsimd.BroadcastFloat64x8(d)
	om := archsimd.BroadcastFloat64x8(omega)
	var rs, zs archsimd.Float64x8
	var acc [pprSellRows]float64
	for sl := s0; sl < s1; sl++ {
		g0, g1 := int(l.slicePtr[sl])*pprSellRows, int(l.slicePtr[sl+1])*pprSellRows
		pprGatherAVX512(unsafe.SliceData(l.col[g0:g1]), unsafe.SliceData(l.val[g0:g1]), (g1-g0)/pprSellRows, y, &acc)
		i0 := sl * pprSellRows
		j := dv.MulAdd(archsimd.LoadFloat64x8(&acc), archsimd.LoadFloat64x8((*[pprSellRows]float64)(sv[i0:])))
		z := archsimd.LoadFloat64x8((*[pprSellRows]float64)(cur[i0:])).Mul(archsimd.LoadFloat64x8((*[pprSellRows]float64)(l.str[i0:])))
		rs = rs.Add(j.Sub(z).Max(z.Sub(j)))
		zs = zs.Add(z)
		jy := j.Mul(archsimd.LoadFloat64x8((*[pprSellRows]float64)(l.inv[i0:])))
		out := (*[pprSellRows]float64)(nxt[i0:])
		if cheb {
			yp := archsimd.LoadFloat64x8(out)
			jy = om.MulAdd(jy.Sub(yp), yp)
		}
		jy.Store(out)
	}
	var r8, z8 [pprSellRows]float64
	rs.Store(&r8)
	zs.Store(&z8)
	for r := range r8 {
		res += r8[r]
		zsum += z8[r]
	}
	return res, zsum
}

// pprGatherAVX512 sets acc[r] = Σ_k vals[8k+r]·y[cols[8k+r]], k < groups (the 8 rows
// of one slice), in ppr_gather_amd64.s. Every cols entry must index y.
//
//go:noescape
func pprGatherAVX512(cols *int32, vals *float32, groups int, y *float64, acc *[pprSellRows]float64)

// pprTileGatherAVX512 sets acc[r] = Σ_k vals[8k+r]·y[cols[8k+r]][0:8], k < groups, for
// the 8 rows of one slice and a tile stored [node][8] (ppr_gather_amd64.s). It reads
// the columns of pprPrefetchGroups groups past the last (prefetch only): the layout's
// col holds them.
//
//go:noescape
func pprTileGatherAVX512(cols *int32, vals *float32, groups int, y *float64, acc *[pprSellRows][pprLanes]float64)
