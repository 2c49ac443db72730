// Package retrieve answers questions over an index with the retrievers users compare
// GraphRAG methods with:
//
//   - bm25: Okapi BM25 over chunks;
//   - dense: cosine between the question and chunk embeddings ("dense RAG");
//   - triples: the top-k facts by cosine, returned with their source chunks (the
//     "top-k triples" baseline of seed 004);
//   - ppr: HippoRAG 2's retrieval — fact linking, entity and passage seeds, Personalized
//     PageRank over entities and passages;
//   - hyperppr: HyperGraphRAG + PPR (seed 002) over the entity/hyperedge/chunk graph.
//
// Every knob lives in [Config] with the paper's default in its doc.
package retrieve

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kernels"
	"github.com/graphloom/graphloom/llm"
)

// Config holds every retrieval knob.
type Config struct {
	// BM25K1 and BM25B are Okapi BM25's term-saturation and length-normalisation
	// parameters; the usual 1.2 and 0.75.
	BM25K1, BM25B float64
	// Stem reduces BM25 terms to their Snowball (Porter2) English stems, so that
	// "married" matches "marries" and "cities" "city". Default true.
	Stem bool

	// Lexical chooses what scores passages and links facts before PPR (ppr, hyperppr):
	// LexicalAuto (default) fuses BM25 with the dense scores when the index was
	// embedded by the built-in hashed embedder and keeps HippoRAG 2's pure dense
	// scores when a real embedding model made the vectors; LexicalDense forces the
	// papers' path; LexicalFused forces fusion. A graphloom deviation: the papers
	// assume a strong dense embedder (NV-Embed-v2), which the offline hashed one is
	// not — it is weaker than BM25 on every development set.
	Lexical string
	// LexicalWeight is λ in λ·minmax(BM25) + (1−λ)·minmax(dense) when lexical scoring
	// is on; default 0.5.
	LexicalWeight float64
	// FinalBM25Weight is BM25's weight μ in the final passage ranking of ppr and
	// hyperppr when lexical scoring is on; 0 ranks by PPR mass alone as the papers do.
	// Default 0.5: the two rankings weigh the same. PPR mass alone over-ranks
	// well-connected passages (PubMedQA dev: ppr R@1 21 against BM25's 97 with μ = 0)
	// and blurs single-hop questions.
	FinalBM25Weight float64
	// FinalFusion is how PPR and BM25 are fused: FusionRRF (default), reciprocal-rank
	// fusion with k = 60, which needs no score calibration and cannot let one ranker's
	// outliers dominate; or FusionLinear over min-max-normalised scores.
	FinalFusion string
	// HubWeights scales the edges of each entity by its specificity log(N/df)/log(N),
	// so that entities found in many chunks carry little PPR mass between them. Off in
	// the papers (HippoRAG 2 weighs every passage edge 1).
	HubWeights bool
	// QueryEntities also seeds PPR with the entities the question names verbatim
	// (capitalised words or numbers matched to entity names, longest first), each with
	// weight 1/(chunks holding it): HippoRAG 1's query-entity linking beside HippoRAG
	// 2's fact linking, for ppr and hyperppr (HyperGraphRAG seeds only its retrieved
	// entities, hyperedges and chunks). Default true, whatever the embedder: a
	// deviation from both papers; the fact linker alone cannot find the question's
	// entities when the offline extractor states few facts about them.
	QueryEntities bool
	// LexicalFilter is the offline stand-in for HippoRAG 2's recognition memory, used
	// when lexical scoring is on and no LLM filters: linked facts whose subject and
	// object share no (stemmed) term with the question are dropped. Default true.
	LexicalFilter bool

	// LinkingTopK is the number of facts kept after scoring (and after recognition
	// memory), and of entities seeded; HippoRAG 2 linking_top_k: 5.
	LinkingTopK int
	// PassageNodeWeight scales the min-max-normalised dense scores that seed every
	// passage node; HippoRAG 2 passage_node_weight: 0.05.
	PassageNodeWeight float64
	// Damping is the PPR damping of both graph retrievers; HippoRAG 2 and HyperGraphRAG: 0.5.
	Damping float64
	// RecognitionMemory filters the linked facts with the LLM (HippoRAG 2's DSPy
	// filter), keeping at most RecognitionKeep; it is used only when an LLM is given.
	RecognitionMemory bool
	// RecognitionKeep is the most facts the filter keeps: HippoRAG 2 truncates its
	// answer to linking_top_k = 5 (its prompt asks the LLM for up to 4, advice the
	// LLM may not follow; the cap is 5).
	RecognitionKeep int
	// QueryToFact and QueryToPassage are instructions prefixed to the question before
	// embedding it for fact and passage scoring (HippoRAG 2 uses them with NV-Embed-v2:
	// "Given a question, retrieve relevant triplet facts that matches this question."
	// and "Given a question, retrieve relevant documents that best answer the
	// question."). Empty by default, with a real embedding model too (a deviation
	// there): the built-in embedder has no use for them. Facts are embedded as
	// "subject predicate object", not HippoRAG 2's tuple string "('s', 'p', 'o')".
	QueryToFact, QueryToPassage string

	// PCSTTopK and PCSTTopKEdges are how many nodes and distinct edge similarities
	// get prizes, and PCSTEdgeCost the edge cost (G-Retriever's WebQSP call:
	// topk 3, topk_e 5, cost_e 0.5; seed 004 grid-searches cost_e ∈ {0.01, 0.1, 0.5}).
	// A deviation of the pcst retriever: an edge's similarity is its whole fact's
	// ("subject predicate object"), fused with BM25 under lexical scoring, where
	// G-Retriever compares the question with the relation text alone (which the
	// gretriever retriever does). For both, a node's similarity is the entity
	// score the other retrievers use: the cosine of unit vectors under dense scoring,
	// fused with BM25 over entity names under lexical scoring (the built-in embedder's
	// default), where G-Retriever takes the cosine alone.
	PCSTTopK, PCSTTopKEdges int
	PCSTEdgeCost            float64
	// PCSTSeeds, PCSTHops and PCSTMaxNodes bound the subgraph PCST runs on: the
	// entities within PCSTHops fact edges of the PCSTSeeds most similar ones, at most
	// PCSTMaxNodes. G-Retriever's graphs are per question; graphloom's is the corpus's
	// (a documented deviation). Defaults 20, 2, 2000.
	PCSTSeeds, PCSTHops, PCSTMaxNodes int
	// PCSTText is the subgraph's textualisation: PCSTTextCSV (G-Retriever, default)
	// or PCSTTextVerbal (SelfGraphRAG's "v_i [r] v_j" lines).
	PCSTText string

	// HyperEntityTopK and HyperEdgeTopK are how many entities and hyperedges the
	// vector search returns before propagation; HyperGraphRAG top_k: 60. A deviation:
	// no cosine threshold (HyperGraphRAG's 0.4) drops weak matches; their seeds are
	// weighted by score, and the top few seed PPR.
	HyperEntityTopK, HyperEdgeTopK int
	// HyperSeedEntities and HyperSeedEdges are how many top entities and hyperedges
	// seed the PPR; HyperGraphRAG top_n_ent: 5, top_h_ent: 10.
	HyperSeedEntities, HyperSeedEdges int
	// HyperChunkTopK is how many dense-retrieved chunks are seeded; HyperGraphRAG: 100.
	HyperChunkTopK int
	// HyperChunkWeight (w_chunk) scales the normalised dense chunk seeds; HyperGraphRAG: 0.5.
	HyperChunkWeight float64

	// Calibration says whether ppr and hyperppr use the calibration stored in the
	// index by `graphloom calibrate` (see CalibrationBlob): CalibrationAuto (default;
	// "" means the same) applies the variant it chose, CalibrationOff ignores it, and a
	// variant name (VariantFusion, VariantNoGate, VariantRanker, VariantDefaults)
	// forces that variant, for ablations. A graphloom addition, not in the papers.
	Calibration string
}

