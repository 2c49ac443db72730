package gretriever

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
	// State is the trainer's state file (train.Trainer.SaveState: AdamW's moments, the
	// random state, early stopping and the best weights so far), written after
	// OnEpoch at every evaluation. A run resumed at the step it holds continues as
	// the uninterrupted run would; "" = none.
	State string
}

// Plan is how a run's epochs become optimizer steps.
type Plan struct {
	StepsPerEpoch int // ⌈train examples / BatchSize⌉: one optimizer step per batch
	TotalSteps    int
	WarmupSteps   int
}

// PlanFor returns the step plan of n training examples.
func (c Config) PlanFor(n int) Plan {
	per := max(1, (n+c.BatchSize-1)/c.BatchSize)
	return Plan{StepsPerEpoch: per, TotalSteps: per * c.Epochs, WarmupSteps: per * c.WarmupEpochs}
}

// RateAt is train.py's learning rate at optimizer step (0-based) of a run of
// stepsPerEpoch batches an epoch: adjust_learning_rate (linear warm-up over
// WarmupEpochs, then a half-cycle cosine from LearningRate to MinLearningRate over
// the remaining epochs, both in fractional epochs) applied after batches s with
// (s+1) % GradSteps == 0 at epoch + s/stepsPerEpoch, and held until the next such
// batch; before the first, the optimizer's initial LearningRate.
func (c Config) RateAt(step, stepsPerEpoch int) float64 {
	epoch, s := step/stepsPerEpoch, step%stepsPerEpoch
	last := (s+1)/c.GradSteps*c.GradSteps - 1 // latest adjusting batch ≤ s in this epoch
	if last < 0 {
		if epoch == 0 || stepsPerEpoch < c.GradSteps {
			return c.LearningRate
		}
		epoch, last = epoch-1, stepsPerEpoch/c.GradSteps*c.GradSteps-1 // the previous epoch's last
	}
	x := float64(epoch) + float64(last)/float64(stepsPerEpoch)
	w := float64(c.WarmupEpochs)
	if x < w {
		return c.LearningRate * x / w
	}
	return c.MinLearningRate + (c.LearningRate-c.MinLearningRate)*0.5*(1+math.Cos(math.Pi*(x-w)/(float64(c.Epochs)-w)))
}

// TrainConfig returns the trainer settings of G-Retriever's recipe for n examples.
func (c Config) TrainConfig(n int) train.Config {
	p := c.PlanFor(n)
	tc := train.DefaultConfig()
	tc.Optimizer, tc.LearningRate, tc.MinLearningRate, tc.WeightDecay = "adamw", c.LearningRate, c.MinLearningRate, c.WeightDecay
	tc.TotalSteps, tc.WarmupSteps, tc.EvalEvery = p.TotalSteps, p.WarmupSteps, p.StepsPerEpoch
	tc.ClipNorm, tc.AccumulateSteps, tc.Patience, tc.MinDelta = c.ClipNorm, 1, c.Patience, 0
	tc.LR = func(step int) float64 { return c.RateAt(step, p.StepsPerEpoch) }
	tc.Beta1, tc.Beta2 = 0.9, 0.95 // G-Retriever: torch.optim.AdamW(betas=(0.9, 0.95))
	tc.Seed = int64(c.Seed)
	return tc
}

// Result summarises a training run.
type Result struct {
	*train.Result
	InitialLoss float64 // validation loss before training
	Plan        Plan
	// Approximate says why a resumed run could not load its state (State absent, or
	// saved at another step than Resume): AdamW's moments started afresh and early
	// stopping counted from the resumed run's first evaluation. "" otherwise.
	Approximate string
	// ScheduleChanged says how a resumed run's learning-rate schedule differs from
	// the one its state was saved under (more epochs, another rate): the run goes on
	// exactly from the state, but does not end as the uninterrupted run would. ""
	// otherwise.
	ScheduleChanged string
}

// Train trains the encoder and projector on trainSet through the frozen LM, with
// validation loss on val every epoch, early stopping and best-weights restore
// (G-Retriever's train.py). Each epoch visits the examples in a fresh seeded order;
// an optimizer step takes one batch of BatchSize (train.py), GradSteps pacing the
// learning rate.
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
	approx, schedule := "", ""
	if opts.Resume >= tc.TotalSteps {
		return nil, fmt.Errorf("gretriever: resume: the run already took %d of its %d steps: raise the epochs to train on", opts.Resume, tc.TotalSteps)
	}
	if opts.Resume > 0 {
		at, saved, err := train.StateStep(opts.State)
		switch {
		case opts.State == "":
			approx = "no trainer state file"
		case errors.Is(err, fs.ErrNotExist):
			approx = "no trainer state in " + opts.State
		case err != nil:
			return nil, fmt.Errorf("gretriever: resume: %w (remove it to resume from the weights alone)", err)
		case at != opts.Resume:
			approx = fmt.Sprintf("%s was saved at step %d, the weights at step %d", opts.State, at, opts.Resume)
		}
		if approx == "" {
			if _, err := tr.LoadState(opts.State); err != nil {
				return nil, fmt.Errorf("gretriever: resume: %w (remove it to resume from the weights alone)", err)
			}
			if saved.TotalSteps != tc.TotalSteps || saved.LearningRate != tc.LearningRate || saved.MinLearningRate != tc.MinLearningRate || saved.WarmupSteps != tc.WarmupSteps {
				schedule = fmt.Sprintf("the learning-rate schedule changed (%d steps, lr %g → %g, %d warm-up, against %d, %g → %g, %d)",
					saved.TotalSteps, saved.LearningRate, saved.MinLearningRate, saved.WarmupSteps, tc.TotalSteps, tc.LearningRate, tc.MinLearningRate, tc.WarmupSteps)
			}
		} else if err := tr.Resume(opts.Resume); err != nil {
			return nil, fmt.Errorf("gretriever: %w", err)
		}
	}
	tr.Log, tr.Progress = opts.Log, opts.Progress
	initial, err := m.Loss(eng, val)
	if err != nil {
		return nil, err
	}
	// Epoch e visits a permutation seeded by (Seed, e); step s of the epoch takes
	// examples s·BatchSize, … (the last batch may be short).
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
		lo := within * m.cfg.BatchSize
		exs := make([]Example, 0, m.cfg.BatchSize)
		for k := lo; k < min(lo+m.cfg.BatchSize, len(cached)); k++ {
			exs = append(exs, trainSet[cached[k]])
		}
		if len(exs) == 0 {
			return nil, fmt.Errorf("step %d of epoch %d has no examples", within, epoch)
		}
		b, err := m.makeBatch(exs)
		if err != nil {
			return nil, err
		}
		return []train.Batch{b}, nil
	}
	eval := func() (train.Metrics, error) {
		l, err := m.Loss(eng, val)
		if err != nil {
			return train.Metrics{}, err
		}
		return train.Metrics{Loss: l, AUC: math.NaN(), N: len(val)}, nil
	}
	tr.Checkpoint = func(step int) error {
		if opts.OnEpoch != nil {
			if err := opts.OnEpoch(step); err != nil {
				return err
			}
		}
		if opts.State != "" {
			return tr.SaveState(opts.State)
		}
		return nil
	}
	res, err := tr.FitTask(ctx, next, eval)
	if err != nil {
		return nil, err
	}
	return &Result{Result: res, InitialLoss: initial, Plan: plan, Approximate: approx, ScheduleChanged: schedule}, nil
}
