package encoder

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers/attention/pos"
	"github.com/gomlx/gomlx/ml/model"
)

// flashSpec is the layout of the BERTs written on flash-attn's BERT (Tri Dao's
// models/bert.py): NomicBertModel and the XLM-RoBERTa of jina-embeddings-v3. Both are
// word + token type embeddings → LayerNorm (emb_ln) → post-norm layers
// norm1(x + attn(x)), norm2(· + mlp(·)) with q, k and v from one projection (Wqkv)
// rotated by RoPE; they differ in names, MLP, biases and Jina's task adapters.
type flashSpec struct {
	mixer      string // the attention module's name: "attn" (Nomic) or "mixer" (Jina)
	activation string // "gelu" (fc1, fc2) or a gated one (fc11, fc12, fc2): see NomicBERTConfig
	qkvBias    bool   // Wqkv and out_proj
	fc1Bias    bool
	fc2Bias    bool
	rotaryBase float64
	tasks      int     // LoRA adaptations (Jina); 0: none
	rank       int     // their rank
	scaling    float64 // lora_alpha / lora_rank
}

// flashSpecOf returns the layout of a NomicBERT or Jina XLM-R config.
func flashSpecOf(cfg Config) flashSpec {
	if cfg.ModelType == "nomic_bert" {
		nc := cfg.NomicBERT
		return flashSpec{mixer: "attn", activation: nc.Activation, qkvBias: nc.QKVBias, fc1Bias: nc.FC1Bias, fc2Bias: nc.FC2Bias, rotaryBase: nc.RotaryBase}
	}
	j := cfg.Jina
	s := flashSpec{mixer: "mixer", activation: "gelu", qkvBias: true, fc1Bias: true, fc2Bias: true, rotaryBase: j.RotaryBase,
		tasks: len(j.Tasks), rank: j.Rank}
	if j.Rank > 0 {
		s.scaling = j.Alpha / float64(j.Rank)
	}
	return s
}

// gated reports whether the MLP is gated (fc11, fc12) rather than plain (fc1).
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

// flashProbe is the name of the word embedding table in a flash-attn BERT checkpoint.
func flashProbe(cfg Config) string {
	if len(cfg.Jina.Tasks) > 0 {
		return "embeddings.word_embeddings.parametrizations.weight.original"
	}
	return "embeddings.word_embeddings.weight"
}

// takeFlash creates a flash-attn BERT's variables: word and token type embeddings,
// their LayerNorm (emb_ln) and the layers, with their task adapters.
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
	n.embLNw, n.embLNb = b.take("emb_ln.weight", H), b.take("emb_ln.bias", H)
	for i := range cfg.Layers {
		p := fmt.Sprintf("encoder.layers.%d.", i)
		m := p + s.mixer + "."
		var l flashLayer
		l.qkv, l.qkvL = b.adapted(s, m+"Wqkv.weight", false, 3*H, H)
		l.qkvB = opt(s.qkvBias, m+"Wqkv.bias", 3*H)
		l.o, l.oL = b.adapted(s, m+"out_proj.weight", false, H, H)
		l.oB = opt(s.qkvBias, m+"out_proj.bias", H)
		l.norm1W, l.norm1B = b.take(p+"norm1.weight", H), b.take(p+"norm1.bias", H)
		if s.gated() {
			l.fc11, l.fc11L = b.adapted(s, p+"mlp.fc11.weight", false, I, H)
			l.fc11B = opt(s.fc1Bias, p+"mlp.fc11.bias", I)
			l.fc12, l.fc12B = b.take(p+"mlp.fc12.weight", I, H), opt(s.fc1Bias, p+"mlp.fc12.bias", I)
		} else {
			l.fc11, l.fc11L = b.adapted(s, p+"mlp.fc1.weight", false, I, H)
			l.fc11B = opt(s.fc1Bias, p+"mlp.fc1.bias", I)
		}
		l.fc2, l.fc2L = b.adapted(s, p+"mlp.fc2.weight", false, H, I)
		l.fc2B = opt(s.fc2Bias, p+"mlp.fc2.bias", H)
		l.norm2W, l.norm2B = b.take(p+"norm2.weight", H), b.take(p+"norm2.bias", H)
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
// non-flash attention) and of jina-embeddings-v3's XLMRobertaModel (Jina's
// xlm-roberta-flash-implementation, likewise) for token ids [B, T] at positions
// [B, T] with padding keys masked (real [B, T]), task adapters t (-1: none): word
// + token type 0 embeddings → emb_ln → post-norm layers norm1(x + attn(x)) then
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
	if n.typ != nil { // token type 0 for every token
		row := n.adaptedRows(n.typ, n.typL, graph.Zeros(g, ids.Shape()), t)
		x = graph.Add(x, row)
	}
	x = n.layerNorm(x, n.embLNw, n.embLNb)
	allowed := graph.BroadcastToDims(graph.InsertAxes(graph.InsertAxes(real, 1), 1), bsz, c.Heads, tl, tl)
	cos, sin := rotary(positions, s.rotaryBase, hd)
	rope := pos.NewRoPEWithCosSin(toDType(cos, n.dtype), toDType(sin, n.dtype))
	for i := range n.layersFlash {
		l := &n.layersFlash[i]
		qkv := graph.Reshape(n.adaptedLinear(x, l.qkv, l.qkvB, l.qkvL, t), bsz, tl, 3, c.Heads, hd)
		part := func(j int) *graph.Node { // [B, T, Heads, hd]
			return graph.Reshape(graph.Slice(qkv, graph.AxisRange(), graph.AxisRange(), graph.AxisElem(j)), bsz, tl, c.Heads, hd)
		}
		heads := func(y *graph.Node) *graph.Node { return graph.TransposeAllAxes(y, 0, 2, 1, 3) }
		ctx := attend(heads(rope.Encode(part(0), 1)), heads(rope.Encode(part(1), 1)), heads(part(2)), allowed, nil)
		x = n.layerNorm(graph.Add(x, n.adaptedLinear(ctx, l.o, l.oB, l.oL, t)), l.norm1W, l.norm1B)
		y := n.adaptedLinear(x, l.fc11, l.fc11B, l.fc11L, t)
		if s.gated() {
			y = graph.Mul(y, flashGate(s.activation, linear(x, n.weight(g, l.fc12), n.opt(g, l.fc12B))))
		} else {
			y = gelu(y)
		}
		x = n.layerNorm(graph.Add(x, n.adaptedLinear(y, l.fc2, l.fc2B, l.fc2L, t)), l.norm2W, l.norm2B)
	}
	return x
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
