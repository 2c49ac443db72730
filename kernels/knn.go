package kernels

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"sort"
	"sync"
)

// Neighbor is a row of a matrix and its similarity to a query.
type Neighbor struct {
	Index int32
	Score float32
}

// KNNConfig configures SimilarRows.
type KNNConfig struct {
	K        int     // most neighbours per row (HippoRAG 2's synonym cap: 100)
	MinScore float32 // smallest similarity kept (HippoRAG 2: 0.8)
	// ExactLimit is the most rows searched exactly when the vectors are dense; larger
	// dense matrices use an inverted-file (IVF) index, which is approximate. Sparse
	// matrices are always searched exactly through an inverted index. 0 means 20,000.
	ExactLimit int
	// Probes is how many IVF lists a query scans; 0 means max(8, lists/8).
	Probes  int
	Workers int   // 0 = GOMAXPROCS
	Seed    int64 // IVF k-means initialisation seed
	// From, when > 0, searches only for the rows ≥ From (against every row): the
	// entities an augmentation appended; the lists of earlier rows come back nil.
	From int
}

// SimilarRows finds, for every row i of the row-major n×dim matrix data, the rows j≠i
// with dot(row i, row j) ≥ MinScore, at most K of them, best first. Rows are assumed
// L2-normalised, so scores are cosines. Memory stays O(n·K) beyond the input.
//
// It picks the method by the matrix: an inverted index over non-zero coordinates when
// under a fifth of the entries are non-zero (exact, and fast for the hashed TF-IDF
// vectors of the built-in embedder), blocked brute force for up to ExactLimit dense
// rows (exact), and an IVF index beyond that (approximate; raise Probes for recall).
// Skip, if not nil, marks rows that are neither searched nor returned. With From > 0
// only rows ≥ From are queried, and row i's list is what a full search gives it.
func SimilarRows(data []float32, dim int, skip []bool, cfg KNNConfig) ([][]Neighbor, error) {
	if dim <= 0 || len(data)%dim != 0 {
		return nil, fmt.Errorf("kernels: knn: %d values do not form rows of dimension %d", len(data), dim)
	}
	n := len(data) / dim
	cfg, search, err := knnDefaults(n, skip, cfg)
	if !search {
		return make([][]Neighbor, n), err
	}
	nnz := 0
	for _, v := range data {
		if v != 0 {
			nnz++
		}
	}
	switch {
	case n == 0:
		return nil, nil
	case nnz*5 < len(data) && dim <= 1<<16:
		return similarSparse(data, dim, skip, cfg), nil
	case n <= cfg.ExactLimit:
		return similarDense(data, dim, skip, cfg), nil
	default:
		return similarIVF(data, dim, skip, cfg), nil
	}
}

// topK keeps the best K neighbours seen (a min-heap on score).
type topK struct {
	k  int
	hs []Neighbor
}

func (t *topK) Len() int { return len(t.hs) }
func (t *topK) Less(i, j int) bool {
	if t.hs[i].Score != t.hs[j].Score {
		return t.hs[i].Score < t.hs[j].Score
	}
	return t.hs[i].Index > t.hs[j].Index
}
func (t *topK) Swap(i, j int) { t.hs[i], t.hs[j] = t.hs[j], t.hs[i] }
func (t *topK) Push(x any)    { t.hs = append(t.hs, x.(Neighbor)) }
func (t *topK) Pop() any {
	x := t.hs[len(t.hs)-1]
	t.hs = t.hs[:len(t.hs)-1]
	return x
}

func (t *topK) offer(nb Neighbor) {
	if len(t.hs) < t.k {
		heap.Push(t, nb)
		return
	}
	worst := t.hs[0]
	if nb.Score > worst.Score || nb.Score == worst.Score && nb.Index < worst.Index {
		t.hs[0] = nb
		heap.Fix(t, 0)
	}
}

// sorted returns the kept neighbours best first (ties by index).
func (t *topK) sorted() []Neighbor {
	out := append([]Neighbor(nil), t.hs...)
	sort.Slice(out, func(a, b int) bool {
		if out[a].Score != out[b].Score {
			return out[a].Score > out[b].Score
		}
		return out[a].Index < out[b].Index
	})
	return out
}

// parallelRows runs f over row ranges on cfg.Workers goroutines.
func parallelRows(n, workers, block int, f func(lo, hi int)) {
	parallelRowsLocal(n, workers, block, func() func(lo, hi int) { return f })
}

