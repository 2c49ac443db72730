package encoder

import (
	"encoding/json"
	"fmt"
	"slices"
)

// NomicBERTConfig is what config.json says of a NomicBertModel (nomic-embed-text-v1
// and -v1.5, nomic-bert-2048) beyond the sizes every encoder has. The model is
// Nomic's own code (config.json's auto_map: configuration_hf_nomic_bert.NomicBertConfig,
// a GPT2Config, and modeling_hf_nomic_bert.NomicBertModel), which graphloom does not
// run: flashHidden is written from that source (nomic-ai/contrastors,
// src/contrastors/models/huggingface/). Its fields that change the arithmetic are
// read here (under their GPT-2 names: n_embd, n_layer, n_head, n_inner, n_positions)
// or refused when they differ from the released models'.
type NomicBERTConfig struct {
	// Activation is activation_function: "swiglu" (the released models'), "geglu" or
	// "glu", a gated MLP fc2(fc11(x) · act(fc12(x))) with act SiLU, GELU or sigmoid; or
	// "gelu", a plain one fc2(GELU(fc1(x))). GELU is the exact one (erf), as the
	// remote code passes F.gelu; it does so for gelu_new, gelu_fast and
	// gelu_pytorch_tanh too, which are read as "gelu".
	Activation string `json:"activation"`
	// QKVBias is qkv_proj_bias (default true), for Wqkv and out_proj; FC1Bias and
	// FC2Bias are mlp_fc1_bias and mlp_fc2_bias (default true), for fc11/fc12 (fc1)
	// and fc2. The released embedders have none.
	QKVBias bool `json:"qkv_bias,omitempty"`
	FC1Bias bool `json:"fc1_bias,omitempty"`
	FC2Bias bool `json:"fc2_bias,omitempty"`
	// RotaryBase is rotary_emb_base (default 10,000; 1,000 in nomic-embed-text-v1.5).
	// rotary_emb_fraction must be 1: every dimension of a head is rotated, its halves
	// as pairs (rotate_half, rotary_emb_interleaved false).
	RotaryBase float64 `json:"rotary_base"`
	// MoEEvery, Experts and TopK are nomic-embed-text-v2-moe's mixture of experts
	// (moe_every_n_layers, num_experts, moe_top_k; 0 for none): layer i has, when
	// i mod MoEEvery is 1, instead of its MLP a router (a linear layer without bias,
	// softmax over the experts in float32) whose TopK largest probabilities, not
	// renormalised, weigh their experts' GELU MLPs (w1, w2 without bias, n_inner
	// wide), plus one bias shared by the layer's experts (NomicMoELayer).
	MoEEvery int `json:"moe_every,omitempty"`
	Experts  int `json:"experts,omitempty"`
	TopK     int `json:"top_k,omitempty"`
}

// moe reports whether layer i is a mixture of experts.
func (c NomicBERTConfig) moe(i int) bool { return c.MoEEvery > 0 && i%c.MoEEvery == 1 }

// nomicGatedMultiple is what the gated MLP rounds its hidden size up to
// (NomciBertGatedMLP's multiple_of).
const nomicGatedMultiple = 256

// rawNomicBERT is a NomicBertModel's config.json: GPT-2's names for the sizes
// (GPT2Config's defaults where absent) and Nomic's own fields.
type rawNomicBERT struct {
	VocabSize      *int            `json:"vocab_size"`
	NEmbd          *int            `json:"n_embd"`
	NLayer         *int            `json:"n_layer"`
	NHead          *int            `json:"n_head"`
	NInner         *int            `json:"n_inner"`
	NPositions     *int            `json:"n_positions"`
	LayerNormEps   *float64        `json:"layer_norm_epsilon"`
	Activation     *string         `json:"activation_function"`
	TypeVocabSize  *int            `json:"type_vocab_size"`
	PadMultiple    *int            `json:"pad_vocab_size_multiple"`
	QKVBias        *bool           `json:"qkv_proj_bias"`
	FC1Bias        *bool           `json:"mlp_fc1_bias"`
	FC2Bias        *bool           `json:"mlp_fc2_bias"`
	RotaryFraction *float64        `json:"rotary_emb_fraction"`
	RotaryBase     *float64        `json:"rotary_emb_base"`
	RotaryScale    json.RawMessage `json:"rotary_emb_scale_base"`
	Interleaved    bool            `json:"rotary_emb_interleaved"`
	ScalingFactor  json.RawMessage `json:"rotary_scaling_factor"`
	MaxTrained     *int            `json:"max_trained_positions"`
	RotaryHeadDim  bool            `json:"rotary_head_dim"`
	Prenorm        bool            `json:"prenorm"`
	ParallelBlock  bool            `json:"parallel_block"`
	RMSNorm        bool            `json:"use_rms_norm"`
	Causal         bool            `json:"causal"`
	NumHeadsKV     *int            `json:"num_heads_kv"`
	MoEEvery       int             `json:"moe_every_n_layers"`
	TopK           *int            `json:"moe_top_k"`
	ExpertChoice   bool            `json:"expert_choice_router"`
	NormalizeTopK  json.RawMessage `json:"moe_normalize_expert_weights"` // megablocks: a p-norm, or null / false
	FFNDiv         *float64        `json:"ffn_div"`
	SharedExperts  int             `json:"num_shared_experts"`
	NormMLP        bool            `json:"norm_mlp"`
	NumExperts     int             `json:"num_experts"`
}

