package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The vector float32 passes compute the portable pass's values to float32 rounding
// (they fuse multiply-adds), over every slice in order, and leave the lanes outside
// the mask untouched, bit for bit; the AVX2 and AVX-512 passes give the same bits.
func TestPPRTilePass32(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	const n = 4000
	csr := pprCSR(t, n, pprRandomEdges(rng, n, 3*n, 40))
	s, err := NewPPRSolver(csr, PPRConfig{})
	require.NoError(t, err)
	lay := s.lay
	np := lay.np
	sT := make([]float32, (np+1)*pprLanes32)
	sidx := make([]uint32, np)
	cur := make([]float32, np*pprLanes32)
	k := 0
	for i := range np {
		for b := range pprLanes32 {
			cur[i*pprLanes32+b] = float32(rng.Float64() / 1000)
		}
		if lay.perm[i] < 0 || rng.IntN(3) == 0 {
			sidx[i] = uint32(np)
			continue
		}
		for b := range pprLanes32 {
			sT[k*pprLanes32+b] = float32(rng.Float64() / n)
		}
		sidx[i] = uint32(k)
		k++
	}
	const active = 0b1011_0111_1110_1101
	nsl := len(lay.slicePtr) - 1
	want := append([]float32(nil), cur...)
	var rw, zw pprLaneSums32
	pprTilePass32(lay, lay.str32, lay.inv32, sT, sidx, 0.5, 1.07, active, want, 0, nsl, &rw, &zw)
	var vec []float32 // the first vector path's result
	var vr, vz pprLaneSums32
	for _, path := range CPUKernels()[1:] {
		if !pprFusedPath(path) {
			continue
		}
		got := append([]float32(nil), cur...)
		var rg, zg pprLaneSums32
		pprTilePass32SIMD(path, lay, sT, sidx, 0.5, 1.07, active, got, 0, nsl, &rg, &zg)
		changed := 0
		for i := range np {
			for b := range pprLanes32 {
				j := i*pprLanes32 + b
				if active&(1<<b) == 0 {
					require.Equal(t, math.Float32bits(cur[j]), math.Float32bits(got[j]), "%v: row %d lane %d outside the mask", path, i, b)
					continue
				}
				if got[j] != cur[j] {
					changed++
				}
				// The update ω·(jy − y) + y cancels: the rounding is the terms'.
				tol := 1e-6 * (math.Abs(float64(want[j])) + math.Abs(float64(cur[j])))
				require.InDelta(t, want[j], got[j], tol+1e-12, "%v: row %d lane %d", path, i, b)
			}
		}
		assert.Greater(t, changed, np, "%v: the active lanes are updated", path)
		for b := range pprLanes32 {
			assert.InDelta(t, rw[b], rg[b], 1e-4*float64(rw[b]), "%v: residual lane %d", path, b)
			assert.InDelta(t, zw[b], zg[b], 1e-4*float64(zw[b]), "%v: Σz lane %d", path, b)
		}
		if vec == nil {
			vec, vr, vz = got, rg, zg
			continue
		}
		require.Equal(t, vec, got, "%v: the vector paths' bits", path)
		assert.Equal(t, vr, rg, "%v: residuals", path)
		assert.Equal(t, vz, zg, "%v: Σz", path)
	}
}

// A query's result from SolveBatch's float32 start depends on the query alone: the
// same bits whichever queries share its pair and its tile, and whether its tile has
// a partner at all.
func TestPPRMixedLanesIndependent(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	const n = 3000
	csr := pprCSR(t, n, pprRandomEdges(rng, n, 3*n, 30))
	s, err := NewPPRSolver(csr, PPRConfig{Workers: 2})
	require.NoError(t, err)
	require.True(t, s.mixedBatch())
	kinds := []string{"dense", "seeds", "one", "last"}
	random := func(k int) [][]float64 {
		r := make([][]float64, k)
		for i := range r {
			r[i] = pprRandomReset(rng, n, kinds[i%len(kinds)])
		}
		return r
	}
	mine := random(3)
	batches := [][][]float64{
		append(append([][]float64{}, mine...), random(13)...),                      // first tile of a pair
		append(random(8), append(append([][]float64{}, mine...), random(5)...)...), // second tile
		append(append([][]float64{}, mine...), random(5)...),                       // a tile without a partner
		mine, // a partial tile
		append(random(16), append(append([][]float64{}, mine...), random(6)...)...), // a pair and a tile
	}
	offsets := []int{0, 8, 0, 0, 16}
	var first [][]float64
	for k, batch := range batches {
		xs, stats, err := s.SolveBatch(batch)
		require.NoError(t, err)
		got := xs[offsets[k] : offsets[k]+len(mine)]
		for i := range mine {
			st := stats[offsets[k]+i]
			require.True(t, st.Converged)
			require.Positive(t, st.Float32)
		}
		if k == 0 {
			first = got
			continue
		}
		for i := range mine {
			require.Equal(t, first[i], got[i], "batch %d query %d", k, i)
		}
	}
}

