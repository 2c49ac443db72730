package train_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/models"
	"github.com/graphloom/graphloom/models/train"
)

// lossCase is one loss: its differentiable float64 input (with shape), its fixed
// inputs, and a reference value computed in plain Go.
type lossCase struct {
	name  string
	dims  []int             // shape of the differentiable input x
	fixed []*tensors.Tensor // labels, masks, the second argument
	build func(x *graph.Node, fixed []*graph.Node) *graph.Node
	ref   func(x []float64) float64
}

func lossCases(rng *rand.Rand) []lossCase {
	logSumExp := func(row []float64) float64 {
		m := math.Inf(-1)
		for _, v := range row {
			m = math.Max(m, v)
		}
		s := 0.0
		for _, v := range row {
			s += math.Exp(v - m)
		}
		return m + math.Log(s)
	}
	// MaskedBCE over node logits [6] with a node mask.
	bceY := []float32{1, 0, 1, 1, 0, 0}
	bceW := []float32{1, 1, 0, 1, 1, 0.5}
	// MaskedCE over edges [5, 3] with an edge mask.
	ceY := []int32{0, 2, 1, 1, 0}
	ceW := []float32{1, 0, 1, 1, 1}
	// TokenCE over [2, 3, 4] with −100 labels.
	tokY := []int32{1, -100, 3, -100, 0, 2}
	// The per-row cross-entropy with int64 flat indices, over [2, 3, 4].
	ceI64Y := []int32{1, 0, 3, 2, 0, 2}
	// PairwiseMargin.
	neg := make([]float64, 5)
	for i := range neg {
		neg[i] = rng.NormFloat64()
	}
	pmW := []float32{1, 1, 1, 0, 1}
	// InfoNCE keys [4, 3].
	keys := make([]float64, 12)
	for i := range keys {
		keys[i] = rng.NormFloat64()
	}
	ncW := []float64{1, 0.5, 0, 1} // a fractional weight scales its row; 0 masks it
	return []lossCase{
		{"node-level BCE with mask", []int{6}, []*tensors.Tensor{tensors.FromValue(bceY), tensors.FromValue(bceW)},
			func(x *graph.Node, f []*graph.Node) *graph.Node { return train.MaskedBCE(x, f[0], f[1]) },
			func(x []float64) float64 {
				var s, w float64
				for i, z := range x {
					s += float64(bceW[i]) * train.BCEWithLogits(z, float64(bceY[i]))
					w += float64(bceW[i])
				}
				return s / w
			}},
		{"edge-level CE with mask", []int{5, 3}, []*tensors.Tensor{tensors.FromValue(ceY), tensors.FromValue(ceW)},
			func(x *graph.Node, f []*graph.Node) *graph.Node { return train.MaskedCE(x, f[0], f[1]) },
			func(x []float64) float64 {
				var s, w float64
				for i := range 5 {
					row := x[i*3 : i*3+3]
					s += float64(ceW[i]) * (logSumExp(row) - row[ceY[i]])
					w += float64(ceW[i])
				}
				return s / w
			}},
		{"token CE, −100 ignored", []int{2, 3, 4}, []*tensors.Tensor{tensors.FromFlatDataAndDimensions(tokY, 2, 3)},
			func(x *graph.Node, f []*graph.Node) *graph.Node { return train.TokenCE(x, f[0]) },
			func(x []float64) float64 {
				var s, n float64
				for i, y := range tokY {
					if y == train.IgnoreIndex {
						continue
					}
					row := x[i*4 : i*4+4]
					s += logSumExp(row) - row[y]
					n++
				}
				return s / n
			}},
		{"per-row CE, int64 flat index", []int{2, 3, 4}, []*tensors.Tensor{tensors.FromFlatDataAndDimensions(ceI64Y, 2, 3)},
			func(x *graph.Node, f []*graph.Node) *graph.Node {
				return graph.ReduceAllMean(train.CrossEntropyIndexed(x, f[0], dtypes.Int64))
			},
			func(x []float64) float64 {
				var s float64
				for i, y := range ceI64Y {
					row := x[i*4 : i*4+4]
					s += logSumExp(row) - row[y]
				}
				return s / float64(len(ceI64Y))
			}},
		{"pairwise margin", []int{5}, []*tensors.Tensor{tensors.FromValue(neg), tensors.FromValue(pmW)},
			func(x *graph.Node, f []*graph.Node) *graph.Node { return train.PairwiseMargin(x, f[0], f[1], 0.5) },
			func(x []float64) float64 {
				var s, w float64
				for i := range x {
					s += float64(pmW[i]) * math.Max(0, 0.5-x[i]+neg[i])
					w += float64(pmW[i])
				}
				return s / w
			}},
		{"pairwise logistic", []int{5}, []*tensors.Tensor{tensors.FromValue(neg), tensors.FromValue(pmW)},
			func(x *graph.Node, f []*graph.Node) *graph.Node { return train.PairwiseLogistic(x, f[0], f[1], 3) },
			func(x []float64) float64 {
				var s, w float64
				for i := range x {
					s += float64(pmW[i]) * math.Log1p(math.Exp(-3*(x[i]-neg[i])))
					w += float64(pmW[i])
				}
				return s / w
			}},
		{"InfoNCE", []int{4, 3}, []*tensors.Tensor{tensors.FromFlatDataAndDimensions(keys, 4, 3), tensors.FromValue(ncW)},
			func(x *graph.Node, f []*graph.Node) *graph.Node { return train.InfoNCE(x, f[0], f[1], 0.7) },
			func(x []float64) float64 {
				var s, w float64
				for i := range 4 {
					if ncW[i] == 0 {
						continue
					}
					var row []float64
					for j := range 4 {
						if ncW[j] == 0 {
							continue
						}
						d := 0.0
						for k := range 3 {
							d += x[i*3+k] * keys[j*3+k]
						}
						row = append(row, d/0.7)
					}
					d := 0.0
					for k := range 3 {
						d += x[i*3+k] * keys[i*3+k]
					}
					s += ncW[i] * (logSumExp(row) - d/0.7)
					w += ncW[i]
				}
				return s / w
			}},
	}
}

