// Package train is graphloom's one training stack. A Task is a model plus its loss
// (graph-, node- or edge-level BCE/CE with masks, token cross-entropy with −100 labels,
// pairwise margin and logistic, InfoNCE: see losses.go); a Trainer takes optimizer steps of a Task
// (Adam/AdamW, warm-up + cosine learning rate, global gradient-norm clipping, gradient
// accumulation over micro-batches, frozen parameters, fixed seeds); Loop owns the
// training loop (validation every N steps, early stopping with best-weights restore,
// a JSONL log, progress) for every learned model.
//
// Steps run as compiled GoMLX executables cached per batch shape in an engine.Engine,
// so after every bucket has been seen once nothing recompiles. The optimizer update is
// GoMLX's Adam (ml/train/optimizer).
package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/kernels"
	"github.com/graphloom/graphloom/models"
)

// Model is a graph classifier: one logit per graph slot of a batch.
type Model interface {
	Kind() string                 // names the executables ("<kind>/train", "<kind>/predict")
	Store() *model.Store          // holds the variables
	Variables() []*model.Variable // the weights (snapshotted for best-weights restore)
	Logits(b *kernels.BatchNodes, training bool) *graph.Node
}

// Config holds every knob of a training run. DefaultConfig follows CrossAug's scorer
// training.
type Config struct {
	Optimizer       string  // "adam" or "adamw" (decoupled weight decay)
	LearningRate    float64 // peak learning rate
	MinLearningRate float64 // end of the cosine; = LearningRate for a constant rate
	WarmupSteps     int     // linear warm-up steps
	TotalSteps      int     // steps Fit runs (and the cosine's length)
	WeightDecay     float64 // AdamW only
	Beta1, Beta2    float64 // Adam moment decays
	Epsilon         float64 // Adam denominator epsilon (PyTorch default 1e-8)
	ClipNorm        float64 // clip the global gradient L2 norm to this; 0 = off
	AccumulateSteps int     // micro-batches per optimizer step (gradients averaged); 0 or 1 = none
	EvalEvery       int     // evaluate every this many steps (and after the last)
	Patience        int     // evaluations without improvement before stopping; 0 = never
	MinDelta        float64 // improvement threshold on the eval loss
	Seed            int64   // dropout random state
	// LR, when set, is the learning rate of each step (0-based) in place of the
	// warm-up + cosine Schedule (a recipe whose schedule is not of that form).
	LR func(step int) float64 `json:"-"`
}

// DefaultConfig returns CrossAug's settings: Adam, lr 2e-3 constant, 200 steps,
// evaluation every 10 steps, early stopping after 5 evaluations (50 epochs) without a
// 1e-4 improvement of the eval BCE, seed 42.
func DefaultConfig() Config {
	return Config{Optimizer: "adam", LearningRate: 2e-3, MinLearningRate: 2e-3, TotalSteps: 200,
		Beta1: 0.9, Beta2: 0.999, Epsilon: 1e-8, EvalEvery: 10, Patience: 5, MinDelta: 1e-4, Seed: 42}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case c.Optimizer != "adam" && c.Optimizer != "adamw":
		return fmt.Errorf("train: optimizer %q: want adam or adamw", c.Optimizer)
	case !(c.LearningRate > 0) || c.MinLearningRate < 0 || c.MinLearningRate > c.LearningRate:
		return fmt.Errorf("train: need 0 ≤ MinLearningRate ≤ LearningRate, LearningRate > 0 (got %g, %g)", c.MinLearningRate, c.LearningRate)
	case c.TotalSteps < 1 || c.WarmupSteps < 0 || c.EvalEvery < 1:
		return fmt.Errorf("train: need TotalSteps ≥ 1, WarmupSteps ≥ 0, EvalEvery ≥ 1 (got %d, %d, %d)", c.TotalSteps, c.WarmupSteps, c.EvalEvery)
	case c.Beta1 < 0 || c.Beta1 >= 1 || c.Beta2 < 0 || c.Beta2 >= 1 || !(c.Epsilon > 0):
		return errors.New("train: Adam needs 0 ≤ β < 1 and ε > 0")
	case c.WeightDecay < 0 || (c.WeightDecay > 0 && c.Optimizer != "adamw"):
		return errors.New("train: WeightDecay needs optimizer adamw and must be ≥ 0")
	case c.ClipNorm < 0 || c.Patience < 0 || c.MinDelta < 0 || c.AccumulateSteps < 0:
		return errors.New("train: ClipNorm, Patience, MinDelta and AccumulateSteps must be ≥ 0")
	}
	return nil
}

