package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/models/checkpoint"
)

// StateKind is the checkpoint kind of a trainer's state file (see Trainer.SaveState).
const StateKind = "graphloom/train-state"

// State tensor name prefixes: the optimizer's variables by their store path, and the
// best weights' snapshot by the path of the variable each copies.
const (
	stateOptimizer = "optimizer"
	stateBest      = "best"
)

// stateVariables returns the store variables of the trainer's state, in a fixed
// order: Adam's step counter and the moments of the task's variables (those the
// optimizer has made so far), the global step and the random state (dropout).
func (t *Trainer) stateVariables() []*model.Variable {
	store := t.task.Store()
	var out []*model.Variable
	add := func(p string) {
		if v := store.GetVariable(p); v != nil {
			out = append(out, v)
		}
	}
	adam := "/" + optimizer.AdamDefaultScope
	add(adam + "/step")
	for _, v := range t.trainable() {
		add(path.Join(adam, v.Path()) + "_1st_moment")
		add(path.Join(adam, v.Path()) + "_2nd_moment")
	}
	add("/" + optimizer.GlobalStepVariableName)
	add("/" + model.RNGStateVariableName)
	return out
}

// expectedState returns the store paths a state file may hold for this task, with
// the shape each must have when the task's variables say (moments); nil for the
// counters and the random state, whose shapes the file gives (and GoMLX checks).
func (t *Trainer) expectedState() map[string]*model.Variable {
	adam := "/" + optimizer.AdamDefaultScope
	out := map[string]*model.Variable{adam + "/step": nil, "/" + optimizer.GlobalStepVariableName: nil,
		"/" + model.RNGStateVariableName: nil}
	for _, v := range t.trainable() {
		out[path.Join(adam, v.Path())+"_1st_moment"] = v
		out[path.Join(adam, v.Path())+"_2nd_moment"] = v
	}
	return out
}

// SaveState writes, atomically, what a run resumed from this point needs beyond the
// weights (which the caller saves with the model): the step count, Adam's moments and
// step, the random state, and early stopping's state with the best weights so far.
// Call it from Checkpoint, which is when the loop's state is known; a run resumed with
// LoadState then takes the steps, draws the dropout masks, stops and restores the
// weights the uninterrupted run would have (bit for bit on one backend).
func (t *Trainer) SaveState(path string) error {
	if t.loopState == nil {
		return errors.New("train: save state: no evaluation yet (call it from Checkpoint)")
	}
	if t.loopState.Step != t.step {
		return fmt.Errorf("train: save state: the loop's state is of step %d, the trainer is at step %d", t.loopState.Step, t.step)
	}
	opt, err := checkpoint.FromVariables(t.stateVariables(), "/")
	if err != nil {
		return fmt.Errorf("train: save state: %w", err)
	}
	var ts []checkpoint.Tensor
	for _, x := range opt {
		x.Name = stateOptimizer + "/" + x.Name
		ts = append(ts, x)
	}
	if t.loopState.BestStep > 0 {
		vars := t.trainable()
		if len(t.best) != len(vars) {
			return fmt.Errorf("train: save state: %d best weights for %d variables", len(t.best), len(vars))
		}
		for i, v := range vars {
			x, err := tensorOf(stateBest+v.Path(), t.best[i])
			if err != nil {
				return fmt.Errorf("train: save state: best %s: %w", v.Path(), err)
			}
			ts = append(ts, x)
		}
	}
	loop, err := json.Marshal(t.loopState)
	if err != nil {
		return fmt.Errorf("train: save state: %w", err)
	}
	cfg, err := json.Marshal(t.cfg)
	if err != nil {
		return fmt.Errorf("train: save state: %w", err)
	}
	meta := map[string]string{"task": t.task.Kind(), "step": strconv.Itoa(t.step), "loop": string(loop)}
	return checkpoint.Save(path, &checkpoint.File{Kind: StateKind, Config: cfg, Meta: meta, Tensors: ts})
}

