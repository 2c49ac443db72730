package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/graphloom/graphloom/graphio"
)

// Loop is the training loop every learned model of graphloom runs through: it takes
// optimizer steps, evaluates on a validation split every EvalEvery steps and after the
// last one, stops early after Patience evaluations without a MinDelta improvement of
// the validation loss, restores the best weights, logs every step and evaluation as
// JSON lines and reports progress. What a step and an evaluation are belongs to the
// caller (Hooks): Trainer.Fit plugs in GoMLX steps of a Task; the CrossAug scorer plugs
// in its sampled epochs.
type Loop struct {
	Steps int // most optimizer steps
	// StartStep is the number of steps taken before this run (a resumed run): the
	// log's and History's step numbers, and the evaluation every EvalEvery steps,
	// count from it as an uninterrupted run would; Result.Steps and BestStep count
	// this run's steps.
	StartStep int
	EvalEvery int     // evaluate every this many steps (and after the last)
	Patience  int     // evaluations without improvement before stopping; 0 = never
	MinDelta  float64 // improvement threshold on the validation loss
	// Log receives one JSON object per step ({"step","loss","lr","grad_norm"}) and
	// per evaluation ({"step","eval":{…}}); nil = none.
	Log io.Writer
	// Progress is called after every step with (steps done, Steps); nil = none.
	Progress func(done, total int)
	// From is the state of the run this one resumes (saved by a Checkpoint hook at
	// StartStep): early stopping goes on counting from it, History and Best start
	// with its evaluations, and its best weights are restored at the end when no
	// later evaluation beats them (the caller loads them into the Restore hook's
	// snapshot). nil = a fresh run.
	From *LoopState
}

// LoopState is what a Loop knows after an evaluation: enough, with the weights and
// the trainer's state, for a resumed run to stop early and restore the best weights as
// the uninterrupted run would.
type LoopState struct {
	Step     int          // steps taken in all (from the start of the first run)
	Stopper  StopperState // early stopping's best loss and evaluations without improvement
	BestStep int          // step of the best evaluation, from the start; 0 = none yet
	Best     Metrics      // its metrics
	History  []EvalPoint  // every evaluation so far
}

// evalPointJSON is an EvalPoint on the wire (its embedded Metrics' MarshalJSON would
// otherwise write the metrics alone).
type evalPointJSON struct {
	Step      int       `json:"step"`
	TrainLoss nullFloat `json:"train_loss"`
	Metrics   Metrics   `json:"metrics"`
}

