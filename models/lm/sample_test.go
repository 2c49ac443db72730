package lm

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSampleTopP compares sampled frequencies with the probabilities worked out by
// hand: temperature divides the log-probabilities, top-p keeps the smallest nucleus.
func TestSampleTopP(t *testing.T) {
	logits := []float32{float32(math.Log(0.5)), float32(math.Log(0.3)), float32(math.Log(0.2))}
	cases := []struct {
		name        string
		temperature float64
		topP        float64
		want        []float64
	}{
		{"plain", 1, 1, []float64{0.5, 0.3, 0.2}},
		{"nucleus 0.7 keeps two", 1, 0.7, []float64{0.5 / 0.8, 0.3 / 0.8, 0}},
		{"nucleus 0.4 keeps the top", 1, 0.4, []float64{1, 0, 0}},
		{"temperature 0.5 squares", 0.5, 0, []float64{0.25 / 0.38, 0.09 / 0.38, 0.04 / 0.38}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			const n = 40000
			counts := make([]float64, 3)
			for range n {
				counts[sampleTopP(logits, c.temperature, c.topP, rng)]++
			}
			for i := range counts {
				assert.InDelta(t, c.want[i], counts[i]/n, 0.01, "token %d", i)
			}
		})
	}
}
