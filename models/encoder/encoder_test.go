package encoder_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/kernels"
	"github.com/graphloom/graphloom/models/encoder"
	"github.com/graphloom/graphloom/models/encoder/encodertest"
	"github.com/graphloom/graphloom/models/lm"
	"github.com/graphloom/graphloom/models/lm/lmtest"
)

// texts have different lengths, so that batches are padded and sorted.
var texts = []string{
	"Where was Tomas Brell born?",
	"the harbour",
	"The Meridian was bought in 1801 by the harbour guild, who kept it in the north dock until the war.",
	"x",
	"GraphRAG: R-GCN, PPR (alpha = 0.5), and soft prompts!",
}

func newEngine(t *testing.T) *engine.Engine {
	t.Helper()
	eng, err := engine.New(engine.Config{Backend: "go"})
	require.NoError(t, err)
	t.Cleanup(eng.Close)
	return eng
}

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }

// refBucket is transformers' MPNetEncoder.relative_position_bucket as written there
// (num_buckets 32, max_distance 128), in float64, for a key at rel = key − query.
func refBucket(rel int) int {
	numBuckets, maxDistance := 32, 128
	ret := 0
	n := -rel
	numBuckets /= 2
	if n < 0 {
		ret += numBuckets
	}
	n = max(n, -n)
	maxExact := numBuckets / 2
	if n < maxExact {
		return ret + n
	}
	large := maxExact + int(math.Log(float64(n)/float64(maxExact))/math.Log(float64(maxDistance)/float64(maxExact))*float64(numBuckets-maxExact))
	return ret + min(large, numBuckets-1)
}

// reference is the float64 forward pass of Hugging Face's BertModel / RobertaModel /
// MPNetModel / ModernBertModel (or Nomic's and Jina's, referenceFlash) on one
// unpadded sequence, followed by sentence-transformers' pooling over the tokens from
// skip on and its Normalize module.
func reference(m *encodertest.Model, eps float64, ids []int32, skip int, modes []string, normalize bool) []float64 {
	return referenceTask(m, eps, ids, skip, modes, normalize, -1)
}

// referenceTask is reference with the task adapters of index task (-1: none) of a
// jina-embeddings-v3 model.
func referenceTask(m *encodertest.Model, eps float64, ids []int32, skip int, modes []string, normalize bool, task int) []float64 {
	var x [][]float64
	switch m.Spec.ModelType {
	case "modernbert":
		x = referenceModernBERT(m, ids)
	case "nomic_bert", "jina", "new":
		x = referenceFlash(m, ids, task)
	default:
		x = referenceBERT(m, eps, ids)
	}
	out := referencePool(x, m.Spec.Hidden, skip, modes)
	for i, d := range m.Spec.Dense { // sentence-transformers' Dense: activation(W·x + b)
		var b []float64
		if t, ok := m.Dense[i]["linear.bias"]; ok {
			b = make([]float64, len(t.Data))
			for j, v := range t.Data {
				b[j] = float64(v)
			}
		}
		wt := m.Dense[i]["linear.weight"].Data
		w := make([]float64, len(wt))
		for j, v := range wt {
			w[j] = float64(v)
		}
		out = refDense(out, w, b, d.Out)
		for j, u := range out {
			switch d.Activation {
			case "", "torch.nn.modules.activation.Tanh":
				out[j] = math.Tanh(u)
			case "torch.nn.modules.activation.GELU":
				out[j] = kernels.GELURef(u)
			case "torch.nn.modules.activation.ReLU":
				out[j] = math.Max(u, 0)
			case "torch.nn.modules.activation.Sigmoid":
				out[j] = 1 / (1 + math.Exp(-u))
			}
		}
	}
	if normalize {
		var ss float64
		for _, a := range out {
			ss += a * a
		}
		for e := range out {
			out[e] /= math.Sqrt(ss)
		}
	}
	return out
}

// refEps is the LayerNorm epsilon of the test folders of a model type: 1e-12 for
// BERT's and DistilBERT's (fixed there), 1e-5 for the others (their config.json's).
func refEps(modelType string) float64 {
	if modelType == "bert" || modelType == "distilbert" || modelType == "nomic_bert" || modelType == "new" || modelType == "jina_bert" {
		return 1e-12
	}
	return 1e-5
}

// refWeight is the named tensor of m in float64, nil when m has none.
func refWeight(m *encodertest.Model, name string) []float64 {
	t, ok := m.Weights[name]
	if !ok {
		return nil
	}
	out := make([]float64, len(t.Data))
	for i, v := range t.Data {
		out[i] = float64(v)
	}
	return out
}

// refLayerNorm is torch.nn.LayerNorm over x (b nil: no bias): kernels.LayerNormRef's
// float64 reference on one row.
func refLayerNorm(x, g, b []float64, eps float64) []float64 {
	return kernels.LayerNormRef([][]float64{x}, g, b, eps)[0]
}

// refDense is x·wtᵀ + b for wt [out, in] (b nil: no bias).
func refDense(x, wt, b []float64, out int) []float64 {
	y := make([]float64, out)
	for o := range out {
		var acc float64
		if b != nil {
			acc = b[o]
		}
		for i, a := range x {
			acc += wt[o*len(x)+i] * a
		}
		y[o] = acc
	}
	return y
}

// refAttention is softmax(q·kᵀ/√hd + bias) · v per head over the keys a query may
// see, for q, k, v [n][nh·hd]; bias and see may be nil (none, every key).
func refAttention(q, k, v [][]float64, nh int, bias func(i, j, h int) float64, see func(i, j int) bool) [][]float64 {
	n, hd := len(q), len(q[0])/nh
	out := make([][]float64, n)
	for i := range n {
		ctx := make([]float64, nh*hd)
		for h := range nh {
			scores := make([]float64, n)
			mx := math.Inf(-1)
			for j := range n {
				if see != nil && !see(i, j) {
					scores[j] = math.Inf(-1)
					continue
				}
				var d float64
				for e := range hd {
					d += q[i][h*hd+e] * k[j][h*hd+e]
				}
				scores[j] = d / math.Sqrt(float64(hd))
				if bias != nil {
					scores[j] += bias(i, j, h)
				}
				mx = math.Max(mx, scores[j])
			}
			var z float64
			for j := range n {
				scores[j] = math.Exp(scores[j] - mx)
				z += scores[j]
			}
			for j := range n {
				for e := range hd {
					ctx[h*hd+e] += scores[j] / z * v[j][h*hd+e]
				}
			}
		}
		out[i] = ctx
	}
	return out
}

