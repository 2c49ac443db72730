package train

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFitPlattRecoversParameters draws labels from σ(a·z + b) for known a, b and
// checks that the fit finds them (a temperature T is a = 1/T, b = 0).
func TestFitPlattRecoversParameters(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b float64
	}{
		{"overconfident scorer", 0.5, -0.7},
		{"temperature 2.5", 0.4, 0},
		{"underconfident scorer", 2, 0.3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(3))
			const n = 20000
			logits, labels := make([]float32, n), make([]float32, n)
			for i := range n {
				z := rng.NormFloat64() * 2
				logits[i] = float32(z)
				if rng.Float64() < 1/(1+math.Exp(-(tc.a*z+tc.b))) {
					labels[i] = 1
				}
			}
			p, err := FitPlatt(logits, labels)
			require.NoError(t, err)
			assert.InDelta(t, tc.a, p.A, 0.06)
			assert.InDelta(t, tc.b, p.B, 0.06)
		})
	}
}

func TestFitPlattRejects(t *testing.T) {
	_, err := FitPlatt([]float32{1, 2}, []float32{1, 1})
	assert.ErrorContains(t, err, "both classes")
	_, err = FitPlatt([]float32{1}, []float32{1, 0})
	assert.Error(t, err)
}

func TestECE(t *testing.T) {
	for _, tc := range []struct {
		name   string
		probs  []float64
		labels []float32
		want   float64
	}{
		// bin 0: |0.05 − 0| = 0.05; bin 1: |0.27 − 1| = 0.73; bin 9 (1.0 included): |1.95 − 2| = 0.05; ÷ 5.
		{"three bins", []float64{0.05, 0.15, 0.12, 0.95, 1.0}, []float32{0, 1, 0, 1, 1}, (0.05 + 0.73 + 0.05) / 5},
		{"calibrated", []float64{0.25, 0.25, 0.25, 0.25}, []float32{0, 1, 0, 0}, 0},
		{"confidently wrong", []float64{0.99, 0.01}, []float32{0, 1}, 0.99},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, ECE(tc.probs, tc.labels, 10), 1e-12)
		})
	}
	assert.True(t, math.IsNaN(ECE(nil, nil, 10)))
}
