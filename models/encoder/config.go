package encoder

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Config is the architecture read from a Hugging Face config.json of a BertModel,
// RobertaModel, XLMRobertaModel, MPNetModel, DistilBertModel or ModernBertModel, or of
// the remote-code models graphloom implements: NomicBertModel, jina-embeddings-v3's
// XLMRobertaLoRA and gte-v1.5's NewModel.
type Config struct {
	ModelType     string   `json:"model_type"` // "bert", "roberta", "xlm-roberta", "mpnet", "distilbert", "modernbert", "nomic_bert" or "new"
	Architectures []string `json:"architectures,omitempty"`
	VocabSize     int      `json:"vocab_size"`
	Hidden        int      `json:"hidden_size"`
	Layers        int      `json:"num_hidden_layers"`
	Heads         int      `json:"num_attention_heads"`
	Intermediate  int      `json:"intermediate_size"`
	MaxPositions  int      `json:"max_position_embeddings"`
	TypeVocabSize int      `json:"type_vocab_size"` // token type table rows; 0 = no table (transformers' default is 2)
	LayerNormEps  float64  `json:"layer_norm_eps"`  // default 1e-12 (ModernBERT: norm_eps, default 1e-5)
	PadTokenID    int      `json:"pad_token_id"`    // default 0 (BERT); RoBERTa/XLM-R files say 1
	// PositionOffset is added to the position of each token: 0 for BERT,
	// pad_token_id + 1 for RoBERTa and XLM-R.
	PositionOffset int `json:"position_offset"`
	// RelativeBuckets is the number of rows of MPNet's relative attention bias table
	// (relative_attention_num_buckets, default 32), shared by every layer; 0 for the
	// other architectures. transformers buckets relative positions into 32 buckets
	// whatever the field says (MPNetEncoder.compute_position_bias's default), so a
	// table of fewer rows is refused and rows past 32 are never read.
	RelativeBuckets int `json:"relative_buckets,omitempty"`
	// ModernBERT holds what only a ModernBertModel has (zero for the others).
	ModernBERT ModernBERTConfig `json:"modernbert,omitzero"`
	// NomicBERT holds what only a NomicBertModel has (zero for the others).
	NomicBERT NomicBERTConfig `json:"nomic_bert,omitzero"`
	// Jina holds what only jina-embeddings-v3's XLM-RoBERTa (xlm-roberta with rotary
	// positions) has (zero for the others).
	Jina JinaConfig `json:"jina,omitzero"`
	// GTE holds what only a gte-v1.5 NewModel (model_type "new") has (zero for the
	// others).
	GTE GTEConfig `json:"gte,omitzero"`
	// JinaBERT holds what only a JinaBertModel (jina-embeddings-v2: model_type "bert"
	// with ALiBi) has (zero for the others).
	JinaBERT JinaBERTConfig `json:"jina_bert,omitzero"`
}

// mpnetBuckets is the number of relative position buckets MPNet's attention bias
// uses (transformers' MPNetEncoder), and mpnetPadding its embeddings' padding index,
// fixed at 1 whatever config.json's pad_token_id.
const (
	mpnetBuckets = 32
	mpnetPadding = 1
)

var supportedModelTypes = []string{"bert", "roberta", "xlm-roberta", "mpnet", "distilbert", "modernbert", "nomic_bert", gteType}

// rawConfig is config.json as transformers writes it.
type rawConfig struct {
	ModelType     string   `json:"model_type"`
	Architectures []string `json:"architectures"`
	VocabSize     int      `json:"vocab_size"`
	Hidden        int      `json:"hidden_size"`
	Layers        int      `json:"num_hidden_layers"`
	Heads         int      `json:"num_attention_heads"`
	Intermediate  int      `json:"intermediate_size"`
	MaxPositions  int      `json:"max_position_embeddings"`
	TypeVocabSize *int     `json:"type_vocab_size"`
	LayerNormEps  float64  `json:"layer_norm_eps"`
	PadTokenID    *int     `json:"pad_token_id"`
	HiddenAct     string   `json:"hidden_act"`
	PositionType  string   `json:"position_embedding_type"`
	IsDecoder     bool     `json:"is_decoder"`
	AddCrossAttn  bool     `json:"add_cross_attention"`
	AutoMap       any      `json:"auto_map"`
	RopeTheta     *float64 `json:"rope_theta"`
	RelBuckets    *int     `json:"relative_attention_num_buckets"`
	// DistilBERT's names for the sizes and the activation.
	Dim        int    `json:"dim"`
	NLayers    int    `json:"n_layers"`
	NHeads     int    `json:"n_heads"`
	HiddenDim  int    `json:"hidden_dim"`
	Activation string `json:"activation"`
}

