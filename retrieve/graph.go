package retrieve

import (
	"fmt"
	"math"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kernels"
)

// graphView is an undirected weighted graph over some node kinds of the index, ready
// for Personalized PageRank.
type graphView struct {
	ns     graphio.NodeSpace
	solver *kernels.PPRSolver
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
	return &graphView{ns: ns, solver: solver}, nil
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

// chunkScores extracts the chunk block of a PPR vector.
func (g *graphView) chunkScores(x []float64, chunks int) []float64 {
	out := make([]float64, chunks)
	for c := range out {
		out[c] = x[g.ns.Chunk(int32(c))]
	}
	return out
}

// solve runs PPR from a reset vector (NaN and negatives zeroed); an all-zero reset
// is reported so the caller can fall back.
func (g *graphView) solve(reset []float64) ([]float64, bool, error) {
	reset = kernels.SanitizePPRReset(reset)
	var sum float64
	for _, v := range reset {
		sum += v
	}
	if sum == 0 {
		return nil, false, nil
	}
	x, _, err := g.solver.Solve(reset)
	if err != nil {
		return nil, false, fmt.Errorf("retrieve: ppr: %w", err)
	}
	return x, true, nil
}
