package encoder

import (
	"fmt"
	"math"
	"strings"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/nn"

	"github.com/graphloom/graphloom/kernels"
	"github.com/graphloom/graphloom/models"
	"github.com/graphloom/graphloom/models/lm"
)

// DefaultScope is the store scope the encoder's variables are created under.
const DefaultScope = "encoder"

// maskValue is added to the attention scores of padding keys (finite, so that a
// padding row stays finite).
const maskValue = -1e9

// Network is the encoder's frozen variables and forward pass.
type Network struct {
	cfg    Config
	store  *model.Store
	scope  string
	vars   []*model.Variable
	word   *model.Variable // [V, H]
	pos    *model.Variable // [P, H]
	typ    *model.Variable // [T, H]; nil without a token type table
	embLNw *model.Variable
	embLNb *model.Variable
	rel    *model.Variable // [RelativeBuckets, Heads]: MPNet's relative attention bias; nil otherwise
	layers []encLayer
	modern []modernLayer // ModernBERT's layers (layers is empty then)
	// The rotary BERTs of remote code (NomicBERT, Jina's XLM-R, gte-v1.5; flashSpec):
	// their layout, layers (layers is empty then) and the embedding tables' task
	// adapters.
	flash       flashSpec
	layersFlash []flashLayer
	wordL, typL lora
	finalW      *model.Variable // ModernBERT's final LayerNorm
	finalB      *model.Variable
	dtype       dtypes.DType // layer computation (Options.ComputeDType, else DType)
	wdtype      dtypes.DType // weights as held (Options.DType)
}

// encLayer is one post-LN encoder layer, weights [out, in] as Hugging Face stores them.
type encLayer struct {
	q, k, v, o, qb, kb, vb, ob *model.Variable
	attnLNw, attnLNb           *model.Variable
	in, inB, out, outB         *model.Variable
	outLNw, outLNb             *model.Variable
}

// weightPrefixes are the prefixes a BertModel / RobertaModel / MPNetModel's tensors
// may carry in a checkpoint: none (BertModel, XLMRobertaModel saved by
// sentence-transformers), or that of a task model's backbone (BertForMaskedLM's
// "bert.", RobertaForMaskedLM's "roberta.", MPNetForMaskedLM's "mpnet.",
// DistilBertForMaskedLM's "distilbert.", ModernBertForMaskedLM's "model.", the gte
// NewFor* heads' "new.", as gte-multilingual-base's NewForTokenClassification).
var weightPrefixes = []string{"", "bert.", "roberta.", "mpnet.", "distilbert.", "model.", "new."}

// layerNames are the Hugging Face names of a post-LN layer's tensors: the layer's
// prefix (with %d for its index), then, below it, its attention projections, their
// LayerNorm, the MLP's two projections and their LayerNorm.
type layerNames struct{ layer, q, k, v, o, attnLN, in, out, outLN string }

// layerNamesOf returns the names of a model type's layers: BERT's (RoBERTa's and
// XLM-R's), MPNet's or DistilBERT's.
func layerNamesOf(modelType string) layerNames {
	switch modelType {
	case "mpnet":
		return layerNames{"encoder.layer.%d.", "attention.attn.q", "attention.attn.k", "attention.attn.v", "attention.attn.o", "attention.LayerNorm",
			"intermediate.dense", "output.dense", "output.LayerNorm"}
	case "distilbert":
		return layerNames{"transformer.layer.%d.", "attention.q_lin", "attention.k_lin", "attention.v_lin", "attention.out_lin", "sa_layer_norm",
			"ffn.lin1", "ffn.lin2", "output_layer_norm"}
	}
	return layerNames{"encoder.layer.%d.", "attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense", "attention.output.LayerNorm",
		"intermediate.dense", "output.dense", "output.LayerNorm"}
}

