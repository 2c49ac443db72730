package lm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Config is the architecture read from a Hugging Face config.json, as transformers
// 5 reads it for LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM and
// Qwen3ForCausalLM.
type Config struct {
	ModelType     string  `json:"model_type"` // "llama", "mistral", "qwen2" or "qwen3"
	VocabSize     int     `json:"vocab_size"`
	Hidden        int     `json:"hidden_size"`
	Intermediate  int     `json:"intermediate_size"`
	Layers        int     `json:"num_hidden_layers"`
	Heads         int     `json:"num_attention_heads"`
	KVHeads       int     `json:"num_key_value_heads"` // 0 in the file means Heads
	HeadDim       int     `json:"head_dim"`            // 0 in the file means Hidden/Heads
	RMSNormEps    float64 `json:"rms_norm_eps"`
	RopeTheta     float64 `json:"rope_theta"` // default 10000; inside rope_parameters in transformers 5 files
	Rope          Rope    `json:"rope"`
	TieEmbeddings bool    `json:"tie_word_embeddings"` // LM head = embedding table
	AttentionBias bool    `json:"attention_bias"`      // o_proj bias (Llama attention_bias)
	QKVBias       bool    `json:"qkv_bias"`            // q/k/v biases (Llama attention_bias; always for Qwen2)
	MLPBias       bool    `json:"mlp_bias"`            // gate/up/down biases (Llama mlp_bias)
	QKNorm        bool    `json:"qk_norm"`             // per-head RMSNorm of q and k before RoPE (Qwen3)
	SlidingWindow int     `json:"sliding_window"`      // Mistral: a query sees the last SlidingWindow keys; 0 = all
	BOS           int     `json:"bos_token_id"`        // -1 when absent
	EOS           []int   `json:"eos_token_ids"`       // one or several end-of-sequence ids
	MaxPositions  int     `json:"max_position_embeddings"`
	DType         string  `json:"dtype"` // the stored dtype the file declares (torch_dtype / dtype); informative
}

// Rope is the rotary embedding's scaling, from rope_scaling (transformers 4) or
// rope_parameters (transformers 5), computed as transformers' modeling_rope_utils
// does.
type Rope struct {
	Type            string  `json:"rope_type"` // default, linear, dynamic, llama3, yarn
	Factor          float64 `json:"factor,omitempty"`
	LowFreqFactor   float64 `json:"low_freq_factor,omitempty"`                  // llama3
	HighFreqFactor  float64 `json:"high_freq_factor,omitempty"`                 // llama3
	OriginalMax     int     `json:"original_max_position_embeddings,omitempty"` // llama3, yarn
	AttentionFactor float64 `json:"attention_factor,omitempty"`                 // yarn: cos/sin scale (computed when absent)
	BetaFast        float64 `json:"beta_fast,omitempty"`                        // yarn, default 32
	BetaSlow        float64 `json:"beta_slow,omitempty"`                        // yarn, default 1
	NoTruncate      bool    `json:"no_truncate,omitempty"`                      // yarn truncate=false
}

// rawConfig is config.json as Hugging Face writes it.
type rawConfig struct {
	ModelType      string          `json:"model_type"`
	Architectures  []string        `json:"architectures"`
	VocabSize      int             `json:"vocab_size"`
	Hidden         int             `json:"hidden_size"`
	Intermediate   int             `json:"intermediate_size"`
	Layers         int             `json:"num_hidden_layers"`
	Heads          int             `json:"num_attention_heads"`
	KVHeads        int             `json:"num_key_value_heads"`
	HeadDim        *int            `json:"head_dim"`
	RMSNormEps     float64         `json:"rms_norm_eps"`
	RopeTheta      float64         `json:"rope_theta"`
	RopeScaling    map[string]any  `json:"rope_scaling"`
	RopeParameters map[string]any  `json:"rope_parameters"`
	TieEmbeddings  *bool           `json:"tie_word_embeddings"`
	AttentionBias  bool            `json:"attention_bias"`
	MLPBias        bool            `json:"mlp_bias"`
	HiddenAct      string          `json:"hidden_act"`
	BOS            *int            `json:"bos_token_id"`
	EOS            json.RawMessage `json:"eos_token_id"`
	MaxPositions   int             `json:"max_position_embeddings"`
	UseSlidingWin  bool            `json:"use_sliding_window"`
	SlidingWindow  *int            `json:"sliding_window"`
	PretrainingTP  int             `json:"pretraining_tp"`
	PartialRotary  *float64        `json:"partial_rotary_factor"`
	Quantization   map[string]any  `json:"quantization_config"`
	TorchDType     string          `json:"torch_dtype"`
	DType          string          `json:"dtype"`
}

