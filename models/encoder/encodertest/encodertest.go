// Package encodertest writes tiny random BERT / RoBERTa / XLM-RoBERTa / MPNet /
// DistilBERT / ModernBERT / NomicBERT / jina-embeddings-v2 and v3 / gte-v1.5 folders in the
// exact Hugging Face and sentence-transformers layouts (config.json,
// model.safetensors, tokenizer.json, tokenizer_config.json; modules.json,
// 1_Pooling/config.json, 2_Normalize, sentence_bert_config.json,
// config_sentence_transformers.json) for tests and benchmarks of package encoder and
// of the embedders built on it. Nothing here is a trained model.
package encodertest

import (
	"archive/zip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/graphloom/graphloom/models/lm/lmtest"
)

// Spec describes a tiny encoder folder.
type Spec struct {
	// ModelType: "bert" (default), "roberta", "xlm-roberta", "mpnet", "distilbert",
	// "modernbert", "nomic_bert", "new" (gte-v1.5), "jina": jina-embeddings-v3's
	// XLM-RoBERTa (its config.json says model_type xlm-roberta; see writeJina), or
	// "jina_bert": jina-embeddings-v2's JinaBertModel (model_type bert; writeJinaBERT).
	ModelType    string
	Layers       int    // default 2
	Hidden       int    // default 32
	Heads        int    // default 4
	Intermediate int    // default 64
	MaxPositions int    // max_position_embeddings; default 128 (+ pad_token_id + 1 for RoBERTa / XLM-R)
	TypeVocab    int    // type_vocab_size; default 2 (1 for RoBERTa / XLM-R, as their files say; MPNet has none)
	Prefix       string // tensor-name prefix ("bert.", "roberta.", "mpnet."); default none
	// SentenceTransformers writes modules.json and the module folders; otherwise the
	// folder is a plain Hugging Face one.
	SentenceTransformers bool
	Pooling              []string          // pooling_mode_* set in 1_Pooling/config.json (cls, mean, max, mean-sqrt-len, weighted-mean, last-token); default mean
	Normalize            bool              // add the 2_Normalize module
	IncludePrompt        *bool             // 1_Pooling include_prompt; nil = not written
	Prompts              map[string]string // config_sentence_transformers.json prompts
	MaxSeqLength         int               // sentence_bert_config.json max_seq_length; 0 = not written
	// Similarity is config_sentence_transformers.json's similarity_fn_name; "" =
	// "cosine", "-" = not written (a folder saved before sentence-transformers 3).
	Similarity    string
	DefaultPrompt string // config_sentence_transformers.json default_prompt_name; "" = null
	// ModernBERT: local_attention (default 16, so that the tests' texts outgrow the
	// window), global_attn_every_n_layers (default 2), biases in every LayerNorm and
	// projection (norm_bias, attention_bias, mlp_bias; default none, as ModernBERT-base),
	// and the RoPE bases written as transformers 5 writes them (layer_types and
	// rope_parameters) rather than as global_rope_theta / local_rope_theta.
	Window         int
	GlobalEvery    int
	Biases         bool
	RopeParameters bool
	// Activation is NomicBERT's activation_function (default "swiglu", as
	// nomic-embed-text's); Biases gives it qkv_proj_bias, mlp_fc1_bias and mlp_fc2_bias.
	Activation string
	// Experts and TopK give a NomicBERT mixture-of-experts layers (every second one,
	// from layer 1; GELU experts, Activation "gelu"), as nomic-embed-text-v2-moe.
	Experts, TopK int
	// FeedForward is JinaBERT's feed_forward_type (default "geglu", as
	// jina-embeddings-v2's).
	FeedForward string
	// Dense are Dense modules after the Pooling module (sentence-transformers folders
	// only), written as 2_Dense, 3_Dense, … with random weights.
	Dense []DenseSpec
	// PyTorchBin writes the weights as pytorch_model.bin (WriteTorchState, with the
	// embeddings.position_ids buffer transformers saved before 4.31) instead of
	// model.safetensors, as transformers saved them before 4.35. Not for ModernBERT.
	PyTorchBin bool
	Seed       uint64
}

// DenseSpec describes a sentence-transformers Dense module.
type DenseSpec struct {
	Out        int    // out_features
	NoBias     bool   // bias false
	Activation string // activation_function; "" = not written (sentence-transformers' default, Tanh)
	// PyTorchOnly writes the weights as pytorch_model.bin, a torch.save archive
	// (WriteTorchState), instead of model.safetensors, as sentence-transformers before
	// 3.0.1 did.
	PyTorchOnly bool
}

// ModernBERT's RoPE bases as Write gives them (ModernBERT-base's).
const (
	GlobalTheta = 160_000.0
	LocalTheta  = 10_000.0
)

// Model is what Write wrote.
type Model struct {
	Spec    Spec
	Vocab   []string // id → token
	PadID   int
	Weights map[string]lmtest.Tensor // by Hugging Face name, without Spec.Prefix
	// Dense holds each Dense module's weights ("linear.weight", "linear.bias").
	Dense []map[string]lmtest.Tensor
}

// Offset returns the position offset (0 for BERT, pad_token_id + 1 otherwise).
func (m *Model) Offset() int {
	switch m.Spec.ModelType {
	case "bert", "distilbert", "modernbert", "nomic_bert", "jina", "new", "jina_bert":
		return 0
	}
	return m.PadID + 1
}

func (s Spec) withDefaults() Spec {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if s.ModelType == "" {
		s.ModelType = "bert"
	}
	def(&s.Layers, 2)
	def(&s.Hidden, 32)
	def(&s.Heads, 4)
	def(&s.Intermediate, 64)
	switch s.ModelType {
	case "bert":
		def(&s.MaxPositions, 128)
		def(&s.TypeVocab, 2)
	case "distilbert":
		def(&s.MaxPositions, 128)
	case "modernbert":
		def(&s.MaxPositions, 128)
		def(&s.Window, 16)
		def(&s.GlobalEvery, 2)
	case "jina":
		def(&s.MaxPositions, 128)
		def(&s.TypeVocab, 1)
	case "new": // TypeVocab 0 (gte-base-en-v1.5) is kept
		def(&s.MaxPositions, 128)
	case "jina_bert":
		def(&s.MaxPositions, 128)
		def(&s.TypeVocab, 2)
		if s.FeedForward == "" {
			s.FeedForward = "geglu"
		}
	case "nomic_bert":
		def(&s.MaxPositions, 128)
		def(&s.TypeVocab, 2)
		switch {
		case s.Experts > 0:
			s.Activation = "gelu"
		case s.Activation == "":
			s.Activation = "swiglu"
		}
	default:
		def(&s.MaxPositions, 128+2)
		def(&s.TypeVocab, 1)
	}
	if len(s.Pooling) == 0 {
		s.Pooling = []string{"mean"}
	}
	return s
}

