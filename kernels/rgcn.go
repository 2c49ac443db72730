package kernels

import (
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// RGCNWeights are the parameters of one R-GCN layer in PyG RGCNConv's layout.
// Give either Rel, or Basis and Comp (basis decomposition, PyG num_bases).
type RGCNWeights struct {
	Root  *graph.Node // [in, out]; nil: no root weight (PyG root_weight=False)
	Rel   *graph.Node // [R, in, out]
	Basis *graph.Node // [B, in, out]
	Comp  *graph.Node // [R, B]
	Bias  *graph.Node // [out] or nil
}

// RelationWeights returns the per-relation weights [R, in, out], composing them from
// the bases when the layer uses a basis decomposition (W_r = Σ_b Comp[r,b]·Basis[b]).
func (w RGCNWeights) RelationWeights() *graph.Node {
	if w.Rel != nil {
		return w.Rel
	}
	if w.Basis == nil || w.Comp == nil {
		exceptions.Panicf("kernels.RGCNConv: need Rel or both Basis and Comp")
	}
	return graph.Einsum("rb,bio->rio", w.Comp, w.Basis)
}

// RGCNConv is PyG's RGCNConv (aggr="mean"): for every node i,
//
//	out_i = x_i·Root + Bias + Σ_r (1/|N_r(i)|) Σ_{j ∈ N_r(i)} x_j·W_r
//
// where N_r(i) are the sources of edges of relation r into i (parallel edges counted
// each time, as PyG does). With per-edge weights (Graph.EdgeWeight) each message is
// scaled by its weight, Σ_j w_ji x_j / |N_r(i)| (folded into Batch.EdgeNorm). Relations with no incoming edge contribute 0, so isolated
// nodes get x_i·Root + Bias. x is [N, in]; the result is [N, out].
//
// The relation-wise means are computed first (dense per-tile adjacency products in the
// tiled layout, Gather/ScatterSum over edges in the sequential one), then one fused
// product applies Root and all W_r at once. The float64 reference is RGCNConvRef.
func RGCNConv(b *BatchNodes, x *graph.Node, w RGCNWeights) *graph.Node {
	checkRank("kernels.RGCNConv: x", x, 2)
	r := b.Spec.NumRelations
	rel := w.RelationWeights()
	in, out := rel.Shape().Dim(1), rel.Shape().Dim(2)
	if rel.Rank() != 3 || rel.Shape().Dim(0) != r || x.Shape().Dim(1) != in {
		exceptions.Panicf("kernels.RGCNConv: x %s and relation weights %s do not match %d relations", x.Shape(), rel.Shape(), r)
	}
	agg := RelationMeans(b, x) // [N, R·in]
	relFlat := graph.Reshape(rel, r*in, out)
	if w.Root == nil {
		return Linear(agg, relFlat, w.Bias)
	}
	return LinearSum([]*graph.Node{x, agg}, []*graph.Node{w.Root, relFlat}, w.Bias)
}

// RelationMeans returns, for every node i and relation r, the mean of x_j over the
// sources j of relation-r edges into i (0 if there are none), laid out [N, R·F] with
// relation-major column blocks: out[i, r·F+f].
func RelationMeans(b *BatchNodes, x *graph.Node) *graph.Node {
	checkRank("kernels.RelationMeans: x", x, 2)
	n, f, r := b.NumNodes(), x.Shape().Dim(1), b.Spec.NumRelations
	if x.Shape().Dim(0) != n {
		exceptions.Panicf("kernels.RelationMeans: x has %d rows, batch has %d", x.Shape().Dim(0), n)
	}
	if b.Layout.Tiled() {
		t, tiles := b.Layout.TileSize, b.NumTiles()
		xt := graph.Reshape(x, tiles, t, f)
		agg := tileProduct(asDType(b.Adj, x), asDType(b.AdjT, x), xt) // [tiles, T·R, F]
		return graph.Reshape(agg, n, r*f)
	}
	msgs := graph.Mul(graph.Gather(x, b.SrcIndex()), graph.InsertAxes(asDType(b.EdgeNorm, x), -1))
	agg := graph.ScatterSum(graph.Zeros(x.Graph(), shapeOf(x.DType(), n*r, f)), b.relationIndex(), msgs, true, false)
	return graph.Reshape(agg, n, r*f)
}

// tileProduct returns the batched product a[t]·x[t] ([tiles, M, T]·[tiles, T, F]) whose
// gradient for x is aT[t]·v[t], with aT the per-tile transpose of a given as an input
// (a and aT are data, not differentiated).
func tileProduct(a, aT, x *graph.Node) *graph.Node {
	return withVJP([]*graph.Node{x},
		func(ins []*graph.Node) *graph.Node {
			return graph.DotGeneral(a, []int{2}, []int{0}, ins[0], []int{1}, []int{0})
		},
		func(_, v *graph.Node) []*graph.Node {
			return []*graph.Node{graph.DotGeneral(aT, []int{2}, []int{0}, v, []int{1}, []int{0})}
		})
}
