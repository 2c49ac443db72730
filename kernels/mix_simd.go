//go:build goexperiment.simd && amd64

package kernels

import (
	"simd/archsimd"
	"unsafe"
)

// mixSIMD writes the entries of whole blocks of eight into out64 or out32 (the other
// nil) on path p, the scalar path's operations lane by lane (AVX-512: a block a
// register; AVX2: two), and returns how many it wrote.
func (m UnitMix) mixSIMD(p KernelPath, out64 []float64, out32 []float32, a []float32, b []float64) int {
	blocks := len(a) / 8
	switch {
	case blocks == 0 || p == KernelsPortable:
		return 0
	case p == KernelsAVX2:
		m.mix4(out64, out32, a, b, 2*blocks)
		return 8 * blocks
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

// mix4 is mixSIMD's loop in AVX2 registers over quads blocks of four.
func (m UnitMix) mix4(out64 []float64, out32 []float32, a []float32, b []float64, quads int) {
	one := archsimd.BroadcastFloat64x4(1)
	aOne, bOne := m.AHi == m.ALo, m.BHi == m.BLo
	alo, aspan := archsimd.BroadcastFloat64x4(m.ALo), archsimd.BroadcastFloat64x4(m.AHi-m.ALo)
	blo, bspan := archsimd.BroadcastFloat64x4(m.BLo), archsimd.BroadcastFloat64x4(m.BHi-m.BLo)
	lam, rest := archsimd.BroadcastFloat64x4(m.Lambda), archsimd.BroadcastFloat64x4(1-m.Lambda)
	pa := unsafe.Pointer(unsafe.SliceData(a))
	for k := range quads {
		i := 4 * k
		r := one
		if !aOne {
			r = archsimd.LoadFloat32x4((*[4]float32)(unsafe.Add(pa, 4*i))).ConvertToFloat64().Sub(alo).Div(aspan)
		}
		if b != nil {
			l := one
			if !bOne {
				l = archsimd.LoadFloat64x4((*[4]float64)(b[i : i+4])).Sub(blo).Div(bspan)
			}
			r = lam.Mul(l).Add(rest.Mul(r))
		}
		if out64 != nil {
			r.Store((*[4]float64)(out64[i : i+4]))
		} else {
			r.ConvertToFloat32().Store((*[4]float32)(out32[i : i+4]))
		}
	}
}
