package encoder

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers/attention/pos"
	"github.com/gomlx/gomlx/ml/model"
)

// ModernBERTConfig is what config.json says of a ModernBertModel (ModernBERT-base and
// -large; gte-modernbert-base, modernbert-embed-base, granite-embedding-*-r2) beyond
// the sizes every encoder has. transformers' defaults are those of ModernBERT-base.
type ModernBERTConfig struct {
	// GlobalEvery is global_attn_every_n_layers (default 3): layer i attends to the
	// whole sequence when i is a multiple of it, and to a sliding window otherwise.
	GlobalEvery int `json:"global_every"`
	// Window is local_attention (default 128): a sliding layer's query sees the keys
	// at most Window/2 positions away on either side.
	Window int `json:"window"`
	// GlobalTheta and LocalTheta are the RoPE bases of the global and the sliding
	// layers (global_rope_theta, default 160,000, and local_rope_theta, default
	// 10,000; or rope_parameters' full_attention and sliding_attention rope_theta).
	GlobalTheta float64 `json:"global_theta"`
	LocalTheta  float64 `json:"local_theta"`
	// NormBias, AttentionBias and MLPBias say whether the LayerNorms, the attention's
	// projections and the MLP's have biases (norm_bias, attention_bias, mlp_bias;
	// all false by default).
	NormBias      bool `json:"norm_bias,omitempty"`
	AttentionBias bool `json:"attention_bias,omitempty"`
	MLPBias       bool `json:"mlp_bias,omitempty"`
}

// modernPadding is ModernBERT's default pad_token_id.
const modernPadding = 50283

// rawModernBERT is the part of a ModernBertModel's config.json that only it has.
type rawModernBERT struct {
	PadTokenID     *int            `json:"pad_token_id"`
	NormEps        *float64        `json:"norm_eps"`
	NormBias       bool            `json:"norm_bias"`
	AttentionBias  bool            `json:"attention_bias"`
	MLPBias        bool            `json:"mlp_bias"`
	Activation     string          `json:"hidden_activation"`
	GlobalEvery    *int            `json:"global_attn_every_n_layers"`
	Window         *int            `json:"local_attention"`
	GlobalTheta    *float64        `json:"global_rope_theta"`
	LocalTheta     json.RawMessage `json:"local_rope_theta"`
	LayerTypes     []string        `json:"layer_types"`
	RopeScaling    json.RawMessage `json:"rope_scaling"`
	RopeParameters map[string]*struct {
		Type  string   `json:"rope_type"`
		Theta *float64 `json:"rope_theta"`
	} `json:"rope_parameters"`
}

// parseModernBERT reads a ModernBertModel's config.json (data) for a model of the given
// number of layers: its own settings and its LayerNorm epsilon. What would change the
// arithmetic and is not implemented (another activation, scaled RoPE, a layer pattern
// other than one global layer every GlobalEvery) is an error naming the field.
func parseModernBERT(data []byte, layers int) (ModernBERTConfig, float64, error) {
	var r rawModernBERT
	if err := json.Unmarshal(data, &r); err != nil {
		return ModernBERTConfig{}, 0, fmt.Errorf("config: %w", err)
	}
	c := ModernBERTConfig{GlobalEvery: 3, Window: 128, GlobalTheta: 160_000, LocalTheta: 10_000,
		NormBias: r.NormBias, AttentionBias: r.AttentionBias, MLPBias: r.MLPBias}
	eps := 1e-5
	if r.NormEps != nil {
		eps = *r.NormEps
	}
	if r.Activation != "" && r.Activation != "gelu" {
		return c, 0, fmt.Errorf("config: hidden_activation %q not supported (want gelu)", r.Activation)
	}
	if r.GlobalEvery != nil {
		c.GlobalEvery = *r.GlobalEvery
	}
	if r.Window != nil {
		c.Window = *r.Window
	}
	if c.GlobalEvery < 1 || c.Window < 0 {
		return c, 0, fmt.Errorf("config: global_attn_every_n_layers %d, local_attention %d", c.GlobalEvery, c.Window)
	}
	if len(r.RopeScaling) > 0 && string(r.RopeScaling) != "null" {
		return c, 0, fmt.Errorf("config: rope_scaling %s: only ModernBERT's unscaled rotary positions are supported", r.RopeScaling)
	}
	if r.GlobalTheta != nil {
		c.GlobalTheta = *r.GlobalTheta
	}
	switch string(r.LocalTheta) {
	case "":
	case "null": // transformers 4.x: the sliding layers then take the global base
		c.LocalTheta = c.GlobalTheta
	default:
		if err := json.Unmarshal(r.LocalTheta, &c.LocalTheta); err != nil {
			return c, 0, fmt.Errorf("config: local_rope_theta %s: %w", r.LocalTheta, err)
		}
	}
	for kind, theta := range map[string]*float64{"full_attention": &c.GlobalTheta, "sliding_attention": &c.LocalTheta} {
		p := r.RopeParameters[kind]
		if p == nil {
			continue
		}
		if p.Type != "" && p.Type != "default" {
			return c, 0, fmt.Errorf("config: rope_parameters.%s.rope_type %q: only ModernBERT's unscaled rotary positions are supported", kind, p.Type)
		}
		if p.Theta != nil {
			*theta = *p.Theta
		}
	}
	if !(c.GlobalTheta > 0) || !(c.LocalTheta > 0) {
		return c, 0, fmt.Errorf("config: rope theta %g (global), %g (local) must be positive", c.GlobalTheta, c.LocalTheta)
	}
	// transformers picks a layer's window from global_attn_every_n_layers and its RoPE
	// base from layer_types; both must tell the same layers apart.
	if r.LayerTypes != nil {
		if len(r.LayerTypes) != layers {
			return c, 0, fmt.Errorf("config: layer_types has %d entries for %d layers", len(r.LayerTypes), layers)
		}
		for i, kind := range r.LayerTypes {
			if want := c.layerKind(i); kind != want {
				return c, 0, fmt.Errorf("config: layer_types[%d] is %q, but global_attn_every_n_layers %d makes layer %d %s", i, kind, c.GlobalEvery, i, want)
			}
		}
	}
	return c, eps, nil
}