// referenceBERT is the last hidden states of BertModel / RobertaModel / MPNetModel.
func referenceBERT(m *encodertest.Model, eps float64, ids []int32) [][]float64 {
	s := m.Spec
	H, nh := s.Hidden, s.Heads
	w := func(name string) []float64 { return refWeight(m, name) }
	ln := func(x, g, b []float64) []float64 { return refLayerNorm(x, g, b, eps) }
	dense := refDense
	n := len(ids)
	mpnet, jina := s.ModelType == "mpnet", s.ModelType == "jina_bert"
	word, pos := w("embeddings.word_embeddings.weight"), w("embeddings.position_embeddings.weight") // JinaBERT: no positions
	typ := make([]float64, H)                                                                       // MPNet and DistilBERT have no token type embeddings
	if !mpnet && s.ModelType != "distilbert" {
		typ = w("embeddings.token_type_embeddings.weight")
	}
	// ALiBi's slopes as Press et al.'s get_slopes writes them: for a power of two n,
	// start·ratioⁱ with start = ratio = 2^(−2^−(log₂n − 3)); otherwise those of the
	// closest power of two below, then every other of twice that, as many as missing.
	var slopes func(n int) []float64
	slopes = func(n int) []float64 {
		pow2 := func(n int) []float64 {
			start := math.Pow(2, -math.Pow(2, -(math.Log2(float64(n))-3)))
			out := make([]float64, n)
			for i := range out {
				out[i] = start * math.Pow(start, float64(i))
			}
			return out
		}
		if l := math.Log2(float64(n)); l == math.Floor(l) {
			return pow2(n)
		}
		closest := 1 << int(math.Floor(math.Log2(float64(n))))
		var every []float64
		for i, v := range slopes(2 * closest) {
			if i%2 == 0 {
				every = append(every, v)
			}
		}
		return append(pow2(closest), every[:n-closest]...)
	}
	var rel []float64 // MPNet: [32, heads]
	if mpnet {
		rel = w("encoder.relative_attention_bias.weight")
	}
	names := encodertest.LayerNames(s.ModelType)
	x := make([][]float64, n)
	for i, id := range ids {
		p := i + m.Offset() // RoBERTa, MPNet: padding_idx + 1 + i
		v := make([]float64, H)
		for j := range H {
			v[j] = word[int(id)*H+j] + typ[j]
			if !jina {
				v[j] += pos[p*H+j]
			}
		}
		x[i] = ln(v, w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"))
	}
	for l := range s.Layers {
		p := fmt.Sprintf(names.Layer, l)
		q, k, v := make([][]float64, n), make([][]float64, n), make([][]float64, n)
		for i := range n {
			q[i] = dense(x[i], w(p+names.Q+".weight"), w(p+names.Q+".bias"), H)
			k[i] = dense(x[i], w(p+names.K+".weight"), w(p+names.K+".bias"), H)
			v[i] = dense(x[i], w(p+names.V+".weight"), w(p+names.V+".bias"), H)
		}
		var bias func(i, j, h int) float64
		switch {
		case mpnet:
			bias = func(i, j, h int) float64 { return rel[refBucket(j-i)*nh+h] }
		case jina:
			sl := slopes(nh)
			bias = func(i, j, h int) float64 { return -sl[h] * math.Abs(float64(j-i)) }
		}
		ctxs := refAttention(q, k, v, nh, bias, nil)
		next := make([][]float64, n)
		for i, ctx := range ctxs {
			a := dense(ctx, w(p+names.O+".weight"), w(p+names.O+".bias"), H)
			for e := range H {
				a[e] += x[i][e]
			}
			a = ln(a, w(p+names.AttnLN+".weight"), w(p+names.AttnLN+".bias"))
			if jina && s.FeedForward != "original" { // JinaBertGLUMLP: LN(a + wo(act(z[:I]) · z[I:]))
				I := s.Intermediate
				z := dense(a, w(p+"mlp.gated_layers.weight"), nil, 2*I)
				h := make([]float64, I)
				for e := range I {
					act := math.Max(z[e], 0) // reglu
					if s.FeedForward == "geglu" {
						act = kernels.GELURef(z[e])
					}
					h[e] = act * z[I+e]
				}
				o := dense(h, w(p+"mlp.wo.weight"), w(p+"mlp.wo.bias"), H)
				for e := range H {
					o[e] += a[e]
				}
				next[i] = ln(o, w(p+"mlp.layernorm.weight"), w(p+"mlp.layernorm.bias"))
				continue
			}
			inter := dense(a, w(p+names.In+".weight"), w(p+names.In+".bias"), s.Intermediate)
			for e, u := range inter {
				inter[e] = kernels.GELURef(u)
			}
			o := dense(inter, w(p+names.Out+".weight"), w(p+names.Out+".bias"), H)
			for e := range H {
				o[e] += a[e]
			}
			next[i] = ln(o, w(p+names.OutLN+".weight"), w(p+names.OutLN+".bias"))
		}
		x = next
	}
	return x
}

// refRope rotates each of the nh heads of x at position p as transformers'
// rotate_half RoPE does (the halves of a head as pairs): inv_freq =
// 1/base^(arange(0, hd, 2)/hd) and the angles p·inv_freq in float32, as
// ModernBertRotaryEmbedding and NomicBertRotaryEmbedding compute them.
func refRope(x []float64, p int, base float64, nh int) []float64 {
	return refRopeNTK(x, p, base, 0, nh)
}

// refRopeNTK is refRope with gte's NTKScalingRotaryEmbedding for factor f > 0:
// inv_freq = 1/(base·f)^(arange(0, hd, 2)/hd), then divided by f^(2/hd), in float32.
func refRopeNTK(x []float64, p int, base, f float64, nh int) []float64 {
	hd := len(x) / nh
	out := make([]float64, len(x))
	half := hd / 2
	if f > 0 {
		base *= f
	}
	for i := range half {
		inv := float32(1) / float32(math.Pow(base, float64(float32(2*i)/float32(hd))))
		if f > 0 {
			inv /= float32(math.Pow(f, 2/float64(hd)))
		}
		ang := float64(float32(p) * inv)
		c, sn := math.Cos(ang), math.Sin(ang)
		for h := range nh {
			a, b := x[h*hd+i], x[h*hd+half+i]
			out[h*hd+i] = a*c - b*sn
			out[h*hd+half+i] = b*c + a*sn
		}
	}
	return out
}

// referenceFlash is the last hidden states of Nomic's NomicBertModel
// (modeling_hf_nomic_bert.py) or of jina-embeddings-v3's XLMRobertaModel (Jina's
// xlm-roberta-flash-implementation), their non-flash attention, written from that
// source: word + token type 0 embeddings → emb_ln → post-norm layers
// norm1(x + attn(x)), norm2(x + mlp(x)), q and k rotated by RoPE (rotate_half). Nomic's
// MLP is fc2(fc11(x) · act(fc12(x))) (fc2(GELU(fc1(x))) for "gelu"), Jina's
// fc2(GELU(fc1(x))); Jina's weights are adapted for task t ≥ 0 as its
// LoRAParametrization merges them before use, W + B[t]·A[t] · alpha/rank (an
// embedding table: W + A[t]·B[t] · alpha/rank), here in float64.
func referenceFlash(m *encodertest.Model, ids []int32, task int) [][]float64 {
	s := m.Spec
	H, nh := s.Hidden, s.Heads
	jina, gte := s.ModelType == "jina", s.ModelType == "new"
	// Names: the embeddings' LayerNorm, a layer, its attention projections, its norms.
	embLN, layer, qkvName, outName, norm1, norm2 := "emb_ln", "encoder.layers.%d.", "attn.Wqkv", "attn.out_proj", "norm1", "norm2"
	eps, base, ntk := 1e-12, encodertest.NomicRotaryBase, 0.0
	switch {
	case jina:
		qkvName, outName, eps, base = "mixer.Wqkv", "mixer.out_proj", 1e-5, encodertest.JinaRotaryBase
	case gte:
		embLN, layer, qkvName, outName, norm1, norm2 = "embeddings.LayerNorm", "encoder.layer.%d.", "attention.qkv_proj", "attention.o_proj", "attn_ln", "mlp_ln"
		base, ntk = encodertest.GTERopeTheta, encodertest.GTENTKFactor
	}
	w := func(name string) []float64 { return refWeight(m, name) }
	// weight is the named weight [rows, cols], merged with its task adapters.
	weight := func(name string, embedding bool) []float64 {
		if !jina {
			return w(name + ".weight")
		}
		p := name + ".parametrizations.weight."
		out := w(p + "original")
		if task < 0 {
			return out
		}
		a, b := m.Weights[p+"0.lora_A"], m.Weights[p+"0.lora_B"]
		r := encodertest.JinaRank
		rows, cols := b.Shape[1], a.Shape[2] // linear: A [T, r, cols], B [T, rows, r]
		if embedding {
			rows, cols = a.Shape[1], b.Shape[2] // A [T, rows, r], B [T, r, cols]
		}
		at, bt := w(p + "0.lora_A")[task*len(a.Data)/a.Shape[0]:], w(p + "0.lora_B")[task*len(b.Data)/b.Shape[0]:]
		scaling := encodertest.JinaAlpha / float64(r)
		for i := range rows {
			for j := range cols {
				var d float64
				for k := range r {
					if embedding {
						d += at[i*r+k] * bt[k*cols+j]
					} else {
						d += bt[i*r+k] * at[k*cols+j]
					}
				}
				out[i*cols+j] += d * scaling
			}
		}
		return out
	}
	ln := func(x []float64, name string) []float64 {
		return refLayerNorm(x, w(name+".weight"), w(name+".bias"), eps)
	}
	lin := func(x []float64, name string) []float64 {
		wt := weight(name, false)
		return refDense(x, wt, w(name+".bias"), len(wt)/len(x))
	}
	word, typ := weight("embeddings.word_embeddings", true), weight("embeddings.token_type_embeddings", true)
	x := make([][]float64, len(ids))
	for i, id := range ids {
		e := make([]float64, H)
		for j := range H {
			e[j] = word[int(id)*H+j]
			if typ != nil { // gte-base-en-v1.5 has no token types
				e[j] += typ[j]
			}
		}
		x[i] = ln(e, embLN)
	}
	for l := range s.Layers {
		p := fmt.Sprintf(layer, l)
		q, k, v := make([][]float64, len(x)), make([][]float64, len(x)), make([][]float64, len(x))
		for i := range x {
			qkv := lin(x[i], p+qkvName)
			q[i], k[i], v[i] = refRopeNTK(qkv[:H], i, base, ntk, nh), refRopeNTK(qkv[H:2*H], i, base, ntk, nh), qkv[2*H:]
		}
		ctxs := refAttention(q, k, v, nh, nil, nil)
		for i := range x {
			o := lin(ctxs[i], p+outName)
			for e := range H {
				o[e] += x[i][e]
			}
			x[i] = ln(o, p+norm1)
			var y []float64
			if moe := s.Experts > 0 && l%2 == 1; moe { // NomicMoELayer, every second layer
				o = refExperts(m, p, x[i])
				for e := range H {
					o[e] += x[i][e]
				}
				x[i] = ln(o, p+norm2)
				continue
			}
			switch {
			case gte: // down_proj(act(gate) · up) for [up; gate] = up_gate_proj(x)
				ug := lin(x[i], p+"mlp.up_gate_proj")
				I := len(ug) / 2
				y = make([]float64, I)
				for e := range I {
					y[e] = ug[e] * kernels.GELURef(ug[I+e])
				}
			case jina || s.Activation == "gelu":
				y = lin(x[i], p+"mlp.fc1")
				for e := range y {
					y[e] = kernels.GELURef(y[e])
				}
			default:
				y = lin(x[i], p+"mlp.fc11")
				gate := lin(x[i], p+"mlp.fc12")
				for e, u := range gate {
					switch s.Activation {
					case "swiglu":
						y[e] *= u / (1 + math.Exp(-u))
					case "geglu":
						y[e] *= kernels.GELURef(u)
					case "glu":
						y[e] *= 1 / (1 + math.Exp(-u))
					}
				}
			}
			down := "mlp.fc2"
			if gte {
				down = "mlp.down_proj"
			}
			o = lin(y, p+down)
			for e := range H {
				o[e] += x[i][e]
			}
			x[i] = ln(o, p+norm2)
		}
	}
	return x
}

// refExperts is NomicMoELayer (layer prefix p) on one token x, written from its
// definition: router probabilities softmax(R·x), the TopK largest found by sorting,
// each weighing its expert GELU(w1ₑ·x)ᵀ·w2ₑ (w1ₑ, w2ₑ the e-th [I, H] blocks), plus
// the shared bias.
func refExperts(m *encodertest.Model, p string, x []float64) []float64 {
	s := m.Spec
	H, E := s.Hidden, s.Experts
	r, w1, w2 := refWeight(m, p+"mlp.router.layer.weight"), refWeight(m, p+"mlp.experts.mlp.w1"), refWeight(m, p+"mlp.experts.mlp.w2")
	I := len(w1) / (E * H)
	logits := refDense(x, r, nil, E)
	probs := make([]float64, E)
	var z float64
	for e, v := range logits {
		probs[e] = math.Exp(v)
		z += probs[e]
	}
	order := make([]int, E)
	for e := range order {
		probs[e] /= z
		order[e] = e
	}
	sort.SliceStable(order, func(a, b int) bool { return probs[order[a]] > probs[order[b]] }) // ties: the lower expert, as torch.topk
	out := refWeight(m, p+"mlp.experts.bias")
	for _, e := range order[:s.TopK] {
		for f := range I {
			var h float64
			for j := range H {
				h += w1[(e*I+f)*H+j] * x[j]
			}
			h = kernels.GELURef(h) * probs[e]
			for j := range H {
				out[j] += h * w2[(e*I+f)*H+j]
			}
		}
	}
	return out
}

// referenceModernBERT is the last hidden states of ModernBertModel (transformers'
// eager attention): pre-norm layers, RoPE with float32 angles as
// ModernBertRotaryEmbedding computes them, sliding-window layers, GeGLU.
func referenceModernBERT(m *encodertest.Model, ids []int32) [][]float64 {
	s := m.Spec
	H, nh, I := s.Hidden, s.Heads, s.Intermediate
	w := func(name string) []float64 { return refWeight(m, name) }
	ln := func(x []float64, name string) []float64 {
		return refLayerNorm(x, w(name+".weight"), w(name+".bias"), 1e-5)
	}
	lin := func(x []float64, name string, out int) []float64 {
		return refDense(x, w(name+".weight"), w(name+".bias"), out)
	}
	rope := func(x []float64, p int, base float64) []float64 { return refRope(x, p, base, nh) }
	word := w("embeddings.tok_embeddings.weight")
	x := make([][]float64, len(ids))
	for i, id := range ids {
		x[i] = ln(word[int(id)*H:int(id+1)*H], "embeddings.norm")
	}
	for l := range s.Layers {
		p := fmt.Sprintf("layers.%d.", l)
		global := l%s.GlobalEvery == 0
		base := encodertest.LocalTheta
		if global {
			base = encodertest.GlobalTheta
		}
		q, k, v := make([][]float64, len(x)), make([][]float64, len(x)), make([][]float64, len(x))
		for i := range x {
			h := x[i]
			if l > 0 {
				h = ln(h, p+"attn_norm")
			}
			qkv := lin(h, p+"attn.Wqkv", 3*H)
			q[i], k[i], v[i] = rope(qkv[:H], i, base), rope(qkv[H:2*H], i, base), qkv[2*H:]
		}
		var see func(i, j int) bool
		if !global {
			see = func(i, j int) bool { return math.Abs(float64(i-j)) <= float64(s.Window/2) }
		}
		ctxs := refAttention(q, k, v, nh, nil, see)
		for i := range x {
			o := lin(ctxs[i], p+"attn.Wo", H)
			for e := range H {
				x[i][e] += o[e]
			}
			y := lin(ln(x[i], p+"mlp_norm"), p+"mlp.Wi", 2*I)
			act := make([]float64, I)
			for e := range I {
				act[e] = kernels.GELURef(y[e]) * y[I+e]
			}
			o = lin(act, p+"mlp.Wo", H)
			for e := range H {
				x[i][e] += o[e]
			}
		}
	}
	for i := range x {
		x[i] = ln(x[i], "final_norm")
	}
	return x
}

// referencePool is sentence-transformers' Pooling (the modes concatenated) over the
// tokens of x from skip on.
func referencePool(x [][]float64, H, skip int, modes []string) []float64 {
	n := len(x)
	var out []float64
	for _, mode := range modes {
		pooled := make([]float64, H)
		switch mode {
		case "cls":
			copy(pooled, x[0])
		case "last-token":
			copy(pooled, x[n-1])
		case "max":
			for e := range H {
				pooled[e] = math.Inf(-1)
				for i := skip; i < n; i++ {
					pooled[e] = math.Max(pooled[e], x[i][e])
				}
			}
		case "mean", "mean-sqrt-len", "weighted-mean":
			var total float64
			for i := skip; i < n; i++ {
				wt := 1.0
				if mode == "weighted-mean" {
					wt = float64(i + 1)
				}
				total += wt
				for e := range H {
					pooled[e] += wt * x[i][e]
				}
			}
			div := total
			if mode == "mean-sqrt-len" {
				div = math.Sqrt(total)
			}
			for e := range H {
				pooled[e] /= div
			}
		}
		out = append(out, pooled...)
	}
	return out
}

// assertClose checks a float32 vector against its float64 reference to 1e-5 of the
// vector's scale (its largest component, at least 1): unit vectors to 1e-5, and an
// unnormalised pre-norm residual stream — which grows layer by layer, and float32's
// rounding with it — to the same relative precision.
func assertClose(t *testing.T, want []float64, got []float32, msg string) {
	t.Helper()
	require.Len(t, got, len(want), msg)
	scale := 1.0
	for _, w := range want {
		scale = math.Max(scale, math.Abs(w))
	}
	for i := range want {
		if math.Abs(want[i]-float64(got[i])) > 1e-5*scale {
			t.Fatalf("%s: component %d: got %.8f, float64 reference %.8f (scale %.3g)", msg, i, got[i], want[i], scale)
		}
	}
}

func TestEncoderMatchesReference(t *testing.T) {
	eng := newEngine(t)
	f, tr := false, true
	str := func(s string) *string { return &s }
	cases := []struct {
		name   string
		spec   encodertest.Spec
		opts   encoder.Options
		modes  []string
		norm   bool
		query  string  // prompt the query texts get
		pass   string  // and the passages
		noPool bool    // include_prompt false: the prompt's tokens are not pooled
		dim    int     // the vectors' dimension when not Hidden × the modes (Dense modules)
		tasks  *[2]int // the task adapters of queries and passages (jina); nil: none
	}{
		{name: "bert sentence-transformers mean+normalize with prompts",
			spec: encodertest.Spec{SentenceTransformers: true, Normalize: true,
				Prompts: map[string]string{"query": "query: ", "document": "passage: "}},
			modes: []string{"mean"}, norm: true, query: "query: ", pass: "passage: "},
		{name: "bert plain cls", spec: encodertest.Spec{Prefix: "bert."},
			opts: encoder.Options{Pooling: "cls", Normalize: &f}, modes: []string{"cls"}},
		{name: "bert plain max", opts: encoder.Options{Pooling: "max", Normalize: &f}, modes: []string{"max"}},
		{name: "bert plain mean-sqrt-len", opts: encoder.Options{Pooling: "mean-sqrt-len", Normalize: &f}, modes: []string{"mean-sqrt-len"}},
		{name: "bert plain weighted-mean", opts: encoder.Options{Pooling: "weighted-mean", Normalize: &f}, modes: []string{"weighted-mean"}},
		{name: "bert plain last-token normalised by default", opts: encoder.Options{Pooling: "last-token"}, modes: []string{"last-token"}, norm: true},
		{name: "bert sentence-transformers cls+max+mean concatenated, compared by dot product",
			spec:  encodertest.Spec{SentenceTransformers: true, Pooling: []string{"mean", "cls", "max"}, Similarity: "dot"},
			modes: []string{"cls", "max", "mean"}},
		{name: "bert sentence-transformers without a Normalize module, compared by cosine: normalised",
			spec:  encodertest.Spec{SentenceTransformers: true, Pooling: []string{"mean"}},
			modes: []string{"mean"}, norm: true},
		{name: "bert sentence-transformers without a Normalize module or a similarity (before sentence-transformers 3): cosine, normalised",
			spec:  encodertest.Spec{SentenceTransformers: true, Pooling: []string{"cls"}, Similarity: "-"},
			modes: []string{"cls"}, norm: true},
		{name: "bert sentence-transformers with a Normalize module, compared by dot product",
			spec:  encodertest.Spec{SentenceTransformers: true, Pooling: []string{"mean"}, Normalize: true, Similarity: "dot"},
			modes: []string{"mean"}, norm: true},
		{name: "bert include_prompt false",
			spec: encodertest.Spec{SentenceTransformers: true, Pooling: []string{"mean"}, IncludePrompt: &f,
				Prompts: map[string]string{"query": "where query: "}, Similarity: "dot"},
			modes: []string{"mean"}, query: "where query: ", noPool: true},
		{name: "bert default_prompt_name for queries and passages",
			spec: encodertest.Spec{SentenceTransformers: true, Normalize: true, DefaultPrompt: "retrieval",
				Prompts: map[string]string{"retrieval": "represent this: ", "classification": "classify: "}},
			modes: []string{"mean"}, norm: true, query: "represent this: ", pass: "represent this: "},
		{name: "bert query prompt and default_prompt_name for passages",
			spec: encodertest.Spec{SentenceTransformers: true, Normalize: true, DefaultPrompt: "retrieval",
				Prompts: map[string]string{"retrieval": "passage: ", "query": "query: "}},
			modes: []string{"mean"}, norm: true, query: "query: ", pass: "passage: "},
		{name: "bert options prompts override the folder",
			spec: encodertest.Spec{SentenceTransformers: true, Pooling: []string{"mean"}, IncludePrompt: &tr,
				Prompts: map[string]string{"query": "ignored: "}},
			opts:  encoder.Options{QueryPrompt: str("q: "), PassagePrompt: str("p: "), Normalize: &tr},
			modes: []string{"mean"}, norm: true, query: "q: ", pass: "p: "},
		{name: "xlm-roberta sentence-transformers cls+normalize, roberta. prefix",
			spec:  encodertest.Spec{ModelType: "xlm-roberta", Prefix: "roberta.", SentenceTransformers: true, Pooling: []string{"cls"}, Normalize: true},
			modes: []string{"cls"}, norm: true},
		{name: "xlm-roberta plain mean", spec: encodertest.Spec{ModelType: "xlm-roberta"},
			opts: encoder.Options{Pooling: "mean", Normalize: &f}, modes: []string{"mean"}},
		{name: "roberta plain weighted-mean", spec: encodertest.Spec{ModelType: "roberta", Layers: 3, Hidden: 48, Heads: 6},
			opts: encoder.Options{Pooling: "weighted-mean", Normalize: &f}, modes: []string{"weighted-mean"}},
		{name: "bert sentence-transformers mean from pytorch_model.bin (transformers before 4.35) with a position_ids buffer, bert. prefix",
			spec:  encodertest.Spec{SentenceTransformers: true, Normalize: true, PyTorchBin: true, Prefix: "bert."},
			modes: []string{"mean"}, norm: true},
		{name: "mpnet sentence-transformers mean+normalize (all-mpnet-base-v2's layout)",
			spec:  encodertest.Spec{ModelType: "mpnet", SentenceTransformers: true, Normalize: true},
			modes: []string{"mean"}, norm: true},
		{name: "mpnet plain cls, mpnet. prefix", spec: encodertest.Spec{ModelType: "mpnet", Prefix: "mpnet.", Layers: 3},
			opts: encoder.Options{Pooling: "cls", Normalize: &f}, modes: []string{"cls"}},
		{name: "bert sentence-transformers mean, Dense (tanh), normalize",
			spec: encodertest.Spec{SentenceTransformers: true, Normalize: true,
				Dense: []encodertest.DenseSpec{{Out: 24}}},
			modes: []string{"mean"}, norm: true, dim: 24},
		{name: "bert sentence-transformers cls, Dense (tanh) in pytorch_model.bin, normalize: LaBSE's layout",
			spec: encodertest.Spec{SentenceTransformers: true, Normalize: true, Pooling: []string{"cls"},
				Dense: []encodertest.DenseSpec{{Out: 32, Activation: "torch.nn.modules.activation.Tanh", PyTorchOnly: true}}},
			modes: []string{"cls"}, norm: true, dim: 32},
		{name: "xlm-roberta sentence-transformers cls+mean, two Dense modules (identity without bias, then GELU), compared by dot product",
			spec: encodertest.Spec{ModelType: "xlm-roberta", SentenceTransformers: true, Pooling: []string{"mean", "cls"}, Similarity: "dot",
				Dense: []encodertest.DenseSpec{{Out: 40, NoBias: true, Activation: "torch.nn.modules.linear.Identity"},
					{Out: 12, Activation: "torch.nn.modules.activation.GELU"}}},
			modes: []string{"cls", "mean"}, dim: 12},
		{name: "distilbert sentence-transformers mean, Dense (distiluse-base-multilingual's layout)",
			spec: encodertest.Spec{ModelType: "distilbert", SentenceTransformers: true, Layers: 3,
				Dense: []encodertest.DenseSpec{{Out: 16}}},
			modes: []string{"mean"}, norm: true, dim: 16},
		{name: "distilbert plain cls, distilbert. prefix", spec: encodertest.Spec{ModelType: "distilbert", Prefix: "distilbert."},
			opts: encoder.Options{Pooling: "cls", Normalize: &f}, modes: []string{"cls"}},
		{name: "modernbert sentence-transformers mean+normalize, sliding and global layers",
			spec:  encodertest.Spec{ModelType: "modernbert", SentenceTransformers: true, Normalize: true, Layers: 3},
			modes: []string{"mean"}, norm: true},
		{name: "nomic_bert sentence-transformers mean+normalize with search prompts (nomic-embed-text-v1.5's layout)",
			spec: encodertest.Spec{ModelType: "nomic_bert", SentenceTransformers: true, Normalize: true, Layers: 3,
				Prompts: map[string]string{"query": "search_query: ", "document": "search_document: "}},
			modes: []string{"mean"}, norm: true, query: "search_query: ", pass: "search_document: "},
		{name: "nomic_bert plain cls with biases, bert. prefix, geglu",
			spec: encodertest.Spec{ModelType: "nomic_bert", Prefix: "bert.", Biases: true, Activation: "geglu"},
			opts: encoder.Options{Pooling: "cls", Normalize: &f}, modes: []string{"cls"}},
		{name: "nomic_bert plain mean, glu", spec: encodertest.Spec{ModelType: "nomic_bert", Activation: "glu"},
			opts: encoder.Options{Pooling: "mean", Normalize: &f}, modes: []string{"mean"}},
		{name: "nomic_bert plain mean, plain gelu MLP", spec: encodertest.Spec{ModelType: "nomic_bert", Activation: "gelu", Biases: true},
			opts: encoder.Options{Pooling: "mean", Normalize: &f}, modes: []string{"mean"}},
		{name: "nomic_bert sentence-transformers mean+normalize, 4 layers with experts in 1 and 3, top 2 of 4 (nomic-embed-text-v2-moe's layout)",
			spec:  encodertest.Spec{ModelType: "nomic_bert", SentenceTransformers: true, Normalize: true, Layers: 4, Experts: 4, TopK: 2, Biases: true, TypeVocab: 1},
			modes: []string{"mean"}, norm: true},
		{name: "nomic_bert plain cls, experts in layer 1, top 1 of 3",
			spec: encodertest.Spec{ModelType: "nomic_bert", Layers: 2, Experts: 3, TopK: 1},
			opts: encoder.Options{Pooling: "cls", Normalize: &f}, modes: []string{"cls"}},
		{name: "jina sentence-transformers mean+normalize: retrieval adapters, task_instructions as prompts (jina-embeddings-v3's layout)",
			spec:  encodertest.Spec{ModelType: "jina", Prefix: "roberta.", SentenceTransformers: true, Normalize: true, Layers: 3},
			modes: []string{"mean"}, norm: true, tasks: &[2]int{0, 1},
			query: encodertest.JinaInstructions["retrieval.query"], pass: encodertest.JinaInstructions["retrieval.passage"]},
		{name: "jina plain cls, text-matching adapters for both and the folder's sentence-transformers prompts of that name",
			spec: encodertest.Spec{ModelType: "jina", SentenceTransformers: true, Pooling: []string{"cls"}, Similarity: "dot",
				Prompts: map[string]string{"text-matching": "match: ", "retrieval.query": "ignored: "}},
			opts:  encoder.Options{QueryTask: str("text-matching"), PassageTask: str("text-matching")},
			modes: []string{"cls"}, tasks: &[2]int{4, 4}, query: "match: ", pass: "match: "},
		{name: "jina plain mean without adapters: the base weights, no prompts",
			spec:  encodertest.Spec{ModelType: "jina"},
			opts:  encoder.Options{Pooling: "mean", Normalize: &f, QueryTask: str(""), PassageTask: str("")},
			modes: []string{"mean"}},
		{name: "new sentence-transformers cls, normalised as a cosine model (gte-base-en-v1.5's layout: no token types)",
			spec:  encodertest.Spec{ModelType: "new", SentenceTransformers: true, Pooling: []string{"cls"}, Layers: 3},
			modes: []string{"cls"}, norm: true},
		{name: "new plain mean, new. prefix, two token types (gte-large-en-v1.5's)",
			spec: encodertest.Spec{ModelType: "new", Prefix: "new.", TypeVocab: 2},
			opts: encoder.Options{Pooling: "mean", Normalize: &f}, modes: []string{"mean"}},
		{name: "jina_bert sentence-transformers mean+normalize, 12 heads (jina-embeddings-v2-base-en's layout and slopes)",
			spec:  encodertest.Spec{ModelType: "jina_bert", SentenceTransformers: true, Normalize: true, Hidden: 48, Heads: 12},
			modes: []string{"mean"}, norm: true},
		{name: "jina_bert plain mean, bert. prefix, reglu, 8 heads", spec: encodertest.Spec{ModelType: "jina_bert", Prefix: "bert.", FeedForward: "reglu", Hidden: 32, Heads: 8},
			opts: encoder.Options{Pooling: "mean", Normalize: &f}, modes: []string{"mean"}},
		{name: "jina_bert plain cls, BERT's MLP (feed_forward_type original), 6 heads", spec: encodertest.Spec{ModelType: "jina_bert", FeedForward: "original", Hidden: 48, Heads: 6},
			opts: encoder.Options{Pooling: "cls", Normalize: &f}, modes: []string{"cls"}},
		{name: "modernbert plain cls with biases, model. prefix, transformers 5 rope_parameters",
			spec: encodertest.Spec{ModelType: "modernbert", Prefix: "model.", Layers: 4, GlobalEvery: 3, Window: 8,
				Biases: true, RopeParameters: true},
			opts: encoder.Options{Pooling: "cls", Normalize: &f}, modes: []string{"cls"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.spec.Seed = uint64(i + 1)
			tm, err := encodertest.Write(dir, c.spec)
			require.NoError(t, err)
			c.opts.BatchSize = 2 // several batches, padded
			enc, err := encoder.Load(dir, c.opts)
			require.NoError(t, err)
			dim := tm.Spec.Hidden * len(c.modes)
			if c.dim > 0 {
				dim = c.dim
			}
			assert.Equal(t, dim, enc.Dim())
			tok, err := lm.LoadTokenizer(dir)
			require.NoError(t, err)
			eps := refEps(tm.Spec.ModelType)
			buckets := map[int]bool{} // the sequence lengths' buckets
			for _, query := range []bool{true, false} {
				prompt := c.pass
				if query {
					prompt = c.query
				}
				got, err := enc.Embed(eng, texts, query)
				require.NoError(t, err)
				require.Len(t, got, len(texts))
				for j, text := range texts {
					ids, err := tok.Encode(prompt+text, true)
					require.NoError(t, err)
					buckets[lm.SeqBucket(len(ids))] = true
					skip := 0
					if c.noPool && prompt != "" {
						pids, err := tok.Encode(prompt, true)
						require.NoError(t, err)
						skip = len(pids) - 1
						require.Greater(t, skip, 1)
					}
					task := -1
					if c.tasks != nil {
						if task = c.tasks[1]; query {
							task = c.tasks[0]
						}
					}
					want := referenceTask(tm, eps, ids, skip, c.modes, c.norm, task)
					assertClose(t, want, got[j], text)
				}
			}
			st := enc.Stats()
			assert.Equal(t, 2*len(texts), st.Texts)
			assert.Equal(t, 0, st.Truncated)
			assert.Equal(t, 6, st.Batches) // 3 batches of ≤ 2 texts, twice
			// Bounded by the buckets, not the texts: batch sizes 2 and 1 times the
			// sequence lengths' buckets.
			assert.LessOrEqual(t, st.Shapes, 2*len(buckets))
		})
	}
}

// TestExpertTies routes tokens whose router probabilities tie (every router row the
// same): as torch.topk, the lower experts are chosen, exactly TopK of them, not every
// expert at the maximum.
func TestExpertTies(t *testing.T) {
	eng := newEngine(t)
	dir := t.TempDir()
	tm, err := encodertest.Write(dir, encodertest.Spec{ModelType: "nomic_bert", Layers: 2, Experts: 3, TopK: 2})
	require.NoError(t, err)
	r := tm.Weights["encoder.layers.1.mlp.router.layer.weight"]
	H := tm.Spec.Hidden
	for e := 1; e < 3; e++ {
		copy(r.Data[e*H:(e+1)*H], r.Data[:H])
	}
	require.NoError(t, lmtest.WriteWeights(filepath.Join(dir, "model.safetensors"), tm.Weights))
	f := false
	enc, err := encoder.Load(dir, encoder.Options{Pooling: "mean", Normalize: &f})
	require.NoError(t, err)
	got, err := enc.Embed(eng, texts[:2], false)
	require.NoError(t, err)
	tok, err := lm.LoadTokenizer(dir)
	require.NoError(t, err)
	for j, text := range texts[:2] {
		ids, err := tok.Encode(text, true)
		require.NoError(t, err)
		assertClose(t, reference(tm, 1e-12, ids, 0, []string{"mean"}, false), got[j], text)
	}
}

// TestTruncation cuts a long text to sentence_bert_config.json's max_seq_length,
// keeping [CLS] … [SEP], and counts it.
func TestTruncation(t *testing.T) {
	eng := newEngine(t)
	dir := t.TempDir()
	tm, err := encodertest.Write(dir, encodertest.Spec{SentenceTransformers: true, MaxSeqLength: 8, Normalize: true})
	require.NoError(t, err)
	enc, err := encoder.Load(dir, encoder.Options{})
	require.NoError(t, err)
	assert.Equal(t, 8, enc.Pipeline().MaxLength)
	got, err := enc.Embed(eng, texts, false)
	require.NoError(t, err)
	tok, err := lm.LoadTokenizer(dir)
	require.NoError(t, err)
	truncated := 0
	for j, text := range texts {
		full, err := tok.Encode(text, true)
		require.NoError(t, err)
		ids := full
		if len(full) > 8 {
			truncated++
			ids = append(append([]int32{}, full[:7]...), full[len(full)-1]) // 7 first ids, then [SEP]
		}
		assertClose(t, reference(tm, 1e-12, ids, 0, []string{"mean"}, true), got[j], text)
	}
	assert.Equal(t, 4, truncated)
	assert.Equal(t, truncated, enc.Stats().Truncated)
}

func TestLoadErrors(t *testing.T) {
	write := func(t *testing.T, spec encodertest.Spec, edit func(dir string)) string {
		dir := t.TempDir()
		_, err := encodertest.Write(dir, spec)
		require.NoError(t, err)
		if edit != nil {
			edit(dir)
		}
		return dir
	}
	setConfig := func(key string, value any) func(string) {
		return func(dir string) {
			path := filepath.Join(dir, "config.json")
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			var cfg map[string]any
			require.NoError(t, json.Unmarshal(data, &cfg))
			cfg[key] = value
			data, err = json.Marshal(cfg)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, data, 0o644))
		}
	}
	cases := []struct {
		name string
		dir  func(t *testing.T) string
		opts encoder.Options
		want string
	}{
		{"plain folder without pooling", func(t *testing.T) string { return write(t, encodertest.Spec{}, nil) }, encoder.Options{},
			"plain Hugging Face folder (no modules.json / 1_Pooling/config.json): say how to pool"},
		{"unknown pooling", func(t *testing.T) string { return write(t, encodertest.Spec{}, nil) }, encoder.Options{Pooling: "median"},
			`pooling "median" not supported`},
		{"unsupported model type", func(t *testing.T) string {
			return write(t, encodertest.Spec{}, setConfig("model_type", "electra"))
		}, encoder.Options{Pooling: "mean"}, `config.json: config: model_type "electra" (architectures [BertModel]) is not a supported embedding model`},
		{"decoder model type", func(t *testing.T) string {
			return write(t, encodertest.Spec{}, setConfig("model_type", "qwen3"))
		}, encoder.Options{Pooling: "last-token"}, `decoder embedder: lm: `},
		{"relative positions", func(t *testing.T) string {
			return write(t, encodertest.Spec{}, setConfig("position_embedding_type", "relative_key"))
		}, encoder.Options{Pooling: "mean"}, `position_embedding_type "relative_key" not supported`},
		{"other activation", func(t *testing.T) string {
			return write(t, encodertest.Spec{}, setConfig("hidden_act", "relu"))
		}, encoder.Options{Pooling: "mean"}, `hidden_act "relu" not supported`},
		{"remote code", func(t *testing.T) string {
			return write(t, encodertest.Spec{}, setConfig("auto_map", map[string]string{"AutoModel": "x.Y"}))
		}, encoder.Options{Pooling: "mean"}, "auto_map present"},
		{"shape mismatch", func(t *testing.T) string {
			return write(t, encodertest.Spec{}, setConfig("intermediate_size", 65))
		}, encoder.Options{Pooling: "mean"}, "tensor encoder.layer.0.intermediate.dense.weight has shape [64 32], config.json implies [65 32]"},
		{"dense module", func(t *testing.T) string {
			return write(t, encodertest.Spec{SentenceTransformers: true}, func(dir string) {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "modules.json"), []byte(`[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},{"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},{"idx":2,"name":"2","path":"2_LayerNorm","type":"sentence_transformers.models.LayerNorm"}]`), 0o644))
			})
		}, encoder.Options{}, `module "2" of type sentence_transformers.models.LayerNorm is not supported (want Transformer, Pooling, Dense, Normalize)`},
		{"dense module without weights", func(t *testing.T) string {
			return write(t, encodertest.Spec{SentenceTransformers: true, Dense: []encodertest.DenseSpec{{Out: 8}}}, func(dir string) {
				require.NoError(t, os.Remove(filepath.Join(dir, "2_Dense", "model.safetensors")))
			})
		}, encoder.Options{}, "2_Dense: the Dense module's weights (model.safetensors or pytorch_model.bin) are missing"},
		{"dense module with another activation", func(t *testing.T) string {
			return write(t, encodertest.Spec{SentenceTransformers: true, Dense: []encodertest.DenseSpec{{Out: 8, Activation: "torch.nn.modules.activation.Softplus"}}}, nil)
		}, encoder.Options{}, `2_Dense/config.json: activation_function "torch.nn.modules.activation.Softplus" is not supported (want one of activation.GELU, activation.ReLU, activation.Sigmoid, activation.Tanh, linear.Identity)`},
		{"dense module whose input is not the pooled vector", func(t *testing.T) string {
			return write(t, encodertest.Spec{SentenceTransformers: true, Pooling: []string{"mean", "cls"}, Dense: []encodertest.DenseSpec{{Out: 8}}}, func(dir string) {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "2_Dense", "config.json"), []byte(`{"in_features": 32, "out_features": 8}`), 0o644))
			})
		}, encoder.Options{}, "2_Dense/config.json: in_features 32, but the modules before it give vectors of 64"},
		{"dense module over the token embeddings", func(t *testing.T) string {
			return write(t, encodertest.Spec{SentenceTransformers: true, Dense: []encodertest.DenseSpec{{Out: 8}}}, func(dir string) {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "2_Dense", "config.json"), []byte(`{"in_features": 32, "out_features": 8, "module_input_name": "token_embeddings"}`), 0o644))
			})
		}, encoder.Options{}, `module_input_name "token_embeddings": only a Dense module over the sentence embedding is supported`},
		{"no weights", func(t *testing.T) string {
			return write(t, encodertest.Spec{}, func(dir string) { require.NoError(t, os.Remove(filepath.Join(dir, "model.safetensors"))) })
		}, encoder.Options{Pooling: "mean"}, "has neither model.safetensors"},
		{"no config", func(t *testing.T) string { return t.TempDir() }, encoder.Options{Pooling: "mean"}, "config.json not found"},
		{"mpnet with fewer relative buckets than its attention reads", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "mpnet"}, setConfig("relative_attention_num_buckets", 16))
		}, encoder.Options{Pooling: "mean"}, "relative_attention_num_buckets 16: MPNet's attention reads 32 buckets"},
		{"mpnet padded with another id", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "mpnet"}, setConfig("pad_token_id", 0))
		}, encoder.Options{Pooling: "mean"}, "pad_token_id 0: MPNet's embeddings number positions from padding index 1"},
		{"modernbert with another activation", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "modernbert"}, setConfig("hidden_activation", "silu"))
		}, encoder.Options{Pooling: "mean"}, `hidden_activation "silu" not supported`},
		{"modernbert with scaled rotary positions", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "modernbert"}, setConfig("rope_scaling", map[string]any{"rope_type": "yarn", "factor": 4}))
		}, encoder.Options{Pooling: "mean"}, `rope_scaling {"factor":4,"rope_type":"yarn"}: only ModernBERT's unscaled rotary positions`},
		{"modernbert with another rope type", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "modernbert", RopeParameters: true}, setConfig("rope_parameters",
				map[string]any{"full_attention": map[string]any{"rope_type": "linear", "factor": 2, "rope_theta": 160000}}))
		}, encoder.Options{Pooling: "mean"}, `rope_parameters.full_attention.rope_type "linear"`},
		{"modernbert whose layer types disagree with its global layers", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "modernbert", Layers: 2}, setConfig("layer_types", []string{"full_attention", "full_attention"}))
		}, encoder.Options{Pooling: "mean"}, `layer_types[1] is "full_attention", but global_attn_every_n_layers 2 makes layer 1 sliding_attention`},
		{"modernbert config with biases its checkpoint lacks", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "modernbert"}, setConfig("norm_bias", true))
		}, encoder.Options{Pooling: "mean"}, "tensor embeddings.norm.bias missing"},
		{"nomic_bert pre-norm", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "nomic_bert"}, setConfig("prenorm", true))
		}, encoder.Options{Pooling: "mean"}, "config: prenorm: only the post-norm NomicBERT of nomic-embed-text-v1 / v1.5 / v2-moe is supported"},
		{"nomic_bert with interleaved rotary pairs", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "nomic_bert"}, setConfig("rotary_emb_interleaved", true))
		}, encoder.Options{Pooling: "mean"}, "config: rotary_emb_interleaved (GPT-J pairs): only the post-norm NomicBERT"},
		{"nomic_bert rotating half of each head", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "nomic_bert"}, setConfig("rotary_emb_fraction", 0.5))
		}, encoder.Options{Pooling: "mean"}, "config: rotary_emb_fraction 0.5: only NomicBERT with every head dimension rotated"},
		{"nomic_bert with experts but no top k", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "nomic_bert"}, setConfig("moe_every_n_layers", 2))
		}, encoder.Options{Pooling: "mean"}, "config: moe_every_n_layers 2 without moe_top_k"},
		{"nomic_bert with gated experts", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "nomic_bert", Experts: 4, TopK: 2}, setConfig("activation_function", "swiglu"))
		}, encoder.Options{Pooling: "mean"}, `config: activation_function "swiglu" with experts: only GELU experts`},
		{"nomic_bert with more experts chosen than it has", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "nomic_bert", Experts: 4, TopK: 2}, setConfig("moe_top_k", 5))
		}, encoder.Options{Pooling: "mean"}, "config: num_experts 4, moe_top_k 5: want 1 ≤ moe_top_k ≤ num_experts"},
		{"nomic_bert with renormalised expert weights", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "nomic_bert", Experts: 4, TopK: 2}, setConfig("moe_normalize_expert_weights", 1.0))
		}, encoder.Options{Pooling: "mean"}, "config: moe_normalize_expert_weights (renormalised top-k weights)"},
		{"nomic_bert with an expert-choice router", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "nomic_bert", Experts: 4, TopK: 2}, setConfig("expert_choice_router", true))
		}, encoder.Options{Pooling: "mean"}, "config: expert_choice_router: only the post-norm NomicBERT"},
		{"nomic_bert with a LayerNorm inside its MLP", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "nomic_bert"}, setConfig("norm_mlp", true))
		}, encoder.Options{Pooling: "mean"}, "config: norm_mlp (a LayerNorm inside the gated MLP): only the post-norm NomicBERT"},
		{"nomic_bert with another activation", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "nomic_bert"}, setConfig("activation_function", "relu"))
		}, encoder.Options{Pooling: "mean"}, `config: activation_function "relu" not supported`},
		{"nomic_bert config with biases its checkpoint lacks", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "nomic_bert"}, setConfig("qkv_proj_bias", true))
		}, encoder.Options{Pooling: "mean"}, "tensor encoder.layers.0.attn.Wqkv.bias missing"},
		{"jina task the model lacks", func(t *testing.T) string { return write(t, encodertest.Spec{ModelType: "jina"}, nil) },
			encoder.Options{Pooling: "mean", QueryTask: ptr("retrieval.querry")},
			`task "retrieval.querry": the model's adapters are ["retrieval.query" "retrieval.passage" "separation" "classification" "text-matching"]`},
		{"a task for a model without adapters", func(t *testing.T) string { return write(t, encodertest.Spec{ModelType: "xlm-roberta"}, nil) },
			encoder.Options{Pooling: "mean", PassageTask: ptr("retrieval.passage")}, `task "retrieval.passage": the model has no task adapters`},
		{"jina config whose adapters its checkpoint lacks", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "jina"}, setConfig("lora_rank", 8))
		}, encoder.Options{Pooling: "mean"}, "tensor embeddings.word_embeddings.parametrizations.weight.0.lora_A has shape [5 121 4], config.json implies [5 121 8]"},
		{"jina with a tanh GELU", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "jina"}, setConfig("hidden_act", "gelu_new"))
		}, encoder.Options{Pooling: "mean"}, `hidden_act "gelu_new" not supported`},
		{"rotary positions in a plain roberta", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "roberta"}, setConfig("position_embedding_type", "rotary"))
		}, encoder.Options{Pooling: "mean"}, `position_embedding_type "rotary" not supported`},
		{"gte with linearly scaled rotary positions", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "new"}, setConfig("rope_scaling", map[string]any{"type": "linear", "factor": 2}))
		}, encoder.Options{Pooling: "cls"}, `config: rope_scaling type "linear": NewModel scales rotary positions by "ntk" only`},
		{"gte with mixed NTK scaling", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "new"}, setConfig("rope_scaling", map[string]any{"type": "ntk", "factor": 2, "mixed_b": 0.5}))
		}, encoder.Options{Pooling: "cls"}, "config: rope_scaling mixed_b: only the fixed NTK scaling is supported"},
		{"gte with RMSNorm", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "new"}, setConfig("layer_norm_type", "rms_norm"))
		}, encoder.Options{Pooling: "cls"}, `config: layer_norm_type "rms_norm": only layer_norm is supported`},
		{"gte with separate q, k and v projections", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "new"}, setConfig("pack_qkv", false))
		}, encoder.Options{Pooling: "cls"}, "config: pack_qkv false"},
		{"gte with log-n attention scaling", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "new"}, setConfig("logn_attention_scale", true))
		}, encoder.Options{Pooling: "cls"}, "config: logn_attention_scale: not supported"},
		{"gte with absolute positions", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "new"}, setConfig("position_embedding_type", "absolute"))
		}, encoder.Options{Pooling: "cls"}, `config: position_embedding_type "absolute": only NewModel's rotary positions (rope) are supported`},
		{"another BERT with ALiBi (MosaicBERT's)", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "jina_bert"}, setConfig("architectures", []string{"BertForMaskedLM"}))
		}, encoder.Options{Pooling: "mean"}, `position_embedding_type "alibi" (architectures [BertForMaskedLM]): only Jina's JinaBert models`},
		{"jina_bert with another feed-forward", func(t *testing.T) string {
			return write(t, encodertest.Spec{ModelType: "jina_bert"}, setConfig("feed_forward_type", "glu"))
		}, encoder.Options{Pooling: "mean"}, `config: feed_forward_type "glu" not supported (want geglu, reglu or original)`},
		{"jina_bert's qk-post-norm variant (jina-embeddings-v2-base-code)", func(t *testing.T) string {
			dir := t.TempDir()
			tm, err := encodertest.Write(dir, encodertest.Spec{ModelType: "jina_bert"})
			require.NoError(t, err)
			tm.Weights["bert.encoder.layer.0.attention.self.layer_norm_q.weight"] = lmtest.Tensor{Shape: []int{32}, Data: make([]float32, 32)}
			require.NoError(t, lmtest.WriteWeights(filepath.Join(dir, "model.safetensors"), tm.Weights))
			_, err = encoder.Describe(dir)
			require.ErrorContains(t, err, "the qk-post-norm JinaBERT", "lm info refuses it too")
			return dir
		}, encoder.Options{Pooling: "mean"}, "bert.encoder.layer.0.attention.self.layer_norm_q.weight: the qk-post-norm JinaBERT (jina-embeddings-v2-base-code's jina-bert-v2-qk-post-norm) is not supported"},
		{"compared by euclidean distance, not normalised", func(t *testing.T) string {
			return write(t, encodertest.Spec{SentenceTransformers: true, Similarity: "euclidean"}, nil)
		}, encoder.Options{}, `config_sentence_transformers.json: similarity_fn_name "euclidean": graphloom ranks by dot product; pass --normalize true`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := encoder.Load(c.dir(t), c.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// TestDigest changes with the weights, the pooling and the prompts, not with a copy.
func TestDigest(t *testing.T) {
	load := func(dir string, opts encoder.Options) string {
		enc, err := encoder.Load(dir, opts)
		require.NoError(t, err)
		return enc.Digest()
	}
	a, b, a2 := t.TempDir(), t.TempDir(), t.TempDir()
	for _, w := range []struct {
		dir  string
		seed uint64
	}{{a, 1}, {b, 2}, {a2, 1}} {
		_, err := encodertest.Write(w.dir, encodertest.Spec{Seed: w.seed})
		require.NoError(t, err)
	}
	base := load(a, encoder.Options{Pooling: "mean"})
	assert.Len(t, base, 64)
	assert.Equal(t, base, load(a2, encoder.Options{Pooling: "mean"}), "same files in another folder")
	assert.NotEqual(t, base, load(b, encoder.Options{Pooling: "mean"}), "other weights of the same shapes")
	assert.NotEqual(t, base, load(a, encoder.Options{Pooling: "cls"}), "other pooling")
	q := "query: "
	assert.NotEqual(t, base, load(a, encoder.Options{Pooling: "mean", QueryPrompt: &q}), "other prompt")

	// Task adapters count; a folder without any keeps its identity (tasks unset).
	j1 := t.TempDir()
	_, err := encodertest.Write(j1, encodertest.Spec{ModelType: "jina", Seed: 1})
	require.NoError(t, err)
	jina := load(j1, encoder.Options{Pooling: "mean"})
	assert.NotEqual(t, jina, load(j1, encoder.Options{Pooling: "mean", QueryTask: ptr("text-matching")}), "other query adapters")
	assert.NotEqual(t, jina, load(j1, encoder.Options{Pooling: "mean", QueryTask: ptr(""), QueryPrompt: ptr(encodertest.JinaInstructions["retrieval.query"])}),
		"no query adapters, the same prompt")

	// Weights in pytorch_model.bin count as safetensors ones do.
	b1, b2, b3 := t.TempDir(), t.TempDir(), t.TempDir()
	for _, w := range []struct {
		dir  string
		seed uint64
	}{{b1, 1}, {b2, 2}, {b3, 1}} {
		_, err = encodertest.Write(w.dir, encodertest.Spec{Seed: w.seed, PyTorchBin: true})
		require.NoError(t, err)
	}
	bin := load(b1, encoder.Options{Pooling: "mean"})
	assert.Equal(t, bin, load(b3, encoder.Options{Pooling: "mean"}), "the same pytorch_model.bin in another folder")
	assert.NotEqual(t, bin, load(b2, encoder.Options{Pooling: "mean"}), "another pytorch_model.bin of the same shapes")

	// Dense modules: their config and weights count.
	d1, d2, plain := t.TempDir(), t.TempDir(), t.TempDir()
	for _, w := range []struct {
		dir   string
		dense []encodertest.DenseSpec
	}{{d1, []encodertest.DenseSpec{{Out: 8}}}, {d2, []encodertest.DenseSpec{{Out: 8}}}, {plain, nil}} {
		_, err := encodertest.Write(w.dir, encodertest.Spec{Seed: 1, SentenceTransformers: true, Dense: w.dense})
		require.NoError(t, err)
	}
	withDense := load(d1, encoder.Options{})
	assert.Equal(t, withDense, load(d2, encoder.Options{}), "the same Dense module in another folder")
	assert.NotEqual(t, withDense, load(plain, encoder.Options{}), "a Dense module")
	require.NoError(t, os.WriteFile(filepath.Join(d2, "2_Dense", "config.json"), []byte(`{"in_features": 32, "out_features": 8, "activation_function": "torch.nn.modules.linear.Identity"}`), 0o644))
	assert.NotEqual(t, withDense, load(d2, encoder.Options{}), "another activation")
}

// TestEncoderBFloat16 embeds with the weights and layers in bf16: the vectors stay
// within bf16's precision of the float64 reference (cosine and largest component
// error), and differ from the float32 encoder's beyond float32 rounding (the layers
// really ran in bf16).
func TestEncoderBFloat16(t *testing.T) {
	eng := newEngine(t)
	f := false
	cases := []struct {
		name   string
		spec   encodertest.Spec
		opts   encoder.Options
		modes  []string
		norm   bool
		task   int    // the passages' task adapters (jina)
		prompt string // and their prompt
	}{
		{name: "bert sentence-transformers mean+normalize", spec: encodertest.Spec{SentenceTransformers: true, Normalize: true},
			modes: []string{"mean"}, norm: true},
		{name: "xlm-roberta plain cls", spec: encodertest.Spec{ModelType: "xlm-roberta"},
			opts: encoder.Options{Pooling: "cls", Normalize: &f}, modes: []string{"cls"}},
		{name: "mpnet sentence-transformers mean+normalize", spec: encodertest.Spec{ModelType: "mpnet", SentenceTransformers: true, Normalize: true},
			modes: []string{"mean"}, norm: true},
		{name: "modernbert sentence-transformers mean+normalize", spec: encodertest.Spec{ModelType: "modernbert", SentenceTransformers: true, Normalize: true, Layers: 3},
			modes: []string{"mean"}, norm: true},
		{name: "nomic_bert sentence-transformers mean+normalize", spec: encodertest.Spec{ModelType: "nomic_bert", SentenceTransformers: true, Normalize: true},
			modes: []string{"mean"}, norm: true},
		{name: "jina_bert sentence-transformers mean+normalize, 12 heads", spec: encodertest.Spec{ModelType: "jina_bert", SentenceTransformers: true, Normalize: true, Hidden: 48, Heads: 12},
			modes: []string{"mean"}, norm: true},
		{name: "nomic_bert with experts, sentence-transformers mean+normalize", spec: encodertest.Spec{ModelType: "nomic_bert", SentenceTransformers: true, Normalize: true, Experts: 4, TopK: 2},
			modes: []string{"mean"}, norm: true},
		{name: "jina plain mean, passages' adapters", spec: encodertest.Spec{ModelType: "jina"},
			opts: encoder.Options{Pooling: "mean", Normalize: &f}, modes: []string{"mean"}, task: 1, prompt: encodertest.JinaInstructions["retrieval.passage"]},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.spec.Seed = uint64(40 + i)
			tm, err := encodertest.Write(dir, c.spec)
			require.NoError(t, err)
			f32, err := encoder.Load(dir, c.opts)
			require.NoError(t, err)
			c.opts.DType = dtypes.BFloat16
			bf, err := encoder.Load(dir, c.opts)
			require.NoError(t, err)
			tok, err := lm.LoadTokenizer(dir)
			require.NoError(t, err)
			eps := refEps(tm.Spec.ModelType)
			got, err := bf.Embed(eng, texts, false)
			require.NoError(t, err)
			full, err := f32.Embed(eng, texts, false)
			require.NoError(t, err)
			var maxErr, maxF32, scale float64
			for j, text := range texts {
				ids, err := tok.Encode(c.prompt+text, true)
				require.NoError(t, err)
				want := referenceTask(tm, eps, ids, 0, c.modes, c.norm, c.task)
				var dot, nw, ng float64
				for k := range want {
					g := float64(got[j][k])
					dot, nw, ng = dot+g*want[k], nw+want[k]*want[k], ng+g*g
					maxErr = math.Max(maxErr, math.Abs(g-want[k]))
					maxF32 = math.Max(maxF32, math.Abs(g-float64(full[j][k])))
					scale = math.Max(scale, math.Abs(want[k]))
				}
				assert.Greater(t, dot/math.Sqrt(nw*ng), 0.999, "%s: cosine with the float64 reference", text)
			}
			t.Logf("bf16: max |error| %.3g, against float32 %.3g, max |component| %.3g", maxErr, maxF32, scale)
			assert.Less(t, maxErr/scale, 0.05, "largest component error relative to the largest component")
			assert.Greater(t, maxF32/scale, 1e-4, "bf16 differs from float32 beyond float32 rounding")
		})
	}
}

