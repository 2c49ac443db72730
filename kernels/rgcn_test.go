package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/engine/enginetest"
)

var testLayouts = []struct {
	name   string
	layout Layout
}{
	{"sequential", Layout{}},
	{"tiled", Layout{TileSize: 16, GraphsPerTile: 3}},
}

// testBatch packs graphs with a generous bucket for the layout.
func testBatch(t *testing.T, spec Spec, layout Layout, graphs []*Graph) *Batch {
	t.Helper()
	bucket := Bucket{Nodes: 160, Edges: 256, Graphs: 16}
	if layout.Tiled() {
		bucket.Graphs = 0
	}
	bk, err := NewBucketer(BucketerConfig{Spec: spec, Layout: layout, Buckets: []Bucket{bucket}})
	require.NoError(t, err)
	b, err := bk.Batch(graphs)
	require.NoError(t, err)
	return b
}

// rgcnCase is a weight configuration of RGCNConv.
type rgcnCase struct {
	name        string
	bases       int
	root, bias  bool
	in, out, nr int
}

func (c rgcnCase) weights(rng *rand.Rand) RGCNRef {
	w := RGCNRef{}
	if c.bases > 0 {
		w.Basis = rand3(rng, c.bases, c.in, c.out, 0.5)
		w.Comp = randMat(rng, c.nr, c.bases, 1)
	} else {
		w.Rel = rand3(rng, c.nr, c.in, c.out, 0.5)
	}
	if c.root {
		w.Root = randMat(rng, c.in, c.out, 0.5)
	}
	if c.bias {
		w.Bias = randVec(rng, c.out, 1)
	}
	return w
}

// params lists the non-nil weights (as gradParams) in a fixed order.
func (c rgcnCase) params(w RGCNRef) []gradParam {
	var p []gradParam
	if w.Rel != nil {
		p = append(p, gradParam{name: "Rel", value: w.Rel})
	} else {
		p = append(p, gradParam{name: "Basis", value: w.Basis}, gradParam{name: "Comp", value: w.Comp})
	}
	if w.Root != nil {
		p = append(p, gradParam{name: "Root", value: w.Root})
	}
	if w.Bias != nil {
		p = append(p, gradParam{name: "Bias", value: w.Bias})
	}
	return p
}

// nodes maps weight input nodes (in params order) to RGCNWeights.
func (c rgcnCase) nodes(in []*graph.Node) RGCNWeights {
	var w RGCNWeights
	k := 0
	if c.bases > 0 {
		w.Basis, w.Comp = in[0], in[1]
		k = 2
	} else {
		w.Rel = in[0]
		k = 1
	}
	if c.root {
		w.Root = in[k]
		k++
	}
	if c.bias {
		w.Bias = in[k]
	}
	return w
}

var rgcnCases = []rgcnCase{
	{name: "relations+root+bias", root: true, bias: true, in: 5, out: 4, nr: 3},
	{name: "bases", bases: 2, root: true, bias: true, in: 5, out: 4, nr: 3},
	{name: "no root no bias", in: 5, out: 3, nr: 3},
}

func rgcnGraphs(rng *rand.Rand, spec Spec) []*Graph {
	return []*Graph{
		randomGraph(rng, spec, 9, 14), randomGraph(rng, spec, 4, 3), randomGraph(rng, spec, 1, 0),
		randomGraph(rng, spec, 12, 20), {NumNodes: 0}, randomGraph(rng, spec, 6, 0), randomGraph(rng, spec, 7, 9),
	}
}

