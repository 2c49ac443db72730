package kernels

import "math"

// pprLanes is the number of queries iterated together: 8 float64 = one 64-byte cache
// line and one AVX-512 register per node.
const pprLanes = 8

// PPRTileQueries is how many queries SolveBatch solves together in one tile: resets
// i and j share a tile when i/PPRTileQueries == j/PPRTileQueries, and a lone query is
// solved as Solve solves it. Callers that split a batch into blocks keep results
// unchanged by cutting at multiples of it.
const PPRTileQueries = pprLanes

// pprTile holds the interleaved [node][pprLanes] buffers of one tile of queries, in
// internal node order.
//
// The reset tile s is compacted before the passes (pprCompactResets): a personalised
// reset is zero on most nodes (HippoRAG 2 seeds a few entities and weights the
// passages), and a row that is zero in every lane is not stored. Row i's reset is
// row sidx[i] of s; the rows that are not zero are packed, in order, at the start of
// their chunk's rows, and every zero row points at row np, which stays zero. The
// passes then stream only the packed rows (and 4 bytes of index a node) instead of a
// 64-byte row a node, which leaves the last-level cache to the iterate the gathers
// read.
type pprTile struct {
	s, cur []float64
	nxt    []float64 // the previous iterate: Chebyshev and power only (setupTile)
	sidx   []uint32
	fold   []float64 // each fold's normalised reset in the tile's lanes (foldTile)
	half   []float32 // lanes 8–15 of a pair's float32 iterate (solvePair)
}

func newPPRTile(np int) *pprTile {
	return &pprTile{
		s:    make([]float64, (np+1)*pprLanes), // row np: the zero row
		cur:  make([]float64, np*pprLanes),
		sidx: make([]uint32, np),
	}
}

// pprCompactResets computes y_0 = s/strength for the rows [lo, hi) of a tile into cur
// (cur nil: left alone) and packs the rows of s that are not zero in every lane at lo,
// lo+1, …, in order, setting sidx[i] to row i's new place and to np, the zero row, for
// a zero row (see pprTile). A row is zero when all its bits are, so every lane of
// every row reads the same value as before. Rows are only moved down (lo ≤ new place
// ≤ i), so the rows not yet read are intact. lanes is the row's width: pprLanes for a
// tile, pprLanes32 for a pair's float32 tile (pprCompactResets32).
func pprCompactResets[T float32 | float64](s, cur []T, sidx []uint32, inv []T, lanes, np, lo, hi int) {
	k := lo
	for i := lo; i < hi; i++ {
		row := s[i*lanes : (i+1)*lanes]
		iv := inv[i]
		zero := true
		for b, x := range row {
			if cur != nil {
				cur[i*lanes+b] = x * iv
			}
			// Not zero in its bits: any other value, −0 or NaN.
			if x != 0 || math.Signbit(float64(x)) {
				zero = false
			}
		}
		if zero {
			sidx[i] = uint32(np)
			continue
		}
		if k != i {
			copy(s[k*lanes:(k+1)*lanes], row)
		}
		sidx[i] = uint32(k)
		k++
	}
}

// foldTile is foldLeaves for every lane of a tile in one walk over the folds: each
// fold reads its eliminated node's normalised reset in every lane once, keeps it in
// t.fold for the leaves' scores (extract), and adds d·c·s_v to the lanes of its row
// where s_v ≠ 0. Each lane's adds and Σ s run in fold order, as foldLeaves's do.
func (s *PPRSolver) foldTile(t *pprTile, resets [][]float64, scales []float64) pprLaneSums {
	f := &s.lay.leaves.fold
	if n := len(f.node) * pprLanes; cap(t.fold) < n {
		t.fold = make([]float64, n)
	}
	t.fold = t.fold[:len(f.node)*pprLanes]
	d := s.cfg.Damping
	var mass pprLaneSums
	for k, v := range f.node {
		sk := (*[pprLanes]float64)(t.fold[k*pprLanes:])
		*sk = [pprLanes]float64{}
		row := (*[pprLanes]float64)(t.s[int(f.row[k])*pprLanes:])
		c, count := f.c[k], f.count[k]
		for b, r := range resets {
			x := r[v] * scales[b]
			if x == 0 {
				continue
			}
			sk[b] = x
			row[b] += d * (c * x)
			if count {
				mass[b] += x
			}
		}
	}
	return mass
}