// TestRelativeBucket checks MPNet's relative position buckets: against values worked
// out by hand from transformers' formula, and against that formula as written there
// (refBucket, in float64) over every relative position a 1,024-token sequence has.
func TestRelativeBucket(t *testing.T) {
	for _, c := range []struct{ rel, want int }{
		{0, 0}, {-1, 1}, {-7, 7}, {1, 17}, {7, 23}, // below 8: one bucket each
		{-8, 8}, {-11, 8}, {-12, 9}, {-15, 9}, {-16, 10}, // 8 + ⌊2·log₂(d/8)⌋
		{-22, 10}, {-23, 11}, {-32, 12}, {-45, 12}, {-46, 13}, {-64, 14}, {-90, 14},
		{-91, 15}, {-128, 15}, {-1000, 15}, // capped at 15
		{16, 26}, {91, 31}, {1000, 31},
	} {
		assert.Equal(t, c.want, encoder.RelativeBucket(c.rel), "relative position %d", c.rel)
	}
	for rel := -1023; rel <= 1023; rel++ {
		require.Equal(t, refBucket(rel), encoder.RelativeBucket(rel), "relative position %d", rel)
	}
}

// TestParseConfigModernBERT reads a config.json as ModernBERT-base's is published
// (transformers 4.47): its settings are transformers' documented defaults.
func TestParseConfigModernBERT(t *testing.T) {
	data := []byte(`{"architectures": ["ModernBertForMaskedLM"], "attention_bias": false, "attention_dropout": 0.0,
	"bos_token_id": 50281, "classifier_activation": "gelu", "classifier_bias": false, "classifier_dropout": 0.0,
	"classifier_pooling": "mean", "cls_token_id": 50281, "decoder_bias": true, "deterministic_flash_attn": false,
	"embedding_dropout": 0.0, "eos_token_id": 50282, "global_attn_every_n_layers": 3, "global_rope_theta": 160000.0,
	"gradient_checkpointing": false, "hidden_activation": "gelu", "hidden_size": 768, "initializer_cutoff_factor": 2.0,
	"initializer_range": 0.02, "intermediate_size": 1152, "layer_norm_eps": 1e-05, "local_attention": 128,
	"local_rope_theta": 10000.0, "max_position_embeddings": 8192, "mlp_bias": false, "mlp_dropout": 0.0,
	"model_type": "modernbert", "norm_bias": false, "norm_eps": 1e-05, "num_attention_heads": 12,
	"num_hidden_layers": 22, "pad_token_id": 50283, "position_embedding_type": "absolute", "sep_token_id": 50282,
	"tie_word_embeddings": true, "torch_dtype": "float32", "transformers_version": "4.47.0.dev0", "vocab_size": 50368}`)
	c, err := encoder.ParseConfig(data)
	require.NoError(t, err)
	assert.Equal(t, encoder.ModernBERTConfig{GlobalEvery: 3, Window: 128, GlobalTheta: 160000, LocalTheta: 10000}, c.ModernBERT)
	assert.Equal(t, 1e-5, c.LayerNormEps)
	assert.Equal(t, 50283, c.PadTokenID)
	assert.Equal(t, 0, c.TypeVocabSize)
	assert.Equal(t, 8192, c.MaxTokens(), "rotary positions: no offset, no table")
	assert.Equal(t, 22, c.Layers)

	// mmBERT's configs say "sans_pos", which ModernBertConfig never reads; a null
	// local_rope_theta gives the sliding layers the global base (transformers 4.x).
	edited := strings.Replace(string(data), `"position_embedding_type": "absolute"`, `"position_embedding_type": "sans_pos"`, 1)
	edited = strings.Replace(edited, `"local_rope_theta": 10000.0`, `"local_rope_theta": null`, 1)
	require.NotEqual(t, string(data), edited)
	c, err = encoder.ParseConfig([]byte(edited))
	require.NoError(t, err)
	assert.Equal(t, 160000.0, c.ModernBERT.LocalTheta)
}

