package train

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"sort"
)

// Metrics summarise binary predictions.
type Metrics struct {
	Loss     float64 `json:"loss"`     // mean binary cross-entropy of the logits
	Accuracy float64 `json:"accuracy"` // fraction with (logit > 0) == label
	AUC      float64 `json:"auc"`      // ROC-AUC; NaN if only one class is present
	N        int     `json:"n"`        // predictions
}

// String renders the metrics compactly.
func (m Metrics) String() string {
	return fmt.Sprintf("loss %.4f acc %.4f auc %.4f (n=%d)", m.Loss, m.Accuracy, m.AUC, m.N)
}

// BCEWithLogits is the numerically stable binary cross-entropy of one logit z against
// label y ∈ {0, 1}: max(z,0) − z·y + log(1+e^−|z|).
func BCEWithLogits(z, y float64) float64 {
	return math.Max(z, 0) - z*y + math.Log1p(math.Exp(-math.Abs(z)))
}

// Evaluate computes Metrics of logits against labels (0/1).
func Evaluate(logits, labels []float32) (Metrics, error) {
	if len(logits) != len(labels) {
		return Metrics{}, fmt.Errorf("train: %d logits for %d labels", len(logits), len(labels))
	}
	m := Metrics{N: len(logits)}
	if m.N == 0 {
		return Metrics{Loss: math.NaN(), Accuracy: math.NaN(), AUC: math.NaN()}, nil
	}
	correct := 0
	for i, z := range logits {
		y := float64(labels[i])
		m.Loss += BCEWithLogits(float64(z), y)
		if (z > 0) == (labels[i] > 0.5) {
			correct++
		}
	}
	m.Loss /= float64(m.N)
	m.Accuracy = float64(correct) / float64(m.N)
	scores := make([]float64, len(logits))
	pos := make([]bool, len(labels))
	for i := range logits {
		scores[i] = float64(logits[i])
		pos[i] = labels[i] > 0.5
	}
	m.AUC = ROCAUC(scores, pos)
	return m, nil
}

// ROCAUC returns the area under the ROC curve of scores for the positive labels: the
// probability that a random positive scores above a random negative, ties counting ½
// (the Mann–Whitney U statistic with average ranks for ties). It returns NaN when
// either class is absent or lengths differ.
func ROCAUC(scores []float64, positive []bool) float64 {
	n := len(scores)
	if n != len(positive) {
		return math.NaN()
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return scores[idx[a]] < scores[idx[b]] })
	ranks := make([]float64, n)
	for i := 0; i < n; {
		j := i
		for j+1 < n && scores[idx[j+1]] == scores[idx[i]] {
			j++
		}
		avg := float64(i+j)/2 + 1 // ranks are 1-based
		for k := i; k <= j; k++ {
			ranks[idx[k]] = avg
		}
		i = j + 1
	}
	var nPos, nNeg, rankSum float64
	for i, p := range positive {
		if p {
			nPos++
			rankSum += ranks[i]
		} else {
			nNeg++
		}
	}
	if nPos == 0 || nNeg == 0 {
		return math.NaN()
	}
	return (rankSum - nPos*(nPos+1)/2) / (nPos * nNeg)
}

// ClusterBootstrapSE is the standard error of ROCAUC(scores, positive) when items of
// one cluster are not independent (views sampled around one root): the standard
// deviation of the ROC-AUC over reps bootstrap resamples that draw whole clusters with
// replacement (seeded by seed). With every item its own cluster it is the ordinary
// bootstrap, which for large samples agrees with DeLong's variance. It returns NaN
// with fewer than two clusters, and resamples that lack a class are skipped.
func ClusterBootstrapSE(scores []float64, positive []bool, cluster []int, reps int, seed int64) float64 {
	if len(scores) != len(positive) || len(scores) != len(cluster) {
		return math.NaN()
	}
	var rs []float64
	var rp []bool
	return clusterBootstrapSD(cluster, reps, seed, func(idx []int) float64 {
		rs, rp = rs[:0], rp[:0]
		for _, i := range idx {
			rs, rp = append(rs, scores[i]), append(rp, positive[i])
		}
		return ROCAUC(rs, rp)
	})
}

// ClusterBootstrapAUCGap compares a classifier with its best rival on the same items:
// gap is ROCAUC(scores) − max over rivals of ROCAUC(rival), and se its standard error
// from reps cluster-bootstrap resamples (ClusterBootstrapSE's), each resample scoring
// the classifier and every rival on the same items and taking the best rival anew.
// Paired, it counts what the two ROC-AUCs share (the same hard items), and taking the
// maximum within each resample counts the choice of the best rival; a comparison of
// the classifier's own standard error with the best rival's ROC-AUC counts neither.
// se is NaN where ClusterBootstrapSE's would be, or when rivals is empty or a rival's
// length differs from scores'.
func ClusterBootstrapAUCGap(scores []float64, rivals [][]float64, positive []bool, cluster []int, reps int, seed int64) (gap, se float64) {
	if len(rivals) == 0 || len(scores) != len(positive) || len(scores) != len(cluster) {
		return math.NaN(), math.NaN()
	}
	for _, r := range rivals {
		if len(r) != len(scores) {
			return math.NaN(), math.NaN()
		}
	}
	all := make([]int, len(scores))
	for i := range all {
		all[i] = i
	}
	var rs []float64
	var rp []bool
	gapOf := func(idx []int) float64 {
		rp = rp[:0] // the resample's classes, shared by every classifier scored on it
		for _, i := range idx {
			rp = append(rp, positive[i])
		}
		auc := func(s []float64) float64 {
			rs = rs[:0]
			for _, i := range idx {
				rs = append(rs, s[i])
			}
			return ROCAUC(rs, rp)
		}
		best := math.Inf(-1)
		for _, r := range rivals {
			best = max(best, auc(r))
		}
		return auc(scores) - best
	}
	return gapOf(all), clusterBootstrapSD(cluster, reps, seed, gapOf)
}