// tensorOf copies t into a checkpoint tensor named name.
func tensorOf(name string, t *tensors.Tensor) (checkpoint.Tensor, error) {
	var data []byte
	if err := t.ConstBytes(func(b []byte) { data = append([]byte(nil), b...) }); err != nil {
		return checkpoint.Tensor{}, err
	}
	return checkpoint.Tensor{Name: name, DType: t.DType(), Dims: append([]int{}, t.Shape().Dimensions...), Data: data}, nil
}

// StateStep returns the step a SaveState file was saved at, and the trainer settings
// it was saved under, from its header alone (LoadState verifies the whole file).
func StateStep(file string) (int, Config, error) {
	var cfg Config
	f, err := checkpoint.ReadHeader(file)
	if err != nil {
		return 0, cfg, fmt.Errorf("train: %w", err)
	}
	if f.Kind != StateKind {
		return 0, cfg, fmt.Errorf("train: state %s: kind %q, want %q", file, f.Kind, StateKind)
	}
	step, err := strconv.Atoi(f.Meta["step"])
	if err != nil {
		return 0, cfg, fmt.Errorf("train: state %s: step %q: %w", file, f.Meta["step"], err)
	}
	if err := json.Unmarshal(f.Config, &cfg); err != nil {
		return 0, cfg, fmt.Errorf("train: state %s: trainer settings: %w", file, err)
	}
	return step, cfg, nil
}

