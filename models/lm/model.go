package lm

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/layers/attention/pos"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/graphloom/graphloom/models"
)

// Kind names the language model in executables and errors.
const Kind = "lm"

// DefaultScope is the store scope the model's variables are created under.
const DefaultScope = "lm"

// maskValue is added to the attention scores of masked keys (finite, so that a row
// whose keys are all masked, e.g. a padding row, stays finite).
const maskValue = -1e9

// Options configures Load.
type Options struct {
	Scope         string // store scope of the variables; default DefaultScope
	SkipTokenizer bool   // do not read tokenizer.json (Model.Tokenizer stays nil)
	// DType is the dtype the weights are held in and the layers computed in:
	// dtypes.Float32 (the zero value means it) or dtypes.BFloat16, as transformers with
	// torch_dtype=bfloat16 computes: projections, RoPE application, the SwiGLU and
	// the residual stream in bf16; RMSNorm's statistics and the attention softmax in
	// float32 (cast back to bf16); the LM head's logits returned as float32. bf16 halves
	// the weights' memory (an 8B model: 16 GB instead of 32) at bf16's precision
	// (relative 2⁻⁸ per rounding). Inputs and outputs of the Model's methods stay
	// float32 whatever DType is.
	DType dtypes.DType
	// ComputeDType, when set, is the dtype the layers compute in when it differs from
	// the weights': float32 over bf16 weights widens each weight to float32 where it
	// is used (half the resident memory, float32's speed and precision). The pure-Go
	// backend's bf16 matrix products are 5–60× slower than its float32 ones, so
	// `--lm-dtype bfloat16` computes in float32 there (see ComputeFor). Zero: DType.
	ComputeDType dtypes.DType
}

// ComputeFor returns the compute dtype for bf16 weights on backend (an
// engine.ResolveBackend string): bf16 where the backend is XLA, float32 on the
// pure-Go backend, whose bf16 matrix products are slow.
func ComputeFor(backend string) dtypes.DType {
	if name, _, _ := strings.Cut(backend, ":"); name == "go" {
		return dtypes.Float32
	}
	return dtypes.BFloat16
}

// DTypeNames are the dtypes ParseDType accepts, as flags name them.
var DTypeNames = []string{"float32", "bfloat16"}

// ParseDType returns the dtype a flag names ("" is float32).
func ParseDType(name string) (dtypes.DType, error) {
	switch name {
	case "", "float32":
		return dtypes.Float32, nil
	case "bfloat16":
		return dtypes.BFloat16, nil
	}
	return dtypes.InvalidDType, fmt.Errorf("dtype %q: want float32 or bfloat16", name)
}

// ResolveDTypes checks the weights' and the layers' dtypes (float32, the zero
// value's meaning, or bfloat16) and returns them resolved; a zero compute dtype
// means the weights'.
func ResolveDTypes(weights, compute dtypes.DType) (dtypes.DType, dtypes.DType, error) {
	check := func(d dtypes.DType) (dtypes.DType, error) {
		switch d {
		case dtypes.InvalidDType, dtypes.Float32:
			return dtypes.Float32, nil
		case dtypes.BFloat16:
			return d, nil
		}
		return dtypes.InvalidDType, fmt.Errorf("dtype %s not supported (want float32 or bfloat16)", d)
	}
	w, err := check(weights)
	if err != nil {
		return dtypes.InvalidDType, dtypes.InvalidDType, err
	}
	if compute == dtypes.InvalidDType {
		return w, w, nil
	}
	c, err := check(compute)
	return w, c, err
}

// Model is a frozen decoder-only LM whose variables live in a model.Store.
type Model struct {
	cfg       Config
	store     *model.Store
	scope     string
	vars      []*model.Variable
	embed     *model.Variable // [V, H]
	norm      *model.Variable // [H]
	head      *model.Variable // [V, H]; the embedding table when tied
	dtype     dtypes.DType    // layer computation (Options.ComputeDType, else DType)
	wdtype    dtypes.DType    // weights as held (Options.DType)
	layers    []layer
	invFreq   []float32  // RoPE inverse frequencies (static rope types: scaling folded in)
	ropeScale float32    // cos/sin scale (YaRN's attention factor; 1 otherwise)
	Tokenizer *Tokenizer // nil with Options.SkipTokenizer
	// TokConfig is the directory's tokenizer_config.json (chat template, special
	// tokens); zero for a model built by New.
	TokConfig TokenizerConfig
	dir       string
	lora      *lora // nil without adapters (AddLoRA)
}