// ReadConfig reads dir/config.json.
func ReadConfig(dir string) (Config, error) {
	path := filepath.Join(dir, "config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Config{}, fmt.Errorf("encoder: %s not found: a Hugging Face model folder needs config.json, *.safetensors and tokenizer.json (weights are never downloaded)", path)
		}
		return Config{}, fmt.Errorf("encoder: reading %s: %w", path, err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return Config{}, fmt.Errorf("encoder: %s: %w", path, err)
	}
	return c, nil
}

// ParseConfig decodes a config.json. Fields that change the arithmetic and are not
// implemented are errors naming the field.
func ParseConfig(data []byte) (Config, error) {
	var r rawConfig
	if err := json.Unmarshal(data, &r); err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	c := Config{ModelType: r.ModelType, Architectures: r.Architectures, VocabSize: r.VocabSize, Hidden: r.Hidden,
		Layers: r.Layers, Heads: r.Heads, Intermediate: r.Intermediate, MaxPositions: r.MaxPositions,
		TypeVocabSize: 2, LayerNormEps: r.LayerNormEps}
	if r.TypeVocabSize != nil {
		c.TypeVocabSize = *r.TypeVocabSize
	}
	switch r.ModelType {
	case "bert":
		if r.PositionType == "alibi" {
			if err := parseJinaBERT(data, &c); err != nil {
				return Config{}, err
			}
		}
	case "roberta", "xlm-roberta":
		c.PadTokenID = 1 // transformers' RobertaConfig default
		if (rawJina{ModelType: r.ModelType, PositionType: r.PositionType}).isJina() {
			if err := parseJina(data, &c); err != nil {
				return Config{}, err
			}
		}
	case "mpnet":
		// MPNetEmbeddings has no token type table and pads positions with index 1.
		c.PadTokenID, c.TypeVocabSize, c.RelativeBuckets = mpnetPadding, 0, mpnetBuckets
		if r.RelBuckets != nil {
			c.RelativeBuckets = *r.RelBuckets
		}
		if c.RelativeBuckets < mpnetBuckets {
			return Config{}, fmt.Errorf("config: relative_attention_num_buckets %d: MPNet's attention reads %d buckets of relative position (transformers' MPNetEncoder), so the table needs at least as many rows", c.RelativeBuckets, mpnetBuckets)
		}
	case "distilbert":
		// DistilBertConfig names the sizes dim, n_layers, n_heads and hidden_dim, has
		// no token types, and its LayerNorms' epsilon is fixed at 1e-12.
		c.Hidden, c.Layers, c.Heads, c.Intermediate = r.Dim, r.NLayers, r.NHeads, r.HiddenDim
		c.TypeVocabSize, c.LayerNormEps = 0, 1e-12
		if r.Activation != "" && r.Activation != "gelu" {
			return Config{}, fmt.Errorf("config: activation %q not supported (want gelu)", r.Activation)
		}
	case "modernbert":
		mc, eps, err := parseModernBERT(data, c.Layers)
		if err != nil {
			return Config{}, err
		}
		c.ModernBERT, c.LayerNormEps, c.TypeVocabSize, c.PadTokenID = mc, eps, 0, modernPadding
	case "nomic_bert":
		if err := parseNomicBERT(data, &c); err != nil {
			return Config{}, err
		}
	case gteType:
		if err := parseGTE(data, &c); err != nil {
			return Config{}, err
		}
	case "":
		return Config{}, fmt.Errorf("config: model_type missing (architectures %v; want one of %s)", r.Architectures, strings.Join(supportedModelTypes, ", "))
	default:
		return Config{}, fmt.Errorf("config: model_type %q (architectures %v) is not a supported embedding model (want an encoder: %s; or a decoder embedder: %s)",
			r.ModelType, r.Architectures, strings.Join(supportedModelTypes, ", "), strings.Join(decoderTypes, ", "))
	}
	// NomicBERT's and jina-embeddings-v3's folders name their makers' remote code
	// (auto_map); graphloom runs its own implementation of it (flashbert.go), never
	// that code.
	if r.AutoMap != nil && !c.flashLayout() && !c.isJinaBERT() {
		return Config{}, fmt.Errorf("config: auto_map present (architectures %v): the model needs its own remote code, which graphloom does not run", r.Architectures)
	}
	if r.PadTokenID != nil {
		if r.ModelType == "mpnet" && *r.PadTokenID != mpnetPadding {
			return Config{}, fmt.Errorf("config: pad_token_id %d: MPNet's embeddings number positions from padding index %d whatever the config says (transformers' MPNetEmbeddings), so a model padded with another id is not run", *r.PadTokenID, mpnetPadding)
		}
		c.PadTokenID = *r.PadTokenID
	}
	switch r.ModelType {
	case "roberta", "xlm-roberta", "mpnet":
		if !c.isJina() { // rotary: no position table, no offset
			c.PositionOffset = c.PadTokenID + 1
		}
	}
	if r.HiddenAct != "" && r.HiddenAct != "gelu" {
		return Config{}, fmt.Errorf("config: hidden_act %q not supported (want gelu)", r.HiddenAct)
	}
	// ModernBertConfig never reads position_embedding_type (mmBERT's configs say
	// "sans_pos"): its positions are rotary whatever the field says.
	if r.PositionType == "rope" && r.ModelType == gteType {
		// NewModel's rotary positions
	} else if r.PositionType != "" && r.PositionType != "absolute" && r.ModelType != "modernbert" && !c.isJina() && !c.isJinaBERT() {
		return Config{}, fmt.Errorf("config: position_embedding_type %q not supported (want absolute)", r.PositionType)
	}
	if r.RopeTheta != nil && r.ModelType != "modernbert" && r.ModelType != gteType {
		return Config{}, fmt.Errorf("config: rope_theta present (architectures %v): rotary encoders are not supported", r.Architectures)
	}
	if r.IsDecoder || r.AddCrossAttn {
		return Config{}, errors.New("config: is_decoder / add_cross_attention: only the plain encoder is supported")
	}
	if c.LayerNormEps == 0 {
		c.LayerNormEps = 1e-12
	}
	return c, c.Validate()
}