// NewNetwork creates the encoder's variables in store under scope (DefaultScope when
// empty) from Hugging Face-named weights, one tensor at a time, held in weights' dtype
// and computed in compute's (float32, the zero value's meaning, or bfloat16; a zero
// compute means the weights'; see Options.DType), and freezes them.
func NewNetwork(store *model.Store, cfg Config, ws lm.WeightSource, scope string, weights, compute dtypes.DType) (*Network, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	wdtype, dtype, err := lm.ResolveDTypes(weights, compute)
	if err != nil {
		return nil, fmt.Errorf("encoder: %w", err)
	}
	if scope == "" {
		scope = DefaultScope
	}
	probe := "embeddings.word_embeddings.weight"
	switch {
	case cfg.ModelType == "modernbert":
		probe = "embeddings.tok_embeddings.weight"
	case cfg.flashLayout():
		probe = flashProbe(cfg)
	}
	prefix := ""
	found := false
	for _, p := range weightPrefixes {
		if _, ok := ws.Shape(p + probe); ok {
			prefix, found = p, true
			break
		}
	}
	if !found {
		return nil, fmt.Errorf("weights: no %s (with or without a %s prefix): not a checkpoint of model_type %s",
			probe, strings.Join(weightPrefixes[1:], " / "), cfg.ModelType)
	}
	n := &Network{cfg: cfg, store: store, scope: scope, dtype: dtype, wdtype: wdtype}
	b := &builder{n: n, ws: ws, prefix: prefix, root: store.RootScope().At("%s", scope)}
	if cfg.ModelType == "modernbert" || cfg.flashLayout() {
		if cfg.ModelType == "modernbert" {
			b.takeModernBERT(cfg)
		} else {
			b.takeFlash(cfg)
		}
		if b.err != nil {
			return nil, b.err
		}
		models.Freeze(store, n.vars)
		return n, nil
	}
	H, I := cfg.Hidden, cfg.Intermediate
	n.word = b.take("embeddings.word_embeddings.weight", cfg.VocabSize, H)
	if !cfg.isJinaBERT() { // ALiBi: no position table
		n.pos = b.take("embeddings.position_embeddings.weight", cfg.MaxPositions, H)
	}
	if cfg.TypeVocabSize > 0 {
		n.typ = b.take("embeddings.token_type_embeddings.weight", cfg.TypeVocabSize, H)
	}
	n.embLNw = b.take("embeddings.LayerNorm.weight", H)
	n.embLNb = b.take("embeddings.LayerNorm.bias", H)
	names := layerNamesOf(cfg.ModelType)
	if cfg.RelativeBuckets > 0 {
		n.rel = b.take("encoder.relative_attention_bias.weight", cfg.RelativeBuckets, cfg.Heads)
	}
	if err := checkJinaBERT(cfg, ws); err != nil {
		return nil, err
	}
	glu := cfg.JinaBERT.glu()
	for i := range cfg.Layers {
		p := fmt.Sprintf(names.layer, i)
		l := encLayer{
			q: b.take(p+names.q+".weight", H, H), qb: b.take(p+names.q+".bias", H),
			k: b.take(p+names.k+".weight", H, H), kb: b.take(p+names.k+".bias", H),
			v: b.take(p+names.v+".weight", H, H), vb: b.take(p+names.v+".bias", H),
			o: b.take(p+names.o+".weight", H, H), ob: b.take(p+names.o+".bias", H),
			attnLNw: b.take(p+names.attnLN+".weight", H), attnLNb: b.take(p+names.attnLN+".bias", H),
		}
		if glu { // JinaBertGLUMLP: gated_layers [2I, H] without bias, wo, layernorm
			l.in, l.out, l.outB = b.take(p+"mlp.gated_layers.weight", 2*I, H), b.take(p+"mlp.wo.weight", H, I), b.take(p+"mlp.wo.bias", H)
			l.outLNw, l.outLNb = b.take(p+"mlp.layernorm.weight", H), b.take(p+"mlp.layernorm.bias", H)
		} else {
			l.in, l.inB = b.take(p+names.in+".weight", I, H), b.take(p+names.in+".bias", I)
			l.out, l.outB = b.take(p+names.out+".weight", H, I), b.take(p+names.out+".bias", H)
			l.outLNw, l.outLNb = b.take(p+names.outLN+".weight", H), b.take(p+names.outLN+".bias", H)
		}
		n.layers = append(n.layers, l)
	}
	if b.err != nil {
		return nil, b.err
	}
	models.Freeze(store, n.vars)
	return n, nil
}

