package kernels

import (
	"errors"
	"fmt"
	"math"
)

// Spec fixes the dimensions shared by every graph of a dataset.
type Spec struct {
	FeatDim      int // node feature width (≥ 1)
	EdgeDim      int // edge feature width; 0 = no edge features
	NumRelations int // edge types; 1 if untyped
	NumNodeTypes int // node types; 1 if untyped
}

// Validate checks the Spec.
func (s Spec) Validate() error {
	switch {
	case s.FeatDim < 1:
		return fmt.Errorf("kernels: spec: FeatDim %d < 1", s.FeatDim)
	case s.EdgeDim < 0:
		return fmt.Errorf("kernels: spec: EdgeDim %d < 0", s.EdgeDim)
	case s.NumRelations < 1:
		return fmt.Errorf("kernels: spec: NumRelations %d < 1", s.NumRelations)
	case s.NumNodeTypes < 1:
		return fmt.Errorf("kernels: spec: NumNodeTypes %d < 1", s.NumNodeTypes)
	}
	return nil
}

// Graph is one small directed graph with typed nodes and edges. Messages flow from
// Src[e] to Dst[e] (PyG's edge_index[0] → edge_index[1]); add both directions for an
// undirected graph. Parallel edges and self-loops are allowed and counted like PyG does.
type Graph struct {
	NumNodes int
	Src, Dst []int32   // edge endpoints, same length
	EdgeType []int32   // relation of each edge in [0, NumRelations); nil = all 0
	NodeType []int32   // type of each node in [0, NumNodeTypes); nil = all 0
	X        []float32 // node features, row-major NumNodes × Spec.FeatDim
	EdgeAttr []float32 // edge features, row-major len(Src) × Spec.EdgeDim; nil if EdgeDim == 0
	// EdgeWeight is a positive weight per edge; nil = all 1. It scales the edge's
	// message in the R-GCN's degree-normalised mean: edge e of relation r into i gets
	// w_e / deg_r(i), deg_r(i) the number of such edges (CAGE's β-scaled edge weights
	// under its degree-normalised aggregation; with all weights 1 the plain mean).
	// Folded into the weights' sum instead (w_e / Σ w_e'), a weight shared by every
	// edge of a relation into a node would cancel.
	EdgeWeight []float32
}

// NumEdges returns the number of edges.
func (g *Graph) NumEdges() int { return len(g.Src) }

// Validate checks that the graph is consistent with spec: index ranges, slice
// lengths and finite features. It never panics.
func (g *Graph) Validate(spec Spec) error {
	if g == nil {
		return errors.New("nil graph")
	}
	if g.NumNodes < 0 {
		return fmt.Errorf("NumNodes %d < 0", g.NumNodes)
	}
	e := len(g.Src)
	if len(g.Dst) != e {
		return fmt.Errorf("len(Src)=%d != len(Dst)=%d", e, len(g.Dst))
	}
	if g.EdgeType != nil && len(g.EdgeType) != e {
		return fmt.Errorf("len(EdgeType)=%d != %d edges", len(g.EdgeType), e)
	}
	if g.NodeType != nil && len(g.NodeType) != g.NumNodes {
		return fmt.Errorf("len(NodeType)=%d != %d nodes", len(g.NodeType), g.NumNodes)
	}
	if len(g.X) != g.NumNodes*spec.FeatDim {
		return fmt.Errorf("len(X)=%d != %d nodes × %d features", len(g.X), g.NumNodes, spec.FeatDim)
	}
	if g.EdgeWeight != nil && len(g.EdgeWeight) != e {
		return fmt.Errorf("len(EdgeWeight)=%d != %d edges", len(g.EdgeWeight), e)
	}
	for i, w := range g.EdgeWeight {
		if !(w > 0) || math.IsInf(float64(w), 0) {
			return fmt.Errorf("EdgeWeight[%d]=%g is not a finite positive weight", i, w)
		}
	}
	if len(g.EdgeAttr) != e*spec.EdgeDim {
		return fmt.Errorf("len(EdgeAttr)=%d != %d edges × %d edge features", len(g.EdgeAttr), e, spec.EdgeDim)
	}
	n := int32(g.NumNodes)
	for i := range e {
		if g.Src[i] < 0 || g.Src[i] >= n || g.Dst[i] < 0 || g.Dst[i] >= n {
			return fmt.Errorf("edge %d (%d→%d) out of range [0,%d)", i, g.Src[i], g.Dst[i], n)
		}
		if g.EdgeType != nil && (g.EdgeType[i] < 0 || int(g.EdgeType[i]) >= spec.NumRelations) {
			return fmt.Errorf("edge %d: type %d out of range [0,%d)", i, g.EdgeType[i], spec.NumRelations)
		}
	}
	for i, t := range g.NodeType {
		if t < 0 || int(t) >= spec.NumNodeTypes {
			return fmt.Errorf("node %d: type %d out of range [0,%d)", i, t, spec.NumNodeTypes)
		}
	}
	for i, v := range g.X {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("X[%d] is not finite", i)
		}
	}
	for i, v := range g.EdgeAttr {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("EdgeAttr[%d] is not finite", i)
		}
	}
	return nil
}

// edgeType returns the relation of edge i (0 if untyped).
func (g *Graph) edgeType(i int) int32 {
	if g.EdgeType == nil {
		return 0
	}
	return g.EdgeType[i]
}

// edgeWeight returns the weight of edge i (1 if unweighted).
func (g *Graph) edgeWeight(i int) float32 {
	if g.EdgeWeight == nil {
		return 1
	}
	return g.EdgeWeight[i]
}

// nodeType returns the type of node i (0 if untyped).
func (g *Graph) nodeType(i int) int32 {
	if g.NodeType == nil {
		return 0
	}
	return g.NodeType[i]
}
