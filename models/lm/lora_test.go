package lm_test

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/models/lm"
	"github.com/graphloom/graphloom/models/lm/lmtest"
)

// TestLoRAEqualsMergedWeights checks the adapters against PEFT's merge: a model with
// LoRA on q_proj and v_proj (random A and B) gives the logits of the base model whose
// q/v weights are W + (α/r)·B·A, computed here in float64 and written as a plain
// checkpoint. Fresh adapters (B = 0) change nothing, and adapters saved in PEFT's
// layout load back to the same logits.
func TestLoRAEqualsMergedWeights(t *testing.T) {
	dir := t.TempDir()
	spec := lmtest.Spec{ModelType: "qwen2", Seed: 8}
	tiny, err := lmtest.Write(dir, spec)
	require.NoError(t, err)
	eng, err := engine.New(engine.Config{})
	require.NoError(t, err)
	defer eng.Close()
	ids := [][]int32{{5, 116, 257, 264, 32, 258, 40}, {267, 99, 261}}
	logits := func(m *lm.Model) [][][]float32 {
		out, err := m.ForwardIDs(eng, ids)
		require.NoError(t, err)
		return out
	}
	base, err := lm.Load(dir, model.NewStore(), lm.Options{})
	require.NoError(t, err)
	want0 := logits(base)

	m, err := lm.Load(dir, model.NewStore(), lm.Options{})
	require.NoError(t, err)
	cfg := lm.DefaultLoRA(4)
	require.NoError(t, m.AddLoRA(cfg, 3))
	assert.Len(t, m.LoRAVariables(), 2*2*2, "A and B for q_proj and v_proj of each of the 2 layers")
	assertClose(t, want0, logits(m), 1e-6, "fresh adapters (B = 0) leave the model unchanged")

	// Random B (A is already random), then the merged checkpoint.
	rng := rand.New(rand.NewPCG(1, 9))
	scale := cfg.Alpha / float64(cfg.R)
	merged := map[string]lmtest.Tensor{}
	for name, w := range tiny.Weights {
		merged[name] = lmtest.Tensor{Shape: w.Shape, Data: append([]float32(nil), w.Data...)}
	}
	vars := m.LoRAVariables()
	for i := 0; i < len(vars); i += 2 {
		a, b := vars[i], vars[i+1]
		bd := b.Shape().Dimensions
		bv := make([]float32, bd[0]*bd[1])
		for j := range bv {
			bv[j] = float32(rng.NormFloat64() * 0.2)
		}
		require.NoError(t, b.SetValue(tensors.FromFlatDataAndDimensions(bv, bd...)))
		av := tensors.MustCopyFlatData[float32](a.MustValue())
		r, in := a.Shape().Dimensions[0], a.Shape().Dimensions[1]
		layer, module := i/(2*len(cfg.Targets)), cfg.Targets[(i/2)%len(cfg.Targets)]
		name := "model.layers." + strconv.Itoa(layer) + ".self_attn." + module + ".weight"
		w := merged[name]
		require.Equal(t, []int{bd[0], in}, w.Shape, name)
		for o := range bd[0] {
			for c := range in {
				delta := 0.0
				for k := range r {
					delta += float64(bv[o*r+k]) * float64(av[k*in+c])
				}
				w.Data[o*in+c] = float32(float64(w.Data[o*in+c]) + scale*delta)
			}
		}
	}
	mdir := t.TempDir()
	_, err = lmtest.Write(mdir, spec)
	require.NoError(t, err)
	require.NoError(t, lmtest.WriteWeights(filepath.Join(mdir, "model.safetensors"), merged))
	mergedModel, err := lm.Load(mdir, model.NewStore(), lm.Options{})
	require.NoError(t, err)
	want := logits(mergedModel)
	got := logits(m)
	assertClose(t, want, got, 1e-4, "LoRA = merged weights")

	// PEFT layout: adapter_config.json + adapter_model.safetensors with PEFT's keys.
	adir := filepath.Join(t.TempDir(), "adapter")
	require.NoError(t, m.SaveLoRA(adir))
	var pc map[string]any
	data, err := os.ReadFile(filepath.Join(adir, "adapter_config.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &pc))
	assert.Equal(t, "LORA", pc["peft_type"])
	assert.EqualValues(t, 4, pc["r"])
	assert.EqualValues(t, 16, pc["lora_alpha"])
	assert.Equal(t, []any{"q_proj", "v_proj"}, pc["target_modules"])
	ws, err := lm.ReadSafetensors(filepath.Join(adir, "adapter_model.safetensors"))
	require.NoError(t, err)
	require.Len(t, ws, len(vars))
	a0, ok := ws["base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"]
	require.True(t, ok, "PEFT key names")
	assert.Equal(t, []int{4, 64}, a0.Shape)
	fresh, err := lm.Load(dir, model.NewStore(), lm.Options{})
	require.NoError(t, err)
	require.NoError(t, fresh.LoadLoRA(adir))
	assertClose(t, got, logits(fresh), 1e-6, "adapters reloaded from PEFT's layout")

	// Bad adapters are clear errors.
	require.NoError(t, os.WriteFile(filepath.Join(adir, "adapter_config.json"), []byte(`{"peft_type":"PREFIX_TUNING"}`), 0o644))
	other, err := lm.Load(dir, model.NewStore(), lm.Options{})
	require.NoError(t, err)
	require.ErrorContains(t, other.LoadLoRA(adir), `peft_type "PREFIX_TUNING"`)
	require.ErrorContains(t, lm.DefaultLoRA(0).Validate(), "rank 0")
	require.ErrorContains(t, lm.LoRAConfig{R: 2, Alpha: 4, Targets: []string{"gate_proj"}}.Validate(), `target module "gate_proj"`)
}

func assertClose(t *testing.T, want, got [][][]float32, tol float64, msg string) {
	t.Helper()
	require.Equal(t, len(want), len(got))
	worst := 0.0
	for b := range want {
		require.Equal(t, len(want[b]), len(got[b]))
		for i := range want[b] {
			for j := range want[b][i] {
				worst = max(worst, abs(float64(want[b][i][j])-float64(got[b][i][j])))
			}
		}
	}
	assert.LessOrEqual(t, worst, tol, "%s: largest difference %g", msg, worst)
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
