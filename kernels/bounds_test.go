package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Bounds equals folding with the min and max built-ins, bit for bit, on long vectors
// (the vector path) and short ones, with NaNs, infinities, signed zeros and tails;
// Bounds32 equals Bounds of the widened vector; on every kernel path the CPU offers.
func TestBoundsMatchesBuiltins(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	negZero := math.Copysign(0, -1)
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, negZero, math.MaxFloat64, -math.SmallestNonzeroFloat64}
	for trial := range 600 {
		v := make([]float64, 1+rng.IntN(600))
		for i := range v {
			v[i] = rng.NormFloat64()
			if trial%4 == 1 {
				v[i] = math.Abs(v[i]) // all positive: no zero bound
			}
		}
		switch trial % 6 {
		case 2: // a few specials anywhere
			for range 1 + rng.IntN(3) {
				v[rng.IntN(len(v))] = specials[rng.IntN(len(specials))]
			}
		case 3: // zeros of both signs as bounds
			for i := range v {
				v[i] = math.Abs(v[i])
			}
			v[rng.IntN(len(v))] = []float64{0, negZero}[rng.IntN(2)]
			v[rng.IntN(len(v))] = []float64{0, negZero}[rng.IntN(2)]
		case 4: // mostly zeros of one sign (a BM25 vector), one of the other anywhere
			zero, other, sign := 0.0, negZero, 1.0
			if trial%12 == 4 { // zeros as the greatest bound: −0 below, one +0
				zero, other, sign = negZero, 0, -1
			}
			for i := range v {
				v[i] = sign * math.Abs(v[i])
				if rng.IntN(8) != 0 {
					v[i] = zero
				}
			}
			if rng.IntN(4) != 0 {
				v[rng.IntN(len(v))] = other
			}
		case 5: // zeros only
			for i := range v {
				v[i] = []float64{0, negZero}[rng.IntN(2)]
			}
		}
		lo, hi := v[0], v[0]
		for _, x := range v {
			lo, hi = min(lo, x), max(hi, x)
		}
		v32, w := make([]float32, len(v)), make([]float64, len(v))
		for i, x := range v {
			v32[i] = float32(x)
			w[i] = float64(v32[i])
		}
		for _, path := range CPUKernels() {
			glo, ghi := bounds(path, v)
			assert.Equal(t, math.Float64bits(lo), math.Float64bits(glo), "trial %d %v least (len %d)", trial, path, len(v))
			assert.Equal(t, math.Float64bits(hi), math.Float64bits(ghi), "trial %d %v greatest (len %d)", trial, path, len(v))
			// Bounds32 is Bounds of the widened vector.
			wlo, whi := bounds(path, w)
			lo32, hi32 := bounds32(path, v32)
			assert.Equal(t, math.Float64bits(wlo), math.Float64bits(lo32), "trial %d %v float32 least", trial, path)
			assert.Equal(t, math.Float64bits(whi), math.Float64bits(hi32), "trial %d %v float32 greatest", trial, path)
		}
	}
}

func BenchmarkBounds(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	v := make([]float64, 466_000) // the facts of the 120K-passage index
	for i := range v {
		v[i] = rng.Float64()
	}
	b.Run("kernel", func(b *testing.B) {
		for b.Loop() {
			Bounds(v)
		}
	})
	lex := make([]float64, len(v)) // a BM25 vector: mostly zeros, least bound 0
	for i := range lex {
		if rng.IntN(50) == 0 {
			lex[i] = v[i]
		}
	}
	b.Run("kernel-zero-bound", func(b *testing.B) {
		for b.Loop() {
			Bounds(lex)
		}
	})
	v32 := make([]float32, len(v))
	for i, x := range v {
		v32[i] = float32(x)
	}
	b.Run("kernel-float32", func(b *testing.B) {
		for b.Loop() {
			Bounds32(v32)
		}
	})
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			lo, hi := v[0], v[0]
			for _, x := range v {
				if x < lo {
					lo = x
				}
				if x > hi {
					hi = x
				}
			}
			_, _ = lo, hi
		}
	})
}