// vocabulary returns the WordPiece vocabulary: the special tokens of the model type,
// letters and digits as words and as "##" continuations, ASCII punctuation and a few
// whole words, so that any lowercase ASCII text tokenises without [UNK].
func vocabulary(modelType string) (vocab []string, pad, unk, cls, sep int) {
	switch modelType {
	case "bert", "distilbert", "modernbert", "nomic_bert", "new", "jina_bert":
		vocab = []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
		pad, unk, cls, sep = 0, 1, 2, 3
	default:
		vocab = []string{"<s>", "<pad>", "</s>", "<unk>", "<mask>"}
		pad, unk, cls, sep = 1, 3, 0, 2
	}
	chars := "abcdefghijklmnopqrstuvwxyz0123456789"
	for _, c := range chars {
		vocab = append(vocab, string(c))
	}
	for _, c := range chars {
		vocab = append(vocab, "##"+string(c))
	}
	for _, c := range "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~" {
		vocab = append(vocab, string(c))
	}
	vocab = append(vocab, "the", "of", "and", "in", "was", "who", "where", "query", "passage", "##s", "##ed", "##ing")
	return vocab, pad, unk, cls, sep
}

// Write writes a tiny random encoder folder into dir.
func Write(dir string, spec Spec) (*Model, error) {
	s := spec.withDefaults()
	switch s.ModelType {
	case "bert", "roberta", "xlm-roberta", "mpnet", "distilbert":
	case "modernbert":
		return writeModernBERT(dir, s)
	case "nomic_bert":
		return writeNomicBERT(dir, s)
	case "jina":
		return writeJina(dir, s)
	case "new":
		return writeGTE(dir, s)
	case "jina_bert":
		return writeJinaBERT(dir, s)
	default:
		return nil, fmt.Errorf("encodertest: model type %q", s.ModelType)
	}
	vocab, pad, unk, cls, sep := vocabulary(s.ModelType)
	m := &Model{Spec: s, Vocab: vocab, PadID: pad, Weights: map[string]lmtest.Tensor{}}
	rng := rand.New(rand.NewPCG(s.Seed, 44))
	H, I, V := s.Hidden, s.Intermediate, len(vocab)
	rnd := randomizer(m, rng)
	rnd("embeddings.word_embeddings.weight", 0.5, 0, V, H)
	rnd("embeddings.position_embeddings.weight", 0.5, 0, s.MaxPositions, H)
	mpnet := s.ModelType == "mpnet"
	switch s.ModelType {
	case "distilbert": // no token types
	case "mpnet":
		// Large enough that the bias moves the attention: a wrong bucket shows.
		rnd("encoder.relative_attention_bias.weight", 1, 0, MPNetBuckets, s.Heads)
	default:
		rnd("embeddings.token_type_embeddings.weight", 0.5, 0, s.TypeVocab, H)
	}
	rnd("embeddings.LayerNorm.weight", 0.1, 1, H)
	rnd("embeddings.LayerNorm.bias", 0.1, 0, H)
	names := LayerNames(s.ModelType)
	for i := range s.Layers {
		p := fmt.Sprintf(names.Layer, i)
		for _, lin := range []struct {
			name    string
			out, in int
		}{{names.Q, H, H}, {names.K, H, H}, {names.V, H, H},
			{names.O, H, H}, {names.In, I, H}, {names.Out, H, I}} {
			rnd(p+lin.name+".weight", 0.3, 0, lin.out, lin.in)
			rnd(p+lin.name+".bias", 0.1, 0, lin.out)
		}
		for _, ln := range []string{names.AttnLN, names.OutLN} {
			rnd(p+ln+".weight", 0.1, 1, H)
			rnd(p+ln+".bias", 0.1, 0, H)
		}
	}
	rnd("pooler.dense.weight", 0.3, 0, H, H) // present in BertModel checkpoints, unused by embedders
	rnd("pooler.dense.bias", 0.1, 0, H)
	if err := writeWeights(dir, m); err != nil {
		return nil, err
	}
	arch := map[string]string{"bert": "BertModel", "roberta": "RobertaModel", "xlm-roberta": "XLMRobertaModel", "mpnet": "MPNetForMaskedLM",
		"distilbert": "DistilBertModel"}[s.ModelType]
	cfg := map[string]any{
		"architectures": []string{arch}, "model_type": s.ModelType, "vocab_size": V, "hidden_size": H,
		"num_hidden_layers": s.Layers, "num_attention_heads": s.Heads, "intermediate_size": I,
		"hidden_act": "gelu", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
		"max_position_embeddings": s.MaxPositions, "type_vocab_size": s.TypeVocab, "initializer_range": 0.02,
		"layer_norm_eps": 1e-12, "pad_token_id": pad, "position_embedding_type": "absolute",
		"torch_dtype": "float32", "transformers_version": "4.44.0", "use_cache": true,
	}
	switch s.ModelType {
	case "bert":
	case "distilbert": // as distilbert-base-uncased's config.json
		cfg = map[string]any{
			"architectures": []string{arch}, "model_type": s.ModelType, "vocab_size": V, "dim": H,
			"n_layers": s.Layers, "n_heads": s.Heads, "hidden_dim": I, "activation": "gelu",
			"attention_dropout": 0.1, "dropout": 0.1, "initializer_range": 0.02, "max_position_embeddings": s.MaxPositions,
			"pad_token_id": pad, "qa_dropout": 0.1, "seq_classif_dropout": 0.2, "sinusoidal_pos_embds": false,
			"tie_weights_": true, "transformers_version": "4.44.0",
		}
	default:
		cfg["layer_norm_eps"], cfg["bos_token_id"], cfg["eos_token_id"] = 1e-5, cls, sep
	}
	if mpnet { // as all-mpnet-base-v2's config.json: no token types, relative buckets
		delete(cfg, "type_vocab_size")
		delete(cfg, "position_embedding_type")
		cfg["relative_attention_num_buckets"] = MPNetBuckets
	}
	return m, writeFiles(dir, m, cfg, unk, cls, sep)
}

