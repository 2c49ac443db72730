package graphio

import (
	"errors"
	"fmt"
	"slices"
)

// SparseStorageDensity is the largest share of non-zero entries at which a matrix is
// smaller in compressed rows (6 bytes a non-zero) than dense (4 bytes an entry), with
// a margin: 0.5 rather than 2/3.
const SparseStorageDensity = 0.5

// SparseDensity is the largest share of non-zero entries at which a matrix is scored
// from its compressed rows — a row at a time, or through a query's non-zero
// coordinates once held by columns — and Compact compresses a dense one. It equals
// SparseStorageDensity, so every matrix the writer keeps in compressed rows is scored
// from them: the built-in hashed embedder gives a name or a fact a few dozen
// non-zeros out of 768 coordinates (4–11 %), a sentence or a passage a few hundred
// (25–50 %), and a question about 200 (25 %), so a pass through the question's
// coordinates reads a quarter of the non-zeros, a fraction of a dense pass.
const SparseDensity = SparseStorageDensity

// Embedding is a float32 matrix with one row per node of a kind, held either dense
// (Data, row-major) or in compressed rows (Sparse) — never both. Dense is the natural
// form of a neural embedder's vectors; compressed rows that of the built-in hashed
// embedder's, which they hold in a tenth of the memory and decode ten times faster.
// Both forms give the same rows, value for value.
type Embedding struct {
	Dim  int
	Data []float32 // dense rows, len = rows × Dim; nil when Sparse is set
	// Sparse holds the rows in compressed form instead of Data.
	Sparse *SparseRows
}

// SparseRows is a matrix in compressed-row form: row i's non-zeros are at the
// coordinates Idx[Ptr[i]:Ptr[i+1]] (strictly increasing) with values
// Val[Ptr[i]:Ptr[i+1]].
type SparseRows struct {
	Ptr []int64 // len = rows + 1, Ptr[0] = 0
	Idx []uint16
	Val []float32
}

// NewSparseEmbedding returns an empty compressed-row matrix of dimension dim
// (at most 65,536), ready for AppendDense.
func NewSparseEmbedding(dim int) *Embedding {
	return &Embedding{Dim: dim, Sparse: &SparseRows{Ptr: []int64{0}}}
}

// Rows returns the number of rows.
func (e *Embedding) Rows() int {
	switch {
	case e == nil || e.Dim == 0:
		return 0
	case e.Sparse != nil:
		return len(e.Sparse.Ptr) - 1
	}
	return len(e.Data) / e.Dim
}

// Row returns row i: a slice aliasing the matrix when it is dense, a new dense copy when
// it is sparse (see RowInto to reuse a buffer).
func (e *Embedding) Row(i int) []float32 {
	if e.Sparse == nil {
		return e.Data[i*e.Dim : (i+1)*e.Dim]
	}
	return e.RowInto(i, make([]float32, e.Dim))
}

// AppendRow appends row i to dst, without an intermediate copy for a sparse matrix.
func (e *Embedding) AppendRow(dst []float32, i int) []float32 {
	if e.Sparse == nil {
		return append(dst, e.Data[i*e.Dim:(i+1)*e.Dim]...)
	}
	n := len(dst)
	dst = slices.Grow(dst, e.Dim)[:n+e.Dim]
	e.RowInto(i, dst[n:])
	return dst
}

// RowInto writes row i into dst (len ≥ Dim) and returns dst[:Dim].
func (e *Embedding) RowInto(i int, dst []float32) []float32 {
	dst = dst[:e.Dim]
	if e.Sparse == nil {
		copy(dst, e.Data[i*e.Dim:(i+1)*e.Dim])
		return dst
	}
	clear(dst)
	s := e.Sparse
	for k := s.Ptr[i]; k < s.Ptr[i+1]; k++ {
		dst[s.Idx[k]] = s.Val[k]
	}
	return dst
}

// Dense returns every row in row-major order: Data itself for a dense matrix, a new
// dense copy for a sparse one.
func (e *Embedding) Dense() []float32 {
	if e.Sparse == nil {
		return e.Data
	}
	out := make([]float32, e.Rows()*e.Dim)
	for i := range e.Rows() {
		e.RowInto(i, out[i*e.Dim:])
	}
	return out
}

