package lm

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSampleTopP compares sampled frequencies with the probabilities worked out by
// hand: temperature divides the log-probabilities, top-k keeps the k most probable,
// top-p then keeps the smallest nucleus of those.
func TestSampleTopP(t *testing.T) {
	logits := []float32{float32(math.Log(0.5)), float32(math.Log(0.3)), float32(math.Log(0.2))}
	cases := []struct {
		name        string
		temperature float64
		topP        float64
		topK        int
		want        []float64
	}{
		{"plain", 1, 1, 0, []float64{0.5, 0.3, 0.2}},
		{"nucleus 0.7 keeps two", 1, 0.7, 0, []float64{0.5 / 0.8, 0.3 / 0.8, 0}},
		{"nucleus 0.4 keeps the top", 1, 0.4, 0, []float64{1, 0, 0}},
		{"temperature 0.5 squares", 0.5, 0, 0, []float64{0.25 / 0.38, 0.09 / 0.38, 0.04 / 0.38}},
		{"top-k 2", 1, 1, 2, []float64{0.5 / 0.8, 0.3 / 0.8, 0}},
		{"top-k 2, then nucleus 0.6 of those keeps the top", 1, 0.6, 2, []float64{1, 0, 0}},
		{"top-k beyond the vocabulary", 1, 1, 10, []float64{0.5, 0.3, 0.2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			const n = 40000
			counts := make([]float64, 3)
			for range n {
				counts[sampleTopP(logits, c.temperature, c.topP, c.topK, rng)]++
			}
			for i := range counts {
				assert.InDelta(t, c.want[i], counts[i]/n, 0.01, "token %d", i)
			}
		})
	}
}

// TestPenalize: transformers' repetition penalty divides a seen token's positive
// logit and multiplies its negative one, once per token however often it was seen;
// unseen tokens and ids outside the vocabulary change nothing.
func TestPenalize(t *testing.T) {
	logits := []float32{2, -1, 0.5, 3}
	penalize(logits, 1.25, []int32{0, 1, 0, 9}, []int32{1, 2})
	assert.Equal(t, []float32{1.6, -1.25, 0.4, 3}, logits)
	assert.Equal(t, int32(3), argmax(logits))
}