// layer holds one decoder layer's variables, weights [out, in] as Hugging Face stores them.
type layer struct {
	idx              int
	inNorm, postNorm *model.Variable
	q, k, v, o       *model.Variable
	qb, kb, vb, ob   *model.Variable // nil without biases
	qNorm, kNorm     *model.Variable // [HeadDim], Qwen3 only
	gate, up, down   *model.Variable
	gateB, upB, dnB  *model.Variable // nil without mlp_bias
}

// Load reads a local Hugging Face model directory (config.json, safetensors weights,
// tokenizer.json) and creates the model's variables in store under opts.Scope, all
// frozen (models.Freeze).
func Load(dir string, store *model.Store, opts Options) (*Model, error) {
	cfg, err := ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	tc, err := ReadTokenizerConfig(dir)
	if err != nil {
		return nil, err
	}
	var tok *Tokenizer
	if !opts.SkipTokenizer {
		if tok, err = loadTokenizer(dir, tc); err != nil {
			return nil, err
		}
	}
	ckpt, err := OpenCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	defer ckpt.Close()
	m, err := New(store, cfg, ckpt, opts)
	if err != nil {
		return nil, fmt.Errorf("lm: %s: %w", dir, err)
	}
	m.Tokenizer, m.TokConfig = tok, tc
	gen, ok, err := ReadGenerationConfig(dir)
	if err != nil {
		return nil, err
	}
	if ok {
		m.cfg.EOS = mergeEOS(gen.EOS, m.cfg.EOS)
	}
	m.dir = dir
	return m, nil
}

// Dir is the directory the model was loaded from ("" for a model built by New).
func (m *Model) Dir() string { return m.dir }

// ChatTemplate returns the model's prompt format (LoadChatTemplate's formats).
// bos_token and eos_token, when tokenizer_config.json lacks them, are the text of
// config.json's BOS and first EOS ids.
func (m *Model) ChatTemplate(format string) (*ChatTemplate, error) {
	tc := m.TokConfig
	tc.Tokens = maps.Clone(tc.Tokens)
	if tc.Tokens == nil {
		tc.Tokens = map[string]string{}
	}
	if m.Tokenizer != nil {
		if _, ok := tc.Tokens["bos_token"]; !ok && m.cfg.BOS >= 0 {
			tc.Tokens["bos_token"] = m.Tokenizer.Token(int32(m.cfg.BOS))
		}
		if _, ok := tc.Tokens["eos_token"]; !ok && len(m.cfg.EOS) > 0 {
			tc.Tokens["eos_token"] = m.Tokenizer.Token(int32(m.cfg.EOS[0]))
		}
	}
	return tc.Chat(m.dir, format)
}

