package kernels

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// inputField describes one batch tensor passed to an executable.
type inputField struct {
	name  string
	dtype dtypes.DType
}

// inputFields lists the batch inputs in executable order for a spec and layout.
func inputFields(spec Spec, layout Layout) []inputField {
	f := []inputField{
		{"X", dtypes.Float32}, {"NodeType", dtypes.Int32}, {"NodeMask", dtypes.Float32}, {"NodeSlot", dtypes.Int32},
		{"Src", dtypes.Int32}, {"Dst", dtypes.Int32}, {"EdgeType", dtypes.Int32},
		{"EdgeMask", dtypes.Float32}, {"EdgeNorm", dtypes.Float32},
		{"GraphMask", dtypes.Float32}, {"GraphNodes", dtypes.Float32},
	}
	if spec.EdgeDim > 0 {
		f = append(f, inputField{"EdgeAttr", dtypes.Float32})
	}
	if layout.Tiled() {
		f = append(f, inputField{"Adj", dtypes.Float32}, inputField{"AdjT", dtypes.Float32},
			inputField{"PoolSum", dtypes.Float32}, inputField{"Member", dtypes.Float32})
	}
	return f
}

// NumInputs returns how many tensors Batch.Tensors yields for a spec and layout.
func NumInputs(spec Spec, layout Layout) int { return len(inputFields(spec, layout)) }

// Tensors returns the batch as executable inputs, in the order NewBatchNodes expects.
// The caller owns them.
func (b *Batch) Tensors() []*tensors.Tensor {
	n, e, g := b.Bucket.Nodes, b.Bucket.Edges, b.Bucket.Graphs
	out := []*tensors.Tensor{
		tensors.FromFlatDataAndDimensions(b.X, n, b.Spec.FeatDim),
		tensors.FromFlatDataAndDimensions(b.NodeType, n),
		tensors.FromFlatDataAndDimensions(b.NodeMask, n),
		tensors.FromFlatDataAndDimensions(b.NodeSlot, n),
		tensors.FromFlatDataAndDimensions(b.Src, e),
		tensors.FromFlatDataAndDimensions(b.Dst, e),
		tensors.FromFlatDataAndDimensions(b.EdgeType, e),
		tensors.FromFlatDataAndDimensions(b.EdgeMask, e),
		tensors.FromFlatDataAndDimensions(b.EdgeNorm, e),
		tensors.FromFlatDataAndDimensions(b.GraphMask, g),
		tensors.FromFlatDataAndDimensions(b.GraphNodes, g),
	}
	if b.Spec.EdgeDim > 0 {
		out = append(out, tensors.FromFlatDataAndDimensions(b.EdgeAttr, e, b.Spec.EdgeDim))
	}
	if b.Layout.Tiled() {
		t, s, r := b.Layout.TileSize, b.Layout.GraphsPerTile, b.Spec.NumRelations
		tiles := b.Tiles()
		out = append(out,
			tensors.FromFlatDataAndDimensions(b.Adj, tiles, t*r, t),
			tensors.FromFlatDataAndDimensions(b.AdjT, tiles, t, t*r),
			tensors.FromFlatDataAndDimensions(b.PoolSum, tiles, s, t),
			tensors.FromFlatDataAndDimensions(b.Member, tiles, t, s),
		)
	}
	return out
}

// BatchNodes is a Batch inside a computation graph. Field meanings and shapes are those
// of Batch (N node rows, E edge slots, G graph slots); index fields are int32.
type BatchNodes struct {
	Spec   Spec
	Layout Layout

	X, NodeType, NodeMask, NodeSlot           *graph.Node // [N,F] [N] [N] [N]
	Src, Dst, EdgeType, EdgeMask, EdgeNorm    *graph.Node // [E] each
	EdgeAttr                                  *graph.Node // [E,Fe] or nil
	GraphMask, GraphNodes                     *graph.Node // [G] each
	Adj, AdjT, PoolSum, Member                *graph.Node // tiled layout only, else nil
	numNodes, numEdges, numGraphs, numTiles   int
	srcIdx, dstIdx, slotIdx, relIdx, nodeMask *graph.Node // cached derived nodes
}

