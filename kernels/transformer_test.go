package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/engine/enginetest"
)

// gtCase is a configuration of TransformerConv.
type gtCase struct {
	name                 string
	heads, c             int
	concat, edges, beta  bool
	skip, biases         bool
	in, edgeDim, numRels int
}

func (c gtCase) width() int {
	if c.concat {
		return c.heads * c.c
	}
	return c.c
}

func (c gtCase) weights(rng *rand.Rand) TransformerRef {
	hc := c.heads * c.c
	w := TransformerRef{Query: randMat(rng, c.in, hc, 0.5), Key: randMat(rng, c.in, hc, 0.5), Value: randMat(rng, c.in, hc, 0.5)}
	if c.biases {
		w.QueryBias, w.KeyBias, w.ValueBias = randVec(rng, hc, 0.5), randVec(rng, hc, 0.5), randVec(rng, hc, 0.5)
	}
	if c.edges {
		w.Edge = randMat(rng, c.edgeDim, hc, 0.5)
	}
	if c.skip {
		w.Skip = randMat(rng, c.in, c.width(), 0.5)
		w.SkipBias = randVec(rng, c.width(), 0.5)
		if c.beta {
			w.Beta = randMat(rng, 3*c.width(), 1, 0.5)
		}
	}
	return w
}

// params lists the non-nil weights in a fixed order, matching nodes.
func (c gtCase) params(w TransformerRef) []gradParam {
	p := []gradParam{{name: "Query", value: w.Query}, {name: "Key", value: w.Key}, {name: "Value", value: w.Value}}
	if c.biases {
		p = append(p, gradParam{name: "QueryBias", value: w.QueryBias}, gradParam{name: "KeyBias", value: w.KeyBias},
			gradParam{name: "ValueBias", value: w.ValueBias})
	}
	if c.edges {
		p = append(p, gradParam{name: "Edge", value: w.Edge})
	}
	if c.skip {
		p = append(p, gradParam{name: "Skip", value: w.Skip}, gradParam{name: "SkipBias", value: w.SkipBias})
		if c.beta {
			p = append(p, gradParam{name: "Beta", value: w.Beta})
		}
	}
	return p
}

func (c gtCase) nodes(in []*graph.Node) TransformerWeights {
	w := TransformerWeights{Query: in[0], Key: in[1], Value: in[2]}
	k := 3
	if c.biases {
		w.QueryBias, w.KeyBias, w.ValueBias = in[3], in[4], in[5]
		k = 6
	}
	if c.edges {
		w.Edge = in[k]
		k++
	}
	if c.skip {
		w.Skip, w.SkipBias = in[k], in[k+1]
		k += 2
		if c.beta {
			w.Beta = in[k]
		}
	}
	return w
}

var gtCases = []gtCase{
	{name: "concat+edges+skip", heads: 2, c: 3, concat: true, edges: true, skip: true, biases: true, in: 5, edgeDim: 4, numRels: 1},
	{name: "mean heads+beta", heads: 3, c: 2, edges: true, skip: true, beta: true, biases: true, in: 5, edgeDim: 4, numRels: 1},
	{name: "no edge features no skip", heads: 1, c: 4, concat: true, in: 5, edgeDim: 4, numRels: 1},
}

func gtGraphs(rng *rand.Rand, spec Spec) []*Graph {
	return []*Graph{randomGraph(rng, spec, 8, 12), randomGraph(rng, spec, 3, 2), randomGraph(rng, spec, 1, 0),
		randomGraph(rng, spec, 10, 16), randomGraph(rng, spec, 5, 7)}
}

func TestTransformerConvMatchesReference(t *testing.T) {
	e := enginetest.New(t)
	for _, lt := range testLayouts {
		for _, c := range gtCases {
			t.Run(lt.name+"/"+c.name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(19, 23))
				spec := Spec{FeatDim: c.in, EdgeDim: c.edgeDim, NumRelations: c.numRels, NumNodeTypes: 1}
				graphs := gtGraphs(rng, spec)
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
					return []*graph.Node{TransformerConv(bn, bn.X, c.nodes(in[nb:]), TransformerOptions{Heads: c.heads, Concat: c.concat})}
				}, inputs...)
				perGraphRows(t, b, flat64(outs[0]), c.width(), func(gi int) [][]float64 {
					return TransformerConvRef(graphs[gi], graphX(graphs[gi], c.in), w, c.heads, c.concat, c.edgeDim)
				}, 1e-5)
			})
		}
	}
}

func TestTransformerConvGradients(t *testing.T) {
	e := enginetest.New(t)
	for _, c := range gtCases[:2] {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(29, 31))
			spec := Spec{FeatDim: c.in, EdgeDim: c.edgeDim, NumRelations: c.numRels, NumNodeTypes: 1}
			graphs := gtGraphs(rng, spec)[:3]
			layout := Layout{}
			b := testBatch(t, spec, layout, graphs)
			w := c.weights(rng)
			x := batchRows(b)
			p := projection(rng, b.NodeMask, c.width())
			fixed := append(b.Tensors(), tensorOf(dtypes.Float64, p))
			nb := len(fixed) - 1
			params := append([]gradParam{{name: "x", value: x, rows: realRows(b.NodeMask)}}, c.params(w)...)
			checkGradients(t, e, rng, fixed, params,
				func(in []*graph.Node) *graph.Node {
					bn, err := NewBatchNodes(spec, layout, in[:nb])
					require.NoError(t, err)
					out := TransformerConv(bn, in[nb+1], c.nodes(in[nb+2:]), TransformerOptions{Heads: c.heads, Concat: c.concat})
					return graph.ReduceAllSum(graph.Mul(out, in[nb]))
				},
				func() float64 {
					loss := 0.0
					for gi, g := range graphs {
						off := int(b.NodeOffset[gi])
						loss += dotRows(TransformerConvRef(g, graphRows(x, off, g.NumNodes), w, c.heads, c.concat, c.edgeDim), p, off)
					}
					return loss
				})
		})
	}
}

func TestSegmentSoftmax(t *testing.T) {
	e := enginetest.New(t)
	rng := rand.New(rand.NewPCG(37, 41))
	logits := randMat(rng, 9, 2, 3)
	seg := []int{0, 0, 2, 2, 2, 3, 0, 3, 3}
	mask := []bool{true, true, true, false, true, true, true, false, false}
	segT := make([]int32, len(seg))
	maskT := make([]float32, len(seg))
	for i := range seg {
		segT[i] = int32(seg[i])
		if mask[i] {
			maskT[i] = 1
		}
	}
	outs := run(t, e, func(in []*graph.Node) []*graph.Node {
		return []*graph.Node{SegmentSoftmax(in[0], in[1], in[2], 5)}
	}, tensorOf(dtypes.Float32, logits), tensorFromInts(segT), tensorFromF32(maskT))
	require.Less(t, relErr(flat64(outs[0]), flatten(SegmentSoftmaxRef(logits, seg, mask))), 1e-6)
}