// randomizer returns a function that adds a random tensor to m.Weights: normal
// entries of the given scale around center.
func randomizer(m *Model, rng *rand.Rand) func(name string, scale, center float64, dims ...int) {
	return func(name string, scale, center float64, dims ...int) {
		n := 1
		for _, d := range dims {
			n *= d
		}
		data := make([]float32, n)
		for i := range data {
			data[i] = float32(center + scale*rng.NormFloat64())
		}
		m.Weights[name] = lmtest.Tensor{Shape: dims, Data: data}
	}
}

// writeWeights writes m.Weights, named with the spec's prefix, to
// dir/model.safetensors, or to dir/pytorch_model.bin with Spec.PyTorchBin.
func writeWeights(dir string, m *Model) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	named := map[string]lmtest.Tensor{}
	for n, t := range m.Weights {
		named[m.Spec.Prefix+n] = t
	}
	if m.Spec.PyTorchBin {
		pos := make([]int64, m.Spec.MaxPositions)
		for i := range pos {
			pos[i] = int64(i)
		}
		return WriteTorchState(filepath.Join(dir, "pytorch_model.bin"), slices.Sorted(maps.Keys(named)), named,
			map[string][]int64{m.Spec.Prefix + "embeddings.position_ids": pos})
	}
	return lmtest.WriteWeights(filepath.Join(dir, "model.safetensors"), named)
}

// writeFiles writes config.json (cfg), the tokenizer files and, for a
// sentence-transformers folder, the module files.
func writeFiles(dir string, m *Model, cfg map[string]any, unk, cls, sep int) error {
	s, vocab := m.Spec, m.Vocab
	if err := writeJSON(filepath.Join(dir, "config.json"), cfg); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(dir, "tokenizer.json"), tokenizerJSON(s.ModelType, vocab, unk, cls, sep)); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(dir, "tokenizer_config.json"), map[string]any{
		"model_max_length": s.MaxPositions - m.Offset(), "pad_token": vocab[m.PadID], "unk_token": vocab[unk],
		"cls_token": vocab[cls], "sep_token": vocab[sep], "do_lower_case": true,
	}); err != nil {
		return err
	}
	if s.SentenceTransformers {
		return writeModules(dir, m)
	}
	return nil
}

// writeModernBERT writes a tiny random ModernBertModel folder: tensors named as
// transformers' ModernBertModel names them (no attn_norm in layer 0; biases only with
// Spec.Biases), a config.json as ModernBERT-base's with the spec's sizes, and the
// WordPiece test tokenizer with [CLS] … [SEP] (ModernBERT's own is a byte-level BPE,
// which the tokenizer tests cover).
func writeModernBERT(dir string, s Spec) (*Model, error) {
	vocab, pad, unk, cls, sep := vocabulary(s.ModelType)
	m := &Model{Spec: s, Vocab: vocab, PadID: pad, Weights: map[string]lmtest.Tensor{}}
	rnd := randomizer(m, rand.New(rand.NewPCG(s.Seed, 45)))
	H, I, V := s.Hidden, s.Intermediate, len(vocab)
	norm := func(name string) {
		rnd(name+".weight", 0.1, 1, H)
		if s.Biases {
			rnd(name+".bias", 0.1, 0, H)
		}
	}
	lin := func(name string, out, in int) {
		rnd(name+".weight", 0.3, 0, out, in)
		if s.Biases {
			rnd(name+".bias", 0.1, 0, out)
		}
	}
	rnd("embeddings.tok_embeddings.weight", 0.5, 0, V, H)
	norm("embeddings.norm")
	for i := range s.Layers {
		p := fmt.Sprintf("layers.%d.", i)
		if i > 0 {
			norm(p + "attn_norm")
		}
		lin(p+"attn.Wqkv", 3*H, H)
		lin(p+"attn.Wo", H, H)
		norm(p + "mlp_norm")
		lin(p+"mlp.Wi", 2*I, H)
		lin(p+"mlp.Wo", H, I)
	}
	norm("final_norm")
	if err := writeWeights(dir, m); err != nil {
		return nil, err
	}
	cfg := map[string]any{
		"architectures": []string{"ModernBertModel"}, "model_type": "modernbert", "vocab_size": V, "hidden_size": H,
		"num_hidden_layers": s.Layers, "num_attention_heads": s.Heads, "intermediate_size": I,
		"hidden_activation": "gelu", "max_position_embeddings": s.MaxPositions, "norm_eps": 1e-5,
		"norm_bias": s.Biases, "attention_bias": s.Biases, "mlp_bias": s.Biases,
		"global_attn_every_n_layers": s.GlobalEvery, "local_attention": s.Window,
		"pad_token_id": pad, "bos_token_id": cls, "eos_token_id": sep, "cls_token_id": cls, "sep_token_id": sep,
		"classifier_pooling": "mean", "deterministic_flash_attn": false, "torch_dtype": "float32", "transformers_version": "4.48.0",
	}
	if s.RopeParameters {
		var types []string
		for i := range s.Layers {
			kind := "sliding_attention"
			if i%s.GlobalEvery == 0 {
				kind = "full_attention"
			}
			types = append(types, kind)
		}
		cfg["layer_types"] = types
		cfg["rope_parameters"] = map[string]any{
			"full_attention":    map[string]any{"rope_type": "default", "rope_theta": GlobalTheta},
			"sliding_attention": map[string]any{"rope_type": "default", "rope_theta": LocalTheta},
		}
	} else {
		cfg["global_rope_theta"], cfg["local_rope_theta"] = GlobalTheta, LocalTheta
	}
	return m, writeFiles(dir, m, cfg, unk, cls, sep)
}

