package encoder

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/gomlx/gomlx/ml/model"

	"github.com/graphloom/graphloom/models/lm"
)

// decoderTypes are the model_type values loaded as decoder embedders through package
// lm (Qwen3-Embedding is a Qwen3 decoder, e5-mistral a Mistral one). A folder whose
// config.json has auto_map is refused, as for encoders: its remote code may change
// what package lm runs (gte-Qwen2's makes attention bidirectional).
var decoderTypes = []string{"llama", "mistral", "qwen2", "qwen3"}

// decoderFolder reports whether dir's config.json names a decoder model type.
func decoderFolder(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return false
	}
	var c struct {
		ModelType string `json:"model_type"`
	}
	return json.Unmarshal(data, &c) == nil && slices.Contains(decoderTypes, c.ModelType)
}

// loadDecoder loads a decoder embedder (Qwen3-Embedding): the final-normalised hidden
// states of package lm's decoder, pooled. Causal attention makes the last token the
// only one that has seen the whole text, so last-token pooling is what such models
// are trained with; mean, max and mean-sqrt-len are accepted too. cls and
// weighted-mean are refused: with left padding (Qwen3-Embedding's tokenizer) they
// depend on the padding. Batches are padded on the right: positions come from the
// padding mask (lm.PositionsFromMask), so every real token gets the hidden state it
// gets under left padding, and last-token pooling takes the last real token.
func loadDecoder(dir, modelDir string, pipe Pipeline, opts Options) (*Model, error) {
	for _, p := range pipe.Pooling {
		if p == PoolCLS || p == PoolWeightedMean {
			return nil, fmt.Errorf("encoder: %s: pooling %s is not supported for a decoder embedder (want last-token, mean, max or mean-sqrt-len)", dir, p)
		}
	}
	data, err := os.ReadFile(filepath.Join(modelDir, "config.json"))
	if err != nil {
		return nil, fmt.Errorf("encoder: decoder embedder: %w", err)
	}
	var raw struct {
		Architectures []string `json:"architectures"`
		AutoMap       any      `json:"auto_map"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("encoder: %s: %w", filepath.Join(modelDir, "config.json"), err)
	}
	if raw.AutoMap != nil {
		return nil, fmt.Errorf("encoder: %s: auto_map present (architectures %v): the model needs its own remote code, which graphloom does not run", filepath.Join(modelDir, "config.json"), raw.Architectures)
	}
	scope := opts.Scope
	if scope == "" {
		scope = DefaultScope
	}
	store := model.NewStore()
	dec, err := lm.Load(modelDir, store, lm.Options{Scope: scope, DType: opts.DType, ComputeDType: opts.ComputeDType})
	if err != nil {
		return nil, fmt.Errorf("encoder: decoder embedder: %w", err)
	}
	cfg := dec.Config()
	maxLen := cfg.MaxPositions
	if pipe.MaxLength > 0 && (maxLen <= 0 || pipe.MaxLength < maxLen) {
		maxLen = pipe.MaxLength
	}
	if maxLen <= 0 {
		return nil, fmt.Errorf("encoder: %s: no maximum length (config.json max_position_embeddings, sentence_bert_config.json max_seq_length or Options.MaxLength)", dir)
	}
	pipe.MaxLength = maxLen
	digest, err := folderDigest(modelDir, pipe)
	if err != nil {
		return nil, err
	}
	m := &Model{dec: dec, hidden: cfg.Hidden, tok: dec.Tokenizer, pipe: pipe, dir: dir, digest: digest, store: store,
		scope: scope, maxLen: maxLen, batch: opts.BatchSize}
	if m.batch <= 0 {
		m.batch = DefaultBatchSize
	}
	if err := m.loadDense(); err != nil {
		return nil, err
	}
	return m, nil
}
