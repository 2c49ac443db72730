package encoder

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers/attention/pos"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/graphloom/graphloom/models/lm"
)

// flashSpec is the layout of the rotary BERTs that remote code defines (each written
// here from that code, never running it): NomicBertModel and the XLM-RoBERTa of
// jina-embeddings-v3, both on flash-attn's BERT (Tri Dao's models/bert.py), and
// Alibaba's gte-v1.5 NewModel. All are word + token type embeddings → LayerNorm →
// post-norm layers norm1(x + attn(x)), norm2(· + mlp(·)), with q, k and v from one
// projection, split as (three heads hd), rotated by RoPE (rotate_half); they differ
// in names, MLP, biases, RoPE frequencies and Jina's task adapters.
type flashSpec struct {
	embLN, layer     string // the embeddings' LayerNorm; a layer's prefix (%d: its index)
	qkv, out         string // the attention's projections, below the layer
	norm1, norm2     string // the LayerNorms after attention and after the MLP
	fc1, fc12, fc2   string // the MLP's first projection (fc11 when gated), its gate's (fc12), its last
	activation       string // "gelu" (fc1, fc2) or a gated one: see NomicBERTConfig
	packedGate       bool   // gated through one projection [up; gate] (gte's up_gate_proj) rather than two
	qkvBias          bool   // the attention's projections
	fc1Bias, fc2Bias bool
	inv              []float32       // RoPE's inverse frequencies
	moe              NomicBERTConfig // its MoEEvery, Experts, TopK: NomicBERT's experts
	tasks            int             // LoRA adaptations (Jina); 0: none
	rank             int             // their rank
	scaling          float64         // lora_alpha / lora_rank
}

// flashSpecOf returns the layout of a NomicBERT, Jina XLM-R or gte-v1.5 config.
func flashSpecOf(cfg Config) flashSpec {
	hd := cfg.Hidden / cfg.Heads
	switch {
	case cfg.ModelType == "nomic_bert":
		nc := cfg.NomicBERT
		s := flashSpec{embLN: "emb_ln", layer: "encoder.layers.%d.", qkv: "attn.Wqkv", out: "attn.out_proj", norm1: "norm1", norm2: "norm2",
			fc1: "mlp.fc1", fc2: "mlp.fc2", activation: nc.Activation, qkvBias: nc.QKVBias, fc1Bias: nc.FC1Bias, fc2Bias: nc.FC2Bias,
			inv: invFreq(nc.RotaryBase, hd), moe: nc}
		if s.gated() {
			s.fc1, s.fc12 = "mlp.fc11", "mlp.fc12"
		}
		return s
	case cfg.ModelType == gteType:
		return flashSpec{embLN: "embeddings.LayerNorm", layer: "encoder.layer.%d.", qkv: "attention.qkv_proj", out: "attention.o_proj",
			norm1: "attn_ln", norm2: "mlp_ln", fc1: "mlp.up_gate_proj", fc2: "mlp.down_proj", activation: "geglu", packedGate: true,
			qkvBias: true, fc2Bias: true, inv: cfg.GTE.invFreq(hd)}
	}
	j := cfg.Jina
	s := flashSpec{embLN: "emb_ln", layer: "encoder.layers.%d.", qkv: "mixer.Wqkv", out: "mixer.out_proj", norm1: "norm1", norm2: "norm2",
		fc1: "mlp.fc1", fc2: "mlp.fc2", activation: "gelu", qkvBias: true, fc1Bias: true, fc2Bias: true, inv: invFreq(j.RotaryBase, hd),
		tasks: len(j.Tasks), rank: j.Rank}
	if j.Rank > 0 {
		s.scaling = j.Alpha / float64(j.Rank)
	}
	return s
}

// gated reports whether the MLP is gated rather than plain (fc1, fc2).
func (s flashSpec) gated() bool { return s.activation != "gelu" }

// lora is a weight's task adapters: a [tasks, rank, in] and b [tasks, out, rank] for
// a linear layer (ΔW = b[t]·a[t]), a [tasks, rows, rank] and b [tasks, rank, dim] for
// an embedding table (ΔW = a[t]·b[t]), as Jina's LoRAParametrization stores them;
// each adapted weight is W + ΔW · lora_alpha / lora_rank.
type lora struct{ a, b *model.Variable }

