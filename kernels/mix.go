package kernels

// UnitMix is the min-max fusion of two score vectors that the retrievers link and
// seed with: entry i is λ·unit_b(b[i]) + (1−λ)·unit_a(a[i]), where unit(x) =
// (x−lo)/(hi−lo) over a vector's bounds (1 when they are equal), a's scores float32
// widened exactly, b's float64; without b the entry is unit_a(a[i]) alone. The
// products are rounded before the sum (explicit conversions, so no build fuses them),
// and the vector paths give the scalar bits.
type UnitMix struct {
	Lambda   float64 // weight of b
	ALo, AHi float64 // a's bounds (Bounds32)
	BLo, BHi float64 // b's bounds (Bounds); unused without b
}

// Unit is (x−lo)/(hi−lo), or 1 when hi = lo.
func Unit(x, lo, hi float64) float64 {
	if hi == lo {
		return 1
	}
	return (x - lo) / (hi - lo)
}

// Mix is λ·l + (1−λ)·d with each product rounded.
func Mix(lambda, l, d float64) float64 { return float64(lambda*l) + float64((1-lambda)*d) }

// At is entry a, b of the fusion (withB false: a's unit score alone).
func (m UnitMix) At(a float32, b float64, withB bool) float64 {
	d := Unit(float64(a), m.ALo, m.AHi)
	if !withB {
		return d
	}
	return Mix(m.Lambda, Unit(b, m.BLo, m.BHi), d)
}

// Into64 writes every entry into out (len(a)); b is nil or as long as a.
func (m UnitMix) Into64(out []float64, a []float32, b []float64) { m.into64(kernelPath, out, a, b) }

// Into32 writes every entry rounded to float32 into out.
func (m UnitMix) Into32(out []float32, a []float32, b []float64) { m.into32(kernelPath, out, a, b) }

// into64 is Into64 on kernel path p.
func (m UnitMix) into64(p KernelPath, out []float64, a []float32, b []float64) {
	n := m.mixSIMD(p, out, nil, a, b)
	for i := n; i < len(a); i++ {
		out[i] = m.at(a, b, i)
	}
}

// into32 is Into32 on kernel path p.
func (m UnitMix) into32(p KernelPath, out []float32, a []float32, b []float64) {
	n := m.mixSIMD(p, nil, out, a, b)
	for i := n; i < len(a); i++ {
		out[i] = float32(m.at(a, b, i))
	}
}

func (m UnitMix) at(a []float32, b []float64, i int) float64 {
	if b == nil {
		return m.At(a[i], 0, false)
	}
	return m.At(a[i], b[i], true)
}