// NomicVocabMultiple is the pad_vocab_size_multiple writeNomicBERT's config.json
// gives (nomic-embed-text-v1.5's): the word table has the vocabulary's size rounded up
// to it, as NomicBertModel pads it.
const NomicVocabMultiple = 64

// NomicRotaryBase is the rotary_emb_base writeNomicBERT gives (nomic-embed-text-v1.5's).
const NomicRotaryBase = 1000.0

// writeNomicBERT writes a tiny random NomicBertModel folder: tensors named as Nomic's
// modeling_hf_nomic_bert.NomicBertModel names them (emb_ln, encoder.layers.N.attn.Wqkv
// and out_proj, mlp.fc11 / fc12 / fc2 for a gated activation or mlp.fc1 / fc2, norm1,
// norm2; biases on the projections only with Spec.Biases), the word table padded to
// NomicVocabMultiple rows, and a config.json as nomic-embed-text-v1.5's (auto_map
// included) with the spec's sizes: n_inner is Spec.Intermediate, which the gated MLP
// rounds up to a multiple of 256.
func writeNomicBERT(dir string, s Spec) (*Model, error) {
	vocab, pad, unk, cls, sep := vocabulary(s.ModelType)
	m := &Model{Spec: s, Vocab: vocab, PadID: pad, Weights: map[string]lmtest.Tensor{}}
	rnd := randomizer(m, rand.New(rand.NewPCG(s.Seed, 47)))
	H, V := s.Hidden, (len(vocab)+NomicVocabMultiple-1)/NomicVocabMultiple*NomicVocabMultiple
	gated := s.Activation != "gelu"
	I := s.Intermediate
	if gated {
		I = (I + 255) / 256 * 256
	}
	lin := func(name string, out, in int) { // scaled by √(32/in): fc2's 256 inputs keep the scale of the others' 32
		rnd(name+".weight", 0.3*math.Sqrt(32/float64(in)), 0, out, in)
		if s.Biases {
			rnd(name+".bias", 0.1, 0, out)
		}
	}
	norm := func(name string) {
		rnd(name+".weight", 0.1, 1, H)
		rnd(name+".bias", 0.1, 0, H)
	}
	rnd("embeddings.word_embeddings.weight", 0.5, 0, V, H)
	rnd("embeddings.token_type_embeddings.weight", 0.5, 0, s.TypeVocab, H)
	norm("emb_ln")
	for i := range s.Layers {
		p := fmt.Sprintf("encoder.layers.%d.", i)
		lin(p+"attn.Wqkv", 3*H, H)
		lin(p+"attn.out_proj", H, H)
		norm(p + "norm1")
		norm(p + "norm2")
		if s.Experts > 0 && i%2 == 1 { // NomicMoELayer
			rnd(p+"mlp.router.layer.weight", 0.3, 0, s.Experts, H) // logits of std ≈ 1.7: tokens choose different experts, and the others weigh too
			rnd(p+"mlp.experts.mlp.w1", 0.3, 0, s.Experts*I, H)
			rnd(p+"mlp.experts.mlp.w2", 0.3*math.Sqrt(32/float64(I)), 0, s.Experts*I, H)
			rnd(p+"mlp.experts.bias", 0.1, 0, H)
			continue
		}
		if gated {
			lin(p+"mlp.fc11", I, H)
			lin(p+"mlp.fc12", I, H)
		} else {
			lin(p+"mlp.fc1", I, H)
		}
		lin(p+"mlp.fc2", H, I)
	}
	if err := writeWeights(dir, m); err != nil {
		return nil, err
	}
	remote := "nomic-ai/nomic-bert-2048--"
	cfg := map[string]any{
		"architectures": []string{"NomicBertModel"}, "model_type": "nomic_bert", "activation_function": s.Activation,
		"auto_map": map[string]string{"AutoConfig": remote + "configuration_hf_nomic_bert.NomicBertConfig",
			"AutoModel": remote + "modeling_hf_nomic_bert.NomicBertModel"},
		"attn_pdrop": 0.0, "bos_token_id": nil, "causal": false, "dense_seq_output": true, "embd_pdrop": 0.0, "eos_token_id": nil,
		"fused_bias_fc": true, "fused_dropout_add_ln": true, "initializer_range": 0.02, "layer_norm_epsilon": 1e-12,
		"max_trained_positions": 2048, "mlp_fc1_bias": s.Biases, "mlp_fc2_bias": s.Biases, "n_embd": H, "n_head": s.Heads,
		"n_inner": s.Intermediate, "n_layer": s.Layers, "n_positions": s.MaxPositions, "pad_vocab_size_multiple": NomicVocabMultiple,
		"parallel_block": false, "parallel_block_tied_norm": false, "prenorm": false, "qkv_proj_bias": s.Biases,
		"reorder_and_upcast_attn": false, "resid_pdrop": 0.0, "rotary_emb_base": NomicRotaryBase, "rotary_emb_fraction": 1.0,
		"rotary_emb_interleaved": false, "rotary_emb_scale_base": nil, "rotary_scaling_factor": nil, "scale_attn_by_inverse_layer_idx": false,
		"scale_attn_weights": true, "summary_activation": nil, "summary_first_dropout": 0.0, "summary_proj_to_labels": true,
		"summary_type": "cls_index", "summary_use_proj": true, "torch_dtype": "float32", "transformers_version": "4.37.2",
		"type_vocab_size": s.TypeVocab, "use_cache": true, "use_flash_attn": true, "use_rms_norm": false, "use_xentropy": true,
		"vocab_size": len(vocab),
	}
	if s.Experts > 0 {
		cfg["moe_every_n_layers"], cfg["num_experts"], cfg["moe_top_k"] = 2, s.Experts, s.TopK
		cfg["expert_choice_router"], cfg["num_shared_experts"] = false, 0
	}
	return m, writeFiles(dir, m, cfg, unk, cls, sep)
}

