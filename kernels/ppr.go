package kernels

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// Personalized PageRank (PPR) with python-igraph's semantics:
//
//	graph.personalized_pagerank(directed=False, weights="weight", damping=d,
//	                            reset=s, implementation="prpack")
//
// as HippoRAG 2 and HyperGraphRAG call it. The graph is undirected and weighted: a
// walker at u moves to v with probability w(u,v)/strength(u); a node with zero
// strength (isolated) jumps according to the personalisation vector s (normalised to
// sum 1); with probability 1−d the walker restarts from s. The scores x are the
// stationary distribution,
//
//	x = (1−d)·s + d·(Pᵀx + dangling(x)·s),   Σx = 1.
//
// Dangling mass only ever re-enters along s, so x is proportional to the solution z of
// the dangling-free system
//
//	z = s + d·Pᵀz
//
// and x = z/Σz (Sherman–Morrison). The kernels iterate on z, which needs no global
// dangling sum per step. For an undirected graph Pᵀ = A·D⁻¹ is similar to the
// symmetric D^-½·A·D^-½, so I − d·Pᵀ is similar to a symmetric positive definite
// matrix and the spectrum of d·Pᵀ is real and inside [−d, d]. Three iterations:
//
//   - PPRSOR (default): successive over-relaxation by colour. The nodes are coloured so
//     that no two neighbours share a colour (pprColouring); a pass updates the colours
//     in turn, each colour's nodes in parallel and in place from the latest values of
//     the others, z_v ← (1−ω)·z_v + ω·J_v(z), with ω 1.5 % above Young's 2/(1+√(1−d²))
//     (1.088 at d = 0.5; see pprSOROmega). SOR converges for 0 < ω < 2 on such a system
//     (Ostrowski–Reich). On the 2Wiki HippoRAG graph it needed 13 passes with Young's
//     ω where Chebyshev needs 19, for a smaller error (L1 error against a 1e-15
//     solution 7e-12 against 1.6e-11), and it keeps one vector instead of three.
//   - PPRChebyshev: Jacobi accelerated by Chebyshev semi-iteration; the error falls
//     like (d/(1+√(1−d²)))^k, 0.27^k at d = 0.5.
//   - PPRPower: the plain power (Jacobi) iteration; 0.5^k at d = 0.5.
//
// The iterate is stored divided by strength, y = z/strength (y = z on isolated nodes),
// so that one pull over row v, Σ_u w(v,u)·y[u], is (Pᵀz)[v] with no per-edge division.
// One pass over the matrix computes J(z_k) = s + d·Pᵀz_k, the residual ‖J(z_k)−z_k‖₁
// and z_{k+1}, fused, in float64 (weights are the CSR's float32).
//
// Performance: the matrix is relabelled (by colour for SOR) and stored in SELL-8 form
// (pprLayout) so that 8 rows are reduced in lockstep and all per-node vectors are
// streamed sequentially; passes run on Workers goroutines over chunks of balanced
// work. SolveBatch iterates 8 queries at once in a [node][8] layout (one AVX-512
// register per node and row), so one pass over the matrix serves 8 queries; SOR
// batches first bring 16 queries at a time to about 2e-7 in float32 ([node][16], the
// same 64-byte line per node), then finish each 8 in float64 (ppr_mixed.go).

// PPRMethod selects the fixed-point iteration of the PPR kernels.
type PPRMethod int

const (
	// PPRSOR is successive over-relaxation by colour (the default).
	PPRSOR PPRMethod = iota
	// PPRChebyshev is the Chebyshev-accelerated Jacobi iteration.
	PPRChebyshev
	// PPRPower is the plain power (Jacobi) iteration x ← (1−d)s + d(Pᵀx + dangling·s).
	PPRPower
)

// String implements fmt.Stringer.
func (m PPRMethod) String() string {
	switch m {
	case PPRSOR:
		return "sor"
	case PPRChebyshev:
		return "chebyshev"
	case PPRPower:
		return "power"
	}
	return fmt.Sprintf("PPRMethod(%d)", int(m))
}

// Defaults of PPRConfig.
const (
	// DefaultPPRDamping is HippoRAG 2's (and HyperGraphRAG's) damping.
	DefaultPPRDamping = 0.5
	// DefaultPPRTol matches the tolerance python-igraph passes to PRPACK (1e-10), so
	// that results agree with igraph's to about that accuracy.
	DefaultPPRTol = 1e-10
	// DefaultPPRMaxIter bounds the passes over the matrix.
	DefaultPPRMaxIter = 100
)