// TestParseConfigNomicBERT reads a config.json with nomic-embed-text-v1.5's fields
// (GPT-2's names for the sizes, Nomic's own for the rest): the word table is padded to
// pad_vocab_size_multiple, the gated MLP's width rounded up to a multiple of 256, and
// the remote code's auto_map is not refused.
func TestParseConfigNomicBERT(t *testing.T) {
	data := `{"_name_or_path": "nomic-ai/nomic-embed-text-v1.5", "activation_function": "swiglu",
	"architectures": ["NomicBertModel"], "attn_pdrop": 0.0, "auto_map": {"AutoConfig": "nomic-ai/nomic-bert-2048--configuration_hf_nomic_bert.NomicBertConfig",
	"AutoModel": "nomic-ai/nomic-bert-2048--modeling_hf_nomic_bert.NomicBertModel"}, "bos_token_id": null, "causal": false,
	"dense_seq_output": true, "embd_pdrop": 0.0, "eos_token_id": null, "fused_bias_fc": true, "fused_dropout_add_ln": true,
	"initializer_range": 0.02, "layer_norm_epsilon": 1e-12, "max_trained_positions": 2048, "mlp_fc1_bias": false,
	"mlp_fc2_bias": false, "model_type": "nomic_bert", "n_embd": 768, "n_head": 12, "n_inner": 3072, "n_layer": 12,
	"n_positions": 8192, "pad_vocab_size_multiple": 64, "parallel_block": false, "parallel_block_tied_norm": false,
	"prenorm": false, "qkv_proj_bias": false, "reorder_and_upcast_attn": false, "resid_pdrop": 0.0, "rotary_emb_base": 1000,
	"rotary_emb_fraction": 1.0, "rotary_emb_interleaved": false, "rotary_emb_scale_base": null, "rotary_scaling_factor": null,
	"scale_attn_by_inverse_layer_idx": false, "scale_attn_weights": true, "summary_activation": null, "torch_dtype": "float32",
	"transformers_version": "4.37.2", "type_vocab_size": 2, "use_cache": true, "use_flash_attn": true, "use_rms_norm": false,
	"use_xentropy": true, "vocab_size": 30528}`
	c, err := encoder.ParseConfig([]byte(data))
	require.NoError(t, err)
	assert.Equal(t, []int{768, 12, 12, 3072, 30528, 2}, []int{c.Hidden, c.Layers, c.Heads, c.Intermediate, c.VocabSize, c.TypeVocabSize})
	assert.Equal(t, encoder.NomicBERTConfig{Activation: "swiglu", RotaryBase: 1000}, c.NomicBERT)
	assert.Equal(t, 1e-12, c.LayerNormEps)
	assert.Equal(t, 8192, c.MaxTokens(), "rotary positions: no offset, no table")

	edit := func(from, to string) encoder.Config {
		t.Helper()
		edited := strings.Replace(data, from, to, 1)
		require.NotEqual(t, data, edited)
		c, err := encoder.ParseConfig([]byte(edited))
		require.NoError(t, err)
		return c
	}
	// 30522 rows padded to 64: 30528; no n_inner: 8/3 of 768 = 2048, a multiple of 256;
	// 3000 is rounded up to 3072.
	assert.Equal(t, 30528, edit(`"vocab_size": 30528`, `"vocab_size": 30522`).VocabSize)
	assert.Equal(t, 2048, edit(`"n_inner": 3072`, `"n_inner": null`).Intermediate)
	assert.Equal(t, 3072, edit(`"n_inner": 3072`, `"n_inner": 3000`).Intermediate)
	// The plain MLP keeps n_inner as it is.
	assert.Equal(t, 3000, edit(`"n_inner": 3072, "n_layer": 12`, `"n_inner": 3000, "n_layer": 12, "activation_function": "gelu"`).Intermediate)
	// Dynamic NTK scaling changes the rotation only past max_trained_positions: kept below it.
	assert.Equal(t, 2048, edit(`"rotary_scaling_factor": null`, `"rotary_scaling_factor": 2`).MaxTokens())
	// The plain MLP's gelu_* names run as exact GELU in the remote code, and GPT2Config's
	// default is gelu_new.
	assert.Equal(t, "gelu", edit(`"activation_function": "swiglu"`, `"activation_function": "gelu_new"`).NomicBERT.Activation)
	assert.Equal(t, "gelu", edit(`"activation_function": "swiglu",`, ``).NomicBERT.Activation)
	// nomic-embed-text-v2-moe's experts.
	moe := edit(`"activation_function": "swiglu"`, `"activation_function": "gelu", "moe_every_n_layers": 2, "num_experts": 8, "moe_top_k": 2, "expert_choice_router": false, "num_shared_experts": 0`)
	assert.Equal(t, []int{2, 8, 2, 3072}, []int{moe.NomicBERT.MoEEvery, moe.NomicBERT.Experts, moe.NomicBERT.TopK, moe.Intermediate})
}