// AppendDense appends one dense row (len = Dim) to the matrix, in its form.
func (e *Embedding) AppendDense(row []float32) {
	if e.Sparse == nil {
		e.Data = append(e.Data, row...)
		return
	}
	s := e.Sparse
	for j, v := range row {
		if v != 0 {
			s.Idx = append(s.Idx, uint16(j))
			s.Val = append(s.Val, v)
		}
	}
	s.Ptr = append(s.Ptr, int64(len(s.Idx)))
}

// ConcatSparse returns the rows of parts (compressed-row matrices of dimension dim),
// in order, as one matrix whose arrays are allocated once at their final size; each
// part is released (set to nil) once copied. Building a large matrix this way, a
// batch at a time, peaks at twice its size, where appending row by row peaks at three
// times (a doubling copy holds the old and the new array).
func ConcatSparse(dim int, parts []*Embedding) *Embedding {
	rows, nnz := 0, 0
	for _, p := range parts {
		rows += p.Rows()
		nnz += len(p.Sparse.Idx)
	}
	s := &SparseRows{Ptr: make([]int64, 1, rows+1), Idx: make([]uint16, 0, nnz), Val: make([]float32, 0, nnz)}
	for i, p := range parts {
		base := int64(len(s.Idx))
		s.Idx = append(s.Idx, p.Sparse.Idx...)
		s.Val = append(s.Val, p.Sparse.Val...)
		for _, q := range p.Sparse.Ptr[1:] {
			s.Ptr = append(s.Ptr, base+q)
		}
		parts[i] = nil
	}
	return &Embedding{Dim: dim, Sparse: s}
}

// Append appends the rows of o (same Dim, either form) to the matrix, in its form.
func (e *Embedding) Append(o *Embedding) {
	if e.Sparse != nil && o.Sparse != nil {
		s, base := e.Sparse, int64(len(e.Sparse.Idx))
		s.Idx = append(s.Idx, o.Sparse.Idx...)
		s.Val = append(s.Val, o.Sparse.Val...)
		for _, p := range o.Sparse.Ptr[1:] {
			s.Ptr = append(s.Ptr, base+p)
		}
		return
	}
	if e.Sparse == nil && o.Sparse == nil {
		e.Data = append(e.Data, o.Data...)
		return
	}
	buf := make([]float32, o.Dim)
	for i := range o.Rows() {
		e.AppendDense(o.RowInto(i, buf))
	}
}

// KeepAppend returns a new matrix, in e's form, of e's rows for which keep is true
// followed by the rows of add (nil: none), in fresh arrays of exactly that size: e is
// read, never written (it may be a mapped file's, see Index.ReleaseMapped).
func (e *Embedding) KeepAppend(keep func(i int) bool, add *Embedding) *Embedding {
	rows, addRows := e.Rows(), 0
	if add != nil {
		addRows = add.Rows()
	}
	if e.Sparse == nil {
		kept := 0
		for i := range rows {
			if keep(i) {
				kept++
			}
		}
		out := &Embedding{Dim: e.Dim, Data: make([]float32, 0, (kept+addRows)*e.Dim)}
		for i := range rows {
			if keep(i) {
				out.Data = append(out.Data, e.Data[i*e.Dim:(i+1)*e.Dim]...)
			}
		}
		if add != nil {
			out.Append(add)
		}
		return out
	}
	s := e.Sparse
	kept, nnz := 0, int64(0)
	for i := range rows {
		if keep(i) {
			kept++
			nnz += s.Ptr[i+1] - s.Ptr[i]
		}
	}
	if add != nil && add.Sparse != nil {
		nnz += int64(len(add.Sparse.Idx))
	}
	o := &SparseRows{Ptr: make([]int64, 1, kept+addRows+1), Idx: make([]uint16, 0, nnz), Val: make([]float32, 0, nnz)}
	for i := range rows {
		if !keep(i) {
			continue
		}
		lo, hi := s.Ptr[i], s.Ptr[i+1]
		o.Idx = append(o.Idx, s.Idx[lo:hi]...)
		o.Val = append(o.Val, s.Val[lo:hi]...)
		o.Ptr = append(o.Ptr, int64(len(o.Idx)))
	}
	out := &Embedding{Dim: e.Dim, Sparse: o}
	if add != nil {
		out.Append(add)
	}
	return out
}

