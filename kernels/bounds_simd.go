//go:build goexperiment.simd && amd64

package kernels

import (
	"simd/archsimd"
	"unsafe"
)

// boundsSIMD returns the least and greatest entry of v eight lanes at a time, with ok
// false (and nothing else meant) when v is shorter than 64 entries, the CPU has no
// AVX-512, or an entry is NaN or infinite: x − x is 0 for every finite x, so the sum
// of the differences stays 0 exactly unless one is not. The sign of a zero bound is
// left to the caller.
func boundsSIMD(v []float64) (lo, hi float64, ok bool) {
	if !hasAVX512 || len(v) < 64 {
		return 0, 0, false
	}
	p := unsafe.Pointer(unsafe.SliceData(v))
	at := func(i int) archsimd.Float64x8 { return archsimd.LoadFloat64x8((*[8]float64)(unsafe.Add(p, i*8))) }
	l, h := at(0), at(0)
	var bad archsimd.Float64x8
	i := 0
	for ; i+8 <= len(v); i += 8 {
		x := at(i)
		l, h = l.Min(x), h.Max(x)
		bad = bad.Add(x.Sub(x))
	}
	var ls, hs, bs [8]float64
	l.Store(&ls)
	h.Store(&hs)
	bad.Store(&bs)
	lo, hi = ls[0], hs[0]
	for k := range 8 {
		if bs[k] != 0 {
			return 0, 0, false
		}
		lo, hi = min(lo, ls[k]), max(hi, hs[k])
	}
	for ; i < len(v); i++ {
		x := v[i]
		if x-x != 0 {
			return 0, 0, false
		}
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi, true
}
