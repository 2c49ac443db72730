package kernels

import (
	"math"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// TransformerWeights are the parameters of one PyG TransformerConv layer, stored
// [in, out] (PyG's Linear weights transposed). H heads of C channels each.
type TransformerWeights struct {
	Query, Key, Value             *graph.Node // [in, H·C] (lin_query, lin_key, lin_value)
	QueryBias, KeyBias, ValueBias *graph.Node // [H·C] or nil
	Edge                          *graph.Node // [edgeDim, H·C] (lin_edge, no bias); nil: edge features unused
	Skip                          *graph.Node // [in, H·C] if Concat else [in, C] (lin_skip); nil: root_weight=False
	SkipBias                      *graph.Node // bias of lin_skip or nil
	Beta                          *graph.Node // [3·out, 1] (lin_beta, no bias); nil: beta=False
}

// TransformerOptions are TransformerConv's structural options.
type TransformerOptions struct {
	Heads  int  // H ≥ 1
	Concat bool // true: concatenate heads (out = H·C); false: average them (out = C)
	// DropAttention, if set, is applied to the attention coefficients α [E, H] after
	// the softmax (PyG's dropout argument, active in training only).
	DropAttention func(alpha *graph.Node) *graph.Node
}

// TransformerConv is PyG's TransformerConv: for every node i and head h,
//
//	α_ij = softmax_{j ∈ N(i)} ( q_i · (k_j + e_ij) / √C )
//	out_i = Σ_j α_ij (v_j + e_ij)          (heads concatenated or averaged)
//	out_i += x_i·Skip + SkipBias            (root weight; or the beta gate)
//
// with q = x·Query+QueryBias, k, v likewise, and e_ij = edge_attr_ij·Edge. The
// softmax runs over the incoming edges of i only; padding edges (EdgeMask 0) are
// excluded from it, and a node without incoming edges aggregates 0. With Beta set, the
// PyG beta gate replaces the sum: β = σ([out, x_r, out−x_r]·Beta), out = β·x_r + (1−β)·out.
// x is [N, in]. The float64 reference is TransformerConvRef.
func TransformerConv(b *BatchNodes, x *graph.Node, w TransformerWeights, opt TransformerOptions) *graph.Node {
	checkRank("kernels.TransformerConv: x", x, 2)
	if opt.Heads < 1 {
		exceptions.Panicf("kernels.TransformerConv: Heads %d < 1", opt.Heads)
	}
	if w.Query == nil || w.Key == nil || w.Value == nil {
		exceptions.Panicf("kernels.TransformerConv: Query, Key and Value weights are required")
	}
	n, e, heads := b.NumNodes(), b.NumEdges(), opt.Heads
	hc := w.Query.Shape().Dim(1)
	if hc%heads != 0 {
		exceptions.Panicf("kernels.TransformerConv: width %d not divisible by %d heads", hc, heads)
	}
	c := hc / heads
	q := Linear(x, w.Query, w.QueryBias)
	k := Linear(x, w.Key, w.KeyBias)
	v := Linear(x, w.Value, w.ValueBias)
	qi := graph.Gather(q, b.DstIndex(), true) // edges are sorted by Dst
	kj := graph.Gather(k, b.SrcIndex())
	vj := graph.Gather(v, b.SrcIndex())
	if w.Edge != nil {
		if b.EdgeAttr == nil {
			exceptions.Panicf("kernels.TransformerConv: Edge weight given but the batch has no edge features")
		}
		ef := Linear(asDType(b.EdgeAttr, x), w.Edge, nil)
		kj = graph.Add(kj, ef)
		vj = graph.Add(vj, ef)
	}
	logits := graph.ReduceSum(graph.Reshape(graph.Mul(qi, kj), e, heads, c), 2)
	logits = graph.MulScalar(logits, 1/math.Sqrt(float64(c)))
	alpha := SegmentSoftmax(logits, b.Dst, b.EdgeMask, n)
	if opt.DropAttention != nil {
		alpha = opt.DropAttention(alpha)
	}
	msg := graph.Mul(graph.Reshape(vj, e, heads, c), graph.InsertAxes(alpha, -1))
	msg = graph.Reshape(msg, e, hc)
	out := graph.ScatterSum(graph.Zeros(x.Graph(), shapeOf(x.DType(), n, hc)), b.DstIndex(), msg, true, false)
	if !opt.Concat {
		out = graph.ReduceMean(graph.Reshape(out, n, heads, c), 1)
	}
	if w.Skip == nil {
		return out
	}
	xr := Linear(x, w.Skip, w.SkipBias)
	if w.Beta == nil {
		return graph.Add(out, xr)
	}
	beta := graph.Sigmoid(Linear(graph.Concatenate([]*graph.Node{out, xr, graph.Sub(out, xr)}, 1), w.Beta, nil))
	return graph.Add(graph.Mul(beta, xr), graph.Mul(graph.OneMinus(beta), out))
}

// SegmentSoftmax is torch_geometric.utils.softmax: a softmax of logits [E, H] over the
// entries sharing the same segment id (segIDs [E], e.g. the target node), restricted to
// entries with mask ≠ 0 (mask [E]; nil = all). Masked entries get 0. As in PyG the
// per-segment maximum is not differentiated through and the denominator has +1e-16.
func SegmentSoftmax(logits, segIDs, mask *graph.Node, numSegments int) *graph.Node {
	checkRank("kernels.SegmentSoftmax: logits", logits, 2)
	g := logits.Graph()
	idx := graph.InsertAxes(segIDs, -1)
	h := logits.Shape().Dim(1)
	masked := logits
	if mask != nil {
		masked = graph.Where(rowMask(mask), logits, full(g, logits.DType(), math.Inf(-1), logits.Shape().Dimensions...))
	}
	m := graph.ScatterMax(full(g, logits.DType(), math.Inf(-1), numSegments, h), idx, graph.StopGradient(masked), false, false)
	m = graph.Where(graph.IsFinite(m), m, graph.ZerosLike(m))
	ex := graph.Exp(graph.Sub(masked, graph.Gather(m, idx)))
	den := graph.ScatterSum(graph.Zeros(g, shapeOf(logits.DType(), numSegments, h)), idx, ex, false, false)
	return graph.Div(ex, graph.AddScalar(graph.Gather(den, idx), 1e-16))
}
