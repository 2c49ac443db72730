package lm_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/engine/enginetest"
	"github.com/graphloom/graphloom/models"
	"github.com/graphloom/graphloom/models/lm"
	"github.com/graphloom/graphloom/models/lm/lmtest"
)

// reference is an independent float64 forward pass of a Llama/Qwen2 model written by
// lmtest: Hugging Face's modeling_llama / modeling_qwen2 arithmetic, one sequence.
type reference struct {
	m       *lmtest.Model
	eps     float64
	callLen int // the call's sequence length for dynamic RoPE (the batch's longest); 0 = this sequence's
}

func (r reference) w(name string) []float64 {
	t, ok := r.m.Weights[name]
	if !ok {
		return nil
	}
	out := make([]float64, len(t.Data))
	for i, f := range t.Data {
		out[i] = float64(f)
	}
	return out
}

// matvec returns W·x (+ b) for W [out, in] row-major.
func matvec(w, b, x []float64) []float64 {
	in := len(x)
	out := make([]float64, len(w)/in)
	for o := range out {
		s := 0.0
		for i, xi := range x {
			s += w[o*in+i] * xi
		}
		if b != nil {
			s += b[o]
		}
		out[o] = s
	}
	return out
}

func rmsnorm(x, w []float64, eps float64) []float64 {
	ms := 0.0
	for _, v := range x {
		ms += v * v
	}
	inv := 1 / math.Sqrt(ms/float64(len(x))+eps)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v * inv * w[i]
	}
	return out
}

// refInvFreq transcribes transformers' ROPE_INIT_FUNCTIONS (modeling_rope_utils.py,
// transformers 5) for the spec's rope parameters, in float64: the inverse
// frequencies and the cos/sin scale for a call of seqLen positions.
func refInvFreq(s lmtest.Spec, hd, seqLen int) ([]float64, float64) {
	rp := s.Rope
	if rp == nil && s.RopeLinear > 0 {
		rp = map[string]any{"type": "linear", "factor": s.RopeLinear}
	}
	kind, _ := rp["rope_type"].(string)
	if kind == "" {
		kind, _ = rp["type"].(string)
	}
	f := func(k string) float64 { v, _ := rp[k].(float64); return v }
	origMax := func() float64 {
		switch v := rp["original_max_position_embeddings"].(type) {
		case int:
			return float64(v)
		case float64:
			return v
		}
		return float64(s.MaxPositions)
	}
	base, dim := s.RopeTheta, float64(hd)
	if kind == "dynamic" && seqLen > s.MaxPositions {
		base *= math.Pow(f("factor")*float64(seqLen)/float64(s.MaxPositions)-(f("factor")-1), dim/(dim-2))
	}
	inv := make([]float64, hd/2)
	for i := range inv {
		inv[i] = 1 / math.Pow(base, float64(2*i)/dim)
	}
	attn := 1.0
	switch kind {
	case "linear":
		for i := range inv {
			inv[i] /= f("factor")
		}
	case "llama3":
		old := origMax()
		lowW, highW := old/f("low_freq_factor"), old/f("high_freq_factor")
		for i, fr := range inv {
			wl := 2 * math.Pi / fr
			switch {
			case wl < highW: // high frequency: kept
			case wl > lowW: // low frequency: interpolated
				inv[i] = fr / f("factor")
			default:
				sm := (old/wl - f("low_freq_factor")) / (f("high_freq_factor") - f("low_freq_factor"))
				inv[i] = (1-sm)*fr/f("factor") + sm*fr
			}
		}
	case "yarn":
		factor, old := f("factor"), origMax()
		attn = 0.1*math.Log(factor) + 1
		cd := func(rot float64) float64 { return dim * math.Log(old/(rot*2*math.Pi)) / (2 * math.Log(base)) }
		low, high := math.Max(math.Floor(cd(32)), 0), math.Min(math.Ceil(cd(1)), dim-1)
		for i, fr := range inv {
			ramp := math.Min(math.Max((float64(i)-low)/(high-low), 0), 1)
			inv[i] = fr/factor*ramp + fr*(1-ramp)
		}
	}
	return inv, attn
}

