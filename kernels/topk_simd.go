//go:build goexperiment.simd && amd64

package kernels

import (
	"simd/archsimd"
	"unsafe"
)

// nextAboveSIMD returns the number of leading entries of v, in whole blocks of
// sixteen, that are not above x: the first block holding one above x (an ordered
// comparison, so a NaN is never above) ends the count, and nextAbove finds the entry
// within it.
func nextAboveSIMD(v []float32, x float32) int {
	if !hasAVX512 {
		return 0
	}
	p := unsafe.Pointer(unsafe.SliceData(v))
	xv := archsimd.BroadcastFloat32x16(x)
	i := 0
	for ; i+16 <= len(v); i += 16 {
		if archsimd.LoadFloat32x16((*[16]float32)(unsafe.Add(p, i*4))).Greater(xv).ToBits() != 0 {
			break
		}
	}
	return i
}
