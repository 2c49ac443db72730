// Package train trains graphloom's graph classifiers: Adam/AdamW with warm-up + cosine
// learning rate, global gradient-norm clipping, periodic evaluation, early stopping
// with best-weights restore, fixed seeds, and loss/accuracy/ROC-AUC metrics.
//
// Steps run as compiled GoMLX executables cached per batch shape in an engine.Engine,
// so after every bucket has been seen once nothing recompiles. The optimizer update is
// GoMLX's Adam (ml/train/optimizer); the loop, schedule, clipping and early stopping
// are owned here.
package train

import (
	"errors"
	"fmt"
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train/optimizer"
	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/kernels"
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
	EvalEvery       int     // evaluate every this many steps (and after the last)
	Patience        int     // evaluations without improvement before stopping; 0 = never
	MinDelta        float64 // improvement threshold on the eval loss
	Seed            int64   // dropout random state
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
	case c.ClipNorm < 0 || c.Patience < 0 || c.MinDelta < 0:
		return errors.New("train: ClipNorm, Patience and MinDelta must be ≥ 0")
	}
	return nil
}

// Schedule returns the learning-rate schedule of the configuration.
func (c Config) Schedule() Schedule {
	return Schedule{Base: c.LearningRate, Min: c.MinLearningRate, Warmup: c.WarmupSteps, Total: c.TotalSteps}
}

// Example is a batch with one 0/1 label per input graph.
type Example struct {
	Batch  *kernels.Batch
	Labels []float32
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
	m     Model
	cfg   Config
	opt   optimizer.Interface
	lrVar *model.Variable
	step  int
}