// rope rotates one head vector at position p (rotate_half convention).
func rope(x []float64, p float64, inv []float64, attn float64) []float64 {
	d := len(x)
	out := make([]float64, d)
	for i := range d / 2 {
		ang := p * inv[i]
		c, s := math.Cos(ang)*attn, math.Sin(ang)*attn
		out[i] = x[i]*c - x[i+d/2]*s
		out[i+d/2] = x[i+d/2]*c + x[i]*s
	}
	return out
}

// logits returns the logits [T][V] of input embeddings x [T][H].
func (r reference) logits(x [][]float64) [][]float64 {
	s := r.m.Spec
	hd := s.Hidden / s.Heads
	if s.HeadDim > 0 {
		hd = s.HeadDim
	}
	grp := s.Heads / s.KVHeads
	T := len(x)
	inv, attn := refInvFreq(s, hd, max(T, r.callLen))
	h := make([][]float64, T)
	for t := range x {
		h[t] = append([]float64(nil), x[t]...)
	}
	for l := range s.Layers {
		p := "model.layers." + itoa(l) + "."
		qs, ks, vs := make([][]float64, T), make([][]float64, T), make([][]float64, T)
		for t := range T {
			n := rmsnorm(h[t], r.w(p+"input_layernorm.weight"), r.eps)
			qs[t] = matvec(r.w(p+"self_attn.q_proj.weight"), r.w(p+"self_attn.q_proj.bias"), n)
			ks[t] = matvec(r.w(p+"self_attn.k_proj.weight"), r.w(p+"self_attn.k_proj.bias"), n)
			vs[t] = matvec(r.w(p+"self_attn.v_proj.weight"), r.w(p+"self_attn.v_proj.bias"), n)
			for hh := range s.Heads {
				q := qs[t][hh*hd : (hh+1)*hd]
				if qn := r.w(p + "self_attn.q_norm.weight"); qn != nil {
					q = rmsnorm(q, qn, r.eps)
				}
				copy(qs[t][hh*hd:], rope(q, float64(t), inv, attn))
			}
			for hh := range s.KVHeads {
				k := ks[t][hh*hd : (hh+1)*hd]
				if kn := r.w(p + "self_attn.k_norm.weight"); kn != nil {
					k = rmsnorm(k, kn, r.eps)
				}
				copy(ks[t][hh*hd:], rope(k, float64(t), inv, attn))
			}
		}
		for t := range T {
			att := make([]float64, s.Heads*hd)
			first := 0
			if s.SlidingWindow > 0 {
				first = max(0, t-s.SlidingWindow+1)
			}
			for hh := range s.Heads {
				kv := hh / grp
				sc := make([]float64, t+1)
				mx := math.Inf(-1)
				for u := first; u <= t; u++ {
					d := 0.0
					for i := range hd {
						d += qs[t][hh*hd+i] * ks[u][kv*hd+i]
					}
					sc[u] = d / math.Sqrt(float64(hd))
					mx = math.Max(mx, sc[u])
				}
				z := 0.0
				for u := first; u <= t; u++ {
					sc[u] = math.Exp(sc[u] - mx)
					z += sc[u]
				}
				for u := first; u <= t; u++ {
					for i := range hd {
						att[hh*hd+i] += sc[u] / z * vs[u][kv*hd+i]
					}
				}
			}
			o := matvec(r.w(p+"self_attn.o_proj.weight"), r.w(p+"self_attn.o_proj.bias"), att)
			for i := range o {
				h[t][i] += o[i]
			}
			n := rmsnorm(h[t], r.w(p+"post_attention_layernorm.weight"), r.eps)
			g := matvec(r.w(p+"mlp.gate_proj.weight"), r.w(p+"mlp.gate_proj.bias"), n)
			u := matvec(r.w(p+"mlp.up_proj.weight"), r.w(p+"mlp.up_proj.bias"), n)
			for i := range g {
				g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
			}
			d := matvec(r.w(p+"mlp.down_proj.weight"), r.w(p+"mlp.down_proj.bias"), g)
			for i := range d {
				h[t][i] += d[i]
			}
		}
	}
	head := r.w("lm_head.weight")
	if head == nil {
		head = r.w("model.embed_tokens.weight")
	}
	out := make([][]float64, T)
	for t := range T {
		out[t] = matvec(head, nil, rmsnorm(h[t], r.w("model.norm.weight"), r.eps))
	}
	return out
}

