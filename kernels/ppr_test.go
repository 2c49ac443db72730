package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	_ "github.com/gomlx/compute/gobackend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// pprDenseRef is the specification: it builds the igraph transition matrix M from the
// edge list (undirected; parallel edges summed; a self-loop adds 2w to its row; rows
// of zero-strength nodes replaced by s), solves (I − d·Mᵀ)x = (1−d)s with an LU
// decomposition and normalises x to sum 1.
func pprDenseRef(t *testing.T, n int, edges []Edge, reset []float64, d float64) []float64 {
	t.Helper()
	w := make([][]float64, n)
	for i := range w {
		w[i] = make([]float64, n)
	}
	for _, e := range edges {
		if e.U == e.V {
			w[e.U][e.U] += 2 * float64(e.Weight)
			continue
		}
		w[e.U][e.V] += float64(e.Weight)
		w[e.V][e.U] += float64(e.Weight)
	}
	var total float64
	for _, r := range reset {
		total += r
	}
	s := make([]float64, n)
	for i, r := range reset {
		s[i] = r / total
	}
	a := mat.NewDense(n, n, nil)
	for u := 0; u < n; u++ {
		var str float64
		for _, x := range w[u] {
			str += x
		}
		for v := 0; v < n; v++ {
			m := s[v] // dangling row
			if str > 0 {
				m = w[u][v] / str
			}
			a.Set(v, u, a.At(v, u)-d*m) // row v of I − d·Mᵀ
		}
		a.Set(u, u, a.At(u, u)+1)
	}
	b := mat.NewVecDense(n, nil)
	for i := range s {
		b.SetVec(i, (1-d)*s[i])
	}
	var x mat.VecDense
	require.NoError(t, x.SolveVec(a, b))
	out := make([]float64, n)
	var sum float64
	for i := range out {
		out[i] = x.AtVec(i)
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

// pprRandomEdges returns m edges over the first n−isolated nodes (the rest stay
// isolated), with self-loops, parallel edges in both directions, zero-weight edges and
// dyadic weights (so float32 sums are exact and the reference sees the same graph).
func pprRandomEdges(rng *rand.Rand, n, m, isolated int) []Edge {
	live := n - isolated
	var edges []Edge
	for len(edges) < m {
		u, v := int32(rng.IntN(live)), int32(rng.IntN(live))
		switch r := rng.Float64(); {
		case r < 0.05:
			v = u // self-loop
		case r < 0.08 && len(edges) > 0:
			p := edges[rng.IntN(len(edges))] // parallel edge, maybe reversed
			u, v = p.V, p.U
		}
		w := float32(1+rng.IntN(256)) / 64
		if rng.Float64() < 0.02 {
			w = 0
		}
		edges = append(edges, Edge{U: u, V: v, Weight: w})
	}
	return edges
}

// pprRandomReset returns a reset vector of the given kind.
func pprRandomReset(rng *rand.Rand, n int, kind string) []float64 {
	r := make([]float64, n)
	switch kind {
	case "dense":
		for i := range r {
			r[i] = rng.Float64()
		}
	case "seeds": // HippoRAG: a few entity seeds plus 0.05·score on many passages
		for range 5 {
			r[rng.IntN(n)] += rng.Float64() + 0.1
		}
		for i := 0; i < n; i += 3 {
			r[i] += 0.05 * rng.Float64()
		}
	case "one":
		r[rng.IntN(n)] = 1
	case "last": // the last node (isolated in pprRandomEdges graphs) and one other
		r[n-1] = 2
		r[0] = 1
	}
	return r
}

// pprL1 is Σ|a−b|.
func pprL1(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += math.Abs(a[i] - b[i])
	}
	return s
}

func pprMaxAbs(a, b []float64) float64 {
	var m float64
	for i := range a {
		m = math.Max(m, math.Abs(a[i]-b[i]))
	}
	return m
}

func pprCSR(t *testing.T, n int, edges []Edge) *CSR {
	t.Helper()
	c, err := NewSymmetricCSR(n, edges)
	require.NoError(t, err)
	return c
}

func TestPPRClosedForms(t *testing.T) {
	star := func(k int) []Edge {
		var e []Edge
		for i := 1; i <= k; i++ {
			e = append(e, Edge{U: 0, V: int32(i), Weight: 1})
		}
		return e
	}
	const d = 0.5
	for _, tc := range []struct {
		name  string
		n     int
		edges []Edge
		reset []float64
		want  []float64
	}{
		// Star, reset on the centre: x_c = 1/(1+d), x_leaf = d/(k(1+d)).
		{"star centre", 5, star(4), []float64{1, 0, 0, 0, 0}, []float64{2. / 3, 1. / 12, 1. / 12, 1. / 12, 1. / 12}},
		// Star, reset on leaf 1: x_c = d/(1+d), x_1 = (1−d) + d²/(k(1+d)), others d²/(k(1+d)).
		{"star leaf", 5, star(4), []float64{0, 3, 0, 0, 0}, []float64{1. / 3, 0.5 + 1./24, 1. / 24, 1. / 24, 1. / 24}},
		// Edge {0,1} and triangle {2,3,4}: each component keeps its share of the reset.
		{"two components", 5, []Edge{{0, 1, 2}, {2, 3, 1}, {3, 4, 1}, {4, 2, 1}},
			[]float64{3, 0, 1, 1, 1}, []float64{1. / 3, 1. / 6, 1. / 6, 1. / 6, 1. / 6}},
		// Reset only on one component: the other gets exactly 0.
		{"unreached component", 5, []Edge{{0, 1, 2}, {2, 3, 1}, {3, 4, 1}, {4, 2, 1}},
			[]float64{1, 0, 0, 0, 0}, []float64{2. / 3, 1. / 3, 0, 0, 0}},
		// Isolated node 2 with half the reset: its mass re-enters along s (igraph).
		{"isolated node", 3, []Edge{{0, 1, 1}}, []float64{0, 1, 1}, []float64{2. / 9, 4. / 9, 1. / 3}},
		// Self-loop counts twice in the strength: python-igraph 0.10 gives 3/7, 4/7.
		{"self-loop", 3, []Edge{{0, 0, 1}, {0, 1, 1}}, []float64{0, 1, 0}, []float64{3. / 7, 4. / 7, 0}},
		// Parallel edges are summed: 0–1 with weights 1+2+0.5 is a plain edge.
		{"parallel edges", 2, []Edge{{0, 1, 1}, {1, 0, 2}, {0, 1, 0.5}}, []float64{1, 0}, []float64{2. / 3, 1. / 3}},
		{"single isolated node", 1, nil, []float64{5}, []float64{1}},
	} {
		for _, method := range []PPRMethod{PPRSOR, PPRChebyshev, PPRPower} {
			t.Run(tc.name+"/"+method.String(), func(t *testing.T) {
				x, st, err := PPR(pprCSR(t, tc.n, tc.edges), tc.reset, PPRConfig{Damping: d, Method: method})
				require.NoError(t, err)
				assert.True(t, st.Converged)
				assert.InDeltaSlice(t, tc.want, x, 1e-10)
				assert.InDelta(t, 1, sumInOrder(x), 1e-14)
			})
		}
	}
}

func TestPPRMatchesDenseReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name           string
		n, m, isolated int
		damping        float64
		reset          string
	}{
		{"small dense reset", 30, 60, 4, 0.5, "dense"},
		{"hipporag seeds", 200, 600, 10, 0.5, "seeds"},
		{"one seed", 150, 300, 20, 0.5, "one"},
		{"reset on isolated node", 120, 400, 3, 0.5, "last"},
		{"sparse graph many isolated", 200, 120, 60, 0.5, "dense"},
		{"damping 0.85", 200, 700, 5, 0.85, "seeds"},
		{"damping 0.2", 100, 300, 5, 0.2, "dense"},
	} {
		edges := pprRandomEdges(rng, tc.n, tc.m, tc.isolated)
		reset := pprRandomReset(rng, tc.n, tc.reset)
		want := pprDenseRef(t, tc.n, edges, reset, tc.damping)
		csr := pprCSR(t, tc.n, edges)
		for _, method := range []PPRMethod{PPRSOR, PPRChebyshev, PPRPower} {
			t.Run(tc.name+"/"+method.String(), func(t *testing.T) {
				// Small chunks so that several goroutines share even these graphs.
				s, err := newPPRSolver(csr, PPRConfig{Damping: tc.damping, Method: method, Workers: 3, MaxIter: 300}, 64)
				require.NoError(t, err)
				require.Greater(t, s.numChunks(), 1)
				x, st, err := s.Solve(reset)
				require.NoError(t, err)
				assert.True(t, st.Converged)
				assert.Less(t, st.Residual, DefaultPPRTol)
				// Error bound 2·Tol/(1−d) in L1.
				assert.Less(t, pprMaxAbs(x, want), 2*DefaultPPRTol/(1-tc.damping))
				assert.InDelta(t, 1, sumInOrder(x), 1e-13)
				for v := range x {
					assert.GreaterOrEqual(t, x[v], 0.0)
				}
			})
		}
	}
}

func TestPPRIterationCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 2000
	csr := pprCSR(t, n, pprRandomEdges(rng, n, 3*n, 10))
	reset := pprRandomReset(rng, n, "seeds")
	for _, tc := range []struct {
		damping    float64
		method     PPRMethod
		minIt, max int
	}{
		// Power: residual falls like d^k; Chebyshev like (d/(1+√(1−d²)))^k.
		{0.5, PPRPower, 25, 36},
		{0.5, PPRChebyshev, 12, 20},
		{0.85, PPRPower, 110, 150},
		{0.85, PPRChebyshev, 25, 45},
		// SOR with the self-loops solved for in the diagonal (pprDropLoops) and ω 1.5 %
		// above Young's (pprSOROmega): 11 and 22 passes (12 and 24 with Young's ω).
		// With the loops left in the rows a node whose strength is mostly a loop
		// converged like d per pass, and this graph's 10 loops took 18 and 47.
		{0.5, PPRSOR, 9, 11},
		{0.85, PPRSOR, 18, 22},
	} {
		t.Run(tc.method.String(), func(t *testing.T) {
			_, st, err := PPR(csr, reset, PPRConfig{Damping: tc.damping, Method: tc.method, MaxIter: 200})
			require.NoError(t, err)
			assert.True(t, st.Converged)
			assert.GreaterOrEqual(t, st.Iterations, tc.minIt)
			assert.LessOrEqual(t, st.Iterations, tc.max)
		})
	}
}

func TestPPRBatchEqualsSingle(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 3000
	csr := pprCSR(t, n, pprRandomEdges(rng, n, 3*n, 30))
	kinds := []string{"dense", "seeds", "one", "last"}
	tight, err := NewPPRSolver(csr, PPRConfig{Tol: 1e-15, MaxIter: 200})
	require.NoError(t, err)
	for _, batch := range []int{2, 8, 9, 19} { // partial tiles, a lone query, 3 tiles
		resets := make([][]float64, batch)
		for i := range resets {
			resets[i] = pprRandomReset(rng, n, kinds[i%len(kinds)])
		}
		for _, method := range []PPRMethod{PPRSOR, PPRChebyshev, PPRPower} {
			for _, path := range CPUKernels() {
				for _, f64 := range []bool{true, false} {
					s, err := NewPPRSolver(csr, PPRConfig{Method: method, Float64Batch: f64})
					require.NoError(t, err)
					s.path = path
					xs, stats, err := s.SolveBatch(resets)
					require.NoError(t, err)
					require.Len(t, xs, batch)
					msg := fmt.Sprintf("%v batch %d kernels %v float64 %v", method, batch, path, f64)
					for i, r := range resets {
						x, st, err := s.Solve(r)
						require.NoError(t, err)
						assert.True(t, stats[i].Converged, msg)
						assert.InDelta(t, 1, sumInOrder(xs[i]), 1e-13, msg)
						lone := i == batch-1 && batch%pprLanes == 1
						if f64 || method != PPRSOR || lone {
							// Solve to rounding, pass for pass.
							assert.Zero(t, stats[i].Float32, msg)
							assert.Equal(t, st.Iterations, stats[i].Iterations, "%s query %d", msg, i)
							assert.Less(t, pprMaxAbs(x, xs[i]), 1e-13, "%s query %d", msg, i)
							continue
						}
						// The float32 start: most passes in float32, the same
						// tolerance, the same error bound (2·Tol/(1−d) in L1).
						assert.GreaterOrEqual(t, stats[i].Float32, st.Iterations/2, "%s query %d", msg, i)
						assert.Less(t, stats[i].Iterations-stats[i].Float32, st.Iterations, "%s query %d", msg, i)
						assert.Less(t, stats[i].Residual, DefaultPPRTol, msg)
						ref, _, err := tight.Solve(r)
						require.NoError(t, err)
						bound := 2 * DefaultPPRTol / (1 - DefaultPPRDamping)
						assert.Less(t, pprL1(xs[i], ref), bound, "%s query %d", msg, i)
						assert.Less(t, pprL1(x, ref), bound, "%s query %d", msg, i)
					}
				}
			}
		}
	}
}

func TestPPRWorkersDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const n = 20000
	csr := pprCSR(t, n, pprRandomEdges(rng, n, 3*n, 100))
	// 25 queries: three tiles and a lone query. With 2 workers two tiles run one per
	// goroutine and the third shares out its chunks; with 3 all three run side by
	// side; with 5 every tile shares out its chunks.
	kinds := []string{"seeds", "dense", "one"}
	resets := make([][]float64, 25)
	for i := range resets {
		resets[i] = pprRandomReset(rng, n, kinds[i%len(kinds)])
	}
	var x1 []float64
	var b1 [][]float64
	for _, workers := range []int{1, 2, 3, 5} {
		s, err := NewPPRSolver(csr, PPRConfig{Workers: workers})
		require.NoError(t, err)
		require.Greater(t, s.numChunks(), 5)
		x, _, err := s.Solve(resets[0])
		require.NoError(t, err)
		b, _, err := s.SolveBatch(resets)
		require.NoError(t, err)
		if workers == 1 {
			x1, b1 = x, b
			continue
		}
		assert.Equal(t, x1, x, "single query, %d workers", workers)
		assert.Equal(t, b1, b, "batch, %d workers", workers)
	}
}

// SolveNodes and SolveBatchNodes give the listed nodes the bits Solve and SolveBatch
// give them, for every iteration, and a solver's recycled workspace and tile give the
// bits fresh ones do: the same resets solved again after others (a dense one, which
// leaves every entry non-zero) return the same vectors.
func TestPPRSolveNodesAndReuse(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const n = 5000
	csr := pprCSR(t, n, pprRandomEdges(rng, n, 3*n, 40))
	resets := [][]float64{pprRandomReset(rng, n, "seeds"), pprRandomReset(rng, n, "dense"), pprRandomReset(rng, n, "one")}
	nodes := []int32{n - 1, 0, 17, 17, int32(n / 2)}
	for _, method := range []PPRMethod{PPRSOR, PPRChebyshev, PPRPower} {
		for _, path := range CPUKernels() {
			fresh := make([][]float64, len(resets))
			for i, r := range resets {
				s, err := NewPPRSolver(csr, PPRConfig{Method: method})
				require.NoError(t, err)
				s.path = path
				fresh[i], _, err = s.Solve(r)
				require.NoError(t, err)
			}
			s, err := NewPPRSolver(csr, PPRConfig{Method: method})
			require.NoError(t, err)
			s.path = path
			for round := range 2 {
				for i, r := range resets {
					x, _, err := s.Solve(r)
					require.NoError(t, err)
					assert.Equal(t, fresh[i], x, "%v kernels %v round %d reset %d: reused workspace", method, path, round, i)
					sub, st, err := s.SolveNodes(r, nodes)
					require.NoError(t, err)
					assert.True(t, st.Converged)
					require.Len(t, sub, len(nodes))
					for j, v := range nodes {
						assert.Equal(t, math.Float64bits(fresh[i][v]), math.Float64bits(sub[j]), "%v reset %d node %d", method, i, v)
					}
				}
			}
			// Batches: a tile of 8 and a lone query, twice (the tile is recycled).
			var batch [][]float64
			for i := range 9 {
				batch = append(batch, resets[i%len(resets)])
			}
			want, _, err := s.SolveBatch(batch)
			require.NoError(t, err)
			for round := range 2 {
				again, _, err := s.SolveBatch(batch)
				require.NoError(t, err)
				assert.Equal(t, want, again, "%v round %d: recycled tile", method, round)
				sub, _, err := s.SolveBatchNodes(batch, nodes)
				require.NoError(t, err)
				require.Len(t, sub, len(batch))
				for i := range batch {
					require.Len(t, sub[i], len(nodes))
					for j, v := range nodes {
						assert.Equal(t, math.Float64bits(want[i][v]), math.Float64bits(sub[i][j]), "%v batch query %d node %d", method, i, v)
					}
				}
			}
			_, _, err = s.SolveBatchNodes(batch, []int32{-1})
			assert.ErrorContains(t, err, "node -1 (entry 0) out of range")
			empty, _, err := s.SolveNodes(resets[0], nil)
			require.NoError(t, err)
			assert.Empty(t, empty)
			_, _, err = s.SolveNodes(resets[0], []int32{0, n})
			assert.ErrorContains(t, err, "node 5000 (entry 1) out of range")
			_, _, err = s.SolveNodes(make([]float64, n), nodes)
			assert.ErrorContains(t, err, "sums to 0")
		}
	}
}

func TestPPRNotConverged(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	csr := pprCSR(t, 100, pprRandomEdges(rng, 100, 300, 2))
	reset := pprRandomReset(rng, 100, "one")
	x, st, err := PPR(csr, reset, PPRConfig{MaxIter: 3})
	require.NoError(t, err)
	assert.False(t, st.Converged)
	assert.Equal(t, 3, st.Iterations)
	assert.Greater(t, st.Residual, DefaultPPRTol)
	assert.InDelta(t, 1, sumInOrder(x), 1e-14)
}

