package graphio

import (
	"fmt"
	"slices"

	"github.com/graphloom/graphloom/kernels"
)

// EdgeType names a kind of derived graph edge.
type EdgeType uint8

// Edge types derived from an index's records.
const (
	EdgeFact            EdgeType = iota // entity–entity, weight = summed support of the facts joining them
	EdgeSynonym                         // entity–entity, weight = cosine
	EdgeEntityChunk                     // entity–chunk, weight 1 (a mention, or a fact stated by the chunk)
	EdgeHyperedgeEntity                 // hyperedge–entity, weight 1
	EdgeHyperedgeChunk                  // hyperedge–chunk, weight 1
	numEdgeTypes
)

var edgeTypeNames = [...]string{"fact", "synonym", "entity-chunk", "hyperedge-entity", "hyperedge-chunk"}

func (t EdgeType) String() string {
	if int(t) < len(edgeTypeNames) {
		return edgeTypeNames[t]
	}
	return fmt.Sprintf("edge(%d)", uint8(t))
}

// EdgeSet is a set of edge types.
type EdgeSet uint8

// Edges returns the set of the given types.
func Edges(types ...EdgeType) EdgeSet {
	var s EdgeSet
	for _, t := range types {
		s |= 1 << t
	}
	return s
}

// Has reports whether t is in the set.
func (s EdgeSet) Has(t EdgeType) bool { return s&(1<<t) != 0 }

// Common edge sets.
var (
	// EntityGraph holds the entity–entity edges CrossAug walks on.
	EntityGraph = Edges(EdgeFact, EdgeSynonym)
	// HippoGraph is HippoRAG 2's graph: entities and passages.
	HippoGraph = Edges(EdgeFact, EdgeSynonym, EdgeEntityChunk)
	// HyperGraph is HyperGraphRAG's tripartite entity/hyperedge/chunk graph.
	HyperGraph = Edges(EdgeEntityChunk, EdgeHyperedgeEntity, EdgeHyperedgeChunk)
)

// NodeSpace numbers the nodes of a graph view: entities first, then chunks, then
// hyperedges; a kind absent from the view has a zero-sized block.
type NodeSpace struct {
	Entities, Chunks, Hyperedges int
}

// N returns the number of nodes.
func (ns NodeSpace) N() int { return ns.Entities + ns.Chunks + ns.Hyperedges }

// Entity returns the node of entity i.
func (ns NodeSpace) Entity(i int32) int32 { return i }

// Chunk returns the node of chunk i.
func (ns NodeSpace) Chunk(i int32) int32 { return int32(ns.Entities) + i }

// Hyperedge returns the node of hyperedge i.
func (ns NodeSpace) Hyperedge(i int32) int32 { return int32(ns.Entities+ns.Chunks) + i }

// Kind returns the kind and the record position of node v.
func (ns NodeSpace) Kind(v int32) (NodeKind, int32) {
	switch {
	case int(v) < ns.Entities:
		return KindEntity, v
	case int(v) < ns.Entities+ns.Chunks:
		return KindChunk, v - int32(ns.Entities)
	default:
		return KindHyperedge, v - int32(ns.Entities+ns.Chunks)
	}
}

// Space returns the node space that holds every endpoint of the edge types in set.
func (ix *Index) Space(set EdgeSet) NodeSpace {
	var ns NodeSpace
	if set.Has(EdgeFact) || set.Has(EdgeSynonym) || set.Has(EdgeEntityChunk) || set.Has(EdgeHyperedgeEntity) {
		ns.Entities = len(ix.Entities)
	}
	if set.Has(EdgeEntityChunk) || set.Has(EdgeHyperedgeChunk) {
		ns.Chunks = len(ix.Chunks)
	}
	if set.Has(EdgeHyperedgeEntity) || set.Has(EdgeHyperedgeChunk) {
		ns.Hyperedges = len(ix.Hyperedges)
	}
	return ns
}

// TypedEdge is an undirected derived edge between two nodes of a NodeSpace.
type TypedEdge struct {
	U, V   int32
	Type   EdgeType
	Weight float32
}

// EntityChunks returns, for every entity, the ascending chunks it occurs in: its
// mentions and the chunks of the facts it is subject or object of.
// The lists share one array, filled after counting (a list per entity grown by
// appends was most of a cold query's graph building); each has its own capacity, so
// appending to one never writes into the next.
func (ix *Index) EntityChunks() [][]int32 {
	n := len(ix.Entities)
	end := make([]int, n+1) // end[e+1]: where entity e's list ends, once summed
	for _, m := range ix.Mentions {
		end[m.Entity+1]++
	}
	for _, f := range ix.Facts {
		end[f.Subject+1] += len(f.Chunks)
		end[f.Object+1] += len(f.Chunks)
	}
	for e := range n {
		end[e+1] += end[e]
	}
	flat := make([]int32, end[n])
	fill := end[:n] // fill[e]: the next free slot of entity e, from its start
	put := func(e int32, cs ...int32) { fill[e] += copy(flat[fill[e]:], cs) }
	for _, m := range ix.Mentions {
		put(m.Entity, m.Chunk)
	}
	for _, f := range ix.Facts {
		put(f.Subject, f.Chunks...)
		put(f.Object, f.Chunks...)
	}
	// Every fill[e] is now the end of e's list: e's list starts at the end of e-1's.
	out := make([][]int32, n)
	start := 0
	for e := range out {
		cs := flat[start:fill[e]]
		start = fill[e]
		if len(cs) == 0 {
			continue
		}
		slices.Sort(cs)
		cs = slices.Compact(cs)
		out[e] = cs[:len(cs):len(cs)]
	}
	return out
}