// MarshalJSON writes the state; NaN and infinite values are written as null.
func (s LoopState) MarshalJSON() ([]byte, error) {
	h := make([]evalPointJSON, len(s.History))
	for i, p := range s.History {
		h[i] = evalPointJSON{p.Step, nullFloat(p.TrainLoss), p.Metrics}
	}
	return json.Marshal(struct {
		Step     int             `json:"step"`
		Stopper  StopperState    `json:"stopper"`
		BestStep int             `json:"best_step"`
		Best     Metrics         `json:"best"`
		History  []evalPointJSON `json:"history"`
	}{s.Step, s.Stopper, s.BestStep, s.Best, h})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *LoopState) UnmarshalJSON(b []byte) error {
	var w struct {
		Step     int             `json:"step"`
		Stopper  StopperState    `json:"stopper"`
		BestStep int             `json:"best_step"`
		Best     Metrics         `json:"best"`
		History  []evalPointJSON `json:"history"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	out := LoopState{Step: w.Step, Stopper: w.Stopper, BestStep: w.BestStep, Best: w.Best}
	for _, p := range w.History {
		out.History = append(out.History, EvalPoint{Step: p.Step, TrainLoss: float64(p.TrainLoss), Metrics: p.Metrics})
	}
	*s = out
	return nil
}

// Hooks are the caller's parts of a Loop.
type Hooks struct {
	// Step takes optimizer step i (0-based).
	Step func(i int) (StepStats, error)
	// Eval scores the validation split; Loss is what early stopping watches.
	Eval func() (Metrics, error)
	// Snapshot remembers the current weights as the best; Restore brings them back.
	Snapshot func() error
	Restore  func() error
	// Checkpoint, when set, is called after every evaluation, once early stopping has
	// seen it and a new best is snapshotted: the place to save what a resumed run
	// needs (the weights, the optimizer's state, this LoopState as From).
	Checkpoint func(LoopState) error
}

// LogRecord is one line of the training log.
type LogRecord struct {
	Step      int      `json:"step"`
	Loss      *float64 `json:"loss,omitempty"`
	LR        *float64 `json:"lr,omitempty"`
	GradNorm  *float64 `json:"grad_norm,omitempty"`
	Eval      *Metrics `json:"eval,omitempty"`
	TrainLoss *float64 `json:"train_loss,omitempty"`
	Seconds   float64  `json:"seconds"`
}

// MarshalJSON writes the record; a NaN or infinite value (a diverged loss, a gradient
// norm that overflowed) is written as null, since JSON has neither.
func (r LogRecord) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Step      int        `json:"step"`
		Loss      *nullFloat `json:"loss,omitempty"`
		LR        *nullFloat `json:"lr,omitempty"`
		GradNorm  *nullFloat `json:"grad_norm,omitempty"`
		Eval      *Metrics   `json:"eval,omitempty"`
		TrainLoss *nullFloat `json:"train_loss,omitempty"`
		Seconds   nullFloat  `json:"seconds"`
	}{r.Step, (*nullFloat)(r.Loss), (*nullFloat)(r.LR), (*nullFloat)(r.GradNorm), r.Eval,
		(*nullFloat)(r.TrainLoss), nullFloat(r.Seconds)})
}

// UnmarshalJSON reads what MarshalJSON writes: an absent field stays nil, a null one
// reads back as NaN.
func (r *LogRecord) UnmarshalJSON(b []byte) error {
	var w struct {
		Step      int             `json:"step"`
		Loss      json.RawMessage `json:"loss"`
		LR        json.RawMessage `json:"lr"`
		GradNorm  json.RawMessage `json:"grad_norm"`
		Eval      *Metrics        `json:"eval"`
		TrainLoss json.RawMessage `json:"train_loss"`
		Seconds   nullFloat       `json:"seconds"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	out := LogRecord{Step: w.Step, Eval: w.Eval, Seconds: float64(w.Seconds)}
	for _, f := range []struct {
		raw json.RawMessage
		dst **float64
	}{{w.Loss, &out.Loss}, {w.LR, &out.LR}, {w.GradNorm, &out.GradNorm}, {w.TrainLoss, &out.TrainLoss}} {
		v, err := optFloat(f.raw)
		if err != nil {
			return err
		}
		*f.dst = v
	}
	*r = out
	return nil
}

// Run runs the loop. At the end the weights of the best evaluation are restored (when
// any evaluation improved) and the result lists every evaluation.
func (l Loop) Run(ctx context.Context, h Hooks) (*Result, error) {
	if l.Steps < 1 || l.EvalEvery < 1 {
		return nil, fmt.Errorf("train: loop needs Steps ≥ 1 and EvalEvery ≥ 1 (got %d, %d)", l.Steps, l.EvalEvery)
	}
	if h.Step == nil || h.Eval == nil || h.Snapshot == nil || h.Restore == nil {
		return nil, errors.New("train: loop: every hook is required")
	}
	t0 := time.Now()
	enc := (*json.Encoder)(nil)
	if l.Log != nil {
		enc = json.NewEncoder(l.Log)
	}
	logLine := func(r LogRecord) error {
		if enc == nil {
			return nil
		}
		r.Seconds = math.Round(time.Since(t0).Seconds()*1000) / 1000
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("train: writing log: %w", err)
		}
		return nil
	}
	if l.From != nil && l.From.Step != l.StartStep {
		return nil, fmt.Errorf("train: loop resumes at step %d from a state saved at step %d", l.StartStep, l.From.Step)
	}
	stopper := EarlyStopping{Patience: l.Patience, MinDelta: l.MinDelta}
	res := &Result{}
	bestAbs := 0 // step of the best evaluation, from the start
	if l.From != nil {
		stopper.SetState(l.From.Stopper)
		res.History = append(res.History, l.From.History...)
		res.Best, bestAbs = l.From.Best, l.From.BestStep
		res.BestStep = bestAbs - l.StartStep
	}
	var last StepStats
	for i := 0; i < l.Steps; i++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		st, err := h.Step(i)
		if err != nil {
			return res, err
		}
		last = st
		res.Steps = i + 1
		abs := l.StartStep + res.Steps
		loss, lr, gn := st.Loss, st.LR, st.GradNorm
		if err := logLine(LogRecord{Step: abs, Loss: &loss, LR: &lr, GradNorm: &gn}); err != nil {
			return res, err
		}
		if l.Progress != nil {
			l.Progress(res.Steps, l.Steps)
		}
		if abs%l.EvalEvery != 0 && res.Steps != l.Steps {
			continue
		}
		m, err := h.Eval()
		if err != nil {
			return res, err
		}
		res.History = append(res.History, EvalPoint{Step: abs, TrainLoss: last.Loss, Metrics: m})
		tl := last.Loss
		if err := logLine(LogRecord{Step: abs, Eval: &m, TrainLoss: &tl}); err != nil {
			return res, err
		}
		improved, stop := stopper.Observe(m.Loss)
		if improved {
			if err := h.Snapshot(); err != nil {
				return res, err
			}
			res.Best, res.BestStep, bestAbs = m, res.Steps, abs
		}
		if h.Checkpoint != nil {
			st := LoopState{Step: abs, Stopper: stopper.State(), BestStep: bestAbs, Best: res.Best,
				History: append([]EvalPoint(nil), res.History...)}
			if err := h.Checkpoint(st); err != nil {
				return res, fmt.Errorf("train: checkpoint at step %d: %w", abs, err)
			}
		}
		if stop {
			res.StoppedEarly = res.Steps < l.Steps
			break
		}
	}
	if bestAbs > 0 {
		if err := h.Restore(); err != nil {
			return res, err
		}
	}
	return res, nil
}

