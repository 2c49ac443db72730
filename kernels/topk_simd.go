//go:build goexperiment.simd && amd64

package kernels

import (
	"simd/archsimd"
	"unsafe"
)

// nextAboveSIMD returns the number of leading entries of v, in whole blocks of
// sixteen (one AVX-512 register or two AVX2 ones, as path p says), that are not above
// x: the first block holding one above x (an ordered comparison, so a NaN is never
// above) ends the count, and nextAbove finds the entry within it.
func nextAboveSIMD(p KernelPath, v []float32, x float32) int {
	ptr := unsafe.Pointer(unsafe.SliceData(v))
	i := 0
	switch p {
	case KernelsAVX512:
		xv := archsimd.BroadcastFloat32x16(x)
		for ; i+16 <= len(v); i += 16 {
			if archsimd.LoadFloat32x16((*[16]float32)(unsafe.Add(ptr, i*4))).Greater(xv).ToBits() != 0 {
				break
			}
		}
	case KernelsAVX2:
		xv := archsimd.BroadcastFloat32x8(x)
		for ; i+16 <= len(v); i += 16 {
			lo := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(ptr, i*4))).Greater(xv)
			hi := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(ptr, i*4+32))).Greater(xv)
			if lo.Or(hi).ToBits() != 0 {
				break
			}
		}
	}
	return i
}
