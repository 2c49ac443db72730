package retrieve

import (
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kernels"
)

// sparseOf returns the compressed rows to score m from when at most
// graphio.SparseDensity of its entries are non-zero: its own when it is held in them,
// a compressed copy of a dense matrix (an index written before format v2). It returns
// nil for a denser matrix, which is scored with the SIMD dense kernel whatever its
// storage, so that scores do not depend on how a matrix is stored. The built-in
// hashed embedder gives names and facts a few dozen non-zeros out of 768, so their
// dot products cost a tenth of a dense pass.
func sparseOf(m *graphio.Embedding) *graphio.SparseRows {
	switch {
	case m == nil:
		return nil
	case m.Sparse == nil:
		return m.Compact().Sparse // nil when too dense: Compact counts the non-zeros once
	case m.Density() > graphio.SparseDensity:
		return nil
	}
	return m.Sparse
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
	s.sparseOnce[k].Do(func() {
		s.sparse[k] = sparseOf(m)
		// A matrix stored in compressed rows but too dense to be scored from them (the
		// hashed embedder's passages) is expanded once for the SIMD kernel: expanding
		// rows at every query cost 3.5× the dense pass.
		s.dense[k] = m.Data
		if s.sparse[k] == nil && m.Sparse != nil {
			s.dense[k] = m.Dense()
		}
	})
	out := make([]float32, m.Rows())
	if sp := s.sparse[k]; sp != nil {
		sparseDots(sp, q, out)
		return out
	}
	d := s.dense[k]
	for i := range out {
		out[i] = kernels.Dot(d[i*m.Dim:(i+1)*m.Dim], q)
	}
	return out
}
