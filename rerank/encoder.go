package rerank

import (
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/kernels"
	"github.com/graphloom/graphloom/models"
)

// EncoderKind names the CAGE encoder in checkpoints.
const EncoderKind = "cage_encoder"

// EncoderConfig is the CAGE graph encoder (paper §4 "R-GCN Encoding": one R-GCN layer,
// ReLU, global sum pooling, Z ∈ R^128) and the graph featurisation.
type EncoderConfig struct {
	// HashDim is the width of the word part of a node's features. The paper does not
	// say how node features are made; we use a fixed pseudo-random Gaussian vector per
	// node key (seeded by its FNV-64 hash, scaled 1/√HashDim), so the same stem in two
	// passages has the same features — what the paper's bridge-entity argument needs —
	// with no pretrained word vectors (none can be downloaded here). A one-hot of the
	// node class (entity, noun, verb, adjective) follows. Default 64.
	HashDim int `json:"hash_dim"`
	// Hidden is the width of Z. Paper: 128.
	Hidden int `json:"hidden"`
	// Beta scales the features of the min-out-degree anchor nodes and the weight of
	// every edge touching one (paper: β > 1, value not given). An edge's weight scales
	// its message in the R-GCN's degree-normalised mean (kernels.Graph.EdgeWeight; the
	// paper's "degree-normalized aggregation"). 1 = the "no reweighting" ablation.
	// Default 2. On MoreHopQA-150 pools with 8 distractors (`graphloom eval --pool
	// question --pool-distractors 8 --sweep cage-beta=1,2`), encoders trained with
	// seeds 42, 7 and 11 read Recall@2 80.0 / 81.3 / 85.0 at β = 2 against 81.0 / 82.3 /
	// 84.7 at β = 1, and Recall@5 95.3 / 94.3 / 94.3 against 95.3 / 93.7 / 94.0: β's
	// effect there is within the spread of the encoder's training seed. (Until the
	// edge weights scaled the messages they entered a mean over the weights' sum,
	// where β on an anchor's edges cancelled; only its feature scaling acted.)
	Beta float64 `json:"beta"`
	// SingleRelation collapses every relation type into one (a GCN instead of an
	// R-GCN): the paper's "GCN" ablation.
	SingleRelation bool `json:"single_relation"`
	// MaxNodes caps a passage graph (nodes beyond it, in order of first mention, are
	// dropped with their edges) so one passage always fits a bucket. Default 256.
	MaxNodes int `json:"max_nodes"`
	// Seed initialises the weights (untrained encoders are usable: a random R-GCN
	// already maps equal graphs to equal Z).
	Seed uint64 `json:"seed"`
}

// DefaultEncoderConfig returns the defaults documented on EncoderConfig.
func DefaultEncoderConfig() EncoderConfig {
	return EncoderConfig{HashDim: 64, Hidden: 128, Beta: 2, MaxNodes: 256, Seed: 42}
}

// Validate checks the configuration.
func (c EncoderConfig) Validate() error {
	switch {
	case c.HashDim < 1 || c.Hidden < 1:
		return fmt.Errorf("rerank: encoder: HashDim %d and Hidden %d must be ≥ 1", c.HashDim, c.Hidden)
	case !(c.Beta >= 1) || math.IsInf(c.Beta, 0):
		return fmt.Errorf("rerank: encoder: Beta %g must be a finite value ≥ 1", c.Beta)
	case c.MaxNodes < 1:
		return fmt.Errorf("rerank: encoder: MaxNodes %d < 1", c.MaxNodes)
	}
	return nil
}

// FeatDim is the node feature width.
func (c EncoderConfig) FeatDim() int { return c.HashDim + NumClasses }

// NumRelationTypes is the number of R-GCN relations: every dependency relation and its
// inverse (Schlichtkrull et al.'s R-GCN adds inverse relations so that heads also hear
// their dependents), or 1 for the GCN ablation.
func (c EncoderConfig) NumRelationTypes() int {
	if c.SingleRelation {
		return 1
	}
	return 2 * int(NumRelations)
}

// Spec is the kernels.Spec of featurised passage graphs.
func (c EncoderConfig) Spec() kernels.Spec {
	return kernels.Spec{FeatDim: c.FeatDim(), NumRelations: c.NumRelationTypes(), NumNodeTypes: NumClasses}
}

// wordVector is the fixed pseudo-random feature vector of a node key.
func wordVector(key string, dim int) []float32 {
	h := fnv.New64a()
	h.Write([]byte(key))
	rng := rand.New(rand.NewPCG(h.Sum64(), 0x9e3779b97f4a7c15))
	v := make([]float32, dim)
	scale := 1 / math.Sqrt(float64(dim))
	for i := range v {
		v[i] = float32(rng.NormFloat64() * scale)
	}
	return v
}

