package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/engine/enginetest"
)

func tensorFromInts(v []int32) *tensors.Tensor  { return tensors.FromFlatDataAndDimensions(v, len(v)) }
func tensorFromF32(v []float32) *tensors.Tensor { return tensors.FromFlatDataAndDimensions(v, len(v)) }
func boolMask(v []float32) []bool {
	out := make([]bool, len(v))
	for i, m := range v {
		out[i] = m != 0
	}
	return out
}
func intsOf(v []int32) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

func TestSegmentOps(t *testing.T) {
	e := enginetest.New(t)
	rng := rand.New(rand.NewPCG(43, 47))
	x := randMat(rng, 8, 3, 2)
	// Segment 1 is empty, row 5 is masked, row 7 has an out-of-range id.
	seg := []int32{0, 0, 2, 3, 3, 0, 2, 9}
	mask := []float32{1, 1, 1, 1, 1, 0, 1, 1}
	outs := run(t, e, func(in []*graph.Node) []*graph.Node {
		return []*graph.Node{
			SegmentSum(in[0], in[1], in[2], 4), SegmentMean(in[0], in[1], in[2], 4), SegmentMax(in[0], in[1], in[2], 4),
			SegmentMax(graph.Neg(graph.Abs(in[0])), in[1], nil, 4),
		}
	}, tensorOf(dtypes.Float32, x), tensorFromInts(seg), tensorFromF32(mask))
	bm, si := boolMask(mask), intsOf(seg)
	for _, tc := range []struct {
		name string
		got  []float64
		want [][]float64
	}{
		{"sum", flat64(outs[0]), SegmentSumRef(x, si, bm, 4)},
		{"mean", flat64(outs[1]), SegmentMeanRef(x, si, bm, 4)},
		{"max", flat64(outs[2]), SegmentMaxRef(x, si, bm, 4)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Less(t, relErr(tc.got, flatten(tc.want)), 1e-6)
			assert.Equal(t, []float64{0, 0, 0}, tc.got[3:6], "empty segment gives 0")
		})
	}
	// All-negative values: the max of a non-empty segment stays negative, empty gives 0.
	negMax := flat64(outs[3])
	assert.Less(t, negMax[0], 0.0)
	assert.Equal(t, []float64{0, 0, 0}, negMax[3:6])
}

func TestPoolsMatchReference(t *testing.T) {
	e := enginetest.New(t)
	for _, lt := range testLayouts {
		t.Run(lt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(53, 59))
			spec := Spec{FeatDim: 4, NumRelations: 1, NumNodeTypes: 1}
			graphs := []*Graph{randomGraph(rng, spec, 5, 4), {NumNodes: 0}, randomGraph(rng, spec, 1, 0), randomGraph(rng, spec, 9, 3)}
			for _, g := range graphs { // negative features check that max does not clamp at 0
				for i := range g.X {
					g.X[i] -= 3
				}
			}
			b := testBatch(t, spec, lt.layout, graphs)
			outs := run(t, e, func(in []*graph.Node) []*graph.Node {
				bn, err := NewBatchNodes(spec, lt.layout, in)
				require.NoError(t, err)
				return []*graph.Node{SumPool(bn, bn.X), MeanPool(bn, bn.X), MaxPool(bn, bn.X)}
			}, b.Tensors()...)
			for k, ref := range []func(x [][]float64, seg []int, mask []bool, num int) [][]float64{SegmentSumRef, SegmentMeanRef, SegmentMaxRef} {
				got, err := b.PerGraph(toF32(flat64(outs[k])), 4)
				require.NoError(t, err)
				for gi, g := range graphs {
					all := make([]int, g.NumNodes)
					want := []float64{0, 0, 0, 0} // empty graph
					if g.NumNodes > 0 {
						want = ref(graphX(g, 4), all, nil, 1)[0]
					}
					assert.Less(t, relErr(to64(got[gi*4:gi*4+4]), want), 1e-6, "pool %d graph %d", k, gi)
				}
				// Padding slots are 0.
				slots := flat64(outs[k])
				for s, m := range b.GraphMask {
					if m == 0 {
						assert.Equal(t, []float64{0, 0, 0, 0}, slots[s*4:s*4+4])
					}
				}
			}
		})
	}
}

