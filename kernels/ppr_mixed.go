package kernels

import "math"

// Mixed precision for SolveBatch (SOR): a pair of tiles, 16 queries, first iterates
// in float32 with all 16 lanes of a node in one 64-byte line, then each tile finishes
// in float64 from that start.
//
// A float64 tile pass costs one 64-byte neighbour line and one fused multiply-add per
// entry for 8 queries, and neither the loads nor the multiply-adds get cheaper (see
// docs/scale.md): the only way to fewer of them is more queries per line. Float32
// puts 16 in it. Float32 cannot reach the 1e-10 tolerance (its iterate's rounding
// alone leaves a residual about 1e-7), so it only brings each query from its reset to
// about 2e-7, which is most of the passes (the error falls by a constant factor a
// pass), and the float64 passes take it the rest of the way. The stopping test is
// the float64 one throughout: the result meets PPRConfig.Tol and its error bound just
// as Solve's does, but it is not Solve's to rounding; the two differ by up to about
// the tolerance. PPRConfig.Float64Batch keeps the float64 tile from the start.
//
// Every lane's decisions depend on its own sums only (a lane that is done is masked
// out of the stores), so a query's bits do not depend on the queries it shares a pair
// or a tile with, nor on the number of workers.

// pprLanes32 is the number of queries the float32 passes iterate together: 16
// float32 = one 64-byte cache line and one AVX-512 register per node.
const pprLanes32 = 2 * pprLanes

// pprFloat32Tol is the residual at which a lane leaves the float32 passes: four
// units of float32 rounding (2⁻²⁴), about where the iterate's own rounding (a residual
// of about 1e-7) stops the residual from falling. A lane also leaves them when a pass
// takes less than a tenth off its residual: float32 has reached its rounding there.
// (The test must not assume SOR's rate: it is about 0.17 a pass at d = 0.5, 0.3 at
// 0.85 and 0.5–0.6 at 0.95, and the first passes can be slower; with "a pass no
// longer halves it" d = 0.95 left float32 after 5 of 46 passes.) On bench/ppr's graph
// a switch at 1e-6 took 8 float32 and 5 float64 passes, this one 9 and 4. A tolerance
// within 16× of it skips them.
const pprFloat32Tol = 4 * 0x1p-24

// pprTile32 holds the float32 buffers of a pair of tiles ([node][16]): the reset rows
// packed as pprTile's are (row np is zero, zero rows point at it through sidx) and
// the iterate, updated in place (SOR).
type pprTile32 struct {
	s    []float32
	sidx []uint32
	cur  []float32
}

func newPPRTile32(np int) *pprTile32 {
	return &pprTile32{
		s:    make([]float32, (np+1)*pprLanes32),
		sidx: make([]uint32, np),
		cur:  make([]float32, np*pprLanes32),
	}
}

// pprLaneSums32 holds per-chunk, per-lane float32 partial sums.
type pprLaneSums32 [pprLanes32]float32

// mixedBatch reports whether SolveBatch starts its tiles with float32 passes.
func (s *PPRSolver) mixedBatch() bool {
	return s.cfg.Method == PPRSOR && !s.cfg.Float64Batch && s.cfg.Tol < pprFloat32Tol/16 && s.cfg.MaxIter >= 4 &&
		s.lay.str32 != nil
}

// pprPackTile32 fills the rows [lo, hi) of a pair's float32 tile from its float64
// tiles a and b (b nil: lanes 8–15 zero) after their setup: reset rows packed at lo,
// lo+1, … as pprCompactResets packs them, and the iterate rounded from theirs.
func pprPackTile32(t *pprTile32, a, b *pprTile, np, lo, hi int) {
	k := lo
	for i := lo; i < hi; i++ {
		c := (*[pprLanes32]float32)(t.cur[i*pprLanes32:])
		ra, rb := a.sidx[i], uint32(np)
		ca := (*[pprLanes]float64)(a.cur[i*pprLanes:])
		for l, x := range ca {
			c[l] = float32(x)
		}
		if b != nil {
			rb = b.sidx[i]
			cb := (*[pprLanes]float64)(b.cur[i*pprLanes:])
			for l, x := range cb {
				c[pprLanes+l] = float32(x)
			}
		} else {
			clear(c[pprLanes:])
		}
		if ra == uint32(np) && rb == uint32(np) {
			t.sidx[i] = uint32(np)
			continue
		}
		row := (*[pprLanes32]float32)(t.s[k*pprLanes32:])
		sa := (*[pprLanes]float64)(a.s[int(ra)*pprLanes:])
		for l, x := range sa {
			row[l] = float32(x)
		}
		if b != nil {
			sb := (*[pprLanes]float64)(b.s[int(rb)*pprLanes:])
			for l, x := range sb {
				row[pprLanes+l] = float32(x)
			}
		} else {
			clear(row[pprLanes:])
		}
		t.sidx[i] = uint32(k)
		k++
	}
}

// pprUnpackTile32 writes the float32 iterate of rows [lo, hi) back into the float64
// tiles a and b (b nil: lanes 8–15 dropped).
func pprUnpackTile32(t *pprTile32, a, b *pprTile, lo, hi int) {
	for i := lo; i < hi; i++ {
		c := (*[pprLanes32]float32)(t.cur[i*pprLanes32:])
		ca := (*[pprLanes]float64)(a.cur[i*pprLanes:])
		for l := range ca {
			ca[l] = float64(c[l])
		}
		if b != nil {
			cb := (*[pprLanes]float64)(b.cur[i*pprLanes:])
			for l := range cb {
				cb[l] = float64(c[pprLanes+l])
			}
		}
	}
}