// global reports whether layer i attends to the whole sequence.
func (c ModernBERTConfig) global(i int) bool { return i%c.GlobalEvery == 0 }

// layerKind is layer i's entry in transformers' layer_types.
func (c ModernBERTConfig) layerKind(i int) string {
	if c.global(i) {
		return "full_attention"
	}
	return "sliding_attention"
}

// modernLayer is one ModernBERT layer's weights, [out, in] as Hugging Face stores
// them; the biases are nil where the config has none, and attnNorm is nil in layer 0
// (an identity there).
type modernLayer struct {
	attnNormW, attnNormB *model.Variable
	qkv, qkvB, o, oB     *model.Variable
	mlpNormW, mlpNormB   *model.Variable
	wi, wiB, wo, woB     *model.Variable
}

// takeModernBERT creates a ModernBertModel's variables: token embeddings and their
// LayerNorm, the layers, and the final LayerNorm.
func (b *builder) takeModernBERT(cfg Config) {
	n, mc := b.n, cfg.ModernBERT
	H, I := cfg.Hidden, cfg.Intermediate
	opt := func(has bool, name string, dims ...int) *model.Variable {
		if !has {
			return nil
		}
		return b.take(name, dims...)
	}
	n.word = b.take("embeddings.tok_embeddings.weight", cfg.VocabSize, H)
	n.embLNw, n.embLNb = b.take("embeddings.norm.weight", H), opt(mc.NormBias, "embeddings.norm.bias", H)
	for i := range cfg.Layers {
		p := fmt.Sprintf("layers.%d.", i)
		l := modernLayer{
			qkv: b.take(p+"attn.Wqkv.weight", 3*H, H), qkvB: opt(mc.AttentionBias, p+"attn.Wqkv.bias", 3*H),
			o: b.take(p+"attn.Wo.weight", H, H), oB: opt(mc.AttentionBias, p+"attn.Wo.bias", H),
			mlpNormW: b.take(p+"mlp_norm.weight", H), mlpNormB: opt(mc.NormBias, p+"mlp_norm.bias", H),
			wi: b.take(p+"mlp.Wi.weight", 2*I, H), wiB: opt(mc.MLPBias, p+"mlp.Wi.bias", 2*I),
			wo: b.take(p+"mlp.Wo.weight", H, I), woB: opt(mc.MLPBias, p+"mlp.Wo.bias", H),
		}
		if i > 0 {
			l.attnNormW, l.attnNormB = b.take(p+"attn_norm.weight", H), opt(mc.NormBias, p+"attn_norm.bias", H)
		}
		n.modern = append(n.modern, l)
	}
	n.finalW, n.finalB = b.take("final_norm.weight", H), opt(mc.NormBias, "final_norm.bias", H)
}