func TestRGCNConvMatchesReference(t *testing.T) {
	e := enginetest.New(t)
	for _, lt := range testLayouts {
		for _, c := range rgcnCases {
			t.Run(lt.name+"/"+c.name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(7, 11))
				spec := Spec{FeatDim: c.in, NumRelations: c.nr, NumNodeTypes: 2}
				graphs := rgcnGraphs(rng, spec)
				b := testBatch(t, spec, lt.layout, graphs)
				w := c.weights(rng)
				inputs := b.Tensors()
				nb := len(inputs)
				for _, p := range c.params(w) {
					inputs = append(inputs, tensorOf(dtypes.Float32, p.value))
				}
				outs := run(t, e, func(in []*graph.Node) []*graph.Node {
					bn, err := NewBatchNodes(spec, lt.layout, in[:nb])
					require.NoError(t, err)
					return []*graph.Node{RGCNConv(bn, bn.X, c.nodes(in[nb:]))}
				}, inputs...)
				perGraphRows(t, b, flat64(outs[0]), c.out, func(gi int) [][]float64 {
					return RGCNConvRef(graphs[gi], graphX(graphs[gi], c.in), w, c.nr)
				}, 1e-5)
			})
		}
	}
}

func TestRGCNConvGradients(t *testing.T) {
	e := enginetest.New(t)
	for _, lt := range testLayouts {
		for _, c := range rgcnCases[:2] {
			t.Run(lt.name+"/"+c.name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(13, 17))
				spec := Spec{FeatDim: c.in, NumRelations: c.nr, NumNodeTypes: 2}
				graphs := rgcnGraphs(rng, spec)[:4]
				checkRGCNGradients(t, e, rng, c, spec, lt.layout, graphs)
			})
		}
	}
}

// TestPaddingInvariance runs the same graphs through a tight bucket and a bucket with
// much more padding, and one graph alone: per-graph outputs must be identical.
func TestPaddingInvariance(t *testing.T) {
	e := enginetest.New(t)
	for _, lt := range testLayouts {
		t.Run(lt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 5))
			spec := Spec{FeatDim: 4, EdgeDim: 3, NumRelations: 2, NumNodeTypes: 1}
			graphs := []*Graph{randomGraph(rng, spec, 8, 12), randomGraph(rng, spec, 5, 6), randomGraph(rng, spec, 11, 15)}
			c := rgcnCase{root: true, bias: true, in: 4, out: 3, nr: 2}
			w := c.weights(rng)
			tr := TransformerRef{Query: randMat(rng, 4, 4, 0.5), Key: randMat(rng, 4, 4, 0.5), Value: randMat(rng, 4, 4, 0.5),
				Edge: randMat(rng, 3, 4, 0.5), Skip: randMat(rng, 4, 4, 0.5), SkipBias: randVec(rng, 4, 1)}
			forward := func(bucket Bucket, gs []*Graph) (*Batch, []float64, []float64, []float64) {
				if lt.layout.Tiled() {
					bucket.Graphs = 0
				}
				bk, err := NewBucketer(BucketerConfig{Spec: spec, Layout: lt.layout, Buckets: []Bucket{bucket}})
				require.NoError(t, err)
				b, err := bk.Batch(gs)
				require.NoError(t, err)
				inputs := b.Tensors()
				nb := len(inputs)
				for _, v := range []any{w.Rel, w.Root, w.Bias, tr.Query, tr.Key, tr.Value, tr.Edge, tr.Skip, tr.SkipBias} {
					inputs = append(inputs, tensorOf(dtypes.Float32, v))
				}
				outs := run(t, e, func(in []*graph.Node) []*graph.Node {
					bn, err := NewBatchNodes(spec, lt.layout, in[:nb])
					require.NoError(t, err)
					ws := in[nb:]
					h := RGCNConv(bn, bn.X, RGCNWeights{Rel: ws[0], Root: ws[1], Bias: ws[2]})
					gt := TransformerConv(bn, bn.X, TransformerWeights{Query: ws[3], Key: ws[4], Value: ws[5], Edge: ws[6],
						Skip: ws[7], SkipBias: ws[8]}, TransformerOptions{Heads: 2, Concat: true})
					return []*graph.Node{h, gt, graph.Concatenate([]*graph.Node{MeanPool(bn, h), MaxPool(bn, h)}, 1)}
				}, inputs...)
				return b, flat64(outs[0]), flat64(outs[1]), flat64(outs[2])
			}
			tight, h1, gt1, p1 := forward(Bucket{Nodes: 48, Edges: 48, Graphs: 3}, graphs)
			loose, h2, gt2, p2 := forward(Bucket{Nodes: 160, Edges: 200, Graphs: 20}, graphs)
			for gi := range graphs {
				for _, pair := range []struct {
					a, b  []float64
					width int
				}{{h1, h2, 3}, {gt1, gt2, 4}} {
					a, err := tight.NodeRows(toF32(pair.a), pair.width, gi)
					require.NoError(t, err)
					bb, err := loose.NodeRows(toF32(pair.b), pair.width, gi)
					require.NoError(t, err)
					require.Less(t, relErr(to64(a), to64(bb)), 1e-6, "graph %d", gi)
				}
				pa, err := tight.PerGraph(toF32(p1), 6)
				require.NoError(t, err)
				pb, err := loose.PerGraph(toF32(p2), 6)
				require.NoError(t, err)
				require.Less(t, relErr(to64(pa[gi*6:gi*6+6]), to64(pb[gi*6:gi*6+6])), 1e-6)
			}
			// One graph alone gives the same rows as inside the batch.
			alone, h3, _, _ := forward(Bucket{Nodes: 16, Edges: 32, Graphs: 1}, graphs[2:])
			a, err := alone.NodeRows(toF32(h3), 3, 0)
			require.NoError(t, err)
			bb, err := tight.NodeRows(toF32(h1), 3, 2)
			require.NoError(t, err)
			require.Less(t, relErr(to64(a), to64(bb)), 1e-6)
		})
	}
}

