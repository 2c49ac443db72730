package retrieve

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kernels"
)

// graphView is an undirected weighted graph over some node kinds of the index, ready
// for Personalized PageRank.
type graphView struct {
	ns     graphio.NodeSpace
	solver *kernels.PPRSolver
	chunks []int32 // node of each chunk
	// resets recycles node-sized reset vectors (*[]float64, all zero): allocating one
	// per query is memory the process must zero and, on a VM, fault in.
	resets sync.Pool
}

func newGraphView(ix *graphio.Index, set graphio.EdgeSet, w graphio.WeightFunc, damping float64) (*graphView, error) {
	csr, ns, err := ix.Adjacency(set, w)
	if err != nil {
		return nil, err
	}
	cfg := kernels.DefaultPPRConfig()
	cfg.Damping = damping
	solver, err := kernels.NewPPRSolver(csr, cfg)
	if err != nil {
		return nil, fmt.Errorf("retrieve: %w", err)
	}
	chunks := make([]int32, len(ix.Chunks))
	for c := range chunks {
		chunks[c] = ns.Chunk(int32(c))
	}
	return &graphView{ns: ns, solver: solver, chunks: chunks}, nil
}

// newReset returns an all-zero reset vector, one entry per node.
func (g *graphView) newReset() []float64 {
	if r, ok := g.resets.Get().(*[]float64); ok {
		return *r
	}
	return make([]float64, g.ns.N())
}

// release returns a reset vector from newReset once its solve is done.
func (g *graphView) release(reset []float64) {
	if len(reset) == g.ns.N() {
		clear(reset)
		g.resets.Put(&reset)
	}
}

// hippoWeights reproduces the weights HippoRAG 2's igraph graph has: every fact and
// synonym pair is stored as two parallel undirected edges (u,v) and (v,u), so a fact
// pair supported n times weighs 2n and a synonym pair 2·cosine, while a passage edge
// is added once with weight 1. (HippoRAG also lets a synonym cosine overwrite the fact
// count of a pair that is both; graphloom keeps both weights, summed.)
func hippoWeights(e graphio.TypedEdge) float32 {
	switch e.Type {
	case graphio.EdgeFact, graphio.EdgeSynonym:
		return 2 * e.Weight
	}
	return e.Weight
}

// unitWeights is HyperGraphRAG's PPR graph: every edge weighs 1.
func unitWeights(graphio.TypedEdge) float32 { return 1 }

func (s *Searcher) hippoGraph() (*graphView, error) {
	s.hippoOnce.Do(func() {
		s.hippo, s.hippoErr = newGraphView(s.ix, graphio.HippoGraph, s.hubControl(hippoWeights), s.cfg.Damping)
	})
	return s.hippo, s.hippoErr
}

func (s *Searcher) hyperGraph() (*graphView, error) {
	s.hyperOnce.Do(func() {
		s.hyper, s.hyperErr = newGraphView(s.ix, graphio.HyperGraph, s.hubControl(unitWeights), s.cfg.Damping)
	})
	return s.hyper, s.hyperErr
}

// hubControl scales every edge that touches an entity by the entity's specificity
// log(N/df) / log(N) (N chunks, df the chunks it occurs in), the geometric mean of the
// two for entity–entity edges, when Config.HubWeights is on: a mention-heavy entity
// ("american", "film") stops routing PPR mass between unrelated passages, while an
// entity of one chunk keeps its full weight.
func (s *Searcher) hubControl(w graphio.WeightFunc) graphio.WeightFunc {
	if !s.cfg.HubWeights || len(s.ix.Chunks) < 2 {
		return w
	}
	ec := s.entityChunks()
	n := float64(len(s.ix.Chunks))
	spec := make([]float64, len(ec))
	for e, cs := range ec {
		df := max(1, float64(len(cs)))
		spec[e] = math.Log(n/df) / math.Log(n)
	}
	// Entities come first in every node space, so an entity endpoint's node number
	// is its entity index.
	return func(e graphio.TypedEdge) float32 {
		x := w(e)
		switch e.Type {
		case graphio.EdgeFact, graphio.EdgeSynonym:
			return x * float32(math.Sqrt(spec[e.U]*spec[e.V]))
		case graphio.EdgeEntityChunk:
			return x * float32(spec[e.U])
		case graphio.EdgeHyperedgeEntity:
			return x * float32(spec[e.V])
		}
		return x
	}
}