// Validate checks the sizes.
func (c Config) Validate() error {
	switch {
	case c.VocabSize < 1 || c.Hidden < 1 || c.Layers < 1 || c.Heads < 1 || c.Intermediate < 1 || c.MaxPositions < 1:
		return fmt.Errorf("config: invalid sizes (vocab_size %d, hidden_size %d, num_hidden_layers %d, num_attention_heads %d, intermediate_size %d, max_position_embeddings %d)",
			c.VocabSize, c.Hidden, c.Layers, c.Heads, c.Intermediate, c.MaxPositions)
	case c.Hidden%c.Heads != 0:
		return fmt.Errorf("config: hidden_size %d is not a multiple of num_attention_heads %d", c.Hidden, c.Heads)
	case c.TypeVocabSize < 0:
		return fmt.Errorf("config: type_vocab_size %d", c.TypeVocabSize)
	case c.PadTokenID < 0 || c.PadTokenID >= c.VocabSize:
		return fmt.Errorf("config: pad_token_id %d out of the vocabulary (%d)", c.PadTokenID, c.VocabSize)
	case c.PositionOffset >= c.MaxPositions:
		return fmt.Errorf("config: max_position_embeddings %d leaves no position after the offset %d (pad_token_id + 1)", c.MaxPositions, c.PositionOffset)
	case !(c.LayerNormEps > 0):
		return errors.New("config: layer_norm_eps must be positive")
	}
	return nil
}

// MaxTokens is the longest sequence (special tokens included) the position table
// holds: max_position_embeddings less the position offset.
func (c Config) MaxTokens() int { return c.MaxPositions - c.PositionOffset }