// PPRConfig holds the knobs of the PPR kernels. Zero values select the defaults.
type PPRConfig struct {
	// Damping d in (0,1) is the probability of following an edge; HippoRAG 2: 0.5.
	Damping float64
	// Tol stops the iteration when ‖J(z)−z‖₁/‖z‖₁ < Tol, where J(z) = s + d·Pᵀz is
	// one Jacobi step. For PPRPower this is exactly the L1 change between successive
	// normalised iterates. The L1 error of the result is then at most
	// 2·Tol/(1−d) (4·Tol at d = 0.5). Default 1e-10 (PRPACK's tolerance in igraph).
	// PPRSOR measures the residual r of each node as it updates it (as PRPACK's
	// Gauss–Seidel does) and stops when (|1−ω| + d·ω)·‖r‖₁/‖z‖₁ < Tol: the residual of
	// the returned iterate, J(z)−z = (1−ω)·r + d·Pᵀ·(the later updates, ω·r), is no
	// larger, so the same error bound holds (to the change of ‖z‖₁ in the last pass).
	Tol float64
	// MaxIter bounds the number of passes over the matrix; default 100.
	MaxIter int
	// Workers is the number of goroutines; 0 means GOMAXPROCS. Results do not depend
	// on it (bit for bit): work is split into chunks that depend only on the graph.
	Workers int
	// Method is the iteration; default PPRSOR.
	Method PPRMethod
	// Float64Batch makes SolveBatch iterate its SOR tiles in float64 from the first
	// pass, so that its results are Solve's to rounding. By default (false) a pair of
	// tiles, 16 queries, first runs float32 passes, 16 lanes to a cache line, until
	// each query's residual is about 2e-7, and then float64 passes to Tol: the same
	// stopping test and error bound as Solve's, in about a third less pass time, with
	// results that differ from Solve's by up to about Tol (a lone query, and
	// Chebyshev and power batches, always run in float64; so do tolerances of 1.5e-8
	// and above, where float32 would leave too few passes to pay for itself).
	Float64Batch bool
}

// DefaultPPRConfig returns HippoRAG 2's settings with igraph's accuracy.
func DefaultPPRConfig() PPRConfig {
	return PPRConfig{Damping: DefaultPPRDamping, Tol: DefaultPPRTol, MaxIter: DefaultPPRMaxIter}
}

// resolve fills defaults and validates.
func (c PPRConfig) resolve() (PPRConfig, error) {
	if c.Damping == 0 {
		c.Damping = DefaultPPRDamping
	}
	if c.Tol == 0 {
		c.Tol = DefaultPPRTol
	}
	if c.MaxIter == 0 {
		c.MaxIter = DefaultPPRMaxIter
	}
	switch {
	case !(c.Damping > 0 && c.Damping < 1):
		return c, fmt.Errorf("kernels: ppr: damping %v outside (0,1)", c.Damping)
	case !(c.Tol > 0) || math.IsInf(c.Tol, 0):
		return c, fmt.Errorf("kernels: ppr: tolerance %v must be positive and finite", c.Tol)
	case c.MaxIter < 0:
		return c, fmt.Errorf("kernels: ppr: negative MaxIter %d", c.MaxIter)
	case c.Workers < 0:
		return c, fmt.Errorf("kernels: ppr: negative Workers %d", c.Workers)
	case c.Method != PPRSOR && c.Method != PPRChebyshev && c.Method != PPRPower:
		return c, fmt.Errorf("kernels: ppr: unknown method %v", c.Method)
	}
	return c, nil
}

// pprSOROmega is the SOR passes' ω as a multiple of Young's 2/(1+√(1−d²)).
//
// Young's ω is optimal for a consistently ordered (two-colour) matrix whose Jacobi
// spectral radius is d; a colouring of a sparse graph needs 5–7 colours, and there a
// slightly larger ω converges faster. Passes to the default tolerance (1e-10), for
// Young's ω × 1, 1.005, 1.01, 1.015, 1.02, 1.03 and 1.05 (portable single solve):
//
//	bench/ppr graph (100K nodes, 300K edges), d = 0.5:   13 12 12 11 12 12 13
//	                                          d = 0.85:  27 26 24 22 22 23 24.5
//	HippoRAG-like graph (30K passages, 60K entities), 0.5: 13 12 12 11 11 12 13
//	                                          d = 0.85:  26 25 24 22 22 23 24
//	TestPPRIterationCounts' graph (2,000 nodes), 0.5:     12 12 11 12 12 12 13
//	                                          d = 0.85:  24 23 22 22 23 23 25
//
// 1.015 is the best or within one pass of it on each (bench/ppr: 13 → 11 passes at
// d = 0.5). Any ω in (0, 2) converges to the same solution and the stopping test's
// bound holds for any ω (PPRConfig.Tol), so this moves only the pass count.
const pprSOROmega = 1.015