// DefaultConfig returns the papers' defaults, except where a field's doc says
// otherwise.
func DefaultConfig() Config {
	return Config{
		BM25K1: 1.2, BM25B: 0.75, Stem: true, Lexical: LexicalAuto, LexicalWeight: 0.5, QueryEntities: true, LexicalFilter: true, FinalBM25Weight: 0.5, FinalFusion: FusionRRF,
		LinkingTopK: 5, PassageNodeWeight: 0.05, Damping: 0.5,
		RecognitionMemory: true, RecognitionKeep: 5,
		HyperEntityTopK: 60, HyperEdgeTopK: 60, HyperSeedEntities: 5, HyperSeedEdges: 10,
		HyperChunkTopK: 100, HyperChunkWeight: 0.5,
		PCSTTopK: 3, PCSTTopKEdges: 5, PCSTEdgeCost: 0.5, PCSTSeeds: 20, PCSTHops: 2, PCSTMaxNodes: 2000, PCSTText: PCSTTextCSV,
		Calibration: CalibrationAuto,
	}
}

// Names lists the retrievers in the order reports show them.
var Names = []string{"bm25", "dense", "triples", "ppr", "hyperppr", "pcst"}

// Passage is a retrieved chunk.
type Passage struct {
	Chunk   int32   `json:"-"`
	ChunkID string  `json:"chunk_id"`
	Title   string  `json:"title"`
	Text    string  `json:"text"`
	Score   float64 `json:"score"`
}

