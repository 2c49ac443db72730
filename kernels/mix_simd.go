//go:build goexperiment.simd && amd64

package kernels

import (
	"simd/archsimd"
	"unsafe"
)

// mixSIMD writes the entries of whole blocks of eight into out64 or out32 (the other
// nil) with AVX-512, the scalar path's operations lane by lane, and returns how many
// it wrote.
func (m UnitMix) mixSIMD(out64 []float64, out32 []float32, a []float32, b []float64) int {
	blocks := len(a) / 8
	if !hasAVX512 || blocks == 0 {
		return 0
	}
	one := archsimd.BroadcastFloat64x8(1)
	aOne, bOne := m.AHi == m.ALo, m.BHi == m.BLo // unit is 1 throughout
	alo, aspan := archsimd.BroadcastFloat64x8(m.ALo), archsimd.BroadcastFloat64x8(m.AHi-m.ALo)
	blo, bspan := archsimd.BroadcastFloat64x8(m.BLo), archsimd.BroadcastFloat64x8(m.BHi-m.BLo)
	lam, rest := archsimd.BroadcastFloat64x8(m.Lambda), archsimd.BroadcastFloat64x8(1-m.Lambda)
	pa := unsafe.Pointer(unsafe.SliceData(a))
	for k := range blocks {
		i := 8 * k
		r := one
		if !aOne {
			r = archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pa, 4*i))).ConvertToFloat64().Sub(alo).Div(aspan)
		}
		if b != nil {
			l := one
			if !bOne {
				l = archsimd.LoadFloat64x8((*[8]float64)(b[i : i+8])).Sub(blo).Div(bspan)
			}
			r = lam.Mul(l).Add(rest.Mul(r))
		}
		if out64 != nil {
			r.Store((*[8]float64)(out64[i : i+8]))
		} else {
			r.ConvertToFloat32().Store((*[8]float32)(out32[i : i+8]))
		}
	}
	return 8 * blocks
}