// Jina's task adapters and rotary base as writeJina gives them (jina-embeddings-v3's
// lora_adaptations, lora_rank and rotary_emb_base; lora_alpha 2 rather than its 1, so
// that the scaling alpha/rank differs from both 1/rank and rank/alpha's inverse).
var JinaTasks = []string{"retrieval.query", "retrieval.passage", "separation", "classification", "text-matching"}

const (
	JinaRank       = 4
	JinaAlpha      = 2.0
	JinaRotaryBase = 20_000.0
)

// JinaInstructions are the task_instructions writeJina's config.json gives
// (jina-embeddings-v3's for the retrieval tasks, none for the others).
var JinaInstructions = map[string]string{
	"retrieval.query":   "Represent the query for retrieving evidence documents: ",
	"retrieval.passage": "Represent the document for retrieval: ",
	"separation":        "", "classification": "", "text-matching": "",
}

// writeJina writes a tiny random folder of jina-embeddings-v3's XLM-RoBERTa: tensors
// named as Jina's XLMRobertaLoRA saves them (Spec.Prefix, "roberta." there; emb_ln,
// encoder.layers.N.mixer.Wqkv / out_proj, mlp.fc1 / fc2, norm1, norm2; every linear
// layer and embedding table as ….parametrizations.weight.original with its random,
// non-zero, lora_A and lora_B for each of JinaTasks), a config.json with
// jina-embeddings-v3's fields (model_type xlm-roberta, position_embedding_type rotary,
// auto_map, load_trained_adapters, task_instructions) and the spec's sizes, and the
// XLM-R-style test tokenizer. A sentence-transformers folder's Transformer module is
// Jina's custom_st.Transformer.
func writeJina(dir string, s Spec) (*Model, error) {
	vocab, pad, unk, cls, sep := vocabulary(s.ModelType)
	m := &Model{Spec: s, Vocab: vocab, PadID: pad, Weights: map[string]lmtest.Tensor{}}
	rnd := randomizer(m, rand.New(rand.NewPCG(s.Seed, 48)))
	H, I, V, T := s.Hidden, s.Intermediate, len(vocab), len(JinaTasks)
	adapted := func(name string, embedding bool, rows, cols int, scale float64) {
		p := name + ".parametrizations.weight."
		rnd(p+"original", scale, 0, rows, cols)
		if embedding { // ΔW = A[t]·B[t]
			rnd(p+"0.lora_A", 0.3, 0, T, rows, JinaRank)
			rnd(p+"0.lora_B", 0.3, 0, T, JinaRank, cols)
		} else { // ΔW = B[t]·A[t]
			rnd(p+"0.lora_A", 0.3, 0, T, JinaRank, cols)
			rnd(p+"0.lora_B", 0.3, 0, T, rows, JinaRank)
		}
	}
	norm := func(name string) {
		rnd(name+".weight", 0.1, 1, H)
		rnd(name+".bias", 0.1, 0, H)
	}
	lin := func(name string, out, in int) {
		adapted(name, false, out, in, 0.3)
		rnd(name+".bias", 0.1, 0, out)
	}
	adapted("embeddings.word_embeddings", true, V, H, 0.5)
	adapted("embeddings.token_type_embeddings", true, s.TypeVocab, H, 0.5)
	norm("emb_ln")
	for i := range s.Layers {
		p := fmt.Sprintf("encoder.layers.%d.", i)
		lin(p+"mixer.Wqkv", 3*H, H)
		lin(p+"mixer.out_proj", H, H)
		norm(p + "norm1")
		lin(p+"mlp.fc1", I, H)
		lin(p+"mlp.fc2", H, I)
		norm(p + "norm2")
	}
	if err := writeWeights(dir, m); err != nil {
		return nil, err
	}
	remote := "jinaai/xlm-roberta-flash-implementation--"
	cfg := map[string]any{
		"architectures": []string{"XLMRobertaLoRA"}, "model_type": "xlm-roberta",
		"auto_map": map[string]string{"AutoConfig": remote + "configuration_xlm_roberta.XLMRobertaFlashConfig",
			"AutoModel": remote + "modeling_lora.XLMRobertaLoRA"},
		"attention_probs_dropout_prob": 0.1, "bos_token_id": cls, "classifier_dropout": nil, "emb_pooler": nil, "eos_token_id": sep,
		"hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": H, "initializer_range": 0.02, "intermediate_size": I,
		"layer_norm_eps": 1e-5, "load_trained_adapters": true, "lora_adaptations": JinaTasks, "lora_alpha": JinaAlpha,
		"lora_dropout_p": 0.0, "lora_main_params_trainable": false, "lora_rank": JinaRank,
		"matryoshka_dimensions": []int{8, 16, H}, "max_position_embeddings": s.MaxPositions, "num_attention_heads": s.Heads,
		"num_hidden_layers": s.Layers, "output_past": true, "pad_token_id": pad, "position_embedding_type": "rotary",
		"rotary_emb_base": JinaRotaryBase, "task_instructions": JinaInstructions, "torch_dtype": "float32",
		"transformers_version": "4.41.2", "truncate_dim": nil, "type_vocab_size": s.TypeVocab, "use_cache": true,
		"use_flash_attn": true, "use_reentrant": false, "vocab_size": V,
	}
	return m, writeFiles(dir, m, cfg, unk, cls, sep)
}

// gte-v1.5's RoPE as writeGTE gives it (gte-base-en-v1.5's rope_theta and rope_scaling).
const (
	GTERopeTheta = 500_000.0
	GTENTKFactor = 2.0
)

