package retrieve

import (
	"runtime"
	"slices"
	"sync"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kernels"
)

// sparseOf returns the compressed rows to score m from when at most
// graphio.SparseDensity of its entries are non-zero: its own when it is held in them,
// a compressed copy of a dense matrix (an index written before format v2). It returns
// nil for a denser matrix, which is scored with the SIMD dense kernel whatever its
// storage, so that scores do not depend on how a matrix is stored.
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

// sparseDots writes dot(q, row) for every row of s into out, in row ranges on all
// cores for a large matrix (each row's sum in the same order).
func sparseDots(s *graphio.SparseRows, q, out []float32) {
	inRanges(len(out), scoreWorkers(int64(len(s.Idx))), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			var acc float32
			for k := s.Ptr[i]; k < s.Ptr[i+1]; k++ {
				acc += float32(s.Val[k] * q[s.Idx[k]]) // rounded, never fused: dots' bits
			}
			out[i] = acc
		}
	})
}

// expandAfter is how many queries a searcher answers before it gives a matrix the
// form that is fastest over many queries (expand): a sparse matrix is then also held
// by columns, and one stored in compressed rows but too dense to score from them
// (more than graphio.SparseDensity non-zeros: no writer of this version stores one),
// scored a row at a time until then, gets a dense copy. A one-off query never pays
// for either — building the columns reads every non-zero and allocates 8 bytes for
// each, more than a hundred row-at-a-time passes cost a cold process — while a server
// or an evaluation amortises them at once. Every form gives the same sums, bit for
// bit. At 120K passages (hashed embedder) the columns of the passages (46 % non-zero)
// take 340 MB and score a question in 7–11 ms against 21 ms from a dense copy
// (368 MB), and those of the hyperedges (26 %) 590 MB, halving hyperppr's p50
// (280 → 149 ms) against expanding every row in turn.
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
// q's zeros, which add nothing: the same float32 sums, bit for bit. Each column is
// added by kernels.AddScaledAt (AVX-512 gather–add–scatter, 120K passages: 1.1–1.3 →
// 0.68 ns an entry; on AVX2 gathers and lane-by-lane stores). A large matrix is
// scored in row ranges on all cores (each range finds its part of every column by
// binary search), with the same sums.
func (c *sparseCols) dots(q, out []float32) {
	nz, work := c.nonZero(q)
	c.dotsOn(q, nz, out, scoreWorkers(work))
}

// nonZero returns q's non-zero coordinates, increasing, and the entries of their
// columns.
func (c *sparseCols) nonZero(q []float32) (nz []int, work int64) {
	for j, w := range q {
		if w != 0 {
			nz = append(nz, j)
			work += c.ptr[j+1] - c.ptr[j]
		}
	}
	return nz, work
}

// dotsOn is dots over q's non-zero coordinates nz on the given number of goroutines.
func (c *sparseCols) dotsOn(q []float32, nz []int, out []float32, workers int) {
	inRanges(len(out), workers, func(lo, hi int) {
		clear(out[lo:hi])
		for _, j := range nz {
			rows, vals := c.row[c.ptr[j]:c.ptr[j+1]], c.val[c.ptr[j]:c.ptr[j+1]]
			k0, k1 := 0, len(rows)
			if lo > 0 {
				k0, _ = slices.BinarySearch(rows, int32(lo))
			}
			if hi < len(out) {
				k1, _ = slices.BinarySearch(rows, int32(hi))
			}
			kernels.AddScaledAt(out, rows[k0:k1], vals[k0:k1], q[j])
		}
	})
}

// parallelScoreWork is the least number of multiply-adds a scoring pass splits over
// the cores: below it, starting goroutines costs more than it saves.
const parallelScoreWork = 1 << 18

// scoreWorkers is the number of goroutines for a scoring pass of work multiply-adds.
func scoreWorkers(work int64) int {
	if work < parallelScoreWork {
		return 1
	}
	return runtime.GOMAXPROCS(0)
}

// denseDots writes dot(q, row i) for every row of the row-major d into out, in row
// ranges on workers goroutines (a pass over 120K passages streams 368 MB, which one
// core cannot read at the machine's bandwidth).
func denseDots(d []float32, dim int, q, out []float32, workers int) {
	inRanges(len(out), workers, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			out[i] = kernels.Dot(d[i*dim:(i+1)*dim], q)
		}
	})
}

// inRanges calls f on workers contiguous ranges covering [0, n), concurrently, and
// waits for them.
func inRanges(n, workers int, f func(lo, hi int)) {
	workers = max(1, min(workers, n))
	if workers == 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(w*n/workers, (w+1)*n/workers)
		}()
	}
	wg.Wait()
}

// scores returns dot(q, row) for every row of the matrix of kind k: from the
// compressed rows when the matrix is sparse, with the SIMD dense kernel otherwise.
// After expandAfter queries (or Warm) a sparse matrix is also held by columns and
// scored through the query's non-zero coordinates, with the same sums.
func (s *Searcher) scores(sc *scratch, k graphio.NodeKind, q []float32) []float32 {
	m := s.ix.Embeddings[k]
	if m == nil {
		return nil
	}
	s.sparseOnce[k].Do(func() { s.sparse[k] = sparseOf(m) })
	out := sc.f32(m.Rows())
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
		denseDots(d, m.Dim, q, out, scoreWorkers(int64(len(d))))
		return out
	}
	rowDots(m, q, out, scoreWorkers(int64(m.Rows())*int64(m.Dim)))
	return out
}

// rowDots writes dot(q, row i) for every row of m into out, each row expanded into a
// dense buffer (one per goroutine, in the cache) and scored with the SIMD dense
// kernel: the bits denseDots gives, read from m's own storage.
func rowDots(m *graphio.Embedding, q, out []float32, workers int) {
	inRanges(len(out), workers, func(lo, hi int) {
		row := make([]float32, m.Dim)
		for i := lo; i < hi; i++ {
			out[i] = kernels.Dot(m.RowInto(i, row), q)
		}
	})
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
		} else if m.Sparse != nil {
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