// Schedule returns the learning-rate schedule of the configuration.
func (c Config) Schedule() Schedule {
	return Schedule{Base: c.LearningRate, Min: c.MinLearningRate, Warmup: c.WarmupSteps, Total: c.TotalSteps}
}

// Batch is one mini-batch of a Task: its input tensors (which the trainer consumes,
// unless the batch is a Kept) and a key naming their shapes (one compiled executable per key).
type Batch interface {
	Inputs() ([]*tensors.Tensor, error)
	ShapeKey() string
}

// Kept is a batch whose input tensors are made once and kept across steps, for
// full-batch training, where every step trains on the same batch: the trainer neither
// rebuilds, transfers again nor finalizes them (on the pure-Go backend doing so every
// step was a fifth of calibrate's time on the 2Wiki corpus). Release frees them. Its
// task's LossFn is given the batch it was made from.
type Kept struct {
	b  Batch
	in []*tensors.Tensor
}

// Keep makes b's input tensors once; Release them when training is done. A Kept is
// returned as it is.
func Keep(b Batch) (*Kept, error) {
	if k, ok := b.(*Kept); ok {
		return k, nil
	}
	in, err := b.Inputs()
	if err != nil {
		return nil, err
	}
	return &Kept{b: b, in: in}, nil
}

// Inputs implements Batch: the same tensors at every call, owned by k.
func (k *Kept) Inputs() ([]*tensors.Tensor, error) {
	if k.in == nil {
		return nil, errors.New("train: kept batch used after Release")
	}
	return k.in, nil
}

// ShapeKey implements Batch.
func (k *Kept) ShapeKey() string { return k.b.ShapeKey() }

// Release finalizes the kept tensors; the batch cannot be used after it.
func (k *Kept) Release() {
	engine.Finalize(k.in...)
	k.in = nil
}

// unkept returns the batch a Kept was made from (what the task's LossFn is given), or b.
func unkept(b Batch) Batch {
	if k, ok := b.(*Kept); ok {
		return k.b
	}
	return b
}

// stepInputs returns a step's input tensors and what frees them after the call:
// nothing for a Kept, which owns its tensors.
func stepInputs(b Batch) ([]*tensors.Tensor, func(), error) {
	in, err := b.Inputs()
	if err != nil {
		return nil, nil, err
	}
	if _, ok := b.(*Kept); ok {
		return in, func() {}, nil
	}
	return in, func() { engine.Finalize(in...) }, nil
}

// Task is a model plus its loss: the trainer owns the loop, the task builds, for
// batches shaped like b, the scalar loss from their input nodes. Variables are the
// weights (snapshotted for best-weights restore, saved in checkpoints); those marked
// with models.Freeze get no gradient and no update, do not count in the gradient norm
// and keep whatever value they were loaded with. Freeze before the first step:
// executables already compiled keep the variables they were built with.
type Task interface {
	Kind() string
	Store() *model.Store
	Variables() []*model.Variable
	LossFn(b Batch) (func(scope *model.Scope, in []*graph.Node, training bool) *graph.Node, error)
}

// Example is a batch with one 0/1 label per input graph: the batch of GraphBCE.
type Example struct {
	Batch  *kernels.Batch
	Labels []float32
}

