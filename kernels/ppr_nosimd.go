//go:build !(goexperiment.simd && amd64)

package kernels

// pprTilePassSIMD falls back to the portable kernel.
func pprTilePassSIMD(_ KernelPath, l *pprLayout, sT []float64, sidx []uint32, d, omega float64, cheb bool, cur, nxt []float64, s0, s1 int, res, zsum *pprLaneSums) {
	pprTilePass(l, sT, sidx, d, omega, cheb, cur, nxt, s0, s1, res, zsum)
}

// pprPass1SIMD runs the portable pprPass1.
func pprPass1SIMD(_ KernelPath, l *pprLayout, sv []float64, d, omega float64, cheb bool, cur, nxt []float64, s0, s1 int) (res, zsum float64) {
	return pprPass1(l, sv, d, omega, cheb, cur, nxt, s0, s1)
}

// pprInterleaveSIMD reports that no vector kernel runs.
func pprInterleaveSIMD(KernelPath, []int32, []int32, int, [][]float64, []float64, []float64) bool {
	return false
}

// pprExtractSIMD reports that no vector kernel runs.
func pprExtractSIMD(KernelPath, []int32, int, int, []float64, []float64, []int, *[pprLanes]float64, [][]float64) bool {
	return false
}

// pprCompactResetsSIMD runs the portable pprCompactResets.
func pprCompactResetsSIMD(_ KernelPath, s, cur []float64, sidx []uint32, inv []float64, np, lo, hi int) {
	pprCompactResets(s, cur, sidx, inv, pprLanes, np, lo, hi)
}

// pprTileTotalsSIMD runs the portable pprTileTotals.
func pprTileTotalsSIMD(_ KernelPath, y, mass []float64, perm []int32, lo, hi int) [pprLanes]float64 {
	return pprTileTotals(y, mass, perm, lo, hi)
}

// pprTilePass32SIMD runs the portable pprTilePass32.
func pprTilePass32SIMD(_ KernelPath, l *pprLayout, sT []float32, sidx []uint32, d, omega float32, active uint16, cur []float32, s0, s1 int, res, zsum *pprLaneSums32) {
	pprTilePass32(l, l.str32, l.inv32, sT, sidx, d, omega, active, cur, s0, s1, res, zsum)
}

// pprInterleave32SIMD reports that no vector kernel runs.
func pprInterleave32SIMD(KernelPath, []int32, []int32, int, [][]float64, []float64, []float32) bool {
	return false
}

// pprCompactResets32SIMD runs the portable pprCompactResets32.
func pprCompactResets32SIMD(_ KernelPath, s, cur []float32, sidx []uint32, inv []float32, np, lo, hi int) {
	pprCompactResets32(s, cur, sidx, inv, np, lo, hi)
}

// pprSplitTile32SIMD runs the portable pprSplitTile32.
func pprSplitTile32SIMD(_ KernelPath, cur []float64, half []float32, lo, hi int) {
	pprSplitTile32(cur, half, lo, hi)
}

// pprWidenHalfSIMD runs the portable pprWidenHalf.
func pprWidenHalfSIMD(_ KernelPath, half []float32, cur []float64, lo, hi int) {
	pprWidenHalf(half, cur, lo, hi)
}
