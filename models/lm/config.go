package lm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Config is the architecture read from a Hugging Face config.json.
type Config struct {
	ModelType         string  `json:"model_type"` // "llama" or "qwen2"
	VocabSize         int     `json:"vocab_size"`
	Hidden            int     `json:"hidden_size"`
	Intermediate      int     `json:"intermediate_size"`
	Layers            int     `json:"num_hidden_layers"`
	Heads             int     `json:"num_attention_heads"`
	KVHeads           int     `json:"num_key_value_heads"` // 0 in the file means Heads
	HeadDim           int     `json:"head_dim"`            // 0 in the file means Hidden/Heads
	RMSNormEps        float64 `json:"rms_norm_eps"`
	RopeTheta         float64 `json:"rope_theta"`          // default 10000
	RopeScalingFactor float64 `json:"rope_scaling_factor"` // linear scaling; 0 or 1 = none
	TieEmbeddings     bool    `json:"tie_word_embeddings"` // LM head = embedding table
	AttentionBias     bool    `json:"attention_bias"`      // q/k/v/o biases (Llama); Qwen2: q/k/v only
	QKVBias           bool    `json:"qkv_bias"`            // q/k/v biases (always for Qwen2)
	BOS               int     `json:"bos_token_id"`        // -1 when absent
	EOS               []int   `json:"eos_token_ids"`       // one or several end-of-sequence ids
	MaxPositions      int     `json:"max_position_embeddings"`
}

// rawConfig is config.json as Hugging Face writes it.
type rawConfig struct {
	ModelType     string          `json:"model_type"`
	Architectures []string        `json:"architectures"`
	VocabSize     int             `json:"vocab_size"`
	Hidden        int             `json:"hidden_size"`
	Intermediate  int             `json:"intermediate_size"`
	Layers        int             `json:"num_hidden_layers"`
	Heads         int             `json:"num_attention_heads"`
	KVHeads       int             `json:"num_key_value_heads"`
	HeadDim       int             `json:"head_dim"`
	RMSNormEps    float64         `json:"rms_norm_eps"`
	RopeTheta     float64         `json:"rope_theta"`
	RopeScaling   map[string]any  `json:"rope_scaling"`
	TieEmbeddings *bool           `json:"tie_word_embeddings"`
	AttentionBias bool            `json:"attention_bias"`
	MLPBias       bool            `json:"mlp_bias"`
	HiddenAct     string          `json:"hidden_act"`
	BOS           *int            `json:"bos_token_id"`
	EOS           json.RawMessage `json:"eos_token_id"`
	MaxPositions  int             `json:"max_position_embeddings"`
	UseSlidingWin bool            `json:"use_sliding_window"`
	PretrainingTP int             `json:"pretraining_tp"`
	PartialRotary *float64        `json:"partial_rotary_factor"`
}

// ReadConfig reads dir/config.json. Only the Llama family (model_type "llama") and
// Qwen2 ("qwen2") are supported; RoPE scaling must be absent, "default" or "linear".
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

// ParseConfig decodes the contents of a config.json.
func ParseConfig(data []byte) (Config, error) {
	var r rawConfig
	if err := json.Unmarshal(data, &r); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	c := Config{
		ModelType: r.ModelType, VocabSize: r.VocabSize, Hidden: r.Hidden, Intermediate: r.Intermediate,
		Layers: r.Layers, Heads: r.Heads, KVHeads: r.KVHeads, HeadDim: r.HeadDim, RMSNormEps: r.RMSNormEps,
		RopeTheta: r.RopeTheta, AttentionBias: r.AttentionBias, BOS: -1, MaxPositions: r.MaxPositions,
	}
	switch r.ModelType {
	case "llama":
		c.QKVBias = r.AttentionBias
		c.TieEmbeddings = r.TieEmbeddings != nil && *r.TieEmbeddings
	case "qwen2":
		c.QKVBias = true
		c.AttentionBias = false
		c.TieEmbeddings = r.TieEmbeddings != nil && *r.TieEmbeddings
		if r.UseSlidingWin {
			return Config{}, errors.New("config: qwen2 use_sliding_window=true is not supported")
		}
	case "":
		return Config{}, errors.New("config: model_type missing (want llama or qwen2)")
	default:
		return Config{}, fmt.Errorf("config: model_type %q not supported (want llama or qwen2)", r.ModelType)
	}
	if r.MLPBias {
		return Config{}, errors.New("config: mlp_bias=true is not supported")
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
	if c.RopeTheta == 0 {
		c.RopeTheta = 10000
	}
	if c.RMSNormEps == 0 {
		c.RMSNormEps = 1e-6
	}
	if r.RopeScaling != nil {
		kind, _ := r.RopeScaling["rope_type"].(string)
		if kind == "" {
			kind, _ = r.RopeScaling["type"].(string)
		}
		switch kind {
		case "default":
		case "linear":
			f, ok := r.RopeScaling["factor"].(float64)
			if !ok || !(f > 0) {
				return Config{}, fmt.Errorf("config: linear rope_scaling needs a positive factor, got %v", r.RopeScaling["factor"])
			}
			c.RopeScalingFactor = f
		default:
			return Config{}, fmt.Errorf("config: rope_scaling type %q not supported (only linear scaling)", kind)
		}
	}
	if r.BOS != nil {
		c.BOS = *r.BOS
	}
	if len(r.EOS) > 0 && string(r.EOS) != "null" {
		var one int
		if err := json.Unmarshal(r.EOS, &one); err == nil {
			c.EOS = []int{one}
		} else if err := json.Unmarshal(r.EOS, &c.EOS); err != nil {
			return Config{}, fmt.Errorf("config: eos_token_id %s: want an id or a list of ids", r.EOS)
		}
	}
	return c, c.Validate()
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
	}
	return nil
}
