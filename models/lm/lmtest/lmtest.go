// Package lmtest writes tiny random Hugging Face model directories (config.json,
// safetensors weights, tokenizer.json) for tests and benchmarks of package lm and of
// the models built on it. Nothing here is a trained model.
package lmtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/nlpodyssey/safetensors"
)

// Spec describes a tiny model.
type Spec struct {
	ModelType    string  // "llama" (default), "mistral", "qwen2" (q/k/v biases) or "qwen3" (q/k norms)
	Layers       int     // default 2
	Hidden       int     // default 64
	Heads        int     // default 4
	KVHeads      int     // default 2
	Intermediate int     // default 128
	Tied         bool    // tie_word_embeddings
	Shards       int     // 0/1: model.safetensors; 2+: shards + model.safetensors.index.json
	BF16         bool    // store weights as bf16 (the values returned are the rounded ones)
	RopeTheta    float64 // default 10000
	RopeLinear   float64 // linear rope_scaling factor; 0 = none
	// Rope is written as rope_scaling (or, with RopeParameters, as transformers 5's
	// rope_parameters with rope_theta inside); it overrides RopeLinear.
	Rope           map[string]any
	RopeParameters bool
	HeadDim        int  // explicit head_dim (Qwen3: ≠ Hidden/Heads); 0 = Hidden/Heads, not written
	AttnBias       bool // llama attention_bias (q/k/v/o biases)
	MLPBias        bool // llama mlp_bias
	SlidingWindow  int  // mistral sliding_window; 0 = null
	MaxPositions   int  // max_position_embeddings; default 2048
	Seed           uint64
	// TokenizerDir, when set, is a directory whose tokenizer.json (and
	// tokenizer_config.json, generation_config.json when present) are copied in place
	// of the tiny tokenizer: a real tokenizer over random weights. Vocab, BOS and EOS
	// must then be given (BOS -1 for none).
	TokenizerDir string
	Vocab        int
	BOSID, EOSID int
	// Bare saves the decoder alone, as its base model (a Qwen3Model: the layout of
	// Qwen3-Embedding's checkpoints): tensors named without "model." and, untied, no
	// lm_head.weight. Model.Weights keeps the causal LM's names.
	Bare bool
}

// Tensor is one weight as written (after any bf16 rounding), row-major.
type Tensor struct {
	Shape []int
	Data  []float32
}

// Model is what Write wrote.
type Model struct {
	Spec    Spec
	Vocab   int
	BOS     int
	EOS     int
	Weights map[string]Tensor
}

func (s Spec) withDefaults() Spec {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if s.ModelType == "" {
		s.ModelType = "llama"
	}
	def(&s.Layers, 2)
	def(&s.Hidden, 64)
	def(&s.Heads, 4)
	def(&s.KVHeads, 2)
	def(&s.Intermediate, 128)
	if s.RopeTheta == 0 {
		s.RopeTheta = 10000
	}
	def(&s.MaxPositions, 2048)
	return s
}