// New creates the model's variables in store under opts.Scope (DefaultScope when
// empty) from Hugging Face-named weights, converting one tensor at a time straight
// into its variable's buffer (of opts.DType), and freezes them. opts.SkipTokenizer
// does not apply (New reads no tokenizer).
func New(store *model.Store, cfg Config, ws WeightSource, opts Options) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	wdt, dt, err := ResolveDTypes(opts.DType, opts.ComputeDType)
	if err != nil {
		return nil, fmt.Errorf("lm: %w", err)
	}
	scope := opts.Scope
	if scope == "" {
		scope = DefaultScope
	}
	m := &Model{cfg: cfg, store: store, scope: scope, dtype: dt, wdtype: wdt}
	b := &builder{m: m, ws: ws, root: store.RootScope().At("%s", scope)}
	// A causal LM's checkpoint names its decoder's tensors "model.…"; a bare decoder
	// saved alone (Qwen3-Embedding, e5-mistral: a Qwen3Model or MistralModel) names
	// them without the prefix, as transformers' base_model_prefix handling accepts.
	// Variables keep the "model." path either way.
	if _, ok := ws.Shape("model.embed_tokens.weight"); !ok {
		if _, bare := ws.Shape("embed_tokens.weight"); bare {
			b.bare = true
		}
	}
	H, V, I := cfg.Hidden, cfg.VocabSize, cfg.Intermediate
	qd, kvd := cfg.Heads*cfg.HeadDim, cfg.KVHeads*cfg.HeadDim
	m.embed = b.take("model.embed_tokens.weight", V, H)
	for i := range cfg.Layers {
		p := fmt.Sprintf("model.layers.%d.", i)
		l := layer{
			idx:      i,
			inNorm:   b.take(p+"input_layernorm.weight", H),
			postNorm: b.take(p+"post_attention_layernorm.weight", H),
			q:        b.take(p+"self_attn.q_proj.weight", qd, H),
			k:        b.take(p+"self_attn.k_proj.weight", kvd, H),
			v:        b.take(p+"self_attn.v_proj.weight", kvd, H),
			o:        b.take(p+"self_attn.o_proj.weight", H, qd),
			gate:     b.take(p+"mlp.gate_proj.weight", I, H),
			up:       b.take(p+"mlp.up_proj.weight", I, H),
			down:     b.take(p+"mlp.down_proj.weight", H, I),
		}
		if cfg.QKVBias {
			l.qb = b.take(p+"self_attn.q_proj.bias", qd)
			l.kb = b.take(p+"self_attn.k_proj.bias", kvd)
			l.vb = b.take(p+"self_attn.v_proj.bias", kvd)
		}
		if cfg.AttentionBias {
			l.ob = b.take(p+"self_attn.o_proj.bias", H)
		}
		if cfg.QKNorm {
			l.qNorm = b.take(p+"self_attn.q_norm.weight", cfg.HeadDim)
			l.kNorm = b.take(p+"self_attn.k_norm.weight", cfg.HeadDim)
		}
		if cfg.MLPBias {
			l.gateB = b.take(p+"mlp.gate_proj.bias", I)
			l.upB = b.take(p+"mlp.up_proj.bias", I)
			l.dnB = b.take(p+"mlp.down_proj.bias", H)
		}
		m.layers = append(m.layers, l)
	}
	m.norm = b.take("model.norm.weight", H)
	_, hasHead := ws.Shape("lm_head.weight")
	switch {
	case cfg.TieEmbeddings:
		m.head = m.embed
	case hasHead || !b.bare:
		m.head = b.take("lm_head.weight", V, H)
	default:
		// A bare decoder (an embedding model) has no LM head: its hidden states are
		// all it gives (HasHead); generating or taking logits is refused.
	}
	if b.err != nil {
		return nil, b.err
	}
	models.Freeze(store, m.vars)
	inv, scale := cfg.InvFreq(0)
	m.invFreq = make([]float32, len(inv))
	for i, f := range inv {
		m.invFreq[i] = float32(f)
	}
	m.ropeScale = float32(scale)
	return m, nil
}

// builder creates variables from named weights, keeping the first error.
type builder struct {
	m    *Model
	ws   WeightSource
	root *model.Scope
	err  error
	bare bool // the checkpoint names the decoder's tensors without "model."
}

// take creates the variable for Hugging Face tensor name, checking its shape. The
// variable's scope path follows the name ("model.layers.0.mlp.up_proj.weight" →
// <scope>/model/layers/0/mlp/up_proj/weight).
func (b *builder) take(name string, dims ...int) *model.Variable {
	if b.err != nil {
		return nil
	}
	file := name
	if b.bare {
		file = strings.TrimPrefix(name, "model.")
	}
	v, err := NewWeightVariableAs(b.root, b.ws, file, name, b.m.wdtype, dims...)
	if err != nil {
		b.err = err
		return nil
	}
	b.m.vars = append(b.m.vars, v)
	return v
}

// NewWeightVariable creates under root the variable of the Hugging Face tensor name
// of ws, at the scope path the dots of scopeName give ("model.layers.0.mlp.up_proj.weight"
// → root/model/layers/0/mlp/up_proj/weight), after checking its shape against dims
// (what config.json implies), converting it straight into the variable's buffer.
func NewWeightVariable(root *model.Scope, ws WeightSource, name, scopeName string, dims ...int) (*model.Variable, error) {
	return NewWeightVariableAs(root, ws, name, scopeName, dtypes.Float32, dims...)
}