// builder creates variables from named weights, keeping the first error.
type builder struct {
	n      *Network
	ws     lm.WeightSource
	prefix string
	root   *model.Scope
	err    error
}

// take creates the variable for the tensor prefix+name, checking its shape; its scope
// path follows the name without the prefix.
func (b *builder) take(name string, dims ...int) *model.Variable {
	if b.err != nil {
		return nil
	}
	v, err := lm.NewWeightVariableAs(b.root, b.ws, b.prefix+name, name, b.n.wdtype, dims...)
	if err != nil {
		b.err = err
		return nil
	}
	b.n.vars = append(b.n.vars, v)
	return v
}

// Config returns the architecture.
func (n *Network) Config() Config { return n.cfg }

// weight is v's value in the compute dtype.
func (n *Network) weight(g *graph.Graph, v *model.Variable) *graph.Node {
	return toDType(v.NodeValue(g), n.dtype)
}

// opt is weight, or nil for a nil v (a bias the model does not have).
func (n *Network) opt(g *graph.Graph, v *model.Variable) *graph.Node {
	if v == nil {
		return nil
	}
	return n.weight(g, v)
}

// Variables returns the encoder's variables (all frozen).
func (n *Network) Variables() []*model.Variable { return n.vars }

// Hidden returns the last layer's hidden states [B, T, Hidden] float32 of token ids [B, T]
// at positions [B, T] (already offset, see Positions) under a padding mask [B, T]
// (nonzero = real token), with the task adapters of index task in Config.Jina.Tasks
// (-1: none; models without adapters ignore it). Every token has token type 0
// (single sequences).
func (n *Network) Hidden(ids, positions, mask *graph.Node, task int) *graph.Node {
	g := ids.Graph()
	t := ids.Shape().Dimensions[1]
	gather := func(table *model.Variable, idx *graph.Node) *graph.Node {
		return toDType(graph.Gather(table.NodeValue(g), graph.InsertAxes(graph.ConvertDType(idx, dtypes.Int32), -1)), n.dtype)
	}
	real := graph.NotEqual(mask, graph.ScalarZero(g, mask.DType())) // [B, T]
	switch {
	case n.modern != nil:
		return toDType(n.modernHidden(gather(n.word, ids), positions, real), dtypes.Float32)
	case n.layersFlash != nil:
		return toDType(n.flashHidden(ids, positions, real, task), dtypes.Float32)
	}
	x := gather(n.word, ids)
	if n.pos != nil {
		x = graph.Add(x, gather(n.pos, positions))
	}
	if n.typ != nil {
		row := graph.Slice(n.weight(g, n.typ), graph.AxisElem(0)) // [1, H]: token type 0
		x = graph.Add(x, graph.ExpandLeftToRank(row, 3))
	}
	x = n.layerNorm(x, n.embLNw, n.embLNb)
	bias := n.positionBias(g, t)
	for i := range n.layers {
		x = n.layer(&n.layers[i], x, real, bias)
	}
	return toDType(x, dtypes.Float32)
}

// toDType converts x to dt unless it is already of dt.
func toDType(x *graph.Node, dt dtypes.DType) *graph.Node {
	if x.DType() == dt {
		return x
	}
	return graph.ConvertDType(x, dt)
}

