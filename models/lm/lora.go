package lm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kernels"
)

// LoRAConfig is the part of PEFT's LoraConfig that G-Retriever's LoRA variant sets
// (src/model/graph_llm.py: r 8, lora_alpha 16, lora_dropout 0.05, target_modules
// q_proj and v_proj, bias "none").
type LoRAConfig struct {
	R       int      `json:"r"`
	Alpha   float64  `json:"lora_alpha"`
	Dropout float64  `json:"lora_dropout"`
	Targets []string `json:"target_modules"` // of q_proj, k_proj, v_proj, o_proj
}

// DefaultLoRA returns G-Retriever's adapter settings at rank r.
func DefaultLoRA(r int) LoRAConfig {
	return LoRAConfig{R: r, Alpha: 16, Dropout: 0.05, Targets: []string{"q_proj", "v_proj"}}
}

// loraTargets are the projections adapters can wrap.
var loraTargets = []string{"q_proj", "k_proj", "v_proj", "o_proj"}

// Validate checks the configuration.
func (c LoRAConfig) Validate() error {
	switch {
	case c.R < 1:
		return fmt.Errorf("lm: LoRA rank %d < 1", c.R)
	case !(c.Alpha > 0):
		return fmt.Errorf("lm: LoRA alpha %g must be positive", c.Alpha)
	case c.Dropout < 0 || c.Dropout >= 1:
		return fmt.Errorf("lm: LoRA dropout %g not in [0, 1)", c.Dropout)
	case len(c.Targets) == 0:
		return errors.New("lm: LoRA needs target modules")
	}
	for _, t := range c.Targets {
		if !slices.Contains(loraTargets, t) {
			return fmt.Errorf("lm: LoRA target module %q: want some of %v", t, loraTargets)
		}
	}
	return nil
}

// adapter is one LoRA pair around a projection: A [r, in], B [out, r] (PEFT's
// lora_A.weight and lora_B.weight).
type adapter struct{ a, b *model.Variable }

// lora holds the model's adapters: per layer, per target module.
type lora struct {
	cfg    LoRAConfig
	layers []map[string]adapter
	vars   []*model.Variable
}

// AddLoRA wraps the target projections of every layer with trainable low-rank
// adapters, as PEFT does: W x + (α/r)·B A dropout(x), A initialised
// kaiming-uniform (a = √5: uniform ±1/√in), B zero, so the model is unchanged until
// trained. The adapters' variables (LoRAVariables) are not frozen.
func (m *Model) AddLoRA(cfg LoRAConfig, seed uint64) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if m.lora != nil {
		return errors.New("lm: the model already has LoRA adapters")
	}
	c := m.cfg
	in := map[string]int{"q_proj": c.Hidden, "k_proj": c.Hidden, "v_proj": c.Hidden, "o_proj": c.Heads * c.HeadDim}
	out := map[string]int{"q_proj": c.Heads * c.HeadDim, "k_proj": c.KVHeads * c.HeadDim, "v_proj": c.KVHeads * c.HeadDim, "o_proj": c.Hidden}
	rng := rand.New(rand.NewPCG(seed, 0x1024a))
	root := m.store.RootScope().At("%s-lora", m.scope)
	lr := &lora{cfg: cfg}
	for i := range c.Layers {
		ad := map[string]adapter{}
		for _, t := range cfg.Targets {
			bound := 1 / math.Sqrt(float64(in[t]))
			a := make([]float32, cfg.R*in[t])
			for j := range a {
				a[j] = float32((2*rng.Float64() - 1) * bound)
			}
			s := root.At("layers").At("%d", i).At("%s", t)
			va, err := s.CreateVariable("lora_A", tensors.FromFlatDataAndDimensions(a, cfg.R, in[t]))
			if err != nil {
				return fmt.Errorf("lm: LoRA: %w", err)
			}
			vb, err := s.CreateVariable("lora_B", tensors.FromFlatDataAndDimensions(make([]float32, out[t]*cfg.R), out[t], cfg.R))
			if err != nil {
				return fmt.Errorf("lm: LoRA: %w", err)
			}
			ad[t] = adapter{a: va, b: vb}
			lr.vars = append(lr.vars, va, vb)
		}
		lr.layers = append(lr.layers, ad)
	}
	m.lora = lr
	return nil
}

// LoRA returns the adapters' configuration and whether the model has adapters.
func (m *Model) LoRA() (LoRAConfig, bool) {
	if m.lora == nil {
		return LoRAConfig{}, false
	}
	return m.lora.cfg, true
}

// LoRAVariables returns the adapters' trainable variables (nil without adapters).
func (m *Model) LoRAVariables() []*model.Variable {
	if m.lora == nil {
		return nil
	}
	return m.lora.vars
}

