package retrieve

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A fusion gives, entry by entry and as vectors, the bits fuse (or minMaxFlatToOne, without
// lexical scores) gives over the widened dense scores.
func TestFusionMatchesFuse(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	dense := make([]float32, 500)
	for i := range dense {
		dense[i] = float32(rng.NormFloat64())
	}
	wide := make([]float64, len(dense))
	for i, x := range dense {
		wide[i] = float64(x)
	}
	sparseLex := make([]float64, len(dense))
	for range 40 {
		sparseLex[rng.IntN(len(dense))] = 10 * rng.Float64()
	}
	constant := make([]float32, len(dense))
	for i := range constant {
		constant[i] = 0.25
	}
	cases := []struct {
		name  string
		dense []float32
		lex   []float64
		want  []float64
	}{
		{"dense alone", dense, nil, minMaxFlatToOne(nil, wide)},
		{"no lexical match", dense, make([]float64, len(dense)), minMaxFlatToOne(nil, wide)},
		{"fused", dense, sparseLex, fuse(nil, wide, sparseLex, 0.3)},
		{"equal dense scores", constant, sparseLex, nil},
		{"empty", nil, nil, nil},
	}
	cases[3].want = func() []float64 {
		w := make([]float64, len(constant))
		for i := range w {
			w[i] = 0.25
		}
		return fuse(nil, w, sparseLex, 0.3)
	}()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFusion(c.dense, c.lex, 0.3)
			all, all32 := f.all(nil), f.all32(nil)
			assert.Len(t, all, len(c.want))
			for i, w := range c.want {
				assert.Equal(t, math.Float64bits(w), math.Float64bits(f.at(i)), "entry %d", i)
				assert.Equal(t, math.Float64bits(w), math.Float64bits(all[i]), "entry %d", i)
				assert.Equal(t, math.Float32bits(float32(w)), math.Float32bits(all32[i]), "entry %d", i)
			}
		})
	}
	raw := rawFusion(dense)
	for i, x := range dense {
		assert.Equal(t, float64(x), raw.at(i))
	}
}

// minMaxFlatToOne follows HippoRAG 2's min_max_normalize: a vector with no spread (one
// entry, or all tied) becomes all ones.
func TestMinMaxFlatToOne(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []float64
		want []float64
	}{
		{"empty", nil, nil},
		{"one entry", []float64{0.3}, []float64{1}},
		{"constant", []float64{0.7, 0.7, 0.7}, []float64{1, 1, 1}},
		{"constant zero", []float64{0, 0}, []float64{1, 1}},
		{"spread", []float64{2, 4, 3}, []float64{0, 1, 0.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := minMaxFlatToOne(nil, tc.in)
			assert.Len(t, got, len(tc.want))
			assert.InDeltaSlice(t, tc.want, got, 1e-15)
		})
	}
}
