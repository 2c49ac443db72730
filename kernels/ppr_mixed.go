package kernels

import (
	"math"
	"unsafe"
)

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
// a switch at 1e-6 took 8 float32 and 5 float64 passes, this one 9 and 4 (8 and 4
// with pprSOROmega's ω). A tolerance within 16× of it skips them.
const pprFloat32Tol = 4 * 0x1p-24

// A pair runs in one tile's memory. Its float32 tile is the float64 tile's reset and
// iterate arrays seen as float32: a float32 row of 16 lanes is a float64 row of 8,
// 64 bytes. The float32 start is set up from the resets directly (interleave, folds,
// packing, y₀), iterated, and then split: lanes 8–15 go to pprTile.half, lanes 0–7
// are widened in place into the first tile's float64 iterate, whose resets are then
// set up over the float32 ones (setupTile, keeping the iterate); after its passes the
// second tile is widened from half and set up the same way. A pair thus needs 32
// bytes a row more than a tile (and SOR tiles no longer keep the previous iterate
// they never read, 64 bytes a row), at the price of reading each tile's resets twice,
// once for each precision.

// asFloat32 returns the memory of x as float32s, two per element.
func asFloat32(x []float64) []float32 {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(x))), 2*len(x))
}

// mixedBatch reports whether SolveBatch starts its tiles with float32 passes.
func (s *PPRSolver) mixedBatch() bool {
	return s.cfg.Method == PPRSOR && !s.cfg.Float64Batch && s.cfg.Tol < pprFloat32Tol/16 && s.cfg.MaxIter >= 4 &&
		s.lay.str32 != nil
}

// pprLaneSums32 holds per-chunk, per-lane float32 partial sums.
type pprLaneSums32 [pprLanes32]float32

// pprTileJob is one tile's queries and where their results go.
type pprTileJob struct {
	resets [][]float64
	scales []float64
	out    [][]float64
	stats  []PPRStats
}

// solvePair solves one or two tiles of queries (ra, rb; rb may be empty) in the tile
// t, with the float32 start.
func (s *PPRSolver) solvePair(t *pprTile, workers int, ra, rb pprTileJob, nodes []int32) {
	lay := s.lay
	np := lay.np
	nc := s.numChunks()
	s32, c32 := asFloat32(t.s), asFloat32(t.cur)
	if cap(t.half) < np*pprLanes {
		t.half = make([]float32, np*pprLanes)
	}
	half := t.half[:np*pprLanes]
	jobs := [2]pprTileJob{ra, rb}
	s.forChunkRange(workers, 0, nc, func(c int) {
		lo, hi := s.chunkRows(c)
		for h, j := range jobs {
			s.interleave32(j, s32[lo*pprLanes32+h*pprLanes:], lo, hi)
		}
	})
	mass := s.foldTile32(s32, jobs)
	s.forChunkRange(workers, 0, nc, func(c int) {
		lo, hi := s.chunkRows(c)
		pprCompactResets32SIMD(s.path, s32, c32, t.sidx, lay.inv32, np, lo, hi)
	})
	var active uint16
	for h, j := range jobs {
		for l := range j.resets {
			active |= 1 << (h*pprLanes + l)
		}
	}
	passes := s.float32Passes(s32, t.sidx, c32, workers, active, &mass)
	s.forChunkRange(workers, 0, nc, func(c int) {
		lo, hi := s.chunkRows(c)
		pprSplitTile32SIMD(s.path, t.cur, half, lo, hi)
	})
	for h, j := range jobs {
		if len(j.resets) == 0 {
			continue
		}
		if h == 1 {
			s.forChunkRange(workers, 0, nc, func(c int) {
				lo, hi := s.chunkRows(c)
				pprWidenHalfSIMD(s.path, half, t.cur, lo, hi)
			})
		}
		leafMass := s.setupTile(t, workers, j.resets, j.scales, true)
		s.iterateTile(t, workers, len(j.resets), j.out, j.stats, nodes, leafMass, (*[pprLanes]int)(passes[h*pprLanes:]))
	}
}