// Result is what a retriever returns for one question.
type Result struct {
	Passages []Passage  `json:"passages"`
	Facts    [][]string `json:"facts"` // the facts that drove the ranking, as [s, p, o]
	// Subgraph is the retrieved subgraph as text, for retrievers that return one (pcst).
	Subgraph string `json:"subgraph,omitempty"`
	// Answer is the answer of a retriever that generates one itself (gretriever);
	// Run copies it into the run line in place of the LLM reader's.
	Answer *string `json:"answer,omitempty"`
	// Answers are the answers Answer lists, when the retriever's answers are lists
	// (G-Retriever's "a|b"): evaluation scores each on its own.
	Answers []string `json:"answers,omitempty"`
}

// A Retriever ranks the chunks of an index for a question.
type Retriever interface {
	Name() string
	Retrieve(ctx context.Context, question string, k int) (Result, error)
}

// Chatter is the LLM the retrievers may use (recognition memory, answering).
type Chatter interface {
	Chat(ctx context.Context, req llm.ChatRequest) (llm.ChatResponse, error)
}

// Searcher holds an index, its embedder and the structures the retrievers share,
// built on first use. It is safe for concurrent use.
type Searcher struct {
	ix  *graphio.Index
	emb embed.Embedder
	cfg Config
	llm Chatter // may be nil

	bm25Once sync.Once
	bm25     *lexIndex

	namesOnce sync.Once
	names     *nameIndex

	factAdjOnce sync.Once
	factAdj     [][]int32

	sparseOnce [graphio.NumKinds]sync.Once
	sparse     [graphio.NumKinds]*graphio.SparseRows // rows scored sparse
	// What expand makes after expandAfter queries (see scores): the dense copy of a
	// matrix stored in compressed rows but too dense to score from them, and a sparse
	// matrix by columns; both guarded by expandMu.
	dense      [graphio.NumKinds][]float32
	cols       [graphio.NumKinds]*sparseCols
	expandOnce [graphio.NumKinds]sync.Once
	expandMu   sync.RWMutex
	queries    [graphio.NumKinds]atomic.Int64 // scores calls per kind

	rankBufs rankBuffers // scratch of the final rankings (rrf)
	bufs     bufPools    // vectors lent to queries (scratch)

	rels relationCache // relation-text embeddings (RelationVectors)

	factLexOnce, entLexOnce, hypLexOnce sync.Once
	factLex, entLex, hypLex             *lexIndex

	hippoOnce sync.Once
	hippo     *graphView
	hippoErr  error

	hyperOnce sync.Once
	hyper     *graphView
	hyperErr  error

	entChunks [][]int32
	entOnce   sync.Once

	cal *Calibration // applied to ppr and hyperppr (nil: none)

	longestOnce sync.Once
	longest     int32
	titleOnce   sync.Once
	titleTerms  [][]string // per document (docTitleTerms)
}