// Strengths float32 cannot carry with room to spare (below 2⁻¹⁰⁰ here) keep the batch
// in float64 throughout: Solve's results, pass for pass.
func TestPPRMixedFallsBackOnExtremeWeights(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	const n = 500
	edges := pprRandomEdges(rng, n, 3*n, 5)
	for k := range edges[:20] {
		edges[k].Weight = 1e-35
	}
	edges = append(edges, Edge{U: 0, V: n - 1, Weight: 1e-36}, Edge{U: n - 2, V: n - 1, Weight: 1e-36})
	csr := pprCSR(t, n, edges)
	s, err := NewPPRSolver(csr, PPRConfig{})
	require.NoError(t, err)
	require.False(t, s.mixedBatch())
	resets := make([][]float64, 9)
	for i := range resets {
		resets[i] = pprRandomReset(rng, n, "dense")
	}
	xs, stats, err := s.SolveBatch(resets)
	require.NoError(t, err)
	for i, r := range resets {
		x, st, err := s.Solve(r)
		require.NoError(t, err)
		assert.Zero(t, stats[i].Float32)
		assert.Equal(t, st.Iterations, stats[i].Iterations)
		assert.Less(t, pprMaxAbs(x, xs[i]), 1e-13, "query %d", i)
	}
}

// FuzzPPRBatch builds a small graph and a batch of resets from the input and checks
// every query of SolveBatch (its float32 start included) and of Solve, on every kernel
// path this CPU offers (the vector paths to the same bits), against the dense
// reference, to the error bound the tolerance gives, at dampings 0.5, 0.85 and
// 0.95: odd shapes (stars, paths,
// isolated nodes, self-loops, parallel edges, all mass on leaves) and batch sizes
// around the tile and pair boundaries.
func FuzzPPRBatch(f *testing.F) {
	f.Add([]byte{12, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 0, 1, 2})
	f.Add([]byte{40, 17, 0, 1, 0, 2, 0, 3, 0, 4, 1, 5, 5, 5, 9, 9, 2, 7, 200, 3, 1, 0, 255, 128})
	f.Add([]byte{3, 9, 0, 0, 1, 1, 2, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 5 {
			return
		}
		n := 2 + int(data[0])%48
		batch := 2 + int(data[1])%34
		workers := 1 + int(data[2])%3
		damping := []float64{0.5, 0.85, 0.95}[int(data[3])%3]
		body := data[4:]
		var edges []Edge
		for k := 0; k+2 < len(body) && len(edges) < 4*n; k += 3 {
			w := float32(1+body[k+2]%200) / 16
			edges = append(edges, Edge{U: int32(int(body[k]) % n), V: int32(int(body[k+1]) % n), Weight: w})
		}
		csr, err := NewSymmetricCSR(n, edges)
		if err != nil {
			t.Skip(err)
		}
		resets := make([][]float64, batch)
		for i := range resets {
			r := make([]float64, n)
			seed := int(data[i%len(data)]) + i
			switch i % 3 {
			case 0: // one node
				r[seed%n] = 1
			case 1: // a few
				for j := 0; j < 3; j++ {
					r[(seed+7*j)%n] += float64(1 + j)
				}
			default: // every node
				for v := range r {
					r[v] = float64(1 + (v*seed)%5)
				}
			}
			resets[i] = r
		}
		wants := make([][]float64, batch)
		for i, r := range resets {
			wants[i] = pprDenseRef(t, n, edges, r, damping)
		}
		bound := 2*DefaultPPRTol/(1-damping) + 1e-12
		var fused [][]float64 // the first fused path's batch and single results
		for _, path := range CPUKernels() {
			s, err := newPPRSolver(csr, PPRConfig{Workers: workers, Damping: damping}, 16)
			require.NoError(t, err)
			s.path = path
			xs, stats, err := s.SolveBatch(resets)
			require.NoError(t, err)
			for i, r := range resets {
				require.True(t, stats[i].Converged, "%v query %d: %+v", path, i, stats[i])
				require.Less(t, pprL1(xs[i], wants[i]), bound, "%v query %d of %d (%+v)", path, i, batch, stats[i])
				x, _, err := s.Solve(r)
				require.NoError(t, err)
				require.Less(t, pprL1(x, wants[i]), bound, "%v query %d, Solve", path, i)
				xs = append(xs, x)
			}
			if !pprFusedPath(path) {
				continue
			}
			if fused == nil {
				fused = xs
				continue
			}
			require.Equal(t, fused, xs, "%v: the vector paths' bits", path)
		}
	})
}