// TestLossGradients checks every loss's value against a plain-Go reference and its
// gradient against central finite differences of that reference, in float64.
func TestLossGradients(t *testing.T) {
	eng, err := engine.New(engine.Config{Backend: "go"})
	require.NoError(t, err)
	defer eng.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	for i, tc := range lossCases(rng) {
		t.Run(tc.name, func(t *testing.T) {
			n := 1
			for _, d := range tc.dims {
				n *= d
			}
			x := make([]float64, n)
			for j := range x {
				x[j] = rng.NormFloat64() * 1.5
			}
			exe, err := eng.Exec(engine.Key{Name: fmt.Sprintf("loss-grad-%d", i)}, model.NewStore(),
				func(_ *model.Scope, in []*graph.Node) []*graph.Node {
					loss := tc.build(in[0], in[1:])
					return []*graph.Node{loss, graph.Gradient(loss, in[0])[0]}
				})
			require.NoError(t, err)
			outs, err := exe.Call(append([]*tensors.Tensor{tensors.FromFlatDataAndDimensions(x, tc.dims...)}, tc.fixed...)...)
			require.NoError(t, err)
			got := tensors.MustCopyFlatData[float64](outs[0])[0]
			grad := tensors.MustCopyFlatData[float64](outs[1])
			assert.InDelta(t, tc.ref(x), got, 1e-9, "loss value")
			const h = 1e-6
			for j := range x {
				orig := x[j]
				x[j] = orig + h
				up := tc.ref(x)
				x[j] = orig - h
				down := tc.ref(x)
				x[j] = orig
				assert.InDelta(t, (up-down)/(2*h), grad[j], 1e-5, "∂loss/∂x[%d]", j)
			}
		})
	}
}

