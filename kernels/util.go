package kernels

import (
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// checkRank panics with a clear message if x is nil or not of the given rank. Kernels
// run while a graph is built, where GoMLX reports errors by panicking; executables turn
// such panics into errors.
func checkRank(name string, x *graph.Node, rank int) {
	if x == nil {
		exceptions.Panicf("%s: nil input", name)
	}
	if x.Rank() != rank {
		exceptions.Panicf("%s: shape %s, want rank %d", name, x.Shape(), rank)
	}
}

// asDType converts n to like's dtype if they differ (batch tensors are float32; the
// kernels also run in float64 for gradient checks).
func asDType(n, like *graph.Node) *graph.Node {
	if n.DType() == like.DType() {
		return n
	}
	return graph.ConvertDType(n, like.DType())
}

// shapeOf is shapes.Make.
func shapeOf(dtype dtypes.DType, dims ...int) shapes.Shape { return shapes.Make(dtype, dims...) }

// full returns a tensor of the given shape filled with value.
func full(g *graph.Graph, dtype dtypes.DType, value float64, dims ...int) *graph.Node {
	return graph.BroadcastToDims(graph.ConstAsDType(g, dtype, value), dims...)
}

// rowMask turns a [N] 0/1 mask into a [N] boolean; Where broadcasts such a prefix
// condition over the trailing axes of [N, …] operands.
func rowMask(mask *graph.Node) *graph.Node {
	return graph.GreaterThan(mask, graph.ScalarZero(mask.Graph(), mask.DType()))
}