func TestPPRErrors(t *testing.T) {
	good := func(t *testing.T) *CSR { return pprCSR(t, 3, []Edge{{0, 1, 1}, {1, 2, 1}}) }
	nan := float32(math.NaN())
	for _, tc := range []struct {
		name  string
		csr   func(t *testing.T) *CSR
		reset []float64
		cfg   PPRConfig
		want  string
	}{
		{"all-zero reset", good, []float64{0, 0, 0}, PPRConfig{}, "sums to 0"},
		{"negative reset", good, []float64{1, -1, 0}, PPRConfig{}, "reset[1] = -1"},
		{"NaN reset", good, []float64{1, math.NaN(), 0}, PPRConfig{}, "reset[1] = NaN"},
		{"Inf reset", good, []float64{math.Inf(1), 0, 0}, PPRConfig{}, "reset[0] = +Inf"},
		{"-Inf reset", good, []float64{1, 0, math.Inf(-1)}, PPRConfig{}, "reset[2] = -Inf"},
		{"all negative zeros", good, []float64{math.Copysign(0, -1), 0, math.Copysign(0, -1)}, PPRConfig{}, "sums to 0"},
		{"wrong length", good, []float64{1, 0}, PPRConfig{}, "2 entries for 3 nodes"},
		{"nil matrix", func(*testing.T) *CSR { return nil }, []float64{1}, PPRConfig{}, "nil matrix"},
		{"NaN weight", func(*testing.T) *CSR {
			return &CSR{N: 2, RowPtr: []int32{0, 1, 2}, Col: []int32{1, 0}, Val: []float32{nan, nan}}
		}, []float64{1, 0}, PPRConfig{}, "weights must be non-negative"},
		{"Inf weight", func(*testing.T) *CSR {
			inf := float32(math.Inf(1))
			return &CSR{N: 2, RowPtr: []int32{0, 1, 2}, Col: []int32{1, 0}, Val: []float32{inf, inf}}
		}, []float64{1, 0}, PPRConfig{}, "infinite weight"},
		{"directed matrix", func(*testing.T) *CSR {
			return &CSR{N: 2, RowPtr: []int32{0, 1, 1}, Col: []int32{1}, Val: []float32{1}}
		}, []float64{1, 0}, PPRConfig{}, "must be undirected"},
		{"asymmetric weights", func(*testing.T) *CSR {
			return &CSR{N: 2, RowPtr: []int32{0, 1, 2}, Col: []int32{1, 0}, Val: []float32{1, 2}}
		}, []float64{1, 0}, PPRConfig{}, "entry (0,1) has weight 1 but (1,0) has 2"},
		{"unsorted row", func(*testing.T) *CSR {
			return &CSR{N: 3, RowPtr: []int32{0, 2, 3, 4}, Col: []int32{2, 1, 0, 0}, Val: []float32{1, 1, 1, 1}}
		}, []float64{1, 0, 0}, PPRConfig{}, "not sorted"},
		{"bad row pointer", func(*testing.T) *CSR {
			return &CSR{N: 2, RowPtr: []int32{0, 1}, Col: []int32{1}, Val: []float32{1}}
		}, []float64{1, 0}, PPRConfig{}, "row pointer"},
		{"damping 1", good, []float64{1, 0, 0}, PPRConfig{Damping: 1}, "damping 1 outside"},
		{"negative tolerance", good, []float64{1, 0, 0}, PPRConfig{Tol: -1}, "tolerance"},
		{"negative MaxIter", good, []float64{1, 0, 0}, PPRConfig{MaxIter: -1}, "MaxIter"},
		{"unknown method", good, []float64{1, 0, 0}, PPRConfig{Method: 7}, "unknown method"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := PPR(tc.csr(t), tc.reset, tc.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			if c := tc.csr(t); c != nil && c.Validate() == nil && len(tc.reset) == c.N {
				ok := make([]float64, c.N)
				ok[0] = 1
				_, _, err = PPRBatch(c, [][]float64{ok, tc.reset}, tc.cfg)
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.want)
			}
		})
	}
}

func TestSanitizePPRReset(t *testing.T) {
	in := []float64{1, -2, math.NaN(), 0, 0.5, math.Inf(1)}
	assert.Equal(t, []float64{1, 0, 0, 0, 0.5, math.Inf(1)}, SanitizePPRReset(in))
	assert.True(t, math.IsNaN(in[2]), "input untouched")

	r := []float64{1, -2, math.NaN(), 0, 0.5, math.Inf(1)}
	assert.True(t, SanitizePPRResetInPlace(r))
	assert.Equal(t, []float64{1, 0, 0, 0, 0.5, math.Inf(1)}, r, "in place, as SanitizePPRReset")
	assert.False(t, SanitizePPRResetInPlace([]float64{-1, math.NaN(), 0}), "nothing positive left")
	z := []float64{math.Copysign(0, -1), 2}
	assert.True(t, SanitizePPRResetInPlace(z))
	assert.Equal(t, uint64(0), math.Float64bits(z[0]), "-0 becomes +0")
}

// TestPPRResetScaleSkipsZeros holds resetScale, which skips zero entries, to the plain
// left-to-right sum of every entry, bit for bit.
func TestPPRResetScaleSkipsZeros(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 400
	s, err := NewPPRSolver(pprCSR(t, n, pprRandomEdges(rng, n, 1200, 8)), PPRConfig{})
	require.NoError(t, err)
	for _, kind := range []string{"seeds", "last", "one", "dense"} {
		reset := pprRandomReset(rng, n, kind)
		if i := slices.Index(reset, 0); i >= 0 {
			reset[i] = math.Copysign(0, -1)
		}
		var sum float64
		for _, v := range reset {
			sum += v
		}
		got, err := s.resetScale(reset)
		require.NoError(t, err, kind)
		assert.Equal(t, math.Float64bits(1/sum), math.Float64bits(got), kind)
	}
}

func TestPPRGoMLXMatchesCPU(t *testing.T) {
	backend, err := compute.NewWithConfig("go")
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(11, 12))
	const n = 300
	csr := pprCSR(t, n, pprRandomEdges(rng, n, 900, 12))
	resets := [][]float64{pprRandomReset(rng, n, "seeds"), pprRandomReset(rng, n, "last"), pprRandomReset(rng, n, "one")}
	for _, tc := range []struct {
		dtype     dtypes.DType
		method    PPRMethod
		tol       float64
		cpuMethod PPRMethod // the CPU kernel's method it stops as (its own unless set)
	}{
		{dtypes.Float32, PPRChebyshev, 1e-5, PPRChebyshev},
		{dtypes.Float32, PPRPower, 1e-5, PPRPower},
		{dtypes.Float64, PPRChebyshev, 1e-9, PPRChebyshev},
		// The default, SOR (a sweep colour by colour), runs as Chebyshev when batched,
		// not as the slower power iteration.
		{dtypes.Float64, PPRSOR, 1e-9, PPRChebyshev},
	} {
		t.Run(tc.dtype.String()+"/"+tc.method.String(), func(t *testing.T) {
			cfg := PPRConfig{Method: tc.method}
			g, err := NewPPRGoMLX(backend, csr, cfg, tc.dtype)
			require.NoError(t, err)
			defer g.Close()
			want, wantStats, err := PPRBatch(csr, resets, PPRConfig{Method: tc.cpuMethod})
			require.NoError(t, err)
			xs, st, err := g.SolveBatch(resets)
			require.NoError(t, err)
			assert.True(t, st.Converged)
			for i := range resets {
				assert.Less(t, pprMaxAbs(xs[i], want[i]), tc.tol, "query %d", i)
				assert.InDelta(t, 1, sumInOrder(xs[i]), 1e-5)
			}
			if tc.dtype == dtypes.Float64 {
				maxIt := 0
				for _, s := range wantStats {
					maxIt = max(maxIt, s.Iterations)
				}
				assert.Equal(t, maxIt, st.Iterations, "same stopping rule as the CPU kernel")
			}
			x, _, err := g.Solve(resets[0])
			require.NoError(t, err)
			assert.Less(t, pprMaxAbs(x, want[0]), tc.tol)
			_, _, err = g.Solve(make([]float64, n))
			assert.ErrorContains(t, err, "sums to 0")
		})
	}
}