// TestFrozenParametersUnchanged freezes the R-GCN's input projection and first layer,
// trains, and checks that they kept their exact values while the rest moved.
func TestFrozenParametersUnchanged(t *testing.T) {
	eng, err := engine.New(engine.Config{Backend: "go"})
	require.NoError(t, err)
	defer eng.Close()
	rng := rand.New(rand.NewPCG(9, 9))
	bk := newBucketer(t)
	m := smallModel(t, model.NewStore())
	var frozen, free []*model.Variable
	for _, v := range m.Variables() {
		if p := v.Path(); containsAny(p, "in_proj", "conv0") {
			frozen = append(frozen, v)
		} else {
			free = append(free, v)
		}
	}
	require.NotEmpty(t, frozen)
	require.NotEmpty(t, free)
	models.Freeze(m.Store(), frozen)
	before := func(vs []*model.Variable) [][]float32 {
		var out [][]float32
		for _, v := range vs {
			val, err := v.Value()
			require.NoError(t, err)
			out = append(out, tensors.MustCopyFlatData[float32](val))
		}
		return out
	}
	frozen0, free0 := before(frozen), before(free)
	tr, err := train.New(eng, m, train.DefaultConfig())
	require.NoError(t, err)
	for range 5 {
		_, err := tr.Step(makeExample(t, rng, bk, 12))
		require.NoError(t, err)
	}
	assert.Equal(t, frozen0, before(frozen), "frozen variables are bit-identical after training")
	assert.NotEqual(t, free0, before(free), "trainable variables moved")
	for _, v := range frozen {
		assert.False(t, v.Trainable)
		assert.True(t, models.IsFrozen(m.Store(), v))
	}
}

func containsAny(s string, subs ...string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// TestGlobalNorm holds GlobalNorm to √(Σ g²) summed in float64, over float32 and
// float64 gradients of every rank: a scalar, vectors (one longer than a summed row,
// which is cut into rows of 1024, one that 1024 does not divide), a matrix, a rank-3
// tensor, and a 2048 × 1024 matrix, where a single float32 accumulator would drift
// (a product of the flattened gradient with itself was off by 4e-4 on a million
// entries).
func TestGlobalNorm(t *testing.T) {
	eng, err := engine.New(engine.Config{Backend: "go"})
	require.NoError(t, err)
	defer eng.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	shapes := [][]int{{}, {7}, {3, 5}, {2, 3, 4}, {300, 257}, {3 * 4096}, {4099}, {5000}, {2048, 1024}}
	for _, f64 := range []bool{false, true} {
		var want float64
		var in []*tensors.Tensor
		for _, dims := range shapes {
			n := 1
			for _, d := range dims {
				n *= d
			}
			x := make([]float64, n)
			for j := range x {
				x[j] = rng.NormFloat64() * 3
			}
			if f64 {
				in = append(in, tensors.FromFlatDataAndDimensions(x, dims...))
				for _, v := range x {
					want += v * v
				}
				continue
			}
			x32 := make([]float32, n)
			for j, v := range x {
				x32[j] = float32(v)
				want += float64(x32[j]) * float64(x32[j])
			}
			in = append(in, tensors.FromFlatDataAndDimensions(x32, dims...))
		}
		exe, err := eng.Exec(engine.Key{Name: fmt.Sprintf("global-norm-%v", f64)}, model.NewStore(),
			func(_ *model.Scope, gs []*graph.Node) []*graph.Node { return []*graph.Node{train.GlobalNorm(gs)} })
		require.NoError(t, err)
		outs, err := exe.Call(in...)
		require.NoError(t, err)
		got := tensors.MustCopyFlatData[float32](outs[0])
		require.Len(t, got, 1)
		assert.InEpsilon(t, math.Sqrt(want), float64(got[0]), 1e-6, "float64 gradients: %v", f64)
	}
}