func TestPoolGradients(t *testing.T) {
	e := enginetest.New(t)
	for _, lt := range testLayouts {
		t.Run(lt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(61, 67))
			spec := Spec{FeatDim: 3, NumRelations: 1, NumNodeTypes: 1}
			graphs := []*Graph{randomGraph(rng, spec, 5, 4), randomGraph(rng, spec, 7, 3), randomGraph(rng, spec, 2, 1)}
			b := testBatch(t, spec, lt.layout, graphs)
			x := batchRows(b)
			p := randMat(rng, b.Bucket.Graphs, 6, 1)
			fixed := append(b.Tensors(), tensorOf(dtypes.Float64, p))
			nb := len(fixed) - 1
			checkGradients(t, e, rng, fixed, []gradParam{{name: "x", value: x, rows: realRows(b.NodeMask)}},
				func(in []*graph.Node) *graph.Node {
					bn, err := NewBatchNodes(spec, lt.layout, in[:nb])
					require.NoError(t, err)
					pooled := graph.Concatenate([]*graph.Node{MeanPool(bn, in[nb+1]), MaxPool(bn, in[nb+1])}, 1)
					return graph.ReduceAllSum(graph.Mul(pooled, in[nb]))
				},
				func() float64 {
					loss := 0.0
					for gi, g := range graphs {
						off, slot := int(b.NodeOffset[gi]), int(b.GraphSlot[gi])
						rows := graphRows(x, off, g.NumNodes)
						seg := make([]int, g.NumNodes)
						mean := SegmentMeanRef(rows, seg, nil, 1)[0]
						mx := SegmentMaxRef(rows, seg, nil, 1)[0]
						for f := range 3 {
							loss += mean[f]*p[slot][f] + mx[f]*p[slot][3+f]
						}
					}
					return loss
				})
		})
	}
}

func TestNormsMatchReference(t *testing.T) {
	e := enginetest.New(t)
	rng := rand.New(rand.NewPCG(71, 73))
	x := randMat(rng, 6, 4, 2)
	gamma, beta := randVec(rng, 4, 1), randVec(rng, 4, 1)
	mask := []float32{1, 1, 0, 1, 1, 0}
	rm, rv := randVec(rng, 4, 1), []float64{1, 2, 3, 4}
	outs := run(t, e, func(in []*graph.Node) []*graph.Node {
		ln := LayerNorm(in[0], in[1], in[2], 1e-5)
		bn, st := BatchNorm(in[0], in[3], in[1], in[2], BatchNormState{Mean: in[4], Var: in[5]}, true, 0.1, 1e-5)
		ev, _ := BatchNorm(in[0], in[3], in[1], in[2], BatchNormState{Mean: in[4], Var: in[5]}, false, 0.1, 1e-5)
		return []*graph.Node{ln, bn, st.Mean, st.Var, ev, GELU(in[0])}
	}, tensorOf(dtypes.Float32, x), tensorOf(dtypes.Float32, gamma), tensorOf(dtypes.Float32, beta), tensorFromF32(mask),
		tensorOf(dtypes.Float32, rm), tensorOf(dtypes.Float32, rv))
	assert.Less(t, relErr(flat64(outs[0]), flatten(LayerNormRef(x, gamma, beta, 1e-5))), 1e-5, "layer norm")
	y, mean, variance := BatchNormRef(x, boolMask(mask), gamma, beta, 1e-5)
	got := flat64(outs[1])
	for i, m := range mask {
		if m != 0 {
			assert.Less(t, relErr(got[i*4:i*4+4], y[i]), 1e-5, "batch norm row %d", i)
		}
	}
	n := 4.0
	for f := range 4 {
		assert.InDelta(t, 0.9*rm[f]+0.1*mean[f], flat64(outs[2])[f], 1e-5, "running mean")
		assert.InDelta(t, 0.9*rv[f]+0.1*variance[f]*n/(n-1), flat64(outs[3])[f], 1e-5, "running var (unbiased)")
	}
	ev := flat64(outs[4])
	for f := range 4 {
		want := (x[0][f]-rm[f])/sqrt(rv[f]+1e-5)*gamma[f] + beta[f]
		assert.InDelta(t, want, ev[f], 1e-5, "eval uses running stats")
	}
	gelu := flat64(outs[5])
	for i, v := range flatten(x) {
		assert.InDelta(t, GELURef(v), gelu[i], 1e-5)
	}
}

// TestBatchNormKeepsRunningStatsOnTinyBatches: a training batch with fewer than two
// real rows (one node, or all padding) leaves the running statistics as they were;
// they used to move towards 0 (no variance), and evaluation then divided by √eps.
func TestBatchNormKeepsRunningStatsOnTinyBatches(t *testing.T) {
	e := enginetest.New(t)
	rng := rand.New(rand.NewPCG(5, 7))
	x := randMat(rng, 4, 3, 2)
	rm, rv := randVec(rng, 3, 1), []float64{1, 2, 3}
	for _, mask := range [][]float32{{0, 1, 0, 0}, {0, 0, 0, 0}} {
		outs := run(t, e, func(in []*graph.Node) []*graph.Node {
			_, st := BatchNorm(in[0], in[1], nil, nil, BatchNormState{Mean: in[2], Var: in[3]}, true, 0.1, 1e-5)
			return []*graph.Node{st.Mean, st.Var}
		}, tensorOf(dtypes.Float32, x), tensorFromF32(mask), tensorOf(dtypes.Float32, rm), tensorOf(dtypes.Float32, rv))
		assert.InDeltaSlice(t, rm, flat64(outs[0]), 1e-6, "running mean, mask %v", mask)
		assert.InDeltaSlice(t, rv, flat64(outs[1]), 1e-6, "running var, mask %v", mask)
	}
}