// modernHidden is ModernBertModel's forward pass (transformers' eager attention):
// token embeddings → LayerNorm → N pre-norm layers (x + attn(LN(x)), the first
// layer without its LayerNorm; then x + mlp(LN(x))) → final LayerNorm. Attention
// projects q, k and v together (Wqkv), rotates q and k by RoPE at positions
// [B, T] (rotate_half; the global layers' base GlobalTheta, the sliding ones'
// LocalTheta) and, in a sliding layer, masks the keys more than Window/2 positions
// away. The MLP is GeGLU: Wo(GELU(a)·g) for [a; g] = Wi(x).
func (n *Network) modernHidden(x, positions, real *graph.Node) *graph.Node {
	g := x.Graph()
	c, mc := n.cfg, n.cfg.ModernBERT
	dims := x.Shape().Dimensions
	bsz, t := dims[0], dims[1]
	hd := c.Hidden / c.Heads
	ropes := map[float64]*pos.RoPEWithCosSin{}
	rope := func(theta float64) *pos.RoPEWithCosSin { // built once per base
		r, ok := ropes[theta]
		if !ok {
			cos, sin := rotary(positions, invFreq(theta, hd))
			r = pos.NewRoPEWithCosSin(toDType(cos, n.dtype), toDType(sin, n.dtype)) // transformers: cos.to(x.dtype)
			ropes[theta] = r
		}
		return r
	}
	x = n.layerNorm(x, n.embLNw, n.embLNb)
	for i := range n.modern {
		l := &n.modern[i]
		h := x
		if l.attnNormW != nil {
			h = n.layerNorm(x, l.attnNormW, l.attnNormB)
		}
		qkv := graph.Reshape(linear(h, n.weight(g, l.qkv), n.opt(g, l.qkvB)), bsz, t, 3, c.Heads, hd)
		part := func(j int) *graph.Node { // [B, T, Heads, hd]
			return graph.Reshape(graph.Slice(qkv, graph.AxisRange(), graph.AxisRange(), graph.AxisElem(j)), bsz, t, c.Heads, hd)
		}
		r, window := rope(mc.GlobalTheta), 0
		if !mc.global(i) {
			r, window = rope(mc.LocalTheta), mc.Window
		}
		q, k := r.Encode(part(0), 1), r.Encode(part(1), 1)
		heads := func(y *graph.Node) *graph.Node { return graph.TransposeAllAxes(y, 0, 2, 1, 3) }
		ctx := attend(heads(q), heads(k), heads(part(2)), real, window, nil)
		x = graph.Add(x, linear(ctx, n.weight(g, l.o), n.opt(g, l.oB)))
		y := linear(n.layerNorm(x, l.mlpNormW, l.mlpNormB), n.weight(g, l.wi), n.opt(g, l.wiB)) // [B, T, 2I]
		a := graph.Slice(y, graph.AxisRange(), graph.AxisRange(), graph.AxisRange(0, c.Intermediate))
		gate := graph.Slice(y, graph.AxisRange(), graph.AxisRange(), graph.AxisRange(c.Intermediate, 2*c.Intermediate))
		x = graph.Add(x, linear(graph.Mul(gelu(a), gate), n.weight(g, l.wo), n.opt(g, l.woB)))
	}
	return n.layerNorm(x, n.finalW, n.finalB)
}

// invFreq returns RoPE's inverse frequencies for base theta and head size hd as the
// remote codes and transformers compute them in float32: 1 / θ^(2i/hd), the exponent,
// the power and the quotient each rounded to float32.
func invFreq(theta float64, hd int) []float32 {
	inv := make([]float32, hd/2)
	for i := range inv {
		inv[i] = 1 / float32(math.Pow(theta, float64(float32(2*i)/float32(hd))))
	}
	return inv
}

// rotary returns RoPE's cos and sin [B, T, hd/2] at positions [B, T] for the inverse
// frequencies inv (invFreq), in float32 as ModernBertRotaryEmbedding and the others
// compute them: angles position·frequency.
func rotary(positions *graph.Node, inv []float32) (cos, sin *graph.Node) {
	g := positions.Graph()
	p := graph.InsertAxes(graph.ConvertDType(positions, dtypes.Float32), -1) // [B, T, 1]
	ang := graph.Mul(p, graph.Reshape(graph.Const(g, inv), 1, 1, len(inv)))
	return graph.Cos(ang), graph.Sin(ang)
}