// Inputs implements Batch: the batch tensors, then the labels padded to graph slots.
func (ex Example) Inputs() ([]*tensors.Tensor, error) {
	if ex.Batch == nil {
		return nil, errors.New("train: nil batch")
	}
	labels, err := ex.Batch.GraphValues(ex.Labels)
	if err != nil {
		return nil, err
	}
	return append(ex.Batch.Tensors(), tensors.FromFlatDataAndDimensions(labels, len(labels))), nil
}

// ShapeKey implements Batch.
func (ex Example) ShapeKey() string {
	if ex.Batch == nil {
		return ""
	}
	return ex.Batch.ShapeKey()
}

// GraphBCE is the task of a graph classifier: masked mean BCE of its per-graph logits
// (padding slots excluded) against Example labels.
type GraphBCE struct{ Model }

// LossFn implements Task.
func (t GraphBCE) LossFn(b Batch) (func(scope *model.Scope, in []*graph.Node, training bool) *graph.Node, error) {
	ex, ok := b.(Example)
	if !ok || ex.Batch == nil {
		return nil, fmt.Errorf("train: graph BCE: want an Example batch, got %T", b)
	}
	if err := checkBatch(t.Model, ex.Batch); err != nil {
		return nil, err
	}
	spec, layout := ex.Batch.Spec, ex.Batch.Layout
	nb := kernels.NumInputs(spec, layout)
	return func(scope *model.Scope, in []*graph.Node, training bool) *graph.Node {
		bn, err := kernels.NewBatchNodes(spec, layout, in[:nb])
		if err != nil {
			panic(err)
		}
		return MaskedBCE(t.Model.Logits(bn, training), in[nb], bn.GraphMask)
	}, nil
}

// StepStats reports one training step.
type StepStats struct {
	Step     int     // 0-based index of the step just taken
	Loss     float64 // mean BCE of the batch before the update
	GradNorm float64 // global gradient L2 norm before clipping
	LR       float64 // learning rate used
}

// Trainer runs training steps and predictions of a Model on an Engine. It is not safe
// for concurrent use: steps update the model's variables in place.
type Trainer struct {
	eng   *engine.Engine
	m     Model // nil for tasks that are not graph classifiers (Predict unavailable)
	task  Task
	cfg   Config
	opt   optimizer.Interface
	lrVar *model.Variable
	step  int
	// name prefixes this trainer's executables (engine.Unique): its update graph
	// holds its own optimizer settings, clip norm and loss, not another trainer's
	// of the same store.
	name string

	gradVars []*model.Variable // the variables with gradients, in update order

	best      []*tensors.Tensor // FitTask's best weights so far (trainable order)
	loopState *LoopState        // the loop's state at its latest evaluation
	from      *LoopState        // the state LoadState resumes from

	// Log receives the JSONL training log of FitTask; Progress its per-step progress.
	Log      io.Writer
	Progress func(done, total int)
	// Checkpoint, when set, is called by FitTask after every evaluation (steps taken
	// so far), once early stopping has seen it: save the weights and SaveState there.
	Checkpoint func(step int) error
}

// New prepares a Trainer of a graph classifier with the GraphBCE task.
func New(eng *engine.Engine, m Model, cfg Config) (*Trainer, error) {
	if m == nil {
		return nil, errors.New("train: nil model")
	}
	t, err := NewTask(eng, GraphBCE{m}, cfg)
	if err != nil {
		return nil, err
	}
	t.m = m
	return t, nil
}