// TypedEdges derives the undirected edges of the types in set, one per node pair and
// type, in a deterministic order, numbered in ix.Space(set). Facts joining the same two
// entities (in either direction, any predicate) merge into one fact edge whose weight is
// their summed support; self-loops are dropped.
func (ix *Index) TypedEdges(set EdgeSet) ([]TypedEdge, NodeSpace) {
	ns := ix.Space(set)
	// Count the edges first: the list is allocated once, at its size.
	size := 0
	if set.Has(EdgeFact) {
		size += len(ix.Facts)
	}
	if set.Has(EdgeSynonym) {
		size += len(ix.Synonyms)
	}
	var entChunks [][]int32
	if set.Has(EdgeEntityChunk) {
		entChunks = ix.EntityChunks()
		for _, cs := range entChunks {
			size += len(cs)
		}
	}
	if set.Has(EdgeHyperedgeEntity) || set.Has(EdgeHyperedgeChunk) {
		for _, he := range ix.Hyperedges {
			if set.Has(EdgeHyperedgeEntity) {
				size += len(he.Entities)
			}
			if set.Has(EdgeHyperedgeChunk) {
				size += len(he.Chunks)
			}
		}
	}
	out := make([]TypedEdge, 0, size)
	if set.Has(EdgeFact) {
		pair := make(map[[2]int32]int, len(ix.Facts))
		for _, f := range ix.Facts {
			u, v := f.Subject, f.Object
			if u == v {
				continue
			}
			if u > v {
				u, v = v, u
			}
			if j, ok := pair[[2]int32{u, v}]; ok {
				out[j].Weight += f.Weight
				continue
			}
			pair[[2]int32{u, v}] = len(out)
			out = append(out, TypedEdge{U: ns.Entity(u), V: ns.Entity(v), Type: EdgeFact, Weight: f.Weight})
		}
	}
	if set.Has(EdgeSynonym) {
		for _, s := range ix.Synonyms {
			out = append(out, TypedEdge{U: ns.Entity(s.A), V: ns.Entity(s.B), Type: EdgeSynonym, Weight: s.Cosine})
		}
	}
	if set.Has(EdgeEntityChunk) {
		for e, cs := range entChunks {
			for _, c := range cs {
				out = append(out, TypedEdge{U: ns.Entity(int32(e)), V: ns.Chunk(c), Type: EdgeEntityChunk, Weight: 1})
			}
		}
	}
	if set.Has(EdgeHyperedgeEntity) || set.Has(EdgeHyperedgeChunk) {
		for h, he := range ix.Hyperedges {
			if set.Has(EdgeHyperedgeEntity) {
				for _, e := range he.Entities {
					out = append(out, TypedEdge{U: ns.Hyperedge(int32(h)), V: ns.Entity(e), Type: EdgeHyperedgeEntity, Weight: 1})
				}
			}
			if set.Has(EdgeHyperedgeChunk) {
				for _, c := range he.Chunks {
					out = append(out, TypedEdge{U: ns.Hyperedge(int32(h)), V: ns.Chunk(c), Type: EdgeHyperedgeChunk, Weight: 1})
				}
			}
		}
	}
	return out, ns
}

// WeightFunc maps a derived edge to the weight a kernel should see; returning 0
// leaves the edge out.
type WeightFunc func(e TypedEdge) float32

// Adjacency returns the undirected weighted CSR view of the edge types in set, with
// weights from w (nil keeps the derived weights), and the node space it is numbered in.
func (ix *Index) Adjacency(set EdgeSet, w WeightFunc) (*kernels.CSR, NodeSpace, error) {
	edges, ns := ix.TypedEdges(set)
	list := make([]kernels.Edge, 0, len(edges))
	for _, e := range edges {
		wt := e.Weight
		if w != nil {
			wt = w(e)
		}
		list = append(list, kernels.Edge{U: e.U, V: e.V, Weight: wt})
	}
	csr, err := kernels.NewSymmetricCSR(ns.N(), list)
	if err != nil {
		return nil, ns, fmt.Errorf("graphio: adjacency: %w", err)
	}
	return csr, ns, nil
}
