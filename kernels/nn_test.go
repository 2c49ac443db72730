package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"

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