// positionBias is JinaBERT's ALiBi bias (alibiBias), or MPNet's relative attention
// bias for sequences of t tokens, as a function of the queries [q0, q1) it is for,
// [1, Heads, q1 − q0, t] (z as attend gives it); nil for the architectures without
// one. MPNet's is the bias
// table's row for the bucket of each key's position relative to the query's
// (relativeBucket), the same for every layer and sequence. Positions are those of the
// padded sequence, 0 … t−1, as transformers' MPNetEncoder.compute_position_bias
// takes them; padding comes last, so the real tokens' relative positions are their
// own.
func (n *Network) positionBias(g *graph.Graph, t int) func(q0, q1 int, z *graph.Node) *graph.Node {
	if n.cfg.isJinaBERT() {
		return func(q0, q1 int, z *graph.Node) *graph.Node { return n.alibiBias(g, q0, q1, t, z) }
	}
	if n.rel == nil {
		return nil
	}
	full := n.mpnetBias(g, t) // MPNet reads at most 514 positions: whole is small
	return func(q0, q1 int, _ *graph.Node) *graph.Node {
		if q0 == 0 && q1 == t {
			return full
		}
		return graph.Slice(full, graph.AxisRange(), graph.AxisRange(), graph.AxisRange(q0, q1), graph.AxisRange())
	}
}

// mpnetBias is MPNet's relative attention bias [1, Heads, t, t] (positionBias).
func (n *Network) mpnetBias(g *graph.Graph, t int) *graph.Node {
	idx := make([]int32, t*t)
	for q := range t {
		for k := range t {
			idx[q*t+k] = int32(relativeBucket(k - q))
		}
	}
	rows := graph.Gather(n.weight(g, n.rel), graph.Reshape(graph.Const(g, idx), t, t, 1)) // [t, t, Heads]
	return graph.InsertAxes(graph.TransposeAllAxes(rows, 2, 0, 1), 0)
}

// relativeBucket is the bucket of a key at position rel = key − query relative to its
// query in MPNet's attention bias: transformers' MPNetEncoder.relative_position_bucket
// (T5's bidirectional buckets) with 32 buckets and maximum distance 128. Keys before
// the query (or at it) take buckets 0–15, keys after it 16–31; a distance d below 8 is
// its own bucket, a larger one 8 + ⌊log(d/8) / log(128/8) · 8⌋, at most 15. That
// logarithm is ⌊2·log₂(d/8)⌋, the largest j with 64·2ʲ ≤ d², computed here in
// integers: transformers computes it in float32, where it is exact at the powers of two
// (d = 16, 32, 64) and d² is at least 1 from any 64·2ʲ elsewhere, so both agree.
func relativeBucket(rel int) int {
	const half, exact = mpnetBuckets / 2, mpnetBuckets / 4
	bucket, d := 0, -rel
	if d < 0 {
		bucket, d = half, -d
	}
	if d < exact {
		return bucket + d
	}
	j := 0
	for exact*exact<<(j+1) <= d*d && exact+j < half-1 {
		j++
	}
	return bucket + exact + j
}