// NewWeightVariableAs is NewWeightVariable holding the weight in dtype (float32 or
// bfloat16; bf16 rounds to nearest even, and a bf16 file's values are copied as they
// are).
func NewWeightVariableAs(root *model.Scope, ws WeightSource, name, scopeName string, dtype dtypes.DType, dims ...int) (*model.Variable, error) {
	shape, ok := ws.Shape(name)
	if !ok {
		return nil, fmt.Errorf("weights: tensor %s missing", name)
	}
	if !slices.Equal(shape, dims) {
		return nil, fmt.Errorf("weights: tensor %s has shape %v, config.json implies %v", name, shape, dims)
	}
	t := tensors.FromShape(shapes.Make(dtype, dims...))
	var rerr error
	t.MustMutableFlatData(func(flat any) {
		switch dst := flat.(type) {
		case []float32:
			rerr = ws.ReadFloat32(name, dst)
		case []bfloat16.BFloat16:
			rerr = readBFloat16(ws, name, dst)
		default:
			rerr = fmt.Errorf("tensor %s: dtype %s not supported", name, dtype)
		}
	})
	if rerr != nil {
		return nil, fmt.Errorf("weights: %w", rerr)
	}
	parts := strings.Split(scopeName, ".")
	sc := root
	for _, p := range parts[:len(parts)-1] {
		sc = sc.At("%s", p)
	}
	v, err := sc.CreateVariable(parts[len(parts)-1], t)
	if err != nil {
		return nil, fmt.Errorf("creating variable for %s: %w", name, err)
	}
	return v, nil
}

// Kind returns Kind.
func (m *Model) Kind() string { return Kind }

// Config returns the architecture.
func (m *Model) Config() Config { return m.cfg }

// Store returns the store holding the variables.
func (m *Model) Store() *model.Store { return m.store }

// Scope returns the store scope of the variables.
func (m *Model) Scope() string { return m.scope }

// Variables returns every variable of the model (all frozen).
func (m *Model) Variables() []*model.Variable { return m.vars }

// EmbedTokens looks token ids up in the embedding table: ids [B, T] (any integer
// dtype) → [B, T, Hidden] float32 (exact from a bf16 table).
func (m *Model) EmbedTokens(ids *graph.Node) *graph.Node {
	table := m.embed.NodeValue(ids.Graph())
	return toDType(graph.Gather(table, graph.InsertAxes(graph.ConvertDType(ids, dtypes.Int32), -1)), dtypes.Float32)
}

// DType is the dtype the layers compute in (Options.ComputeDType, else Options.DType).
func (m *Model) DType() dtypes.DType { return m.dtype }

// WeightDType is the dtype the weights are held in (Options.DType).
func (m *Model) WeightDType() dtypes.DType { return m.wdtype }

// weight is v's value in the compute dtype (nil for a nil v, an absent bias).
func (m *Model) weight(g *graph.Graph, v *model.Variable) *graph.Node {
	if v == nil {
		return nil
	}
	return toDType(v.NodeValue(g), m.dtype)
}

// toDType converts x to dt unless it is already of dt.
func toDType(x *graph.Node, dt dtypes.DType) *graph.Node {
	if x.DType() == dt {
		return x
	}
	return graph.ConvertDType(x, dt)
}

// PositionsFromMask returns the rotary positions of a padding mask [B, T] (nonzero =
// real token): the number of real tokens before each one, as Hugging Face's generate
// computes position_ids (cumsum(mask) − 1, 0 on leading padding). For right padding
// it is 0, 1, 2, … on the real tokens.
func PositionsFromMask(mask *graph.Node) *graph.Node {
	g := mask.Graph()
	m := graph.ConvertDType(graph.NotEqual(mask, graph.ScalarZero(g, mask.DType())), dtypes.Int32)
	p := graph.SubScalar(graph.CumSum(m, 1), 1)
	return graph.Max(p, graph.ScalarZero(g, dtypes.Int32))
}