// writeGTE writes a tiny random gte-v1.5 NewModel folder: tensors named as Alibaba's
// new-impl NewModel names them (Spec.Prefix; embeddings.LayerNorm,
// encoder.layer.N.attention.qkv_proj / o_proj, attn_ln, mlp.up_gate_proj without bias,
// mlp.down_proj, mlp_ln; token type embeddings only with Spec.TypeVocab > 0), and a
// config.json with gte-base-en-v1.5's fields (auto_map, rope_theta, NTK rope_scaling)
// and the spec's sizes.
func writeGTE(dir string, s Spec) (*Model, error) {
	vocab, pad, unk, cls, sep := vocabulary(s.ModelType)
	m := &Model{Spec: s, Vocab: vocab, PadID: pad, Weights: map[string]lmtest.Tensor{}}
	rnd := randomizer(m, rand.New(rand.NewPCG(s.Seed, 49)))
	H, I, V := s.Hidden, s.Intermediate, len(vocab)
	norm := func(name string) {
		rnd(name+".weight", 0.1, 1, H)
		rnd(name+".bias", 0.1, 0, H)
	}
	rnd("embeddings.word_embeddings.weight", 0.5, 0, V, H)
	if s.TypeVocab > 0 {
		rnd("embeddings.token_type_embeddings.weight", 0.5, 0, s.TypeVocab, H)
	}
	norm("embeddings.LayerNorm")
	for i := range s.Layers {
		p := fmt.Sprintf("encoder.layer.%d.", i)
		rnd(p+"attention.qkv_proj.weight", 0.3, 0, 3*H, H)
		rnd(p+"attention.qkv_proj.bias", 0.1, 0, 3*H)
		rnd(p+"attention.o_proj.weight", 0.3, 0, H, H)
		rnd(p+"attention.o_proj.bias", 0.1, 0, H)
		norm(p + "attn_ln")
		rnd(p+"mlp.up_gate_proj.weight", 0.3, 0, 2*I, H)
		rnd(p+"mlp.down_proj.weight", 0.3*math.Sqrt(32/float64(I)), 0, H, I)
		rnd(p+"mlp.down_proj.bias", 0.1, 0, H)
		norm(p + "mlp_ln")
	}
	if err := writeWeights(dir, m); err != nil {
		return nil, err
	}
	remote := "Alibaba-NLP/new-impl--"
	cfg := map[string]any{
		"architectures": []string{"NewModel"}, "model_type": "new",
		"auto_map":                     map[string]string{"AutoConfig": remote + "configuration.NewConfig", "AutoModel": remote + "modeling.NewModel"},
		"attention_probs_dropout_prob": 0.0, "classifier_dropout": nil, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
		"hidden_size": H, "initializer_range": 0.02, "intermediate_size": I, "layer_norm_eps": 1e-12, "layer_norm_type": "layer_norm",
		"logn_attention_clip1": false, "logn_attention_scale": false, "max_position_embeddings": s.MaxPositions,
		"num_attention_heads": s.Heads, "num_hidden_layers": s.Layers, "pack_qkv": true, "pad_token_id": pad,
		"position_embedding_type": "rope", "rope_scaling": map[string]any{"factor": GTENTKFactor, "type": "ntk"},
		"rope_theta": GTERopeTheta, "torch_dtype": "float32", "transformers_version": "4.39.1", "type_vocab_size": s.TypeVocab,
		"unpad_inputs": false, "use_memory_efficient_attention": false, "vocab_size": V,
	}
	return m, writeFiles(dir, m, cfg, unk, cls, sep)
}

// writeJinaBERT writes a tiny random JinaBertModel folder (jina-embeddings-v2-base-en's
// layout): BERT's embeddings without a position table, BERT's attention names, and
// for a GLU Spec.FeedForward (default "geglu") JinaBertGLUMLP's mlp.gated_layers
// (no bias), mlp.wo and mlp.layernorm, else BERT's intermediate/output; a config.json
// with jina-embeddings-v2-base-en's fields (model_type bert, position_embedding_type
// alibi, auto_map) and the spec's sizes.
func writeJinaBERT(dir string, s Spec) (*Model, error) {
	vocab, pad, unk, cls, sep := vocabulary(s.ModelType)
	m := &Model{Spec: s, Vocab: vocab, PadID: pad, Weights: map[string]lmtest.Tensor{}}
	rnd := randomizer(m, rand.New(rand.NewPCG(s.Seed, 50)))
	H, I, V := s.Hidden, s.Intermediate, len(vocab)
	norm := func(name string) {
		rnd(name+".weight", 0.1, 1, H)
		rnd(name+".bias", 0.1, 0, H)
	}
	lin := func(name string, out, in int, bias bool) {
		rnd(name+".weight", 0.3, 0, out, in)
		if bias {
			rnd(name+".bias", 0.1, 0, out)
		}
	}
	rnd("embeddings.word_embeddings.weight", 0.5, 0, V, H)
	rnd("embeddings.token_type_embeddings.weight", 0.5, 0, s.TypeVocab, H)
	norm("embeddings.LayerNorm")
	names := LayerNames("bert")
	for i := range s.Layers {
		p := fmt.Sprintf(names.Layer, i)
		for _, n := range []string{names.Q, names.K, names.V, names.O} {
			lin(p+n, H, H, true)
		}
		norm(p + names.AttnLN)
		if s.FeedForward == "original" {
			lin(p+names.In, I, H, true)
			lin(p+names.Out, H, I, true)
			norm(p + names.OutLN)
			continue
		}
		lin(p+"mlp.gated_layers", 2*I, H, false)
		lin(p+"mlp.wo", H, I, true)
		norm(p + "mlp.layernorm")
	}
	if err := writeWeights(dir, m); err != nil {
		return nil, err
	}
	remote := "jinaai/jina-bert-implementation--"
	cfg := map[string]any{
		"architectures": []string{"JinaBertForMaskedLM"}, "model_type": "bert",
		"auto_map": map[string]string{"AutoConfig": remote + "configuration_bert.JinaBertConfig",
			"AutoModel": remote + "modeling_bert.JinaBertModel"},
		"attention_probs_dropout_prob": 0.0, "classifier_dropout": nil, "emb_pooler": "mean", "feed_forward_type": s.FeedForward,
		"gradient_checkpointing": false, "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": H,
		"initializer_range": 0.02, "intermediate_size": I, "layer_norm_eps": 1e-12, "max_position_embeddings": s.MaxPositions,
		"num_attention_heads": s.Heads, "num_hidden_layers": s.Layers, "pad_token_id": pad, "position_embedding_type": "alibi",
		"torch_dtype": "float32", "transformers_version": "4.26.0", "type_vocab_size": s.TypeVocab, "use_cache": true, "vocab_size": V,
	}
	return m, writeFiles(dir, m, cfg, unk, cls, sep)
}

