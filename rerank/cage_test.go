package rerank

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/engine/enginetest"
	"github.com/graphloom/graphloom/retrieve"
)

func TestCoherenceAndFuseByHand(t *testing.T) {
	// Z: a and b point the same way, c is orthogonal to both.
	z := [][]float32{{1, 0}, {2, 0}, {0, 1}}
	rel := []float64{0.2, 0.4, 0.6}
	// Mean: a = (cos(a,b)+cos(a,c))/2 = 0.5, b = 0.5, c = 0.
	assert.InDeltaSlice(t, []float64{0.5, 0.5, 0}, Coherence(z, rel, AggMean), 1e-12)
	// Relevance weights minmax(rel) = 0, 0.5, 1: a = (0.5·1 + 1·0)/1.5, b = (0·1 + 1·0)/1 = 0, c = 0.
	assert.InDeltaSlice(t, []float64{1.0 / 3, 0, 0}, Coherence(z, rel, AggRelevance), 1e-12)
	// Fuse: α·minmax(rel) + (1−α)·minmax(coh).
	assert.InDeltaSlice(t, []float64{0.5, 0.75, 0.5}, Fuse(rel, []float64{0.5, 0.5, 0}, 0.5), 1e-12)
	assert.InDeltaSlice(t, []float64{0, 0.5, 1}, Fuse(rel, []float64{0.5, 0.5, 0}, 1), 1e-12)
	assert.Equal(t, []int{1, 0, 2}, Order([]float64{0.5, 0.75, 0.5}))
	assert.Equal(t, []float64{0}, Coherence(z[:1], rel[:1], AggMean))
	// Equal relevance: the relevance aggregation falls back to the mean.
	assert.InDeltaSlice(t, []float64{0.5, 0.5, 0}, Coherence(z, []float64{1, 1, 1}, AggRelevance), 1e-12)
}

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	require.NoError(t, c.Validate())
	for _, mod := range []func(*Config){
		func(c *Config) { c.Alpha = 1.5 },
		func(c *Config) { c.Aggregation = "max" },
		func(c *Config) { c.Encoder.Beta = 0.5 },
		func(c *Config) { c.Encoder.Hidden = 0 },
		func(c *Config) { c.GraphCache = 0 },
	} {
		c := DefaultConfig()
		mod(&c)
		assert.Error(t, c.Validate())
	}
}

// TestCoherencePromotesTheConnectedPassage: two passages about the same guild and an
// off-topic one get the same cosine; with α < 1 the off-topic one ranks last.
func TestCoherencePromotesTheConnectedPassage(t *testing.T) {
	eng := enginetest.New(t)
	cfg := DefaultConfig()
	cfg.Alpha = 0.5
	r, err := NewUntrained(eng, cfg)
	require.NoError(t, err)
	texts := []string{
		"The Lamplighters Guild was founded by John Smith in Bristol.",
		"The stock price of the company fell sharply on Monday.",
		"John Smith led the Lamplighters Guild in Bristol for ten years.",
	}
	s, err := r.Scores(texts, []float64{0.5, 0.5, 0.5})
	require.NoError(t, err)
	assert.Equal(t, 1, Order(s)[2], "scores %v", s)
	// α = 1 is the first-stage order and parses nothing.
	cfg.Alpha = 1
	r1, err := NewUntrained(eng, cfg)
	require.NoError(t, err)
	s, err = r1.Scores(texts, []float64{0.1, 0.9, 0.5})
	require.NoError(t, err)
	assert.Equal(t, []float64{0, 1, 0.5}, s)
	assert.Empty(t, r1.graphs.byText)
	_, err = r.Scores(texts, []float64{1})
	assert.Error(t, err)
}

type fixedRetriever struct{ ps []retrieve.Passage }

func (f fixedRetriever) Name() string { return "fixed" }
func (f fixedRetriever) Retrieve(_ context.Context, _ string, k int) (retrieve.Result, error) {
	return retrieve.Result{Passages: f.ps[:min(k, len(f.ps))]}, nil
}

type wordEmbedder struct{}

func (wordEmbedder) Identity() string { return "words" }
func (wordEmbedder) Dim() int         { return 2 }
func (wordEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := []float32{0.1, 0.1}
		for _, w := range []string{"guild", "Guild"} {
			if strings.Contains(t, w) {
				v[0]++
			}
		}
		if strings.Contains(t, "stock") {
			v[1]++
		}
		out[i] = v
	}
	return out, nil
}