// TestParseConfigJina reads a config.json with jina-embeddings-v3's fields: rotary
// positions without offset, the five task adapters, the remote code's auto_map not
// refused; without load_trained_adapters the adapters are not read.
func TestParseConfigJina(t *testing.T) {
	data := `{"_name_or_path": "jinaai/jina-embeddings-v3", "architectures": ["XLMRobertaLoRA"],
	"attention_probs_dropout_prob": 0.1, "auto_map": {"AutoConfig": "jinaai/xlm-roberta-flash-implementation--configuration_xlm_roberta.XLMRobertaFlashConfig",
	"AutoModel": "jinaai/xlm-roberta-flash-implementation--modeling_lora.XLMRobertaLoRA"}, "bos_token_id": 0, "classifier_dropout": null,
	"emb_pooler": null, "eos_token_id": 2, "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 1024,
	"initializer_range": 0.02, "intermediate_size": 4096, "layer_norm_eps": 1e-05, "load_trained_adapters": true,
	"lora_adaptations": ["retrieval.query", "retrieval.passage", "separation", "classification", "text-matching"],
	"lora_alpha": 1, "lora_dropout_p": 0.0, "lora_main_params_trainable": false, "lora_rank": 4,
	"matryoshka_dimensions": [32, 64, 128, 256, 512, 768, 1024], "max_position_embeddings": 8194, "model_type": "xlm-roberta",
	"num_attention_heads": 16, "num_hidden_layers": 24, "output_past": true, "pad_token_id": 1, "position_embedding_type": "rotary",
	"rotary_emb_base": 20000.0, "task_instructions": {"classification": "", "retrieval.passage": "Represent the document for retrieval: ",
	"retrieval.query": "Represent the query for retrieving evidence documents: ", "separation": "", "text-matching": ""},
	"torch_dtype": "bfloat16", "transformers_version": "4.41.2", "truncate_dim": null, "type_vocab_size": 1, "use_cache": true,
	"use_flash_attn": true, "use_reentrant": false, "vocab_size": 250002}`
	c, err := encoder.ParseConfig([]byte(data))
	require.NoError(t, err)
	assert.Equal(t, encoder.JinaConfig{RotaryBase: 20000, Tasks: []string{"retrieval.query", "retrieval.passage", "separation", "classification", "text-matching"},
		Rank: 4, Alpha: 1}, c.Jina)
	assert.Equal(t, []int{1024, 24, 16, 4096, 250002, 1, 1}, []int{c.Hidden, c.Layers, c.Heads, c.Intermediate, c.VocabSize, c.TypeVocabSize, c.PadTokenID})
	assert.Equal(t, 0, c.PositionOffset)
	assert.Equal(t, 8194, c.MaxTokens(), "rotary positions: no offset")
	i, err := c.TaskIndex("retrieval.passage")
	require.NoError(t, err)
	assert.Equal(t, 1, i)

	c, err = encoder.ParseConfig([]byte(strings.Replace(data, `"load_trained_adapters": true`, `"load_trained_adapters": false`, 1)))
	require.NoError(t, err)
	assert.Empty(t, c.Jina.Tasks, "adapters XLMRobertaLoRA would start at ΔW = 0")
	assert.Equal(t, 20000.0, c.Jina.RotaryBase)

	// XLMRobertaFlashConfig's defaults, not BERT's, where the file is silent.
	silent := data
	for _, field := range []string{`"layer_norm_eps": 1e-05, `, `"type_vocab_size": 1, `, `"max_position_embeddings": 8194, `} {
		require.Contains(t, silent, field)
		silent = strings.Replace(silent, field, "", 1)
	}
	c, err = encoder.ParseConfig([]byte(silent))
	require.NoError(t, err)
	assert.Equal(t, 1e-5, c.LayerNormEps)
	assert.Equal(t, []int{1, 8194}, []int{c.TypeVocabSize, c.MaxTokens()})
	_, err = encoder.ParseConfig([]byte(strings.Replace(data, `"rotary_emb_base": 20000.0`, `"rotary_emb_base": 20000.0, "rotary_emb_interleaved": true`, 1)))
	assert.ErrorContains(t, err, "rotary_emb_interleaved (GPT-J pairs)")
}