// NewTask prepares a Trainer of any task. It seeds the store's random state (dropout)
// with cfg.Seed.
func NewTask(eng *engine.Engine, task Task, cfg Config) (*Trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if eng == nil || task == nil {
		return nil, errors.New("train: nil engine or task")
	}
	store := task.Store()
	if err := store.SetRNGStateFromSeed(cfg.Seed); err != nil {
		return nil, fmt.Errorf("train: seeding: %w", err)
	}
	adam := optimizer.Adam().LearningRate(cfg.LearningRate).Betas(cfg.Beta1, cfg.Beta2).Epsilon(cfg.Epsilon)
	if cfg.Optimizer == "adamw" {
		adam = adam.WeightDecay(cfg.WeightDecay)
	}
	t := &Trainer{eng: eng, task: task, cfg: cfg, opt: adam.Done(), name: eng.Unique(task.Kind())}
	if _, ok := t.opt.(gradientOptimizer); !ok {
		return nil, errors.New("train: GoMLX Adam does not accept gradients (UpdateGraphWithGradients)")
	}
	t.lrVar = optimizer.LearningRateVar(store.RootScope(), dtypes.Float32, cfg.LearningRate)
	return t, nil
}

// batchChecker is implemented by models that can reject batches of the wrong shape
// before a graph is built (e.g. models.RGCNClassifier).
type batchChecker interface {
	CheckBatch(spec kernels.Spec) error
}

// checkBatch validates b against m when m supports it.
func checkBatch(m Model, b *kernels.Batch) error {
	if c, ok := m.(batchChecker); ok {
		if err := c.CheckBatch(b.Spec); err != nil {
			return fmt.Errorf("train: %w", err)
		}
	}
	return nil
}

// gradientOptimizer is implemented by GoMLX's Adam: it applies given gradients.
type gradientOptimizer interface {
	UpdateGraphWithGradients(scope *model.Scope, grads []*graph.Node, lossDType dtypes.DType)
}

// StepsTaken returns how many training steps were run.
func (t *Trainer) StepsTaken() int { return t.step }

// Resume sets the number of steps already taken, for a run resumed from its weights
// alone (LoadState resumes exactly, when SaveState wrote the trainer's state): the
// learning-rate schedule continues from there, FitTask runs the remaining
// TotalSteps − step steps and logs them under their own step numbers, and the random
// state (dropout) is seeded from (Seed, step), so the resumed steps do not replay the
// first steps' masks. What is not restored: the optimizer's moment estimates, which
// start afresh, the uninterrupted run's random state, and early stopping's best loss
// and patience, which count from the resumed run's first evaluation.
func (t *Trainer) Resume(step int) error {
	if step < 0 || step >= t.cfg.TotalSteps {
		return fmt.Errorf("train: resume at step %d: want 0 ≤ step < TotalSteps %d", step, t.cfg.TotalSteps)
	}
	if step > 0 {
		if err := t.task.Store().SetRNGStateFromSeed(t.cfg.Seed ^ int64(uint64(step)*0x9E3779B97F4A7C15)); err != nil {
			return fmt.Errorf("train: resume: seeding: %w", err)
		}
	}
	t.step, t.from = step, nil
	engine.Finalize(t.best...)
	t.best = nil
	return nil
}

// Step runs one optimisation step on ex (GraphBCE). Padding graph slots do not count
// in the loss.
func (t *Trainer) Step(ex Example) (StepStats, error) {
	if ex.Batch == nil {
		return StepStats{}, errors.New("train: step: nil batch")
	}
	return t.StepBatches(ex)
}

// StepBatches runs one optimisation step over micro-batches: with one batch the
// loss, gradients, clipping and update run in one executable; with several each
// batch's gradients are computed separately, averaged, clipped and applied once
// (gradient accumulation). Loss is the mean of the micro-batch losses.
func (t *Trainer) StepBatches(bs ...Batch) (StepStats, error) {
	if len(bs) == 0 {
		return StepStats{}, errors.New("train: step: no batch")
	}
	lr := t.cfg.Schedule().LR(t.step)
	if t.cfg.LR != nil {
		lr = t.cfg.LR(t.step)
	}
	if err := t.lrVar.SetValue(tensors.FromScalar(float32(lr))); err != nil {
		return StepStats{}, fmt.Errorf("train: setting learning rate: %w", err)
	}
	var st StepStats
	var err error
	if len(bs) == 1 {
		st, err = t.fusedStep(bs[0])
	} else {
		st, err = t.accumulatedStep(bs)
	}
	if err != nil {
		return st, err
	}
	st.Step, st.LR = t.step, lr
	t.step++
	if math.IsNaN(st.Loss) || math.IsInf(st.Loss, 0) {
		return st, fmt.Errorf("train: step %d: loss is %g", st.Step, st.Loss)
	}
	return st, nil
}