// solve runs PPR from a reset vector from newReset, which it releases: NaN and
// negative entries are zeroed first (kernels.SanitizePPRResetInPlace). It returns the chunks' scores; an
// all-zero reset is reported (ok false) so the caller can fall back.
func (g *graphView) solve(reset []float64) (chunkScores []float64, ok bool, err error) {
	defer g.release(reset)
	if !kernels.SanitizePPRResetInPlace(reset) {
		return nil, false, nil
	}
	x, _, err := g.solver.SolveNodes(reset, g.chunks)
	if err != nil {
		return nil, false, fmt.Errorf("retrieve: ppr: %w", err)
	}
	return x, true, nil
}

// preparer seeds a question into a PPR query (hippoRetriever.prepare,
// hyperRetriever.prepare), its vectors from sc.
type preparer func(ctx context.Context, sc *scratch, g *graphView, q string) (*pprQuery, error)

// solveOne prepares one question, solves its PPR and finishes it.
func solveOne(ctx context.Context, s *Searcher, g *graphView, q string, k int, prepare preparer) (Result, error) {
	sc := s.scratch()
	defer sc.done()
	p, err := prepare(ctx, sc, g, q)
	if err != nil || p.reset == nil {
		return p.fallback(s, k), err
	}
	x, ok, err := g.solve(p.reset)
	p.reset = nil
	if err != nil {
		return Result{}, err
	}
	return p.finish(s, sc, x, ok, k), nil
}

// BatchRetriever is a Retriever that can retrieve many questions at once faster than
// one by one (the PPR retrievers solve 8 questions per pass over the graph).
type BatchRetriever interface {
	Retriever
	RetrieveBatch(ctx context.Context, qs []string, k int) ([]Result, error)
}

// solveBatch prepares the questions, solves the PPR of those that have a reset with
// SolveBatchNodes (the chunks' scores), batchResets at a time, and finishes each;
// result i answers qs[i]. The blocks split the questions with a reset into the same
// tiles that one call over all of them would make (batchResets is a multiple of
// kernels.PPRTileQueries), so the results do not depend on the block size; what they bound is memory, a node-sized
// reset vector per question in flight (120K passages: 6.7 MB each).
func solveBatch(ctx context.Context, s *Searcher, g *graphView, qs []string, k int, prepare preparer) ([]Result, error) {
	return solveBatchWith(ctx, s, g, qs, prepare, func(_ int, p *pprQuery, sc *scratch, x []float64, ok bool) Result {
		return p.finish(s, sc, x, ok, k)
	})
}

// solveBatchWith is solveBatch with the last step given: fin(i, p, sc, x, ok) makes
// result i from question i's prepared query p, its scratch sc and the chunks' PPR
// scores x (ok false and x nil when the question had no reset, the fallback case).
func solveBatchWith[T any](ctx context.Context, s *Searcher, g *graphView, qs []string, prepare preparer,
	fin func(i int, p *pprQuery, sc *scratch, x []float64, ok bool) T) ([]T, error) {
	out := make([]T, len(qs))
	var pending []*pprQuery
	var scs []*scratch // the scratch of each pending query
	var at []int       // question of each pending query
	defer func() {
		for _, sc := range scs {
			sc.done()
		}
	}()
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		resets := make([][]float64, len(pending))
		for j, p := range pending {
			resets[j] = p.reset
		}
		xs, _, err := g.solver.SolveBatchNodes(resets, g.chunks)
		for j, p := range pending {
			g.release(p.reset)
			p.reset = nil
			if err == nil {
				out[at[j]] = fin(at[j], p, scs[j], xs[j], true)
			}
			scs[j].done()
		}
		pending, scs, at = pending[:0], scs[:0], at[:0]
		if err != nil {
			return fmt.Errorf("retrieve: ppr: %w", err)
		}
		return nil
	}
	for i, q := range qs {
		sc := s.scratch()
		p, err := prepare(ctx, sc, g, q)
		if err != nil {
			sc.done()
			return nil, err
		}
		if p.reset == nil || !kernels.SanitizePPRResetInPlace(p.reset) {
			if p.reset != nil {
				g.release(p.reset)
				p.reset = nil
			}
			out[i] = fin(i, p, sc, nil, false)
			sc.done()
			continue
		}
		pending, scs, at = append(pending, p), append(scs, sc), append(at, i)
		if len(pending) == batchResets {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// batchResets is how many questions' PPR solveBatch solves in one SolveBatchNodes
// call: 8 tiles.
const batchResets = 8 * kernels.PPRTileQueries