// Featurize turns a passage graph into a kernels.Graph: node features [word vector ‖
// class one-hot], forward and inverse typed edges, β on anchors' features and on the
// weights of edges touching an anchor. A graph past MaxNodes is cut first, and its
// anchors are the min-out-degree nodes of what is left: of the graph the encoder sees.
func (c EncoderConfig) Featurize(pg *PassageGraph) *kernels.Graph {
	pg = pg.Truncate(c.MaxNodes)
	n := len(pg.Nodes)
	f := c.FeatDim()
	g := &kernels.Graph{NumNodes: n, NodeType: make([]int32, n), X: make([]float32, n*f)}
	anchor := make([]bool, len(pg.Nodes))
	for _, a := range pg.Anchors() {
		anchor[a] = true
	}
	for i := range n {
		row := g.X[i*f : (i+1)*f]
		copy(row, wordVector(pg.Nodes[i], c.HashDim))
		row[c.HashDim+int(pg.Class[i])] = 1
		g.NodeType[i] = pg.Class[i]
		if anchor[i] {
			for k := range row {
				row[k] *= float32(c.Beta)
			}
		}
	}
	for _, e := range pg.Edges {
		w := float32(1)
		if anchor[e.Src] || anchor[e.Dst] {
			w = float32(c.Beta)
		}
		fwd, inv := int32(e.Rel), int32(e.Rel)+int32(NumRelations)
		if c.SingleRelation {
			fwd, inv = 0, 0
		}
		g.Src = append(g.Src, e.Src, e.Dst)
		g.Dst = append(g.Dst, e.Dst, e.Src)
		g.EdgeType = append(g.EdgeType, fwd, inv)
		g.EdgeWeight = append(g.EdgeWeight, w, w)
	}
	return g
}

// Encoder is the CAGE graph encoder: Z = SumPool(ReLU(RGCNConv(X))).
type Encoder struct {
	cfg    EncoderConfig
	eng    *engine.Engine
	store  *model.Store
	conv   *models.RGCN
	vars   []*model.Variable
	bucket *kernels.Bucketer
	meta   map[string]string // the checkpoint's metadata (LoadEncoder)
}

// encoderBuckets are the padded batch shapes: 64 graph slots, 256 … 8192 node rows.
func encoderBuckets(cfg EncoderConfig) (*kernels.Bucketer, error) {
	top := kernels.Bucket{Nodes: max(8192, cfg.MaxNodes), Edges: 32768, Graphs: 64}
	bs, err := kernels.Ladder(top, 2, 6, kernels.Layout{})
	if err != nil {
		return nil, err
	}
	for i := range bs {
		bs[i].Graphs = top.Graphs // one graph-slot count: 2×32 training views or 20–64 candidates
	}
	return kernels.NewBucketer(kernels.BucketerConfig{Spec: cfg.Spec(), Buckets: bs})
}