// flashLayer is one layer's weights, [out, in] as Hugging Face stores them; biases
// are nil where the config has none, fc12 is nil in a plain MLP (fc11 is then fc1),
// and the lora entries are zero without task adapters.
type flashLayer struct {
	qkv, qkvB, o, oB      *model.Variable
	norm1W, norm1B        *model.Variable
	fc11, fc11B           *model.Variable
	fc12, fc12B           *model.Variable
	fc2, fc2B             *model.Variable
	norm2W, norm2B        *model.Variable
	qkvL, oL, fc11L, fc2L lora
	// A mixture-of-experts layer's router [Experts, H], experts' w1 and w2
	// [Experts·I, H] and shared bias [H] (NomicMoELayer); nil in the others.
	router, w1, w2, moeB *model.Variable
}

// adapted creates the variable of the weight name (…".weight") of the given dims and,
// with task adapters, its LoRA tensors: the checkpoint then names the weight
// ….parametrizations.weight.original and the adapters ….parametrizations.weight.0.lora_A
// and lora_B (torch.nn.utils.parametrize). embedding says the weight is an
// embedding table [rows, dim] rather than a linear layer's [out, in].
func (b *builder) adapted(s flashSpec, name string, embedding bool, dims ...int) (*model.Variable, lora) {
	if s.tasks == 0 {
		return b.take(name, dims...), lora{}
	}
	p := name[:len(name)-len("weight")] + "parametrizations.weight."
	w := b.take(p+"original", dims...)
	var l lora
	if embedding {
		l.a, l.b = b.take(p+"0.lora_A", s.tasks, dims[0], s.rank), b.take(p+"0.lora_B", s.tasks, s.rank, dims[1])
	} else {
		l.a, l.b = b.take(p+"0.lora_A", s.tasks, s.rank, dims[1]), b.take(p+"0.lora_B", s.tasks, dims[0], s.rank)
	}
	return w, l
}

// flashProbe is the name of the word embedding table in a flashSpec model's checkpoint.
func flashProbe(cfg Config) string {
	if len(cfg.Jina.Tasks) > 0 {
		return "embeddings.word_embeddings.parametrizations.weight.original"
	}
	return "embeddings.word_embeddings.weight"
}

// takeFlash creates the variables of a flashSpec model: word and token type
// embeddings, their LayerNorm and the layers, with their task adapters or experts.
func (b *builder) takeFlash(cfg Config) {
	n, s := b.n, flashSpecOf(cfg)
	H, I := cfg.Hidden, cfg.Intermediate
	opt := func(has bool, name string, dims ...int) *model.Variable {
		if !has {
			return nil
		}
		return b.take(name, dims...)
	}
	n.flash = s
	n.word, n.wordL = b.adapted(s, "embeddings.word_embeddings.weight", true, cfg.VocabSize, H)
	if cfg.TypeVocabSize > 0 {
		n.typ, n.typL = b.adapted(s, "embeddings.token_type_embeddings.weight", true, cfg.TypeVocabSize, H)
	}
	n.embLNw, n.embLNb = b.take(s.embLN+".weight", H), b.take(s.embLN+".bias", H)
	first := I // the MLP's first projection's rows
	if s.packedGate {
		first = 2 * I
	}
	for i := range cfg.Layers {
		p := fmt.Sprintf(s.layer, i)
		var l flashLayer
		l.qkv, l.qkvL = b.adapted(s, p+s.qkv+".weight", false, 3*H, H)
		l.qkvB = opt(s.qkvBias, p+s.qkv+".bias", 3*H)
		l.o, l.oL = b.adapted(s, p+s.out+".weight", false, H, H)
		l.oB = opt(s.qkvBias, p+s.out+".bias", H)
		l.norm1W, l.norm1B = b.take(p+s.norm1+".weight", H), b.take(p+s.norm1+".bias", H)
		l.norm2W, l.norm2B = b.take(p+s.norm2+".weight", H), b.take(p+s.norm2+".bias", H)
		if s.moe.moe(i) {
			E := s.moe.Experts
			l.router = b.take(p+"mlp.router.layer.weight", E, H)
			l.w1, l.w2 = b.take(p+"mlp.experts.mlp.w1", E*I, H), b.take(p+"mlp.experts.mlp.w2", E*I, H)
			l.moeB = b.take(p+"mlp.experts.bias", H)
			n.layersFlash = append(n.layersFlash, l)
			continue
		}
		l.fc11, l.fc11L = b.adapted(s, p+s.fc1+".weight", false, first, H)
		l.fc11B = opt(s.fc1Bias, p+s.fc1+".bias", first)
		if s.fc12 != "" {
			l.fc12, l.fc12B = b.take(p+s.fc12+".weight", I, H), opt(s.fc1Bias, p+s.fc12+".bias", I)
		}
		l.fc2, l.fc2L = b.adapted(s, p+s.fc2+".weight", false, H, I)
		l.fc2B = opt(s.fc2Bias, p+s.fc2+".bias", H)
		n.layersFlash = append(n.layersFlash, l)
	}
}