// LoadState continues a run from a SaveState file, after the caller loaded the
// weights saved beside it: the learning-rate schedule, the optimizer, the random state,
// early stopping and the best weights go on from its step, and FitTask runs the
// remaining steps. It returns the step the file was saved at. The file must be of
// this trainer's task and variables; it replaces a Resume.
func (t *Trainer) LoadState(file string) (int, error) {
	f, err := checkpoint.Load(file)
	if err != nil {
		return 0, fmt.Errorf("train: %w", err)
	}
	fail := func(format string, args ...any) (int, error) {
		return 0, fmt.Errorf("train: state %s: "+format, append([]any{file}, args...)...)
	}
	if f.Kind != StateKind {
		return fail("kind %q, want %q", f.Kind, StateKind)
	}
	if f.Meta["task"] != t.task.Kind() {
		return fail("saved by a %q trainer, this one trains %q", f.Meta["task"], t.task.Kind())
	}
	step, err := strconv.Atoi(f.Meta["step"])
	if err != nil {
		return fail("step %q: %v", f.Meta["step"], err)
	}
	if step < 1 || step >= t.cfg.TotalSteps {
		return fail("saved at step %d: want 1 ≤ step < TotalSteps %d", step, t.cfg.TotalSteps)
	}
	var saved Config
	if err := json.Unmarshal(f.Config, &saved); err != nil {
		return fail("trainer settings: %v", err)
	}
	// Adam's moments mean what they mean only under the optimizer that made them.
	if saved.Optimizer != t.cfg.Optimizer || saved.Beta1 != t.cfg.Beta1 || saved.Beta2 != t.cfg.Beta2 || saved.Epsilon != t.cfg.Epsilon || saved.WeightDecay != t.cfg.WeightDecay {
		return fail("saved by %s (β %g, %g, ε %g, weight decay %g); this run uses %s (β %g, %g, ε %g, weight decay %g)",
			saved.Optimizer, saved.Beta1, saved.Beta2, saved.Epsilon, saved.WeightDecay, t.cfg.Optimizer, t.cfg.Beta1, t.cfg.Beta2, t.cfg.Epsilon, t.cfg.WeightDecay)
	}
	var loop LoopState
	if err := json.Unmarshal([]byte(f.Meta["loop"]), &loop); err != nil {
		return fail("loop state: %v", err)
	}
	if loop.Step != step || loop.BestStep < 0 || loop.BestStep > step {
		return fail("loop state of step %d (best %d) in a state of step %d", loop.Step, loop.BestStep, step)
	}
	store := t.task.Store()
	expected := t.expectedState()
	vars := t.trainable()
	byPath := make(map[string]*model.Variable, len(vars))
	for _, v := range vars {
		byPath[v.Path()] = v
	}
	var statePaths []string // checked first, made after: a refused file changes nothing
	var stateShapes []shapes.Shape
	nBest := 0
	for i := range f.Tensors {
		x := &f.Tensors[i]
		shape, err := shapeOf(x)
		if err != nil {
			return fail("tensor %q: %v", x.Name, err)
		}
		switch {
		case strings.HasPrefix(x.Name, stateOptimizer+"/"):
			p := x.Name[len(stateOptimizer):]
			w, ok := expected[p]
			if !ok {
				return fail("tensor %q: not a state variable of this model", x.Name)
			}
			if w != nil && !shape.Equal(w.Shape()) {
				return fail("tensor %q is %s, variable %s is %s", x.Name, shape, w.Path(), w.Shape())
			}
			if v := store.GetVariable(p); v != nil && !shape.Equal(v.Shape()) {
				return fail("tensor %q is %s, variable %s is %s", x.Name, shape, p, v.Shape())
			}
			statePaths = append(statePaths, p)
			stateShapes = append(stateShapes, shape)
		case strings.HasPrefix(x.Name, stateBest+"/"):
			v, ok := byPath[x.Name[len(stateBest):]]
			if !ok {
				return fail("tensor %q: no such variable in this model", x.Name)
			}
			if !shape.Equal(v.Shape()) {
				return fail("tensor %q is %s, variable %s is %s", x.Name, shape, v.Path(), v.Shape())
			}
			nBest++
		default:
			return fail("tensor %q: unknown", x.Name)
		}
	}
	if (loop.BestStep > 0) != (nBest > 0) || (nBest > 0 && nBest != len(vars)) {
		return fail("%d best weights for %d variables (best step %d)", nBest, len(vars), loop.BestStep)
	}
	stateVars := make([]*model.Variable, len(statePaths))
	for i, p := range statePaths {
		if stateVars[i] = store.GetVariable(p); stateVars[i] == nil {
			if stateVars[i], err = store.CreateVariable(p, tensors.FromShape(stateShapes[i])); err != nil {
				return fail("%s: %v", p, err)
			}
			stateVars[i].SetTrainable(false)
		}
	}
	opt := &checkpoint.File{Tensors: make([]checkpoint.Tensor, 0, len(stateVars))}
	for _, x := range f.Tensors {
		if strings.HasPrefix(x.Name, stateOptimizer+"/") {
			x.Name = x.Name[len(stateOptimizer)+1:]
			opt.Tensors = append(opt.Tensors, x)
		}
	}
	if err := opt.Assign(stateVars, "/"); err != nil {
		return fail("%v", err)
	}
	engine.Finalize(t.best...)
	t.best = nil
	if nBest > 0 {
		t.best = bestOf(f, vars)
	}
	t.step, t.from = step, &loop
	return step, nil
}

// bestOf returns the best-weight tensors of f in the order of vars (LoadState checked
// that there is one of each).
func bestOf(f *checkpoint.File, vars []*model.Variable) []*tensors.Tensor {
	byName := make(map[string]*checkpoint.Tensor, len(f.Tensors))
	for i := range f.Tensors {
		byName[f.Tensors[i].Name] = &f.Tensors[i]
	}
	out := make([]*tensors.Tensor, len(vars))
	for i, v := range vars {
		x := byName[stateBest+v.Path()]
		out[i] = tensors.FromShape(v.Shape())
		_ = out[i].MutableBytes(func(b []byte) { copy(b, x.Data) })
	}
	return out
}

// shapeOf returns a checkpoint tensor's shape.
func shapeOf(x *checkpoint.Tensor) (shapes.Shape, error) {
	for _, d := range x.Dims {
		if d < 0 {
			return shapes.Shape{}, fmt.Errorf("negative dimension %v", x.Dims)
		}
	}
	return shapes.Make(x.DType, x.Dims...), nil
}
