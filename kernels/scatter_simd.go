//go:build goexperiment.simd && amd64

package kernels

import "unsafe"

// addScaledAtSIMD runs AddScaledAt's AVX-512 kernel over whole blocks of 16 entries,
// or its AVX2 kernel over blocks of 8, and returns how many entries it took (0 on the
// portable path). It stops before a block with an index out of range, which the
// portable loop then reports.
func addScaledAtSIMD(p KernelPath, out []float32, idx []int32, vals []float32, w float32) int {
	n := min(len(out), 1<<31) // every int32 index ≥ 0 is in range beyond
	switch p {
	case KernelsAVX512:
		if blocks := len(idx) / 16; blocks > 0 {
			return 16 * addScaledAtAVX512(unsafe.SliceData(out), n, unsafe.SliceData(idx), unsafe.SliceData(vals), blocks, w)
		}
	case KernelsAVX2:
		if blocks := len(idx) / 8; blocks > 0 {
			return 8 * addScaledAtAVX2(unsafe.SliceData(out), n, unsafe.SliceData(idx), unsafe.SliceData(vals), blocks, w)
		}
	}
	return 0
}

// addScaledAtAVX512 adds w·vals[k] to out[idx[k]] for k < 16·blocks
// (scatter_amd64.s) and returns the number of blocks done: all of them, or those
// before the first with an index that is negative or not below n. The indices of a
// block must be distinct.
//
//go:noescape
func addScaledAtAVX512(out *float32, n int, idx *int32, vals *float32, blocks int, w float32) int

// addScaledAtAVX2 is addScaledAtAVX512 in 256-bit registers (scatter_amd64.s), blocks
// of 8 entries, the stores one lane at a time.
//
//go:noescape
func addScaledAtAVX2(out *float32, n int, idx *int32, vals *float32, blocks int, w float32) int
