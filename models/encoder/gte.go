package encoder

import (
	"encoding/json"
	"fmt"
	"math"
)

// gteType is the model_type of Alibaba's gte-v1.5 models ("NewModel").
const gteType = "new"

// GTEConfig is what config.json says of a gte-v1.5 NewModel (gte-base-en-v1.5,
// gte-large-en-v1.5, gte-multilingual-base) beyond the sizes every encoder has. The
// model is Alibaba's own code (config.json's auto_map: Alibaba-NLP/new-impl's
// configuration.NewConfig and modeling.NewModel), which graphloom does not run:
// flashHidden is written from that source, and fields of it that would change the
// arithmetic and are not implemented are refused.
type GTEConfig struct {
	// RopeTheta is rope_theta (default 10,000; 500,000 in gte-base-en-v1.5).
	RopeTheta float64 `json:"rope_theta"`
	// NTKFactor is rope_scaling's factor for type "ntk" (2 in gte-*-en-v1.5, 8 in
	// gte-multilingual-base; 0 for none, and for a factor of 1 or less, which the
	// remote code does not apply): NTKScalingRotaryEmbedding, fixed when the
	// model is built, divides the frequencies of base θ·F by F^(2/hd) (kexue.fm/9706's
	// (6)) for every position, whatever the length.
	NTKFactor float64 `json:"ntk_factor,omitempty"`
}

// rawGTE is the part of a NewModel's config.json only it has.
type rawGTE struct {
	RopeTheta   *float64 `json:"rope_theta"`
	RopeScaling *struct {
		Type   string   `json:"type"`
		Factor float64  `json:"factor"`
		MixedB *float64 `json:"mixed_b"`
	} `json:"rope_scaling"`
	silentSizes
	LayerNormType string `json:"layer_norm_type"`
	PackQKV       *bool  `json:"pack_qkv"`
	LognScale     bool   `json:"logn_attention_scale"`
	PositionType  string `json:"position_embedding_type"`
}

// parseGTE reads a NewModel's config.json (data) into c: NewConfig's defaults where
// the file is silent (one token type, 2,048 positions, LayerNorm epsilon 1e-12), no
// position table and GTEConfig.
func parseGTE(data []byte, c *Config) error {
	var r rawGTE
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	r.apply(c, 1e-12, 1, 2048)
	g := GTEConfig{RopeTheta: 10_000}
	if r.RopeTheta != nil {
		g.RopeTheta = *r.RopeTheta
	}
	if !(g.RopeTheta > 0) {
		return fmt.Errorf("config: rope_theta %g must be positive", g.RopeTheta)
	}
	if s := r.RopeScaling; s != nil {
		switch {
		case s.Type != "ntk":
			return fmt.Errorf("config: rope_scaling type %q: NewModel scales rotary positions by \"ntk\" only", s.Type)
		case s.MixedB != nil:
			return fmt.Errorf("config: rope_scaling mixed_b: only the fixed NTK scaling is supported")
		case s.Factor > 1:
			g.NTKFactor = s.Factor
		}
		// NTKScalingRotaryEmbedding rescales only when its cache (max_position_embeddings
		// × factor positions) outgrows max_position_embeddings: a factor of 1 or less
		// leaves the frequencies as they are.
	}
	switch {
	case r.PositionType != "" && r.PositionType != "rope":
		return fmt.Errorf("config: position_embedding_type %q: only NewModel's rotary positions (rope) are supported", r.PositionType)
	case r.LayerNormType != "" && r.LayerNormType != "layer_norm":
		return fmt.Errorf("config: layer_norm_type %q: only layer_norm is supported", r.LayerNormType)
	case r.PackQKV != nil && !*r.PackQKV:
		return fmt.Errorf("config: pack_qkv false (separate q_proj, k_proj, v_proj): only the packed qkv_proj is supported")
	case r.LognScale:
		return fmt.Errorf("config: logn_attention_scale: not supported")
	}
	c.GTE, c.PositionOffset = g, 0
	if c.Heads > 0 && (c.Hidden/c.Heads)%2 != 0 {
		return fmt.Errorf("config: head size %d is odd: rotary positions rotate pairs", c.Hidden/c.Heads)
	}
	return nil
}

// invFreq returns the model's RoPE inverse frequencies for head size hd, in float32 as
// NTKScalingRotaryEmbedding computes them: 1 / (θ·F)^(2i/hd), then divided by
// F^(2/hd) (a float32 quotient); RotaryEmbedding's 1 / θ^(2i/hd) without scaling.
func (g GTEConfig) invFreq(hd int) []float32 {
	if g.NTKFactor == 0 {
		return invFreq(g.RopeTheta, hd)
	}
	inv := invFreq(g.RopeTheta*g.NTKFactor, hd)
	div := float32(math.Pow(g.NTKFactor, 2/float64(hd)))
	for i := range inv {
		inv[i] /= div
	}
	return inv
}
