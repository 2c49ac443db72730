package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The vector paths of UnitMix give At's bits entry by entry, with and without b,
// with equal bounds on either side, on lengths around the blocks of eight and with
// NaNs and infinities among the scores, on every kernel path the CPU offers; At is
// the formula it documents.
func TestUnitMixMatchesScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for trial := range 200 {
		n := rng.IntN(70)
		a, b := make([]float32, n), make([]float64, n)
		for i := range a {
			a[i], b[i] = float32(rng.NormFloat64()), 10*rng.Float64()
			if rng.IntN(30) == 0 {
				a[i] = []float32{float32(math.NaN()), float32(math.Inf(1)), 0}[rng.IntN(3)]
			}
		}
		m := UnitMix{Lambda: rng.Float64(), ALo: -2, AHi: 3, BLo: 0, BHi: 9}
		switch trial % 4 {
		case 1:
			m.AHi = m.ALo
		case 2:
			m.BHi = m.BLo
		}
		var bs []float64
		if trial%3 != 0 {
			bs = b
		}
		for _, path := range CPUKernels() {
			out64, out32 := make([]float64, n), make([]float32, n)
			m.into64(path, out64, a, bs)
			m.into32(path, out32, a, bs)
			for i := range a {
				want := Unit(float64(a[i]), m.ALo, m.AHi)
				if bs != nil {
					l := Unit(b[i], m.BLo, m.BHi)
					want = float64(m.Lambda*l) + float64((1-m.Lambda)*want)
				}
				assert.Equal(t, math.Float64bits(want), math.Float64bits(m.At(a[i], b[i], bs != nil)), "trial %d entry %d", trial, i)
				assert.Equal(t, math.Float64bits(want), math.Float64bits(out64[i]), "trial %d %v entry %d", trial, path, i)
				assert.Equal(t, math.Float32bits(float32(want)), math.Float32bits(out32[i]), "trial %d %v entry %d", trial, path, i)
			}
		}
	}
	assert.Equal(t, 1.0, Unit(5, 2, 2), "equal bounds")
}