// Logits returns the next-token logits [B, T, Vocab] of input embeddings [B, T,
// Hidden] (token embeddings from EmbedTokens, possibly with soft-prompt vectors
// spliced in) under a padding mask [B, T] (nonzero = real token). Attention is causal
// and skips masked keys; positions come from PositionsFromMask. Logits at padding
// positions are meaningless (mask them out of any loss: labels −100).
func (m *Model) Logits(embeds, mask *graph.Node) *graph.Node {
	return m.LMHead(m.Hidden(embeds, mask))
}

// Hidden returns the final-normalised hidden states [B, T, Hidden] float32 (see
// Logits).
func (m *Model) Hidden(embeds, mask *graph.Node) *graph.Node {
	return m.hidden(embeds, mask, false)
}

// HiddenCheckpointed is Hidden with gradient checkpointing, as transformers'
// gradient_checkpointing_enable: the gradient graph keeps only each decoder layer's
// input and recomputes the layer's activations (attention probabilities, the MLP's
// intermediate) when its gradient arrives (GoMLX's Node.Checkpoint). Same values and
// gradients as Hidden; a backward pass holds one layer's activations instead of all
// of them, for about one more forward pass of compute. Without a gradient it is Hidden.
func (m *Model) HiddenCheckpointed(embeds, mask *graph.Node) *graph.Node {
	return m.hidden(embeds, mask, true)
}

func (m *Model) hidden(embeds, mask *graph.Node, checkpoint bool) *graph.Node {
	g := embeds.Graph()
	dims := embeds.Shape().Dimensions
	bsz, t := dims[0], dims[1]
	real := graph.NotEqual(mask, graph.ScalarZero(g, mask.DType()))                                          // [B, T]
	q := graph.Iota(g, shapes.Make(dtypes.Int32, bsz, t, t), 1)                                              // query index
	k := graph.Iota(g, shapes.Make(dtypes.Int32, bsz, t, t), 2)                                              // key index
	allowed := graph.LogicalAnd(m.causal(q, k), graph.BroadcastToDims(graph.InsertAxes(real, 1), bsz, t, t)) // [B, T, S]
	positions := PositionsFromMask(mask)
	x := toDType(embeds, m.dtype)
	for i := range m.layers {
		if checkpoint {
			x = x.Checkpoint()
		}
		x = m.block(&m.layers[i], x, positions, allowed, nil)
	}
	if checkpoint {
		x = x.StopCheckpoint()
	}
	return toDType(m.rmsNorm(x, m.norm), dtypes.Float32)
}

// causal returns which keys at slot indices k each query at slot index q may see:
// k ≤ q and, with a sliding window (Mistral), q − k < window (transformers'
// sliding_window_overlay on cache positions).
func (m *Model) causal(q, k *graph.Node) *graph.Node {
	ok := graph.LessOrEqual(k, q)
	if w := m.cfg.SlidingWindow; w > 0 {
		ok = graph.LogicalAnd(ok, graph.LessThan(graph.Sub(q, k), graph.Scalar(q.Graph(), q.DType(), w)))
	}
	return ok
}

// HasHead reports whether the model has an LM head: false for a bare decoder saved
// without one (an embedding model such as Qwen3-Embedding-8B), which gives hidden
// states only.
func (m *Model) HasHead() bool { return m.head != nil }

// errNoHead is the error of what needs logits from a model without an LM head.
func (m *Model) errNoHead() error {
	return fmt.Errorf("lm: the checkpoint has no lm_head.weight and config.json does not tie it to the embeddings (tie_word_embeddings false): a bare decoder, such as an embedding model, gives hidden states but cannot generate or score tokens")
}

// LMHead maps hidden states [..., Hidden] to float32 logits [..., Vocab] (the
// product in the model's DType, as transformers' lm_head, then .float()). It panics
// on a model without a head (HasHead); the exported entry points check first.
func (m *Model) LMHead(h *graph.Node) *graph.Node {
	if m.head == nil {
		panic(m.errNoHead())
	}
	return toDType(linear(toDType(h, m.dtype), m.weight(h.Graph(), m.head), nil), dtypes.Float32)
}

