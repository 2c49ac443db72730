package retrieve

import (
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kernels"
)

// sparseDensity is the largest share of non-zero coordinates at which an embedding
// matrix is scored from its non-zeros: the built-in hashed embedder gives names and
// facts a few dozen non-zeros out of 768, so their dot products cost a tenth of a
// dense pass.
const sparseDensity = 0.25

// sparseRows is a compressed-row copy of an embedding matrix.
type sparseRows struct {
	ptr []int32  // row i's entries are idx[ptr[i]:ptr[i+1]]
	idx []uint16 // coordinate
	val []float32
}

// sparseOf returns the compressed rows of m, or nil when m is too dense (or its
// dimension does not fit a uint16) for them to pay.
func sparseOf(m *graphio.Embedding) *sparseRows {
	if m == nil || m.Dim > 1<<16 || len(m.Data) == 0 {
		return nil
	}
	nz := 0
	for _, x := range m.Data {
		if x != 0 {
			nz++
		}
	}
	if float64(nz) > sparseDensity*float64(len(m.Data)) {
		return nil
	}
	s := &sparseRows{ptr: make([]int32, m.Rows()+1), idx: make([]uint16, 0, nz), val: make([]float32, 0, nz)}
	for i := 0; i < m.Rows(); i++ {
		for j, x := range m.Row(i) {
			if x != 0 {
				s.idx = append(s.idx, uint16(j))
				s.val = append(s.val, x)
			}
		}
		s.ptr[i+1] = int32(len(s.idx))
	}
	return s
}

// dots writes dot(q, row) for every row into out.
func (s *sparseRows) dots(q, out []float32) {
	for i := range out {
		var acc float32
		for k := s.ptr[i]; k < s.ptr[i+1]; k++ {
			acc += s.val[k] * q[s.idx[k]]
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
		sp.dots(q, out)
		return out
	}
	for i := range out {
		out[i] = kernels.Dot(m.Row(i), q)
	}
	return out
}