// parallelRowsLocal is parallelRows with state per goroutine: each goroutine calls
// newWorker once and runs every block it takes through the function returned, so
// buffers sized by the whole matrix are allocated once per goroutine, not per block.
func parallelRowsLocal(n, workers, block int, newWorker func() func(lo, hi int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var f func(lo, hi int)
			for lo := range next {
				if f == nil {
					f = newWorker()
				}
				f(lo, min(lo+block, n))
			}
		}()
	}
	for lo := 0; lo < n; lo += block {
		next <- lo
	}
	close(next)
	wg.Wait()
}

func similarDense(data []float32, dim int, skip []bool, cfg KNNConfig) [][]Neighbor {
	n := len(data) / dim
	out := make([][]Neighbor, n)
	const qb = 32 // queries per block: each key row is read once per block
	parallelRows(n-cfg.From, cfg.Workers, qb, func(lo, hi int) {
		lo, hi = lo+cfg.From, hi+cfg.From
		heaps := make([]topK, hi-lo)
		for i := range heaps {
			heaps[i].k = cfg.K
		}
		for j := 0; j < n; j++ {
			if skip != nil && skip[j] {
				continue
			}
			kj := data[j*dim : (j+1)*dim]
			for i := lo; i < hi; i++ {
				if i == j || skip != nil && skip[i] {
					continue
				}
				if s := dot(data[i*dim:(i+1)*dim], kj); s >= cfg.MinScore {
					heaps[i-lo].offer(Neighbor{int32(j), s})
				}
			}
		}
		for i := range heaps {
			out[lo+i] = heaps[i].sorted()
		}
	})
	return out
}

// SimilarSparseRows is SimilarRows for a matrix held in compressed rows: row i's
// non-zeros are at coordinates idx[ptr[i]:ptr[i+1]] (increasing) with values
// val[ptr[i]:ptr[i+1]]. It returns what SimilarRows returns for the dense matrix.
func SimilarSparseRows(ptr []int64, idx []uint16, val []float32, dim int, skip []bool, cfg KNNConfig) ([][]Neighbor, error) {
	n := len(ptr) - 1
	if dim <= 0 || n < 0 || len(idx) != len(val) || ptr[0] != 0 || ptr[n] != int64(len(idx)) {
		return nil, fmt.Errorf("kernels: knn: malformed compressed rows (%d pointers, %d indices, %d values)", len(ptr), len(idx), len(val))
	}
	for _, d := range idx {
		if int(d) >= dim {
			return nil, fmt.Errorf("kernels: knn: coordinate %d of a row of dimension %d", d, dim)
		}
	}
	if len(idx)*5 >= n*dim {
		// Too dense for the inverted index: the dense paths, as SimilarRows chooses.
		data := make([]float32, n*dim)
		for i := range n {
			for k := ptr[i]; k < ptr[i+1]; k++ {
				data[i*dim+int(idx[k])] = val[k]
			}
		}
		return SimilarRows(data, dim, skip, cfg)
	}
	cfg, search, err := knnDefaults(n, skip, cfg)
	if !search {
		return make([][]Neighbor, n), err
	}
	return similarCSR(ptr, idx, val, dim, skip, cfg), nil
}