// kvFn receives a layer's new keys and values [B, T, KVHeads, HeadDim] (keys after
// RoPE) and returns those to attend to, [B, S, KVHeads, HeadDim].
type kvFn func(k, v *graph.Node) (*graph.Node, *graph.Node)

// block is one decoder layer: x + attn(norm(x)), then + mlp(norm(·)).
func (m *Model) block(l *layer, x, positions, allowed *graph.Node, kv kvFn) *graph.Node {
	g := x.Graph()
	h := m.rmsNorm(x, l.inNorm)
	x = graph.Add(x, m.attention(l, h, positions, allowed, kv))
	h = m.rmsNorm(x, l.postNorm)
	gate := linear(h, m.weight(g, l.gate), m.weight(g, l.gateB))
	up := linear(h, m.weight(g, l.up), m.weight(g, l.upB))
	return graph.Add(x, linear(graph.Mul(graph.Mul(gate, graph.Sigmoid(gate)), up), m.weight(g, l.down), m.weight(g, l.dnB)))
}

// attention is grouped-query attention with RoPE; allowed [B, T, S] selects the keys
// each query sees.
func (m *Model) attention(l *layer, h, positions, allowed *graph.Node, kv kvFn) *graph.Node {
	g := h.Graph()
	c := m.cfg
	dims := h.Shape().Dimensions
	bsz, t := dims[0], dims[1]
	q := graph.Reshape(m.project(l.idx, "q_proj", h, m.weight(g, l.q), m.weight(g, l.qb)), bsz, t, c.Heads, c.HeadDim)
	k := graph.Reshape(m.project(l.idx, "k_proj", h, m.weight(g, l.k), m.weight(g, l.kb)), bsz, t, c.KVHeads, c.HeadDim)
	v := graph.Reshape(m.project(l.idx, "v_proj", h, m.weight(g, l.v), m.weight(g, l.vb)), bsz, t, c.KVHeads, c.HeadDim)
	if l.qNorm != nil { // Qwen3: RMSNorm over each head before RoPE
		q, k = m.rmsNorm(q, l.qNorm), m.rmsNorm(k, l.kNorm)
	}
	cos, sin := m.rotary(positions)
	rope := pos.NewRoPEWithCosSin(toDType(cos, q.DType()), toDType(sin, q.DType())) // transformers: cos.to(x.dtype)
	q, k = rope.Encode(q, 1), rope.Encode(k, 1)
	if kv != nil {
		k, v = kv(k, v)
	}
	s := k.Shape().Dimensions[1]
	if grp := c.Heads / c.KVHeads; grp > 1 { // head h uses KV head h / grp (HF repeat_kv)
		k = graph.Reshape(graph.BroadcastToDims(graph.InsertAxes(k, 3), bsz, s, c.KVHeads, grp, c.HeadDim), bsz, s, c.Heads, c.HeadDim)
		v = graph.Reshape(graph.BroadcastToDims(graph.InsertAxes(v, 3), bsz, s, c.KVHeads, grp, c.HeadDim), bsz, s, c.Heads, c.HeadDim)
	}
	qt := graph.TransposeAllAxes(q, 0, 2, 1, 3) // [B, H, T, D]
	kt := graph.TransposeAllAxes(k, 0, 2, 1, 3) // [B, H, S, D]
	vt := graph.TransposeAllAxes(v, 0, 2, 1, 3)
	scores := graph.MulScalar(DotGeneral(qt, []int{3}, []int{0, 1}, kt, []int{3}, []int{0, 1}), 1/math.Sqrt(float64(c.HeadDim))) // [B, H, T, S]
	mask := graph.BroadcastToDims(graph.InsertAxes(allowed, 1), bsz, c.Heads, t, s)
	scores = graph.Where(mask, scores, graph.Scalar(g, scores.DType(), maskValue))
	probs := toDType(graph.Softmax(toDType(scores, dtypes.Float32), -1), scores.DType()) // softmax in float32, as transformers' eager attention
	out := DotGeneral(probs, []int{3}, []int{0, 1}, vt, []int{2}, []int{0, 1})           // [B, H, T, D]
	out = graph.Reshape(graph.TransposeAllAxes(out, 0, 2, 1, 3), bsz, t, c.Heads*c.HeadDim)
	return m.project(l.idx, "o_proj", out, m.weight(g, l.o), m.weight(g, l.ob))
}