// WriteCurves draws the training curves of a run — the training loss at every
// evaluation, the validation loss and the validation ROC-AUC — into a PNG at path,
// atomically.
func WriteCurves(path, title string, res *Result) error {
	if res == nil || len(res.History) == 0 {
		return errors.New("train: no evaluations to plot")
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "step"
	p.Y.Label.Text = "loss / ROC-AUC"
	var trainLoss, valLoss, auc plotter.XYs
	for _, e := range res.History {
		x := float64(e.Step)
		trainLoss = append(trainLoss, plotter.XY{X: x, Y: e.TrainLoss})
		valLoss = append(valLoss, plotter.XY{X: x, Y: e.Loss})
		if !math.IsNaN(e.AUC) {
			auc = append(auc, plotter.XY{X: x, Y: e.AUC})
		}
	}
	args := []any{"training loss", trainLoss, "validation loss", valLoss}
	if len(auc) > 0 {
		args = append(args, "validation ROC-AUC", auc)
	}
	if err := plotutil.AddLinePoints(p, args...); err != nil {
		return fmt.Errorf("train: plotting curves: %w", err)
	}
	wt, err := p.WriterTo(6*vg.Inch, 4*vg.Inch, "png")
	if err != nil {
		return fmt.Errorf("train: rendering curves: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return graphio.AtomicWrite(path, func(w io.Writer) error {
		_, err := wt.WriteTo(w)
		return err
	})
}
