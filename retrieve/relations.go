package retrieve

import (
	"context"
	"fmt"
	"sync"

	"github.com/graphloom/graphloom/embed"
)

// relationCache holds the embeddings of relation texts (fact predicates), made by the
// searcher's embedder on first use: G-Retriever's edge_attr, which both its PCST edge
// prizes and its encoder's edge features are computed from.
type relationCache struct {
	mu  sync.Mutex
	vec map[string][]float32
}

// RelationVectors returns the embeddings of relation texts, embedding those not yet
// cached in one call to the searcher's embedder. Safe for concurrent use.
func (s *Searcher) RelationVectors(ctx context.Context, preds []string) ([][]float32, error) {
	c := &s.rels
	c.mu.Lock()
	if c.vec == nil {
		c.vec = map[string][]float32{}
	}
	var missing []string
	seen := map[string]bool{}
	for _, p := range preds {
		if _, ok := c.vec[p]; !ok && !seen[p] {
			seen[p] = true
			missing = append(missing, p)
		}
	}
	c.mu.Unlock()
	if len(missing) > 0 {
		vs, err := s.emb.Embed(ctx, missing)
		if err != nil {
			return nil, fmt.Errorf("retrieve: embedding relations: %w", err)
		}
		dim := s.emb.Dim()
		c.mu.Lock()
		for i, p := range missing {
			if len(vs[i]) != dim {
				c.mu.Unlock()
				return nil, fmt.Errorf("retrieve: relation %q embedded to %d dims, want %d", p, len(vs[i]), dim)
			}
			c.vec[p] = vs[i]
		}
		c.mu.Unlock()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([][]float32, len(preds))
	for i, p := range preds {
		out[i] = c.vec[p]
	}
	return out, nil
}

// Cosine is the cosine similarity of a and b in float64 (0 when either is zero), as
// torch.nn.CosineSimilarity computes G-Retriever's prizes and CAGE its relevance.
func Cosine(a, b []float32) float64 { return embed.Cosine(a, b) }