func toF32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func to64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// weighted gives every edge of the graphs a random positive weight (some large, as
// CAGE's β-scaled anchor edges).
func weighted(rng *rand.Rand, graphs []*Graph) []*Graph {
	for _, g := range graphs {
		g.EdgeWeight = make([]float32, g.NumEdges())
		for k := range g.EdgeWeight {
			g.EdgeWeight[k] = float32(0.25 + 3*rng.Float64())
		}
	}
	return graphs
}

func TestRGCNConvEdgeWeightsMatchReference(t *testing.T) {
	e := enginetest.New(t)
	for _, lt := range testLayouts {
		t.Run(lt.name, func(t *testing.T) {
			c := rgcnCases[0]
			rng := rand.New(rand.NewPCG(21, 3))
			spec := Spec{FeatDim: c.in, NumRelations: c.nr, NumNodeTypes: 2}
			graphs := weighted(rng, rgcnGraphs(rng, spec))
			b := testBatch(t, spec, lt.layout, graphs)
			w := c.weights(rng)
			inputs := b.Tensors()
			nb := len(inputs)
			for _, p := range c.params(w) {
				inputs = append(inputs, tensorOf(dtypes.Float32, p.value))
			}
			outs := run(t, e, func(in []*graph.Node) []*graph.Node {
				bn, err := NewBatchNodes(spec, lt.layout, in[:nb])
				require.NoError(t, err)
				return []*graph.Node{RGCNConv(bn, bn.X, c.nodes(in[nb:]))}
			}, inputs...)
			perGraphRows(t, b, flat64(outs[0]), c.out, func(gi int) [][]float64 {
				return RGCNConvRef(graphs[gi], graphX(graphs[gi], c.in), w, c.nr)
			}, 1e-5)
		})
	}
}

