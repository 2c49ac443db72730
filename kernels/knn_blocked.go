package kernels

import (
	"fmt"
	"math"
	"sort"
	"sync"
)

// BlockRows is a second sparse representation of the rows searched by
// SimilarSparseRowsBlocked, in compressed rows over a vocabulary of any size (row i's
// features idx[ptr[i]:ptr[i+1]], weights val, each row L2-normalised), together with
// Min: the caller's guarantee that two rows whose similarity reaches the search's
// MinScore have block rows with dot product ≥ Min. For the built-in hashed embedder
// the block rows are a name's unhashed words (embed.Hashed.WordRows): hashing 768
// coordinates over half a million names makes every coordinate's posting list grow
// with the corpus, while real words are Zipfian and a pair must share a rare one.
type BlockRows struct {
	Ptr []int64
	Idx []int32
	Val []float32
	Min float32
}

// SimilarSparseRowsBlocked returns what SimilarSparseRows returns, up to the pairs the
// block rows' bound misses (none when the bound holds), with only the pairs whose
// block rows can reach block.Min scored: an all-pairs similarity search with prefix
// filtering on the block rows (Bayardo et al., "Scaling up all pairs similarity
// search", WWW 2007, with the L2 prefix bound of Anastasiu & Karypis, ICDE 2014). Each
// row's features are ordered by decreasing frequency; the leading ones whose L2 norm
// stays under block.Min are left out of the inverted index, since no row can reach
// block.Min through them alone, so the frequent features' posting lists stay short.
// Every candidate whose bound passes is then scored exactly on the searched rows,
// with the same float32 arithmetic in the same coordinate order as the exact search,
// so a pair's score is the same bits on both paths.
func SimilarSparseRowsBlocked(ptr []int64, idx []uint16, val []float32, dim int, block BlockRows, skip []bool, cfg KNNConfig) ([][]Neighbor, error) {
	n := len(ptr) - 1
	if dim <= 0 || n < 0 || len(idx) != len(val) || ptr[0] != 0 || ptr[n] != int64(len(idx)) {
		return nil, fmt.Errorf("kernels: knn: malformed compressed rows (%d pointers, %d indices, %d values)", len(ptr), len(idx), len(val))
	}
	for _, d := range idx {
		if int(d) >= dim {
			return nil, fmt.Errorf("kernels: knn: coordinate %d of a row of dimension %d", d, dim)
		}
	}
	if len(block.Ptr) != n+1 || len(block.Idx) != len(block.Val) || block.Ptr[0] != 0 || block.Ptr[n] != int64(len(block.Idx)) {
		return nil, fmt.Errorf("kernels: knn: block rows (%d pointers, %d features, %d weights) do not match %d rows", len(block.Ptr), len(block.Idx), len(block.Val), n)
	}
	if !(block.Min > 0 && block.Min <= 1) {
		return nil, fmt.Errorf("kernels: knn: block bound %v outside (0,1]", block.Min)
	}
	vocab := int32(0)
	for _, f := range block.Idx {
		if f < 0 {
			return nil, fmt.Errorf("kernels: knn: negative block feature %d", f)
		}
		vocab = max(vocab, f+1)
	}
	cfg, search, err := knnDefaults(n, skip, cfg)
	if !search {
		return make([][]Neighbor, n), err
	}
	live := func(i int) bool { return skip == nil || !skip[i] }

	// Feature order: most frequent first (ties by feature number).
	df := make([]int32, vocab)
	for i := range n {
		if live(i) {
			for _, f := range block.Idx[block.Ptr[i]:block.Ptr[i+1]] {
				df[f]++
			}
		}
	}
	order := make([]int32, vocab)
	for f := range order {
		order[f] = int32(f)
	}
	sort.Slice(order, func(a, b int) bool {
		if df[order[a]] != df[order[b]] {
			return df[order[a]] > df[order[b]]
		}
		return order[a] < order[b]
	})
	rank := make([]int32, vocab)
	for r, f := range order {
		rank[f] = int32(r)
	}

	// The inverted index over each row's suffix; pnorm[i] is the L2 norm of the prefix
	// left out, so a row can reach at most acc + pnorm with row i.
	type posting struct {
		row int32
		w   float32
	}
	lists := make([][]posting, vocab)
	pnorm := make([]float32, n)
	min2 := float64(block.Min) * float64(block.Min)
	var feats []int32
	for i := range n {
		if !live(i) {
			continue
		}
		lo, hi := block.Ptr[i], block.Ptr[i+1]
		feats = feats[:0]
		for k := lo; k < hi; k++ {
			feats = append(feats, int32(k))
		}
		sort.Slice(feats, func(a, b int) bool { return rank[block.Idx[feats[a]]] < rank[block.Idx[feats[b]]] })
		var cum float64
		p := 0
		for ; p < len(feats); p++ {
			w := float64(block.Val[feats[p]])
			if cum+w*w >= min2 {
				break
			}
			cum += w * w
		}
		pnorm[i] = float32(math.Sqrt(cum))
		for _, k := range feats[p:] {
			f := block.Idx[k]
			lists[f] = append(lists[f], posting{int32(i), block.Val[k]})
		}
	}

	var mu sync.Mutex
	var pairs []knnPair
	parallelRowsLocal(n-cfg.From, cfg.Workers, 64, func() func(lo, hi int) {
		acc := make([]float32, n)
		seen := make([]bool, n)
		touched := make([]int32, 0, 1024)
		row := make([]float32, dim)
		var found []knnPair
		return func(lo, hi int) {
			lo, hi = lo+cfg.From, hi+cfg.From
			found = found[:0]
			for i := lo; i < hi; i++ {
				if !live(i) {
					continue
				}
				for k := block.Ptr[i]; k < block.Ptr[i+1]; k++ {
					w := block.Val[k]
					for _, p := range lists[block.Idx[k]] {
						// Each pair once: from its earlier row, or from the row ≥ From
						// when the other was never queried.
						if p.row <= int32(i) && p.row >= int32(cfg.From) {
							continue
						}
						if !seen[p.row] {
							seen[p.row] = true
							touched = append(touched, p.row)
						}
						acc[p.row] += w * p.w
					}
				}
				if len(touched) > 0 {
					for k := ptr[i]; k < ptr[i+1]; k++ {
						row[idx[k]] = val[k]
					}
					for _, j := range touched {
						if acc[j]+pnorm[j] >= block.Min {
							// Summed over j's coordinates in increasing order: the products
							// the exact search adds, in its order (zeros add nothing).
							var s float32
							for k := ptr[j]; k < ptr[j+1]; k++ {
								s += row[idx[k]] * val[k]
							}
							if s >= cfg.MinScore {
								a, b := int32(i), j
								if b < a {
									a, b = b, a
								}
								found = append(found, knnPair{a, b, s})
							}
						}
						acc[j], seen[j] = 0, false
					}
					for k := ptr[i]; k < ptr[i+1]; k++ {
						row[idx[k]] = 0
					}
					touched = touched[:0]
				}
			}
			mu.Lock()
			pairs = append(pairs, found...)
			mu.Unlock()
		}
	})
	return topLists(n, pairs, skip, cfg), nil
}