// NewSearcher prepares retrieval over ix with the embedder that made its vectors.
// chat may be nil (no recognition memory).
func NewSearcher(ix *graphio.Index, emb embed.Embedder, cfg Config, chat Chatter) (*Searcher, error) {
	if emb == nil {
		return nil, fmt.Errorf("retrieve: no embedder")
	}
	if err := validLexical(cfg.Lexical); err != nil {
		return nil, err
	}
	if err := validFusion(cfg.FinalFusion); err != nil {
		return nil, err
	}
	if err := CheckPCSTText(cfg.PCSTText); err != nil {
		return nil, err
	}
	if emb.Identity() != ix.Meta.Embedder {
		return nil, fmt.Errorf("retrieve: %w: index embedded with %q, searcher given %q", embed.ErrMismatch, ix.Meta.Embedder, emb.Identity())
	}
	for _, k := range []graphio.NodeKind{graphio.KindChunk} {
		if ix.EmbeddingSkipped(k) {
			continue // read without them on purpose (EmbeddingKinds); Retriever checks
		}
		if m := ix.Embeddings[k]; m == nil || m.Rows() != len(ix.Chunks) {
			return nil, fmt.Errorf("retrieve: the index has no %s embeddings; rebuild it with `graphloom index`", k)
		}
	}
	// The same name is no proof of the same model (an API model name served by
	// another server): vectors of another width would panic in the dot products.
	for k, m := range ix.Embeddings {
		if m != nil && m.Rows() > 0 && m.Dim != emb.Dim() {
			return nil, fmt.Errorf("retrieve: %w: the index's %s vectors have %d dimensions, the embedder %q gives %d (another model behind the same name?)",
				embed.ErrMismatch, k, m.Dim, emb.Identity(), emb.Dim())
		}
	}
	if err := CheckCalibration(cfg.Calibration); err != nil {
		return nil, err
	}
	s := &Searcher{ix: ix, emb: emb, cfg: cfg, llm: chat}
	if cfg.Calibration != CalibrationOff {
		cal, err := ReadCalibration(ix)
		if err != nil {
			return nil, err
		}
		if cal != nil {
			s.cal = cal
		} else if cfg.Calibration != "" && cfg.Calibration != CalibrationAuto {
			return nil, fmt.Errorf("retrieve: --calibration %s needs a calibration in the index; run `graphloom calibrate` first", cfg.Calibration)
		}
	}
	return s, nil
}

// Embedder returns the embedder that made the index's vectors.
func (s *Searcher) Embedder() embed.Embedder { return s.emb }

// Index returns the searched index.
func (s *Searcher) Index() *graphio.Index { return s.ix }

// Warm builds the lazy structures of the named retrievers (BM25 postings, PPR graphs
// and their layout, lexical indices, dense copies of matrices stored in compressed
// rows) by running one question through each, a passage's
// first words, so that a server's first requests do not wait on them. It returns the
// first error.
func (s *Searcher) Warm(ctx context.Context, names ...string) error {
	if len(s.ix.Chunks) == 0 {
		return nil
	}
	words := strings.Fields(s.ix.Chunks[0].Content())
	q := strings.Join(words[:min(12, len(words))], " ")
	for _, name := range names {
		r, err := s.Retriever(name)
		if err != nil {
			return err
		}
		if _, err := r.Retrieve(ctx, q, 1); err != nil {
			return fmt.Errorf("retrieve: warm %s: %w", name, err)
		}
	}
	// A server answers many questions: the matrices it scored get their fastest form
	// (expand) now rather than after expandAfter requests.
	for k := range graphio.NumKinds {
		if s.queries[k].Load() > 0 {
			s.expand(graphio.NodeKind(k))
		}
	}
	return nil
}

// EmbeddingKinds returns the embedding matrices the named retriever reads (so that a
// one-off query can read only those: graphio.ReadOptions), and false for a name it
// does not know.
func EmbeddingKinds(name string) ([]graphio.NodeKind, bool) {
	switch name {
	case "bm25":
		return nil, true
	case "dense":
		return []graphio.NodeKind{graphio.KindChunk}, true
	case "triples":
		return []graphio.NodeKind{graphio.KindFact}, true
	case "ppr":
		return []graphio.NodeKind{graphio.KindChunk, graphio.KindFact}, true
	case "pcst":
		return []graphio.NodeKind{graphio.KindEntity, graphio.KindFact}, true
	case "hyperppr":
		return []graphio.NodeKind{graphio.KindChunk, graphio.KindEntity, graphio.KindHyperedge}, true
	}
	return nil, false
}