func TestPPRSolverConcurrentUse(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	const n = 4000
	csr := pprCSR(t, n, pprRandomEdges(rng, n, 3*n, 40))
	s, err := NewPPRSolver(csr, PPRConfig{Workers: 2})
	require.NoError(t, err)
	resets := make([][]float64, 6)
	want := make([][]float64, len(resets))
	for i := range resets {
		resets[i] = pprRandomReset(rng, n, "seeds")
		want[i], _, err = s.Solve(resets[i])
		require.NoError(t, err)
	}
	before := append([]float64(nil), resets[0]...)
	got := make([][]float64, len(resets))
	done := make(chan int)
	for i := range resets {
		go func() {
			got[i], _, _ = s.Solve(resets[i])
			done <- i
		}()
	}
	for range resets {
		<-done
	}
	assert.Equal(t, want, got)
	assert.Equal(t, before, resets[0], "Solve must not modify its input")
}

func ExamplePPRSolver() {
	// A star: hub 0 with four leaves; personalise on the hub (HippoRAG 2 damping 0.5).
	csr, err := NewSymmetricCSR(5, []Edge{{0, 1, 1}, {0, 2, 1}, {0, 3, 1}, {0, 4, 1}})
	if err != nil {
		panic(err)
	}
	s, err := NewPPRSolver(csr, DefaultPPRConfig())
	if err != nil {
		panic(err)
	}
	x, st, err := s.Solve([]float64{1, 0, 0, 0, 0})
	if err != nil {
		panic(err)
	}
	fmt.Printf("hub %.4f, leaf %.4f, converged %v\n", x[0], x[1], st.Converged)
	// Output: hub 0.6667, leaf 0.0833, converged true
}

// hippoLikeEdges returns a HippoRAG-shaped graph: passages 0..p−1 each linked to a few
// entities (weight 1), entities p..n−1 linked by facts (weight 2·count) and a few
// synonym edges (weight 2·cosine).
func hippoLikeEdges(rng *rand.Rand, p, e int) []Edge {
	var edges []Edge
	for i := range p {
		for range 2 + rng.IntN(4) {
			edges = append(edges, Edge{U: int32(i), V: int32(p + rng.IntN(e)), Weight: 1})
		}
	}
	for range 2 * e {
		u, v := p+rng.IntN(e), p+rng.IntN(e)
		if u != v {
			edges = append(edges, Edge{U: int32(u), V: int32(v), Weight: float32(2 * (1 + rng.IntN(2)))})
		}
	}
	for range e / 10 {
		edges = append(edges, Edge{U: int32(p + rng.IntN(e)), V: int32(p + rng.IntN(e)), Weight: float32(1.6 + 0.4*rng.Float64())})
	}
	return edges
}

// TestPPRSORFewerPasses: on a graph shaped like HippoRAG 2's, at its damping, SOR by
// colour reaches the same tolerance in fewer passes than Chebyshev, and both stay
// within the error bound of the dense solution.
func TestPPRSORFewerPasses(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const p, e = 300, 500
	edges := hippoLikeEdges(rng, p, e)
	csr := pprCSR(t, p+e, edges)
	reset := make([]float64, p+e)
	for i := range p {
		reset[i] = 0.05 * rng.Float64()
	}
	for range 5 {
		reset[p+rng.IntN(e)] += 1
	}
	want := pprDenseRef(t, p+e, edges, reset, 0.5)
	passes := map[PPRMethod]int{}
	for _, m := range []PPRMethod{PPRSOR, PPRChebyshev} {
		x, st, err := PPR(csr, reset, PPRConfig{Method: m})
		require.NoError(t, err)
		require.True(t, st.Converged)
		var l1 float64
		for i := range x {
			l1 += math.Abs(x[i] - want[i])
		}
		assert.Less(t, l1, 2*DefaultPPRTol/(1-0.5), m.String())
		passes[m] = st.Iterations
	}
	assert.Less(t, float64(passes[PPRSOR]), 0.8*float64(passes[PPRChebyshev]), "passes %v", passes)
}

// TestPPRColouringLayout: no two neighbours share a colour, every node is laid out once,
// and each chunk holds the rows of one colour only (padding rows apart).
func TestPPRColouringLayout(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, tc := range []struct {
		name  string
		n     int
		edges []Edge
	}{
		{"random with self-loops", 500, pprRandomEdges(rng, 500, 2000, 20)},
		{"hipporag-like", 700, hippoLikeEdges(rng, 300, 400)},
		{"no edges", 13, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			csr := pprCSR(t, tc.n, tc.edges)
			colours := pprColouring(csr)
			colour := make([]int, tc.n)
			seen := 0
			for k, vs := range colours {
				require.NotEmpty(t, vs)
				for _, v := range vs {
					colour[v] = k
					seen++
				}
			}
			require.Equal(t, tc.n, seen)
			for _, e := range tc.edges {
				if e.U != e.V && e.Weight > 0 { // the CSR drops weightless edges
					assert.NotEqual(t, colour[e.U], colour[e.V], "edge %d–%d", e.U, e.V)
				}
			}
			l := newPPRLayout(csr, pprSellSigma, 64, true, 0)
			require.Len(t, l.colourChunk, len(colours)+1)
			require.Equal(t, len(l.chunk)-1, int(l.colourChunk[len(colours)]))
			laid := make([]int, tc.n)
			for k := range colours {
				for c := l.colourChunk[k]; c < l.colourChunk[k+1]; c++ {
					for i := int(l.chunk[c]) * pprSellRows; i < int(l.chunk[c+1])*pprSellRows; i++ {
						if v := l.perm[i]; v >= 0 {
							assert.Equal(t, k, colour[v])
							laid[v]++
						} else {
							assert.Equal(t, 1.0, l.str[i])
						}
					}
				}
			}
			for v, c := range laid {
				assert.Equal(t, 1, c, "node %d", v)
			}
		})
	}
}