// omegas returns the relaxation weight of each pass: all 1 for the power iteration;
// the Chebyshev weights ω₁ = 1, ω₂ = 1/(1−ρ²/2), ωₖ₊₁ = 1/(1−ρ²ωₖ/4) with ρ = d;
// pprSOROmega × Young's ω = 2/(1+√(1−d²)) for every SOR pass.
func (c PPRConfig) omegas() []float64 {
	w := make([]float64, c.MaxIter)
	rho2 := c.Damping * c.Damping
	for k := range w {
		switch {
		case c.Method == PPRSOR:
			w[k] = pprSOROmega * 2 / (1 + math.Sqrt(1-rho2))
		case c.Method == PPRPower || k == 0:
			w[k] = 1
		case k == 1:
			w[k] = 1 / (1 - rho2/2)
		default:
			w[k] = 1 / (1 - rho2*w[k-1]/4)
		}
	}
	return w
}

// PPRStats describes how one personalisation vector converged.
type PPRStats struct {
	Iterations int     // passes over the matrix
	Float32    int     // of the passes, those in float32 (SolveBatch's start, see PPRConfig.Float64Batch)
	Residual   float64 // ‖J(z)−z‖₁/‖z‖₁ at the last pass
	Converged  bool    // Residual < Tol within MaxIter passes
}

// PPR returns the personalized PageRank of every node of the undirected graph csr for
// the personalisation (reset) vector reset; see [PPRSolver.Solve]. It builds a
// [PPRSolver] for one call: reuse a solver to amortise its O(nnz) checks.
func PPR(csr *CSR, reset []float64, cfg PPRConfig) ([]float64, PPRStats, error) {
	s, err := NewPPRSolver(csr, cfg)
	if err != nil {
		return nil, PPRStats{}, err
	}
	return s.Solve(reset)
}

// PPRBatch returns the personalized PageRank for many reset vectors at once; see
// [PPRSolver.SolveBatch].
func PPRBatch(csr *CSR, resets [][]float64, cfg PPRConfig) ([][]float64, []PPRStats, error) {
	s, err := NewPPRSolver(csr, cfg)
	if err != nil {
		return nil, nil, err
	}
	return s.SolveBatch(resets)
}

// SanitizePPRReset returns a copy of reset with NaN and negative entries set to 0, the
// guard HippoRAG 2 applies before calling igraph. It does not normalise.
func SanitizePPRReset(reset []float64) []float64 {
	out := slices.Clone(reset)
	SanitizePPRResetInPlace(out)
	return out
}

// SanitizePPRResetInPlace is SanitizePPRReset without the copy (a reset has an entry
// per node: a retriever that owns its vector need not allocate another) and reports
// whether any entry is left positive.
func SanitizePPRResetInPlace(reset []float64) (positive bool) {
	for i, v := range reset {
		if v > 0 {
			positive = true
		} else if math.Float64bits(v) != 0 {
			reset[i] = 0 // an entry already +0 is not stored again
		}
	}
	return positive
}

// PPRSolver runs personalized PageRank queries on one undirected graph. Building it
// validates the matrix once and lays it out for the passes (see pprLayout); the layout
// is immutable afterwards, scratch vectors are recycled through pools, and the solver
// is safe for concurrent use. It keeps its own copy of the matrix: later changes to
// the CSR do not affect it.
type PPRSolver struct {
	n     int
	cfg   PPRConfig
	omega []float64
	lay   *pprLayout
	path  KernelPath // the kernels the solver runs (Kernels(), or a test's choice)
	// work recycles the internal vectors of single solves (pprWork): a solve over a
	// large graph would otherwise allocate and zero three node-sized vectors (120K
	// passages: 20 MB) per query. tiles recycles batch tiles (*pprTile, 16 floats a
	// row for SOR, 24 for Chebyshev and power, and 8 float32 for a pair's second half
	// (solvePair): 92 MB at 120K passages, 573K rows); setupTile and solvePair rewrite
	// every entry they read.
	work, tiles sync.Pool
}

