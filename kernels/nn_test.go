package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/stretchr/testify/assert"

	"github.com/graphloom/graphloom/engine/enginetest"
)

func TestNormAndActivationGradients(t *testing.T) {
	e := enginetest.New(t)
	rng := rand.New(rand.NewPCG(79, 83))
	mask := []float32{1, 1, 0, 1, 1, 1}
	for _, tc := range []struct {
		name  string
		build func(in []*graph.Node) *graph.Node // in: p, [mask], x, gamma, beta
		ref   func(x [][]float64, gamma, beta []float64) [][]float64
	}{
		{"gelu", func(in []*graph.Node) *graph.Node { return GELU(in[2]) },
			func(x [][]float64, _, _ []float64) [][]float64 {
				out := zeros(len(x), width(x))
				for i := range x {
					for j := range x[i] {
						out[i][j] = GELURef(x[i][j])
					}
				}
				return out
			}},
		{"layer norm", func(in []*graph.Node) *graph.Node { return LayerNorm(in[2], in[3], in[4], 1e-5) },
			func(x [][]float64, g, b []float64) [][]float64 { return LayerNormRef(x, g, b, 1e-5) }},
		{"batch norm (training, masked)", func(in []*graph.Node) *graph.Node {
			y, _ := BatchNorm(in[2], in[1], in[3], in[4], BatchNormState{}, true, 0.1, 1e-5)
			return y
		}, func(x [][]float64, g, b []float64) [][]float64 {
			y, _, _ := BatchNormRef(x, boolMask(mask), g, b, 1e-5)
			return y
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := randMat(rng, 6, 5, 1.5)
			x[0][0], x[3][2] = 0, 0 // GELU's gradient at exactly 0 is 0.5
			gamma, beta := randVec(rng, 5, 1), randVec(rng, 5, 1)
			p := projection(rng, mask, 5)
			fixed := []*tensors.Tensor{tensorOf(dtypes.Float64, p), tensorFromF32(mask)}
			checkGradients(t, e, rng, fixed, []gradParam{
				{name: "x", value: x, rows: realRows(mask)}, {name: "gamma", value: gamma}, {name: "beta", value: beta},
			}, func(in []*graph.Node) *graph.Node {
				out := tc.build(in)
				// Keep gamma and beta in the graph for the activation case.
				out = graph.Add(out, graph.InsertAxes(graph.Mul(graph.ZerosLike(in[3]), in[4]), 0))
				return graph.ReduceAllSum(graph.Mul(out, in[0]))
			}, func() float64 {
				out := tc.ref(x, gamma, beta)
				return dotRows(out, p, 0)
			})
		})
	}
}

// TestErf32 compares Erf32 and GELUForward on float32 tensors with float64 erf and
// GELU over a dense grid of [−12, 12], the clamp's edges, ±0, ±Inf and NaN.
func TestErf32(t *testing.T) {
	e := enginetest.New(t)
	const n = 240001
	xs := make([]float32, 0, n+8)
	for i := range n {
		xs = append(xs, float32(-12+24*float64(i)/(n-1)))
	}
	xs = append(xs, 0, float32(math.Copysign(0, -1)), 4, -4, 3.9999998, 1e-30,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()))
	outs := run(t, e, func(in []*graph.Node) []*graph.Node {
		return []*graph.Node{Erf32(in[0]), GELUForward(in[0])}
	}, tensors.FromFlatDataAndDimensions(xs, len(xs)))
	erf, gelu := flat64(outs[0]), flat64(outs[1])
	var worstErf, worstGELU, at float64
	for i, x := range xs[:len(xs)-3] {
		x64 := float64(x)
		if d := math.Abs(erf[i] - math.Erf(x64)); d > worstErf {
			worstErf, at = d, x64
		}
		// float32 GELU also carries float32 rounding of x/2 and of the product (relative 6e-8 each).
		worstGELU = max(worstGELU, math.Abs(gelu[i]-GELURef(x64))/max(1, math.Abs(x64)))
	}
	t.Logf("largest |Erf32 − erf| %.3g (at %.4g), largest |GELU − GELU64|/max(1, |x|) %.3g", worstErf, at, worstGELU)
	assert.Less(t, worstErf, 5e-7, "largest |Erf32 − erf|")
	assert.Less(t, worstGELU, 4e-7, "largest |GELU − GELU64| / max(1, |x|)")
	k := len(xs) - 3
	assert.Equal(t, []float64{1, -1}, erf[k:k+2], "erf(±Inf)")
	assert.Equal(t, math.Inf(1), gelu[k], "GELU(+Inf)")
	assert.True(t, math.IsNaN(erf[k+2]) && math.IsNaN(gelu[k+2]), "NaN stays NaN")

	// GELU's float32 gradient (the hand-written Φ(x) + x·φ(x)).
	grid := []float32{-9, -4.5, -3.3, -1, -0.25, 0, 0.3, 1.7, 3.9, 8}
	outs = run(t, e, func(in []*graph.Node) []*graph.Node {
		return graph.Gradient(graph.ReduceAllSum(GELU(in[0])), in[0])
	}, tensors.FromFlatDataAndDimensions(grid, len(grid)))
	for i, d := range flat64(outs[0]) {
		x := float64(grid[i])
		want := 0.5*(1+math.Erf(x/math.Sqrt2)) + x*math.Exp(-x*x/2)*invSqrt2Pi
		assert.InDelta(t, want, d, 2e-6, "GELU'(%g)", x)
	}
}