// layer is one post-LN encoder layer: LN(x + attn(x)), then LN(· + mlp(·)), the MLP
// JinaBertGLUMLP's for a GLU JinaBERT, attending to the real keys ([B, T]). bias,
// when not nil, gives what is added to every sequence's attention scores (MPNet's
// relative bias, JinaBERT's ALiBi: positionBias).
func (n *Network) layer(l *encLayer, x, real *graph.Node, bias func(q0, q1 int, z *graph.Node) *graph.Node) *graph.Node {
	g := x.Graph()
	c := n.cfg
	dims := x.Shape().Dimensions
	bsz, t := dims[0], dims[1]
	hd := c.Hidden / c.Heads
	heads := func(w, b *model.Variable) *graph.Node { // [B, Heads, T, hd]
		y := graph.Reshape(linear(x, n.weight(g, w), n.weight(g, b)), bsz, t, c.Heads, hd)
		return graph.TransposeAllAxes(y, 0, 2, 1, 3)
	}
	ctx := attend(heads(l.q, l.qb), heads(l.k, l.kb), heads(l.v, l.vb), real, 0, bias)
	x = n.layerNorm(graph.Add(x, linear(ctx, n.weight(g, l.o), n.weight(g, l.ob))), l.attnLNw, l.attnLNb)
	var h *graph.Node
	switch ff := n.cfg.JinaBERT.FeedForward; ff {
	case "geglu", "reglu": // JinaBertGLUMLP: act(first half) · second half
		z := linear(x, n.weight(g, l.in), nil)
		I := c.Intermediate
		a := graph.Slice(z, graph.AxisRange(), graph.AxisRange(), graph.AxisRange(0, I))
		m := graph.Slice(z, graph.AxisRange(), graph.AxisRange(), graph.AxisRange(I, 2*I))
		if ff == "geglu" {
			a = gelu(a)
		} else {
			a = graph.Max(a, graph.ScalarZero(g, a.DType()))
		}
		h = graph.Mul(a, m)
	default:
		h = gelu(linear(x, n.weight(g, l.in), n.weight(g, l.inB)))
	}
	return n.layerNorm(graph.Add(x, linear(h, n.weight(g, l.out), n.weight(g, l.outB))), l.outLNw, l.outLNb)
}

// attnBlock is the number of queries attention takes at a time in sequences longer
// than 2·attnBlock: the scores of a block are Heads × attnBlock × T, where a whole
// sequence's would be Heads × T × T (at 8,192 tokens and 12 heads, 3.2 GB a sequence
// and layer, several of them alive at once). Each query's softmax is its own, so the
// blocks give the same numbers. Four texts of 8,100 tokens through 4-layer, 12-head
// test models on the Go backend (AMD EPYC, 2 cores, 23 GB): whole, ModernBERT and
// JinaBERT reached 24.3 GB and died; in blocks run one after another, with each
// block's mask and bias shared across layers, 5.7 and 5.6 GB; built for each block
// alone (attend), 2.4 and 2.3 GB (76 and 88 s). A 2-layer, 4-head NomicBERT: 9.6 GB
// and 47 s whole, 0.85 GB and 13 s in blocks.
const attnBlock = 512

// attend is the attention of q, k, v [B, Heads, T, hd] to the real keys (real
// [B, T], bool), those within window/2 positions of the query only when window > 0
// (ModernBERT's sliding layers), with bias(q0, q1, z) [1, Heads, q1 − q0, T] added to
// the scores of queries q0 … q1−1 when bias is not nil; the heads joined again:
// [B, T, Heads·hd]. A sequence longer than 2·attnBlock is attended attnBlock queries
// at a time, each block after the one before, its mask and bias built for it alone:
// each depends on z, a float32 zero computed from the block's own queries, so that
// the backend neither builds them ahead nor shares one across layers (it merges
// identical nodes) and holds them all at once.
func attend(q, k, v, real *graph.Node, window int, bias func(q0, q1 int, z *graph.Node) *graph.Node) *graph.Node {
	g := q.Graph()
	dims := q.Shape().Dimensions
	bsz, nh, t, hd := dims[0], dims[1], dims[2], dims[3]
	block := t
	if t > 2*attnBlock {
		block = attnBlock
	}
	// One attention per sequence on the Go backend: independent nodes, which it runs
	// concurrently (its softmax runs on one core per node).
	step := bsz
	if perSequence(g, bsz) {
		step = 1
	}
	var seqs []*graph.Node
	for b0 := 0; b0 < bsz; b0 += step {
		rows := func(y *graph.Node) *graph.Node {
			if step == bsz {
				return y
			}
			return graph.Slice(y, graph.AxisRange(b0, b0+step))
		}
		qs, kb, vb, keys := rows(q), rows(k), rows(v), graph.Reshape(rows(real), step, 1, 1, t)
		var blocks []*graph.Node
		for q0 := 0; q0 < t; q0 += block {
			q1 := min(q0+block, t)
			var qb, z *graph.Node
			if block == t {
				qb = qs
			} else {
				qb = graph.Slice(qs, graph.AxisRange(), graph.AxisRange(), graph.AxisRange(q0, q1))
				if len(blocks) > 0 {
					// After the block before: nothing else orders them, and an executor
					// that ran every block's products first would hold every block's
					// scores at once. The term added is exactly 0 (the previous
					// block's output is finite: softmax weights times values).
					prev := graph.ReduceAllSum(blocks[len(blocks)-1])
					qb = graph.Add(qb, graph.MulScalar(graph.ConvertDType(prev, qb.DType()), 0))
				}
				z = graph.MulScalar(graph.ReduceAllSum(graph.ConvertDType(qb, dtypes.Float32)), 0)
			}
			blocks = append(blocks, attention(qb, kb, vb, blockMask(keys, nh, q0, q1, window, z), blockBias(bias, q0, q1, z), hd))
		}
		seqs = append(seqs, concat(blocks, 2))
	}
	ctx := concat(seqs, 0) // [B, Heads, T, hd]
	return graph.Reshape(graph.TransposeAllAxes(ctx, 0, 2, 1, 3), bsz, t, nh*hd)
}