// ReadConfig reads dir/config.json.
func ReadConfig(dir string) (Config, error) {
	if err := checkDir(dir); err != nil {
		return Config{}, err
	}
	path := filepath.Join(dir, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Config{}, fmt.Errorf("lm: %s not found: a Hugging Face model directory needs config.json, *.safetensors and tokenizer.json", path)
		}
		return Config{}, fmt.Errorf("lm: reading %s: %w", path, err)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return Config{}, fmt.Errorf("lm: %s: %w", path, err)
	}
	return cfg, nil
}

// checkDir checks that dir is an existing directory.
func checkDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("lm: model directory %s not found: want a local Hugging Face directory with config.json, *.safetensors and tokenizer.json (weights are never downloaded)", dir)
		}
		return fmt.Errorf("lm: model directory %s: %w", dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("lm: %s is not a directory: want a local Hugging Face directory with config.json, *.safetensors and tokenizer.json", dir)
	}
	return nil
}

// SupportedModelTypes lists the model_type values ParseConfig accepts.
var supportedModelTypes = []string{"llama", "mistral", "qwen2", "qwen3"}

// ParseConfig decodes the contents of a config.json. Fields that change the
// arithmetic and are not implemented are errors naming the field.
func ParseConfig(data []byte) (Config, error) {
	var r rawConfig
	if err := json.Unmarshal(data, &r); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	c := Config{
		ModelType: r.ModelType, VocabSize: r.VocabSize, Hidden: r.Hidden, Intermediate: r.Intermediate,
		Layers: r.Layers, Heads: r.Heads, KVHeads: r.KVHeads, RMSNormEps: r.RMSNormEps,
		RopeTheta: r.RopeTheta, BOS: -1, MaxPositions: r.MaxPositions, MLPBias: r.MLPBias,
		TieEmbeddings: r.TieEmbeddings != nil && *r.TieEmbeddings, DType: r.DType,
	}
	if c.DType == "" {
		c.DType = r.TorchDType
	}
	if r.HeadDim != nil {
		c.HeadDim = *r.HeadDim
	}
	if r.Quantization != nil {
		method, _ := r.Quantization["quant_method"].(string)
		return Config{}, fmt.Errorf("config: quantization_config (quant_method %q) present: quantised checkpoints (GPTQ, AWQ, bitsandbytes, …) are not supported; use the unquantised bf16/f16/f32 weights", method)
	}
	switch r.ModelType {
	case "llama":
		c.QKVBias, c.AttentionBias = r.AttentionBias, r.AttentionBias
	case "mistral":
		if r.AttentionBias || r.MLPBias {
			return Config{}, errors.New("config: mistral has no attention_bias / mlp_bias")
		}
		if r.SlidingWindow != nil {
			c.SlidingWindow = *r.SlidingWindow
		}
	case "qwen2", "qwen3":
		if r.ModelType == "qwen2" {
			c.QKVBias = true
		} else {
			c.QKVBias, c.AttentionBias = r.AttentionBias, r.AttentionBias
			c.QKNorm = true
		}
		if r.MLPBias {
			return Config{}, fmt.Errorf("config: %s has no mlp_bias", r.ModelType)
		}
		if r.UseSlidingWin {
			return Config{}, fmt.Errorf("config: %s use_sliding_window=true is not supported (per-layer sliding windows)", r.ModelType)
		}
	case "":
		return Config{}, fmt.Errorf("config: model_type missing (want one of %s)", strings.Join(supportedModelTypes, ", "))
	default:
		return Config{}, fmt.Errorf("config: model_type %q (architectures %v) not supported (want one of %s)", r.ModelType, r.Architectures, strings.Join(supportedModelTypes, ", "))
	}
	if r.HiddenAct != "" && r.HiddenAct != "silu" {
		return Config{}, fmt.Errorf("config: hidden_act %q not supported (want silu)", r.HiddenAct)
	}
	if r.PretrainingTP > 1 {
		return Config{}, fmt.Errorf("config: pretraining_tp %d not supported", r.PretrainingTP)
	}
	if r.PartialRotary != nil && *r.PartialRotary != 1 {
		return Config{}, fmt.Errorf("config: partial_rotary_factor %g not supported", *r.PartialRotary)
	}
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads
	}
	if c.HeadDim == 0 && c.Heads > 0 {
		c.HeadDim = c.Hidden / c.Heads
	}
	if c.RMSNormEps == 0 {
		c.RMSNormEps = 1e-6
	}
	rp := r.RopeScaling
	field := "rope_scaling"
	if r.RopeParameters != nil { // transformers 5: rope_theta lives inside
		rp, field = r.RopeParameters, "rope_parameters"
		if th, ok := rp["rope_theta"]; ok {
			f, ok := th.(float64)
			if !ok {
				return Config{}, fmt.Errorf("config: rope_parameters.rope_theta %v: want a number", th)
			}
			c.RopeTheta = f
		}
	}
	if c.RopeTheta == 0 {
		c.RopeTheta = 10000
	}
	rope, err := parseRope(rp, field)
	if err != nil {
		return Config{}, err
	}
	c.Rope = rope
	if r.BOS != nil {
		c.BOS = *r.BOS
	}
	if len(r.EOS) > 0 && string(r.EOS) != "null" {
		ids, err := parseIDs(r.EOS)
		if err != nil {
			return Config{}, fmt.Errorf("config: eos_token_id %s: %w", r.EOS, err)
		}
		c.EOS = ids
	}
	return c, c.Validate()
}

