package retrieve

import (
	"slices"
)

// rrfTopDepth is how many places of each ranking rrfTop orders exactly: a passage
// below this depth in both rankings scores at most rrfScore(μ, depth+1, depth+1),
// far below the top 10's scores on every question seen (≈ 0.0009 against ≥ 0.007).
const rrfTopDepth = 512

// rrfTopMin is the least number of passages for which rrfTop is tried; below it the
// two full sorts cost less than they save.
const rrfTopMin = 1 << 14

// topRRF returns what passages(rrf(a, b, μ), k) ranks, the k passages of highest
// fused score (ties by position) and their scores, without sorting either ranking in
// full, and ok false when it cannot prove that: the caller then ranks in full. It
// orders the depth best places of each ranking (a selection by the rankings' keys),
// which gives every passage there its exact rank in that ranking; a passage in both
// lists gets its exact score at once, one in a single list the bound
// rrfScore(μ, its rank, depth+1) and, when the bound reaches the k-th best score
// found, its other rank by counting (one pass over that ranking's keys). A passage in
// neither list scores at most rrfScore(μ, depth+1, depth+1) (rrfScore falls as
// either rank grows, after rounding too), so the result stands when the k-th best
// score is above that. The scores are rrfScore of exact ranks: the bits of the full
// path.
func (p *rankBuffers) topRRF(a, b []float64, mu float64, k, depth int) (top []int32, scores []float64, ok bool) {
	n := len(a)
	if k <= 0 || k > depth || depth >= n {
		return nil, nil, false
	}
	sa, sb := p.get(), p.get()
	defer p.put(sa)
	defer p.put(sb)
	ka, kb := sa.keysOf(a), sb.keysOf(b)
	la, lb := sa.smallest(ka, depth), sb.smallest(kb, depth)
	rankIn := func(l []int32) map[int32]int32 {
		m := make(map[int32]int32, len(l))
		for r, i := range l {
			m[i] = int32(r + 1)
		}
		return m
	}
	ra, rb := rankIn(la), rankIn(lb)
	best := make([]scored, 0, k+1) // the k best exact scores so far, best first
	offer := func(i int32, s float64) {
		at, _ := slices.BinarySearchFunc(best, scored{i, s}, compareScored)
		if at >= k {
			return
		}
		best = slices.Insert(best, at, scored{i, s})
		if len(best) > k {
			best = best[:k]
		}
	}
	// could reports whether a score s at position i would enter the top k.
	could := func(i int32, s float64) bool {
		return len(best) < k || compareScored(scored{i, s}, best[k-1]) < 0
	}
	type bounded struct {
		i     int32
		rank  int32 // its rank in the list it is in
		inA   bool
		upper float64 // rrfScore with depth+1 for the rank it lacks
	}
	var single []bounded
	for r, i := range la {
		if r2, in := rb[i]; in {
			offer(i, rrfScore(mu, int32(r+1), r2))
		} else {
			single = append(single, bounded{i: i, rank: int32(r + 1), inA: true, upper: rrfScore(mu, int32(r+1), int32(depth+1))})
		}
	}
	for r, i := range lb {
		if _, in := ra[i]; !in {
			single = append(single, bounded{i: i, rank: int32(r + 1), upper: rrfScore(mu, int32(depth+1), int32(r+1))})
		}
	}
	// Highest bound first; a list's bounds already fall with its rank, so the merge
	// order only decides how soon the search stops.
	slices.SortStableFunc(single, func(x, y bounded) int {
		return compareScored(scored{x.i, x.upper}, scored{y.i, y.upper})
	})
	for _, c := range single {
		if !could(c.i, c.upper) {
			break // every later bound is lower, or equal at a later position
		}
		if c.inA {
			offer(c.i, rrfScore(mu, c.rank, rankOf(kb, c.i)))
		} else {
			offer(c.i, rrfScore(mu, rankOf(ka, c.i), c.rank))
		}
	}
	outside := rrfScore(mu, int32(depth+1), int32(depth+1))
	if len(best) < k || !(best[k-1].s > outside) {
		return nil, nil, false
	}
	top, scores = make([]int32, k), make([]float64, k)
	for j, c := range best {
		top[j], scores[j] = c.i, c.s
	}
	return top, scores, true
}

// scored is a passage and its fused score.
type scored struct {
	i int32
	s float64
}

// compareScored orders higher scores first, ties by position (passages' order).
func compareScored(x, y scored) int {
	switch {
	case x.s > y.s:
		return -1
	case x.s < y.s:
		return 1
	}
	return int(x.i) - int(y.i)
}

// keysOf fills the scratch's keys with the rank keys of v (rankKey) and returns them.
func (sc *rankScratch) keysOf(v []float64) []uint64 {
	if cap(sc.posKeys) < len(v) {
		sc.posKeys = make([]uint64, len(v))
	}
	keys := sc.posKeys[:len(v)]
	for i, x := range v {
		keys[i] = rankKey(x)
	}
	return keys
}

// smallest returns the positions of the m smallest (key, position) pairs of keys in
// increasing order, the first m places of the ranking ranks makes. A max-heap of m
// keeps the best seen; scanning in position order, a key equal to the heap's worst
// comes later than it and is rejected with the greater ones.
func (sc *rankScratch) smallest(keys []uint64, m int) []int32 {
	h := sc.head[:0]
	if cap(sc.head) < m {
		h = make([]int32, 0, m)
	}
	// worse reports whether position x ranks after position y.
	worse := func(x, y int32) bool { return keys[x] > keys[y] || keys[x] == keys[y] && x > y }
	down := func(j int) {
		for {
			c := 2*j + 1
			if c >= len(h) {
				return
			}
			if c+1 < len(h) && worse(h[c+1], h[c]) {
				c++
			}
			if !worse(h[c], h[j]) {
				return
			}
			h[j], h[c] = h[c], h[j]
			j = c
		}
	}
	for i := range keys {
		x := int32(i)
		if len(h) < m {
			h = append(h, x)
			for j := len(h) - 1; j > 0; {
				parent := (j - 1) / 2
				if !worse(h[j], h[parent]) {
					break
				}
				h[j], h[parent] = h[parent], h[j]
				j = parent
			}
			continue
		}
		if keys[i] >= keys[h[0]] {
			continue // not better than the worst kept (a tie comes later)
		}
		h[0] = x
		down(0)
	}
	sc.head = h
	slices.SortFunc(h, func(x, y int32) int {
		if worse(x, y) {
			return 1
		}
		return -1
	})
	return h
}

// rankOf returns position i's rank from 1 in the ranking of keys: the positions
// before it with a key not above its own and those after it with a smaller one.
func rankOf(keys []uint64, i int32) int32 {
	x := keys[i]
	r := int32(1)
	for _, y := range keys[:i] {
		if y <= x {
			r++
		}
	}
	for _, y := range keys[i+1:] {
		if y < x {
			r++
		}
	}
	return r
}