// pprWork is the scratch of one single solve, in internal order: the normalised reset,
// the iterate and, for Chebyshev and power passes, the previous iterate. Padding rows
// stay 0 in every vector across reuses (passes write 0 there).
type pprWork struct{ sv, cur, nxt []float64 }

// getWork returns a workspace whose vectors hold np entries each. Entries of real
// nodes are overwritten by solve1 before being read, except nxt's, which a Chebyshev
// first pass reads: it is cleared here so that a reused workspace gives the same bits
// as a fresh one (a power pass writes every entry of nxt before reading it).
func (s *PPRSolver) getWork() *pprWork {
	np := s.lay.np
	w, _ := s.work.Get().(*pprWork)
	if w == nil {
		w = &pprWork{sv: make([]float64, np), cur: make([]float64, np)}
	}
	switch {
	case s.cfg.Method == PPRSOR: // in place: no second vector
	case w.nxt == nil:
		w.nxt = make([]float64, np)
	case s.cfg.Method == PPRChebyshev: // power passes only write it
		clear(w.nxt)
	}
	return w
}

// pprChunkCost is the minimum work (entries + 4 per node) of one chunk.
const pprChunkCost = 8192

// NewPPRSolver checks csr (structure, non-negative finite weights, symmetry) and
// precomputes strengths and the matrix layout. It refuses a KernelsEnv override this
// CPU cannot run (KernelsError).
func NewPPRSolver(csr *CSR, cfg PPRConfig) (*PPRSolver, error) {
	return newPPRSolver(csr, cfg, pprChunkCost)
}

// newPPRSolver is NewPPRSolver with a given chunk size (tests use small chunks).
func newPPRSolver(csr *CSR, cfg PPRConfig, chunkCost int) (*PPRSolver, error) {
	if kernelsErr != nil {
		return nil, kernelsErr
	}
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	if csr == nil {
		return nil, fmt.Errorf("kernels: ppr: nil matrix")
	}
	if err := csr.Validate(); err != nil {
		return nil, fmt.Errorf("kernels: ppr: %w", err)
	}
	for p, w := range csr.Val {
		if math.IsInf(float64(w), 0) {
			return nil, fmt.Errorf("kernels: ppr: entry %d has infinite weight", p)
		}
	}
	if err := csr.CheckSymmetric(1e-6); err != nil {
		return nil, fmt.Errorf("kernels: ppr: the graph must be undirected (build it with NewSymmetricCSR): %w", err)
	}
	// Leaves are eliminated for SOR only: its convergence needs only a symmetric
	// positive definite system, which the Schur complement stays, while the Chebyshev
	// weights assume the whole graph's spectral bound d.
	sor := cfg.Method == PPRSOR
	var elim float64
	if sor {
		elim = cfg.Damping
	}
	return &PPRSolver{n: csr.N, cfg: cfg, omega: cfg.omegas(), lay: newPPRLayout(csr, pprSellSigma, chunkCost, sor, elim),
		path: kernelPath}, nil
}

// Config returns the solver's configuration with defaults filled in.
func (s *PPRSolver) Config() PPRConfig { return s.cfg }

// numChunks returns the number of work chunks.
func (s *PPRSolver) numChunks() int { return len(s.lay.chunk) - 1 }

// chunkRows returns the internal node range [lo,hi) of chunk c.
func (s *PPRSolver) chunkRows(c int) (lo, hi int) {
	return int(s.lay.chunk[c]) * pprSellRows, int(s.lay.chunk[c+1]) * pprSellRows
}

// workers returns the configured number of goroutines (GOMAXPROCS by default).
func (s *PPRSolver) workers() int {
	if s.cfg.Workers > 0 {
		return s.cfg.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// forChunks calls fn for every chunk on the configured number of goroutines; chunks
// are handed out dynamically, so a slow core (shared machine) does not stall the rest.
func (s *PPRSolver) forChunks(fn func(c int)) { s.forChunkRange(s.workers(), 0, s.numChunks(), fn) }

// forChunkRange calls fn for the chunks [c0, c1) on up to workers goroutines.
func (s *PPRSolver) forChunkRange(workers, c0, c1 int, fn func(c int)) {
	workers = min(workers, c1-c0)
	if workers <= 1 {
		for c := c0; c < c1; c++ {
			fn(c)
		}
		return
	}
	var next atomic.Int64
	next.Store(int64(c0))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c := int(next.Add(1)) - 1
				if c >= c1 {
					return
				}
				fn(c)
			}
		}()
	}
	wg.Wait()
}

