package rerank

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/retrieve"
)

// promptedEmbedder is an asymmetric embedder: a passage is [1, 0] when it mentions
// "harbour", else [0, 1]; a question embedded as a query points the other way from
// the same question embedded as a passage.
type promptedEmbedder struct{}

func (promptedEmbedder) Identity() string { return "prompted" }
func (promptedEmbedder) Dim() int         { return 2 }
func (promptedEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{0, 1}
		if strings.Contains(t, "harbour") {
			out[i] = []float32{1, 0}
		}
	}
	return out, nil
}
func (p promptedEmbedder) EmbedQueries(ctx context.Context, texts []string) ([][]float32, error) {
	vs, _ := p.Embed(ctx, texts)
	for _, v := range vs {
		v[0], v[1] = v[1], v[0]
	}
	return vs, nil
}

type fixedFirst struct{ passages []retrieve.Passage }

func (fixedFirst) Name() string { return "fixed" }
func (f fixedFirst) Retrieve(context.Context, string, int) (retrieve.Result, error) {
	return retrieve.Result{Passages: f.passages}, nil
}

// TestRerankEmbedsTheQuestionAsAQuery: the reranker's cosine uses the question's query
// embedding (as the first stage's dense retrieval does), in the retriever and in the
// per-question pools alike.
func TestRerankEmbedsTheQuestionAsAQuery(t *testing.T) {
	first := fixedFirst{[]retrieve.Passage{{Title: "A", Text: "the harbour town"}, {Title: "B", Text: "the inland mill"}}}
	r := &Retriever{First: first, Embedder: promptedEmbedder{}, Candidates: 2}
	res, err := r.Retrieve(context.Background(), "which harbour?", 2)
	require.NoError(t, err)
	require.Len(t, res.Passages, 2)
	assert.Equal(t, "B", res.Passages[0].Title, "the query vector [0, 1] is closest to the mill")

	cs := []*Candidates{{Question: "which harbour?", Texts: []string{"A\nthe harbour town"}}}
	require.NoError(t, Embed(context.Background(), promptedEmbedder{}, cs))
	assert.Equal(t, []float32{0, 1}, cs[0].QueryVec)
}
