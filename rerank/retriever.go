package rerank

import (
	"context"
	"errors"
	"fmt"

	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/retrieve"
)

// Retriever reranks another retriever's candidates: it asks the first stage for
// Candidates passages and returns the best k after reranking — by cosine alone when
// Reranker is nil ("dense", the vanilla-RAG baseline), else by CAGE. Passage scores are
// the fused scores.
type Retriever struct {
	First      retrieve.Retriever
	Embedder   embed.Embedder
	Reranker   *Reranker // nil: cosine only
	Candidates int
}

// Name implements retrieve.Retriever: "<first>+cage" or "<first>+dense".
func (r *Retriever) Name() string {
	if r.Reranker == nil {
		return r.First.Name() + "+dense"
	}
	return r.First.Name() + "+cage"
}

// Retrieve implements retrieve.Retriever.
func (r *Retriever) Retrieve(ctx context.Context, q string, k int) (retrieve.Result, error) {
	if r.First == nil || r.Embedder == nil {
		return retrieve.Result{}, errors.New("rerank: retriever needs a first stage and an embedder")
	}
	res, err := r.First.Retrieve(ctx, q, max(k, r.Candidates))
	if err != nil || len(res.Passages) == 0 {
		return res, err
	}
	texts := make([]string, 0, len(res.Passages))
	bodies := make([]string, len(res.Passages))
	for i, p := range res.Passages {
		texts = append(texts, p.Title+"\n"+p.Text)
		bodies[i] = p.Text
	}
	// The question as a query (an asymmetric embedder's query prompt), as the first
	// stage's dense retrieval embeds it; the passages as passages.
	qv, err := embed.Queries(ctx, r.Embedder, []string{q})
	if err != nil {
		return retrieve.Result{}, fmt.Errorf("rerank: embed the question: %w", err)
	}
	vs, err := r.Embedder.Embed(ctx, texts)
	if err != nil {
		return retrieve.Result{}, fmt.Errorf("rerank: embed candidates: %w", err)
	}
	cos := make([]float64, len(bodies))
	for i := range cos {
		cos[i] = cosine(qv[0], vs[i])
	}
	scores := cos
	if r.Reranker != nil {
		if scores, err = r.Reranker.Scores(bodies, cos); err != nil {
			return retrieve.Result{}, err
		}
	}
	order := Order(scores)
	out := res
	out.Passages = make([]retrieve.Passage, 0, min(k, len(order)))
	for _, o := range order[:min(k, len(order))] {
		p := res.Passages[o]
		p.Score = scores[o]
		out.Passages = append(out.Passages, p)
	}
	return out, nil
}