// residualScale turns the residual a pass measures into a bound on the residual of
// its result: 1, or |1−ω| + d·ω for SOR (see PPRConfig.Tol).
func (s *PPRSolver) residualScale() float64 {
	if s.cfg.Method != PPRSOR {
		return 1
	}
	w := s.omega[0]
	return math.Abs(1-w) + s.cfg.Damping*w
}

// resetScale validates a reset vector and returns 1/Σreset.
func (s *PPRSolver) resetScale(reset []float64) (float64, error) {
	if len(reset) != s.n {
		return 0, fmt.Errorf("kernels: ppr: reset vector has %d entries for %d nodes", len(reset), s.n)
	}
	// Zeros are skipped: adding one leaves the sum's bits as they are, and a query's
	// reset is mostly zeros (HippoRAG seeds a few entities and the passages), so the
	// serial add chain runs over the non-zero entries only.
	var sum float64
	for i, v := range reset {
		if v == 0 {
			continue
		}
		if !(v > 0) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("kernels: ppr: reset[%d] = %v; entries must be finite and non-negative (see SanitizePPRReset)", i, v)
		}
		sum += v
	}
	if !(sum > 0) || math.IsInf(sum, 0) {
		return 0, fmt.Errorf("kernels: ppr: reset vector sums to %v; it needs positive finite mass", sum)
	}
	return 1 / sum, nil
}

// Solve returns the personalized PageRank scores of all nodes (summing to 1) for the
// personalisation vector reset (len N, non-negative, finite, not all zero; it is
// normalised to sum 1). It returns an error, never panics, on bad input. Not converging
// within MaxIter is not an error: Stats.Converged is false and the last iterate is
// returned.
func (s *PPRSolver) Solve(reset []float64) ([]float64, PPRStats, error) {
	scale, err := s.resetScale(reset)
	if err != nil {
		return nil, PPRStats{}, err
	}
	x, st := s.solve1(reset, scale, nil)
	return x, st, nil
}

// SolveNodes returns the scores Solve(reset) gives the listed nodes, in their order,
// bit for bit, without materialising the other nodes' scores: a retriever that ranks
// passages needs only theirs, and a node-sized result vector per query is memory the
// process must allocate and fault in (843K nodes at 120K passages: 6.7 MB). A node
// outside the graph is an error; nil nodes give an empty result.
func (s *PPRSolver) SolveNodes(reset []float64, nodes []int32) ([]float64, PPRStats, error) {
	scale, err := s.resetScale(reset)
	if err != nil {
		return nil, PPRStats{}, err
	}
	if err := s.checkNodes(nodes); err != nil {
		return nil, PPRStats{}, err
	}
	if nodes == nil {
		nodes = []int32{}
	}
	x, st := s.solve1(reset, scale, nodes)
	return x, st, nil
}

// SolveBatch solves many personalisation vectors. Queries are processed in tiles of 8
// interleaved per node ([node][8] layout), so one pass over the matrix serves 8
// queries with one 64-byte load per edge; each query stops at its own convergence.
// SOR batches start each pair of tiles with float32 passes, 16 queries a 64-byte
// line (see PPRConfig.Float64Batch): result i then meets Solve's tolerance and error
// bound and differs from Solve(resets[i]) by up to about Tol. With Float64Batch, and
// for Chebyshev and power, it is what Solve(resets[i]) returns, to rounding (the
// tiles use fused multiply-adds). Either way a query's result does not depend on the
// other queries of the batch, except that a lone query in the last tile (a batch of
// 8k+1) is solved as Solve solves it.
func (s *PPRSolver) SolveBatch(resets [][]float64) ([][]float64, []PPRStats, error) {
	return s.solveBatch(resets, nil)
}

// SolveBatchNodes returns, for each reset, the scores SolveBatch gives the listed
// nodes, bit for bit, without materialising the other nodes' scores (see SolveNodes).
func (s *PPRSolver) SolveBatchNodes(resets [][]float64, nodes []int32) ([][]float64, []PPRStats, error) {
	if err := s.checkNodes(nodes); err != nil {
		return nil, nil, err
	}
	if nodes == nil {
		nodes = []int32{}
	}
	return s.solveBatch(resets, nodes)
}

