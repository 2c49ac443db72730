package kernels

import (
	"math"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// segmentIndex returns [N,1] scatter indices: segIDs where mask is set and the id is in
// [0, numSegments), else numSegments (a dummy row the caller drops).
func segmentIndex(segIDs, mask *graph.Node, numSegments int) *graph.Node {
	checkRank("kernels: segment ids", segIDs, 1)
	g := segIDs.Graph()
	dummy := graph.ConstAsDType(g, segIDs.DType(), numSegments)
	valid := graph.LogicalAnd(
		graph.GreaterOrEqual(segIDs, graph.ScalarZero(g, segIDs.DType())),
		graph.LessThan(segIDs, dummy))
	if mask != nil {
		valid = graph.LogicalAnd(valid, rowMask(mask))
	}
	return graph.InsertAxes(graph.Where(valid, segIDs, dummy), -1)
}

// SegmentSum returns out[s] = Σ x[i] over rows i with segIDs[i] = s and mask[i] ≠ 0,
// for s in [0, numSegments). x is [N, F], segIDs [N] int, mask [N] (nil = all rows).
// Rows with ids outside [0, numSegments) are dropped. Empty segments give 0.
func SegmentSum(x, segIDs, mask *graph.Node, numSegments int) *graph.Node {
	checkRank("kernels.SegmentSum: x", x, 2)
	idx := segmentIndex(segIDs, mask, numSegments)
	f := x.Shape().Dim(1)
	sum := graph.ScatterSum(graph.Zeros(x.Graph(), shapeOf(x.DType(), numSegments+1, f)), idx, x, false, false)
	return graph.Slice(sum, graph.AxisRange(0, numSegments))
}

// SegmentCount returns the number of rows in each segment (as x's dtype), counting
// like SegmentSum.
func SegmentCount(segIDs, mask *graph.Node, numSegments int, like *graph.Node) *graph.Node {
	idx := segmentIndex(segIDs, mask, numSegments)
	ones := graph.OnesLike(graph.ConvertDType(segIDs, like.DType()))
	cnt := graph.ScatterSum(graph.Zeros(like.Graph(), shapeOf(like.DType(), numSegments+1)), idx, ones, false, false)
	return graph.Slice(cnt, graph.AxisRange(0, numSegments))
}

// SegmentMean is SegmentSum divided by the segment's row count; empty segments give 0.
func SegmentMean(x, segIDs, mask *graph.Node, numSegments int) *graph.Node {
	sum := SegmentSum(x, segIDs, mask, numSegments)
	cnt := SegmentCount(segIDs, mask, numSegments, x)
	return graph.Div(sum, graph.InsertAxes(graph.MaxScalar(cnt, 1), -1))
}

// SegmentMax returns the element-wise maximum of the rows of each segment, 0 for empty
// segments (never -inf). Its gradient goes to every row attaining the maximum (ties
// each get the full gradient, unlike torch_scatter's single argmax).
func SegmentMax(x, segIDs, mask *graph.Node, numSegments int) *graph.Node {
	checkRank("kernels.SegmentMax: x", x, 2)
	idx := segmentIndex(segIDs, mask, numSegments)
	f := x.Shape().Dim(1)
	g := x.Graph()
	m := graph.ScatterMax(full(g, x.DType(), math.Inf(-1), numSegments+1, f), idx, x, false, false)
	m = graph.Slice(m, graph.AxisRange(0, numSegments))
	cnt := SegmentCount(segIDs, mask, numSegments, x)
	return graph.Where(graph.GreaterThan(cnt, graph.ScalarZero(g, cnt.DType())), m, graph.ZerosLike(m))
}

// SumPool sums node rows per graph slot: [N, F] → [G, F]; padding rows are excluded.
func SumPool(b *BatchNodes, x *graph.Node) *graph.Node {
	checkPoolInput(b, x)
	if b.Layout.Tiled() {
		t, f := b.Layout.TileSize, x.Shape().Dim(1)
		xt := graph.Reshape(x, b.NumTiles(), t, f)
		return graph.Reshape(tileProduct(asDType(b.PoolSum, x), asDType(b.Member, x), xt), b.NumGraphs(), f)
	}
	return SegmentSum(x, b.NodeSlot, b.NodeMask, b.NumGraphs())
}

// MeanPool is PyG global_mean_pool over graph slots: [N, F] → [G, F]; slots without
// nodes (padding) give 0.
func MeanPool(b *BatchNodes, x *graph.Node) *graph.Node {
	sum := SumPool(b, x)
	cnt := graph.MaxScalar(asDType(b.GraphNodes, x), 1)
	return graph.Div(sum, graph.InsertAxes(cnt, -1))
}

// MaxPool is PyG global_max_pool over graph slots: [N, F] → [G, F]; slots without nodes
// give 0. Gradient ties as in SegmentMax.
func MaxPool(b *BatchNodes, x *graph.Node) *graph.Node {
	checkPoolInput(b, x)
	if !b.Layout.Tiled() {
		return SegmentMax(x, b.NodeSlot, b.NodeMask, b.NumGraphs())
	}
	// Tiled: ScatterMax forward, and a gradient that broadcasts the pooled values back to
	// the rows with the per-tile membership matrix instead of two N×F gathers.
	gSlots, f := b.NumGraphs(), x.Shape().Dim(1)
	t, s, tiles := b.Layout.TileSize, b.Layout.GraphsPerTile, b.NumTiles()
	member := asDType(b.Member, x)
	toRows := func(p *graph.Node) *graph.Node { // [G, F] → [N, F]
		pr := graph.Reshape(p, tiles, s, f)
		return graph.Reshape(graph.DotGeneral(member, []int{2}, []int{0}, pr, []int{1}, []int{0}), tiles*t, f)
	}
	nodeMask := b.nodeMaskBool()
	hasNodes := graph.GreaterThan(b.GraphNodes, graph.ScalarZero(x.Graph(), b.GraphNodes.DType()))
	return withVJP([]*graph.Node{x},
		func(ins []*graph.Node) *graph.Node {
			m := graph.ScatterMax(full(x.Graph(), x.DType(), math.Inf(-1), gSlots+1, f), b.SlotIndex(), ins[0], false, false)
			m = graph.Slice(m, graph.AxisRange(0, gSlots))
			return graph.Where(hasNodes, m, graph.ZerosLike(m))
		},
		func(out, v *graph.Node) []*graph.Node {
			atMax := graph.LogicalAnd(graph.Equal(x, toRows(out)), graph.BroadcastToDims(graph.InsertAxes(nodeMask, -1), tiles*t, f))
			return []*graph.Node{graph.Where(atMax, toRows(v), graph.ZerosLike(x))}
		})
}

func checkPoolInput(b *BatchNodes, x *graph.Node) {
	checkRank("kernels: pool input", x, 2)
	if x.Shape().Dim(0) != b.NumNodes() {
		exceptions.Panicf("kernels: pool input has %d rows, batch has %d", x.Shape().Dim(0), b.NumNodes())
	}
}
