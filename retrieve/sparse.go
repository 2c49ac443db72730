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

// expandAfter is how many queries score a matrix stored in compressed rows but too
// dense to be scored from them (the hashed embedder's passages) one row at a time
// before the searcher expands it once into a dense copy. A one-off query never pays
// for the copy — allocating and filling it costs a cold process more than a hundred
// row-at-a-time passes (2Wiki: 19 MB, ≈ 0.2 s of page faults on a small VM) and it is
// the largest piece of a query process's memory at scale (120K passages: 368 MB) —
// while a server or an evaluation amortises it at once. Both ways run the same dense
// kernel on the same rows, so the scores are the same bits.
const expandAfter = 16

// scores returns dot(q, row) for every row of the matrix of kind k: from the
// compressed rows when the matrix is sparse, with the SIMD dense kernel otherwise.
func (s *Searcher) scores(k graphio.NodeKind, q []float32) []float32 {
	m := s.ix.Embeddings[k]
	if m == nil {
		return nil
	}
	s.sparseOnce[k].Do(func() {
		s.sparse[k] = sparseOf(m)
		if s.sparse[k] == nil && m.Sparse == nil {
			s.dense[k] = m.Data
		}
	})
	out := make([]float32, m.Rows())
	if sp := s.sparse[k]; sp != nil {
		sparseDots(sp, q, out)
		return out
	}
	if s.sparse[k] == nil && m.Sparse != nil && s.denseQueries[k].Add(1) > expandAfter {
		s.expand(k)
	}
	if d := s.denseRows(k); d != nil {
		for i := range out {
			out[i] = kernels.Dot(d[i*m.Dim:(i+1)*m.Dim], q)
		}
		return out
	}
	row := make([]float32, m.Dim) // one row at a time, in the cache
	for i := range out {
		out[i] = kernels.Dot(m.RowInto(i, row), q)
	}
	return out
}

// expand makes the dense copy of a matrix of kind k stored in compressed rows.
func (s *Searcher) expand(k graphio.NodeKind) {
	s.expandOnce[k].Do(func() {
		d := s.ix.Embeddings[k].Dense()
		s.denseMu.Lock()
		s.dense[k] = d
		s.denseMu.Unlock()
	})
}

// denseRows returns the rows of kind k in row-major order if they are at hand dense.
func (s *Searcher) denseRows(k graphio.NodeKind) []float32 {
	s.denseMu.RLock()
	defer s.denseMu.RUnlock()
	return s.dense[k]
}