// knnDefaults checks the skip mask against the n rows and fills cfg's defaults; search
// is false when there is nothing to search (or on an error).
func knnDefaults(n int, skip []bool, cfg KNNConfig) (_ KNNConfig, search bool, _ error) {
	if skip != nil && len(skip) != n {
		return cfg, false, fmt.Errorf("kernels: knn: skip mask has %d entries for %d rows", len(skip), n)
	}
	if cfg.K <= 0 || cfg.From >= n {
		return cfg, false, nil
	}
	cfg.From = max(0, cfg.From)
	if cfg.ExactLimit <= 0 {
		cfg.ExactLimit = 20000
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	return cfg, true, nil
}

// similarSparse is similarCSR on a dense matrix's non-zeros.
func similarSparse(data []float32, dim int, skip []bool, cfg KNNConfig) [][]Neighbor {
	n := len(data) / dim
	ptr := make([]int64, n+1)
	var idx []uint16
	var val []float32
	for i := 0; i < n; i++ {
		for d, v := range data[i*dim : (i+1)*dim] {
			if v != 0 {
				idx = append(idx, uint16(d))
				val = append(val, v)
			}
		}
		ptr[i+1] = int64(len(idx))
	}
	return similarCSR(ptr, idx, val, dim, skip, cfg)
}

// similarCSR is an exact search through an inverted index of the non-zero
// coordinates. Similarity is symmetric, so each row is only scored against the rows
// after it, and every pair found is offered to both rows' top-K lists. Dimensions are
// at most 65,536 (uint16 coordinates).
func similarCSR(ptr []int64, idx []uint16, val []float32, dim int, skip []bool, cfg KNNConfig) [][]Neighbor {
	n := len(ptr) - 1
	// Postings are built in row order, so each list is sorted by row.
	cols := make([][]int32, dim)
	vals := make([][]float32, dim)
	for i := 0; i < n; i++ {
		if skip != nil && skip[i] {
			continue
		}
		for k := ptr[i]; k < ptr[i+1]; k++ {
			cols[idx[k]] = append(cols[idx[k]], int32(i))
			vals[idx[k]] = append(vals[idx[k]], val[k])
		}
	}
	var mu sync.Mutex
	var pairs []knnPair
	parallelRowsLocal(n-cfg.From, cfg.Workers, 64, func() func(lo, hi int) {
		acc := make([]float32, n)
		seen := make([]bool, n)
		touched := make([]int32, 0, 1024)
		var found []knnPair
		return func(lo, hi int) {
			lo, hi = lo+cfg.From, hi+cfg.From
			found = found[:0]
			for i := lo; i < hi; i++ {
				if skip != nil && skip[i] {
					continue
				}
				for k := ptr[i]; k < ptr[i+1]; k++ {
					v := val[k]
					rows, vs := cols[idx[k]], vals[idx[k]]
					// Rows before From are never queried, so their pairs with i are found
					// here; later rows pair with the rows after them.
					early := sort.Search(len(rows), func(k int) bool { return rows[k] >= int32(cfg.From) })
					for k := 0; k < early; k++ {
						r := rows[k]
						if !seen[r] {
							seen[r] = true
							touched = append(touched, r)
						}
						acc[r] += v * vs[k]
					}
					k := sort.Search(len(rows), func(k int) bool { return rows[k] > int32(i) })
					for ; k < len(rows); k++ {
						r := rows[k]
						if !seen[r] {
							seen[r] = true
							touched = append(touched, r)
						}
						acc[r] += v * vs[k]
					}
				}
				for _, j := range touched {
					if s := acc[j]; s >= cfg.MinScore {
						found = append(found, knnPair{int32(i), j, s})
					}
					acc[j], seen[j] = 0, false
				}
				touched = touched[:0]
			}
			mu.Lock()
			pairs = append(pairs, found...)
			mu.Unlock()
		}
	})
	return topLists(n, pairs, skip, cfg)
}

// knnPair is a pair of rows and their similarity.
type knnPair struct {
	i, j int32
	s    float32
}

// topLists offers every pair to both rows' top-K lists and returns the lists of the
// queried rows (≥ cfg.From, not skipped), best first. The lists do not depend on the
// pairs' order.
func topLists(n int, pairs []knnPair, skip []bool, cfg KNNConfig) [][]Neighbor {
	heaps := make([]topK, n)
	for _, p := range pairs {
		for _, e := range [2][2]int32{{p.i, p.j}, {p.j, p.i}} {
			h := &heaps[e[0]]
			h.k = cfg.K
			h.offer(Neighbor{e[1], p.s})
		}
	}
	out := make([][]Neighbor, n)
	for i := cfg.From; i < n; i++ {
		if skip == nil || !skip[i] {
			heaps[i].k = cfg.K
			out[i] = heaps[i].sorted()
		}
	}
	return out
}

// similarIVF searches an inverted-file index: rows are clustered by spherical
// k-means into about 4·√n lists, and each query scores exactly the rows of the lists
// whose centroids are most similar to it. (coder/hnsw was tried first: its greedy
// construction reached only ~60% recall on the tests' data.)
func similarIVF(data []float32, dim int, skip []bool, cfg KNNConfig) [][]Neighbor {
	n := len(data) / dim
	var rows []int32
	for i := 0; i < n; i++ {
		if skip == nil || !skip[i] {
			rows = append(rows, int32(i))
		}
	}
	if len(rows) == 0 {
		return make([][]Neighbor, n) // every row skipped: no one has neighbours
	}
	nlist := max(1, min(len(rows), int(4*math.Sqrt(float64(len(rows))))))
	nprobe := cfg.Probes
	if nprobe <= 0 {
		nprobe = max(8, nlist/8)
	}
	nprobe = min(nprobe, nlist)
	rng := rand.New(rand.NewSource(cfg.Seed))
	cent := make([]float32, nlist*dim)
	for c, p := range rng.Perm(len(rows))[:nlist] {
		copy(cent[c*dim:(c+1)*dim], data[int(rows[p])*dim:int(rows[p]+1)*dim])
	}
	assign := make([]int32, len(rows))
	nearest := func(v []float32) int32 {
		best, bs := int32(0), float32(math.Inf(-1))
		for c := 0; c < nlist; c++ {
			if s := dot(v, cent[c*dim:(c+1)*dim]); s > bs {
				best, bs = int32(c), s
			}
		}
		return best
	}
	for iter := 0; iter < 8; iter++ {
		parallelRows(len(rows), cfg.Workers, 256, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				i := int(rows[r])
				assign[r] = nearest(data[i*dim : (i+1)*dim])
			}
		})
		next := make([]float64, nlist*dim)
		for r, c := range assign {
			i := int(rows[r])
			for d, v := range data[i*dim : (i+1)*dim] {
				next[int(c)*dim+d] += float64(v)
			}
		}
		for c := 0; c < nlist; c++ {
			var norm float64
			for _, v := range next[c*dim : (c+1)*dim] {
				norm += v * v
			}
			if norm == 0 {
				continue // an empty list keeps its old centroid
			}
			norm = math.Sqrt(norm)
			for d := 0; d < dim; d++ {
				cent[c*dim+d] = float32(next[c*dim+d] / norm)
			}
		}
	}
	lists := make([][]int32, nlist)
	for r, c := range assign {
		lists[c] = append(lists[c], rows[r])
	}
	out := make([][]Neighbor, n)
	parallelRows(len(rows), cfg.Workers, 64, func(lo, hi int) {
		cs := make([]float32, nlist)
		for r := lo; r < hi; r++ {
			i := int(rows[r])
			if i < cfg.From {
				continue
			}
			q := data[i*dim : (i+1)*dim]
			for c := range cs {
				cs[c] = dot(q, cent[c*dim:(c+1)*dim])
			}
			t := topK{k: cfg.K}
			for _, c := range TopK(cs, nprobe) {
				for _, j := range lists[c.Index] {
					if int(j) == i {
						continue
					}
					if s := dot(q, data[int(j)*dim:int(j+1)*dim]); s >= cfg.MinScore {
						t.offer(Neighbor{j, s})
					}
				}
			}
			out[i] = t.sorted()
		}
	})
	return out
}