// TestParseConfigGTE reads a config.json with gte-base-en-v1.5's fields: no token
// types, rotary positions with fixed NTK scaling, the remote code's auto_map not
// refused; NewConfig's defaults where a file is silent.
func TestParseConfigGTE(t *testing.T) {
	data := `{"_name_or_path": "Alibaba-NLP/gte-base-en-v1.5", "architectures": ["NewModel"],
	"attention_probs_dropout_prob": 0.0, "auto_map": {"AutoConfig": "Alibaba-NLP/new-impl--configuration.NewConfig",
	"AutoModel": "Alibaba-NLP/new-impl--modeling.NewModel"}, "classifier_dropout": null, "hidden_act": "gelu",
	"hidden_dropout_prob": 0.1, "hidden_size": 768, "initializer_range": 0.02, "intermediate_size": 3072,
	"layer_norm_eps": 1e-12, "layer_norm_type": "layer_norm", "logn_attention_clip1": false, "logn_attention_scale": false,
	"max_position_embeddings": 8192, "model_type": "new", "num_attention_heads": 12, "num_hidden_layers": 12,
	"pack_qkv": true, "pad_token_id": 0, "position_embedding_type": "rope", "rope_scaling": {"factor": 2.0, "type": "ntk"},
	"rope_theta": 500000, "torch_dtype": "float32", "transformers_version": "4.39.1", "type_vocab_size": 0,
	"unpad_inputs": false, "use_memory_efficient_attention": false, "vocab_size": 30528}`
	c, err := encoder.ParseConfig([]byte(data))
	require.NoError(t, err)
	assert.Equal(t, encoder.GTEConfig{RopeTheta: 500000, NTKFactor: 2}, c.GTE)
	assert.Equal(t, []int{768, 12, 12, 3072, 30528, 0}, []int{c.Hidden, c.Layers, c.Heads, c.Intermediate, c.VocabSize, c.TypeVocabSize})
	assert.Equal(t, 1e-12, c.LayerNormEps)
	assert.Equal(t, 8192, c.MaxTokens(), "rotary positions: no offset")

	c, err = encoder.ParseConfig([]byte(`{"model_type": "new", "hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4,
	"intermediate_size": 128, "vocab_size": 100}`))
	require.NoError(t, err)
	assert.Equal(t, encoder.GTEConfig{RopeTheta: 10000}, c.GTE)
	assert.Equal(t, []int{1, 2048}, []int{c.TypeVocabSize, c.MaxTokens()}, "NewConfig's defaults")

	// NTKScalingRotaryEmbedding rescales only a cache longer than max_position_embeddings.
	c, err = encoder.ParseConfig([]byte(strings.Replace(data, `"factor": 2.0`, `"factor": 1.0`, 1)))
	require.NoError(t, err)
	assert.Zero(t, c.GTE.NTKFactor)
	// Worked by hand for θ 10,000, factor 2, heads of 4: 1/20000⁰/√2 and 1/20000^½/√2 = 1/200.
	inv := encoder.GTEInvFreq(encoder.GTEConfig{RopeTheta: 10000, NTKFactor: 2}, 4)
	assert.InDeltaSlice(t, []float64{1 / math.Sqrt2, 0.005}, []float64{float64(inv[0]), float64(inv[1])}, 1e-7)
	inv = encoder.GTEInvFreq(encoder.GTEConfig{RopeTheta: 10000}, 4)
	assert.InDeltaSlice(t, []float64{1, 0.01}, []float64{float64(inv[0]), float64(inv[1])}, 1e-7)
}