// parseNomicBERT reads a NomicBertModel's config.json (data) into c: the sizes,
// including the word table's rows (vocab_size rounded up to pad_vocab_size_multiple)
// and the MLP's width (the gated MLP rounds n_inner, or 8/3 of n_embd, up to a
// multiple of 256), and NomicBERTConfig. Settings of the remote code that would
// change the arithmetic and are not implemented are errors naming the field.
func parseNomicBERT(data []byte, c *Config) error {
	var r rawNomicBERT
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	or := func(p *int, d int) int {
		if p == nil {
			return d
		}
		return *p
	}
	// GPT2Config's defaults.
	c.VocabSize, c.Hidden, c.Layers, c.Heads = or(r.VocabSize, 50257), or(r.NEmbd, 768), or(r.NLayer, 12), or(r.NHead, 12)
	c.MaxPositions, c.TypeVocabSize, c.LayerNormEps = or(r.NPositions, 1024), or(r.TypeVocabSize, 2), 1e-5
	if r.LayerNormEps != nil {
		c.LayerNormEps = *r.LayerNormEps
	}
	if m := or(r.PadMultiple, 1); m > 1 {
		c.VocabSize = (c.VocabSize + m - 1) / m * m
	}
	nc := NomicBERTConfig{Activation: "gelu_new", QKVBias: true, FC1Bias: true, FC2Bias: true, RotaryBase: 10_000}
	if r.Activation != nil {
		nc.Activation = *r.Activation
	}
	for _, f := range []struct{ from, to *bool }{{r.QKVBias, &nc.QKVBias}, {r.FC1Bias, &nc.FC1Bias}, {r.FC2Bias, &nc.FC2Bias}} {
		if f.from != nil {
			*f.to = *f.from
		}
	}
	if r.RotaryBase != nil {
		nc.RotaryBase = *r.RotaryBase
	}
	switch nc.Activation {
	case "swiglu", "geglu", "glu":
		inner := c.Hidden * 8 / 3
		if r.NInner != nil {
			inner = *r.NInner
		}
		c.Intermediate = (inner + nomicGatedMultiple - 1) / nomicGatedMultiple * nomicGatedMultiple
	case "gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh":
		// NomicBertBlock hands the plain MLP F.gelu for each of these names: the exact
		// GELU, whatever the name says (GPT2Config's default is gelu_new).
		nc.Activation = "gelu"
		c.Intermediate = or(r.NInner, 4*c.Hidden)
	default:
		return fmt.Errorf("config: activation_function %q not supported (want swiglu, geglu, glu, or gelu and the gelu_* names, which the remote code runs as exact GELU)", nc.Activation)
	}
	fr := 0.0 // NomicBertConfig's default
	if r.RotaryFraction != nil {
		fr = *r.RotaryFraction
	}
	if fr != 1 {
		return fmt.Errorf("config: rotary_emb_fraction %g: only NomicBERT with every head dimension rotated (1, as the released models) is supported", fr)
	}
	if !(nc.RotaryBase > 0) {
		return fmt.Errorf("config: rotary_emb_base %g must be positive", nc.RotaryBase)
	}
	if len(r.ScalingFactor) > 0 && string(r.ScalingFactor) != "null" {
		// NomicBertDynamicNTKRotaryEmbedding changes the base only for batches longer
		// than max_trained_positions (and then by the padded length): below, it is the
		// plain rotation, so sequences are kept to that length.
		c.MaxPositions = min(c.MaxPositions, or(r.MaxTrained, 2048))
	}
	for _, f := range []struct {
		set  bool
		what string
	}{
		{len(r.RotaryScale) > 0 && string(r.RotaryScale) != "null", "rotary_emb_scale_base (xPos)"},
		{r.Interleaved, "rotary_emb_interleaved (GPT-J pairs)"},
		{r.RotaryHeadDim, "rotary_head_dim"},
		{r.Prenorm, "prenorm"},
		{r.ParallelBlock, "parallel_block"},
		{r.RMSNorm, "use_rms_norm"},
		{r.Causal, "causal"},
		{r.NumHeadsKV != nil && *r.NumHeadsKV != c.Heads, "num_heads_kv"},
		{r.NormMLP, "norm_mlp (a LayerNorm inside the gated MLP)"},
		{r.ExpertChoice, "expert_choice_router"},
		{len(r.NormalizeTopK) > 0 && !slices.Contains([]string{"null", "false"}, string(r.NormalizeTopK)), "moe_normalize_expert_weights (renormalised top-k weights)"},
		{r.FFNDiv != nil && *r.FFNDiv != 1, "ffn_div (experts narrower than n_inner)"},
		{r.SharedExperts > 0, "num_shared_experts"},
	} {
		if f.set {
			return fmt.Errorf("config: %s: only the post-norm NomicBERT of nomic-embed-text-v1 / v1.5 / v2-moe is supported", f.what)
		}
	}
	if r.MoEEvery > 0 {
		if r.TopK == nil {
			return fmt.Errorf("config: moe_every_n_layers %d without moe_top_k", r.MoEEvery)
		}
		nc.MoEEvery, nc.Experts, nc.TopK = r.MoEEvery, r.NumExperts, *r.TopK
		switch {
		case nc.Activation != "gelu":
			return fmt.Errorf("config: activation_function %q with experts: only GELU experts (nomic-embed-text-v2-moe's) are supported", nc.Activation)
		case nc.Experts < 1 || nc.TopK < 1 || nc.TopK > nc.Experts:
			return fmt.Errorf("config: num_experts %d, moe_top_k %d: want 1 ≤ moe_top_k ≤ num_experts", nc.Experts, nc.TopK)
		}
	}
	c.NomicBERT = nc
	if c.Heads > 0 && (c.Hidden/c.Heads)%2 != 0 {
		return fmt.Errorf("config: head size %d is odd: rotary positions rotate pairs", c.Hidden/c.Heads)
	}
	return nil
}