// TopK returns the indices of the k largest scores, best first (ties by index; a NaN
// score counts as −Inf).
// Once k are kept, only a score above the worst kept one can enter (a later tie loses
// to the earlier index), so the rest of the scan looks for the next such score,
// sixteen at a time with AVX-512 or AVX2 (465K fact scores of a 120K-passage index: a
// heap offer per entry cost 0.7 ms of a ppr query).
func TopK(scores []float32, k int) []Neighbor { return topKOn(kernelPath, scores, k) }

// topKOn is TopK on kernel path p.
func topKOn(p KernelPath, scores []float32, k int) []Neighbor {
	t := topK{k: k}
	if k <= 0 {
		return nil
	}
	i := 0
	for ; i < len(scores) && len(t.hs) < k; i++ {
		sc := scores[i]
		if sc != sc { // NaN ranks last: kept at the heap's root it would block every later score
			sc = float32(math.Inf(-1))
		}
		t.offer(Neighbor{int32(i), sc})
	}
	for i < len(scores) {
		i = nextAbove(p, scores, i, t.hs[0].Score)
		if i == len(scores) {
			break
		}
		t.offer(Neighbor{int32(i), scores[i]})
		i++
	}
	return t.sorted()
}

// nextAbove returns the least j ≥ i with v[j] > x (false for a NaN on either side),
// or len(v), on kernel path p.
func nextAbove(p KernelPath, v []float32, i int, x float32) int {
	i += nextAboveSIMD(p, v[i:], x)
	for ; i < len(v); i++ {
		if v[i] > x {
			return i
		}
	}
	return i
}
