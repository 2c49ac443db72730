package augment

import (
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/graphloom/graphloom/kernels"
	"github.com/graphloom/graphloom/models/train"
)

// eceBins is the number of equal-width bins of the reported expected calibration error.
const eceBins = 10

// ensemble is the trained scorer of a run: Config.Ensemble members on one split
// (Config.SplitSeed), each with its own seed for its training views, initialisation
// and dropout, whose calibrated probabilities are averaged. With one member it is the
// single scorer of the paper.
type ensemble struct {
	members []Scorer
	calib   []train.Platt // per member; the identity (A = 1, B = 0) when not calibrated
}

// logit returns the log-odds of the ensemble's missingness score of one graph from
// its members' logits z_k: the score is the mean probability p̄ = mean σ(A_k·z_k + B_k)
// = σ(logit), and logit is log(p̄ / (1 − p̄)),
// computed from the members' calibrated logits c_k in log space (p̄ = mean σ(c_k),
// 1 − p̄ = mean σ(−c_k)), so that it keeps its order where every member is confident
// and p̄ rounds to 1 in float64 (c_k above ≈ 37); selection ranks by it. A steep
// calibration once made every score of a run exactly 1 and its ranking ties.
func (e *ensemble) logit(logits []float32) float64 {
	pos := make([]float64, len(logits)) // log σ(c_k)
	neg := make([]float64, len(logits)) // log σ(−c_k)
	for k, z := range logits {
		c := e.calib[k].A*float64(z) + e.calib[k].B
		pos[k], neg[k] = -softplus(-c), -softplus(c)
	}
	return logSumExp(pos) - logSumExp(neg)
}

// softplus is log(1 + eˣ), without overflow.
func softplus(x float64) float64 { return max(x, 0) + math.Log1p(math.Exp(-math.Abs(x))) }

// logSumExp is log Σ eˣ of xs, without overflow.
func logSumExp(xs []float64) float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		m = max(m, x)
	}
	if math.IsInf(m, -1) {
		return m
	}
	var s float64
	for _, x := range xs {
		s += math.Exp(x - m)
	}
	return m + math.Log(s)
}

// close releases what the members hold on their engine (the members that are
// io.Closers: the R-GCN scorer's compiled executables), once a run has scored with
// them; the ensemble must not be used afterwards.
func (e *ensemble) close() {
	for _, m := range e.members {
		if c, ok := m.(io.Closer); ok {
			_ = c.Close() // releasing a cache: nothing to report
		}
	}
}

// logits scores graphs with every member and returns the ensemble's log-odds (logit).
func (e *ensemble) logits(gs []*kernels.Graph) ([]float64, error) {
	per := make([][]float32, len(e.members))
	for k, sc := range e.members {
		z, err := sc.Logits(gs)
		if err != nil {
			return nil, fmt.Errorf("member %d: %w", k, err)
		}
		per[k] = z
	}
	out := make([]float64, len(gs))
	col := make([]float32, len(e.members))
	for i := range gs {
		for k := range per {
			col[k] = per[k][i]
		}
		out[i] = e.logit(col)
	}
	return out, nil
}

// calibrate fits one Platt scaling to every member's logits on the shared validation
// views, pooled (the validation split is out of every member's training; pooled, the
// fit sees each view scored by K differently trained members, though the views also
// chose each member's epoch, so the fit keeps some of that split's luck), after
// standardising each member's logits by the mean and standard deviation of its own
// validation logits (members differ in logit scale, and the mean probability would
// otherwise follow the most confident member), and applies it to every member (the
// ensemble's test views stay unseen): member k's scaling is σ(a·(z − μ_k)/s_k + b).
// It fills the report's calibration fields and the ensemble's test metrics: ROC-AUC
// (and its standard error over the test roots), ranking accuracy, accuracy and BCE of
// the mean calibrated probability, and the
// expected calibration error (10 equal-width bins) of the mean probability before
// and after calibration. Without cfg.Calibrate the members keep the identity and both
// errors are the uncalibrated one. A fit is refused (tr.CalibrationRefused; the
// members keep the identity) when its slope is not positive (naming tr.EvalAUC, the
// validation ROC-AUC already in it) or when it does not carry across validation
// roots: fitted without each group of roots in turn, it predicts their views worse
// than the raw scores do (calibrationCV).
func (e *ensemble) calibrate(runs []memberRun, testViews []view, cfg Config, tr *TrainReport) error {
	e.calib = make([]train.Platt, len(runs))
	for k := range e.calib {
		e.calib[k] = train.Platt{A: 1}
	}
	if cfg.Calibrate {
		var z, rawVal, y []float32
		var roots []int32
		mu, sd := make([]float64, len(runs)), make([]float64, len(runs))
		for k, r := range runs {
			mu[k], sd[k] = meanStd(r.valLogits)
			for i, v := range r.valLogits {
				z = append(z, float32((float64(v)-mu[k])/sd[k]))
				root := int32(i) // without roots (tests), every view its own
				if len(r.valRoots) == len(r.valLogits) {
					root = r.valRoots[i]
				}
				roots = append(roots, root)
			}
			rawVal = append(rawVal, r.valLogits...)
			y = append(y, r.valLabels...)
		}
		p, err := train.FitPlatt(z, y)
		if err != nil {
			return fmt.Errorf("augment: calibrating the scorer: %w", err)
		}
		tr.CalibrationRefused = ""
		cal, unc, groups, folds := calibrationCV(z, rawVal, y, roots)
		switch {
		case !(p.A > 0):
			// A slope ≤ 0 would flatten or invert the members' ranking: keep the raw
			// probabilities and say so.
			tr.CalibrationRefused = fmt.Sprintf("the fitted slope a = %.4g on the standardised validation logits is not positive (validation ROC-AUC %.3f): it would invert the scorers' ranking, so θ applies to the raw mean probability", p.A, tr.EvalAUC)
		case folds > 1 && cal >= unc:
			tr.CalibrationRefused = fmt.Sprintf("fitted with each of %d groups of validation roots held out in turn (%d could be fitted without), the scaling predicts the held-out roots' views worse than the raw scores do (BCE %.3f against %.3f): it would not carry to other regions of the graph, so θ applies to the raw mean probability", groups, folds, cal, unc)
		default:
			for k := range e.calib {
				e.calib[k] = train.Platt{A: p.A / sd[k], B: p.B - p.A*mu[k]/sd[k]}
			}
		}
	}
	tr.Calibration = e.calib
	labels := runs[0].testLabel
	raw := make([]float64, len(labels))
	cal := make([]float64, len(labels))
	logits := make([]float32, len(labels)) // the ensemble's test metrics: those of its logit
	col := make([]float32, len(runs))
	for i := range labels {
		var s float64
		for k, r := range runs {
			col[k] = r.testLogits[i]
			s += sigmoid(float64(r.testLogits[i]))
		}
		l := e.logit(col)
		raw[i], cal[i], logits[i] = s/float64(len(runs)), sigmoid(l), float32(l)
	}
	tr.TestECE = round3(train.ECE(raw, labels, eceBins))
	tr.TestECECalibrated = round3(train.ECE(cal, labels, eceBins))
	row, err := scoreRow(logits, labels, testViews)
	if err != nil {
		return err
	}
	tr.TestBCE, tr.TestAccuracy, tr.TestAUC, tr.TestRanking = row.EvalBCE, row.Accuracy, row.AUC, row.Ranking
	tr.TestAUCSE, tr.ShortcutGapSE = testAUCSE(logits, labels, testViews, runs[0].baseTest)
	tr.Doubt = shortcutDoubt(*tr)
	return nil
}