// interleave32 writes a half of the float32 reset rows [lo, hi) (s32 at row lo, at
// the half's first lane) from job j's resets, gathered in node order as setupTile
// gathers them.
func (s *PPRSolver) interleave32(j pprTileJob, s32 []float32, lo, hi int) {
	lay := s.lay
	if pprInterleave32SIMD(s.path, lay.ilvNode[lo:hi], lay.ilvRow[lo:hi], lay.n, j.resets, j.scales, s32) {
		return
	}
	for i := lo; i < hi; i++ {
		row := s32[(i-lo)*pprLanes32:][:pprLanes]
		for b := range row {
			var sv float64
			if v := lay.perm[i]; b < len(j.resets) && v >= 0 {
				sv = j.resets[b][v] * j.scales[b]
			}
			row[b] = float32(sv)
		}
	}
}

// foldTile32 is foldTile for a pair's float32 reset rows (before packing): each fold
// adds d·c·s_v, rounded to float32, to the lanes of its row where s_v ≠ 0, and each
// lane's Σ s over the eliminated nodes is summed in fold order, as foldTile sums it.
func (s *PPRSolver) foldTile32(s32 []float32, jobs [2]pprTileJob) [pprLanes32]float64 {
	f := &s.lay.leaves.fold
	d := s.cfg.Damping
	var mass [pprLanes32]float64
	for k, v := range f.node {
		row := (*[pprLanes32]float32)(s32[int(f.row[k])*pprLanes32:])
		c, count := f.c[k], f.count[k]
		for h, j := range jobs {
			for b, r := range j.resets {
				x := r[v] * j.scales[b]
				if x == 0 {
					continue
				}
				row[h*pprLanes+b] += float32(d * (c * x))
				if count {
					mass[h*pprLanes+b] += x
				}
			}
		}
	}
	return mass
}

// pprCompactResets32 is pprCompactResets for a pair's float32 tile: y₀ = s·inv in
// float32 into cur, the rows of s that are not zero in all 16 lanes packed at lo,
// lo+1, … and sidx pointing at them (np for a zero row).
func pprCompactResets32(s, cur []float32, sidx []uint32, inv []float32, np, lo, hi int) {
	pprCompactResets(s, cur, sidx, inv, pprLanes32, np, lo, hi)
}

// pprSplitTile32 splits the rows [lo, hi) of a pair's float32 iterate, which cur
// holds (asFloat32): lanes 8–15 into half, lanes 0–7 widened in place into cur's
// float64 rows.
func pprSplitTile32(cur []float64, half []float32, lo, hi int) {
	c32 := asFloat32(cur)
	for i := lo; i < hi; i++ {
		row := *(*[pprLanes32]float32)(c32[i*pprLanes32:])
		copy(half[i*pprLanes:(i+1)*pprLanes], row[pprLanes:])
		c := (*[pprLanes]float64)(cur[i*pprLanes:])
		for b := range c {
			c[b] = float64(row[b])
		}
	}
}

// pprWidenHalf writes the lanes 8–15 that pprSplitTile32 kept in half into cur's
// float64 rows [lo, hi).
func pprWidenHalf(half []float32, cur []float64, lo, hi int) {
	for i := lo; i < hi; i++ {
		h := (*[pprLanes]float32)(half[i*pprLanes:])
		c := (*[pprLanes]float64)(cur[i*pprLanes:])
		for b := range c {
			c[b] = float64(h[b])
		}
	}
}

// float32Passes runs SOR passes over a pair's float32 tile until every lane in active
// has left them: its residual (measured as the float64 passes measure it, from the
// float32 sums) is below pprFloat32Tol, or a pass took less than a tenth
// off it, or it has had MaxIter/2 passes. It returns each lane's number of passes.
func (s *PPRSolver) float32Passes(s32 []float32, sidx []uint32, cur []float32, workers int, active uint16, leafMass *[pprLanes32]float64) [pprLanes32]int {
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
				pprTilePass32SIMD(s.path, lay, s32, sidx, d, omega, mask, cur, s0, s1, &r[c], &z[c])
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
