package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/graphloom/graphloom/engine"
	"github.com/stretchr/testify/require"
)

var execCounter atomic.Int64

// run compiles fn once and runs it on the inputs.
func run(t *testing.T, e *engine.Engine, fn func(in []*graph.Node) []*graph.Node, inputs ...*tensors.Tensor) []*tensors.Tensor {
	t.Helper()
	key := engine.Key{Name: fmt.Sprintf("%s#%d", t.Name(), execCounter.Add(1))}
	x, err := e.Exec(key, model.NewStore(), func(_ *model.Scope, in []*graph.Node) []*graph.Node { return fn(in) })
	require.NoError(t, err)
	outs, err := x.Call(inputs...)
	require.NoError(t, err)
	return outs
}

// randomGraph returns a graph with n nodes where roughly a quarter of the nodes are
// isolated and another quarter only send messages (no incoming edges); it includes a
// self-loop and a parallel edge when possible.
func randomGraph(rng *rand.Rand, spec Spec, n, m int) *Graph {
	g := &Graph{NumNodes: n, NodeType: make([]int32, n), X: make([]float32, n*spec.FeatDim)}
	for i := range g.NodeType {
		g.NodeType[i] = int32(rng.IntN(spec.NumNodeTypes))
	}
	for i := range g.X {
		g.X[i] = float32(rng.NormFloat64())
	}
	isolated := n / 4
	sendOnly := n / 4
	active := n - isolated
	if active < 1 {
		return g
	}
	recv := active - sendOnly // nodes [isolated+sendOnly, n) may receive
	if recv < 1 {
		recv = 1
	}
	addEdge := func(s, d int) {
		g.Src = append(g.Src, int32(s))
		g.Dst = append(g.Dst, int32(d))
		g.EdgeType = append(g.EdgeType, int32(rng.IntN(spec.NumRelations)))
		for range spec.EdgeDim {
			g.EdgeAttr = append(g.EdgeAttr, float32(rng.NormFloat64()))
		}
	}
	for range m {
		s := isolated + rng.IntN(active)
		d := n - recv + rng.IntN(recv)
		addEdge(s, d)
	}
	if m > 0 {
		addEdge(int(g.Src[0]), int(g.Dst[0])) // parallel edge (same endpoints, maybe other type)
		d := n - 1
		addEdge(d, d) // self-loop
	}
	return g
}

// randMat returns a rows×cols matrix of N(0, scale²) entries.
func randMat(rng *rand.Rand, rows, cols int, scale float64) [][]float64 {
	m := zeros(rows, cols)
	for i := range m {
		for j := range m[i] {
			m[i][j] = rng.NormFloat64() * scale
		}
	}
	return m
}

func randVec(rng *rand.Rand, n int, scale float64) []float64 { return randMat(rng, 1, n, scale)[0] }

func rand3(rng *rand.Rand, a, b, c int, scale float64) [][][]float64 {
	out := make([][][]float64, a)
	for i := range out {
		out[i] = randMat(rng, b, c, scale)
	}
	return out
}

// tensorOf converts a vector, matrix or rank-3 array to a tensor of dtype.
func tensorOf(dtype dtypes.DType, v any) *tensors.Tensor {
	var flat []float64
	var dims []int
	switch x := v.(type) {
	case []float64:
		flat, dims = x, []int{len(x)}
	case [][]float64:
		dims = []int{len(x), width(x)}
		for _, r := range x {
			flat = append(flat, r...)
		}
	case [][][]float64:
		dims = []int{len(x), len(x[0]), len(x[0][0])}
		for _, m := range x {
			for _, r := range m {
				flat = append(flat, r...)
			}
		}
	default:
		panic(fmt.Sprintf("tensorOf: %T", v))
	}
	if dtype == dtypes.Float64 {
		return tensors.FromFlatDataAndDimensions(flat, dims...)
	}
	f32 := make([]float32, len(flat))
	for i, v := range flat {
		f32[i] = float32(v)
	}
	return tensors.FromFlatDataAndDimensions(f32, dims...)
}

// flat64 copies a float32 or float64 tensor to []float64.
func flat64(t *tensors.Tensor) []float64 {
	if t.DType() == dtypes.Float64 {
		return tensors.MustCopyFlatData[float64](t)
	}
	f := tensors.MustCopyFlatData[float32](t)
	out := make([]float64, len(f))
	for i, v := range f {
		out[i] = float64(v)
	}
	return out
}

// graphX returns the features of g as a float64 matrix.
func graphX(g *Graph, featDim int) [][]float64 {
	x := zeros(g.NumNodes, featDim)
	for i := range g.NumNodes {
		for f := range featDim {
			x[i][f] = float64(g.X[i*featDim+f])
		}
	}
	return x
}

// batchRows returns the batch's X as a float64 matrix.
func batchRows(b *Batch) [][]float64 {
	x := zeros(b.Bucket.Nodes, b.Spec.FeatDim)
	for i := range x {
		for f := range x[i] {
			x[i][f] = float64(b.X[i*b.Spec.FeatDim+f])
		}
	}
	return x
}

// relErr is max|got−want| / max(max|want|, 1e-6).
func relErr(got, want []float64) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	num, den := 0.0, 1e-6
	for i := range got {
		num = math.Max(num, math.Abs(got[i]-want[i]))
		den = math.Max(den, math.Abs(want[i]))
	}
	return num / den
}

// flatten concatenates matrix rows.
func flatten(m [][]float64) []float64 {
	var out []float64
	for _, r := range m {
		out = append(out, r...)
	}
	return out
}

// perGraphRows checks each graph's rows of a [N][w] batch output against want(g).
func perGraphRows(t *testing.T, b *Batch, got []float64, w int, want func(gi int) [][]float64, tol float64) {
	t.Helper()
	for gi := range b.NumGraphs {
		off, n := int(b.NodeOffset[gi]), int(b.GraphSize[gi])
		rows := got[off*w : (off+n)*w]
		ref := flatten(want(gi))
		require.Lenf(t, rows, len(ref), "graph %d", gi)
		require.Lessf(t, relErr(rows, ref), tol, "graph %d: got %v\nwant %v", gi, rows, ref)
	}
}

func sqrt(v float64) float64 { return math.Sqrt(v) }
