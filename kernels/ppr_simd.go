//go:build goexperiment.simd && amd64

package kernels

import (
	"simd/archsimd"
	"unsafe"
)

// pprTilePassSIMD is pprTilePass with AVX-512, the whole pass over slices [s0, s1) in
// one assembly loop (pprTilePassAVX512): the 8 rows of a slice accumulate in 8
// registers, each entry costing one 64-byte load of the neighbour's 8 lanes and one
// fused multiply-add, and the node update is one register per node. Row i's reset is
// row sidx[i] of the compacted reset tile sT, which holds np+1 rows
// (pprCompactResets writes only indices ≤ np).
func pprTilePassSIMD(p KernelPath, l *pprLayout, sT []float64, sidx []uint32, d, omega float64, cheb bool, cur, nxt []float64, s0, s1 int, res, zsum *pprLaneSums) {
	if p == KernelsPortable {
		pprTilePass(l, sT, sidx, d, omega, cheb, cur, nxt, s0, s1, res, zsum)
		return
	}
	if s1 <= s0 {
		*res, *zsum = pprLaneSums{}, pprLaneSums{}
		return
	}
	g0 := pprCheckPass(l, s0, s1, pprLanes, cur, nxt)
	if len(sT) < (l.np+1)*pprLanes || len(sidx) < s1*pprSellRows {
		panic("kernels: PPR tile pass over a short reset tile")
	}
	var sums [2][pprLanes]float64
	pass := pprTilePassAVX512
	if p == KernelsAVX2 {
		pass = pprTilePassAVX2
	}
	pass(&l.slicePtr[s0], s1-s0, unsafe.SliceData(l.col[g0:]), unsafe.SliceData(l.val[g0:]),
		unsafe.SliceData(cur), unsafe.SliceData(sT), unsafe.SliceData(l.str), unsafe.SliceData(l.inv), unsafe.SliceData(nxt),
		s0*pprSellRows, d, omega, cheb, &sums, &sidx[s0*pprSellRows])
	*res, *zsum = sums[0], sums[1]
}

// pprCheckPass checks what the assembly passes read and write without bounds checks
// and returns the first group's entry: every slice's rows are internal nodes < np,
// every column indexes an internal node (newPPRLayout), str and inv hold np entries
// and the node arrays np·stride, so a wrong slice range or array panics here instead
// of touching memory past an array.
func pprCheckPass(l *pprLayout, s0, s1, stride int, node ...[]float64) int {
	n := l.np
	if s0 < 0 || s1*pprSellRows > n || len(l.str) < n || len(l.inv) < n {
		panic("kernels: PPR pass past the internal nodes")
	}
	for _, a := range node {
		if len(a) < n*stride {
			panic("kernels: PPR pass over a short node array")
		}
	}
	_ = l.slicePtr[s1]
	return int(l.slicePtr[s0]) * pprSellRows
}