// TestRGCNRefWeightedMean pins the weighted messages by hand: node 2 receives
// relation-0 edges from node 0 (weight 3) and node 1 (weight 1): (3·x0 + x1)/2 — the
// weights scale the messages, the mean divides by the 2 edges — times W_0.
func TestRGCNRefWeightedMean(t *testing.T) {
	g := &Graph{NumNodes: 3, Src: []int32{0, 1}, Dst: []int32{2, 2}, EdgeWeight: []float32{3, 1}, X: []float32{1, 0, 0}}
	x := [][]float64{{4}, {8}, {0}}
	w := RGCNRef{Rel: [][][]float64{{{2}}}}
	out := RGCNConvRef(g, x, w, 1)
	require.InDelta(t, 2*(3*4.0+8)/2, out[2][0], 1e-12)
	require.Zero(t, out[0][0])
	// Unit weights are the plain mean.
	g.EdgeWeight = []float32{1, 1}
	require.InDelta(t, 2*(4.0+8)/2, RGCNConvRef(g, x, w, 1)[2][0], 1e-12)
	// A weight shared by every edge into a node scales the mean (CAGE's β on an
	// anchor's edges); in a mean over the weights' sum it would cancel.
	g.EdgeWeight = []float32{2.5, 2.5}
	require.InDelta(t, 2.5*2*(4.0+8)/2, RGCNConvRef(g, x, w, 1)[2][0], 1e-12)
}

func TestRGCNConvEdgeWeightsGradients(t *testing.T) {
	e := enginetest.New(t)
	for _, lt := range testLayouts {
		t.Run(lt.name, func(t *testing.T) {
			c := rgcnCases[0]
			rng := rand.New(rand.NewPCG(23, 29))
			spec := Spec{FeatDim: c.in, NumRelations: c.nr, NumNodeTypes: 2}
			graphs := weighted(rng, rgcnGraphs(rng, spec)[:4])
			checkRGCNGradients(t, e, rng, c, spec, lt.layout, graphs)
		})
	}
}

func TestGraphValidateEdgeWeights(t *testing.T) {
	spec := Spec{FeatDim: 1, NumRelations: 1, NumNodeTypes: 1}
	for _, tc := range []struct {
		name string
		w    []float32
		ok   bool
	}{
		{"nil", nil, true},
		{"positive", []float32{0.5, 2}, true},
		{"wrong length", []float32{1}, false},
		{"zero", []float32{0, 1}, false},
		{"negative", []float32{1, -1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &Graph{NumNodes: 2, Src: []int32{0, 1}, Dst: []int32{1, 0}, X: []float32{1, 2}, EdgeWeight: tc.w}
			if tc.ok {
				require.NoError(t, g.Validate(spec))
			} else {
				require.Error(t, g.Validate(spec))
			}
		})
	}
}

// checkRGCNGradients compares RGCNConv's gradients (inputs and weights) on graphs with
// finite differences of the float64 reference, through a random projection of the output.
func checkRGCNGradients(t *testing.T, e *engine.Engine, rng *rand.Rand, c rgcnCase, spec Spec, layout Layout, graphs []*Graph) {
	t.Helper()
	b := testBatch(t, spec, layout, graphs)
	w := c.weights(rng)
	x := batchRows(b)
	p := projection(rng, b.NodeMask, c.out)
	fixed := append(b.Tensors(), tensorOf(dtypes.Float64, p))
	nb := len(fixed) - 1
	params := append([]gradParam{{name: "x", value: x, rows: realRows(b.NodeMask)}}, c.params(w)...)
	checkGradients(t, e, rng, fixed, params,
		func(in []*graph.Node) *graph.Node {
			bn, err := NewBatchNodes(spec, layout, in[:nb])
			require.NoError(t, err)
			out := RGCNConv(bn, in[nb+1], c.nodes(in[nb+2:]))
			return graph.ReduceAllSum(graph.Mul(out, in[nb]))
		},
		func() float64 {
			loss := 0.0
			for gi, g := range graphs {
				off := int(b.NodeOffset[gi])
				loss += dotRows(RGCNConvRef(g, graphRows(x, off, g.NumNodes), w, c.nr), p, off)
			}
			return loss
		})
}
