package encoder_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/models/encoder"
	"github.com/graphloom/graphloom/models/lm"
	"github.com/graphloom/graphloom/models/lm/lmtest"
)

// qwen3Reference is the float64 forward pass of Hugging Face's Qwen3Model on one
// sequence (RMSNorm, per-head q/k RMSNorm, rotate_half RoPE, grouped-query causal
// attention, SwiGLU), returning the final-normalised hidden states.
func qwen3Reference(m *lmtest.Model, ids []int32) [][]float64 {
	s := m.Spec
	H, nh, nkv := s.Hidden, s.Heads, s.KVHeads
	hd := H / nh
	const eps = 1e-5
	w := func(name string) []float64 {
		t := m.Weights[name]
		out := make([]float64, len(t.Data))
		for i, v := range t.Data {
			out[i] = float64(v)
		}
		return out
	}
	rms := func(x, g []float64) []float64 {
		var ss float64
		for _, a := range x {
			ss += a * a
		}
		r := 1 / math.Sqrt(ss/float64(len(x))+eps)
		out := make([]float64, len(x))
		for i, a := range x {
			out[i] = a * r * g[i]
		}
		return out
	}
	mat := func(x, wt []float64, out int) []float64 {
		y := make([]float64, out)
		for o := range out {
			for i, a := range x {
				y[o] += wt[o*len(x)+i] * a
			}
		}
		return y
	}
	rope := func(v []float64, p int) {
		half := hd / 2
		for i := range half {
			ang := float64(p) / math.Pow(s.RopeTheta, float64(2*i)/float64(hd))
			c, sn := math.Cos(ang), math.Sin(ang)
			a, b := v[i], v[i+half]
			v[i], v[i+half] = a*c-b*sn, b*c+a*sn
		}
	}
	n := len(ids)
	emb := w("model.embed_tokens.weight")
	x := make([][]float64, n)
	for i, id := range ids {
		x[i] = append([]float64(nil), emb[int(id)*H:(int(id)+1)*H]...)
	}
	for l := range s.Layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		q, k, v := make([][][]float64, n), make([][][]float64, n), make([][][]float64, n)
		for i := range n {
			h := rms(x[i], w(p+"input_layernorm.weight"))
			qf, kf, vf := mat(h, w(p+"self_attn.q_proj.weight"), nh*hd), mat(h, w(p+"self_attn.k_proj.weight"), nkv*hd), mat(h, w(p+"self_attn.v_proj.weight"), nkv*hd)
			for hh := range nh {
				qh := rms(qf[hh*hd:(hh+1)*hd], w(p+"self_attn.q_norm.weight"))
				rope(qh, i)
				q[i] = append(q[i], qh)
			}
			for hh := range nkv {
				kh := rms(kf[hh*hd:(hh+1)*hd], w(p+"self_attn.k_norm.weight"))
				rope(kh, i)
				k[i] = append(k[i], kh)
				v[i] = append(v[i], vf[hh*hd:(hh+1)*hd])
			}
		}
		for i := range n {
			ctx := make([]float64, nh*hd)
			for hh := range nh {
				kv := hh / (nh / nkv)
				sc := make([]float64, i+1)
				mx := math.Inf(-1)
				for j := 0; j <= i; j++ {
					var d float64
					for e := range hd {
						d += q[i][hh][e] * k[j][kv][e]
					}
					sc[j] = d / math.Sqrt(float64(hd))
					mx = math.Max(mx, sc[j])
				}
				var z float64
				for j := range sc {
					sc[j] = math.Exp(sc[j] - mx)
					z += sc[j]
				}
				for j := range sc {
					for e := range hd {
						ctx[hh*hd+e] += sc[j] / z * v[j][kv][e]
					}
				}
			}
			o := mat(ctx, w(p+"self_attn.o_proj.weight"), H)
			for e := range H {
				x[i][e] += o[e]
			}
		}
		for i := range n {
			h := rms(x[i], w(p+"post_attention_layernorm.weight"))
			g, u := mat(h, w(p+"mlp.gate_proj.weight"), s.Intermediate), mat(h, w(p+"mlp.up_proj.weight"), s.Intermediate)
			for e := range g {
				g[e] = g[e] / (1 + math.Exp(-g[e])) * u[e]
			}
			d := mat(g, w(p+"mlp.down_proj.weight"), H)
			for e := range H {
				x[i][e] += d[e]
			}
		}
	}
	for i := range n {
		x[i] = rms(x[i], w("model.norm.weight"))
	}
	return x
}