// pprLeafyGraph is a HippoRAG-shaped graph: chunks joined to their entities, most
// entities in one chunk only (leaves), a few facts between entities, and the corner
// cases of elimination: a pair component (two leaves of each other), a star whose
// centre has only leaves, a leaf hanging off a node with a self-loop, isolated nodes.
// It returns the edges and the nodes pprFindLeaves must eliminate.
func pprLeafyGraph(rng *rand.Rand, chunks, entities int) (n int, edges []Edge, leaves []int32) {
	// Nodes: entities [0, entities), chunks after them, then the corner cases.
	mentions := make([]int, entities)
	for c := range chunks {
		for range 3 + rng.IntN(4) {
			e := rng.IntN(entities)
			mentions[e]++
			edges = append(edges, Edge{U: int32(e), V: int32(entities + c), Weight: float32(1+rng.IntN(4)) / 4})
		}
	}
	for range entities / 10 {
		u, v := rng.IntN(entities), rng.IntN(entities)
		if mentions[u] > 1 && mentions[v] > 1 && u != v {
			mentions[u] += 2 // not a leaf any more
			mentions[v] += 2
			edges = append(edges, Edge{U: int32(u), V: int32(v), Weight: 2})
		}
	}
	n = entities + chunks
	pair := [2]int32{int32(n), int32(n + 1)}
	centre := int32(n + 2)
	edges = append(edges, Edge{U: pair[0], V: pair[1], Weight: 1})
	for k := range int32(4) {
		edges = append(edges, Edge{U: centre, V: centre + 1 + k, Weight: float32(k+1) / 2})
	}
	loop := centre + 5
	edges = append(edges, Edge{U: loop, V: loop, Weight: 1}, Edge{U: loop, V: 0, Weight: 1}, Edge{U: loop + 1, V: loop, Weight: 0.5})
	n = int(loop) + 2 + 3 // and three isolated nodes
	// A leaf: one distinct neighbour, not itself, which has another (an entity that a
	// chunk mentions twice has one merged entry: a leaf too).
	nbrs := make([]map[int32]bool, n)
	for _, e := range edges {
		for _, p := range [][2]int32{{e.U, e.V}, {e.V, e.U}} {
			if nbrs[p[0]] == nil {
				nbrs[p[0]] = map[int32]bool{}
			}
			nbrs[p[0]][p[1]] = true
		}
	}
	for v := range int32(n) {
		if len(nbrs[v]) == 1 && !nbrs[v][v] {
			for u := range nbrs[v] {
				if len(nbrs[u]) > 1 {
					leaves = append(leaves, v)
				}
			}
		}
	}
	return n, edges, leaves
}

// The SOR solver eliminates a graph's leaves exactly: its scores equal the dense
// reference's to a tight tolerance (every leaf and every other node), Solve,
// SolveNodes and SolveBatch agree on them, and the solver without elimination
// (Chebyshev) finds the same scores.
func TestPPRLeafElimination(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	n, edges, leaves := pprLeafyGraph(rng, 60, 150)
	csr := pprCSR(t, n, edges)
	s, err := newPPRSolver(csr, PPRConfig{Tol: 1e-14, Workers: 3}, 64)
	require.NoError(t, err)
	require.Greater(t, s.numChunks(), 1)
	var got, bridges []int32
	for k, v := range s.lay.leaves.node {
		if s.lay.leaves.parent2[k] < 0 {
			got = append(got, v)
		} else {
			bridges = append(bridges, v)
		}
	}
	slices.Sort(got)
	require.Equal(t, leaves, got, "eliminated leaves")
	require.Greater(t, len(leaves), 40)
	require.Greater(t, len(bridges), 10, "entities of two chunks")
	for _, v := range bridges { // two distinct neighbours, kept, not next to another bridge
		nb := csr.Col[csr.RowPtr[v]:csr.RowPtr[v+1]]
		require.Len(t, nb, 2)
		require.NotEqual(t, nb[0], nb[1])
		for _, u := range nb {
			require.GreaterOrEqual(t, s.lay.pos[u], int32(0), "bridge %d: neighbour %d is a row", v, u)
		}
	}
	cheb, err := NewPPRSolver(csr, PPRConfig{Tol: 1e-14, Method: PPRChebyshev})
	require.NoError(t, err)
	require.Empty(t, cheb.lay.leaves.node)
	nodes := make([]int32, n)
	for v := range nodes {
		nodes[v] = int32(n - 1 - v)
	}
	var resets [][]float64
	for _, kind := range []string{"seeds", "dense", "one"} {
		resets = append(resets, pprRandomReset(rng, n, kind))
	}
	onLeaf := make([]float64, n) // all reset mass on leaves
	onLeaf[leaves[0]], onLeaf[leaves[len(leaves)-1]] = 1, 3
	resets = append(resets, onLeaf)
	batch, bstats, err := s.SolveBatch(resets)
	require.NoError(t, err)
	s64, err := newPPRSolver(csr, PPRConfig{Tol: 1e-14, Workers: 3, Float64Batch: true}, 64)
	require.NoError(t, err)
	batch64, b64stats, err := s64.SolveBatch(resets)
	require.NoError(t, err)
	for i, reset := range resets {
		want := pprDenseRef(t, n, edges, reset, DefaultPPRDamping)
		x, st, err := s.Solve(reset)
		require.NoError(t, err)
		assert.True(t, st.Converged)
		assert.Less(t, pprMaxAbs(x, want), 1e-13, "reset %d against the dense reference", i)
		xc, _, err := cheb.Solve(reset)
		require.NoError(t, err)
		assert.Less(t, pprMaxAbs(x, xc), 1e-13, "reset %d against Chebyshev", i)
		sub, _, err := s.SolveNodes(reset, nodes)
		require.NoError(t, err)
		for j, v := range nodes {
			require.Equal(t, x[v], sub[j], "reset %d node %d", i, v)
		}
		// The float64 batch is Solve to rounding; the default one starts in float32
		// and meets the same tolerance.
		assert.Equal(t, st.Iterations, b64stats[i].Iterations)
		assert.Less(t, pprMaxAbs(x, batch64[i]), 1e-15, "reset %d float64 batch", i)
		assert.Positive(t, bstats[i].Float32, "reset %d", i)
		assert.True(t, bstats[i].Converged, "reset %d", i)
		assert.Less(t, pprMaxAbs(batch[i], want), 1e-13, "reset %d batch against the dense reference", i)
		assert.InDelta(t, 1, sumInOrder(x), 1e-13)
	}
}

// Bridges in the shapes that test their conditions: a path (its ends are leaves, and
// nodes next to a leaf stay), cycles (every node has degree 2: alternate ones go, and
// in a 4-cycle two bridges join the same pair, whose fills are summed; in a triangle
// the fill joins an existing edge), weighted. Scores match the dense reference.
func TestPPRBridgeShapes(t *testing.T) {
	ring := func(n int) []Edge {
		var e []Edge
		for i := range n {
			e = append(e, Edge{U: int32(i), V: int32((i + 1) % n), Weight: float32(1+i%3) / 2})
		}
		return e
	}
	path := ring(8)[:7]
	for _, tc := range []struct {
		name    string
		n       int
		edges   []Edge
		bridges []int32
	}{
		{"path", 8, path, []int32{2, 4}},
		{"triangle", 3, ring(3), []int32{0}},
		{"4-cycle", 4, ring(4), []int32{0, 2}},
		{"6-cycle", 6, ring(6), []int32{0, 2, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			csr := pprCSR(t, tc.n, tc.edges)
			s, err := NewPPRSolver(csr, PPRConfig{Tol: 1e-15})
			require.NoError(t, err)
			var bridges []int32
			for k, v := range s.lay.leaves.node {
				if s.lay.leaves.parent2[k] >= 0 {
					bridges = append(bridges, v)
				}
			}
			slices.Sort(bridges)
			assert.Equal(t, tc.bridges, bridges)
			rng := rand.New(rand.NewPCG(35, 36))
			for _, kind := range []string{"dense", "one"} {
				reset := pprRandomReset(rng, tc.n, kind)
				x, _, err := s.Solve(reset)
				require.NoError(t, err)
				assert.Less(t, pprMaxAbs(x, pprDenseRef(t, tc.n, tc.edges, reset, DefaultPPRDamping)), 1e-13, kind)
			}
		})
	}
}