// New prepares a Trainer. It seeds the store's random state (dropout) with cfg.Seed.
func New(eng *engine.Engine, m Model, cfg Config) (*Trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if eng == nil || m == nil {
		return nil, errors.New("train: nil engine or model")
	}
	store := m.Store()
	if err := store.SetRNGStateFromSeed(cfg.Seed); err != nil {
		return nil, fmt.Errorf("train: seeding: %w", err)
	}
	adam := optimizer.Adam().LearningRate(cfg.LearningRate).Betas(cfg.Beta1, cfg.Beta2).Epsilon(cfg.Epsilon)
	if cfg.Optimizer == "adamw" {
		adam = adam.WeightDecay(cfg.WeightDecay)
	}
	t := &Trainer{eng: eng, m: m, cfg: cfg, opt: adam.Done()}
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

// Step runs one optimisation step on ex. Padding graph slots do not count in the loss.
func (t *Trainer) Step(ex Example) (StepStats, error) {
	b := ex.Batch
	if b == nil {
		return StepStats{}, errors.New("train: step: nil batch")
	}
	if err := checkBatch(t.m, b); err != nil {
		return StepStats{}, err
	}
	labels, err := b.GraphValues(ex.Labels)
	if err != nil {
		return StepStats{}, fmt.Errorf("train: step: %w", err)
	}
	lr := t.cfg.Schedule().LR(t.step)
	if err := t.lrVar.SetValue(tensors.FromScalar(float32(lr))); err != nil {
		return StepStats{}, fmt.Errorf("train: setting learning rate: %w", err)
	}
	exe, err := t.eng.Exec(engine.Key{Name: t.m.Kind() + "/train", Bucket: b.ShapeKey()}, t.m.Store(), t.trainGraph(b.Spec, b.Layout))
	if err != nil {
		return StepStats{}, err
	}
	inputs := append(b.Tensors(), tensors.FromFlatDataAndDimensions(labels, len(labels)))
	outs, err := exe.Call(inputs...)
	finalize(inputs)
	if err != nil {
		return StepStats{}, fmt.Errorf("train: step %d: %w", t.step, err)
	}
	defer finalize(outs)
	st := StepStats{Step: t.step, LR: lr,
		Loss: float64(tensors.MustCopyFlatData[float32](outs[0])[0]), GradNorm: float64(tensors.MustCopyFlatData[float32](outs[1])[0])}
	t.step++
	if math.IsNaN(st.Loss) || math.IsInf(st.Loss, 0) {
		return st, fmt.Errorf("train: step %d: loss is %g", st.Step, st.Loss)
	}
	return st, nil
}

func finalize(ts []*tensors.Tensor) {
	for _, x := range ts {
		_ = x.FinalizeAll()
	}
}

// trainGraph builds the training step: masked mean BCE, gradients, global-norm
// clipping, Adam update. Outputs: loss, gradient norm (before clipping).
func (t *Trainer) trainGraph(spec kernels.Spec, layout kernels.Layout) engine.GraphFn {
	nb := kernels.NumInputs(spec, layout)
	clip := t.cfg.ClipNorm
	return func(scope *model.Scope, in []*graph.Node) []*graph.Node {
		bn, err := kernels.NewBatchNodes(spec, layout, in[:nb])
		if err != nil {
			panic(err)
		}
		scope.Store().SetTraining(bn.Graph(), true)
		loss := MaskedBCE(t.m.Logits(bn, true), in[nb], bn.GraphMask)
		grads := scope.BuildTrainableVariablesGradientsGraph(loss)
		norm := GlobalNorm(grads)
		if clip > 0 {
			scale := graph.MinScalar(graph.Div(graph.ConstAs(norm, clip), graph.AddScalar(norm, 1e-6)), 1)
			for i, g := range grads {
				grads[i] = graph.Mul(g, graph.ConvertDType(scale, g.DType()))
			}
		}
		t.opt.(gradientOptimizer).UpdateGraphWithGradients(scope, grads, loss.DType())
		return []*graph.Node{loss, norm}
	}
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
func GlobalNorm(grads []*graph.Node) *graph.Node {
	var sum *graph.Node
	for _, g := range grads {
		s := graph.ConvertDType(graph.ReduceAllSum(graph.Square(g)), dtypes.Float32)
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
	spec, layout := b.Spec, b.Layout
	nb := kernels.NumInputs(spec, layout)
	exe, err := eng.Exec(engine.Key{Name: m.Kind() + "/predict", Bucket: b.ShapeKey()}, m.Store(),
		func(scope *model.Scope, in []*graph.Node) []*graph.Node {
			bn, err := kernels.NewBatchNodes(spec, layout, in[:nb])
			if err != nil {
				panic(err)
			}
			scope.Store().SetTraining(bn.Graph(), false)
			return []*graph.Node{m.Logits(bn, false)}
		})
	if err != nil {
		return nil, err
	}
	inputs := b.Tensors()
	outs, err := exe.Call(inputs...)
	finalize(inputs)
	if err != nil {
		return nil, fmt.Errorf("train: predict: %w", err)
	}
	defer finalize(outs)
	return b.PerGraph(tensors.MustCopyFlatData[float32](outs[0]), 1)
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
	BestStep     int         // steps taken at the best evaluation
	Best         Metrics     // metrics at the best evaluation (weights restored to it)
	History      []EvalPoint // every evaluation
	StoppedEarly bool        // stopped by early stopping before TotalSteps
}

// Fit trains for cfg.TotalSteps steps, drawing batch i from next(i), evaluating on
// eval every cfg.EvalEvery steps and after the last one. With Patience > 0 it stops
// after Patience evaluations whose loss did not beat the best by more than MinDelta.
// At the end the weights of the best evaluation (lowest eval loss) are restored.
func (t *Trainer) Fit(next func(step int) (Example, error), eval []Example) (*Result, error) {
	if len(eval) == 0 {
		return nil, errors.New("train: fit: no evaluation examples")
	}
	stopper := EarlyStopping{Patience: t.cfg.Patience, MinDelta: t.cfg.MinDelta}
	res := &Result{}
	var best []*tensors.Tensor
	defer func() { finalize(best) }()
	var last StepStats
	for i := 0; i < t.cfg.TotalSteps; i++ {
		ex, err := next(i)
		if err != nil {
			return res, fmt.Errorf("train: fit: batch %d: %w", i, err)
		}
		if last, err = t.Step(ex); err != nil {
			return res, err
		}
		res.Steps = i + 1
		if res.Steps%t.cfg.EvalEvery != 0 && res.Steps != t.cfg.TotalSteps {
			continue
		}
		m, err := t.Evaluate(eval)
		if err != nil {
			return res, err
		}
		res.History = append(res.History, EvalPoint{Step: res.Steps, TrainLoss: last.Loss, Metrics: m})
		improved, stop := stopper.Observe(m.Loss)
		if improved {
			finalize(best)
			if best, err = snapshot(t.m.Variables()); err != nil {
				return res, err
			}
			res.Best, res.BestStep = m, res.Steps
		}
		if stop {
			res.StoppedEarly = res.Steps < t.cfg.TotalSteps
			break
		}
	}
	if best != nil {
		if err := restore(t.m.Variables(), best); err != nil {
			return res, err
		}
	}
	return res, nil
}

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

// Freeze marks variables as frozen: the training step computes no gradient for them,
// the optimizer never updates them, and they do not count in the gradient norm. A
// frozen variable keeps whatever value it was loaded with (e.g. a pretrained
// encoder's weights). Call it before the first Step: executables already compiled
// keep the variables they were built with.
func Freeze(vars []*model.Variable) {
	for _, v := range vars {
		v.SetTrainable(false)
	}
}

// Frozen reports whether a variable is frozen (see Freeze).
func Frozen(v *model.Variable) bool { return !v.Trainable }