// NewBatchNodes wraps the executable inputs produced by Batch.Tensors (first
// NumInputs(spec, layout) entries of inputs) and checks their shapes.
func NewBatchNodes(spec Spec, layout Layout, inputs []*graph.Node) (*BatchNodes, error) {
	fields := inputFields(spec, layout)
	if len(inputs) < len(fields) {
		return nil, fmt.Errorf("kernels: batch nodes: got %d inputs, need %d", len(inputs), len(fields))
	}
	for i, f := range fields {
		if inputs[i] == nil || inputs[i].DType() != f.dtype {
			return nil, fmt.Errorf("kernels: batch nodes: input %d (%s) must be %s", i, f.name, f.dtype)
		}
	}
	b := &BatchNodes{Spec: spec, Layout: layout}
	ptrs := []**graph.Node{&b.X, &b.NodeType, &b.NodeMask, &b.NodeSlot, &b.Src, &b.Dst, &b.EdgeType,
		&b.EdgeMask, &b.EdgeNorm, &b.GraphMask, &b.GraphNodes}
	if spec.EdgeDim > 0 {
		ptrs = append(ptrs, &b.EdgeAttr)
	}
	if layout.Tiled() {
		ptrs = append(ptrs, &b.Adj, &b.AdjT, &b.PoolSum, &b.Member)
	}
	for i, p := range ptrs {
		*p = inputs[i]
	}
	n, e, g := b.X.Shape().Dim(0), b.Src.Shape().Dim(0), b.GraphMask.Shape().Dim(0)
	b.numNodes, b.numEdges, b.numGraphs = n, e, g
	if b.X.Rank() != 2 || b.X.Shape().Dim(1) != spec.FeatDim {
		return nil, fmt.Errorf("kernels: batch nodes: X shape %s, want [N, %d]", b.X.Shape(), spec.FeatDim)
	}
	for _, c := range []struct {
		node *graph.Node
		dims []int
	}{
		{b.NodeType, []int{n}}, {b.NodeMask, []int{n}}, {b.NodeSlot, []int{n}},
		{b.Dst, []int{e}}, {b.EdgeType, []int{e}}, {b.EdgeMask, []int{e}}, {b.EdgeNorm, []int{e}},
		{b.GraphNodes, []int{g}},
	} {
		if !sameDims(c.node, c.dims) {
			return nil, fmt.Errorf("kernels: batch nodes: shape %s, want %v", c.node.Shape(), c.dims)
		}
	}
	if b.EdgeAttr != nil && !sameDims(b.EdgeAttr, []int{e, spec.EdgeDim}) {
		return nil, fmt.Errorf("kernels: batch nodes: EdgeAttr shape %s, want [%d, %d]", b.EdgeAttr.Shape(), e, spec.EdgeDim)
	}
	if layout.Tiled() {
		t, s, r := layout.TileSize, layout.GraphsPerTile, spec.NumRelations
		if n%t != 0 || g != n/t*s {
			return nil, fmt.Errorf("kernels: batch nodes: %d rows / %d slots do not match tile %d × %d slots", n, g, t, s)
		}
		tiles := n / t
		b.numTiles = tiles
		for _, c := range []struct {
			node *graph.Node
			dims []int
		}{
			{b.Adj, []int{tiles, t * r, t}}, {b.AdjT, []int{tiles, t, t * r}},
			{b.PoolSum, []int{tiles, s, t}}, {b.Member, []int{tiles, t, s}},
		} {
			if !sameDims(c.node, c.dims) {
				return nil, fmt.Errorf("kernels: batch nodes: shape %s, want %v", c.node.Shape(), c.dims)
			}
		}
	}
	return b, nil
}

func sameDims(n *graph.Node, dims []int) bool {
	if n.Rank() != len(dims) {
		return false
	}
	for i, d := range dims {
		if n.Shape().Dim(i) != d {
			return false
		}
	}
	return true
}

// Graph returns the computation graph the batch lives in.
func (b *BatchNodes) Graph() *graph.Graph { return b.X.Graph() }

// NumNodes returns N, the node rows.
func (b *BatchNodes) NumNodes() int { return b.numNodes }

// NumEdges returns E, the edge slots.
func (b *BatchNodes) NumEdges() int { return b.numEdges }

// NumGraphs returns G, the graph slots.
func (b *BatchNodes) NumGraphs() int { return b.numGraphs }

// NumTiles returns the tiles (0 in the sequential layout).
func (b *BatchNodes) NumTiles() int { return b.numTiles }

// SrcIndex returns Src as [E,1] gather/scatter indices.
func (b *BatchNodes) SrcIndex() *graph.Node {
	if b.srcIdx == nil {
		b.srcIdx = graph.InsertAxes(b.Src, -1)
	}
	return b.srcIdx
}

// DstIndex returns Dst as [E,1] gather/scatter indices.
func (b *BatchNodes) DstIndex() *graph.Node {
	if b.dstIdx == nil {
		b.dstIdx = graph.InsertAxes(b.Dst, -1)
	}
	return b.dstIdx
}

// SlotIndex returns NodeSlot as [N,1] scatter indices (padding rows → slot G).
func (b *BatchNodes) SlotIndex() *graph.Node {
	if b.slotIdx == nil {
		b.slotIdx = graph.InsertAxes(b.NodeSlot, -1)
	}
	return b.slotIdx
}

// relationIndex returns Dst·R + EdgeType as [E,1] indices into N·R rows.
func (b *BatchNodes) relationIndex() *graph.Node {
	if b.relIdx == nil {
		r := b.Spec.NumRelations
		b.relIdx = graph.InsertAxes(graph.Add(graph.MulScalar(b.Dst, r), b.EdgeType), -1)
	}
	return b.relIdx
}

// nodeMaskBool returns NodeMask as a [N] boolean.
func (b *BatchNodes) nodeMaskBool() *graph.Node {
	if b.nodeMask == nil {
		b.nodeMask = rowMask(b.NodeMask)
	}
	return b.nodeMask
}