// TestParseConfigJinaBERT reads a config.json with jina-embeddings-v2-base-en's
// fields: BERT's sizes, ALiBi, GEGLU, the remote code's auto_map not refused;
// JinaBertConfig's default feed-forward where the file is silent.
func TestParseConfigJinaBERT(t *testing.T) {
	data := `{"_name_or_path": "jinaai/jina-bert-implementation", "architectures": ["JinaBertForMaskedLM"],
	"attention_probs_dropout_prob": 0.0, "auto_map": {"AutoConfig": "jinaai/jina-bert-implementation--configuration_bert.JinaBertConfig",
	"AutoModel": "jinaai/jina-bert-implementation--modeling_bert.JinaBertModel"}, "classifier_dropout": null, "emb_pooler": "mean",
	"feed_forward_type": "geglu", "gradient_checkpointing": false, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
	"hidden_size": 768, "initializer_range": 0.02, "intermediate_size": 3072, "layer_norm_eps": 1e-12,
	"max_position_embeddings": 8192, "model_max_length": 8192, "model_type": "bert", "num_attention_heads": 12,
	"num_hidden_layers": 12, "pad_token_id": 0, "position_embedding_type": "alibi", "torch_dtype": "float32",
	"transformers_version": "4.26.0", "type_vocab_size": 2, "use_cache": true, "vocab_size": 30528}`
	c, err := encoder.ParseConfig([]byte(data))
	require.NoError(t, err)
	assert.Equal(t, encoder.JinaBERTConfig{FeedForward: "geglu"}, c.JinaBERT)
	assert.Equal(t, []int{768, 12, 12, 3072, 30528, 2, 8192}, []int{c.Hidden, c.Layers, c.Heads, c.Intermediate, c.VocabSize, c.TypeVocabSize, c.MaxTokens()})
	c, err = encoder.ParseConfig([]byte(strings.Replace(data, `"feed_forward_type": "geglu", `, "", 1)))
	require.NoError(t, err)
	assert.Equal(t, "original", c.JinaBERT.FeedForward, "JinaBertConfig's default")
	// 12 heads, not a power of two: 2^−1 … 2^−8, then every other slope of 16 heads'.
	want := []float64{0.5, 0.25, 0.125, 0.0625, 1.0 / 32, 1.0 / 64, 1.0 / 128, 1.0 / 256,
		math.Pow(2, -0.5), math.Pow(2, -1.5), math.Pow(2, -2.5), math.Pow(2, -3.5)}
	assert.InDeltaSlice(t, want, encoder.AlibiSlopes(12), 1e-15)
}