// solvePair solves one or two tiles of queries (ra, rb; rb may be empty) with the
// float32 start. ta and tb are their float64 tiles (tb unused when rb is empty).
func (s *PPRSolver) solvePair(ta, tb *pprTile, t32 *pprTile32, workers int, ra, rb pprTileJob, nodes []int32) {
	lay := s.lay
	nc := s.numChunks()
	massA := s.setupTile(ta, workers, ra.resets, ra.scales)
	var massB pprLaneSums
	b := tb
	if len(rb.resets) > 0 {
		massB = s.setupTile(tb, workers, rb.resets, rb.scales)
	} else {
		b = nil
	}
	s.forChunkRange(workers, 0, nc, func(c int) {
		lo, hi := s.chunkRows(c)
		pprPackTile32SIMD(s.simd, t32, ta, b, lay.np, lo, hi)
	})
	var active uint16
	for l := range ra.resets {
		active |= 1 << l
	}
	for l := range rb.resets {
		active |= 1 << (pprLanes + l)
	}
	var mass [pprLanes32]float64
	copy(mass[:], massA[:])
	copy(mass[pprLanes:], massB[:])
	passes := s.float32Passes(t32, workers, active, &mass)
	s.forChunkRange(workers, 0, nc, func(c int) {
		lo, hi := s.chunkRows(c)
		pprUnpackTile32SIMD(s.simd, t32, ta, b, lo, hi)
	})
	s.iterateTile(ta, workers, len(ra.resets), ra.out, ra.stats, nodes, massA, (*[pprLanes]int)(passes[:pprLanes]))
	if b != nil {
		s.iterateTile(tb, workers, len(rb.resets), rb.out, rb.stats, nodes, massB, (*[pprLanes]int)(passes[pprLanes:]))
	}
}

// pprTileJob is one tile's queries and where their results go.
type pprTileJob struct {
	resets [][]float64
	scales []float64
	out    [][]float64
	stats  []PPRStats
}

// float32Passes runs SOR passes over a pair's float32 tile until every lane in active
// has left them: its residual (measured as the float64 passes measure it, from the
// float32 sums) is below pprFloat32Tol, or a pass took less than a tenth
// off it, or it has had MaxIter/2 passes. It returns each lane's number of passes.
func (s *PPRSolver) float32Passes(t *pprTile32, workers int, active uint16, leafMass *[pprLanes32]float64) [pprLanes32]int {
	lay := s.lay
	nc := s.numChunks()
	d, omega := float32(s.cfg.Damping), float32(s.omega[0])
	scaleRes := s.residualScale()
	var res, zsum [2][]pprLaneSums32
	for p := range res {
		res[p], zsum[p] = make([]pprLaneSums32, nc), make([]pprLaneSums32, nc)
	}
	var passes [pprLanes32]int
	runPPRTeam(min(workers, nc), func(tm *pprTeam, id int) {
		mask := active // every member keeps the same copy
		var prev [pprLanes32]float64
		for l := range prev {
			prev[l] = math.Inf(1)
		}
		for iter := 0; mask != 0; {
			r, z := res[iter%2], zsum[iter%2]
			s.teamSweep(tm, func(c int) {
				s0, s1 := int(lay.chunk[c]), int(lay.chunk[c+1])
				pprTilePass32SIMD(s.simd, lay, t.s, t.sidx, d, omega, mask, t.cur, s0, s1, &r[c], &z[c])
			})
			iter++
			for l := range pprLanes32 {
				if mask&(1<<l) == 0 {
					continue
				}
				var rb, zb float64
				for c := range r {
					rb += float64(r[c][l])
					zb += float64(z[c][l])
				}
				rl := rb * scaleRes / (zb + leafMass[l])
				if rl < pprFloat32Tol || rl > 0.9*prev[l] || !(rl == rl) || 2*iter >= s.cfg.MaxIter {
					mask &^= 1 << l
					if id == 0 {
						passes[l] = iter
					}
				}
				prev[l] = rl
			}
		}
	})
	return passes
}

// pprTilePass32 is the portable float32 pass of a pair's tile over the slices
// [s0, s1): pprTilePass's SOR step in float32, 16 lanes a node, the lanes not in
// active left as they are. str and inv are the layout's, rounded to float32.
func pprTilePass32(l *pprLayout, str, inv []float32, sT []float32, sidx []uint32, d, omega float32, active uint16, cur []float32, s0, s1 int, res, zsum *pprLaneSums32) {
	var r, zs pprLaneSums32
	for sl := s0; sl < s1; sl++ {
		cols, vals := l.sliceEntries(sl)
		for row := range pprSellRows {
			var acc [pprLanes32]float32
			for k := row; k < len(cols); k += pprSellRows {
				w := vals[k]
				y := (*[pprLanes32]float32)(cur[int(cols[k])*pprLanes32:])
				for b := range acc {
					acc[b] += w * y[b]
				}
			}
			i := sl*pprSellRows + row
			st, iv := str[i], inv[i]
			sv := (*[pprLanes32]float32)(sT[int(sidx[i])*pprLanes32:])
			yc := (*[pprLanes32]float32)(cur[i*pprLanes32:])
			for b := range acc {
				j := sv[b] + d*acc[b]
				z := yc[b] * st
				r[b] += float32(math.Abs(float64(j - z)))
				zs[b] += z
				if active&(1<<b) != 0 {
					yc[b] = omega*(j*iv-yc[b]) + yc[b]
				}
			}
		}
	}
	*res, *zsum = r, zs
}
