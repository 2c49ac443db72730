package retrieve

import (
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kernels"
)

// sparseOf returns the compressed rows of m: its own when it is held in them, a
// compressed copy when it is dense with at most graphio.SparseDensity non-zeros (an
// index written before format v2), or nil when m is too dense for them to pay. The
// built-in hashed embedder gives names and facts a few dozen non-zeros out of 768, so
// their dot products cost a tenth of a dense pass.
func sparseOf(m *graphio.Embedding) *graphio.SparseRows {
	if m == nil {
		return nil
	}
	return m.Compact().Sparse
}

// sparseDots writes dot(q, row) for every row of s into out.
func sparseDots(s *graphio.SparseRows, q, out []float32) {
	for i := range out {
		var acc float32
		for k := s.Ptr[i]; k < s.Ptr[i+1]; k++ {
			acc += s.Val[k] * q[s.Idx[k]]
		}
		out[i] = acc
	}
}

// scores returns dot(q, row) for every row of the matrix of kind k: from the
// compressed rows when the matrix is sparse, with the SIMD dense kernel otherwise.
func (s *Searcher) scores(k graphio.NodeKind, q []float32) []float32 {
	m := s.ix.Embeddings[k]
	if m == nil {
		return nil
	}
	s.sparseOnce[k].Do(func() { s.sparse[k] = sparseOf(m) })
	out := make([]float32, m.Rows())
	if sp := s.sparse[k]; sp != nil {
		sparseDots(sp, q, out)
		return out
	}
	for i := range out {
		out[i] = kernels.Dot(m.Row(i), q)
	}
	return out
}