// testAUCSE returns the standard errors over the test roots of the test ROC-AUC
// (TrainReport.TestAUCSE) and of its gap to the best shortcut baseline, whose scores
// of the views base holds (TrainReport.ShortcutGapSE); each 0 where it is undefined.
func testAUCSE(logits, labels []float32, views []view, base map[string][]float64) (aucSE, gapSE float64) {
	if len(views) != len(logits) {
		return 0, 0
	}
	scores := make([]float64, len(logits))
	pos := make([]bool, len(logits))
	roots := make([]int, len(logits))
	for i, l := range logits {
		if views[i].sg == nil {
			return 0, 0
		}
		scores[i], pos[i], roots[i] = float64(l), labels[i] > 0.5, int(views[i].sg.root)
	}
	finite := func(x float64) float64 {
		if math.IsNaN(x) {
			return 0
		}
		return round3(x)
	}
	aucSE = finite(train.ClusterBootstrapSE(scores, pos, roots, 1000, 1))
	if len(base) > 0 {
		var rivals [][]float64
		for _, k := range sortedKeys(base) {
			rivals = append(rivals, base[k])
		}
		_, se := train.ClusterBootstrapAUCGap(scores, rivals, pos, roots, 1000, 1)
		gapSE = finite(se)
	}
	return aucSE, gapSE
}

// calibrationFolds is the number of root folds of calibrationCV.
const calibrationFolds = 5

// calibrationCV cross-validates the calibration over validation roots: the distinct
// roots are dealt in ascending order into up to calibrationFolds folds; for each fold
// a Platt scaling is fitted to the standardised logits z of the views of the other
// folds and scores the fold's views. It returns the mean BCE of those held-out
// calibrated probabilities, the mean BCE of the raw logits (σ of the member's own
// logit, what the scores are without calibration) on the same views, the number of
// folds and the number scored (a fold is skipped when no scaling can be fitted
// without it: one class left, or a fit that diverges). A root's views
// share its neighbourhood, so held-out roots, not held-out views, show whether a
// scaling carries to other regions of the graph (the test split, inference roots).
func calibrationCV(z, raw, y []float32, roots []int32) (cal, unc float64, groups, folds int) {
	ids := slices.Clone(roots)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	k := min(calibrationFolds, len(ids))
	if k < 2 {
		return 0, 0, k, 0
	}
	fold := make(map[int32]int, len(ids))
	for i, r := range ids {
		fold[r] = i % k
	}
	n := 0
	for f := range k {
		var fz, fy []float32
		for i, r := range roots {
			if fold[r] != f {
				fz, fy = append(fz, z[i]), append(fy, y[i])
			}
		}
		p, err := train.FitPlatt(fz, fy)
		if err != nil {
			continue // one class left: this fold cannot be scored
		}
		folds++
		for i, r := range roots {
			if fold[r] == f {
				cal += train.BCEWithLogits(p.A*float64(z[i])+p.B, float64(y[i]))
				unc += train.BCEWithLogits(float64(raw[i]), float64(y[i]))
				n++
			}
		}
	}
	if n == 0 {
		return 0, 0, k, 0
	}
	return cal / float64(n), unc / float64(n), k, folds
}

// meanStd returns the mean and standard deviation of xs; the deviation is 1 where it
// would be 0 (constant logits) so that dividing by it is safe.
func meanStd(xs []float32) (float64, float64) {
	var m, q float64
	for _, x := range xs {
		m += float64(x)
	}
	m /= float64(max(1, len(xs)))
	for _, x := range xs {
		q += (float64(x) - m) * (float64(x) - m)
	}
	sd := math.Sqrt(q / float64(max(1, len(xs))))
	if !(sd > 0) {
		sd = 1
	}
	return m, sd
}