// fusedStep runs loss, gradients, clipping and the update in one executable.
func (t *Trainer) fusedStep(b Batch) (StepStats, error) {
	lossFn, err := t.task.LossFn(unkept(b))
	if err != nil {
		return StepStats{}, err
	}
	clip := t.cfg.ClipNorm
	exe, err := t.eng.Exec(engine.Key{Name: t.name + "/train", Bucket: b.ShapeKey()}, t.task.Store(),
		func(scope *model.Scope, in []*graph.Node) []*graph.Node {
			scope.Store().SetTraining(in[0].Graph(), true)
			loss := lossFn(scope, in, true)
			grads := scope.BuildTrainableVariablesGradientsGraph(loss)
			norm := clipGrads(grads, clip)
			t.opt.(gradientOptimizer).UpdateGraphWithGradients(scope, grads, loss.DType())
			return []*graph.Node{loss, norm}
		})
	if err != nil {
		return StepStats{}, err
	}
	inputs, done, err := stepInputs(b)
	if err != nil {
		return StepStats{}, fmt.Errorf("train: step: %w", err)
	}
	outs, err := exe.Call(inputs...)
	done()
	if err != nil {
		return StepStats{}, fmt.Errorf("train: step %d: %w", t.step, err)
	}
	defer engine.Finalize(outs...)
	return StepStats{Loss: float64(tensors.MustCopyFlatData[float32](outs[0])[0]),
		GradNorm: float64(tensors.MustCopyFlatData[float32](outs[1])[0])}, nil
}

// clipGrads scales grads in place so that their global norm is at most clip (0 = no
// clipping) and returns the norm before clipping.
func clipGrads(grads []*graph.Node, clip float64) *graph.Node {
	norm := GlobalNorm(grads)
	if clip > 0 {
		scale := graph.MinScalar(graph.Div(graph.ConstAs(norm, clip), graph.AddScalar(norm, 1e-6)), 1)
		for i, g := range grads {
			grads[i] = graph.Mul(g, graph.ConvertDType(scale, g.DType()))
		}
	}
	return norm
}