// Retriever returns the named retriever. An index read without a matrix the
// retriever needs (graphio.ReadOptions) is an error, never a silently empty search.
func (s *Searcher) Retriever(name string) (Retriever, error) {
	if kinds, ok := EmbeddingKinds(name); ok {
		for _, k := range kinds {
			if s.ix.EmbeddingSkipped(k) {
				return nil, fmt.Errorf("retrieve: %s needs the %s embeddings, which this index was read without", name, k)
			}
		}
	}
	if r := s.calibrated(name); r != nil {
		return r, nil
	}
	switch name {
	case "bm25":
		return bm25Retriever{s}, nil
	case "dense":
		return denseRetriever{s}, nil
	case "triples":
		return tripleRetriever{s}, nil
	case "ppr":
		return hippoRetriever{s}, nil
	case "pcst":
		return pcstRetriever{s}, nil
	case "hyperppr":
		if len(s.ix.Hyperedges) == 0 {
			return nil, fmt.Errorf("retrieve: hyperppr needs hyperedges; the index has none")
		}
		return hyperRetriever{s}, nil
	}
	return nil, fmt.Errorf("retrieve: unknown retriever %q (want one of %v)", name, Names)
}

// embedQuery embeds the question with an optional instruction prefix.
func (s *Searcher) embedQuery(ctx context.Context, instruction, q string) ([]float32, error) {
	text := q
	if instruction != "" {
		text = instruction + " " + q
	}
	vs, err := embed.Queries(ctx, s.emb, []string{text})
	if err != nil {
		return nil, fmt.Errorf("retrieve: embed question: %w", err)
	}
	return vs[0], nil
}

// entityChunks caches, per entity, the chunks it occurs in.
func (s *Searcher) entityChunks() [][]int32 {
	s.entOnce.Do(func() { s.entChunks = s.ix.EntityChunks() })
	return s.entChunks
}

// passages turns ranked chunk scores into the top k passages: highest score first,
// ties by chunk order. It keeps a sorted buffer of k instead of sorting every chunk.
func (s *Searcher) passages(scores []float64, k int) []Passage {
	k = min(k, len(scores))
	if k <= 0 {
		return []Passage{}
	}
	better := func(a, b int32) bool { return scores[a] > scores[b] || scores[a] == scores[b] && a < b }
	top := make([]int32, 0, k)
	for c := range scores {
		i := int32(c)
		if len(top) == k && !better(i, top[k-1]) {
			continue
		}
		j := len(top)
		if j < k {
			top = append(top, i)
		} else {
			j = k - 1
		}
		for ; j > 0 && better(i, top[j-1]); j-- {
			top[j] = top[j-1]
		}
		top[j] = i
	}
	out := make([]Passage, 0, k)
	for _, c := range top {
		out = append(out, s.passage(c, scores[c]))
	}
	return out
}

func (s *Searcher) passage(c int32, score float64) Passage {
	ch := &s.ix.Chunks[c]
	return Passage{Chunk: c, ChunkID: ch.ID, Title: ch.Title, Text: ch.Text, Score: score}
}

func (s *Searcher) factTriple(f int32) []string {
	x := &s.ix.Facts[f]
	return []string{s.ix.Entities[x.Subject].Name, x.Predicate, s.ix.Entities[x.Object].Name}
}

// minMaxFlatToOne normalises v to [0,1] over its own range; a constant vector (no
// spread: one candidate, or all tied) becomes all ones. This is HippoRAG 2's convention
// (min_max_normalize in its utils/misc_utils.py returns np.ones_like(x) when max = min):
// a tied seed set keeps full weight rather than vanishing from the PPR reset vector. The
// reranker's helper (rerank.minMaxFlatToZero) maps the same vector to zeros instead.
func minMaxFlatToOne(sc *scratch, v []float64) []float64 {
	if len(v) == 0 {
		return v
	}
	out := sc.f64(len(v))
	lo, hi := bounds(v)
	for i, x := range v {
		out[i] = unitScale(x, lo, hi)
	}
	return out
}

// unitScale is x min-max normalised between lo and hi: 1 when they are equal.
func unitScale(x, lo, hi float64) float64 { return kernels.Unit(x, lo, hi) }

// bounds returns the least and the greatest entry of a non-empty v, as folding it
// with the min and max built-ins would (kernels.Bounds).
func bounds(v []float64) (lo, hi float64) { return kernels.Bounds(v) }

func toF64(sc *scratch, v []float32) []float64 {
	out := sc.f64(len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// Open prepares retrieval over ix with the embedder that made its vectors: the
// built-in one is restored from the index; an API embedder must be passed as api
// (nil when none is configured). chat may be nil.
func Open(ix *graphio.Index, api embed.Embedder, cfg Config, chat Chatter) (*Searcher, error) {
	emb, err := embed.ForIndex(ix, api)
	if err != nil {
		return nil, err
	}
	return NewSearcher(ix, emb, cfg, chat)
}