// solveBatch is SolveBatch, or SolveBatchNodes when nodes is not nil.
func (s *PPRSolver) solveBatch(resets [][]float64, nodes []int32) ([][]float64, []PPRStats, error) {
	// Each reset is validated and summed on its own (a serial pass over the batch's
	// resets was ~7 % of a 32-query batch's wall time with one core idle).
	scales, errs := make([]float64, len(resets)), make([]error, len(resets))
	s.forChunkRange(s.workers(), 0, len(resets), func(i int) { scales[i], errs[i] = s.resetScale(resets[i]) })
	for i, err := range errs {
		if err != nil {
			return nil, nil, fmt.Errorf("kernels: ppr: query %d: %w", i, err)
		}
	}
	out := make([][]float64, len(resets))
	stats := make([]PPRStats, len(resets))
	var tiles [][2]int // [lo, hi) of each tile of two or more queries
	for lo := 0; lo < len(resets); lo += pprLanes {
		hi := min(lo+pprLanes, len(resets))
		if hi-lo == 1 {
			out[lo], stats[lo] = s.solve1(resets[lo], scales[lo], nodes)
			continue
		}
		tiles = append(tiles, [2]int{lo, hi})
	}
	job := func(k int) pprTileJob {
		lo, hi := tiles[k][0], tiles[k][1]
		return pprTileJob{resets[lo:hi], scales[lo:hi], out[lo:hi], stats[lo:hi]}
	}
	// A unit of work is a tile or, with the float32 start, a pair of tiles.
	units := len(tiles)
	mixed := s.mixedBatch()
	if mixed {
		units = (len(tiles) + 1) / 2
	}
	solve := func(t *pprTile, k, workers int) {
		if !mixed {
			j := job(k)
			s.solveTile(t, workers, j.resets, j.scales, j.out, j.stats, nodes)
			return
		}
		var rb pprTileJob
		if 2*k+1 < len(tiles) {
			rb = job(2*k + 1)
		}
		s.solvePair(t, workers, job(2*k), rb, nodes)
	}
	// Whole rounds of units run one per goroutine, each unit's passes on its own core:
	// no barrier between colours or passes, and the same bits as a unit whose chunks
	// are shared out by a team (see teamSweep). The remaining units share out their
	// chunks.
	w := s.workers()
	par := 0
	if w > 1 && units >= w {
		par = units - units%w
		var next atomic.Int64
		var wg sync.WaitGroup
		for range w {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t := s.getTile()
				defer s.tiles.Put(t)
				for {
					k := int(next.Add(1)) - 1
					if k >= par {
						return
					}
					solve(t, k, 1)
				}
			}()
		}
		wg.Wait()
	}
	if par < units {
		t := s.getTile()
		for k := par; k < units; k++ {
			solve(t, k, w)
		}
		s.tiles.Put(t)
	}
	return out, stats, nil
}

// getTile returns a recycled or new batch tile.
func (s *PPRSolver) getTile() *pprTile {
	if t, _ := s.tiles.Get().(*pprTile); t != nil {
		return t
	}
	return newPPRTile(s.lay.np)
}

// checkNodes rejects a node outside the graph.
func (s *PPRSolver) checkNodes(nodes []int32) error {
	for i, v := range nodes {
		if v < 0 || int(v) >= s.n {
			return fmt.Errorf("kernels: ppr: node %d (entry %d) out of range [0,%d)", v, i, s.n)
		}
	}
	return nil
}

