package models

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/engine/enginetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFeatureRankerMatchesReference: the GoMLX scores of candidates given transposed
// equal a float64 evaluation of w·x + Σ_h a_h relu(U_h·[x; z] + c_h) from the weights
// Weights returns (row h of U: its feature columns, then its gate columns), and the
// penalty equals ½‖w − w₀‖² + ½‖U‖² + ½‖c‖² + ½‖a‖². Unused feature columns start at 0.
func TestFeatureRankerMatchesReference(t *testing.T) {
	e := enginetest.New(t)
	const nf, ng, nh, np = 6, 3, 4, 9
	rng := rand.New(rand.NewPCG(4, 4))
	init := make([]float32, nf)
	for j := range init {
		init[j] = float32(rng.NormFloat64())
	}
	unused := make([]bool, nf)
	unused[2] = true
	for _, hidden := range []int{0, nh} {
		r, err := NewFeatureRanker(init, unused, ng, hidden, 11)
		require.NoError(t, err)
		xt, zt := make([]float32, nf*np), make([]float32, ng*np)
		for i := range xt {
			xt[i] = rng.Float32()
		}
		for i := range zt {
			zt[i] = rng.Float32()
		}
		w0 := make([]float32, nf)
		for j := range w0 {
			w0[j] = 0.5
		}
		x, err := e.Exec(engine.Key{Name: "ranker-test", Bucket: "h" + string(rune('0'+hidden))}, r.Store(), func(_ *model.Scope, in []*graph.Node) []*graph.Node {
			return []*graph.Node{r.Score(nil, in[0], in[1]), r.Penalty(in[0].Graph(), graph.Const(in[0].Graph(), w0))}
		})
		require.NoError(t, err)
		outs, err := x.Call(tensors.FromFlatDataAndDimensions(xt, nf, np), tensors.FromFlatDataAndDimensions(zt, ng, np))
		require.NoError(t, err)
		got := tensors.MustCopyFlatData[float32](outs[0])
		pen := tensors.MustCopyFlatData[float32](outs[1])[0]

		w, u, c, a, err := r.Weights()
		require.NoError(t, err)
		require.Len(t, u, hidden)
		wantPen := 0.0
		for j := range w {
			assert.InDelta(t, init[j], w[j], 1e-7, "w starts at init")
			wantPen += (w[j] - 0.5) * (w[j] - 0.5) / 2
		}
		for h := range u {
			require.Len(t, u[h], nf+ng)
			assert.Zero(t, u[h][2], "unused feature column")
			wantPen += c[h]*c[h]/2 + a[h]*a[h]/2
			for _, v := range u[h] {
				wantPen += v * v / 2
			}
		}
		assert.InDelta(t, wantPen, float64(pen), 1e-4*wantPen)
		for p := range np {
			want := 0.0
			for j := range nf {
				want += w[j] * float64(xt[j*np+p])
			}
			for h := range u {
				act := c[h]
				for j := range nf {
					act += u[h][j] * float64(xt[j*np+p])
				}
				for g := range ng {
					act += u[h][nf+g] * float64(zt[g*np+p])
				}
				want += a[h] * math.Max(act, 0)
			}
			assert.InDelta(t, want, float64(got[p]), 1e-5, "hidden %d candidate %d", hidden, p)
		}
	}
	_, err := NewFeatureRanker(init, nil, 0, 2, 1)
	assert.ErrorContains(t, err, "hidden units need gates")
}