// accumulatedStep computes each micro-batch's loss and gradients, averages the
// gradients on the host and applies them in one update executable.
func (t *Trainer) accumulatedStep(bs []Batch) (StepStats, error) {
	var sum []*tensors.Tensor
	var acc [][]float32
	var loss float64
	var vars []*model.Variable
	for i, b := range bs {
		lossFn, err := t.task.LossFn(unkept(b))
		if err != nil {
			return StepStats{}, err
		}
		var used []*model.Variable
		exe, err := t.eng.Exec(engine.Key{Name: t.name + "/grad", Bucket: b.ShapeKey()}, t.task.Store(),
			func(scope *model.Scope, in []*graph.Node) []*graph.Node {
				g := in[0].Graph()
				scope.Store().SetTraining(g, true)
				l := lossFn(scope, in, true)
				grads := scope.BuildTrainableVariablesGradientsGraph(l)
				for v := range scope.IterVariables() {
					if v.Trainable && v.InUseByGraph(g) {
						used = append(used, v)
					}
				}
				return append([]*graph.Node{l}, grads...)
			})
		if err != nil {
			return StepStats{}, err
		}
		inputs, done, err := stepInputs(b)
		if err != nil {
			return StepStats{}, fmt.Errorf("train: micro-batch %d: %w", i, err)
		}
		outs, err := exe.Call(inputs...)
		done()
		if err != nil {
			return StepStats{}, fmt.Errorf("train: step %d micro-batch %d: %w", t.step, i, err)
		}
		if used != nil { // compiled by this call
			t.gradVars = used
		}
		loss += float64(tensors.MustCopyFlatData[float32](outs[0])[0])
		if acc == nil {
			acc = make([][]float32, len(outs)-1)
			sum = make([]*tensors.Tensor, len(outs)-1)
		}
		if len(outs)-1 != len(acc) {
			engine.Finalize(outs...)
			return StepStats{}, fmt.Errorf("train: micro-batch %d trains %d variables, the first %d", i, len(outs)-1, len(acc))
		}
		for j, g := range outs[1:] {
			d := tensors.MustCopyFlatData[float32](g)
			if acc[j] == nil {
				acc[j] = d
				sum[j] = g
				continue
			}
			for k := range d {
				acc[j][k] += d[k]
			}
		}
		engine.Finalize(outs[:1]...)
		for j, g := range outs[1:] {
			if sum[j] != g {
				_ = g.FinalizeAll()
			}
		}
	}
	vars = t.gradVars
	if len(vars) != len(acc) {
		return StepStats{}, fmt.Errorf("train: %d gradients for %d variables", len(acc), len(vars))
	}
	n := float32(len(bs))
	grads := make([]*tensors.Tensor, len(acc))
	for j, a := range acc {
		for k := range a {
			a[k] /= n
		}
		grads[j] = tensors.FromFlatDataAndDimensions(a, sum[j].Shape().Dimensions...)
		_ = sum[j].FinalizeAll()
	}
	clip := t.cfg.ClipNorm
	exe, err := t.eng.Exec(engine.Key{Name: t.name + "/apply", Bucket: fmt.Sprint(len(vars))}, t.task.Store(),
		func(scope *model.Scope, in []*graph.Node) []*graph.Node {
			g := in[0].Graph()
			for _, v := range vars {
				_ = v.NodeValue(g) // the update touches exactly the variables that have gradients
			}
			gs := append([]*graph.Node(nil), in...)
			norm := clipGrads(gs, clip)
			t.opt.(gradientOptimizer).UpdateGraphWithGradients(scope, gs, dtypes.Float32)
			return []*graph.Node{norm}
		})
	if err != nil {
		return StepStats{}, err
	}
	outs, err := exe.Call(grads...)
	engine.Finalize(grads...)
	if err != nil {
		return StepStats{}, fmt.Errorf("train: step %d: applying gradients: %w", t.step, err)
	}
	defer engine.Finalize(outs...)
	return StepStats{Loss: loss / float64(len(bs)), GradNorm: float64(tensors.MustCopyFlatData[float32](outs[0])[0])}, nil
}

// MaskedBCE is the mean binary cross-entropy of logits [G] against labels [G] over the
// slots with weight > 0 (weights [G], e.g. GraphMask), weighted by weights.
func MaskedBCE(logits, labels, weights *graph.Node) *graph.Node {
	labels = graph.ConvertDType(labels, logits.DType())
	weights = graph.ConvertDType(weights, logits.DType())
	// max(z,0) − z·y + log(1+e^−|z|)
	per := graph.Add(graph.Sub(graph.MaxScalar(logits, 0), graph.Mul(logits, labels)),
		graph.Log1P(graph.Exp(graph.Neg(graph.Abs(logits)))))
	total := graph.ReduceAllSum(graph.Mul(per, weights))
	return graph.Div(total, graph.MaxScalar(graph.ReduceAllSum(weights), 1e-12))
}