// KeepRows drops the rows for which keep is false.
func (e *Embedding) KeepRows(keep func(i int) bool) {
	if e.Sparse == nil {
		out := e.Data[:0]
		for i := range e.Rows() {
			if keep(i) {
				out = append(out, e.Data[i*e.Dim:(i+1)*e.Dim]...)
			}
		}
		e.Data = out
		return
	}
	s := e.Sparse
	rows := e.Rows()
	n, w := 0, int64(0)
	for i := range rows {
		lo, hi := s.Ptr[i], s.Ptr[i+1]
		if !keep(i) {
			continue
		}
		copy(s.Idx[w:], s.Idx[lo:hi])
		copy(s.Val[w:], s.Val[lo:hi])
		w += hi - lo
		n++
		s.Ptr[n] = w
	}
	s.Ptr, s.Idx, s.Val = s.Ptr[:n+1], s.Idx[:w], s.Val[:w]
}

// Density returns the share of the matrix's entries that are non-zero.
func (e *Embedding) Density() float64 {
	if e.Rows() == 0 {
		return 0
	}
	if e.Sparse != nil {
		return float64(len(e.Sparse.Idx)) / float64(e.Rows()*e.Dim)
	}
	nz := 0
	for _, v := range e.Data {
		if v != 0 {
			nz++
		}
	}
	return float64(nz) / float64(len(e.Data))
}

// Compact returns the matrix in compressed rows when it is dense with at most
// SparseDensity non-zeros and Dim ≤ 65,536, else the matrix itself. The rows are
// unchanged.
func (e *Embedding) Compact() *Embedding {
	if e == nil || e.Sparse != nil || e.Dim == 0 || e.Dim > 1<<16 || len(e.Data) == 0 {
		return e
	}
	nz := 0
	for _, v := range e.Data {
		if v != 0 {
			nz++
		}
	}
	if float64(nz) > SparseDensity*float64(len(e.Data)) {
		return e
	}
	out := NewSparseEmbedding(e.Dim)
	out.Sparse.Idx = make([]uint16, 0, nz)
	out.Sparse.Val = make([]float32, 0, nz)
	for i := range e.Rows() {
		out.AppendDense(e.Data[i*e.Dim : (i+1)*e.Dim])
	}
	return out
}

// validate checks the matrix's internal consistency (not its row count).
func (e *Embedding) validate() error {
	if e.Sparse == nil {
		if len(e.Data)%e.Dim != 0 {
			return fmt.Errorf("%d values are not whole rows of %d", len(e.Data), e.Dim)
		}
		return nil
	}
	if e.Data != nil {
		return errors.New("both dense and sparse rows")
	}
	if e.Dim > 1<<16 {
		return fmt.Errorf("sparse rows of dimension %d (at most 65536)", e.Dim)
	}
	s := e.Sparse
	if len(s.Ptr) == 0 || s.Ptr[0] != 0 || len(s.Idx) != len(s.Val) || s.Ptr[len(s.Ptr)-1] != int64(len(s.Idx)) {
		return fmt.Errorf("sparse rows: %d row pointers for %d indices and %d values", len(s.Ptr), len(s.Idx), len(s.Val))
	}
	for i := range len(s.Ptr) - 1 {
		lo, hi := s.Ptr[i], s.Ptr[i+1]
		if hi < lo {
			return fmt.Errorf("sparse row %d ends before it starts", i)
		}
		for k := lo; k < hi; k++ {
			if int(s.Idx[k]) >= e.Dim || k > lo && s.Idx[k] <= s.Idx[k-1] {
				return fmt.Errorf("sparse row %d: coordinates not increasing below %d", i, e.Dim)
			}
		}
	}
	return nil
}