// project is linear(x, w, b) plus the layer's adapter of module t, if any; the
// adapter's dropout applies while the store trains the graph.
func (m *Model) project(layer int, t string, x *graph.Node, w, b *graph.Node) *graph.Node {
	y := linear(x, w, b)
	if m.lora == nil {
		return y
	}
	ad, ok := m.lora.layers[layer][t]
	if !ok {
		return y
	}
	g := x.Graph()
	// The adapters are float32 whatever the model's dtype: as PEFT, the input is cast
	// to the adapter's dtype and the update back to the layer's.
	x = toDType(x, ad.a.DType())
	if m.store.IsTraining(g) {
		x = kernels.Dropout(m.store, x, m.lora.cfg.Dropout)
	}
	low := linear(linear(x, ad.a.NodeValue(g), nil), ad.b.NodeValue(g), nil)
	return graph.Add(y, toDType(graph.MulScalar(low, m.lora.cfg.Alpha/float64(m.lora.cfg.R)), y.DType()))
}

// peftKey is PEFT's tensor name of an adapter weight of a causal LM.
func peftKey(layer int, module, ab string) string {
	proj := "self_attn." + module
	return fmt.Sprintf("base_model.model.model.layers.%d.%s.lora_%s.weight", layer, proj, ab)
}

// SaveLoRA writes the adapters alone in PEFT's layout: dir/adapter_config.json and
// dir/adapter_model.safetensors (float32), loadable by peft.PeftModel.from_pretrained
// over the same base model.
func (m *Model) SaveLoRA(dir string) error {
	if m.lora == nil {
		return errors.New("lm: the model has no LoRA adapters")
	}
	cfg := m.lora.cfg
	pc := map[string]any{
		"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": cfg.R, "lora_alpha": cfg.Alpha,
		"lora_dropout": cfg.Dropout, "target_modules": cfg.Targets, "bias": "none",
		"fan_in_fan_out": false, "inference_mode": true, "base_model_name_or_path": m.dir,
	}
	data, err := json.MarshalIndent(pc, "", "  ")
	if err != nil {
		return err
	}
	ws := Weights{}
	for i, ad := range m.lora.layers {
		for t, p := range ad {
			for ab, v := range map[string]*model.Variable{"A": p.a, "B": p.b} {
				val, err := v.Value()
				if err != nil {
					return fmt.Errorf("lm: LoRA %s: %w", v.Name(), err)
				}
				ws[peftKey(i, t, ab)] = Weight{Shape: slices.Clone(val.Shape().Dimensions), Data: tensors.MustCopyFlatData[float32](val)}
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := graphio.AtomicWrite(filepath.Join(dir, "adapter_config.json"), func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}); err != nil {
		return err
	}
	return graphio.AtomicWrite(filepath.Join(dir, "adapter_model.safetensors"), func(w io.Writer) error {
		return WriteSafetensors(w, ws)
	})
}

// LoadLoRA reads a PEFT LoRA adapter directory (adapter_config.json and
// adapter_model.safetensors, or the older adapter_model.bin is refused) and adds its
// adapters to the model.
func (m *Model) LoadLoRA(dir string) error {
	path := filepath.Join(dir, "adapter_config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("lm: LoRA adapter: %w", err)
	}
	var pc struct {
		PeftType     string   `json:"peft_type"`
		R            int      `json:"r"`
		Alpha        float64  `json:"lora_alpha"`
		Dropout      float64  `json:"lora_dropout"`
		Targets      []string `json:"target_modules"`
		Bias         string   `json:"bias"`
		FanInFanOut  bool     `json:"fan_in_fan_out"`
		UseRSLoRA    bool     `json:"use_rslora"`
		UseDoRA      bool     `json:"use_dora"`
		LayersToForm any      `json:"layers_to_transform"`
	}
	if err := json.Unmarshal(data, &pc); err != nil {
		return fmt.Errorf("lm: %s: %w", path, err)
	}
	switch {
	case pc.PeftType != "LORA":
		return fmt.Errorf("lm: %s: peft_type %q: only LORA adapters are supported", path, pc.PeftType)
	case pc.Bias != "" && pc.Bias != "none":
		return fmt.Errorf("lm: %s: bias %q: only \"none\" is supported", path, pc.Bias)
	case pc.FanInFanOut || pc.UseRSLoRA || pc.UseDoRA || pc.LayersToForm != nil:
		return fmt.Errorf("lm: %s: fan_in_fan_out, use_rslora, use_dora and layers_to_transform are not supported", path)
	}
	cfg := LoRAConfig{R: pc.R, Alpha: pc.Alpha, Dropout: pc.Dropout, Targets: pc.Targets}
	if err := m.AddLoRA(cfg, 0); err != nil {
		return fmt.Errorf("lm: %s: %w", path, err)
	}
	wpath := filepath.Join(dir, "adapter_model.safetensors")
	ws, err := ReadSafetensors(wpath)
	if err != nil {
		return err
	}
	for i, ad := range m.lora.layers {
		for t, p := range ad {
			for ab, v := range map[string]*model.Variable{"A": p.a, "B": p.b} {
				key := peftKey(i, t, ab)
				w, ok := ws[key]
				want := v.Shape().Dimensions
				if !ok {
					return fmt.Errorf("lm: %s: tensor %s missing", wpath, key)
				}
				if !slices.Equal(w.Shape, want) {
					return fmt.Errorf("lm: %s: tensor %s has shape %v, want %v", wpath, key, w.Shape, want)
				}
				if err := v.SetValue(tensors.FromFlatDataAndDimensions(w.Data, want...)); err != nil {
					return fmt.Errorf("lm: %s: %w", wpath, err)
				}
			}
		}
	}
	return nil
}