// taskSlice is adapter tensor v's entry for task t, [d1, d2], in the compute dtype.
func (n *Network) taskSlice(g *graph.Graph, v *model.Variable, t int) *graph.Node {
	dims := v.Shape().Dimensions
	return graph.Reshape(graph.Slice(n.weight(g, v), graph.AxisElem(t)), dims[1], dims[2])
}

// adaptedLinear is x·Wᵀ + b, plus, for task t ≥ 0 with adapters, x·(ΔW)ᵀ =
// ((x·a[t]ᵀ)·b[t]ᵀ) · scaling: the adapted weight's product without forming it.
func (n *Network) adaptedLinear(x *graph.Node, w, bias *model.Variable, l lora, t int) *graph.Node {
	g := x.Graph()
	y := linear(x, n.weight(g, w), n.opt(g, bias))
	if t < 0 || l.a == nil {
		return y
	}
	d := linear(linear(x, n.taskSlice(g, l.a, t), nil), n.taskSlice(g, l.b, t), nil)
	return graph.Add(y, graph.MulScalar(d, n.flash.scaling))
}

// adaptedRows is the rows idx [B, T] of embedding table w, adapted for task t ≥ 0:
// w[idx] + (a[t][idx]·b[t]) · scaling.
func (n *Network) adaptedRows(w *model.Variable, l lora, idx *graph.Node, t int) *graph.Node {
	g := idx.Graph()
	at := graph.InsertAxes(graph.ConvertDType(idx, dtypes.Int32), -1)
	rows := toDType(graph.Gather(w.NodeValue(g), at), n.dtype) // gathered, then converted: not the whole table
	if t < 0 || l.a == nil {
		return rows
	}
	dims := l.a.Shape().Dimensions
	a := graph.Reshape(graph.Slice(l.a.NodeValue(g), graph.AxisElem(t)), dims[1], dims[2])
	d := linear(toDType(graph.Gather(a, at), n.dtype), graph.Transpose(n.taskSlice(g, l.b, t), 0, 1), nil)
	return graph.Add(rows, graph.MulScalar(d, n.flash.scaling))
}

// flashHidden is the forward pass of NomicBertModel (Nomic's remote code, its
// non-flash attention), of jina-embeddings-v3's XLMRobertaModel (Jina's
// xlm-roberta-flash-implementation, likewise) and of gte-v1.5's NewModel (Alibaba's
// new-impl, its eager attention) for token ids [B, T] at positions
// [B, T] with padding keys masked (real [B, T]), task adapters t (-1: none): word
// + token type 0 embeddings → LayerNorm → post-norm layers norm1(x + attn(x)) then
// norm2(· + mlp(·)). Attention projects q, k and v together (Wqkv, split as
// (three heads hd)) and rotates q and k by RoPE (rotate_half, the whole head, angles
// in float32, cast to the compute dtype as the remote code's cos.to(qkv.dtype)).
func (n *Network) flashHidden(ids, positions, real *graph.Node, t int) *graph.Node {
	g := ids.Graph()
	c, s := n.cfg, n.flash
	dims := ids.Shape().Dimensions
	bsz, tl := dims[0], dims[1]
	hd := c.Hidden / c.Heads
	x := n.adaptedRows(n.word, n.wordL, ids, t)
	if n.typ != nil { // token type 0 for every token: its one row [1, 1, H], adapted once
		row := n.adaptedRows(n.typ, n.typL, graph.Zeros(g, shapes.Make(dtypes.Int32, 1, 1)), t)
		x = graph.Add(x, row)
	}
	x = n.layerNorm(x, n.embLNw, n.embLNb)
	cos, sin := rotary(positions, s.inv)
	rope := pos.NewRoPEWithCosSin(toDType(cos, n.dtype), toDType(sin, n.dtype))
	for i := range n.layersFlash {
		l := &n.layersFlash[i]
		qkv := graph.Reshape(n.adaptedLinear(x, l.qkv, l.qkvB, l.qkvL, t), bsz, tl, 3, c.Heads, hd)
		part := func(j int) *graph.Node { // [B, T, Heads, hd]
			return graph.Reshape(graph.Slice(qkv, graph.AxisRange(), graph.AxisRange(), graph.AxisElem(j)), bsz, tl, c.Heads, hd)
		}
		heads := func(y *graph.Node) *graph.Node { return graph.TransposeAllAxes(y, 0, 2, 1, 3) }
		ctx := attend(heads(rope.Encode(part(0), 1)), heads(rope.Encode(part(1), 1)), heads(part(2)), real, 0, nil)
		x = n.layerNorm(graph.Add(x, n.adaptedLinear(ctx, l.o, l.oB, l.oL, t)), l.norm1W, l.norm1B)
		if l.router != nil {
			x = n.layerNorm(graph.Add(x, n.experts(l, x)), l.norm2W, l.norm2B)
			continue
		}
		y := n.adaptedLinear(x, l.fc11, l.fc11B, l.fc11L, t)
		switch {
		case s.packedGate: // [up; gate]
			up := graph.Slice(y, graph.AxisRange(), graph.AxisRange(), graph.AxisRange(0, c.Intermediate))
			gate := graph.Slice(y, graph.AxisRange(), graph.AxisRange(), graph.AxisRange(c.Intermediate, 2*c.Intermediate))
			y = graph.Mul(up, flashGate(s.activation, gate))
		case s.gated():
			y = graph.Mul(y, flashGate(s.activation, linear(x, n.weight(g, l.fc12), n.opt(g, l.fc12B))))
		default:
			y = gelu(y)
		}
		x = n.layerNorm(graph.Add(x, n.adaptedLinear(y, l.fc2, l.fc2B, l.fc2L, t)), l.norm2W, l.norm2B)
	}
	return x
}