// parseIDs reads an id or a list of ids.
func parseIDs(raw json.RawMessage) ([]int, error) {
	var one int
	if err := json.Unmarshal(raw, &one); err == nil {
		return []int{one}, nil
	}
	var ids []int
	if err := json.Unmarshal(raw, &ids); err != nil {
		return nil, errors.New("want an id or a list of ids")
	}
	return ids, nil
}

// parseRope reads rope_scaling / rope_parameters (nil = default RoPE).
func parseRope(m map[string]any, field string) (Rope, error) {
	r := Rope{Type: "default"}
	if m == nil {
		return r, nil
	}
	kind, _ := m["rope_type"].(string)
	if kind == "" {
		kind, _ = m["type"].(string)
	}
	if kind == "" {
		kind = "default"
	}
	num := func(key string, required bool) (float64, error) {
		v, ok := m[key]
		if !ok || v == nil {
			if required {
				return 0, fmt.Errorf("config: %s.%s missing (rope_type %q needs it)", field, key, kind)
			}
			return 0, nil
		}
		f, ok := v.(float64)
		if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, fmt.Errorf("config: %s.%s = %v: want a number", field, key, v)
		}
		return f, nil
	}
	var err error
	pos := func(key string, required bool) float64 {
		if err != nil {
			return 0
		}
		var f float64
		if f, err = num(key, required); err == nil && (required || f != 0) && !(f > 0) {
			err = fmt.Errorf("config: %s.%s = %g: want a positive number", field, key, f)
		}
		return f
	}
	r.Type = kind
	switch kind {
	case "default":
	case "linear", "dynamic":
		r.Factor = pos("factor", true)
	case "llama3":
		r.Factor = pos("factor", true)
		r.LowFreqFactor = pos("low_freq_factor", true)
		r.HighFreqFactor = pos("high_freq_factor", true)
		r.OriginalMax = int(pos("original_max_position_embeddings", true))
		if err == nil && !(r.HighFreqFactor > r.LowFreqFactor) {
			err = fmt.Errorf("config: %s: high_freq_factor %g must exceed low_freq_factor %g", field, r.HighFreqFactor, r.LowFreqFactor)
		}
	case "yarn":
		r.Factor = pos("factor", false)
		r.OriginalMax = int(pos("original_max_position_embeddings", false))
		r.AttentionFactor = pos("attention_factor", false)
		r.BetaFast = pos("beta_fast", false)
		r.BetaSlow = pos("beta_slow", false)
		if err == nil {
			if ms, _ := num("mscale", false); ms != 0 {
				if msa, _ := num("mscale_all_dim", false); msa != 0 {
					err = fmt.Errorf("config: %s: yarn mscale / mscale_all_dim (DeepSeek-style) not supported", field)
				}
			}
		}
		if t, ok := m["truncate"].(bool); ok && !t {
			r.NoTruncate = true
		}
	default:
		return Rope{}, fmt.Errorf("config: %s rope_type %q not supported (want default, linear, dynamic, llama3 or yarn)", field, kind)
	}
	if err != nil {
		return Rope{}, err
	}
	known := map[string]bool{"rope_type": true, "type": true, "rope_theta": true, "factor": true, "low_freq_factor": true,
		"high_freq_factor": true, "original_max_position_embeddings": true, "attention_factor": true, "beta_fast": true,
		"beta_slow": true, "mscale": true, "mscale_all_dim": true, "truncate": true}
	var unknown []string
	for k := range m {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return Rope{}, fmt.Errorf("config: %s has fields %v that graphloom does not implement", field, unknown)
	}
	return r, nil
}

