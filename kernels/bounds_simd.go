//go:build goexperiment.simd && amd64

package kernels

import (
	"math"
	"simd/archsimd"
	"unsafe"
)

// boundsSIMD returns the least and greatest entry of v eight lanes at a time (one
// AVX-512 register or two AVX2 ones, as path p says), with ok false (and nothing else
// meant) when v is shorter than 64 entries, p is the portable path, or an entry is
// NaN or infinite: x − x is 0 for every finite x, so the sum of the differences stays
// 0 exactly unless one is not. The same pass notes whether v holds a −0 and a +0
// (their bit patterns), which settles the sign of a zero bound as folding with the
// built-ins would, without a second pass over v. Without NaNs the bounds do not
// depend on the order of the comparisons, so both paths return the same bits.
func boundsSIMD(p KernelPath, v []float64) (lo, hi float64, ok bool) {
	if p == KernelsPortable || len(v) < 64 {
		return 0, 0, false
	}
	var ls, hs, bs [8]float64
	var zeros uint16
	i := 0
	if p == KernelsAVX512 {
		i, zeros = bounds64x8(v, &ls, &hs, &bs)
	} else {
		i, zeros = bounds64x4(v, &ls, &hs, &bs)
	}
	return boundsLanes(ls[:], hs[:], bs[:], zeros, v[i:])
}

// bounds32SIMD is boundsSIMD over float32 entries, sixteen lanes at a time; the
// bounds are returned widened (exactly).
func bounds32SIMD(p KernelPath, v []float32) (lo, hi float64, ok bool) {
	if p == KernelsPortable || len(v) < 128 {
		return 0, 0, false
	}
	var ls, hs, bs [16]float32
	var zeros uint16
	i := 0
	if p == KernelsAVX512 {
		i, zeros = bounds32x16(v, &ls, &hs, &bs)
	} else {
		i, zeros = bounds32x8(v, &ls, &hs, &bs)
	}
	return boundsLanes(ls[:], hs[:], bs[:], zeros, v[i:])
}

// Each boundsNxM folds the whole blocks of v into its lanes: the least and greatest
// entry each lane saw (ls, hs), the sum of x − x (bs), and returns the entries it took
// with the zeros it saw as bits (1: a −0, 2: a +0).

func bounds64x8(v []float64, ls, hs, bs *[8]float64) (int, uint16) {
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
	l.Store(ls)
	h.Store(hs)
	bad.Store(bs)
	return i, zeroBits(neg.ToBits() != 0, pos.ToBits() != 0)
}

// bounds64x4 is bounds64x8 in two AVX2 registers a block, lanes 0–3 and 4–7.
func bounds64x4(v []float64, ls, hs, bs *[8]float64) (int, uint16) {
	p := unsafe.Pointer(unsafe.SliceData(v))
	at := func(i int) archsimd.Float64x4 { return archsimd.LoadFloat64x4((*[4]float64)(unsafe.Add(p, i*8))) }
	negZero, posZero := archsimd.BroadcastUint64x4(1<<63), archsimd.BroadcastUint64x4(0)
	l0, h0, l1, h1 := at(0), at(0), at(4), at(4)
	neg, pos := l0.AsUint64x4().Equal(negZero), l0.AsUint64x4().Equal(posZero)
	var bad0, bad1 archsimd.Float64x4
	i := 0
	for ; i+8 <= len(v); i += 8 {
		x0, x1 := at(i), at(i+4)
		l0, h0, l1, h1 = l0.Min(x0), h0.Max(x0), l1.Min(x1), h1.Max(x1)
		bad0, bad1 = bad0.Add(x0.Sub(x0)), bad1.Add(x1.Sub(x1))
		b0, b1 := x0.AsUint64x4(), x1.AsUint64x4()
		neg = neg.Or(b0.Equal(negZero)).Or(b1.Equal(negZero))
		pos = pos.Or(b0.Equal(posZero)).Or(b1.Equal(posZero))
	}
	storeHalves64(ls, l0, l1)
	storeHalves64(hs, h0, h1)
	storeHalves64(bs, bad0, bad1)
	return i, zeroBits(neg.ToBits() != 0, pos.ToBits() != 0)
}

func bounds32x16(v []float32, ls, hs, bs *[16]float32) (int, uint16) {
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
	l.Store(ls)
	h.Store(hs)
	bad.Store(bs)
	return i, zeroBits(neg.ToBits() != 0, pos.ToBits() != 0)
}

// bounds32x8 is bounds32x16 in two AVX2 registers a block, lanes 0–7 and 8–15.
func bounds32x8(v []float32, ls, hs, bs *[16]float32) (int, uint16) {
	p := unsafe.Pointer(unsafe.SliceData(v))
	at := func(i int) archsimd.Float32x8 { return archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(p, i*4))) }
	negZero, posZero := archsimd.BroadcastUint32x8(1<<31), archsimd.BroadcastUint32x8(0)
	l0, h0, l1, h1 := at(0), at(0), at(8), at(8)
	neg, pos := l0.AsUint32x8().Equal(negZero), l0.AsUint32x8().Equal(posZero)
	var bad0, bad1 archsimd.Float32x8
	i := 0
	for ; i+16 <= len(v); i += 16 {
		x0, x1 := at(i), at(i+8)
		l0, h0, l1, h1 = l0.Min(x0), h0.Max(x0), l1.Min(x1), h1.Max(x1)
		bad0, bad1 = bad0.Add(x0.Sub(x0)), bad1.Add(x1.Sub(x1))
		b0, b1 := x0.AsUint32x8(), x1.AsUint32x8()
		neg = neg.Or(b0.Equal(negZero)).Or(b1.Equal(negZero))
		pos = pos.Or(b0.Equal(posZero)).Or(b1.Equal(posZero))
	}
	storeHalves32(ls, l0, l1)
	storeHalves32(hs, h0, h1)
	storeHalves32(bs, bad0, bad1)
	return i, zeroBits(neg.ToBits() != 0, pos.ToBits() != 0)
}

func storeHalves64(dst *[8]float64, a, b archsimd.Float64x4) {
	a.Store((*[4]float64)(dst[:4]))
	b.Store((*[4]float64)(dst[4:]))
}

func storeHalves32(dst *[16]float32, a, b archsimd.Float32x8) {
	a.Store((*[8]float32)(dst[:8]))
	b.Store((*[8]float32)(dst[8:]))
}

func zeroBits(neg, pos bool) uint16 {
	var z uint16
	if neg {
		z |= 1
	}
	if pos {
		z |= 2
	}
	return z
}

// boundsLanes finishes boundsSIMD: it folds the lanes' bounds, checks their sums of
// x − x, takes the entries of tail one at a time and settles a zero bound's sign from
// the zeros the lanes saw (zeroBits) and the tail's.
func boundsLanes[T float32 | float64](ls, hs, bs []T, zeros uint16, tail []T) (lo, hi float64, ok bool) {
	l, h := ls[0], hs[0]
	for k := range ls {
		if bs[k] != 0 {
			return 0, 0, false
		}
		l, h = min(l, ls[k]), max(h, hs[k])
	}
	hasNeg, hasPos := zeros&1 != 0, zeros&2 != 0
	for _, x := range tail {
		if x-x != 0 {
			return 0, 0, false
		}
		l, h = min(l, x), max(h, x)
		hasNeg = hasNeg || x == 0 && math.Signbit(float64(x))
		hasPos = hasPos || x == 0 && !math.Signbit(float64(x))
	}
	lo, hi = settleZeroSigns(float64(l), float64(h), hasNeg, hasPos)
	return lo, hi, true
}