func (r reference) embed(ids []int32) [][]float64 {
	e := r.w("model.embed_tokens.weight")
	H := r.m.Spec.Hidden
	out := make([][]float64, len(ids))
	for i, id := range ids {
		out[i] = e[int(id)*H : (int(id)+1)*H]
	}
	return out
}

// greedy decodes by recomputing the full reference forward for every new token.
func (r reference) greedy(x [][]float64, maxNew int, eos int32) []int32 {
	return r.decode(x, nil, maxNew, eos, 1)
}

// greedyPenalized is greedy with transformers' repetition penalty over the prompt
// ids and the tokens generated so far.
func (r reference) greedyPenalized(prompt []int32, maxNew int, eos int32, penalty float64) []int32 {
	return r.decode(r.embed(prompt), prompt, maxNew, eos, penalty)
}

// decode decodes greedily from the embeddings x by recomputing the whole forward for
// each token, in float64; a penalty ≠ 1 divides the positive logits (multiplies the
// negative ones) of the prompt's ids and of the tokens generated so far.
func (r reference) decode(x [][]float64, prompt []int32, maxNew int, eos int32, penalty float64) []int32 {
	out := []int32{}
	for range maxNew {
		lg := r.logits(x)
		last := append([]float64(nil), lg[len(lg)-1]...)
		if penalty != 1 {
			seen := map[int32]bool{}
			for _, id := range append(append([]int32{}, prompt...), out...) {
				if !seen[id] {
					seen[id] = true
					if last[id] < 0 {
						last[id] *= penalty
					} else {
						last[id] /= penalty
					}
				}
			}
		}
		best := 0
		for i, v := range last {
			if v > last[best] {
				best = i
			}
		}
		if int32(best) == eos {
			break
		}
		out = append(out, int32(best))
		x = append(x, r.embed([]int32{int32(best)})[0])
	}
	return out
}

func itoa(i int) string { return string(rune('0' + i)) }

func toF64(x [][]float32) [][]float64 {
	out := make([][]float64, len(x))
	for i, r := range x {
		out[i] = make([]float64, len(r))
		for j, v := range r {
			out[i][j] = float64(v)
		}
	}
	return out
}

type variant struct {
	name string
	spec lmtest.Spec
}

// variants are one tiny model per family × RoPE type (lmtest.Families), plus a
// float32 untied Llama.
func variants() []variant {
	vs := []variant{{"llama f32 untied", lmtest.Spec{Seed: 1}}}
	for i, f := range lmtest.Families() {
		f.Spec.Seed = uint64(10 + i)
		vs = append(vs, variant{f.Name, f.Spec})
	}
	return vs
}

func loadVariant(t *testing.T, spec lmtest.Spec) (*lm.Model, *lmtest.Model) {
	t.Helper()
	dir := t.TempDir()
	ref, err := lmtest.Write(dir, spec)
	require.NoError(t, err)
	m, err := lm.Load(dir, model.NewStore(), lm.Options{})
	require.NoError(t, err)
	return m, ref
}

