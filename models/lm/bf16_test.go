package lm_test

import (
	"math"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/engine/enginetest"
	"github.com/graphloom/graphloom/models/lm"
	"github.com/graphloom/graphloom/models/lm/lmtest"
)

// TestBFloat16Compute loads every family with Options.DType bf16: the weights are held
// in bf16 (half the float32 bytes), the logits stay within bf16's precision of the
// float64 reference on the same (bf16-rounded) weights, while differing from the
// float32 path by more than float32 rounding (the layers really run in bf16), and
// greedy cached generation follows the bf16 model's own full forward passes.
func TestBFloat16Compute(t *testing.T) {
	eng := enginetest.New(t)
	for _, v := range variants() {
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			refModel, err := lmtest.Write(dir, v.spec)
			require.NoError(t, err)
			m, err := lm.Load(dir, model.NewStore(), lm.Options{DType: dtypes.BFloat16})
			require.NoError(t, err)
			f32, err := lm.Load(dir, model.NewStore(), lm.Options{})
			require.NoError(t, err)
			require.Equal(t, dtypes.BFloat16, m.DType())
			var bytes, params int
			for _, w := range m.Variables() {
				val, err := w.Value()
				require.NoError(t, err)
				require.Equal(t, dtypes.BFloat16, val.DType(), w.Path())
				bytes += int(val.Memory())
				params += val.Shape().Size()
			}
			assert.Equal(t, 2*params, bytes, "bf16 weights: 2 bytes a parameter")

			ref := reference{m: refModel, eps: 1e-5}
			ids := [][]int32{{267, 116, 257, 264, 32, 115, 261, 5, 200, 17, 99}, {267, 40, 41}, {3}}
			got, err := m.ForwardIDs(eng, ids)
			require.NoError(t, err)
			full, err := f32.ForwardIDs(eng, ids)
			require.NoError(t, err)
			var maxDiff, sumDiff, maxF32, scale float64
			n := 0
			for i, seq := range ids {
				want := ref.logits(ref.embed(seq))
				for p := range seq {
					for k := range want[p] {
						d := math.Abs(float64(got[i][p][k]) - want[p][k])
						maxDiff, sumDiff, n = math.Max(maxDiff, d), sumDiff+d, n+1
						maxF32 = math.Max(maxF32, math.Abs(float64(got[i][p][k]-full[i][p][k])))
						scale = math.Max(scale, math.Abs(want[p][k]))
					}
				}
			}
			scale = math.Max(scale, 1)
			t.Logf("bf16 vs float64: max %.3g, mean %.3g, relative max %.3g; bf16 vs float32 max %.3g (max |logit| %.3g)", maxDiff, sumDiff/float64(n), maxDiff/scale, maxF32, scale)
			// bf16 keeps 8 significant bits (unit roundoff 2⁻⁹ ≈ 0.002); two layers and the
			// head round a few dozen times along any path.
			assert.Less(t, maxDiff/scale, 0.05, "bf16 logits against the float64 reference (relative to max |logit|)")
			assert.Less(t, sumDiff/float64(n)/scale, 0.01, "mean |bf16 logit − reference| (relative)")
			assert.Greater(t, maxF32/scale, 1e-4, "bf16 logits differ from float32's beyond float32 rounding")

			// Greedy cached generation against the bf16 model's own full forward per token.
			prompt := []int32{267, 116, 257, 264, 32}
			const maxNew = 5
			gen, err := m.GenerateIDs(eng, [][]int32{prompt}, lm.GenerateOptions{MaxNewTokens: maxNew, EOS: []int32{}})
			require.NoError(t, err)
			seq := append([]int32(nil), prompt...)
			var want []int32
			for range maxNew {
				lg, err := m.ForwardIDs(eng, [][]int32{seq})
				require.NoError(t, err)
				last := lg[0][len(seq)-1]
				best := 0
				for k, x := range last {
					if x > last[best] {
						best = k
					}
				}
				want = append(want, int32(best))
				seq = append(seq, int32(best))
			}
			assert.Equal(t, want, gen[0], "cached bf16 generation = bf16 recomputation")

			// float32 LoRA adapters over the bf16 layers: B starts at zero, so the logits
			// stay those of the model without adapters.
			require.NoError(t, m.AddLoRA(lm.DefaultLoRA(2), 1))
			withLoRA, err := m.ForwardIDs(eng, ids[:1])
			require.NoError(t, err)
			assert.Equal(t, got[0], withLoRA[0], "zero-initialised adapters leave the bf16 logits")
		})
	}
}

// TestBFloat16WeightsFloat32Compute holds the weights in bf16 and computes in float32
// (what --lm-dtype bfloat16 does on the pure-Go backend): the weights take 2 bytes a
// parameter, and where the checkpoint is bf16 (every family but the float32 Llama)
// the logits equal the float64 reference as closely as the float32 model's.
func TestBFloat16WeightsFloat32Compute(t *testing.T) {
	eng := enginetest.New(t)
	for _, v := range variants() {
		if !v.spec.BF16 {
			continue
		}
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			refModel, err := lmtest.Write(dir, v.spec)
			require.NoError(t, err)
			m, err := lm.Load(dir, model.NewStore(), lm.Options{DType: dtypes.BFloat16, ComputeDType: dtypes.Float32})
			require.NoError(t, err)
			assert.Equal(t, dtypes.Float32, m.DType())
			assert.Equal(t, dtypes.BFloat16, m.WeightDType())
			var bytes, params int
			for _, w := range m.Variables() {
				val, err := w.Value()
				require.NoError(t, err)
				bytes += int(val.Memory())
				params += val.Shape().Size()
			}
			assert.Equal(t, 2*params, bytes, "bf16 weights: 2 bytes a parameter")
			ref := reference{m: refModel, eps: 1e-5}
			ids := [][]int32{{267, 116, 257, 264, 32, 115, 261, 5, 200, 17, 99}, {267, 40, 41}}
			got, err := m.ForwardIDs(eng, ids)
			require.NoError(t, err)
			maxDiff, scale := 0.0, 1.0
			for i, seq := range ids {
				want := ref.logits(ref.embed(seq))
				for p := range seq {
					for k := range want[p] {
						maxDiff = math.Max(maxDiff, math.Abs(float64(got[i][p][k])-want[p][k]))
						scale = math.Max(scale, math.Abs(want[p][k]))
					}
				}
			}
			assert.Less(t, maxDiff/scale, 1e-5, "bf16 weights widened to float32: logits as the float64 reference")
			gen, err := m.GenerateIDs(eng, [][]int32{{267, 116, 257}}, lm.GenerateOptions{MaxNewTokens: 4, EOS: []int32{}})
			require.NoError(t, err)
			assert.Equal(t, ref.greedy(ref.embed([]int32{267, 116, 257}), 4, -1), gen[0], "cached generation = float64 greedy")
		})
	}
}
