package retrieve

import (
	"context"
	"fmt"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kernels"
)

type denseRetriever struct{ s *Searcher }

func (r denseRetriever) Name() string { return "dense" }

func (r denseRetriever) Retrieve(ctx context.Context, q string, k int) (Result, error) {
	qv, err := r.s.embedQuery(ctx, r.s.cfg.QueryToPassage, q)
	if err != nil {
		return Result{}, err
	}
	sc := r.s.scratch()
	defer sc.done()
	return Result{Passages: r.s.passages(toF64(sc, r.s.scores(sc, graphio.KindChunk, qv)), k)}, nil
}

// tripleRetriever returns the top-k facts by cosine to the question and, as passages,
// the chunks that state them, in the order of their best fact.
type tripleRetriever struct{ s *Searcher }

func (r tripleRetriever) Name() string { return "triples" }

func (r tripleRetriever) Retrieve(ctx context.Context, q string, k int) (Result, error) {
	if r.s.ix.Embeddings[graphio.KindFact] == nil || len(r.s.ix.Facts) == 0 {
		return Result{}, fmt.Errorf("retrieve: triples: the index has no facts")
	}
	qv, err := r.s.embedQuery(ctx, r.s.cfg.QueryToFact, q)
	if err != nil {
		return Result{}, err
	}
	var res Result
	seen := map[int32]bool{}
	sc := r.s.scratch()
	defer sc.done()
	for _, nb := range kernels.TopK(r.s.scores(sc, graphio.KindFact, qv), k) {
		res.Facts = append(res.Facts, r.s.factTriple(nb.Index))
		for _, c := range r.s.ix.Facts[nb.Index].Chunks {
			if !seen[c] && len(res.Passages) < k {
				seen[c] = true
				res.Passages = append(res.Passages, r.s.passage(c, float64(nb.Score)))
			}
		}
	}
	return res, nil
}