// rotary returns RoPE's cos and sin [B, T, HeadDim/2] for positions [B, T], as
// Hugging Face's rotary embedding computes them (float32 angles position·inv_freq,
// times the attention factor). Static rope types use the inverse frequencies
// computed at load; "dynamic" computes them in the graph from the call's largest
// position (Config.InvFreq). GoMLX's pos.RoPE takes positions of one sequence only,
// so the angles are built here and applied with pos.NewRoPEWithCosSin
// (non-interleaved = rotate_half).
func (m *Model) rotary(positions *graph.Node) (cos, sin *graph.Node) {
	g := positions.Graph()
	p := graph.InsertAxes(graph.ConvertDType(positions, dtypes.Float32), -1) // [B, T, 1]
	var f *graph.Node
	if m.cfg.Rope.Type == "dynamic" {
		f = graph.Reshape(m.dynamicInvFreq(positions), 1, 1, len(m.invFreq))
	} else {
		f = graph.Reshape(graph.Const(g, m.invFreq), 1, 1, len(m.invFreq)) // [1, 1, D/2]
	}
	ang := graph.Mul(p, f)
	cos, sin = graph.Cos(ang), graph.Sin(ang)
	if m.ropeScale != 1 {
		cos, sin = graph.MulScalar(cos, float64(m.ropeScale)), graph.MulScalar(sin, float64(m.ropeScale))
	}
	return cos, sin
}

// dynamicInvFreq is dynamic NTK scaling's inverse frequencies [HeadDim/2] for the
// call's sequence length L = max(positions) + 1: the base becomes
// θ·(factor·L/max − (factor − 1))^(d/(d−2)) when L exceeds max_position_embeddings.
func (m *Model) dynamicInvFreq(positions *graph.Node) *graph.Node {
	g := positions.Graph()
	c := m.cfg
	d := float64(c.HeadDim)
	seq := graph.AddScalar(graph.ConvertDType(graph.ReduceAllMax(positions), dtypes.Float32), 1)
	mp := float64(c.MaxPositions)
	ratio := graph.AddScalar(graph.MulScalar(seq, c.Rope.Factor/mp), -(c.Rope.Factor - 1))
	logBase := graph.AddScalar(graph.MulScalar(graph.Log(ratio), d/(d-2)), math.Log(c.RopeTheta))
	logBase = graph.Where(graph.GreaterThan(seq, graph.Scalar(g, dtypes.Float32, mp)), logBase, graph.Scalar(g, dtypes.Float32, math.Log(c.RopeTheta)))
	exps := make([]float32, c.HeadDim/2)
	for i := range exps {
		exps[i] = float32(-2 * float64(i) / d)
	}
	return graph.Exp(graph.Mul(graph.Const(g, exps), logBase))
}

// rmsNorm is Llama's RMSNorm: x / √(mean(x²) + eps) · w, the normalisation in
// float32 and cast back to x's dtype before the weight, as transformers' LlamaRMSNorm.
func (m *Model) rmsNorm(x *graph.Node, w *model.Variable) *graph.Node {
	xf := toDType(x, dtypes.Float32)
	ms := graph.ReduceAndKeep(graph.Square(xf), graph.ReduceMean, -1)
	n := toDType(graph.Div(xf, graph.Sqrt(graph.AddScalar(ms, m.cfg.RMSNormEps))), x.DType()) // Sqrt: Rsqrt has no gradient in GoMLX
	return graph.Mul(n, graph.ExpandLeftToRank(m.weight(x.Graph(), w), x.Rank()))
}

// linear returns x·wᵀ + b for w [out, in] (torch layout).
func linear(x, w, b *graph.Node) *graph.Node {
	y := DotGeneral(x, []int{x.Rank() - 1}, nil, w, []int{1}, nil)
	if b != nil {
		y = graph.Add(y, graph.ExpandLeftToRank(b, y.Rank()))
	}
	return y
}