func TestRetrieverReranksCandidates(t *testing.T) {
	first := fixedRetriever{ps: []retrieve.Passage{
		{Title: "a", Text: "The stock price fell."},
		{Title: "b", Text: "The guild met in Bristol."},
		{Title: "c", Text: "The stock market rose."},
	}}
	r := &Retriever{First: first, Embedder: wordEmbedder{}, Candidates: 3}
	assert.Equal(t, "fixed+dense", r.Name())
	res, err := r.Retrieve(context.Background(), "Where did the guild meet?", 1)
	require.NoError(t, err)
	require.Len(t, res.Passages, 1)
	assert.Equal(t, "b", res.Passages[0].Title, "cosine brings the guild passage from rank 2 to 1 among 3 candidates")

	// CAGE inside the Retriever: with α = 1 the fused score is the min-max normalised
	// cosine (CAGE maps the lowest to 0): by hand, q = (1.1, 0.1), a = c = (0.1, 1.1),
	// b = (1.1, 0.1), so cos = 0.18, 1, 0.18 → 0, 1, 0.
	cfg := DefaultConfig()
	cfg.Alpha = 1
	rr, err := NewUntrained(enginetest.New(t), cfg)
	require.NoError(t, err)
	r.Reranker = rr
	assert.Equal(t, "fixed+cage", r.Name())
	res, err = r.Retrieve(context.Background(), "Where did the guild meet?", 3)
	require.NoError(t, err)
	require.Len(t, res.Passages, 3)
	assert.Equal(t, "b", res.Passages[0].Title)
	assert.InDelta(t, 1, res.Passages[0].Score, 1e-9)
	assert.InDelta(t, 0, res.Passages[1].Score, 1e-9)
	assert.InDelta(t, 0, res.Passages[2].Score, 1e-9)
}

// minMaxFlatToZero follows CAGE's reranker: a signal with no spread over the candidates
// (one candidate, or all tied) becomes all zeros, so it adds nothing to the fused score.
func TestMinMaxFlatToZero(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []float64
		want []float64
	}{
		{"empty", nil, []float64{}},
		{"one entry", []float64{0.3}, []float64{0}},
		{"constant", []float64{0.7, 0.7, 0.7}, []float64{0, 0, 0}},
		{"spread", []float64{2, 4, 3}, []float64{0, 1, 0.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := minMaxFlatToZero(tc.in)
			assert.Len(t, got, len(tc.want))
			assert.InDeltaSlice(t, tc.want, got, 1e-15)
		})
	}
	// Through Fuse: tied relevance leaves the ranking to coherence alone.
	assert.InDeltaSlice(t, []float64{0.2, 0, 0.1}, Fuse([]float64{5, 5, 5}, []float64{1, -1, 0}, 0.8), 1e-12)
}

// GraphCache keeps at most its capacity of graphs and evicts the least recently used:
// a hit refreshes an entry, so after a, b, a, c the one to go is b.
func TestGraphCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := NewGraphCacheSize(2)
	a, b, d := "Ada Lovelace wrote the first program.", "Bristol lies on the Avon.", "The guild met in Bath."
	cached := func(text string) bool { _, ok := c.byText[text]; return ok }
	graph := func(text string) *PassageGraph {
		g, err := c.Graph(text)
		require.NoError(t, err)
		return g
	}

	ga := graph(a)
	gb := graph(b)
	assert.Same(t, ga, graph(a), "a hit returns the memoised graph and makes a the most recent")
	graph(d)
	assert.Equal(t, 2, c.recent.Len())
	assert.True(t, cached(a))
	assert.False(t, cached(b), "b was the least recently used")
	assert.True(t, cached(d))

	gb2 := graph(b) // parsed again; now a is the least recently used
	assert.NotSame(t, gb, gb2)
	assert.Equal(t, gb, gb2, "the same text parses to the same graph")
	assert.False(t, cached(a))
	assert.True(t, cached(b))
	assert.True(t, cached(d))
	assert.Len(t, c.byText, 2)

	assert.Equal(t, DefaultGraphCache, NewGraphCache().capacity)
	assert.Equal(t, 1, NewGraphCacheSize(0).capacity, "capacity is at least 1")
}

// A Reranker's own cache takes its capacity from Config.GraphCache.
func TestRerankerGraphCacheCapacity(t *testing.T) {
	cfg := DefaultConfig()
	cfg.GraphCache = 3
	r, err := NewReranker(cfg, &Encoder{})
	require.NoError(t, err)
	assert.Equal(t, 3, r.graphs.capacity)
}