// Write writes a tiny random model with the byte-level BPE tokenizer of
// TokenizerJSON into dir (created if needed).
func Write(dir string, spec Spec) (*Model, error) {
	s := spec.withDefaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	vocab, bos, eos := TokenizerVocab()
	if s.TokenizerDir != "" {
		if s.Vocab < 1 {
			return nil, fmt.Errorf("lmtest: a TokenizerDir needs Vocab")
		}
		vocab, bos, eos = s.Vocab, s.BOSID, s.EOSID
	} else if s.Vocab > 0 {
		if s.Vocab < vocab {
			return nil, fmt.Errorf("lmtest: Vocab %d is below the tiny tokenizer's %d ids", s.Vocab, vocab)
		}
		vocab = s.Vocab // a real vocabulary size over the tiny tokenizer (its ids are the first)
	}
	m := &Model{Spec: s, Vocab: vocab, BOS: bos, EOS: eos, Weights: map[string]Tensor{}}
	rng := rand.New(rand.NewPCG(s.Seed, s.Seed+17))
	hd := s.Hidden / s.Heads
	if s.HeadDim > 0 {
		hd = s.HeadDim
	}
	var order []string
	add := func(name string, std, mean float64, dims ...int) {
		n := 1
		for _, d := range dims {
			n *= d
		}
		data := make([]float32, n)
		for i := range data {
			data[i] = float32(mean + std*rng.NormFloat64())
			if s.BF16 {
				data[i] = roundBF16(data[i])
			}
		}
		m.Weights[name] = Tensor{Shape: dims, Data: data}
		order = append(order, name)
	}
	H, I := s.Hidden, s.Intermediate
	add("model.embed_tokens.weight", 0.5, 0, vocab, H)
	for l := range s.Layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		add(p+"input_layernorm.weight", 0.1, 1, H)
		add(p+"self_attn.q_proj.weight", 0.15, 0, s.Heads*hd, H)
		add(p+"self_attn.k_proj.weight", 0.15, 0, s.KVHeads*hd, H)
		add(p+"self_attn.v_proj.weight", 0.15, 0, s.KVHeads*hd, H)
		if s.ModelType == "qwen2" || s.AttnBias {
			add(p+"self_attn.q_proj.bias", 0.1, 0, s.Heads*hd)
			add(p+"self_attn.k_proj.bias", 0.1, 0, s.KVHeads*hd)
			add(p+"self_attn.v_proj.bias", 0.1, 0, s.KVHeads*hd)
		}
		add(p+"self_attn.o_proj.weight", 0.1, 0, H, s.Heads*hd)
		if s.AttnBias {
			add(p+"self_attn.o_proj.bias", 0.1, 0, H)
		}
		if s.ModelType == "qwen3" {
			add(p+"self_attn.q_norm.weight", 0.1, 1, hd)
			add(p+"self_attn.k_norm.weight", 0.1, 1, hd)
		}
		add(p+"post_attention_layernorm.weight", 0.1, 1, H)
		add(p+"mlp.gate_proj.weight", 0.12, 0, I, H)
		add(p+"mlp.up_proj.weight", 0.12, 0, I, H)
		add(p+"mlp.down_proj.weight", 0.08, 0, H, I)
		if s.MLPBias {
			add(p+"mlp.gate_proj.bias", 0.1, 0, I)
			add(p+"mlp.up_proj.bias", 0.1, 0, I)
			add(p+"mlp.down_proj.bias", 0.1, 0, H)
		}
	}
	add("model.norm.weight", 0.1, 1, H)
	if !s.Tied && !s.Bare {
		add("lm_head.weight", 0.1, 0, vocab, H)
	}
	cfg := map[string]any{
		"architectures": []string{"LlamaForCausalLM"}, "model_type": s.ModelType, "vocab_size": vocab,
		"hidden_size": H, "intermediate_size": I, "num_hidden_layers": s.Layers, "num_attention_heads": s.Heads,
		"num_key_value_heads": s.KVHeads, "rms_norm_eps": 1e-5, "rope_theta": s.RopeTheta,
		"tie_word_embeddings": s.Tied, "bos_token_id": nullable(bos), "eos_token_id": eos, "hidden_act": "silu",
		"max_position_embeddings": s.MaxPositions, "torch_dtype": "float32",
	}
	if s.BF16 {
		cfg["torch_dtype"] = "bfloat16"
	}
	switch s.ModelType {
	case "llama":
		cfg["attention_bias"], cfg["mlp_bias"] = s.AttnBias, s.MLPBias
	case "mistral":
		cfg["architectures"] = []string{"MistralForCausalLM"}
		cfg["sliding_window"] = nil
		if s.SlidingWindow > 0 {
			cfg["sliding_window"] = s.SlidingWindow
		}
	case "qwen2":
		cfg["architectures"] = []string{"Qwen2ForCausalLM"}
		cfg["use_sliding_window"] = false
	case "qwen3":
		cfg["architectures"] = []string{"Qwen3ForCausalLM"}
		cfg["use_sliding_window"], cfg["attention_bias"] = false, false
	}
	if s.HeadDim > 0 {
		cfg["head_dim"] = s.HeadDim
	}
	if s.Bare {
		arch := cfg["architectures"].([]string)[0]
		cfg["architectures"] = []string{strings.TrimSuffix(arch, "ForCausalLM") + "Model"}
	}
	rope := s.Rope
	if rope == nil && s.RopeLinear > 0 {
		rope = map[string]any{"type": "linear", "factor": s.RopeLinear}
	}
	if s.RopeParameters {
		rp := map[string]any{"rope_type": "default", "rope_theta": s.RopeTheta}
		for k, v := range rope {
			rp[k] = v
		}
		delete(cfg, "rope_theta")
		cfg["rope_parameters"] = rp
	} else if rope != nil {
		cfg["rope_scaling"] = rope
	}
	if err := writeJSON(filepath.Join(dir, "config.json"), cfg); err != nil {
		return nil, err
	}
	if s.TokenizerDir == "" {
		if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(TokenizerJSON()), 0o644); err != nil {
			return nil, err
		}
	} else {
		for _, name := range []string{"tokenizer.json", "tokenizer_config.json", "generation_config.json"} {
			data, err := os.ReadFile(filepath.Join(s.TokenizerDir, name))
			if errors.Is(err, fs.ErrNotExist) && name != "tokenizer.json" {
				continue
			}
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				return nil, err
			}
		}
	}
	files := m.Weights // the tensors by their names in the file
	if s.Bare {
		files = make(map[string]Tensor, len(m.Weights))
		for i, n := range order {
			order[i] = strings.TrimPrefix(n, "model.")
			files[order[i]] = m.Weights[n]
		}
	}
	shards := max(s.Shards, 1)
	if shards == 1 {
		return m, writeSafetensors(filepath.Join(dir, "model.safetensors"), files, order, s.BF16)
	}
	weightMap := map[string]string{}
	for i := range shards {
		file := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, shards)
		var names []string
		for j, n := range order {
			if j*shards/len(order) == i {
				names = append(names, n)
				weightMap[n] = file
			}
		}
		if err := writeSafetensors(filepath.Join(dir, file), files, names, s.BF16); err != nil {
			return nil, err
		}
	}
	return m, writeJSON(filepath.Join(dir, "model.safetensors.index.json"),
		map[string]any{"metadata": map[string]any{"total_size": 0}, "weight_map": weightMap})
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// roundBF16 rounds to the nearest bfloat16 (ties to even).
func roundBF16(f float32) float32 {
	b := math.Float32bits(f)
	b += 0x7fff + (b>>16)&1
	return math.Float32frombits(b &^ 0xffff)
}