// blockMask is the (query, key) pairs [B, nh, q1 − q0, T] queries q0 … q1−1 may
// attend to: the real keys (keys [B, 1, 1, T], bool) and, with window > 0, those
// within window/2 positions. z, when not nil, is a float32 zero the mask is made to
// depend on (attend).
func blockMask(keys *graph.Node, nh, q0, q1, window int, z *graph.Node) *graph.Node {
	g := keys.Graph()
	dims := keys.Shape().Dimensions
	b, t, n := dims[0], dims[3], q1-q0
	if z != nil {
		keys = graph.GreaterThan(graph.Add(graph.ConvertDType(keys, dtypes.Float32), z), graph.ScalarZero(g, dtypes.Float32))
	}
	allowed := graph.BroadcastToDims(keys, b, nh, n, t)
	if window <= 0 {
		return allowed
	}
	// |query − key| ≤ window/2, in float32: exact for positions below 2²⁴.
	start := graph.Scalar(g, dtypes.Float32, float64(q0))
	if z != nil {
		start = graph.Add(start, z)
	}
	qi := graph.Add(graph.Iota(g, shapes.Make(dtypes.Float32, n, t), 0), start)
	ki := graph.Iota(g, shapes.Make(dtypes.Float32, n, t), 1)
	near := graph.LessOrEqual(graph.Abs(graph.Sub(ki, qi)), graph.Scalar(g, dtypes.Float32, float64(window/2)))
	return graph.LogicalAnd(allowed, graph.BroadcastToDims(graph.Reshape(near, 1, 1, n, t), b, nh, n, t))
}

// blockBias is bias's for queries q0 … q1−1, nil without one; z as in blockMask.
func blockBias(bias func(q0, q1 int, z *graph.Node) *graph.Node, q0, q1 int, z *graph.Node) *graph.Node {
	if bias == nil {
		return nil
	}
	return bias(q0, q1, z)
}

// concat is graph.Concatenate, or the one node.
func concat(parts []*graph.Node, axis int) *graph.Node {
	if len(parts) == 1 {
		return parts[0]
	}
	return graph.Concatenate(parts, axis)
}

// perSequence reports whether attention is built per sequence of the batch: on the
// Go backend, whose fused softmax is single-threaded, with more than one sequence.
// (bench/embed at bge-small's shapes, batch 8, 2 cores: 1,627–1,790 → 1,378–1,430 ms
// a passage.)
func perSequence(g *graph.Graph, bsz int) bool {
	return bsz > 1 && isGoBackend(g.Backend())
}

// isGoBackend reports whether b is GoMLX's pure-Go backend, whose Name is "Go
// Backend" in compute v0.1.2 (the interface documents a short name, "go").
func isGoBackend(b compute.Backend) bool {
	if b == nil {
		return false
	}
	name := strings.ToLower(b.Name())
	return name == "go" || name == "go backend"
}