// tokenizerJSON is a WordPiece tokenizer.json (BertNormalizer lowercasing,
// BertPreTokenizer) with the model type's post-processor: [CLS] … [SEP] as a
// TemplateProcessing for BERT, <s> … </s> as one for MPNet (transformers'
// MPNetConverter), RobertaProcessing's <s> … </s> otherwise.
func tokenizerJSON(modelType string, vocab []string, unk, cls, sep int) map[string]any {
	ids := map[string]int{}
	var added []map[string]any
	for i, v := range vocab {
		ids[v] = i
		if i < 5 {
			added = append(added, map[string]any{"id": i, "content": v, "single_word": false, "lstrip": false,
				"rstrip": false, "normalized": false, "special": true})
		}
	}
	post := map[string]any{"type": "RobertaProcessing", "sep": []any{vocab[sep], sep}, "cls": []any{vocab[cls], cls},
		"trim_offsets": true, "add_prefix_space": false}
	if modelType != "roberta" && modelType != "xlm-roberta" && modelType != "jina" {
		special := func(id int) map[string]any {
			return map[string]any{"id": vocab[id], "ids": []int{id}, "tokens": []string{vocab[id]}}
		}
		post = map[string]any{"type": "TemplateProcessing",
			"single": []any{map[string]any{"SpecialToken": map[string]any{"id": vocab[cls], "type_id": 0}},
				map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
				map[string]any{"SpecialToken": map[string]any{"id": vocab[sep], "type_id": 0}}},
			"special_tokens": map[string]any{vocab[cls]: special(cls), vocab[sep]: special(sep)}}
	}
	return map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added,
		"normalizer": map[string]any{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
			"strip_accents": nil, "lowercase": true},
		"pre_tokenizer":  map[string]any{"type": "BertPreTokenizer"},
		"post_processor": post,
		"decoder":        map[string]any{"type": "WordPiece", "prefix": "##", "cleanup": true},
		"model": map[string]any{"type": "WordPiece", "unk_token": vocab[unk], "continuing_subword_prefix": "##",
			"max_input_chars_per_word": 100, "vocab": ids},
	}
}

// writeModules writes the sentence-transformers module files, and the Dense modules'
// weights (kept in m.Dense).
func writeModules(dir string, m *Model) error {
	s, hidden := m.Spec, m.Spec.Hidden
	transformerModule := "sentence_transformers.models.Transformer"
	if s.ModelType == "jina" {
		transformerModule = "custom_st.Transformer" // Jina's own module, with its task argument
	}
	mods := []map[string]any{
		{"idx": 0, "name": "0", "path": "", "type": transformerModule},
		{"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
	}
	in := hidden * len(s.Pooling)
	rng := rand.New(rand.NewPCG(s.Seed, 46))
	for _, d := range s.Dense {
		idx := len(mods)
		name := fmt.Sprintf("%d_Dense", idx)
		mods = append(mods, map[string]any{"idx": idx, "name": fmt.Sprint(idx), "path": name, "type": "sentence_transformers.models.Dense"})
		cfg := map[string]any{"in_features": in, "out_features": d.Out, "bias": !d.NoBias}
		if d.Activation != "" {
			cfg["activation_function"] = d.Activation
		}
		w := &Model{Weights: map[string]lmtest.Tensor{}}
		rnd := randomizer(w, rng)
		rnd("linear.weight", 0.5, 0, d.Out, in)
		if !d.NoBias {
			rnd("linear.bias", 0.2, 0, d.Out)
		}
		m.Dense = append(m.Dense, w.Weights)
		sub := filepath.Join(dir, name)
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return err
		}
		if err := writeJSON(filepath.Join(sub, "config.json"), cfg); err != nil {
			return err
		}
		if d.PyTorchOnly {
			names := []string{"linear.weight"}
			if !d.NoBias {
				names = append(names, "linear.bias")
			}
			if err := WriteTorchState(filepath.Join(sub, "pytorch_model.bin"), names, w.Weights, nil); err != nil {
				return err
			}
		} else if err := lmtest.WriteWeights(filepath.Join(sub, "model.safetensors"), w.Weights); err != nil {
			return err
		}
		in = d.Out
	}
	if s.Normalize {
		idx := len(mods)
		name := fmt.Sprintf("%d_Normalize", idx)
		mods = append(mods, map[string]any{"idx": idx, "name": fmt.Sprint(idx), "path": name, "type": "sentence_transformers.models.Normalize"})
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			return err
		}
	}
	if err := writeJSON(filepath.Join(dir, "modules.json"), mods); err != nil {
		return err
	}
	pool := map[string]any{"word_embedding_dimension": hidden}
	field := map[string]string{"cls": "pooling_mode_cls_token", "mean": "pooling_mode_mean_tokens",
		"max": "pooling_mode_max_tokens", "mean-sqrt-len": "pooling_mode_mean_sqrt_len_tokens",
		"weighted-mean": "pooling_mode_weightedmean_tokens", "last-token": "pooling_mode_lasttoken"}
	for _, f := range field {
		pool[f] = false
	}
	for _, p := range s.Pooling {
		f, ok := field[p]
		if !ok {
			return fmt.Errorf("encodertest: pooling %q", p)
		}
		pool[f] = true
	}
	if s.IncludePrompt != nil {
		pool["include_prompt"] = *s.IncludePrompt
	}
	if err := os.MkdirAll(filepath.Join(dir, "1_Pooling"), 0o755); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(dir, "1_Pooling", "config.json"), pool); err != nil {
		return err
	}
	if s.MaxSeqLength > 0 {
		if err := writeJSON(filepath.Join(dir, "sentence_bert_config.json"), map[string]any{"max_seq_length": s.MaxSeqLength, "do_lower_case": false}); err != nil {
			return err
		}
	}
	prompts := s.Prompts
	if prompts == nil {
		prompts = map[string]string{}
	}
	st := map[string]any{"__version__": map[string]string{"sentence_transformers": "3.0.1"}, "prompts": prompts,
		"default_prompt_name": nil, "similarity_fn_name": "cosine"}
	if s.DefaultPrompt != "" {
		st["default_prompt_name"] = s.DefaultPrompt
	}
	switch s.Similarity {
	case "":
	case "-":
		delete(st, "similarity_fn_name")
	default:
		st["similarity_fn_name"] = s.Similarity
	}
	return writeJSON(filepath.Join(dir, "config_sentence_transformers.json"), st)
}