// Validate checks the sizes.
func (c Config) Validate() error {
	switch {
	case c.VocabSize < 1 || c.Hidden < 1 || c.Intermediate < 1 || c.Layers < 1 || c.Heads < 1 || c.KVHeads < 1 || c.HeadDim < 1:
		return fmt.Errorf("config: invalid sizes (vocab %d, hidden %d, intermediate %d, layers %d, heads %d, kv heads %d, head dim %d)",
			c.VocabSize, c.Hidden, c.Intermediate, c.Layers, c.Heads, c.KVHeads, c.HeadDim)
	case c.Heads%c.KVHeads != 0:
		return fmt.Errorf("config: num_attention_heads %d not a multiple of num_key_value_heads %d", c.Heads, c.KVHeads)
	case c.HeadDim%2 != 0:
		return fmt.Errorf("config: head dimension %d must be even for RoPE", c.HeadDim)
	case !(c.RMSNormEps > 0) || !(c.RopeTheta > 0):
		return errors.New("config: rms_norm_eps and rope_theta must be positive")
	case c.SlidingWindow < 0:
		return fmt.Errorf("config: sliding_window %d must be ≥ 0", c.SlidingWindow)
	case (c.Rope.Type == "dynamic" || c.Rope.Type == "yarn" && c.Rope.Factor == 0) && c.MaxPositions < 1:
		return fmt.Errorf("config: rope_type %s needs max_position_embeddings", c.Rope.Type)
	}
	return nil
}

// Context returns the most positions a sequence may hold, 0 for no bound (a config
// without max_position_embeddings, or dynamic RoPE, which exists to run past it).
// Linear and YaRN scaling stretch the context they were fitted on by their factor:
// original_max_position_embeddings × factor (max_position_embeddings × factor when
// the original is not given), never less than max_position_embeddings. Qwen's YaRN
// recipe keeps max_position_embeddings at 32,768 and sets factor 4 for 131,072.
// transformers bounds nothing. A linear-scaled config that already stores the
// stretched length in max_position_embeddings (some do) is allowed factor times more
// than it was made for: without original_max_position_embeddings the two
// conventions cannot be told apart, and refusing a length transformers runs would be
// the worse error.
func (c Config) Context() int {
	if c.MaxPositions <= 0 || c.Rope.Type == "dynamic" {
		return 0
	}
	if (c.Rope.Type == "linear" || c.Rope.Type == "yarn") && c.Rope.Factor > 1 {
		base := c.MaxPositions
		if c.Rope.OriginalMax > 0 {
			base = c.Rope.OriginalMax
		}
		return max(c.MaxPositions, int(float64(base)*c.Rope.Factor))
	}
	return c.MaxPositions
}

