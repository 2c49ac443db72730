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
	s := r.s
	g, err := s.hippoGraph()
	if err != nil {
		return Result{}, err
	}
	qp, err := s.embedQuery(ctx, s.cfg.QueryToPassage, q)
	if err != nil {
		return Result{}, err
	}
	dense := s.passageScores(q, toF64(s.scores(graphio.KindChunk, qp)))
	fallback := func(facts [][]string) (Result, error) {
		return Result{Passages: s.passages(dense, k), Facts: facts}, nil
	}
	if len(s.ix.Facts) == 0 {
		return fallback(nil)
	}
	qf := qp
	if s.cfg.QueryToFact != s.cfg.QueryToPassage {
		if qf, err = s.embedQuery(ctx, s.cfg.QueryToFact, q); err != nil {
			return Result{}, err
		}
	}
	// 1. Fact scores, min-max normalised; the top LinkingTopK facts are candidates.
	factScores, factLex := s.factScores(q, toF64(s.scores(graphio.KindFact, qf)))
	var top []int32
	for _, nb := range kernels.TopK(toF32(factScores), s.cfg.LinkingTopK) {
		top = append(top, nb.Index)
	}
	// 2. Recognition memory, when an LLM is available.
	if s.llm != nil && s.cfg.RecognitionMemory {
		kept, err := s.recognize(ctx, q, top)
		if err != nil {
			return Result{}, err
		}
		if len(kept) == 0 {
			return fallback(nil) // HippoRAG falls back to dense retrieval
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
		if len(top) == 0 && len(s.queryEntities(q)) == 0 {
			return fallback(nil)
		}
	}
	var facts [][]string
	for _, f := range top {
		facts = append(facts, s.factTriple(f))
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
				weight[e] += factScores[f] / float64(n)
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
	reset := make([]float64, g.ns.N())
	for _, e := range ents {
		reset[g.ns.Entity(e)] = weight[e]
	}
	// 3b. Entities the question names, seeded as a fact of score 1 would seed them.
	for _, e := range s.queryEntities(q) {
		if n := len(entChunks[e]); n > 0 {
			reset[g.ns.Entity(e)] = max(reset[g.ns.Entity(e)], 1/float64(n))
		}
	}
	// 4. Passage seeds: normalised dense scores × passage_node_weight, for every passage.
	for c, v := range dense {
		reset[g.ns.Chunk(int32(c))] += v * s.cfg.PassageNodeWeight
	}
	x, ok, err := g.solve(reset)
	if err != nil || !ok {
		if err != nil {
			return Result{}, err
		}
		return fallback(facts)
	}
	return Result{Passages: s.passages(s.final(q, g.chunkScores(x, len(s.ix.Chunks))), k), Facts: facts}, nil
}

func toF32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}
