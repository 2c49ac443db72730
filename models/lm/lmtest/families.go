package lmtest

// Family is a tiny Spec shaped as a published checkpoint's config.json: the same
// model_type, RoPE type and parameters, norms, biases, head_dim convention and
// tying, scaled down in layers and width only (and, where a test must reach it, in
// the context length that the RoPE type keys on).
type Family struct {
	Name string // the published model the config follows
	Spec Spec
}

// Families returns one tiny Spec per family × RoPE type graphloom supports.
func Families() []Family {
	return []Family{
		// meta-llama/Llama-2-7b-hf: default RoPE, θ 10000, untied, no biases.
		{"llama-2-7b", Spec{ModelType: "llama", KVHeads: 4}},
		// meta-llama/Llama-3.2-1B: llama3 RoPE (factor 32, low 1, high 4, original
		// 8192), θ 500000, tied, GQA. The original context is scaled to 64 so that the
		// smoothing band falls on this head dimension's wavelengths.
		{"llama-3.2-1b", Spec{ModelType: "llama", Tied: true, RopeTheta: 500000,
			Rope: map[string]any{"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 64}}},
		// meta-llama/Llama-3.1-8B as saved by transformers 5: rope_parameters with
		// rope_theta inside, factor 8.
		{"llama-3.1-8b-v5", Spec{ModelType: "llama", RopeTheta: 500000, RopeParameters: true, BF16: true, Shards: 3,
			Rope: map[string]any{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 64}}},
		// A Llama fine-tune with linear scaling and attention_bias / mlp_bias (e.g.
		// the LongChat / Vicuna-16k configs carry linear factor 4).
		{"llama-linear-bias", Spec{ModelType: "llama", RopeLinear: 4, AttnBias: true, MLPBias: true}},
		// Dynamic NTK (rope_scaling {"type":"dynamic","factor":2}); the context is cut
		// to 24 so that a test runs past it.
		{"llama-dynamic", Spec{ModelType: "llama", MaxPositions: 24, Rope: map[string]any{"type": "dynamic", "factor": 2.0}}},
		// mistralai/Mistral-7B-v0.1: sliding_window 4096 (scaled to 5), θ 10000.
		{"mistral-7b-v0.1", Spec{ModelType: "mistral", SlidingWindow: 5}},
		// Qwen/Qwen2.5-0.5B-Instruct: q/k/v biases, θ 1e6, tied.
		{"qwen2.5-0.5b", Spec{ModelType: "qwen2", Tied: true, RopeTheta: 1e6}},
		// Qwen2.5 with the YaRN block its model cards add (factor 4, original 32768,
		// scaled to 32).
		{"qwen2.5-yarn", Spec{ModelType: "qwen2", RopeTheta: 1e6, MaxPositions: 128,
			Rope: map[string]any{"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32}}},
		// Qwen/Qwen3-0.6B: explicit head_dim 128 with hidden 1024 and 16 heads (here
		// 32 with 64 and 4), q_norm / k_norm, no biases, θ 1e6, tied.
		{"qwen3-0.6b", Spec{ModelType: "qwen3", HeadDim: 32, Tied: true, RopeTheta: 1e6, BF16: true, Shards: 2}},
	}
}