// attention is softmax(q·kᵀ/√hd + bias, masked) · v for q [B, H, Q, hd], k, v
// [B, H, S, hd], the allowed (query, key) pairs [B, H, Q, S] and a bias [1, H, Q, S]
// or nil; the softmax is computed in float32 (as torch on bf16) and the result is in
// q's dtype.
func attention(q, k, v, allowed, bias *graph.Node, hd int) *graph.Node {
	q = graph.MulScalar(q, 1/math.Sqrt(float64(hd)))                            // scaled before the product: T·hd products instead of T·S
	scores := lm.DotGeneral(q, []int{3}, []int{0, 1}, k, []int{3}, []int{0, 1}) // [B, H, Q, S]
	if bias != nil {
		scores = graph.Add(scores, graph.BroadcastToDims(bias, scores.Shape().Dimensions...))
	}
	scores = graph.Where(allowed, scores, graph.Scalar(q.Graph(), scores.DType(), maskValue))
	probs := toDType(graph.Softmax(toDType(scores, dtypes.Float32), -1), scores.DType())
	return lm.DotGeneral(probs, []int{3}, []int{0, 1}, v, []int{2}, []int{0, 1})
}

// gelu is the exact GELU, x·Φ(x) = x/2·(1 + erf(x/√2)) (Hugging Face "gelu"),
// computed in float32 (kernels.GELUForward: erf to 5e-7) and cast back to x's dtype
// (torch's bf16 GELU).
func gelu(x *graph.Node) *graph.Node {
	return toDType(kernels.GELUForward(toDType(x, dtypes.Float32)), x.DType())
}

// layerNorm normalises the last axis: (x − mean) / √(var + eps) · w + b (biased
// variance, as torch.nn.LayerNorm; b nil for a LayerNorm without bias), in float32
// and cast back to the network's dtype (torch's bf16 layer_norm). nn.LayerNorm is the
// backend's fused two-pass LayerNorm where it has one, else the same formula in graph
// ops.
func (n *Network) layerNorm(x *graph.Node, w, b *model.Variable) *graph.Node {
	g := x.Graph()
	x = toDType(x, dtypes.Float32)
	wf := toDType(w.NodeValue(g), dtypes.Float32)
	var bf *graph.Node
	if b != nil {
		bf = toDType(b.NodeValue(g), dtypes.Float32)
	}
	return toDType(nn.LayerNorm(x, []int{x.Rank() - 1}, n.cfg.LayerNormEps, wf, bf, nil), n.dtype)
}

// linear returns x·wᵀ + b for w [out, in] (torch layout; b nil for none): nn.Dense is
// the backend's fused product and bias where it has one (the Go backend adds the bias
// in place).
func linear(x, w, b *graph.Node) *graph.Node {
	if x.DType() == dtypes.Float32 || x.DType() == dtypes.Float64 {
		return nn.Dense(x, w, b, compute.DenseLayoutOutputsInput)
	}
	y := lm.DotGeneral(x, []int{x.Rank() - 1}, nil, w, []int{1}, nil)
	if b == nil {
		return y
	}
	return graph.Add(y, graph.ExpandLeftToRank(b, y.Rank()))
}

// Positions returns the position ids of a token sequence as transformers computes
// them: 0, 1, 2, … for BERT; for RoBERTa and XLM-R (create_position_ids_from_input_ids)
// padding_idx + the count of non-padding tokens so far, and padding_idx on padding
// tokens.
func (c Config) Positions(ids []int32) []int32 {
	out := make([]int32, len(ids))
	if c.PositionOffset == 0 {
		for i := range out {
			out[i] = int32(i)
		}
		return out
	}
	pad := int32(c.PadTokenID)
	n := int32(0)
	for i, id := range ids {
		if id == pad {
			out[i] = pad
			continue
		}
		n++
		out[i] = pad + n
	}
	return out
}
