package augment

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/graphloom/graphloom/graphio"
)

// What a stability report varies (Stability's over).
const (
	StabilityOverSeed  = "seed"       // Config.Seed: the scorer's training
	StabilityOverSplit = "split-seed" // Config.SplitSeed: the scorer's data sample
)

// StabilityRun is one planned run of a stability report: the scorer's test figures and
// what it selected.
type StabilityRun struct {
	Seed           int64    `json:"seed"`
	TestAUC        float64  `json:"test_roc_auc"`
	TestAUCSE      float64  `json:"test_roc_auc_se"` // from the run's own test roots
	BestShortcut   float64  `json:"best_shortcut_baseline"`
	AboveThreshold int      `json:"subgraphs_above_threshold"`
	Sampled        int      `json:"sampled_subgraphs"`
	Selected       []string `json:"selected_roots"` // the selected subgraphs, named by root, sorted
	ECE            float64  `json:"test_ece"`
	ECECalibrated  float64  `json:"test_ece_calibrated"`
	TrainSeconds   float64  `json:"train_seconds"`
}

// StabilityReport is how much the whole planned command moves with a seed: over the
// runs, the mean and sample standard deviation ([2]float64) of each figure, and the
// overlap of the selected sets.
type StabilityReport struct {
	Over string         `json:"over"` // StabilityOverSeed or StabilityOverSplit
	Runs []StabilityRun `json:"runs"`

	TestAUC        [2]float64 `json:"test_roc_auc"`
	TestAUCSE      [2]float64 `json:"test_roc_auc_se"`
	BestShortcut   [2]float64 `json:"best_shortcut_baseline"`
	AboveThreshold [2]float64 `json:"subgraphs_above_threshold"`
	ECE            [2]float64 `json:"test_ece"`
	ECECalibrated  [2]float64 `json:"test_ece_calibrated"`
	// AboveDeviation is the largest deviation of a run's count ≥ θ from their mean, as
	// a share of the mean.
	AboveDeviation float64 `json:"above_threshold_deviation"`
	// Jaccard is the mean Jaccard overlap of the selected sets over all pairs of runs,
	// JaccardMin the least pair's (both 1 with one run; an empty pair counts 1).
	Jaccard    float64 `json:"selected_jaccard"`
	JaccardMin float64 `json:"selected_jaccard_min"`
	// ECEHigher is the number of runs whose test ECE is higher after calibration.
	ECEHigher int `json:"ece_higher_after_calibration"`
}

// Stability runs the whole planned command (opts with Plan, without a checkpoint, so
// every run trains) once per seed, the seed given to Config.Seed (over
// StabilityOverSeed) or Config.SplitSeed (StabilityOverSplit), and reports the spread
// of the scorer's test figures, of the count ≥ θ and the overlap of the selected sets:
// issue 50's stability report, which bench/augment_stability.sh reads. ix is not
// changed.
func Stability(ctx context.Context, ix *graphio.Index, seeds []int64, over string, opts Options) (*StabilityReport, error) {
	if len(seeds) == 0 {
		return nil, fmt.Errorf("augment: stability: no seeds")
	}
	if over != StabilityOverSeed && over != StabilityOverSplit {
		return nil, fmt.Errorf("augment: stability over %q: want %s or %s", over, StabilityOverSeed, StabilityOverSplit)
	}
	if opts.Config.RandomSelector || opts.Config.FactsSelector {
		return nil, fmt.Errorf("augment: stability: the report is the scorer's; the random and facts selectors train none")
	}
	runs := make([]StabilityRun, 0, len(seeds))
	for _, s := range seeds {
		o := opts
		o.Plan, o.Checkpoint, o.Completer = true, "", nil
		if over == StabilityOverSeed {
			o.Config.Seed = s
		} else {
			o.Config.SplitSeed = s
		}
		rep, err := Run(ctx, ix, fmt.Sprintf("stability-%s-%d", over, s), o)
		if err != nil {
			return nil, fmt.Errorf("augment: stability: --%s %d: %w", over, s, err)
		}
		t := rep.Training
		r := StabilityRun{Seed: s, TestAUC: t.TestAUC, TestAUCSE: t.TestAUCSE, BestShortcut: t.BestBaseline,
			AboveThreshold: rep.AboveTheta, Sampled: rep.Sampled, ECE: t.TestECE, ECECalibrated: t.TestECECalibrated,
			TrainSeconds: t.Seconds, Selected: []string{}}
		for _, sel := range rep.Selected {
			r.Selected = append(r.Selected, sel.Root)
		}
		slices.Sort(r.Selected)
		r.Selected = slices.Compact(r.Selected)
		runs = append(runs, r)
	}
	return summariseStability(over, runs), nil
}

// summariseStability computes a stability report's figures from its runs.
func summariseStability(over string, runs []StabilityRun) *StabilityReport {
	rep := &StabilityReport{Over: over, Runs: runs}
	figure := func(f func(StabilityRun) float64) [2]float64 {
		xs := make([]float64, len(runs))
		for i, r := range runs {
			xs[i] = f(r)
		}
		return meanSD(xs)
	}
	rep.TestAUC = figure(func(r StabilityRun) float64 { return r.TestAUC })
	rep.TestAUCSE = figure(func(r StabilityRun) float64 { return r.TestAUCSE })
	rep.BestShortcut = figure(func(r StabilityRun) float64 { return r.BestShortcut })
	rep.AboveThreshold = figure(func(r StabilityRun) float64 { return float64(r.AboveThreshold) })
	rep.ECE = figure(func(r StabilityRun) float64 { return r.ECE })
	rep.ECECalibrated = figure(func(r StabilityRun) float64 { return r.ECECalibrated })
	for _, r := range runs {
		if m := rep.AboveThreshold[0]; m > 0 {
			rep.AboveDeviation = max(rep.AboveDeviation, math.Abs(float64(r.AboveThreshold)-m)/m)
		}
		if r.ECECalibrated > r.ECE {
			rep.ECEHigher++
		}
	}
	rep.Jaccard, rep.JaccardMin = 1, 1
	var sum float64
	pairs := 0
	for i := range runs {
		for j := i + 1; j < len(runs); j++ {
			x := setJaccard(runs[i].Selected, runs[j].Selected)
			sum += x
			pairs++
			rep.JaccardMin = min(rep.JaccardMin, x)
		}
	}
	if pairs > 0 {
		rep.Jaccard = sum / float64(pairs)
	}
	return rep
}

// setJaccard is jaccard of two runs' selected sets, except that two empty sets agree
// (1): two runs that selected nothing selected the same.
func setJaccard(a, b []string) float64 {
	if len(a)+len(b) == 0 {
		return 1
	}
	return jaccard(a, b)
}

// meanSD returns the mean and the sample standard deviation (n − 1; 0 for one value)
// of xs.
func meanSD(xs []float64) [2]float64 {
	if len(xs) == 0 {
		return [2]float64{}
	}
	var m, v float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	if len(xs) > 1 {
		v /= float64(len(xs) - 1)
	}
	return [2]float64{m, math.Sqrt(v)}
}