// solve1 runs the single-vector iteration.
//
// With nodes nil it returns every node's score; otherwise only those of nodes, in
// their order, computed exactly as the full vector's entries are.
func (s *PPRSolver) solve1(reset []float64, scale float64, nodes []int32) ([]float64, PPRStats) {
	lay := s.lay
	w := s.getWork()
	defer s.work.Put(w)
	sv := w.sv   // normalised reset
	cur := w.cur // y_k
	nxt := w.nxt // y_{k-1} in, y_{k+1} out (Chebyshev); y_{k+1} out (power)
	nc := s.numChunks()
	// Residual sums of even and odd passes: a member of the team reads pass k's sums
	// after its barrier while the others may already write pass k+1's.
	var res, zsum [2][]float64
	for p := range res {
		res[p], zsum[p] = make([]float64, nc), make([]float64, nc)
	}
	// y_0 = s'/strength, in internal order (s' = s with the eliminated nodes' resets
	// folded into their neighbours', pprLeaves); leafMass = Σ s over them.
	// The reset is read in node order within each chunk (ilvNode, as a tile's are) and
	// the chunk's rows written at random: the chunk stays in cache, and the reads run
	// forward instead of at random.
	d := s.cfg.Damping
	s.forChunks(func(c int) {
		lo, hi := s.chunkRows(c)
		rows := sv[lo:hi]
		for k, v := range lay.ilvNode[lo:hi] {
			if v >= 0 {
				rows[lay.ilvRow[lo+k]] = reset[v] * scale
			}
		}
	})
	leafMass := s.foldLeaves(sv, reset, scale)
	s.forChunks(func(c int) {
		lo, hi := s.chunkRows(c)
		for i := lo; i < hi; i++ {
			if lay.perm[i] >= 0 {
				cur[i] = sv[i] * lay.inv[i]
			}
		}
	})
	sor := s.cfg.Method == PPRSOR
	relax := s.cfg.Method != PPRPower // Chebyshev, or SOR in place (previous iterate = current)
	if sor {
		nxt = cur // one vector: every pass writes what it reads
	}
	scaleRes := s.residualScale()
	var st PPRStats
	var final []float64
	runPPRTeam(min(s.workers(), nc), func(t *pprTeam, id int) {
		cur, nxt := cur, nxt
		var ms PPRStats
		for ms.Iterations < s.cfg.MaxIter {
			omega := s.omega[ms.Iterations]
			r, z := res[ms.Iterations%2], zsum[ms.Iterations%2]
			s.teamSweep(t, func(c int) {
				r[c], z[c] = pprPass1SIMD(s.path, lay, sv, d, omega, relax, cur, nxt, int(lay.chunk[c]), int(lay.chunk[c+1]))
			})
			ms.Iterations++
			cur, nxt = nxt, cur
			ms.Residual = scaleRes * pprRatio(r, z, leafMass)
			if ms.Residual < s.cfg.Tol {
				ms.Converged = true
				break
			}
		}
		if id == 0 {
			st, final = ms, cur
		}
	})
	// sv is dead once the passes are done: extract keeps y·full there.
	return s.extract(final, 1, []int{0}, nodes, [][]float64{reset}, []float64{scale}, nil, []float64{leafMass}, sv)[0], st
}

// foldLeaves adds d·c·s_v of every fold (into a leaf's parent, c = 1, or a bridge's
// neighbour, c = A_pv/str_v) to its row's entry of the normalised reset sv (one entry
// per internal node) and returns Σ s_v over the eliminated nodes, in node order (see
// pprLeaves, pprFolds). A node without reset adds nothing. foldTile does the same for
// a tile's lanes.
func (s *PPRSolver) foldLeaves(sv, reset []float64, scale float64) float64 {
	f := &s.lay.leaves.fold
	d := s.cfg.Damping
	var sum float64
	for k, v := range f.node {
		sk := reset[v] * scale
		if sk == 0 {
			continue
		}
		sv[f.row[k]] += d * (f.c[k] * sk)
		if f.count[k] {
			sum += sk
		}
	}
	return sum
}