// NewEncoder creates an encoder with freshly initialised weights (glorot, as PyG).
func NewEncoder(eng *engine.Engine, cfg EncoderConfig) (*Encoder, error) {
	if eng == nil {
		return nil, errors.New("rerank: encoder: nil engine")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	store := model.NewStore()
	p := models.NewParams(store.RootScope().In("cage"), cfg.Seed)
	conv := models.NewRGCN(p.Sub("conv"), cfg.FeatDim(), cfg.Hidden, cfg.NumRelationTypes(), 0)
	if err := p.Err(); err != nil {
		return nil, err
	}
	bk, err := encoderBuckets(cfg)
	if err != nil {
		return nil, err
	}
	return &Encoder{cfg: cfg, eng: eng, store: store, conv: conv, vars: p.Variables(), bucket: bk}, nil
}

// LoadEncoder reads an encoder checkpoint written by Save. Settings that do not change
// the weights' shapes (Beta, MaxNodes) can be overridden by passing override non-nil.
func LoadEncoder(eng *engine.Engine, path string, override func(*EncoderConfig)) (*Encoder, error) {
	var cfg EncoderConfig
	if err := models.ConfigOf(path, EncoderKind, &cfg); err != nil {
		return nil, fmt.Errorf("rerank: load encoder: %w", err)
	}
	shape := cfg
	if override != nil {
		override(&cfg)
		if cfg.HashDim != shape.HashDim || cfg.Hidden != shape.Hidden || cfg.SingleRelation != shape.SingleRelation {
			return nil, fmt.Errorf("rerank: load encoder %s: overrides change the weight shapes", path)
		}
	}
	e, err := NewEncoder(eng, cfg)
	if err != nil {
		return nil, err
	}
	if e.meta, err = models.LoadVariables(path, EncoderKind, e.store, e.vars, nil); err != nil {
		return nil, fmt.Errorf("rerank: load encoder: %w", err)
	}
	if e.meta[edgeNormMeta] != edgeNormDegree {
		return nil, fmt.Errorf("rerank: load encoder %s: trained when edge weights entered a mean over their sum (β cancelled on anchor edges); the R-GCN now scales messages by them: train it again (`graphloom train cage`)", path)
	}
	return e, nil
}

// edgeNormMeta records in a checkpoint how the R-GCN it was trained with used edge
// weights: edgeNormDegree, each message scaled in a degree-normalised mean
// (kernels.Graph.EdgeWeight). Checkpoints without it were trained with a mean over
// the weights' sum and compute differently now.
const (
	edgeNormMeta   = "edge_norm"
	edgeNormDegree = "degree"
)

// Meta returns the metadata of the checkpoint the encoder was loaded from (nil for a
// new encoder): what `train cage` recorded, such as the index generation it saw.
func (e *Encoder) Meta() map[string]string { return e.meta }

// Save writes the weights and configuration atomically.
func (e *Encoder) Save(path string, meta map[string]string) error {
	m := maps.Clone(meta)
	if m == nil {
		m = map[string]string{}
	}
	m[edgeNormMeta] = edgeNormDegree
	return models.SaveVariables(path, EncoderKind, e.cfg, e.store, e.vars, m)
}

// Config returns the configuration.
func (e *Encoder) Config() EncoderConfig { return e.cfg }

// Kind implements train.Task.
func (e *Encoder) Kind() string { return EncoderKind }

// Store implements train.Task.
func (e *Encoder) Store() *model.Store { return e.store }

// Variables implements train.Task.
func (e *Encoder) Variables() []*model.Variable { return e.vars }

// Embed returns Z per graph slot, [G, Hidden].
func (e *Encoder) Embed(b *kernels.BatchNodes) *graph.Node {
	h := kernels.ReLU(e.conv.Apply(b, b.X))
	return kernels.SumPool(b, h)
}

// Encode returns Z of every passage graph, in order, batching as many graphs as the
// largest bucket holds per call.
func (e *Encoder) Encode(pgs []*PassageGraph) ([][]float32, error) {
	gs := make([]*kernels.Graph, len(pgs))
	for i, pg := range pgs {
		gs[i] = e.cfg.Featurize(pg)
	}
	return e.encodeGraphs(gs)
}

func (e *Encoder) encodeGraphs(gs []*kernels.Graph) ([][]float32, error) {
	out := make([][]float32, 0, len(gs))
	top := e.bucket.Buckets()[len(e.bucket.Buckets())-1]
	for start := 0; start < len(gs); {
		end, nodes, edges := start, 0, 0
		for end < len(gs) && end-start < top.Graphs && nodes+gs[end].NumNodes <= top.Nodes && edges+gs[end].NumEdges() <= top.Edges {
			nodes += gs[end].NumNodes
			edges += gs[end].NumEdges()
			end++
		}
		if end == start {
			return nil, fmt.Errorf("rerank: encode: graph %d (%d nodes, %d edges) exceeds the largest bucket %v", start, gs[start].NumNodes, gs[start].NumEdges(), top)
		}
		z, err := e.encodeBatch(gs[start:end])
		if err != nil {
			return nil, err
		}
		out = append(out, z...)
		start = end
	}
	return out, nil
}

func (e *Encoder) encodeBatch(gs []*kernels.Graph) ([][]float32, error) {
	b, err := e.bucket.Batch(gs)
	if err != nil {
		return nil, fmt.Errorf("rerank: encode: %w", err)
	}
	spec, layout := b.Spec, b.Layout
	nb := kernels.NumInputs(spec, layout)
	exe, err := e.eng.Exec(engine.Key{Name: EncoderKind + "/encode", Bucket: b.ShapeKey()}, e.store,
		func(scope *model.Scope, in []*graph.Node) []*graph.Node {
			bn, err := kernels.NewBatchNodes(spec, layout, in[:nb])
			if err != nil {
				panic(err)
			}
			return []*graph.Node{e.Embed(bn)}
		})
	if err != nil {
		return nil, err
	}
	inputs := b.Tensors()
	outs, err := exe.Call(inputs...)
	engine.Finalize(inputs...)
	if err != nil {
		return nil, fmt.Errorf("rerank: encode: %w", err)
	}
	rows := tensors.MustCopyFlatData[float32](outs[0])
	engine.Finalize(outs...)
	flat, err := b.PerGraph(rows, e.cfg.Hidden)
	if err != nil {
		return nil, err
	}
	res := make([][]float32, len(gs))
	for i := range res {
		res[i] = flat[i*e.cfg.Hidden : (i+1)*e.cfg.Hidden]
	}
	return res, nil
}