// pprTileTotals returns, for every lane of a tile's iterate y, Σ y·mass over the
// rows [lo, hi) that are nodes (padding rows skipped), in row order, each product
// rounded before it is added: extract's totals.
func pprTileTotals(y, mass []float64, perm []int32, lo, hi int) [pprLanes]float64 {
	var sum [pprLanes]float64
	for v := lo; v < hi; v++ {
		if perm[v] < 0 {
			continue
		}
		row, m := (*[pprLanes]float64)(y[v*pprLanes:]), mass[v]
		for b := range row {
			sum[b] += float64(row[b] * m)
		}
	}
	return sum
}

// pprLaneSums holds per-chunk, per-lane partial sums.
type pprLaneSums [pprLanes]float64

// solveTile iterates up to pprLanes queries together. out and stats receive one entry
// per reset.
// With nodes not nil, out receives only those nodes' scores (see SolveBatchNodes).
func (s *PPRSolver) solveTile(t *pprTile, workers int, resets [][]float64, scales []float64, out [][]float64, stats []PPRStats, nodes []int32) {
	leafMass := s.setupTile(t, workers, resets, scales, false)
	s.iterateTile(t, workers, len(resets), out, stats, nodes, leafMass, nil)
}

// setupTile prepares a tile for its passes: it interleaves the normalised resets,
// gathered in node order within each chunk, and clears y_{-1} (SOR updates in place
// and has none); folds the eliminated nodes' resets in (pprLeaves); then packs the
// reset tile and sets y_0 = s'/strength (pprCompactResets), or keeps the iterate the
// tile holds with keep (solvePair's float32 start). It returns each lane's Σ s over
// the eliminated nodes.
func (s *PPRSolver) setupTile(t *pprTile, workers int, resets [][]float64, scales []float64, keep bool) pprLaneSums {
	nq := len(resets)
	nc := s.numChunks()
	lay := s.lay
	sor := s.cfg.Method == PPRSOR
	if !sor && t.nxt == nil { // SOR updates in place: no previous iterate
		t.nxt = make([]float64, len(t.cur))
	}
	s.forChunkRange(workers, 0, nc, func(c int) {
		lo, hi := s.chunkRows(c)
		if !sor {
			clear(t.nxt[lo*pprLanes : hi*pprLanes])
		}
		if pprInterleaveSIMD(s.path, lay.ilvNode[lo:hi], lay.ilvRow[lo:hi], lay.n, resets, scales, t.s[lo*pprLanes:hi*pprLanes]) {
			return
		}
		for i := lo; i < hi; i++ {
			row := (*[pprLanes]float64)(t.s[i*pprLanes:])
			for b := range row {
				var sv float64
				if v := lay.perm[i]; b < nq && v >= 0 {
					sv = resets[b][v] * scales[b]
				}
				row[b] = sv
			}
		}
	})
	leafMass := s.foldTile(t, resets, scales)
	s.forChunkRange(workers, 0, nc, func(c int) {
		lo, hi := s.chunkRows(c)
		cur := t.cur
		if keep {
			cur = nil
		}
		pprCompactResetsSIMD(s.path, t.s, cur, t.sidx, lay.inv, lay.np, lo, hi)
	})
	return leafMass
}