// TestLogitsMatchReference compares the GoMLX logits of a right-padded batch (token
// ids, and embeddings with a soft-prompt vector spliced in) with the float64 reference.
func TestLogitsMatchReference(t *testing.T) {
	eng := enginetest.New(t)
	for _, v := range variants() {
		t.Run(v.name, func(t *testing.T) {
			m, refModel := loadVariant(t, v.spec)
			ref := reference{m: refModel, eps: 1e-5}
			rng := rand.New(rand.NewPCG(7, uint64(v.spec.Seed)))
			long := make([]int32, 30) // past llama-dynamic's 24 positions: its base grows for this call
			for i := range long {
				long[i] = int32(i*37%260 + 1)
			}
			ids := [][]int32{{267, 116, 257, 264, 32, 115, 261, 5, 200, 17, 99}, {267, 40, 41}, {3}, long}
			got, err := m.ForwardIDs(eng, ids)
			require.NoError(t, err)
			maxDiff, scale := 0.0, 1.0
			ref.callLen = len(long)
			for i, seq := range ids {
				want := ref.logits(ref.embed(seq))
				require.Len(t, got[i], len(seq))
				for p := range seq {
					for k := range want[p] {
						maxDiff = math.Max(maxDiff, math.Abs(float64(got[i][p][k])-want[p][k]))
						scale = math.Max(scale, math.Abs(want[p][k]))
					}
				}
			}
			assert.Less(t, maxDiff/scale, 1e-5, "max |logit − reference| / max(1, max |logit|)")
			t.Logf("max diff %g, max |logit| %g", maxDiff, scale)

			soft := make([]float32, refModel.Spec.Hidden)
			for i := range soft {
				soft[i] = float32(rng.NormFloat64())
			}
			seq, err := m.Splice(lm.Piece{IDs: []int32{267, 116}}, lm.Piece{Embeds: [][]float32{soft}}, lm.Piece{IDs: []int32{257, 264, 32}})
			require.NoError(t, err)
			require.Len(t, seq, 6)
			got2, err := m.ForwardEmbeds(eng, [][][]float32{seq, seq[:2]})
			require.NoError(t, err)
			ref.callLen = 0
			want := ref.logits(toF64(seq))
			maxDiff = 0
			for p := range want {
				for k := range want[p] {
					maxDiff = math.Max(maxDiff, math.Abs(float64(got2[0][p][k])-want[p][k]))
				}
			}
			assert.Less(t, maxDiff/scale, 1e-5, "spliced soft prompt: max |logit − reference| (relative)")
			assert.InDeltaSlice(t, got2[0][1], got2[1][1], 1e-5, "causal: a prefix gives the same logits")
		})
	}
}

// TestGenerateMatchesRecomputation checks KV-cache greedy generation against greedy
// decoding that recomputes the whole reference forward for each token, for prompts of
// different lengths in one batch and for a prompt with a spliced embedding.
func TestGenerateMatchesRecomputation(t *testing.T) {
	eng := enginetest.New(t)
	for _, v := range variants() {
		t.Run(v.name, func(t *testing.T) {
			m, refModel := loadVariant(t, v.spec)
			ref := reference{m: refModel, eps: 1e-5}
			prompts := [][]int32{{267, 116, 257, 264, 32, 115, 261}, {267, 40}, {267, 9, 8, 7, 6, 5, 4, 3, 2, 1}}
			const maxNew = 7
			got, err := m.GenerateIDs(eng, prompts, lm.GenerateOptions{MaxNewTokens: maxNew})
			require.NoError(t, err)
			for i, p := range prompts {
				want := ref.greedy(ref.embed(p), maxNew, lmtest.EndOfText)
				assert.Equal(t, want, got[i], "prompt %d", i)
				assert.LessOrEqual(t, len(got[i]), maxNew)
			}
			// An EOS met mid-way stops its row only; the others go on.
			row := 0
			for i := range got {
				if len(got[i]) > len(got[row]) {
					row = i
				}
			}
			require.GreaterOrEqual(t, len(got[row]), 3, "some row generates three tokens")
			stop := got[row][2]
			cut, err := m.GenerateIDs(eng, prompts, lm.GenerateOptions{MaxNewTokens: maxNew, EOS: []int32{stop, lmtest.EndOfText}})
			require.NoError(t, err)
			for i := range prompts {
				want := got[i]
				for j, id := range want {
					if id == stop {
						want = want[:j]
						break
					}
				}
				assert.Equal(t, want, cut[i], "prompt %d, EOS %d", i, stop)
			}
			// A soft prompt spliced after the first token.
			soft := make([]float32, refModel.Spec.Hidden)
			for i := range soft {
				soft[i] = float32(math.Sin(float64(i)))
			}
			seq, err := m.Splice(lm.Piece{IDs: []int32{267}}, lm.Piece{Embeds: [][]float32{soft}}, lm.Piece{IDs: []int32{116, 257}})
			require.NoError(t, err)
			gotSoft, err := m.Generate(eng, [][][]float32{seq}, lm.GenerateOptions{MaxNewTokens: maxNew, EOS: []int32{}})
			require.NoError(t, err)
			assert.Equal(t, ref.greedy(toF64(seq), maxNew, -1), gotSoft[0])
			assert.Len(t, gotSoft[0], maxNew, "no EOS: exactly MaxNewTokens tokens")
		})
	}
}