// Eliminating the leaves takes fewer passes over fewer rows, and the stopping test
// stays valid: at the default tolerance the scores are as close to the reference as
// the bound of PPRConfig.Tol promises.
func TestPPRLeafEliminationTolerance(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	n, edges, _ := pprLeafyGraph(rng, 400, 1200)
	csr := pprCSR(t, n, edges)
	s, err := NewPPRSolver(csr, PPRConfig{})
	require.NoError(t, err)
	assert.Less(t, s.lay.np, n*8/10, "rows after elimination")
	for _, kind := range []string{"seeds", "dense", "one"} {
		reset := pprRandomReset(rng, n, kind)
		want := pprDenseRef(t, n, edges, reset, DefaultPPRDamping)
		x, st, err := s.Solve(reset)
		require.NoError(t, err)
		require.True(t, st.Converged)
		var l1 float64
		for v := range x {
			l1 += math.Abs(x[v] - want[v])
		}
		assert.Less(t, l1, 2*DefaultPPRTol/(1-DefaultPPRDamping), kind)
	}
}

// TestPPRCompactResets checks the reset tile's packing on a chunk of rows: every row
// reads back its own bits through sidx, zero rows (and only rows whose every bit is
// zero: a −0 lane is kept) point at the zero row np, the kept rows sit in order from
// the chunk's first row, rows outside the chunk are untouched, and y_0 = s·inv is
// exact, for the portable and the vector versions alike.
func TestPPRCompactResets(t *testing.T) {
	const np, lo, hi = 12, 2, 11
	negZero := math.Copysign(0, -1)
	rows := map[int][pprLanes]float64{
		3:  {1, 0, 0, 0, 0, 0, 0, 0},
		4:  {0, 0, 0, 0, 0, 0, 0, 2.5e-310}, // subnormal in the last lane
		6:  {0, 0, 0, negZero, 0, 0, 0, 0},
		7:  {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8},
		10: {0, 3, 0, 0, 0, 0, 0, 0},
		11: {9, 9, 9, 9, 9, 9, 9, 9}, // outside [lo, hi)
		0:  {7, 0, 0, 0, 0, 0, 0, 0}, // outside [lo, hi)
	}
	for _, path := range CPUKernels() {
		s := make([]float64, (np+1)*pprLanes)
		for i, r := range rows {
			copy(s[i*pprLanes:], r[:])
		}
		orig := append([]float64(nil), s...)
		inv := make([]float64, np)
		for i := range inv {
			inv[i] = 1 / float64(i+3)
		}
		cur := make([]float64, np*pprLanes)
		sidx := make([]uint32, np)
		pprCompactResetsSIMD(path, s, cur, sidx, inv, np, lo, hi)
		kept := []uint32{}
		for i := lo; i < hi; i++ {
			for b := range pprLanes {
				want := orig[i*pprLanes+b]
				assert.Equal(t, math.Float64bits(want), math.Float64bits(s[int(sidx[i])*pprLanes+b]), "kernels %v row %d lane %d", path, i, b)
				assert.Equal(t, math.Float64bits(want*inv[i]), math.Float64bits(cur[i*pprLanes+b]), "kernels %v y0 row %d lane %d", path, i, b)
			}
			if _, ok := rows[i]; ok {
				kept = append(kept, sidx[i])
			} else {
				assert.Equal(t, uint32(np), sidx[i], "kernels %v zero row %d", path, i)
			}
		}
		assert.Equal(t, []uint32{lo, lo + 1, lo + 2, lo + 3, lo + 4}, kept, "kernels %v: rows 3, 4, 6, 7, 10 packed in order", path)
		assert.Equal(t, orig[:lo*pprLanes], s[:lo*pprLanes], "rows before the chunk")
		assert.Equal(t, orig[hi*pprLanes:], s[hi*pprLanes:], "rows after the chunk and the zero row")
	}
}

// TestPPRTileTotals holds the totals of a tile's lanes on every kernel path to the
// portable ones bit for bit (a fused multiply-add would change the last bits), padding rows skipped.
func TestPPRTileTotals(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const np = 203
	y, mass, perm := make([]float64, np*pprLanes), make([]float64, np), make([]int32, np)
	for i := range y {
		y[i] = rng.Float64() / 3
	}
	for i := range mass {
		mass[i], perm[i] = 0.1+rng.Float64()*7, int32(i)
		if i%17 == 5 {
			perm[i], mass[i] = -1, math.NaN() // a padding row's entries are never read
		}
	}
	want := pprTileTotals(y, mass, perm, 3, 197)
	var ref [pprLanes]float64
	for v := 3; v < 197; v++ {
		if perm[v] >= 0 {
			for b := range ref {
				p := y[v*pprLanes+b] * mass[v]
				ref[b] = ref[b] + float64(p)
			}
		}
	}
	assert.Equal(t, ref, want)
	for _, path := range CPUKernels() {
		got := pprTileTotalsSIMD(path, y, mass, perm, 3, 197)
		for b := range got {
			assert.Equal(t, math.Float64bits(want[b]), math.Float64bits(got[b]), "kernels %v lane %d", path, b)
		}
	}
}

// TestPPRInterleaveOrder checks the layout's per-chunk reset order: each chunk's rows
// once each, by node, padding rows last, with the node of each row.
func TestPPRInterleaveOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	const n = 4000
	s, err := NewPPRSolver(pprCSR(t, n, pprRandomEdges(rng, n, 3*n, 20)), PPRConfig{})
	require.NoError(t, err)
	lay := s.lay
	require.Greater(t, len(lay.chunk), 3, "several chunks")
	for c := range len(lay.chunk) - 1 {
		lo, hi := int(lay.chunk[c])*pprSellRows, int(lay.chunk[c+1])*pprSellRows
		seen := make([]bool, hi-lo)
		prev := int32(-1)
		for j := lo; j < hi; j++ {
			r := lay.ilvRow[j]
			require.True(t, r >= 0 && int(r) < hi-lo && !seen[r], "chunk %d: row %d once", c, r)
			seen[r] = true
			v := lay.ilvNode[j]
			assert.Equal(t, lay.perm[lo+int(r)], v, "chunk %d entry %d", c, j)
			if v >= 0 {
				assert.Greater(t, v, prev, "chunk %d: nodes ascending, padding last", c)
				prev = v
			} else {
				prev = math.MaxInt32
			}
		}
	}
}

