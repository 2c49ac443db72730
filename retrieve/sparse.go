package retrieve

import (
	"slices"

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

// expandAfter is how many queries a searcher answers before it gives a matrix the
// form that is fastest over many queries (expand): a sparse matrix is then also held
// by columns, and one stored in compressed rows but too dense to score from them (the
// hashed embedder's passages), scored a row at a time until then, gets a dense copy.
// A one-off query never pays for the copy — allocating and filling it costs a cold
// process more than a hundred row-at-a-time passes (2Wiki: 19 MB, ≈ 0.2 s of page
// faults on a small VM), and it is the largest piece of a query process's memory at
// scale (120K passages: 368 MB) — while a server or an evaluation amortises it at
// once. Every form gives the same sums, bit for bit.
const expandAfter = 16

// sparseCols is a sparse matrix by columns, rows ascending within each, to score it
// through a query's non-zero coordinates only.
type sparseCols struct {
	ptr []int64 // len = dim + 1
	row []int32
	val []float32
}

// columnsOf returns the columns of s (dim coordinates).
func columnsOf(s *graphio.SparseRows, dim int) *sparseCols {
	c := &sparseCols{ptr: make([]int64, dim+1), row: make([]int32, len(s.Idx)), val: make([]float32, len(s.Val))}
	for _, j := range s.Idx {
		c.ptr[j+1]++
	}
	for j := range dim {
		c.ptr[j+1] += c.ptr[j]
	}
	next := slices.Clone(c.ptr[:dim])
	for i := range len(s.Ptr) - 1 {
		for k := s.Ptr[i]; k < s.Ptr[i+1]; k++ {
			j := s.Idx[k]
			c.row[next[j]], c.val[next[j]] = int32(i), s.Val[k]
			next[j]++
		}
	}
	return c
}

// dots writes dot(q, row) for every row into out, visiting only q's non-zero
// coordinates, in increasing order. Each row's products are therefore added in the
// order sparseDots adds them (its rows' coordinates increase), less the products with
// q's zeros, which add nothing: the same float32 sums, bit for bit.
func (c *sparseCols) dots(q, out []float32) {
	clear(out)
	for j, w := range q {
		if w == 0 {
			continue
		}
		rows, vals := c.row[c.ptr[j]:c.ptr[j+1]], c.val[c.ptr[j]:c.ptr[j+1]]
		for k, i := range rows {
			out[i] += vals[k] * w
		}
	}
}

// scores returns dot(q, row) for every row of the matrix of kind k: from the
// compressed rows when the matrix is sparse, with the SIMD dense kernel otherwise.
// After expandAfter queries (or Warm) a sparse matrix is also held by columns and
// scored through the query's non-zero coordinates, with the same sums.
func (s *Searcher) scores(k graphio.NodeKind, q []float32) []float32 {
	m := s.ix.Embeddings[k]
	if m == nil {
		return nil
	}
	s.sparseOnce[k].Do(func() { s.sparse[k] = sparseOf(m) })
	out := make([]float32, m.Rows())
	if (s.sparse[k] != nil || m.Sparse != nil) && s.queries[k].Add(1) > expandAfter {
		s.expand(k)
	}
	if sp := s.sparse[k]; sp != nil {
		if c := s.columns(k); c != nil {
			c.dots(q, out)
		} else {
			sparseDots(sp, q, out)
		}
		return out
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

// expand makes the representation that scores the matrix of kind k fastest over many
// queries: its columns when it is scored sparse, else the dense copy of a matrix
// stored in compressed rows.
func (s *Searcher) expand(k graphio.NodeKind) {
	s.expandOnce[k].Do(func() {
		m := s.ix.Embeddings[k]
		var cols *sparseCols
		var d []float32
		if sp := s.sparse[k]; sp != nil {
			cols = columnsOf(sp, m.Dim)
		} else {
			d = m.Dense()
		}
		s.expandMu.Lock()
		defer s.expandMu.Unlock()
		if cols != nil {
			s.cols[k] = cols
		} else {
			s.dense[k] = d
		}
	})
}

// columns returns the columns of the sparse matrix of kind k once expand made them.
func (s *Searcher) columns(k graphio.NodeKind) *sparseCols {
	s.expandMu.RLock()
	defer s.expandMu.RUnlock()
	return s.cols[k]
}

// denseRows returns the rows of kind k in row-major order if they are at hand dense:
// a dense matrix's own data, or the copy expand made of one in compressed rows.
func (s *Searcher) denseRows(k graphio.NodeKind) []float32 {
	if m := s.ix.Embeddings[k]; m.Sparse == nil {
		return m.Data
	}
	s.expandMu.RLock()
	defer s.expandMu.RUnlock()
	return s.dense[k]
}