// GlobalNorm returns √(Σ‖g‖²) over the gradients, as float32.
//
// Each ‖g‖² is kernels.SumSquares, matrix products rather than ReduceAllSum: on the go
// backend a reduction runs through a generic iterator, about twice as slow, and the
// trainer computes this norm on every step over every parameter.
func GlobalNorm(grads []*graph.Node) *graph.Node {
	var sum *graph.Node
	for _, g := range grads {
		s := graph.ConvertDType(kernels.SumSquares(g), dtypes.Float32)
		if sum == nil {
			sum = s
		} else {
			sum = graph.Add(sum, s)
		}
	}
	return graph.Sqrt(sum)
}

// Predict returns one logit per input graph of b (in input order), with the model in
// evaluation mode.
func (t *Trainer) Predict(b *kernels.Batch) ([]float32, error) {
	if t.m == nil {
		return nil, errors.New("train: predict: the task is not a graph classifier")
	}
	return Predict(t.eng, t.m, b)
}

// Predict runs m in evaluation mode on b and returns one logit per input graph.
func Predict(eng *engine.Engine, m Model, b *kernels.Batch) ([]float32, error) {
	if b == nil {
		return nil, errors.New("train: predict: nil batch")
	}
	if err := checkBatch(m, b); err != nil {
		return nil, err
	}
	rows, err := evalLogits(eng, m.Kind()+"/predict", m.Store(), b, m.Logits)
	if err != nil {
		return nil, fmt.Errorf("train: predict: %w", err)
	}
	return b.PerGraph(rows, 1)
}

// evalLogits compiles (once per bucket) and runs logits in evaluation mode on b and
// returns its output's flat data.
func evalLogits(eng *engine.Engine, name string, store *model.Store, b *kernels.Batch, logits func(*kernels.BatchNodes, bool) *graph.Node) ([]float32, error) {
	spec, layout := b.Spec, b.Layout
	nb := kernels.NumInputs(spec, layout)
	exe, err := eng.Exec(engine.Key{Name: name, Bucket: b.ShapeKey()}, store,
		func(scope *model.Scope, in []*graph.Node) []*graph.Node {
			bn, err := kernels.NewBatchNodes(spec, layout, in[:nb])
			if err != nil {
				panic(err)
			}
			scope.Store().SetTraining(bn.Graph(), false)
			return []*graph.Node{logits(bn, false)}
		})
	if err != nil {
		return nil, err
	}
	inputs := b.Tensors()
	outs, err := exe.Call(inputs...)
	engine.Finalize(inputs...)
	if err != nil {
		return nil, err
	}
	defer engine.Finalize(outs...)
	return tensors.MustCopyFlatData[float32](outs[0]), nil
}

// Evaluate predicts every example and returns the metrics over all their graphs.
func (t *Trainer) Evaluate(exs []Example) (Metrics, error) {
	var logits, labels []float32
	for i, ex := range exs {
		z, err := t.Predict(ex.Batch)
		if err != nil {
			return Metrics{}, fmt.Errorf("train: evaluating example %d: %w", i, err)
		}
		if len(ex.Labels) != len(z) {
			return Metrics{}, fmt.Errorf("train: example %d: %d labels for %d graphs", i, len(ex.Labels), len(z))
		}
		logits = append(logits, z...)
		labels = append(labels, ex.Labels...)
	}
	return Evaluate(logits, labels)
}

// EvalPoint is one evaluation during Fit.
type EvalPoint struct {
	Step      int     // steps taken when evaluated
	TrainLoss float64 // loss of the last training step
	Metrics
}

// Result summarises Fit.
type Result struct {
	Steps        int         // training steps taken
	BestStep     int         // steps taken at the best evaluation, counted like Steps (≤ 0: before a resumed run started, or none)
	Best         Metrics     // metrics at the best evaluation (weights restored to it)
	History      []EvalPoint // every evaluation
	StoppedEarly bool        // stopped by early stopping before TotalSteps
}