// extract turns lanes of an iterate y, stored with stride entries per internal node
// (1 for a single solve, pprLanes for a tile), into normalised scores: every node's
// in original order, or with nodes not nil only those nodes', with the same bits.
// resets and scales are each lane's reset and 1/Σreset — or, for a tile, fold holds
// every fold's normalised reset in the tile's lanes (foldTile), which the leaves' scores
// read in node order instead — and leafMass each lane's Σ s over the leaves (the
// leaves' scores need them). The total the scores are normalised by is
// Σ y·(full + d·W) over the rows plus leafMass: the leaves' Σ(s_v + d·w·y_u) folded
// into their parents' rows, so that only a full result touches each leaf.
//
// Two walks: the totals over the rows in internal order, then the scores in output
// order, each node's row read once for every lane (a tile row's lanes share one
// cache line) and the scores written in order, score = (y·full)·(1/total).
//
// A single solve (stride 1) passes yf, a vector of the rows' length: the first walk
// also stores y·full there in internal order, so that the second reads one array at
// random instead of two (y and full, the same product, so the same bits). The random
// reads were a fifth of a single solve's time on bench/ppr's graph.
func (s *PPRSolver) extract(y []float64, stride int, lanes []int, nodes []int32, resets [][]float64, scales, fold, leafMass, yf []float64) [][]float64 {
	lay := s.lay
	if len(lanes) > pprLanes {
		panic("kernels: PPR extract of more lanes than a tile has")
	}
	nc := s.numChunks()
	sums := make([][pprLanes]float64, nc)
	// Each lane's sum runs over the rows in order, each product rounded before it is
	// added (no fused multiply-add, whatever GOAMD64 allows).
	s.forChunks(func(c int) {
		lo, hi := s.chunkRows(c)
		if stride == pprLanes {
			all := pprTileTotalsSIMD(s.path, y, lay.mass, lay.perm, lo, hi)
			var sum [pprLanes]float64
			for i, b := range lanes {
				sum[i] = all[b]
			}
			sums[c] = sum
			return
		}
		var sum [pprLanes]float64
		if yf != nil { // a single solve: stride 1, lane 0
			y, yf, mass, full, perm := y[:hi], yf[:hi], lay.mass[:hi], lay.full[:hi], lay.perm[:hi]
			for v := lo; v < hi; v++ {
				if perm[v] < 0 {
					continue
				}
				sum[0] += float64(y[v] * mass[v])
				yf[v] = y[v] * full[v]
			}
			sums[c] = sum
			return
		}
		for v := lo; v < hi; v++ {
			if lay.perm[v] < 0 {
				continue
			}
			row, mass := y[v*stride:], lay.mass[v]
			for i, b := range lanes {
				sum[i] += float64(row[b] * mass)
			}
		}
		sums[c] = sum
	})
	var inv [pprLanes]float64
	for i := range lanes {
		var t float64
		for c := range sums {
			t += sums[c][i]
		}
		inv[i] = 1 / (t + leafMass[i])
	}
	m := s.n
	if nodes != nil {
		m = len(nodes)
	}
	xs := make([][]float64, len(lanes))
	for i := range xs {
		xs[i] = make([]float64, m)
	}
	lv, d := &lay.leaves, s.cfg.Damping
	s.forChunks(func(c int) {
		j0, j1 := c*m/nc, (c+1)*m/nc
		// A tile's full result: the rows' scores in one vector pass, the leaves below.
		rows := nodes == nil && stride == pprLanes && pprExtractSIMD(s.path, lay.pos, j0, j1, y, lay.full, lanes, &inv, xs)
		// A single solve's row scores: (y·full) from yf, times 1/total.
		var x0 []float64
		var inv0 float64
		if yf != nil {
			x0, inv0 = xs[0][:j1], inv[0]
		}
		pos := lay.pos
		for j := j0; j < j1; j++ {
			v := int32(j)
			if nodes != nil {
				v = nodes[j]
			}
			p := pos[v]
			if p >= 0 && rows {
				continue
			}
			if p >= 0 && x0 != nil {
				x0[j] = yf[p] * inv0
				continue
			}
			if p < 0 {
				// Leaf k's score z_v = s_v + d·w·y_u, or s_v + d·w·y_a + d·w2·y_b for a
				// bridge, for every lane, the leaf's entries read once.
				k := -1 - p
				dw, par, q := d*lv.w[k], int(lv.parent[k])*stride, lv.parent2[k]
				var sk []float64
				if fold != nil {
					sk = fold[int(lv.foldOf[k])*pprLanes:][:pprLanes]
				}
				for i, b := range lanes {
					var sv float64
					if sk != nil {
						sv = sk[b] // resets[b][v]·scales[b], or 0 where that is 0
					} else {
						sv = resets[i][v] * scales[i]
					}
					z := sv + dw*y[par+b]
					if q >= 0 {
						z += d * lv.w2[k] * y[int(q)*stride+b]
					}
					xs[i][j] = z * inv[i]
				}
				continue
			}
			row, full := y[int(p)*stride:], lay.full[p]
			for i, b := range lanes {
				xs[i][j] = row[b] * full * inv[i]
			}
		}
	})
	return xs
}

// sumInOrder returns Σv summed left to right.
func sumInOrder(v []float64) float64 {
	var t float64
	for _, x := range v {
		t += x
	}
	return t
}

// pprRatio returns Σres/(Σzsum + extra), summed in chunk order (deterministic).
func pprRatio(res, zsum []float64, extra float64) float64 {
	var r, z float64
	for c := range res {
		r += res[c]
		z += zsum[c]
	}
	return r / (z + extra)
}

// Vectorized reports whether the solver runs vector kernels (AVX2 or AVX-512; they need
// GOEXPERIMENT=simd at build time); otherwise it runs the portable Go loops. Results
// agree to rounding (the vector passes use fused multiply-adds).
func (s *PPRSolver) Vectorized() bool { return s.path != KernelsPortable }

// Kernels returns the kernel path the solver runs (see KernelsEnv).
func (s *PPRSolver) Kernels() KernelPath { return s.path }
