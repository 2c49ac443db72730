package retrieve

import (
	"context"
	"maps"
	"math"
	"slices"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kernels"
)

// hyperRetriever is HyperGraphRAG + PPR (seed 002; anchors §E.2–E.3).
type hyperRetriever struct{ s *Searcher }

func (r hyperRetriever) Name() string { return "hyperppr" }

func (r hyperRetriever) Retrieve(ctx context.Context, q string, k int) (Result, error) {
	g, err := r.s.hyperGraph()
	if err != nil {
		return Result{}, err
	}
	return solveOne(ctx, r.s, g, q, k, r.prepare)
}

// RetrieveBatch retrieves many questions with their PPR solved together; result i is
// Retrieve(qs[i]) to the solver's tolerance (see hippoRetriever.RetrieveBatch).
func (r hyperRetriever) RetrieveBatch(ctx context.Context, qs []string, k int) ([]Result, error) {
	g, err := r.s.hyperGraph()
	if err != nil {
		return nil, err
	}
	return solveBatch(ctx, r.s, g, qs, k, r.prepare)
}

// prepare seeds the question's entities, hyperedges and chunks into a reset vector.
func (r hyperRetriever) prepare(ctx context.Context, sc *scratch, g *graphView, q string) (*pprQuery, error) {
	s := r.s
	qv, err := s.embedQuery(ctx, s.cfg.QueryToPassage, q)
	if err != nil {
		return &pprQuery{}, err
	}
	entChunks := s.entityChunks()
	// Local path: the top entities by similarity, divided by their chunk counts.
	entSim := map[int32]float64{}
	for _, nb := range s.topOfKind(sc, graphio.KindEntity, q, qv, s.cfg.HyperEntityTopK) {
		if n := len(entChunks[nb.Index]); n > 0 {
			entSim[nb.Index] = max(entSim[nb.Index], float64(nb.Score)/float64(n))
		}
	}
	// Global path: the top hyperedges by similarity, propagated to their entities with
	// a noisy-OR: s = 1 − (1 − mean w)^(1 + ln count), w = sim ÷ entity chunk count.
	edgeSim := map[int32]float64{}
	sum, count := map[int32]float64{}, map[int32]float64{}
	for _, nb := range s.topOfKind(sc, graphio.KindHyperedge, q, qv, s.cfg.HyperEdgeTopK) {
		edgeSim[nb.Index] = float64(nb.Score)
		for _, e := range s.ix.Hyperedges[nb.Index].Entities {
			n := len(entChunks[e])
			if n == 0 {
				continue
			}
			if w := float64(nb.Score) / float64(n); w > 0 {
				sum[e] += w
				count[e]++
			}
		}
	}
	for e, c := range count {
		avg := min(1, sum[e]/c)
		entSim[e] = max(entSim[e], 1-math.Pow(1-avg, 1+math.Log(c)))
	}
	// Entities the question names (Config.QueryEntities), as a similarity of 1 would.
	for _, e := range s.queryEntities(q) {
		if n := len(entChunks[e]); n > 0 {
			entSim[e] = max(entSim[e], 1/float64(n))
		}
	}
	reset := g.newReset()
	seed := func(sims map[int32]float64, top int, node func(int32) int32) {
		// In id order: TopK breaks ties by position, and map order is random.
		ids := slices.Sorted(maps.Keys(sims))
		vals := make([]float64, len(ids))
		for i, id := range ids {
			vals[i] = sims[id]
		}
		norm := minMaxFlatToOne(nil, vals)
		for _, nb := range kernels.TopK(toF32(nil, norm), top) {
			reset[node(ids[nb.Index])] += norm[nb.Index]
		}
	}
	seed(entSim, s.cfg.HyperSeedEntities, g.ns.Entity)
	seed(edgeSim, s.cfg.HyperSeedEdges, g.ns.Hyperedge)
	// Chunk seeds: the dense top HyperChunkTopK, min-max normalised, × w_chunk.
	bm25 := s.lexicalBM25(sc, q)
	chunk := s.scores(sc, graphio.KindChunk, qv)
	dense := s.passageFusion(bm25, chunk).all32(sc)
	sc.release32(chunk)
	top := kernels.TopK(dense, s.cfg.HyperChunkTopK)
	vals := make([]float64, len(top))
	for i, nb := range top {
		vals[i] = float64(nb.Score)
	}
	for i, v := range minMaxFlatToOne(nil, vals) {
		reset[g.ns.Chunk(top[i].Index)] += v * s.cfg.HyperChunkWeight
	}
	p := &pprQuery{bm25: bm25, dense: toF64(sc, dense), reset: reset}
	sc.release32(dense)
	return p, nil
}