// TestParseConfigDistilBERT reads distilbert-base-uncased's config.json, which names
// the sizes its own way (dim, n_layers, n_heads, hidden_dim).
func TestParseConfigDistilBERT(t *testing.T) {
	data := []byte(`{"activation": "gelu", "architectures": ["DistilBertForMaskedLM"], "attention_dropout": 0.1,
	"dim": 768, "dropout": 0.1, "hidden_dim": 3072, "initializer_range": 0.02, "max_position_embeddings": 512,
	"model_type": "distilbert", "n_heads": 12, "n_layers": 6, "pad_token_id": 0, "qa_dropout": 0.1,
	"seq_classif_dropout": 0.2, "sinusoidal_pos_embds": false, "tie_weights_": true, "vocab_size": 30522}`)
	c, err := encoder.ParseConfig(data)
	require.NoError(t, err)
	assert.Equal(t, []int{768, 6, 12, 3072, 512, 30522}, []int{c.Hidden, c.Layers, c.Heads, c.Intermediate, c.MaxPositions, c.VocabSize})
	assert.Equal(t, 0, c.TypeVocabSize)
	assert.Equal(t, 1e-12, c.LayerNormEps)
	assert.Equal(t, 512, c.MaxTokens())
	_, err = encoder.ParseConfig([]byte(`{"model_type": "distilbert", "activation": "relu", "dim": 8, "n_layers": 1, "n_heads": 2, "hidden_dim": 16, "max_position_embeddings": 8, "vocab_size": 10}`))
	require.ErrorContains(t, err, `activation "relu" not supported (want gelu)`)
}

// TestDescribe reads folders as `graphloom lm info` shows them: the parameters are
// those the test wrote, the vectors' dimension follows the Dense modules, and a plain
// folder says nothing of pooling without being an error.
func TestDescribe(t *testing.T) {
	count := func(ws map[string]lmtest.Tensor) int64 {
		var n int64
		for _, w := range ws {
			n += int64(len(w.Data))
		}
		return n
	}
	dir := t.TempDir()
	tm, err := encodertest.Write(dir, encodertest.Spec{ModelType: "distilbert", SentenceTransformers: true, PyTorchBin: true, Normalize: true,
		Dense: []encodertest.DenseSpec{{Out: 16, Activation: "torch.nn.modules.activation.Tanh", PyTorchOnly: true}}})
	require.NoError(t, err)
	info, err := encoder.Describe(dir)
	require.NoError(t, err)
	assert.True(t, encoder.IsEncoderFolder(dir))
	assert.Equal(t, "distilbert", info.ModelType)
	assert.Equal(t, "pytorch_model.bin", info.Weights)
	assert.Equal(t, count(tm.Weights), info.Parameters, "every float tensor, not the position_ids buffer")
	assert.Equal(t, []string{"mean"}, info.Pooling)
	assert.Equal(t, []string{"32 → 16, tanh (pytorch_model.bin)"}, info.Dense)
	assert.Equal(t, 16, info.Dim)
	assert.True(t, info.Normalize)
	assert.Contains(t, info.String(), "pooling      mean, then Dense 32 → 16, tanh (pytorch_model.bin); normalised: true")

	plain := t.TempDir()
	tm, err = encodertest.Write(plain, encodertest.Spec{ModelType: "modernbert", Layers: 3})
	require.NoError(t, err)
	info, err = encoder.Describe(plain)
	require.NoError(t, err)
	assert.Equal(t, count(tm.Weights), info.Parameters)
	assert.Equal(t, map[string]int{"F32": len(tm.Weights)}, info.StoredDTypes)
	assert.Empty(t, info.Pooling)
	assert.Zero(t, info.Dim)
	assert.Contains(t, info.String(), "pooling      not said (a plain folder: pass --pooling)")
	assert.Contains(t, info.Positions, "rotary: θ 160000 in the global layers (every 2), 10000 in the others, which see ±8 tokens")

	jinaV2 := t.TempDir()
	tm, err = encodertest.Write(jinaV2, encodertest.Spec{ModelType: "jina_bert", SentenceTransformers: true})
	require.NoError(t, err)
	info, err = encoder.Describe(jinaV2)
	require.NoError(t, err)
	assert.Equal(t, count(tm.Weights), info.Parameters)
	assert.Equal(t, "ALiBi, no position table; MLP geglu", info.Positions)

	nomic := t.TempDir()
	tm, err = encodertest.Write(nomic, encodertest.Spec{ModelType: "nomic_bert", SentenceTransformers: true, Normalize: true})
	require.NoError(t, err)
	info, err = encoder.Describe(nomic)
	require.NoError(t, err)
	assert.Equal(t, count(tm.Weights), info.Parameters)
	assert.Equal(t, 256, info.Intermediate, "n_inner 64 rounded up to the gated MLP's multiple of 256")
	require.Equal(t, 121, len(tm.Vocab))
	assert.Equal(t, 128, info.Vocab, "the word table padded to pad_vocab_size_multiple (64)")
	assert.Equal(t, "rotary: θ 1000; MLP swiglu", info.Positions)

	gte := t.TempDir()
	tm, err = encodertest.Write(gte, encodertest.Spec{ModelType: "new", SentenceTransformers: true, Pooling: []string{"cls"}})
	require.NoError(t, err)
	info, err = encoder.Describe(gte)
	require.NoError(t, err)
	assert.Equal(t, count(tm.Weights), info.Parameters)
	assert.Equal(t, "rotary: θ 500000, NTK-scaled ×2", info.Positions)

	jina := t.TempDir()
	tm, err = encodertest.Write(jina, encodertest.Spec{ModelType: "jina", Prefix: "roberta.", SentenceTransformers: true, Normalize: true})
	require.NoError(t, err)
	info, err = encoder.Describe(jina)
	require.NoError(t, err)
	assert.Equal(t, count(tm.Weights), info.Parameters, "base weights and adapters")
	assert.Equal(t, "rotary: θ 20000", info.Positions)
	assert.Equal(t, encodertest.JinaInstructions["retrieval.query"], info.QueryPrompt)
	assert.Contains(t, info.String(), "adapters     retrieval.query, retrieval.passage, separation, classification, text-matching; query retrieval.query, passage retrieval.passage")

	// A folder whose modules are wrong is still an encoder's: Describe says what is wrong.
	bad := t.TempDir()
	_, err = encodertest.Write(bad, encodertest.Spec{SentenceTransformers: true, Similarity: "euclidean"})
	require.NoError(t, err)
	assert.True(t, encoder.IsEncoderFolder(bad))
	_, err = encoder.Describe(bad)
	assert.ErrorContains(t, err, `similarity_fn_name "euclidean"`)

	lmDir := t.TempDir()
	_, err = lmtest.Write(lmDir, lmtest.Spec{})
	require.NoError(t, err)
	assert.False(t, encoder.IsEncoderFolder(lmDir), "a decoder LM's folder")
}

// TestLongSequenceBlocks embeds texts longer than two attention blocks (1,024 tokens):
// attention then takes 512 queries at a time, with the padding mask, ModernBERT's
// sliding window, MPNet's relative bias and JinaBERT's ALiBi built per block; the
// vectors still match the float64 reference, which attends whole sequences.
func TestLongSequenceBlocks(t *testing.T) {
	eng := newEngine(t)
	long := []string{strings.Repeat("the of and in ", 300), strings.Repeat("and the in ", 280)} // ≈ 1,200 and 840 tokens
	f := false
	for _, c := range []struct {
		spec  encodertest.Spec
		batch int // 1: the whole batch's path (as on XLA), which the Go backend takes for one sequence
	}{
		{encodertest.Spec{ModelType: "modernbert", Layers: 2, MaxPositions: 1600}, 2},
		{encodertest.Spec{ModelType: "mpnet", Layers: 1, MaxPositions: 1602}, 2},
		{encodertest.Spec{ModelType: "jina_bert", Layers: 1, Hidden: 48, Heads: 6, MaxPositions: 1600}, 2},
		{encodertest.Spec{ModelType: "nomic_bert", Layers: 1, MaxPositions: 1600}, 2},
		{encodertest.Spec{ModelType: "modernbert", Layers: 2, MaxPositions: 1600}, 1},
	} {
		spec := c.spec
		t.Run(fmt.Sprintf("%s batch %d", spec.ModelType, c.batch), func(t *testing.T) {
			dir := t.TempDir()
			tm, err := encodertest.Write(dir, spec)
			require.NoError(t, err)
			enc, err := encoder.Load(dir, encoder.Options{Pooling: "mean", Normalize: &f, BatchSize: c.batch})
			require.NoError(t, err)
			got, err := enc.Embed(eng, long, false)
			require.NoError(t, err)
			tok, err := lm.LoadTokenizer(dir)
			require.NoError(t, err)
			for j, text := range long {
				ids, err := tok.Encode(text, true)
				require.NoError(t, err)
				if j == 0 {
					require.Greater(t, len(ids), 1024, "longer than two blocks")
				}
				assertClose(t, reference(tm, refEps(tm.Spec.ModelType), ids, 0, []string{"mean"}, false), got[j], spec.ModelType)
			}
		})
	}
}