// iterateTile runs a set-up tile's float64 passes until each of its nq lanes has
// converged or had MaxIter passes, and extracts each lane's scores as it stops.
// done32 holds each lane's passes before these (the float32 ones, solvePair), nil for
// none.
func (s *PPRSolver) iterateTile(t *pprTile, workers, nq int, out [][]float64, stats []PPRStats, nodes []int32, leafMass pprLaneSums, done32 *[pprLanes]int) {
	nc := s.numChunks()
	lay := s.lay
	sor := s.cfg.Method == PPRSOR
	var before [pprLanes]int
	if done32 != nil {
		before = *done32
	}
	// Residual sums of even and odd passes (see solve1).
	var res, zsum [2][]pprLaneSums
	for p := range res {
		res[p], zsum[p] = make([]pprLaneSums, nc), make([]pprLaneSums, nc)
	}
	d := s.cfg.Damping
	relax := s.cfg.Method != PPRPower // Chebyshev, or SOR in place (previous iterate = current)
	scaleRes := s.residualScale()
	runPPRTeam(min(workers, nc), func(tm *pprTeam, id int) {
		cur, nxt := t.cur, t.nxt
		if sor {
			nxt = cur
		}
		active := make([]bool, nq) // every member keeps the same copy
		for b := range active {
			active[b] = true
		}
		left := nq
		var done []int
		for iter := 0; iter < s.cfg.MaxIter && left > 0; {
			omega := s.omega[iter]
			r, z := res[iter%2], zsum[iter%2]
			s.teamSweep(tm, func(c int) {
				s0, s1 := int(lay.chunk[c]), int(lay.chunk[c+1])
				pprTilePassSIMD(s.path, lay, t.s, t.sidx, d, omega, relax, cur, nxt, s0, s1, &r[c], &z[c])
			})
			iter++
			if !sor {
				cur, nxt = nxt, cur
			}
			done = done[:0]
			for b := 0; b < nq; b++ {
				if !active[b] {
					continue
				}
				var rb, zb float64
				for c := range r {
					rb += r[c][b]
					zb += z[c][b]
				}
				rb *= scaleRes
				zb += leafMass[b]
				passes := before[b] + iter
				st := PPRStats{Iterations: passes, Float32: before[b], Residual: rb / zb, Converged: rb/zb < s.cfg.Tol}
				if st.Converged || passes >= s.cfg.MaxIter {
					done = append(done, b)
					if id == 0 {
						stats[b] = st
					}
				}
			}
			if len(done) == 0 {
				continue
			}
			// The next pass overwrites every lane: the others wait while member 0
			// copies the finished lanes out.
			if id == 0 {
				s.extractLanes(t, cur, done, out, nodes, &leafMass)
			}
			tm.barrier()
			for _, b := range done {
				active[b] = false
			}
			left -= len(done)
		}
	})
}

// extractLanes copies the given lanes of a tile's iterate cur out as normalised scores
// (see extract), the leaves' resets read from the tile's folds (foldTile).
func (s *PPRSolver) extractLanes(t *pprTile, cur []float64, lanes []int, out [][]float64, nodes []int32, leafMass *pprLaneSums) {
	lm := make([]float64, len(lanes))
	for i, b := range lanes {
		lm[i] = leafMass[b]
	}
	for i, x := range s.extract(cur, pprLanes, lanes, nodes, nil, nil, t.fold, lm, nil) {
		out[lanes[i]] = x
	}
}

// pprTilePass is the portable tile step over the slices [s0,s1); see pprPass1. It
// walks the slice one row at a time (8 lanes × 8 rows would not fit in registers).
// Row i's reset is row sidx[i] of the compacted reset tile sT (pprCompactResets).
func pprTilePass(l *pprLayout, sT []float64, sidx []uint32, d, omega float64, cheb bool, cur, nxt []float64, s0, s1 int, res, zsum *pprLaneSums) {
	var r, zs pprLaneSums
	for sl := s0; sl < s1; sl++ {
		cols, vals := l.sliceEntries(sl)
		for row := range pprSellRows {
			var a0, a1, a2, a3, a4, a5, a6, a7 float64
			for k := row; k < len(cols); k += pprSellRows {
				w := float64(vals[k])
				y := (*[pprLanes]float64)(cur[int(cols[k])*pprLanes:])
				a0 += w * y[0]
				a1 += w * y[1]
				a2 += w * y[2]
				a3 += w * y[3]
				a4 += w * y[4]
				a5 += w * y[5]
				a6 += w * y[6]
				a7 += w * y[7]
			}
			acc := [pprLanes]float64{a0, a1, a2, a3, a4, a5, a6, a7}
			i := sl*pprSellRows + row
			str, inv := l.str[i], l.inv[i]
			off := i * pprLanes
			sv := (*[pprLanes]float64)(sT[int(sidx[i])*pprLanes:])
			yc := (*[pprLanes]float64)(cur[off:])
			yn := (*[pprLanes]float64)(nxt[off:])
			for b := range acc {
				j := sv[b] + d*acc[b]
				z := yc[b] * str
				r[b] += math.Abs(j - z)
				zs[b] += z
				jy := j * inv
				if cheb {
					yn[b] = omega*(jy-yn[b]) + yn[b]
				} else {
					yn[b] = jy
				}
			}
		}
	}
	*res, *zsum = r, zs
}