// CheckLength reports whether a sequence of n positions fits the model's context
// (Context).
func (c Config) CheckLength(n int) error {
	if limit := c.Context(); limit > 0 && n > limit {
		if limit != c.MaxPositions {
			return fmt.Errorf("lm: %d positions exceed the %d of this %s model (%s RoPE scaling by %g)", n, limit, c.ModelType, c.Rope.Type, c.Rope.Factor)
		}
		return fmt.Errorf("lm: %d positions exceed max_position_embeddings %d of this %s model", n, c.MaxPositions, c.ModelType)
	}
	return nil
}

// InvFreq returns RoPE's inverse frequencies [HeadDim/2] and the cos/sin scale
// (attention_factor) for a call whose largest position is maxPos, as transformers'
// ROPE_INIT_FUNCTIONS compute them (in float64; transformers computes in float32).
// Only "dynamic" depends on maxPos: past max_position_embeddings its base grows
// with the sequence length, recomputed per call as transformers' dynamic_rope_update
// does.
func (c Config) InvFreq(maxPos int) ([]float64, float64) {
	d := c.HeadDim
	base := c.RopeTheta
	r := c.Rope
	if r.Type == "dynamic" {
		seq := float64(maxPos + 1)
		if mp := float64(c.MaxPositions); seq > mp {
			base *= math.Pow(r.Factor*seq/mp-(r.Factor-1), float64(d)/float64(d-2))
		}
	}
	inv := make([]float64, d/2)
	for i := range inv {
		inv[i] = 1 / math.Pow(base, float64(2*i)/float64(d))
	}
	attn := 1.0
	switch r.Type {
	case "linear":
		for i := range inv {
			inv[i] /= r.Factor
		}
	case "llama3":
		lowWave := float64(r.OriginalMax) / r.LowFreqFactor
		highWave := float64(r.OriginalMax) / r.HighFreqFactor
		for i, f := range inv {
			wave := 2 * math.Pi / f
			scaled := f
			if wave > lowWave {
				scaled = f / r.Factor
			}
			if !(wave < highWave) && !(wave > lowWave) {
				smooth := (float64(r.OriginalMax)/wave - r.LowFreqFactor) / (r.HighFreqFactor - r.LowFreqFactor)
				scaled = (1-smooth)*scaled/r.Factor + smooth*scaled
			}
			inv[i] = scaled
		}
	case "yarn":
		factor, orig := r.yarnFactor(c.MaxPositions)
		attn = r.AttentionFactor
		if attn == 0 {
			attn = 1
			if factor > 1 {
				attn = 0.1*math.Log(factor) + 1
			}
		}
		fast, slow := r.BetaFast, r.BetaSlow
		if fast == 0 {
			fast = 32
		}
		if slow == 0 {
			slow = 1
		}
		corr := func(rot float64) float64 {
			return float64(d) * math.Log(float64(orig)/(rot*2*math.Pi)) / (2 * math.Log(base))
		}
		low, high := corr(fast), corr(slow)
		if !r.NoTruncate {
			low, high = math.Floor(low), math.Ceil(high)
		}
		low, high = math.Max(low, 0), math.Min(high, float64(d-1))
		if low == high {
			high += 0.001
		}
		for i, f := range inv {
			ramp := math.Min(math.Max((float64(i)-low)/(high-low), 0), 1)
			extra := 1 - ramp // extrapolation weight
			inv[i] = f/factor*(1-extra) + f*extra
		}
	}
	return inv, attn
}

// yarnFactor returns YaRN's scaling factor and original context: the explicit
// factor, else max_position_embeddings / original_max_position_embeddings
// (transformers 5); the original context defaults to max_position_embeddings.
func (r Rope) yarnFactor(maxPositions int) (factor float64, orig int) {
	orig = r.OriginalMax
	if orig == 0 {
		orig = maxPositions
	}
	factor = r.Factor
	if factor == 0 {
		factor = float64(maxPositions) / float64(orig)
	}
	return factor, orig
}