// TestGenerateRepetitionPenalty checks greedy generation with a repetition penalty
// against the float64 reference that penalises the prompt's and the generated tokens
// at every step; a strong penalty changes what the tiny model generates.
func TestGenerateRepetitionPenalty(t *testing.T) {
	eng := enginetest.New(t)
	v := variants()[0]
	m, refModel := loadVariant(t, v.spec)
	ref := reference{m: refModel, eps: 1e-5}
	prompts := [][]int32{{267, 116, 257, 264, 32, 115, 261}, {267, 40}}
	const maxNew = 8
	plain, err := m.GenerateIDs(eng, prompts, lm.GenerateOptions{MaxNewTokens: maxNew, EOS: []int32{}})
	require.NoError(t, err)
	differs := false
	for _, penalty := range []float64{1.3, 8} {
		got, err := m.GenerateIDs(eng, prompts, lm.GenerateOptions{MaxNewTokens: maxNew, EOS: []int32{}, RepetitionPenalty: penalty})
		require.NoError(t, err)
		for i, p := range prompts {
			assert.Equal(t, ref.greedyPenalized(p, maxNew, -1, penalty), got[i], "penalty %g, prompt %d", penalty, i)
			differs = differs || !slices.Equal(got[i], plain[i])
		}
	}
	assert.True(t, differs, "the penalty changes some generation")
}

// TestGenerateStopsAtEOS makes every token an EOS: nothing is generated.
func TestGenerateStopsAtEOS(t *testing.T) {
	eng := enginetest.New(t)
	m, _ := loadVariant(t, lmtest.Spec{Seed: 5})
	all := make([]int32, m.Config().VocabSize)
	for i := range all {
		all[i] = int32(i)
	}
	got, err := m.GenerateIDs(eng, [][]int32{{267, 5}}, lm.GenerateOptions{MaxNewTokens: 4, EOS: all})
	require.NoError(t, err)
	assert.Empty(t, got[0])
	_, err = m.GenerateIDs(eng, [][]int32{{267, 5}}, lm.GenerateOptions{MaxNewTokens: 0})
	assert.ErrorContains(t, err, "MaxNewTokens")
	_, err = m.GenerateIDs(eng, [][]int32{{}}, lm.GenerateOptions{MaxNewTokens: 2})
	assert.ErrorContains(t, err, "empty")
	_, err = m.GenerateIDs(eng, [][]int32{{267, 5}}, lm.GenerateOptions{MaxNewTokens: 2047})
	assert.ErrorContains(t, err, "2049 positions exceed max_position_embeddings 2048 of this llama model (prompt of 2 tokens + 2047 new)")
}

// TestVariablesFrozen checks that every LM variable is frozen: not trainable, marked
// in the store, hence never updated nor saved again by models.SaveVariables.
func TestVariablesFrozen(t *testing.T) {
	m, ref := loadVariant(t, lmtest.Spec{Seed: 6})
	want := len(ref.Weights)
	assert.Len(t, m.Variables(), want)
	for _, v := range m.Variables() {
		assert.False(t, v.Trainable, v.Path())
		assert.True(t, models.IsFrozen(m.Store(), v), v.Path())
	}
	assert.Equal(t, "/lm/model/layers/1/mlp/down_proj/weight", m.Variables()[len(m.Variables())-3].Path())
}

