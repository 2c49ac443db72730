package retrieve

import (
	"context"
	"slices"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kernels"
)

// hippoRetriever is HippoRAG 2's retrieval (anchors §A.3).
type hippoRetriever struct{ s *Searcher }

func (r hippoRetriever) Name() string { return "ppr" }

func (r hippoRetriever) Retrieve(ctx context.Context, q string, k int) (Result, error) {
	g, err := r.s.hippoGraph()
	if err != nil {
		return Result{}, err
	}
	return solveOne(ctx, r.s, g, q, k, r.prepare)
}

// RetrieveBatch retrieves many questions with their PPR solved together, 8 per pass
// over the graph and 16 per float32 pass (kernels.PPRSolver.SolveBatchNodes); result i
// is Retrieve(qs[i]) to the solver's tolerance: the PPR scores meet the same 1e-10 and
// differ from a lone solve's by up to about that (kernels.PPRConfig.Float64Batch).
func (r hippoRetriever) RetrieveBatch(ctx context.Context, qs []string, k int) ([]Result, error) {
	g, err := r.s.hippoGraph()
	if err != nil {
		return nil, err
	}
	return solveBatch(ctx, r.s, g, qs, k, r.prepare)
}

// pprQuery is a question's state between seeding and the PPR solve.
type pprQuery struct {
	bm25   []float64  // the question's BM25 scores when lexical scoring is on, else nil
	dense  []float64  // passage scores, the fallback ranking
	facts  [][]string // linked facts
	linked []int32    // their indices (ppr; nil for hyperppr)
	reset  []float64  // from graphView.newReset; nil: no PPR, rank by dense
}

func (p *pprQuery) fallback(s *Searcher, k int) Result {
	if p.dense == nil {
		return Result{}
	}
	return Result{Passages: s.passages(p.dense, k), Facts: p.facts}
}

// finish ranks the passages from their PPR scores (ok false: the reset was empty);
// sc is the scratch that prepared the query.
func (p *pprQuery) finish(s *Searcher, sc *scratch, chunkScores []float64, ok bool, k int) Result {
	if !ok {
		return p.fallback(s, k)
	}
	return Result{Passages: s.rankedPassages(sc, p.bm25, chunkScores, k), Facts: p.facts}
}

// prepare links the question's facts and entities and builds its PPR reset vector;
// the query's vectors come from sc.
func (r hippoRetriever) prepare(ctx context.Context, sc *scratch, g *graphView, q string) (*pprQuery, error) {
	s := r.s
	qp, err := s.embedQuery(ctx, s.cfg.QueryToPassage, q)
	if err != nil {
		return &pprQuery{}, err
	}
	bm25 := s.lexicalBM25(sc, q)
	chunk := s.scores(sc, graphio.KindChunk, qp)
	p := &pprQuery{bm25: bm25, dense: s.passageFusion(bm25, chunk).all(sc)}
	sc.release32(chunk)
	if len(s.ix.Facts) == 0 {
		return p, nil
	}
	qents := s.queryEntities(q)
	qf := qp
	if s.cfg.QueryToFact != s.cfg.QueryToPassage {
		if qf, err = s.embedQuery(ctx, s.cfg.QueryToFact, q); err != nil {
			return &pprQuery{}, err
		}
	}
	// 1. Fact scores, min-max normalised; the top LinkingTopK facts are candidates.
	fact := s.scores(sc, graphio.KindFact, qf)
	factScores, factLex := s.factFusion(sc, q, fact)
	defer sc.release32(fact)
	defer sc.release64(factLex) // not kept by the query
	fused := factScores.all32(sc)
	var top []int32
	for _, nb := range kernels.TopK(fused, s.cfg.LinkingTopK) {
		top = append(top, nb.Index)
	}
	sc.release32(fused)
	// 2. Recognition memory, when an LLM is available.
	if s.llm != nil && s.cfg.RecognitionMemory {
		kept, err := s.recognize(ctx, q, top)
		if err != nil {
			return &pprQuery{}, err
		}
		if len(kept) == 0 {
			return p, nil // HippoRAG falls back to dense retrieval
		}
		top = kept
	} else if factLex != nil && s.cfg.LexicalFilter {
		// 2'. Offline recognition memory: a linked fact whose subject and object share
		// no term with the question is dropped; with nothing left and no entity named
		// by the question, rank as HippoRAG does when its filter keeps nothing.
		kept := top[:0]
		for _, f := range top {
			if factLex[f] > 0 {
				kept = append(kept, f)
			}
		}
		top = kept
		if len(top) == 0 && len(qents) == 0 {
			return p, nil
		}
	}
	for _, f := range top {
		p.facts = append(p.facts, s.factTriple(f))
		p.linked = append(p.linked, f)
	}
	// 3. Entity seeds: fact score ÷ number of chunks holding the entity, averaged over
	// the entity's occurrences among the kept facts; only the top LinkingTopK survive.
	entChunks := s.entityChunks()
	weight := map[int32]float64{}
	occurs := map[int32]float64{}
	for _, f := range top {
		fact := &s.ix.Facts[f]
		for _, e := range []int32{fact.Subject, fact.Object} {
			if n := len(entChunks[e]); n > 0 {
				weight[e] += factScores.at(int(f)) / float64(n)
			}
			occurs[e]++
		}
	}
	ents := make([]int32, 0, len(weight))
	for e := range weight {
		weight[e] /= occurs[e]
		ents = append(ents, e)
	}
	slices.SortFunc(ents, func(a, b int32) int {
		switch {
		case weight[a] > weight[b]:
			return -1
		case weight[a] < weight[b]:
			return 1
		}
		return int(a - b)
	})
	if len(ents) > s.cfg.LinkingTopK {
		ents = ents[:s.cfg.LinkingTopK]
	}
	reset := g.newReset()
	for _, e := range ents {
		reset[g.ns.Entity(e)] = weight[e]
	}
	// 3b. Entities the question names, seeded as a fact of score 1 would seed them.
	for _, e := range qents {
		if n := len(entChunks[e]); n > 0 {
			reset[g.ns.Entity(e)] = max(reset[g.ns.Entity(e)], 1/float64(n))
		}
	}
	// 4. Passage seeds: normalised dense scores × passage_node_weight, for every passage.
	for c, v := range p.dense {
		reset[g.ns.Chunk(int32(c))] += v * s.cfg.PassageNodeWeight
	}
	p.reset = reset
	return p, nil
}

func toF32(sc *scratch, v []float64) []float32 {
	out := sc.f32(len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}