// TestPPRInterleavePaths holds the reset rows that pprInterleaveSIMD and
// pprInterleave32SIMD write on every vector path to resets[b][v]·scales[b] (rounded to
// float32 in the float32 half rows), with padding rows (node −1) and lanes past the
// resets 0, for 1 to 8 resets and rows written out of order.
func TestPPRInterleavePaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(46, 1))
	const n, rows = 300, 37
	for _, path := range CPUKernels()[1:] {
		for nq := 1; nq <= pprLanes; nq++ {
			resets, scales := make([][]float64, nq), make([]float64, nq)
			for b := range resets {
				resets[b], scales[b] = make([]float64, n), rng.Float64()*3
				for v := range resets[b] {
					if rng.IntN(3) == 0 {
						resets[b][v] = rng.NormFloat64()
					}
				}
			}
			nodes, at := make([]int32, rows), make([]int32, rows)
			for j, r := range rng.Perm(rows) {
				nodes[j], at[j] = int32(rng.IntN(n)), int32(r)
				if rng.IntN(6) == 0 {
					nodes[j] = -1
				}
			}
			sT := make([]float64, rows*pprLanes)
			for i := range sT {
				sT[i] = math.NaN() // every lane of every row is written
			}
			s32 := make([]float32, rows*pprLanes32)
			require.True(t, pprInterleaveSIMD(path, nodes, at, n, resets, scales, sT), "%v runs a vector kernel", path)
			require.True(t, pprInterleave32SIMD(path, nodes, at, n, resets, scales, s32[pprLanes:]), "%v float32", path)
			for j, v := range nodes {
				r := int(at[j])
				for b := range pprLanes {
					var want float64
					if b < nq && v >= 0 {
						want = resets[b][v] * scales[b]
					}
					assert.Equal(t, math.Float64bits(want), math.Float64bits(sT[r*pprLanes+b]), "%v nq %d row %d lane %d", path, nq, r, b)
					assert.Equal(t, math.Float32bits(float32(want)), math.Float32bits(s32[r*pprLanes32+pprLanes+b]), "%v nq %d float32 row %d lane %d", path, nq, r, b)
					assert.Zero(t, s32[r*pprLanes32+b], "%v: the other half is left alone", path)
				}
			}
		}
	}
}

// TestPPRExtractPaths holds pprExtractSIMD on every vector path to its formula,
// xs[i][j] = (y[p·8 + lanes[i]]·full[p])·inv[i] for p = pos[j] ≥ 0, with eliminated
// nodes (p < 0) among the outputs, every subset size of lanes, and ranges that end in
// a partial block; outputs outside [j0, j1) are left alone.
func TestPPRExtractPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(46, 2))
	const np, m = 50, 61
	y, full := make([]float64, np*pprLanes), make([]float64, np)
	for i := range y {
		y[i] = rng.NormFloat64()
	}
	for i := range full {
		full[i] = 0.5 + rng.Float64()
	}
	pos := make([]int32, m)
	for j := range pos {
		pos[j] = int32(rng.IntN(np))
		if rng.IntN(5) == 0 {
			pos[j] = -1 - int32(rng.IntN(3))
		}
	}
	for _, path := range CPUKernels()[1:] {
		for nl := 1; nl <= pprLanes; nl++ {
			lanes := rng.Perm(pprLanes)[:nl]
			var inv [pprLanes]float64
			xs := make([][]float64, nl)
			for i := range xs {
				inv[i] = 1 / (1 + rng.Float64())
				xs[i] = make([]float64, m)
				for j := range xs[i] {
					xs[i][j] = math.NaN()
				}
			}
			j0, j1 := rng.IntN(9), m-rng.IntN(9)
			require.True(t, pprExtractSIMD(path, pos, j0, j1, y, full, lanes, &inv, xs), "%v runs a vector kernel", path)
			for i, b := range lanes {
				for j := range m {
					got := xs[i][j]
					switch p := pos[j]; {
					case j < j0 || j >= j1:
						assert.True(t, math.IsNaN(got), "%v lane %d output %d outside the range", path, b, j)
					case p >= 0:
						want := y[int(p)*pprLanes+b] * full[p] * inv[i]
						assert.Equal(t, math.Float64bits(want), math.Float64bits(got), "%v lanes %v output %d", path, lanes, j)
					}
				}
			}
		}
	}
}

// TestPPRExtractSingle: a single solve's scores, read from the y·full vector the
// totals walk keeps (yf), are the general loop's bits (y and full read at random), for
// every node and for a list of nodes, on graphs with leaves, bridges and isolated nodes.
func TestPPRExtractSingle(t *testing.T) {
	rng := rand.New(rand.NewPCG(46, 3))
	for _, tc := range []struct {
		name     string
		n, m     int
		isolated int
	}{
		{"sparse, many leaves", 400, 300, 5},
		{"denser", 1500, 4500, 10},
		{"one chunk", 60, 90, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			csr := pprCSR(t, tc.n, pprRandomEdges(rng, tc.n, tc.m, tc.isolated))
			s, err := newPPRSolver(csr, PPRConfig{Workers: 2}, 64)
			require.NoError(t, err)
			lay := s.lay
			reset := pprRandomReset(rng, tc.n, "dense")
			scale, err := s.resetScale(reset)
			require.NoError(t, err)
			y := make([]float64, lay.np)
			for i := range y {
				y[i] = rng.Float64()
			}
			nodes := []int32{int32(tc.n - 1), 0, int32(tc.n / 2), int32(tc.n / 3)}
			for _, list := range [][]int32{nil, nodes} {
				want := s.extract(y, 1, []int{0}, list, [][]float64{reset}, []float64{scale}, nil, []float64{0.25}, nil)[0]
				got := s.extract(y, 1, []int{0}, list, [][]float64{reset}, []float64{scale}, nil, []float64{0.25}, make([]float64, lay.np))[0]
				require.Len(t, got, len(want))
				for j := range want {
					require.Equal(t, math.Float64bits(want[j]), math.Float64bits(got[j]), "output %d (nodes %v)", j, list != nil)
				}
			}
		})
	}
}