func TestConfig(t *testing.T) {
	dir := t.TempDir()
	_, err := lmtest.Write(dir, lmtest.Spec{ModelType: "qwen2", RopeLinear: 4})
	require.NoError(t, err)
	cfg, err := lm.ReadConfig(dir)
	require.NoError(t, err)
	assert.Equal(t, lm.Config{ModelType: "qwen2", VocabSize: 268, Hidden: 64, Intermediate: 128, Layers: 2, Heads: 4,
		KVHeads: 2, HeadDim: 16, RMSNormEps: 1e-5, RopeTheta: 10000, Rope: lm.Rope{Type: "linear", Factor: 4}, QKVBias: true,
		BOS: lmtest.ImStart, EOS: []int{lmtest.EndOfText}, MaxPositions: 2048, DType: "float32"}, cfg)
}

func TestLoadErrors(t *testing.T) {
	write := func(t *testing.T, spec lmtest.Spec) string {
		dir := t.TempDir()
		_, err := lmtest.Write(dir, spec)
		require.NoError(t, err)
		return dir
	}
	edit := func(path string, f func([]byte) []byte) {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, f(data), 0o644))
	}
	cases := []struct {
		name  string
		setup func(t *testing.T) string
		want  string
	}{
		{"missing directory", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") },
			"not found: want a local Hugging Face directory with config.json"},
		{"missing config", func(t *testing.T) string { return t.TempDir() }, "config.json not found"},
		{"missing weights", func(t *testing.T) string {
			d := write(t, lmtest.Spec{})
			require.NoError(t, os.Remove(filepath.Join(d, "model.safetensors")))
			return d
		}, "has neither model.safetensors nor model.safetensors.index.json"},
		{"missing tokenizer", func(t *testing.T) string {
			d := write(t, lmtest.Spec{})
			require.NoError(t, os.Remove(filepath.Join(d, "tokenizer.json")))
			return d
		}, "tokenizer.json not found"},
		{"missing shard", func(t *testing.T) string {
			d := write(t, lmtest.Spec{Shards: 2})
			require.NoError(t, os.Remove(filepath.Join(d, "model-00002-of-00002.safetensors")))
			return d
		}, "model-00002-of-00002.safetensors"},
		{"truncated safetensors", func(t *testing.T) string {
			d := write(t, lmtest.Spec{})
			edit(filepath.Join(d, "model.safetensors"), func(b []byte) []byte { return b[:len(b)-10] })
			return d
		}, "not a valid safetensors file"},
		{"header length past the end", func(t *testing.T) string {
			d := write(t, lmtest.Spec{})
			edit(filepath.Join(d, "model.safetensors"), func(b []byte) []byte { b[6] = 0x7f; return b })
			return d
		}, "not a valid safetensors file"},
		{"garbage header", func(t *testing.T) string {
			d := write(t, lmtest.Spec{})
			edit(filepath.Join(d, "model.safetensors"), func(b []byte) []byte { b[8] = '#'; return b })
			return d
		}, "not a valid safetensors file"},
		{"tiny file", func(t *testing.T) string {
			d := write(t, lmtest.Spec{})
			edit(filepath.Join(d, "model.safetensors"), func(b []byte) []byte { return b[:5] })
			return d
		}, "not a valid safetensors file"},
		{"llama3 rope scaling without its band", func(t *testing.T) string {
			d := write(t, lmtest.Spec{})
			edit(filepath.Join(d, "config.json"), func(b []byte) []byte {
				return []byte(`{"model_type":"llama","vocab_size":268,"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,
					"num_attention_heads":4,"num_key_value_heads":2,"rope_scaling":{"rope_type":"llama3","factor":8}}`)
			})
			return d
		}, `rope_scaling.low_freq_factor missing (rope_type "llama3" needs it)`},
		{"longrope", func(t *testing.T) string {
			d := write(t, lmtest.Spec{})
			edit(filepath.Join(d, "config.json"), func(b []byte) []byte {
				return []byte(`{"model_type":"llama","vocab_size":268,"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,
					"num_attention_heads":4,"rope_parameters":{"rope_type":"longrope","rope_theta":10000}}`)
			})
			return d
		}, `rope_parameters rope_type "longrope" not supported`},
		{"quantised", func(t *testing.T) string {
			d := write(t, lmtest.Spec{})
			edit(filepath.Join(d, "config.json"), func(b []byte) []byte {
				return []byte(`{"model_type":"qwen2","vocab_size":268,"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,
					"num_attention_heads":4,"quantization_config":{"quant_method":"awq","bits":4}}`)
			})
			return d
		}, `quantization_config (quant_method "awq") present`},
		{"unknown rope field", func(t *testing.T) string {
			d := write(t, lmtest.Spec{})
			edit(filepath.Join(d, "config.json"), func(b []byte) []byte {
				return []byte(`{"model_type":"llama","vocab_size":268,"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,
					"num_attention_heads":4,"rope_scaling":{"rope_type":"linear","factor":2,"short_factor":[1]}}`)
			})
			return d
		}, `rope_scaling has fields [short_factor] that graphloom does not implement`},
		{"qwen3 without q_norm", func(t *testing.T) string {
			d := t.TempDir()
			m, err := lmtest.Write(d, lmtest.Spec{ModelType: "qwen3"})
			require.NoError(t, err)
			delete(m.Weights, "model.layers.0.self_attn.q_norm.weight")
			require.NoError(t, lmtest.WriteWeights(filepath.Join(d, "model.safetensors"), m.Weights))
			return d
		}, `tensor model.layers.0.self_attn.q_norm.weight missing`},
		{"unknown architecture", func(t *testing.T) string {
			d := write(t, lmtest.Spec{})
			edit(filepath.Join(d, "config.json"), func(b []byte) []byte { return []byte(`{"model_type":"gpt2"}`) })
			return d
		}, `model_type "gpt2" (architectures []) not supported (want one of llama, mistral, qwen2, qwen3)`},
		{"shape mismatch", func(t *testing.T) string {
			d := write(t, lmtest.Spec{})
			edit(filepath.Join(d, "config.json"), func(b []byte) []byte {
				return []byte(`{"model_type":"llama","vocab_size":268,"hidden_size":64,"intermediate_size":96,"num_hidden_layers":2,
					"num_attention_heads":4,"num_key_value_heads":2}`)
			})
			return d
		}, "model.layers.0.mlp.gate_proj.weight has shape [128 64], config.json implies [96 64]"},
		{"missing tensor", func(t *testing.T) string {
			d := write(t, lmtest.Spec{Tied: true})
			edit(filepath.Join(d, "config.json"), func(b []byte) []byte {
				return []byte(`{"model_type":"llama","vocab_size":268,"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,
					"num_attention_heads":4,"num_key_value_heads":2,"tie_word_embeddings":false}`)
			})
			return d
		}, "tensor lm_head.weight missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := lm.Load(c.setup(t), model.NewStore(), lm.Options{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// TestLeftPadding runs Logits on a left-padded row (G-Retriever pads on the left):
// the real positions get the logits of the unpadded sequence.
func TestLeftPadding(t *testing.T) {
	eng := enginetest.New(t)
	m, _ := loadVariant(t, lmtest.Spec{Seed: 9})
	ids := []int32{267, 116, 257, 264}
	want, err := m.ForwardIDs(eng, [][]int32{ids})
	require.NoError(t, err)
	const pad = 4
	emb, err := m.EmbedIDs(append(make([]int32, pad), ids...))
	require.NoError(t, err)
	h := m.Config().Hidden
	flat := make([]float32, 0, len(emb)*h)
	mask := make([]int32, len(emb))
	for i, e := range emb {
		flat = append(flat, e...)
		if i >= pad {
			mask[i] = 1
		}
	}
	x, err := eng.Exec(engine.Key{Name: "left", Bucket: "1x8"}, m.Store(), func(_ *model.Scope, in []*graph.Node) []*graph.Node {
		return []*graph.Node{m.Logits(in[0], in[1])}
	})
	require.NoError(t, err)
	outs, err := x.Call(tensors.FromFlatDataAndDimensions(flat, 1, len(emb), h), tensors.FromFlatDataAndDimensions(mask, 1, len(emb)))
	require.NoError(t, err)
	got := tensors.MustCopyFlatData[float32](outs[0])
	v := m.Config().VocabSize
	for p := range ids {
		assert.InDeltaSlice(t, want[0][p], got[(pad+p)*v:(pad+p+1)*v], 1e-5, "position %d", p)
	}
	// A second model in the same scope of the same store is an error, not a panic.
	_, err = lm.New(m.Store(), m.Config(), lm.Weights{"model.embed_tokens.weight": {Shape: []int{v, h}, Data: make([]float32, v*h)}}, lm.Options{})
	assert.Error(t, err)
}

// TestBareDecoder: a decoder saved as its base model (Qwen3-Embedding's layout:
// tensors without "model.", no lm_head.weight) loads; tied, its logits match the
// reference; untied, it has no head and refuses logits and generation with an error
// that says why.
func TestBareDecoder(t *testing.T) {
	eng := enginetest.New(t)
	ids := [][]int32{{267, 116, 257, 264, 32, 115}, {3, 40}}
	tied, refModel := loadVariant(t, lmtest.Spec{ModelType: "qwen3", Seed: 5, Tied: true, Bare: true})
	require.True(t, tied.HasHead())
	got, err := tied.ForwardIDs(eng, ids)
	require.NoError(t, err)
	ref := reference{m: refModel, eps: 1e-5}
	for i, seq := range ids {
		want := ref.logits(ref.embed(seq))
		for p := range seq {
			for k := range want[p] {
				assert.InDelta(t, want[p][k], float64(got[i][p][k]), 1e-4)
			}
		}
	}

	untied, _ := loadVariant(t, lmtest.Spec{ModelType: "qwen3", Seed: 5, Bare: true})
	assert.False(t, untied.HasHead())
	_, err = untied.ForwardIDs(eng, ids)
	assert.ErrorContains(t, err, "no lm_head.weight")
	_, err = untied.GenerateIDs(eng, ids, lm.GenerateOptions{MaxNewTokens: 2})
	assert.ErrorContains(t, err, "cannot generate")
}

// TestContext: linear and YaRN scaling stretch the context they were fitted on by
// their factor (Qwen's YaRN recipe keeps max_position_embeddings), dynamic RoPE and a
// config without max_position_embeddings have no bound.
func TestContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  lm.Config
		want int
	}{
		{"plain", lm.Config{MaxPositions: 40960}, 40960},
		{"no max_position_embeddings", lm.Config{}, 0},
		{"dynamic", lm.Config{MaxPositions: 4096, Rope: lm.Rope{Type: "dynamic", Factor: 2}}, 0},
		{"Qwen's YaRN recipe", lm.Config{MaxPositions: 32768, Rope: lm.Rope{Type: "yarn", Factor: 4, OriginalMax: 32768}}, 131072},
		{"YaRN whose max_position_embeddings is already the stretched one", lm.Config{MaxPositions: 163840, Rope: lm.Rope{Type: "yarn", Factor: 40, OriginalMax: 4096}}, 163840},
		{"YaRN without original_max_position_embeddings", lm.Config{MaxPositions: 4096, Rope: lm.Rope{Type: "yarn", Factor: 2}}, 8192},
		{"linear", lm.Config{MaxPositions: 4096, Rope: lm.Rope{Type: "linear", Factor: 4}}, 16384},
		{"Llama 3.1 (llama3 scaling; max_position_embeddings is the long context)", lm.Config{MaxPositions: 131072, Rope: lm.Rope{Type: "llama3", Factor: 8, OriginalMax: 8192}}, 131072},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.cfg.Context())
			if tc.want > 0 {
				assert.NoError(t, tc.cfg.CheckLength(tc.want))
				assert.ErrorContains(t, tc.cfg.CheckLength(tc.want+1), fmt.Sprintf("%d positions exceed", tc.want+1))
			} else {
				assert.NoError(t, tc.cfg.CheckLength(1<<20))
			}
		})
	}
}