func writeSafetensors(path string, ws map[string]Tensor, names []string, bf16 bool) error {
	views := map[string]safetensors.TensorView{}
	for _, n := range names {
		w := ws[n]
		shape := make([]uint64, len(w.Shape))
		for i, d := range w.Shape {
			shape[i] = uint64(d)
		}
		var data []byte
		dt := safetensors.F32
		if bf16 {
			dt = safetensors.BF16
			for _, f := range w.Data {
				b := math.Float32bits(f) >> 16
				data = append(data, byte(b), byte(b>>8))
			}
		} else {
			for _, f := range w.Data {
				b := math.Float32bits(f)
				data = append(data, byte(b), byte(b>>8), byte(b>>16), byte(b>>24))
			}
		}
		v, err := safetensors.NewTensorView(dt, shape, data)
		if err != nil {
			return fmt.Errorf("lmtest: %s: %w", n, err)
		}
		views[n] = v
	}
	buf, err := safetensors.Serialize(views, nil)
	if err != nil {
		return fmt.Errorf("lmtest: serialize: %w", err)
	}
	return os.WriteFile(path, buf, 0o644)
}

// WriteWeights writes float32 tensors to one safetensors file; tests use it to
// write a broken checkpoint.
func WriteWeights(path string, ws map[string]Tensor) error {
	var names []string
	for n := range ws {
		names = append(names, n)
	}
	return writeSafetensors(path, ws, names, false)
}

// nullable is id, or JSON null for a negative id (a model without that token).
func nullable(id int) any {
	if id < 0 {
		return nil
	}
	return id
}