// pprPass1SIMD is pprPass1 with AVX-512, the whole pass over slices [s0, s1) in one
// assembly loop (pprPassAVX512): the 8 rows of a slice are reduced in the 8 lanes of
// one register with one VGATHERDPD per group of entries (package archsimd has no
// gather), and the node update is vectorised over the slice's 8 rows, which are 8
// consecutive internal nodes. Other paths run pprPass1.
func pprPass1SIMD(p KernelPath, l *pprLayout, sv []float64, d, omega float64, cheb bool, cur, nxt []float64, s0, s1 int) (res, zsum float64) {
	if p == KernelsPortable {
		return pprPass1(l, sv, d, omega, cheb, cur, nxt, s0, s1)
	}
	if s1 <= s0 {
		return 0, 0
	}
	g0 := pprCheckPass(l, s0, s1, 1, cur, sv, nxt)
	var sums [2][pprSellRows]float64
	pass := pprPassAVX512
	if p == KernelsAVX2 {
		pass = pprPassAVX2
	}
	pass(&l.slicePtr[s0], s1-s0, unsafe.SliceData(l.col[g0:]), unsafe.SliceData(l.val[g0:]),
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

// pprPassAVX2 is pprPassAVX512 in 256-bit registers (ppr_avx2_amd64.s): the same
// operations in the same order, so the same bits.
//
//go:noescape
func pprPassAVX2(slicePtr *int32, nslices int, cols *int32, vals *float32, y, sv, str, inv, nxt *float64, i0 int, d, omega float64, relax bool, sums *[2][pprSellRows]float64)

// pprTilePassAVX2 is pprTilePassAVX512 in 256-bit registers (ppr_avx2_amd64.s), a
// slice's rows in two sweeps of 4: the same bits.
//
//go:noescape
func pprTilePassAVX2(slicePtr *int32, nslices int, cols *int32, vals *float32, y, sv, str, inv, nxt *float64, i0 int, d, omega float64, relax bool, sums *[2][pprLanes]float64, sidx *uint32)

// pprTilePassAVX512 runs one pass of pprTilePassSIMD over nslices slices from
// slicePtr's, the first of them holding nodes i0…i0+7 (ppr_gather_amd64.s). cols and
// vals point at the first slice's first group; y, sv (the compacted reset tile) and
// nxt at node 0's row of 8 lanes, str and inv at node 0, sidx at node i0's reset row
// index. It reads the columns of pprPrefetchGroups groups past the last (prefetch
// only): the layout's col holds them. sums receives each lane's residual and Σz.
//
//go:noescape
func pprTilePassAVX512(slicePtr *int32, nslices int, cols *int32, vals *float32, y, sv, str, inv, nxt *float64, i0 int, d, omega float64, relax bool, sums *[2][pprLanes]float64, sidx *uint32)

// pprInterleaveSIMD writes rows of the reset tile sT (8 lanes a row): row rows[j] of
// sT, for node v = nodes[j], gets lane b = resets[b][v]·scales[b] for v ≥ 0 and
// b < len(resets), 0 otherwise, the entries of a row gathered in one instruction
// (the Go loop reads eight resets at random one entry at a time). In newPPRLayout's
// order (ilvNode, ilvRow) the resets are read forward. Every node must be −1 or < n
// and every row within sT (newPPRLayout builds them so, and TestPPRInterleaveOrder
// holds it to that); sT shorter than the rows or a reset shorter than n panics. On
// AVX2 a row is two gathers of 4 (pprInterleaveAVX2), with the same bits. It reports
// false, writing nothing, on the portable path.
func pprInterleaveSIMD(p KernelPath, nodes, rows []int32, n int, resets [][]float64, scales []float64, sT []float64) bool {
	if p == KernelsPortable || len(resets) > pprLanes {
		return false
	}
	if len(rows) < len(nodes) || len(sT) < len(nodes)*pprLanes {
		panic("kernels: PPR reset tile shorter than its rows")
	}
	pprInterleaveRun(p, nodes, rows, n, resets, scales, unsafe.Pointer(unsafe.SliceData(sT)), false)
	return true
}

// pprInterleave32SIMD is pprInterleaveSIMD for half of a pair's float32 tile: row
// rows[j] of s32 (16 float32 a row, from the slice's start) gets resets[b][v]·scales[b],
// rounded to float32, in lane b of the half that s32 starts at (lanes 0–7 from row 0's
// first entry, 8–15 from its ninth), 0 in the lanes past len(resets). It reports false,
// writing nothing, on the portable path.
func pprInterleave32SIMD(p KernelPath, nodes, rows []int32, n int, resets [][]float64, scales []float64, s32 []float32) bool {
	if p == KernelsPortable || len(resets) > pprLanes {
		return false
	}
	if len(rows) < len(nodes) || (len(nodes) > 0 && len(s32) < (len(nodes)-1)*pprLanes32+pprLanes) {
		panic("kernels: PPR float32 reset tile shorter than its rows")
	}
	pprInterleaveRun(p, nodes, rows, n, resets, scales, unsafe.Pointer(unsafe.SliceData(s32)), true)
	return true
}

// pprInterleaveRun checks the resets and runs path p's interleave kernel over the rows.
func pprInterleaveRun(p KernelPath, nodes, rows []int32, n int, resets [][]float64, scales []float64, s unsafe.Pointer, f32 bool) {
	if len(nodes) == 0 {
		return
	}
	var lanes [pprLanes]unsafe.Pointer
	var sc [pprLanes]float64
	var mask uint64
	var masks [pprLanes]int64
	for b, r := range resets {
		if len(r) < n {
			panic("kernels: PPR reset shorter than the graph")
		}
		lanes[b], sc[b], mask, masks[b] = unsafe.Pointer(unsafe.SliceData(r)), scales[b], mask|1<<b, -1
	}
	if p == KernelsAVX2 {
		pprInterleaveAVX2(&nodes[0], &rows[0], len(nodes), &lanes, &sc, &masks, s, f32)
		return
	}
	pprInterleaveAVX512(&nodes[0], &rows[0], len(nodes), &lanes, &sc, mask, s, f32)
}

// pprInterleaveAVX2 is pprInterleaveAVX512 in 256-bit registers (ppr_avx2_amd64.s),
// the lanes in the mask given as masks (−1 in, 0 out): the same bits.
//
//go:noescape
func pprInterleaveAVX2(nodes, rows *int32, n int, lanes *[pprLanes]unsafe.Pointer, scales *[pprLanes]float64, masks *[pprLanes]int64, s unsafe.Pointer, f32 bool)

// pprExtractSIMD writes, for every j in [j0, j1) whose node is a row (p = pos[j] ≥ 0),
// xs[i][j] = (y[p·8 + lanes[i]]·full[p])·inv[i], with Go's rounding, the lanes of a row
// scattered in one instruction; outputs of eliminated nodes are left to the caller.
// Every row must be < len(full) and its lanes within y (newPPRLayout). On AVX2 the
// rows go 4 at a time (pprExtractAVX2), with the same bits. It reports false, writing
// nothing, on the portable path.
func pprExtractSIMD(p KernelPath, pos []int32, j0, j1 int, y, full []float64, lanes []int, inv *[pprLanes]float64, xs [][]float64) bool {
	if p == KernelsPortable {
		return false
	}
	if j0 < 0 || j1 > len(pos) || len(y) < len(full)*pprLanes {
		panic("kernels: PPR extract past its arrays")
	}
	if j1 <= j0 {
		return true
	}
	var outs [pprLanes]unsafe.Pointer
	var iv [pprLanes]float64
	var mask uint64
	for i, b := range lanes {
		if len(xs[i]) < j1 {
			panic("kernels: PPR extract into a short output")
		}
		outs[b], iv[b], mask = unsafe.Pointer(unsafe.SliceData(xs[i])), inv[i], mask|1<<b
	}
	if p == KernelsAVX2 {
		pprExtractAVX2(&pos[j0], j1-j0, j0, unsafe.SliceData(y), unsafe.SliceData(full), &outs, &iv, mask)
		return true
	}
	pprExtractAVX512(&pos[j0], j1-j0, j0, unsafe.SliceData(y), unsafe.SliceData(full), &outs, &iv, mask)
	return true
}

// pprExtractAVX2 is pprExtractAVX512 in 256-bit registers (ppr_avx2_amd64.s), blocks
// of 4 outputs: the same bits.
//
//go:noescape
func pprExtractAVX2(pos *int32, n, j0 int, y, full *float64, outs *[pprLanes]unsafe.Pointer, inv *[pprLanes]float64, mask uint64)

// pprInterleaveAVX512 and pprExtractAVX512: see pprInterleaveSIMD and pprExtractSIMD
// (ppr_gather_amd64.s).
//
//go:noescape
func pprInterleaveAVX512(nodes, rows *int32, n int, lanes *[pprLanes]unsafe.Pointer, scales *[pprLanes]float64, mask uint64, s unsafe.Pointer, f32 bool)

//go:noescape
func pprExtractAVX512(pos *int32, n, j0 int, y, full *float64, outs *[pprLanes]unsafe.Pointer, inv *[pprLanes]float64, mask uint64)

// pprCompactResetsSIMD is pprCompactResets with AVX-512: a row's 8 lanes are scaled
// (one multiply, rounded as the scalar one) and tested for zero bits in two
// instructions; cur nil is left alone. AVX2 does the same on half-rows
// (pprCompactResetsAVX2); the portable path runs pprCompactResets.
func pprCompactResetsSIMD(p KernelPath, s, cur []float64, sidx []uint32, inv []float64, np, lo, hi int) {
	switch p {
	case KernelsPortable:
		pprCompactResets(s, cur, sidx, inv, pprLanes, np, lo, hi)
		return
	case KernelsAVX2:
		pprCompactResetsAVX2(s, cur, sidx, inv, np, lo, hi)
		return
	}
	keep := cur == nil
	if !keep {
		cur = cur[:hi*pprLanes]
	}
	s, sidx, inv = s[:hi*pprLanes], sidx[:hi], inv[:hi]
	zero := archsimd.BroadcastUint64x8(0)
	k := lo
	for i := lo; i < hi; i++ {
		row := archsimd.LoadFloat64x8((*[pprLanes]float64)(s[i*pprLanes:]))
		if !keep {
			row.Mul(archsimd.BroadcastFloat64x8(inv[i])).Store((*[pprLanes]float64)(cur[i*pprLanes:]))
		}
		if row.AsUint64x8().NotEqual(zero).ToBits() == 0 {
			sidx[i] = uint32(np)
			continue
		}
		if k != i {
			row.Store((*[pprLanes]float64)(s[k*pprLanes:]))
		}
		sidx[i] = uint32(k)
		k++
	}
}

// pprCompactResetsAVX2 is pprCompactResetsSIMD with a row's lanes in two 4-lane
// registers.
func pprCompactResetsAVX2(s, cur []float64, sidx []uint32, inv []float64, np, lo, hi int) {
	keep := cur == nil
	if !keep {
		cur = cur[:hi*pprLanes]
	}
	s, sidx, inv = s[:hi*pprLanes], sidx[:hi], inv[:hi]
	zero := archsimd.BroadcastUint64x4(0)
	k := lo
	for i := lo; i < hi; i++ {
		a := archsimd.LoadFloat64x4((*[4]float64)(s[i*pprLanes:]))
		b := archsimd.LoadFloat64x4((*[4]float64)(s[i*pprLanes+4:]))
		if !keep {
			w := archsimd.BroadcastFloat64x4(inv[i])
			a.Mul(w).Store((*[4]float64)(cur[i*pprLanes:]))
			b.Mul(w).Store((*[4]float64)(cur[i*pprLanes+4:]))
		}
		if a.AsUint64x4().Or(b.AsUint64x4()).Equal(zero).ToBits() == 0b1111 {
			sidx[i] = uint32(np)
			continue
		}
		if k != i {
			a.Store((*[4]float64)(s[k*pprLanes:]))
			b.Store((*[4]float64)(s[k*pprLanes+4:]))
		}
		sidx[i] = uint32(k)
		k++
	}
}

// pprTileTotalsSIMD is pprTileTotals with the 8 lanes of a row in one register: one
// multiply and one add a row, each lane's operations in pprTileTotals's order.
// AVX2 holds a row in two registers; the portable path runs pprTileTotals.
func pprTileTotalsSIMD(p KernelPath, y, mass []float64, perm []int32, lo, hi int) [pprLanes]float64 {
	switch p {
	case KernelsPortable:
		return pprTileTotals(y, mass, perm, lo, hi)
	case KernelsAVX2:
		return pprTileTotalsAVX2(y, mass, perm, lo, hi)
	}
	y, mass, perm = y[:hi*pprLanes], mass[:hi], perm[:hi]
	var acc archsimd.Float64x8
	for v := lo; v < hi; v++ {
		if perm[v] < 0 {
			continue
		}
		row := archsimd.LoadFloat64x8((*[pprLanes]float64)(y[v*pprLanes:]))
		acc = acc.Add(row.Mul(archsimd.BroadcastFloat64x8(mass[v])))
	}
	var sum [pprLanes]float64
	acc.Store(&sum)
	return sum
}

// pprTileTotalsAVX2 is pprTileTotalsSIMD with a row's lanes 0–3 and 4–7 in two
// registers.
func pprTileTotalsAVX2(y, mass []float64, perm []int32, lo, hi int) [pprLanes]float64 {
	y, mass, perm = y[:hi*pprLanes], mass[:hi], perm[:hi]
	var a, b archsimd.Float64x4
	for v := lo; v < hi; v++ {
		if perm[v] < 0 {
			continue
		}
		m := archsimd.BroadcastFloat64x4(mass[v])
		a = a.Add(archsimd.LoadFloat64x4((*[4]float64)(y[v*pprLanes:])).Mul(m))
		b = b.Add(archsimd.LoadFloat64x4((*[4]float64)(y[v*pprLanes+4:])).Mul(m))
	}
	var sum [pprLanes]float64
	a.Store((*[4]float64)(sum[:4]))
	b.Store((*[4]float64)(sum[4:]))
	return sum
}

// pprTilePass32SIMD is pprTilePass32 with AVX-512, the whole pass over slices
// [s0, s1) in one assembly loop (pprTilePass32AVX512): pprTilePassAVX512's loop in
// float32 with 16 lanes a register, the lanes not in active masked out of the stores.
// Other paths run pprTilePass32.
func pprTilePass32SIMD(p KernelPath, l *pprLayout, sT []float32, sidx []uint32, d, omega float32, active uint16, cur []float32, s0, s1 int, res, zsum *pprLaneSums32) {
	if p == KernelsPortable {
		pprTilePass32(l, l.str32, l.inv32, sT, sidx, d, omega, active, cur, s0, s1, res, zsum)
		return
	}
	if s1 <= s0 {
		*res, *zsum = pprLaneSums32{}, pprLaneSums32{}
		return
	}
	g0 := pprCheckPass(l, s0, s1, pprLanes32)
	np := l.np
	if len(cur) < np*pprLanes32 || len(sT) < (np+1)*pprLanes32 || len(sidx) < s1*pprSellRows || len(l.str32) < np || len(l.inv32) < np {
		panic("kernels: PPR float32 tile pass over a short array")
	}
	var sums [2]pprLaneSums32
	if p == KernelsAVX2 {
		var masks [pprLanes32]int32
		for b := range masks {
			masks[b] = -int32(active >> b & 1)
		}
		pprTilePass32AVX2(&l.slicePtr[s0], s1-s0, unsafe.SliceData(l.col[g0:]), unsafe.SliceData(l.val[g0:]),
			unsafe.SliceData(cur), unsafe.SliceData(sT), unsafe.SliceData(l.str32), unsafe.SliceData(l.inv32),
			s0*pprSellRows, d, omega, &masks, &sums, &sidx[s0*pprSellRows])
	} else {
		pprTilePass32AVX512(&l.slicePtr[s0], s1-s0, unsafe.SliceData(l.col[g0:]), unsafe.SliceData(l.val[g0:]),
			unsafe.SliceData(cur), unsafe.SliceData(sT), unsafe.SliceData(l.str32), unsafe.SliceData(l.inv32),
			s0*pprSellRows, d, omega, active, &sums, &sidx[s0*pprSellRows])
	}
	*res, *zsum = sums[0], sums[1]
}

// pprTilePass32AVX512 runs one pass of pprTilePass32SIMD over nslices slices from
// slicePtr's, the first of them holding nodes i0…i0+7 (ppr_gather_amd64.s); see
// pprTilePassAVX512 for the pointers.
//
//go:noescape
func pprTilePass32AVX512(slicePtr *int32, nslices int, cols *int32, vals *float32, y, sv, str, inv *float32, i0 int, d, omega float32, active uint16, sums *[2]pprLaneSums32, sidx *uint32)

// pprTilePass32AVX2 is pprTilePass32AVX512 in 256-bit registers (ppr_avx2_amd64.s),
// the active lanes given as masks (−1 active, 0 not): the same bits.
//
//go:noescape
func pprTilePass32AVX2(slicePtr *int32, nslices int, cols *int32, vals *float32, y, sv, str, inv *float32, i0 int, d, omega float32, masks *[pprLanes32]int32, sums *[2]pprLaneSums32, sidx *uint32)

// pprCompactResets32SIMD is pprCompactResets32 with a row's 16 lanes in one
// register (the multiply rounded as the scalar one), or in two on AVX2. The portable
// path runs pprCompactResets32.
func pprCompactResets32SIMD(p KernelPath, s, cur []float32, sidx []uint32, inv []float32, np, lo, hi int) {
	switch p {
	case KernelsPortable:
		pprCompactResets32(s, cur, sidx, inv, np, lo, hi)
		return
	case KernelsAVX2:
		pprCompactResets32AVX2(s, cur, sidx, inv, np, lo, hi)
		return
	}
	s, cur, sidx, inv = s[:hi*pprLanes32], cur[:hi*pprLanes32], sidx[:hi], inv[:hi]
	zero := archsimd.BroadcastUint32x16(0)
	k := lo
	for i := lo; i < hi; i++ {
		row := archsimd.LoadFloat32x16((*[pprLanes32]float32)(s[i*pprLanes32:]))
		row.Mul(archsimd.BroadcastFloat32x16(inv[i])).Store((*[pprLanes32]float32)(cur[i*pprLanes32:]))
		if row.AsUint32x16().NotEqual(zero).ToBits() == 0 {
			sidx[i] = uint32(np)
			continue
		}
		if k != i {
			row.Store((*[pprLanes32]float32)(s[k*pprLanes32:]))
		}
		sidx[i] = uint32(k)
		k++
	}
}

// pprCompactResets32AVX2 is pprCompactResets32SIMD with a row in two 8-lane registers.
func pprCompactResets32AVX2(s, cur []float32, sidx []uint32, inv []float32, np, lo, hi int) {
	s, cur, sidx, inv = s[:hi*pprLanes32], cur[:hi*pprLanes32], sidx[:hi], inv[:hi]
	zero := archsimd.BroadcastUint32x8(0)
	k := lo
	for i := lo; i < hi; i++ {
		a := archsimd.LoadFloat32x8((*[8]float32)(s[i*pprLanes32:]))
		b := archsimd.LoadFloat32x8((*[8]float32)(s[i*pprLanes32+8:]))
		w := archsimd.BroadcastFloat32x8(inv[i])
		a.Mul(w).Store((*[8]float32)(cur[i*pprLanes32:]))
		b.Mul(w).Store((*[8]float32)(cur[i*pprLanes32+8:]))
		if a.AsUint32x8().Or(b.AsUint32x8()).Equal(zero).ToBits() == 0xff {
			sidx[i] = uint32(np)
			continue
		}
		if k != i {
			a.Store((*[8]float32)(s[k*pprLanes32:]))
			b.Store((*[8]float32)(s[k*pprLanes32+8:]))
		}
		sidx[i] = uint32(k)
		k++
	}
}

// pprSplitTile32SIMD is pprSplitTile32 with 8 lanes converted in one instruction
// (rounded as float64(x) is: exactly), or 4 at a time on AVX2. The portable path runs
// pprSplitTile32.
func pprSplitTile32SIMD(p KernelPath, cur []float64, half []float32, lo, hi int) {
	if p == KernelsPortable {
		pprSplitTile32(cur, half, lo, hi)
		return
	}
	c32 := asFloat32(cur[:hi*pprLanes])
	half = half[:hi*pprLanes]
	for i := lo; i < hi; i++ {
		if p == KernelsAVX2 {
			// Both halves are loaded before the row's first float32 lanes are
			// overwritten by their widened values.
			a0 := archsimd.LoadFloat32x4((*[4]float32)(c32[i*pprLanes32:]))
			a1 := archsimd.LoadFloat32x4((*[4]float32)(c32[i*pprLanes32+4:]))
			archsimd.LoadFloat32x8((*[pprLanes]float32)(c32[i*pprLanes32+pprLanes:])).Store((*[pprLanes]float32)(half[i*pprLanes:]))
			a0.ConvertToFloat64().Store((*[4]float64)(cur[i*pprLanes:]))
			a1.ConvertToFloat64().Store((*[4]float64)(cur[i*pprLanes+4:]))
			continue
		}
		a := archsimd.LoadFloat32x8((*[pprLanes]float32)(c32[i*pprLanes32:]))
		b := archsimd.LoadFloat32x8((*[pprLanes]float32)(c32[i*pprLanes32+pprLanes:]))
		b.Store((*[pprLanes]float32)(half[i*pprLanes:]))
		a.ConvertToFloat64().Store((*[pprLanes]float64)(cur[i*pprLanes:]))
	}
}

// pprWidenHalfSIMD is pprWidenHalf with 8 lanes converted in one instruction, or 4
// at a time on AVX2. The portable path runs pprWidenHalf.
func pprWidenHalfSIMD(p KernelPath, half []float32, cur []float64, lo, hi int) {
	if p == KernelsPortable {
		pprWidenHalf(half, cur, lo, hi)
		return
	}
	half, cur = half[:hi*pprLanes], cur[:hi*pprLanes]
	if p == KernelsAVX2 {
		for i := lo * pprLanes; i < hi*pprLanes; i += 4 {
			archsimd.LoadFloat32x4((*[4]float32)(half[i:])).ConvertToFloat64().Store((*[4]float64)(cur[i:]))
		}
		return
	}
	for i := lo; i < hi; i++ {
		archsimd.LoadFloat32x8((*[pprLanes]float32)(half[i*pprLanes:])).ConvertToFloat64().Store((*[pprLanes]float64)(cur[i*pprLanes:]))
	}
}
