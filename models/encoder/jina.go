package encoder

import (
	"encoding/json"
	"fmt"
	"slices"
)

// JinaConfig is what config.json says of the XLM-RoBERTa of jina-embeddings-v3
// (model_type xlm-roberta, position_embedding_type "rotary", architectures
// XLMRobertaLoRA) beyond the sizes every encoder has. The model is Jina's own code
// (config.json's auto_map: jinaai/xlm-roberta-flash-implementation's
// XLMRobertaFlashConfig and XLMRobertaLoRA), which graphloom does not run: flashHidden
// is written from that source, and fields of it that would change the arithmetic and
// are not implemented are refused.
type JinaConfig struct {
	// RotaryBase is rotary_emb_base (default 10,000; 20,000 in jina-embeddings-v3).
	// Every dimension of a head is rotated (rotate_half); there is no position table.
	RotaryBase float64 `json:"rotary_base"`
	// Tasks are lora_adaptations, the task adapters the checkpoint holds
	// (load_trained_adapters true): jina-embeddings-v3's retrieval.query,
	// retrieval.passage, separation, classification and text-matching. Every linear
	// layer and embedding table then has one LoRA adapter per task, of rank Rank
	// (lora_rank, default 4), scaled by Alpha / Rank (lora_alpha, default 1). Empty
	// without adapters.
	Tasks []string `json:"tasks,omitempty"`
	Rank  int      `json:"rank,omitempty"`
	Alpha float64  `json:"alpha,omitempty"`
}

// rawJina is the part of jina-embeddings-v3's config.json only it has, and the fields
// whose XLMRobertaFlashConfig defaults differ from BERT's.
type rawJina struct {
	ModelType    string `json:"model_type"`
	PositionType string `json:"position_embedding_type"`
	silentSizes
	Interleaved    bool              `json:"rotary_emb_interleaved"`
	RotaryScale    json.RawMessage   `json:"rotary_emb_scale_base"`
	RotaryDim      *int              `json:"rotary_emb_dim"`
	RotaryBase     *float64          `json:"rotary_emb_base"`
	Adaptations    []string          `json:"lora_adaptations"`
	Rank           *int              `json:"lora_rank"`
	Alpha          *float64          `json:"lora_alpha"`
	TrainedAdapter bool              `json:"load_trained_adapters"`
	Instructions   map[string]string `json:"task_instructions"`
}

// isJina reports whether the config.json is jina-embeddings-v3's flash-attn XLM-R.
func (r rawJina) isJina() bool { return r.ModelType == "xlm-roberta" && r.PositionType == "rotary" }

// tasks are the task adapters the checkpoint holds: lora_adaptations with
// load_trained_adapters. Without it the checkpoint is a plain XLMRobertaModel's and
// XLMRobertaLoRA starts its adapters at ΔW = 0 (lora_B or lora_A zero).
func (r rawJina) tasks() []string {
	if !r.isJina() || !r.TrainedAdapter {
		return nil
	}
	return r.Adaptations
}

// parseJina reads a jina-embeddings-v3 config.json (data) into c: no position table
// (positions from 0, no offset), XLMRobertaFlashConfig's defaults where the file is
// silent (LayerNorm epsilon 1e-5, one token type, 8,194 positions) and JinaConfig.
func parseJina(data []byte, c *Config) error {
	var r rawJina
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	r.apply(c, 1e-5, 1, 8194)
	// create_mixer_cls reads these when present; the released model has none.
	switch {
	case r.Interleaved:
		return fmt.Errorf("config: rotary_emb_interleaved (GPT-J pairs): only rotate_half rotary positions are supported")
	case len(r.RotaryScale) > 0 && string(r.RotaryScale) != "null":
		return fmt.Errorf("config: rotary_emb_scale_base (xPos): not supported")
	case r.RotaryDim != nil && c.Heads > 0 && *r.RotaryDim != c.Hidden/c.Heads:
		return fmt.Errorf("config: rotary_emb_dim %d: only every dimension of a head (%d) rotated is supported", *r.RotaryDim, c.Hidden/c.Heads)
	}
	j := JinaConfig{RotaryBase: 10_000}
	if r.RotaryBase != nil {
		j.RotaryBase = *r.RotaryBase
	}
	if !(j.RotaryBase > 0) {
		return fmt.Errorf("config: rotary_emb_base %g must be positive", j.RotaryBase)
	}
	if tasks := r.tasks(); len(tasks) > 0 {
		j.Tasks, j.Rank, j.Alpha = tasks, 4, 1
		if r.Rank != nil {
			j.Rank = *r.Rank
		}
		if r.Alpha != nil {
			j.Alpha = *r.Alpha
		}
		if j.Rank < 1 {
			return fmt.Errorf("config: lora_rank %d must be positive", j.Rank)
		}
		for i, t := range j.Tasks {
			if t == "" || slices.Index(j.Tasks, t) != i {
				return fmt.Errorf("config: lora_adaptations %q: task names must be distinct and not empty", j.Tasks)
			}
		}
	}
	c.Jina, c.PositionOffset = j, 0
	if c.Heads > 0 && (c.Hidden/c.Heads)%2 != 0 {
		return fmt.Errorf("config: head size %d is odd: rotary positions rotate pairs", c.Hidden/c.Heads)
	}
	return nil
}

// isJina reports whether an xlm-roberta config.json is jina-embeddings-v3's
// flash-attn XLM-R (rotary positions).
func (c Config) isJina() bool { return c.ModelType == "xlm-roberta" && c.Jina.RotaryBase > 0 }

// flashLayout reports whether the model is one of flash-attn's BERTs (flashSpec).
func (c Config) flashLayout() bool {
	return c.ModelType == "nomic_bert" || c.ModelType == gteType || c.isJina()
}

// TaskIndex returns the index of the named task adapters in Jina.Tasks; -1 for ""
// (no adapters). A name the model lacks is an error listing those it has.
func (c Config) TaskIndex(task string) (int, error) {
	if task == "" {
		return -1, nil
	}
	i := slices.Index(c.Jina.Tasks, task)
	if i < 0 {
		if len(c.Jina.Tasks) == 0 {
			return -1, fmt.Errorf("encoder: task %q: the model has no task adapters", task)
		}
		return -1, fmt.Errorf("encoder: task %q: the model's adapters are %q", task, c.Jina.Tasks)
	}
	return i, nil
}

// silentSizes are the fields whose defaults differ between BERT's config and a remote
// code's config class (XLMRobertaFlashConfig, NewConfig), for that class's defaults
// to apply where config.json is silent.
type silentSizes struct {
	LayerNormEps  *float64 `json:"layer_norm_eps"`
	TypeVocabSize *int     `json:"type_vocab_size"`
	MaxPositions  *int     `json:"max_position_embeddings"`
}

// apply sets c's LayerNorm epsilon, token types and positions: the file's, else the
// given defaults.
func (s silentSizes) apply(c *Config, eps float64, types, positions int) {
	c.LayerNormEps, c.TypeVocabSize, c.MaxPositions = eps, types, positions
	if s.LayerNormEps != nil {
		c.LayerNormEps = *s.LayerNormEps
	}
	if s.TypeVocabSize != nil {
		c.TypeVocabSize = *s.TypeVocabSize
	}
	if s.MaxPositions != nil {
		c.MaxPositions = *s.MaxPositions
	}
}
