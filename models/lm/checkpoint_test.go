package lm_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/engine/enginetest"
)

// TestHiddenCheckpointedGradients checks gradient checkpointing: the gradient of a
// loss over the hidden states with respect to the input embeddings equals the one
// through the stored activations, and the checkpointed gradient graph really
// recomputes the layers (it holds more matrix products: one forward per layer again).
func TestHiddenCheckpointedGradients(t *testing.T) {
	eng := enginetest.New(t)
	for _, v := range variants()[:3] {
		t.Run(v.name, func(t *testing.T) {
			m, _ := loadVariant(t, v.spec)
			const b, n = 2, 8
			h := m.Config().Hidden
			rng := rand.New(rand.NewPCG(5, v.spec.Seed))
			emb, w := make([]float32, b*n*h), make([]float32, b*n*h)
			for i := range emb {
				emb[i], w[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
			}
			mask := []int32{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0} // second row padded
			run := func(name string, hidden func(e, k *graph.Node) *graph.Node) ([]float32, int) {
				dots := 0
				exe, err := eng.Exec(engine.Key{Name: name}, m.Store(), func(_ *model.Scope, in []*graph.Node) []*graph.Node {
					loss := graph.ReduceAllSum(graph.Mul(hidden(in[0], in[1]), in[2]))
					grad := graph.Gradient(loss, in[0])[0]
					for _, nd := range in[0].Graph().Nodes() {
						if nd.Type() == graph.NodeTypeDotGeneral {
							dots++
						}
					}
					return []*graph.Node{grad}
				})
				require.NoError(t, err)
				outs, err := exe.Call(tensors.FromFlatDataAndDimensions(emb, b, n, h),
					tensors.FromFlatDataAndDimensions(mask, b, n), tensors.FromFlatDataAndDimensions(w, b, n, h))
				require.NoError(t, err)
				return tensors.MustCopyFlatData[float32](outs[0]), dots
			}
			want, plainDots := run("grad-plain-"+v.name, m.Hidden)
			got, ckptDots := run("grad-ckpt-"+v.name, m.HiddenCheckpointed)
			require.Len(t, got, len(want))
			var scale float64
			for _, x := range want {
				scale = math.Max(scale, math.Abs(float64(x)))
			}
			require.Greater(t, scale, 0.0)
			for i := range want {
				require.InDelta(t, want[i], got[i], 1e-5*scale, "∂loss/∂embeds[%d]", i)
			}
			// Each layer's projections and attention products are built again in the
			// backward pass: at least 4 more products per layer (q, k, v, o, gate, up, down, 2 attention).
			assert.GreaterOrEqual(t, ckptDots-plainDots, 4*m.Config().Layers, "checkpointed graph recomputes the layers (%d vs %d products)", ckptDots, plainDots)
		})
	}
}
