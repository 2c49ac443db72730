package gretriever

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/models/train"
)

// TrainOptions are the parts of a run that are not model settings.
type TrainOptions struct {
	Log      io.Writer             // JSONL training log; nil = none
	Progress func(done, total int) // after every optimizer step; nil = none
	Resume   int                   // optimizer steps already taken (weights loaded by the caller)
	OnEpoch  func(step int) error  // after every evaluation (e.g. save a checkpoint); nil = none
	Steps    int                   // override the number of optimizer steps (0 = Epochs' worth)
}

// Plan is how a run's epochs become optimizer steps.
type Plan struct {
	StepsPerEpoch int // ⌈train examples / (BatchSize · GradSteps)⌉
	TotalSteps    int
	WarmupSteps   int
}

// PlanFor returns the step plan of n training examples.
func (c Config) PlanFor(n int) Plan {
	per := max(1, (n+c.BatchSize*c.GradSteps-1)/(c.BatchSize*c.GradSteps))
	return Plan{StepsPerEpoch: per, TotalSteps: per * c.Epochs, WarmupSteps: per * c.WarmupEpochs}
}

// TrainConfig returns the trainer settings of G-Retriever's recipe for n examples.
func (c Config) TrainConfig(n int) train.Config {
	p := c.PlanFor(n)
	tc := train.DefaultConfig()
	tc.Optimizer, tc.LearningRate, tc.MinLearningRate, tc.WeightDecay = "adamw", c.LearningRate, c.MinLearningRate, c.WeightDecay
	tc.TotalSteps, tc.WarmupSteps, tc.EvalEvery = p.TotalSteps, p.WarmupSteps, p.StepsPerEpoch
	tc.ClipNorm, tc.AccumulateSteps, tc.Patience, tc.MinDelta = c.ClipNorm, c.GradSteps, c.Patience, 0
	tc.Beta1, tc.Beta2 = 0.9, 0.95 // G-Retriever: torch.optim.AdamW(betas=(0.9, 0.95))
	tc.Seed = int64(c.Seed)
	return tc
}

// Result summarises a training run.
type Result struct {
	*train.Result
	InitialLoss float64 // validation loss before training
	Plan        Plan
}

// Train trains the encoder and projector on trainSet through the frozen LM, with
// validation loss on val every epoch, early stopping and best-weights restore
// (G-Retriever's train.py). Each epoch visits the examples in a fresh seeded order;
// an optimizer step takes GradSteps micro-batches of BatchSize.
func (m *Model) Train(ctx context.Context, eng *engine.Engine, trainSet, val []Example, opts TrainOptions) (*Result, error) {
	if len(trainSet) == 0 || len(val) == 0 {
		return nil, errors.New("gretriever: training needs training and validation examples")
	}
	tc := m.cfg.TrainConfig(len(trainSet))
	plan := m.cfg.PlanFor(len(trainSet))
	if opts.Steps > 0 {
		tc.TotalSteps = opts.Steps
		plan.TotalSteps = opts.Steps
	}
	tr, err := train.NewTask(eng, m, tc)
	if err != nil {
		return nil, err
	}
	if opts.Resume > 0 {
		if err := tr.Resume(opts.Resume); err != nil {
			return nil, fmt.Errorf("gretriever: %w", err)
		}
	}
	tr.Log, tr.Progress = opts.Log, opts.Progress
	initial, err := m.Loss(eng, val)
	if err != nil {
		return nil, err
	}
	// Epoch e visits a permutation seeded by (Seed, e); step s of the epoch takes
	// micro-batches s·GradSteps, … of BatchSize examples (the last ones may be short).
	order := func(epoch int) []int {
		rng := rand.New(rand.NewPCG(m.cfg.Seed, uint64(epoch)+1))
		return rng.Perm(len(trainSet))
	}
	cached, cachedEpoch := []int(nil), -1
	next := func(i int) ([]train.Batch, error) {
		step := opts.Resume + i
		epoch, within := step/plan.StepsPerEpoch, step%plan.StepsPerEpoch
		if epoch != cachedEpoch {
			cached, cachedEpoch = order(epoch), epoch
		}
		var bs []train.Batch
		for g := range m.cfg.GradSteps {
			lo := (within*m.cfg.GradSteps + g) * m.cfg.BatchSize
			exs := make([]Example, 0, m.cfg.BatchSize)
			for k := lo; k < min(lo+m.cfg.BatchSize, len(cached)); k++ {
				exs = append(exs, trainSet[cached[k]])
			}
			if len(exs) == 0 {
				continue
			}
			b, err := m.makeBatch(exs)
			if err != nil {
				return nil, err
			}
			bs = append(bs, b)
		}
		if len(bs) == 0 {
			return nil, fmt.Errorf("step %d of epoch %d has no examples", within, epoch)
		}
		return bs, nil
	}
	eval := func() (train.Metrics, error) {
		l, err := m.Loss(eng, val)
		if err != nil {
			return train.Metrics{}, err
		}
		met := train.Metrics{Loss: l, AUC: math.NaN(), N: len(val)}
		if opts.OnEpoch != nil {
			if err := opts.OnEpoch(tr.StepsTaken()); err != nil {
				return met, err
			}
		}
		return met, nil
	}
	res, err := tr.FitTask(ctx, next, eval)
	if err != nil {
		return nil, err
	}
	return &Result{Result: res, InitialLoss: initial, Plan: plan}, nil
}