// clusterBootstrapSD is the standard deviation of stat over reps resamples that draw
// as many clusters as there are, whole and with replacement (seeded by seed); stat
// gets the resample's item indices and NaN results are skipped. NaN with fewer than
// two clusters, reps < 2 or fewer than two finite results.
func clusterBootstrapSD(cluster []int, reps int, seed int64, stat func(idx []int) float64) float64 {
	if reps < 2 {
		return math.NaN()
	}
	byCluster := map[int][]int{}
	var ids []int
	for i, c := range cluster {
		if _, ok := byCluster[c]; !ok {
			ids = append(ids, c)
		}
		byCluster[c] = append(byCluster[c], i)
	}
	if len(ids) < 2 {
		return math.NaN()
	}
	rng := rand.New(rand.NewSource(seed))
	var s, q float64
	n := 0
	var idx []int
	for range reps {
		idx = idx[:0]
		for range ids {
			idx = append(idx, byCluster[ids[rng.Intn(len(ids))]]...)
		}
		if a := stat(idx); !math.IsNaN(a) {
			s += a
			q += a * a
			n++
		}
	}
	if n < 2 {
		return math.NaN()
	}
	m := s / float64(n)
	return math.Sqrt(max(0, (q-float64(n)*m*m)/float64(n-1)))
}

// EarlyStopping tracks a validation loss (lower is better).
type EarlyStopping struct {
	Patience int     // evaluations without improvement before stopping; ≤ 0 never stops
	MinDelta float64 // an improvement must beat the best loss by more than this

	best     float64
	bad      int
	observed bool
}

// Observe records a loss and reports whether it is a new best and whether training
// should stop. NaN losses never improve.
func (e *EarlyStopping) Observe(loss float64) (improved, stop bool) {
	if !math.IsNaN(loss) && (!e.observed || loss < e.best-e.MinDelta) {
		e.best, e.bad, e.observed = loss, 0, true
		return true, false
	}
	e.bad++
	return false, e.Patience > 0 && e.bad >= e.Patience
}

// StopperState is what EarlyStopping has seen: saved with a checkpoint so that a
// resumed run stops where the uninterrupted one would.
type StopperState struct {
	Observed bool    `json:"observed"` // any loss seen
	Best     float64 `json:"best"`     // best loss, when Observed
	Bad      int     `json:"bad"`      // evaluations since the best
}

// MarshalJSON writes the state; an infinite best loss (the only non-finite one
// Observe keeps) is written as the string "+Inf", since JSON has no infinity.
func (s StopperState) MarshalJSON() ([]byte, error) {
	best := any(s.Best)
	if math.IsInf(s.Best, 1) {
		best = "+Inf"
	}
	return json.Marshal(map[string]any{"observed": s.Observed, "best": best, "bad": s.Bad})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *StopperState) UnmarshalJSON(b []byte) error {
	var w struct {
		Observed bool            `json:"observed"`
		Best     json.RawMessage `json:"best"`
		Bad      int             `json:"bad"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	out := StopperState{Observed: w.Observed, Bad: w.Bad}
	if string(w.Best) == `"+Inf"` {
		out.Best = math.Inf(1)
	} else if err := json.Unmarshal(w.Best, &out.Best); err != nil {
		return fmt.Errorf("early stopping's best loss: %w", err)
	}
	*s = out
	return nil
}

// State returns what the stopper has seen.
func (e *EarlyStopping) State() StopperState {
	return StopperState{Observed: e.observed, Best: e.best, Bad: e.bad}
}

// SetState continues from a State (of a run being resumed).
func (e *EarlyStopping) SetState(s StopperState) {
	e.observed, e.best, e.bad = s.Observed, s.Best, s.Bad
}

// Best returns the best loss observed (NaN if none).
func (e *EarlyStopping) Best() float64 {
	if !e.observed {
		return math.NaN()
	}
	return e.best
}

// MarshalJSON writes a NaN or infinite metric (an AUC with one class only, the loss of
// a diverged run, any metric of an empty split) as null: JSON has neither.
func (m Metrics) MarshalJSON() ([]byte, error) {
	return json.Marshal(metricsJSON{nullFloat(m.Loss), nullFloat(m.Accuracy), nullFloat(m.AUC), m.N})
}

// UnmarshalJSON reads what MarshalJSON writes; a null metric reads back as NaN.
func (m *Metrics) UnmarshalJSON(b []byte) error {
	w := metricsJSON{nullFloat(math.NaN()), nullFloat(math.NaN()), nullFloat(math.NaN()), 0}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*m = Metrics{Loss: float64(w.Loss), Accuracy: float64(w.Accuracy), AUC: float64(w.AUC), N: w.N}
	return nil
}

// metricsJSON is Metrics on the wire.
type metricsJSON struct {
	Loss     nullFloat `json:"loss"`
	Accuracy nullFloat `json:"accuracy"`
	AUC      nullFloat `json:"auc"`
	N        int       `json:"n"`
}