// Fit trains a GraphBCE trainer for cfg.TotalSteps steps, drawing batch i from
// next(i) and evaluating on eval (see FitTask).
func (t *Trainer) Fit(next func(step int) (Example, error), eval []Example) (*Result, error) {
	if len(eval) == 0 {
		return nil, errors.New("train: fit: no evaluation examples")
	}
	return t.FitTask(context.Background(), func(i int) ([]Batch, error) {
		ex, err := next(i)
		if err != nil {
			return nil, err
		}
		if ex.Batch == nil {
			return nil, errors.New("nil batch")
		}
		return []Batch{ex}, nil
	}, func() (Metrics, error) { return t.Evaluate(eval) })
}

// FitTask runs the Loop with this trainer's configuration (the steps left after
// Resume; all of them otherwise): step i trains on the
// micro-batches next(i) returns (cfg.AccumulateSteps of them when it is > 1: next
// should return that many), eval scores the validation split, and the best
// evaluation's trainable variables are restored at the end (frozen ones never change).
func (t *Trainer) FitTask(ctx context.Context, next func(step int) ([]Batch, error), eval func() (Metrics, error)) (*Result, error) {
	defer func() {
		engine.Finalize(t.best...)
		t.best, t.loopState, t.from = nil, nil, nil
	}()
	loop := Loop{Steps: t.cfg.TotalSteps - t.step, StartStep: t.step, EvalEvery: t.cfg.EvalEvery, Patience: t.cfg.Patience, MinDelta: t.cfg.MinDelta,
		Log: t.Log, Progress: t.Progress, From: t.from}
	return loop.Run(ctx, Hooks{
		Step: func(i int) (StepStats, error) {
			bs, err := next(i)
			if err != nil {
				return StepStats{}, fmt.Errorf("train: fit: batch %d: %w", i, err)
			}
			return t.StepBatches(bs...)
		},
		Eval: eval,
		Snapshot: func() error {
			engine.Finalize(t.best...)
			var err error
			t.best, err = snapshot(t.trainable())
			return err
		},
		Restore: func() error { return restore(t.trainable(), t.best) },
		Checkpoint: func(st LoopState) error {
			t.loopState = &st
			if t.Checkpoint == nil {
				return nil
			}
			return t.Checkpoint(t.step)
		},
	})
}

// trainable returns the task's variables that are not frozen (weights and state such
// as batch-norm statistics).
func (t *Trainer) trainable() []*model.Variable {
	var out []*model.Variable
	for _, v := range t.task.Variables() {
		if !models.IsFrozen(t.task.Store(), v) {
			out = append(out, v)
		}
	}
	return out
}

// Snapshot copies the current values of the variables that are not frozen (for best-weights
// restore in a caller's Loop hooks).
func (t *Trainer) Snapshot() ([]*tensors.Tensor, error) { return snapshot(t.trainable()) }

// Restore sets the variables that are not frozen to a Snapshot.
func (t *Trainer) Restore(snap []*tensors.Tensor) error { return restore(t.trainable(), snap) }

// snapshot copies the variables' current values.
func snapshot(vars []*model.Variable) ([]*tensors.Tensor, error) {
	out := make([]*tensors.Tensor, len(vars))
	for i, v := range vars {
		val, err := v.Value()
		if err != nil {
			return nil, fmt.Errorf("train: snapshot %s: %w", v.Path(), err)
		}
		if out[i], err = val.LocalClone(); err != nil {
			return nil, fmt.Errorf("train: snapshot %s: %w", v.Path(), err)
		}
	}
	return out, nil
}

// restore sets the variables to copies of a snapshot.
func restore(vars []*model.Variable, snap []*tensors.Tensor) error {
	for i, v := range vars {
		c, err := snap[i].LocalClone()
		if err != nil {
			return fmt.Errorf("train: restore %s: %w", v.Path(), err)
		}
		if err := v.SetValue(c); err != nil {
			return fmt.Errorf("train: restore %s: %w", v.Path(), err)
		}
	}
	return nil
}