// experts is NomicMoELayer on x [B, T, H]: router probabilities p = softmax(x·Rᵀ) in
// float32 over the experts, the TopK largest kept (not renormalised; of equal ones,
// the lower expert first, as torch.topk), and Σₑ pₑ · GELU(x·w1ₑᵀ)·w2ₑ + bias, with
// w1ₑ and w2ₑ the e-th [I, H] blocks of w1 and w2 (w2 applied untransposed, as
// act_out.matmul(expert_w2) in vLLM's port and megablocks). Every expert is computed for every token and the
// unselected ones weigh 0: the same sums as routing tokens to their experts, at
// Experts/TopK times the arithmetic.
func (n *Network) experts(l *flashLayer, x *graph.Node) *graph.Node {
	g := x.Graph()
	mc := n.flash.moe
	E, I := mc.Experts, n.cfg.Intermediate
	dims := x.Shape().Dimensions
	bsz, t, H := dims[0], dims[1], dims[2]
	p := graph.Softmax(toDType(linear(x, n.weight(g, l.router), nil), dtypes.Float32), -1) // [B, T, E]
	idx := graph.Iota(g, p.Shape(), 2)
	rest, keep := p, graph.Zeros(g, p.Shape())
	for range mc.TopK { // the k largest, one at a time: the first expert at the maximum
		atMax := graph.Equal(rest, graph.ReduceAndKeep(rest, graph.ReduceMax, -1))
		first := graph.ReduceAndKeep(graph.Where(atMax, idx, graph.Scalar(g, dtypes.Float32, float64(E))), graph.ReduceMin, -1)
		top := graph.Equal(idx, first)
		keep = graph.Where(top, graph.OnesLike(p), keep)
		rest = graph.Where(top, graph.Scalar(g, dtypes.Float32, -1), rest)
	}
	w := toDType(graph.Mul(p, keep), n.dtype)                                      // [B, T, E]
	h := gelu(graph.Reshape(linear(x, n.weight(g, l.w1), nil), bsz, t, E, I))      // [B, T, E, I]
	w2 := graph.Reshape(n.weight(g, l.w2), E, I, H)                                // [E, I, H]
	out := lm.DotGeneral(h, []int{3}, []int{2}, w2, []int{1}, []int{0})            // [E, B, T, H]
	out = graph.Mul(out, graph.InsertAxes(graph.TransposeAllAxes(w, 2, 0, 1), -1)) // weighted by pₑ
	return graph.Add(graph.ReduceSum(out, 0), graph.ExpandLeftToRank(n.weight(g, l.moeB), 3))
}

// flashGate is the gated MLP's activation of its gate fc12(x): SiLU (swiglu), exact
// GELU (geglu) or the sigmoid (glu), computed in float32 and cast back to the gate's
// dtype (torch's bf16 activations).
func flashGate(activation string, gate *graph.Node) *graph.Node {
	if activation == "geglu" {
		return gelu(gate)
	}
	f := toDType(gate, dtypes.Float32)
	s := graph.Sigmoid(f)
	if activation == "swiglu" {
		s = graph.Mul(f, s)
	}
	return toDType(s, gate.DType())
}
