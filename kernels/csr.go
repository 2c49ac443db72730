package kernels

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// CSR is a weighted sparse adjacency matrix in compressed-sparse-row form.
//
// Row u holds the neighbours of node u: Col[RowPtr[u]:RowPtr[u+1]] with weights
// Val[RowPtr[u]:RowPtr[u+1]], sorted by column. Graph kernels in this package treat a
// CSR built by [NewSymmetricCSR] as an undirected graph with igraph's semantics: every
// undirected edge {u,v} appears in both rows, parallel edges are summed, and a node's
// strength is the sum of its row.
type CSR struct {
	N      int       // number of nodes (rows and columns)
	RowPtr []int32   // len N+1
	Col    []int32   // len nnz, column (neighbour) of each entry
	Val    []float32 // len nnz, weight of each entry
}

// Edge is one weighted edge of an edge list.
type Edge struct {
	U, V   int32
	Weight float32
}

// NNZ returns the number of stored entries.
func (c *CSR) NNZ() int { return len(c.Col) }

// Strength returns the weighted degree of every node (sum of its row).
func (c *CSR) Strength() []float64 {
	s := make([]float64, c.N)
	for u := 0; u < c.N; u++ {
		var acc float64
		for p := c.RowPtr[u]; p < c.RowPtr[u+1]; p++ {
			acc += float64(c.Val[p])
		}
		s[u] = acc
	}
	return s
}

// Validate checks the structural invariants of c and returns a descriptive error
// if any is violated. Kernels call it before trusting externally built matrices.
func (c *CSR) Validate() error {
	if c.N < 0 {
		return fmt.Errorf("kernels: csr: negative node count %d", c.N)
	}
	if len(c.RowPtr) != c.N+1 {
		return fmt.Errorf("kernels: csr: row pointer has %d entries, want %d", len(c.RowPtr), c.N+1)
	}
	if c.RowPtr[0] != 0 || int(c.RowPtr[c.N]) != len(c.Col) || len(c.Col) != len(c.Val) {
		return fmt.Errorf("kernels: csr: row pointer ends %d..%d do not match %d columns / %d values",
			c.RowPtr[0], c.RowPtr[c.N], len(c.Col), len(c.Val))
	}
	for u := 0; u < c.N; u++ {
		if c.RowPtr[u] > c.RowPtr[u+1] {
			return fmt.Errorf("kernels: csr: row %d has negative length", u)
		}
	}
	for p, v := range c.Col {
		if v < 0 || int(v) >= c.N {
			return fmt.Errorf("kernels: csr: entry %d points to node %d outside [0,%d)", p, v, c.N)
		}
		if w := c.Val[p]; !(w >= 0) {
			return fmt.Errorf("kernels: csr: entry %d has weight %v; weights must be non-negative", p, w)
		}
	}
	return nil
}

// NewSymmetricCSR builds the undirected adjacency of n nodes from an edge list.
//
// Each edge {U,V} is stored in row U and in row V; parallel edges (in either
// direction) are summed into one entry, as igraph's strength and PageRank treat them.
// A self-loop {u,u} is stored once in row u with twice its weight, matching igraph's
// undirected convention that a loop adds 2·w to the strength. Edges with weight 0 are
// kept out. It returns an error for an endpoint outside [0,n) or a negative or NaN weight.
func NewSymmetricCSR(n int, edges []Edge) (*CSR, error) {
	if n < 0 || n > math.MaxInt32-1 {
		return nil, fmt.Errorf("kernels: csr: node count %d outside [0, 2³¹−1) (int32 indices)", n)
	}
	type entry struct {
		col int32
		w   float32
	}
	deg := make([]int32, n+1)
	var stored int64 // entries the matrix will hold: RowPtr and the degrees are int32
	for i, e := range edges {
		if e.U < 0 || int(e.U) >= n || e.V < 0 || int(e.V) >= n {
			return nil, fmt.Errorf("kernels: csr: edge %d (%d,%d) outside [0,%d)", i, e.U, e.V, n)
		}
		if !(e.Weight >= 0) {
			return nil, fmt.Errorf("kernels: csr: edge %d (%d,%d) has weight %v; weights must be non-negative", i, e.U, e.V, e.Weight)
		}
		if e.Weight == 0 {
			continue
		}
		if stored += 2; e.U == e.V {
			stored-- // a self-loop is stored once
		}
		if stored > math.MaxInt32 {
			return nil, fmt.Errorf("kernels: csr: %d edges give more than 2³¹−1 stored entries (int32 indices)", len(edges))
		}
		deg[e.U+1]++
		if e.U != e.V {
			deg[e.V+1]++
		}
	}
	for u := 0; u < n; u++ {
		deg[u+1] += deg[u]
	}
	tmp := make([]entry, deg[n])
	fill := make([]int32, n)
	copy(fill, deg[:n])
	for _, e := range edges {
		if e.Weight == 0 {
			continue
		}
		if e.U == e.V {
			tmp[fill[e.U]] = entry{e.V, 2 * e.Weight}
			fill[e.U]++
			continue
		}
		tmp[fill[e.U]] = entry{e.V, e.Weight}
		fill[e.U]++
		tmp[fill[e.V]] = entry{e.U, e.Weight}
		fill[e.V]++
	}
	c := &CSR{N: n, RowPtr: make([]int32, n+1)}
	c.Col = make([]int32, 0, len(tmp))
	c.Val = make([]float32, 0, len(tmp))
	for u := 0; u < n; u++ {
		row := tmp[deg[u]:deg[u+1]]
		slices.SortFunc(row, func(a, b entry) int { return cmp.Compare(a.col, b.col) }) // sort.Slice allocated per row
		for i := 0; i < len(row); {
			j, w := i, float64(0)
			for ; j < len(row) && row[j].col == row[i].col; j++ {
				w += float64(row[j].w)
			}
			c.Col = append(c.Col, row[i].col)
			c.Val = append(c.Val, float32(w))
			i = j
		}
		c.RowPtr[u+1] = int32(len(c.Col))
	}
	return c, nil
}