// MPNetBuckets is the number of rows of the relative attention bias table Write
// gives an MPNet (relative_attention_num_buckets, as all-mpnet-base-v2's).
const MPNetBuckets = 32

// Names are the Hugging Face names of a post-LN layer's tensors: the layer's prefix
// (%d: its index), and below it its attention projections, their LayerNorm, the MLP's
// projections and their LayerNorm.
type Names struct{ Layer, Q, K, V, O, AttnLN, In, Out, OutLN string }

// LayerNames returns the tensor names of a model type's layers (not ModernBERT's).
func LayerNames(modelType string) Names {
	switch modelType {
	case "mpnet":
		return Names{"encoder.layer.%d.", "attention.attn.q", "attention.attn.k", "attention.attn.v", "attention.attn.o", "attention.LayerNorm",
			"intermediate.dense", "output.dense", "output.LayerNorm"}
	case "distilbert":
		return Names{"transformer.layer.%d.", "attention.q_lin", "attention.k_lin", "attention.v_lin", "attention.out_lin", "sa_layer_norm",
			"ffn.lin1", "ffn.lin2", "output_layer_norm"}
	}
	return Names{"encoder.layer.%d.", "attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense", "attention.output.LayerNorm",
		"intermediate.dense", "output.dense", "output.LayerNorm"}
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// WriteTorchState writes tensors (float32, in the order of names) as torch.save writes
// a state dict since PyTorch 1.6: a zip archive, every entry stored, holding
// ARCHIVE/data.pkl (a pickle, protocol 2, of an OrderedDict of
// torch._utils._rebuild_tensor_v2 calls on persistent storages), ARCHIVE/data/<key>
// (each tensor's values, little-endian) and ARCHIVE/version, ARCHIVE being the file's
// name without its extension. As Python's pickler does, every global and string is
// memoized (BINPUT) and a repeated one fetched back (BINGET), and the state dict
// carries its _metadata attribute (BUILD). buffers (may be nil) are int64 tensors of
// shape [1, n] written after the others, as the position_ids older transformers
// versions saved.
func WriteTorchState(path string, names []string, tensors map[string]lmtest.Tensor, buffers map[string][]int64) error {
	var p []byte
	op := func(b ...byte) { p = append(p, b...) }
	memo := map[string]byte{} // what was memoized, by its text, at which memo index
	put := func(key string) { // BINPUT the object just pushed
		if len(memo) < 255 {
			memo[key] = byte(len(memo))
			op('q', memo[key])
		}
	}
	get := func(key string) bool { // BINGET it back if memoized
		i, ok := memo[key]
		if ok {
			op('h', i)
		}
		return ok
	}
	str := func(s string) { // BINUNICODE
		if get("s:" + s) {
			return
		}
		op('X')
		p = binary.LittleEndian.AppendUint32(p, uint32(len(s)))
		p = append(p, s...)
		put("s:" + s)
	}
	integer := func(v int) { // BININT
		op('J')
		p = binary.LittleEndian.AppendUint32(p, uint32(int32(v)))
	}
	global := func(module, name string) {
		if get("g:" + module + "." + name) {
			return
		}
		p = append(p, "c"+module+"\n"+name+"\n"...)
		put("g:" + module + "." + name)
	}
	ints := func(v []int) { // a tuple of ints
		op('(')
		for _, x := range v {
			integer(x)
		}
		op('t')
	}
	tensor := func(name, storage string, key, numel int, shape []int) {
		str(name)
		global("torch._utils", "_rebuild_tensor_v2")
		op('(')
		op('(') // the persistent id
		str("storage")
		global("torch", storage)
		str(fmt.Sprint(key))
		str("cpu")
		integer(numel)
		op('t', 'Q') // TUPLE, BINPERSID
		integer(0)   // storage offset
		ints(shape)
		stride := make([]int, len(shape))
		n := 1
		for j := len(shape) - 1; j >= 0; j-- {
			stride[j] = n
			n *= shape[j]
		}
		ints(stride)
		op(0x89) // requires_grad False
		global("collections", "OrderedDict")
		op(')', 'R') // backward hooks
		op('t', 'R') // the arguments' TUPLE, REDUCE
	}
	bufNames := slices.Sorted(maps.Keys(buffers))
	op(0x80, 2) // PROTO 2
	global("collections", "OrderedDict")
	op(')', 'R', '(') // OrderedDict(), MARK
	for i, name := range names {
		tensor(name, "FloatStorage", i, len(tensors[name].Data), tensors[name].Shape)
	}
	for i, name := range bufNames {
		tensor(name, "LongStorage", len(names)+i, len(buffers[name]), []int{1, len(buffers[name])})
	}
	op('u') // SETITEMS
	// The state dict's __dict__: {"_metadata": OrderedDict({"": {"version": 1}})}.
	op('}')
	str("_metadata")
	global("collections", "OrderedDict")
	op(')', 'R', '(')
	str("")
	op('}')
	str("version")
	op('K', 1, 's')   // BININT1 1, SETITEM
	op('u', 's', 'b') // SETITEMS, SETITEM, BUILD
	op('.')           // STOP
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	archive := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	entry := func(name string, data []byte) error {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: archive + "/" + name, Method: zip.Store})
		if err == nil {
			_, err = w.Write(data)
		}
		return err
	}
	err = entry("data.pkl", p)
	for i, name := range names {
		if err != nil {
			break
		}
		var b []byte
		for _, v := range tensors[name].Data {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
		err = entry("data/"+fmt.Sprint(i), b)
	}
	for i, name := range bufNames {
		if err != nil {
			break
		}
		var b []byte
		for _, v := range buffers[name] {
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		}
		err = entry("data/"+fmt.Sprint(len(names)+i), b)
	}
	if err == nil {
		err = entry("version", []byte("3\n"))
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