// TestDecoderEmbedder: a tiny Qwen3 folder (Qwen3-Embedding's architecture) pooled
// at the last token with an instruction prompt, normalised, against the float64
// reference; and mean pooling without normalisation.
func TestDecoderEmbedder(t *testing.T) {
	for _, bare := range []bool{false, true} {
		t.Run(fmt.Sprintf("bare=%t", bare), func(t *testing.T) { testDecoderEmbedder(t, bare) })
	}
}

// testDecoderEmbedder runs TestDecoderEmbedder on a causal LM's checkpoint, or with
// bare on a base model's (Qwen3-Embedding's own layout: no "model." prefix, no
// lm_head.weight).
func testDecoderEmbedder(t *testing.T, bare bool) {
	eng := newEngine(t)
	dir := filepath.Join(t.TempDir(), "qwen3-embedding-tiny")
	tm, err := lmtest.Write(dir, lmtest.Spec{ModelType: "qwen3", Seed: 9, Bare: bare})
	require.NoError(t, err)
	tok, err := lm.LoadTokenizer(dir)
	require.NoError(t, err)
	instruct := "Instruct: Given a question, retrieve passages that answer it\nQuery:"
	for _, c := range []struct {
		pooling string
		norm    bool
	}{{"last-token", true}, {"mean", false}} {
		t.Run(c.pooling, func(t *testing.T) {
			norm := c.norm
			enc, err := encoder.Load(dir, encoder.Options{Pooling: c.pooling, Normalize: &norm, QueryPrompt: &instruct, BatchSize: 2})
			require.NoError(t, err)
			assert.Equal(t, tm.Spec.Hidden, enc.Dim())
			got, err := enc.Embed(eng, texts, true)
			require.NoError(t, err)
			for j, text := range texts {
				ids, err := tok.Encode(instruct+text, true)
				require.NoError(t, err)
				h := qwen3Reference(tm, ids)
				want := make([]float64, tm.Spec.Hidden)
				if c.pooling == "last-token" {
					copy(want, h[len(h)-1])
				} else {
					for _, row := range h {
						for e, a := range row {
							want[e] += a / float64(len(h))
						}
					}
				}
				if c.norm {
					var ss float64
					for _, a := range want {
						ss += a * a
					}
					for e := range want {
						want[e] /= math.Sqrt(ss)
					}
				}
				assertClose(t, want, got[j], text)
			}
		})
	}
	_, err = encoder.Load(dir, encoder.Options{Pooling: "cls"})
	assert.ErrorContains(t, err, "pooling cls is not supported for a decoder embedder")
}

// TestDecoderEmbedderRefusesRemoteCode: a decoder folder whose config.json has
// auto_map (gte-Qwen2's bidirectional attention lives in its remote code) is refused,
// not run causally.
func TestDecoderEmbedderRefusesRemoteCode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "remote")
	_, err := lmtest.Write(dir, lmtest.Spec{ModelType: "qwen2", Seed: 1})
	require.NoError(t, err)
	path := filepath.Join(dir, "config.json")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, json.Unmarshal(data, &cfg))
	cfg["auto_map"] = map[string]any{"AutoModel": "modeling_qwen.Qwen2Model"}
	data, err = json.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	_, err = encoder.Load(dir, encoder.Options{Pooling: "last-token"})
	assert.ErrorContains(t, err, "auto_map present")
}

// TestTokenizeStripsAsSentenceTransformers: a text is embedded from its prompt and
// text joined and stripped of surrounding white space, as sentence-transformers
// tokenizes it; with a byte-level BPE tokenizer the white space would be tokens.
func TestTokenizeStripsAsSentenceTransformers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "qwen3-embedding-tiny")
	_, err := lmtest.Write(dir, lmtest.Spec{ModelType: "qwen3", Seed: 9})
	require.NoError(t, err)
	tok, err := lm.LoadTokenizer(dir)
	require.NoError(t, err)
	prompt := "  Query: "
	enc, err := encoder.Load(dir, encoder.Options{Pooling: "last-token", QueryPrompt: &prompt})
	require.NoError(t, err)
	for _, tc := range []struct{ text, stripped string }{
		{"Where was Tomas Brell born?\n", "Query: Where was Tomas Brell born?"},
		{"\tWhere was Tomas Brell born?  ", "Query: \tWhere was Tomas Brell born?"}, // the prompt and text joined, then stripped
		{"Where was Tomas Brell born?\x1f", "Query: Where was Tomas Brell born?"},
	} {
		text := tc.text
		got, _, _, err := enc.Tokenize(text, true)
		require.NoError(t, err)
		want, err := tok.Encode(tc.stripped, true)
		require.NoError(t, err)
		unstripped, err := tok.Encode(prompt+text, true)
		require.NoError(t, err)
		require.NotEqual(t, want, unstripped, "the tokenizer reads the white space of %q", text)
		assert.Equal(t, want, got, "%q", text)
	}
}
