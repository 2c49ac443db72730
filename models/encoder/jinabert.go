package encoder

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"

	"github.com/graphloom/graphloom/models/lm"
)

// JinaBERTConfig is what config.json says of a JinaBertModel (jina-embeddings-v2:
// base-en, small-en; model_type "bert" with position_embedding_type "alibi",
// architectures JinaBert…) beyond BERT's sizes. The model is Jina's own code
// (config.json's auto_map: jinaai/jina-bert-implementation's JinaBertConfig and
// JinaBertModel), which graphloom does not run: the layer is BERT's post-LN layer
// (Network.layer) without a position table, with ALiBi biases on the attention
// scores (alibiBias) and, for the GLU feed-forward types, JinaBertGLUMLP:
// LayerNorm(x + wo(act(z₁) · z₂)) for [z₁; z₂] = gated_layers(x), no bias on
// gated_layers. The qk-post-norm variant (jina-embeddings-v2-base-code:
// layer_norm_q / layer_norm_k, up_gated_layer) is a different layer, refused by its
// tensor names.
type JinaBERTConfig struct {
	// FeedForward is feed_forward_type: "geglu" (the released models'; exact GELU),
	// "reglu" (ReLU), or "original", BERT's intermediate/output MLP.
	FeedForward string `json:"feed_forward_type"`
}

// isJinaBERT reports whether the model is a JinaBertModel.
func (c Config) isJinaBERT() bool { return c.JinaBERT.FeedForward != "" }

// glu reports whether its feed-forward is JinaBertGLUMLP.
func (c JinaBERTConfig) glu() bool { return c.FeedForward == "geglu" || c.FeedForward == "reglu" }

// parseJinaBERT reads a JinaBertModel's config.json (data) into c: no position table
// (ALiBi) and JinaBERTConfig.
func parseJinaBERT(data []byte, c *Config) error {
	var r struct {
		FeedForward *string `json:"feed_forward_type"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	// Other BERTs with ALiBi (MosaicBERT, DNABERT-2) are other remote code, with other
	// layers: only Jina's is read.
	jina := false
	for _, a := range c.Architectures {
		jina = jina || strings.HasPrefix(a, "JinaBert")
	}
	if !jina {
		return fmt.Errorf("config: position_embedding_type \"alibi\" (architectures %v): only Jina's JinaBert models with ALiBi are supported", c.Architectures)
	}
	j := JinaBERTConfig{FeedForward: "original"} // JinaBertConfig's default
	if r.FeedForward != nil {
		j.FeedForward = *r.FeedForward
	}
	switch j.FeedForward {
	case "geglu", "reglu", "original":
	default:
		return fmt.Errorf("config: feed_forward_type %q not supported (want geglu, reglu or original)", j.FeedForward)
	}
	c.JinaBERT = j
	return nil
}

// checkJinaBERT refuses the qk-post-norm JinaBERT (jina-embeddings-v2-base-code's
// jina-bert-v2-qk-post-norm: LayerNorms on q and k, up_gated_layer), which shares
// JinaBertModel's config and differs in its tensors, with or without a prefix.
func checkJinaBERT(cfg Config, ws lm.WeightSource) error {
	if !cfg.isJinaBERT() {
		return nil
	}
	for _, p := range weightPrefixes {
		for _, name := range []string{"encoder.layer.0.mlp.up_gated_layer.weight", "encoder.layer.0.attention.self.layer_norm_q.weight"} {
			if _, ok := ws.Shape(p + name); ok {
				return fmt.Errorf("weights: %s: the qk-post-norm JinaBERT (jina-embeddings-v2-base-code's jina-bert-v2-qk-post-norm) is not supported", p+name)
			}
		}
	}
	return nil
}

// alibiSlopes are ALiBi's per-head slopes as JinaBertSelfAttention's
// _get_alibi_head_slopes computes them (Press et al., 2022): for n heads, a power of
// two, 2^(−8(h+1)/n); otherwise those of the largest power of two p below n, then
// every other slope of 2p's, the first n − p of them.
func alibiSlopes(n int) []float64 {
	pow2 := func(n int) []float64 {
		s := make([]float64, n)
		for h := range s {
			s[h] = math.Pow(2, -8*float64(h+1)/float64(n))
		}
		return s
	}
	p := 1
	for p*2 <= n {
		p *= 2
	}
	if p == n {
		return pow2(n)
	}
	out := pow2(p)
	for i, s := range alibiSlopes(2 * p) {
		if i%2 == 0 && len(out) < n {
			out = append(out, s)
		}
	}
	return out
}

// alibiBias is JinaBertModel's ALiBi bias [1, Heads, q1 − q0, t] for the queries
// q0 … q1−1 of sequences of t tokens: −slope_h · |key − query| in float32
// (rebuild_alibi_tensor), the same for every layer and sequence; padding comes last,
// so the real tokens' distances are their own. The distances are made in the graph,
// a block of queries at a time (attend; z, when not nil, the float32 zero the block's
// bias depends on), then cast to the compute dtype.
func (n *Network) alibiBias(g *graph.Graph, q0, q1, t int, z *graph.Node) *graph.Node {
	slopes := alibiSlopes(n.cfg.Heads)
	neg := make([]float32, len(slopes))
	for h, s := range slopes {
		neg[h] = -float32(s)
	}
	start := graph.Scalar(g, dtypes.Float32, float64(q0))
	if z != nil {
		start = graph.Add(start, z)
	}
	q := graph.Add(graph.Iota(g, shapes.Make(dtypes.Float32, q1-q0, t), 0), start)
	k := graph.Iota(g, shapes.Make(dtypes.Float32, q1-q0, t), 1)
	dist := graph.InsertAxes(graph.Abs(graph.Sub(k, q)), 0)                     // [1, q1−q0, t]
	bias := graph.Mul(graph.Reshape(graph.Const(g, neg), len(neg), 1, 1), dist) // [Heads, q1−q0, t]
	return toDType(graph.InsertAxes(bias, 0), n.dtype)
}
