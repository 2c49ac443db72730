package kernels

import (
	"fmt"
	"math"
)

// CheckSymmetric reports whether c is the adjacency of an undirected graph in the form
// [NewSymmetricCSR] builds: every row sorted by strictly increasing column, and every
// entry (u,v,w) matched by an entry (v,u,w') with |w−w'| ≤ relTol·max(w,w').
//
// Kernels that pull messages along rows (PPR) rely on this to read row v as the
// in-edges of v. It costs one transpose (O(N+nnz) time and memory). It assumes
// c.Validate() passed.
func (c *CSR) CheckSymmetric(relTol float64) error {
	for u := 0; u < c.N; u++ {
		for p := c.RowPtr[u] + 1; p < c.RowPtr[u+1]; p++ {
			if c.Col[p] <= c.Col[p-1] {
				return fmt.Errorf("kernels: csr: row %d is not sorted by strictly increasing column at entry %d (%d after %d)",
					u, p, c.Col[p], c.Col[p-1])
			}
		}
	}
	// Transpose by counting sort: row v of the transpose lists the u with an entry
	// (u,v) in increasing u, so for a sorted symmetric matrix it equals row v of c.
	fill := make([]int32, c.N)
	copy(fill, c.RowPtr[:c.N])
	tcol := make([]int32, len(c.Col))
	tval := make([]float32, len(c.Val))
	for u := 0; u < c.N; u++ {
		for p := c.RowPtr[u]; p < c.RowPtr[u+1]; p++ {
			v := c.Col[p]
			q := fill[v]
			if q >= c.RowPtr[v+1] {
				return fmt.Errorf("kernels: csr: not symmetric: node %d has more in-entries than its row has entries", v)
			}
			tcol[q], tval[q] = int32(u), c.Val[p]
			fill[v]++
		}
	}
	for v := 0; v < c.N; v++ {
		for p := c.RowPtr[v]; p < c.RowPtr[v+1]; p++ {
			if tcol[p] != c.Col[p] {
				return fmt.Errorf("kernels: csr: not symmetric: entry (%d,%d) has no mirror (%d,%d)",
					v, c.Col[p], c.Col[p], v)
			}
			a, b := float64(c.Val[p]), float64(tval[p])
			if math.Abs(a-b) > relTol*math.Max(a, b) {
				return fmt.Errorf("kernels: csr: not symmetric: entry (%d,%d) has weight %v but (%d,%d) has %v",
					v, c.Col[p], a, c.Col[p], v, b)
			}
		}
	}
	return nil
}
