//go:build goexperiment.simd && amd64

package kernels

import (
	"math"
	"simd/archsimd"
	"unsafe"
)

// boundsSIMD returns the least and greatest entry of v eight lanes at a time, with ok
// false (and nothing else meant) when v is shorter than 64 entries, the CPU has no
// AVX-512, or an entry is NaN or infinite: x − x is 0 for every finite x, so the sum
// of the differences stays 0 exactly unless one is not. The same pass notes whether v
// holds a −0 and a +0 (their bit patterns), which settles the sign of a zero bound as
// folding with the built-ins would, without a second pass over v.
func boundsSIMD(v []float64) (lo, hi float64, ok bool) {
	if !hasAVX512 || len(v) < 64 {
		return 0, 0, false
	}
	p := unsafe.Pointer(unsafe.SliceData(v))
	at := func(i int) archsimd.Float64x8 { return archsimd.LoadFloat64x8((*[8]float64)(unsafe.Add(p, i*8))) }
	negZero, posZero := archsimd.BroadcastUint64x8(1<<63), archsimd.BroadcastUint64x8(0)
	l, h := at(0), at(0)
	neg, pos := l.AsUint64x8().Equal(negZero), l.AsUint64x8().Equal(posZero)
	var bad archsimd.Float64x8
	i := 0
	for ; i+8 <= len(v); i += 8 {
		x := at(i)
		l, h = l.Min(x), h.Max(x)
		bad = bad.Add(x.Sub(x))
		bits := x.AsUint64x8()
		neg, pos = neg.Or(bits.Equal(negZero)), pos.Or(bits.Equal(posZero))
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
	hasNeg, hasPos := neg.ToBits() != 0, pos.ToBits() != 0
	for ; i < len(v); i++ {
		x := v[i]
		if x-x != 0 {
			return 0, 0, false
		}
		lo, hi = min(lo, x), max(hi, x)
		hasNeg = hasNeg || x == 0 && math.Signbit(x)
		hasPos = hasPos || x == 0 && !math.Signbit(x)
	}
	lo, hi = settleZeroSigns(lo, hi, hasNeg, hasPos)
	return lo, hi, true
}

// bounds32SIMD is boundsSIMD over float32 entries, sixteen lanes at a time; the
// bounds are returned widened (exactly).
func bounds32SIMD(v []float32) (lo, hi float64, ok bool) {
	if !hasAVX512 || len(v) < 128 {
		return 0, 0, false
	}
	p := unsafe.Pointer(unsafe.SliceData(v))
	at := func(i int) archsimd.Float32x16 {
		return archsimd.LoadFloat32x16((*[16]float32)(unsafe.Add(p, i*4)))
	}
	negZero, posZero := archsimd.BroadcastUint32x16(1<<31), archsimd.BroadcastUint32x16(0)
	l, h := at(0), at(0)
	neg, pos := l.AsUint32x16().Equal(negZero), l.AsUint32x16().Equal(posZero)
	var bad archsimd.Float32x16
	i := 0
	for ; i+16 <= len(v); i += 16 {
		x := at(i)
		l, h = l.Min(x), h.Max(x)
		bad = bad.Add(x.Sub(x))
		bits := x.AsUint32x16()
		neg, pos = neg.Or(bits.Equal(negZero)), pos.Or(bits.Equal(posZero))
	}
	var ls, hs, bs [16]float32
	l.Store(&ls)
	h.Store(&hs)
	bad.Store(&bs)
	l32, h32 := ls[0], hs[0]
	for k := range 16 {
		if bs[k] != 0 {
			return 0, 0, false
		}
		l32, h32 = min(l32, ls[k]), max(h32, hs[k])
	}
	hasNeg, hasPos := neg.ToBits() != 0, pos.ToBits() != 0
	for ; i < len(v); i++ {
		x := v[i]
		if x-x != 0 {
			return 0, 0, false
		}
		l32, h32 = min(l32, x), max(h32, x)
		hasNeg = hasNeg || x == 0 && math.Signbit(float64(x))
		hasPos = hasPos || x == 0 && !math.Signbit(float64(x))
	}
	lo, hi = settleZeroSigns(float64(l32), float64(h32), hasNeg, hasPos)
	return lo, hi, true
}
