package train

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestROCAUC(t *testing.T) {
	for _, tc := range []struct {
		name   string
		scores []float64
		pos    []bool
		want   float64
	}{
		{"perfect", []float64{0.1, 0.2, 0.8, 0.9}, []bool{false, false, true, true}, 1},
		{"reversed", []float64{0.9, 0.8, 0.2, 0.1}, []bool{false, false, true, true}, 0},
		{"all tied", []float64{0.5, 0.5, 0.5, 0.5}, []bool{false, true, false, true}, 0.5},
		// Pairs (pos, neg): (0.8,0.3)=1 (0.8,0.8)=½ (0.4,0.3)=1 (0.4,0.8)=0 → 2.5/4.
		{"tie between classes", []float64{0.8, 0.4, 0.3, 0.8}, []bool{true, true, false, false}, 0.625},
		{"one of four pairs wrong", []float64{0.1, 0.3, 0.2, 0.9}, []bool{false, true, true, false}, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, ROCAUC(tc.scores, tc.pos), 1e-12)
		})
	}
	assert.True(t, math.IsNaN(ROCAUC([]float64{1, 2}, []bool{true, true})), "single class")
	assert.True(t, math.IsNaN(ROCAUC([]float64{1}, []bool{true, false})), "length mismatch")
}

// TestROCAUCMatchesPairCount checks the rank formula against the O(n²) definition.
func TestROCAUCMatchesPairCount(t *testing.T) {
	scores := []float64{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9}
	pos := []bool{true, false, true, false, false, true, false, true, true, false, false, true, true, false, true}
	var num, den float64
	for i := range scores {
		for j := range scores {
			if pos[i] && !pos[j] {
				den++
				switch {
				case scores[i] > scores[j]:
					num++
				case scores[i] == scores[j]:
					num += 0.5
				}
			}
		}
	}
	assert.InDelta(t, num/den, ROCAUC(scores, pos), 1e-12)
}

func TestEvaluateMetrics(t *testing.T) {
	m, err := Evaluate([]float32{2, -1, 0.5, -3}, []float32{1, 0, 0, 0})
	require.NoError(t, err)
	assert.Equal(t, 4, m.N)
	assert.InDelta(t, 0.75, m.Accuracy, 1e-12)
	assert.InDelta(t, 1, m.AUC, 1e-12)
	want := (BCEWithLogits(2, 1) + BCEWithLogits(-1, 0) + BCEWithLogits(0.5, 0) + BCEWithLogits(-3, 0)) / 4
	assert.InDelta(t, want, m.Loss, 1e-12)
	assert.InDelta(t, math.Log(2), BCEWithLogits(0, 1), 1e-12)
	assert.InDelta(t, 100, BCEWithLogits(-100, 1), 1e-9, "stable for large logits")
	_, err = Evaluate([]float32{1}, nil)
	assert.Error(t, err)
}

func TestSchedule(t *testing.T) {
	s := Schedule{Base: 1, Min: 0.1, Warmup: 4, Total: 14}
	for _, tc := range []struct {
		step int
		want float64
	}{
		{0, 0.25}, {3, 1}, {4, 1}, {9, 0.55}, {14, 0.1}, {100, 0.1},
	} {
		assert.InDelta(t, tc.want, s.LR(tc.step), 1e-12, "step %d", tc.step)
	}
	constant := Schedule{Base: 0.5, Min: 0.5, Total: 10}
	assert.InDelta(t, 0.5, constant.LR(7), 1e-12)
	// Monotone non-increasing after warm-up.
	for i := 5; i < 20; i++ {
		assert.LessOrEqual(t, s.LR(i), s.LR(i-1)+1e-15)
	}
}

func TestEarlyStopping(t *testing.T) {
	for _, tc := range []struct {
		name     string
		patience int
		minDelta float64
		losses   []float64
		stopAt   int // index of the observation that stops; -1 never
		best     float64
	}{
		{"improving never stops", 2, 0, []float64{5, 4, 3, 2}, -1, 2},
		{"stops after patience", 2, 0, []float64{5, 4, 4.5, 4.2}, 3, 4},
		{"min delta counts small gains as no gain", 2, 0.5, []float64{5, 4.8, 4.7}, 2, 5},
		{"patience 0 never stops", 0, 0, []float64{1, 2, 3, 4, 5}, -1, 1},
		{"NaN never improves", 1, 0, []float64{math.NaN(), 3}, 0, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := EarlyStopping{Patience: tc.patience, MinDelta: tc.minDelta}
			stopped := -1
			for i, l := range tc.losses {
				if _, stop := es.Observe(l); stop && stopped < 0 {
					stopped = i
				}
			}
			assert.Equal(t, tc.stopAt, stopped)
			assert.Equal(t, tc.best, es.Best())
		})
	}
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, DefaultConfig().Validate())
	for _, tc := range []struct {
		name   string
		mutate func(c *Config)
	}{
		{"unknown optimizer", func(c *Config) { c.Optimizer = "sgd" }},
		{"zero lr", func(c *Config) { c.LearningRate = 0 }},
		{"min above base", func(c *Config) { c.MinLearningRate = 1 }},
		{"no steps", func(c *Config) { c.TotalSteps = 0 }},
		{"weight decay with adam", func(c *Config) { c.WeightDecay = 0.1 }},
		{"bad beta", func(c *Config) { c.Beta2 = 1 }},
		{"negative clip", func(c *Config) { c.ClipNorm = -1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mutate(&c)
			assert.Error(t, c.Validate())
		})
	}
}

// twoClassScores returns n scores, every other one positive: standard normal, the
// positives shifted by shift.
func twoClassScores(rng *rand.Rand, n int, shift float64) ([]float64, []bool) {
	scores, pos := make([]float64, n), make([]bool, n)
	for i := range n {
		pos[i] = i%2 == 0
		scores[i] = rng.NormFloat64()
		if pos[i] {
			scores[i] += shift
		}
	}
	return scores, pos
}

// delongSE is DeLong's nonparametric standard error of the ROC-AUC of independent
// items, from its structural components (the independent reference of
// TestClusterBootstrapSE).
func delongSE(scores []float64, positive []bool) float64 {
	v10, v01 := delongComponents(scores, positive)
	return math.Sqrt(sampleVar(v10)/float64(len(v10)) + sampleVar(v01)/float64(len(v01)))
}

// delongDiffSE is DeLong's standard error of ROCAUC(a) − ROCAUC(b) on the same
// independent items: the variance of the differences of the two classifiers'
// structural components (DeLong, DeLong & Clarke-Pearson 1988, their covariance
// formula written as one variance).
func delongDiffSE(a, b []float64, positive []bool) float64 {
	a10, a01 := delongComponents(a, positive)
	b10, b01 := delongComponents(b, positive)
	d10, d01 := make([]float64, len(a10)), make([]float64, len(a01))
	for i := range d10 {
		d10[i] = a10[i] - b10[i]
	}
	for j := range d01 {
		d01[j] = a01[j] - b01[j]
	}
	return math.Sqrt(sampleVar(d10)/float64(len(d10)) + sampleVar(d01)/float64(len(d01)))
}

func sampleVar(v []float64) float64 {
	var m, q float64
	for _, x := range v {
		m += x / float64(len(v))
	}
	for _, x := range v {
		q += (x - m) * (x - m)
	}
	return q / float64(len(v)-1)
}

// delongComponents returns DeLong's structural components: for each positive the
// share of negatives it outscores (ties half), for each negative the share of
// positives that outscore it.
func delongComponents(scores []float64, positive []bool) (v10, v01 []float64) {
	var pos, neg []float64
	for i, s := range scores {
		if positive[i] {
			pos = append(pos, s)
		} else {
			neg = append(neg, s)
		}
	}
	psi := func(x, y float64) float64 {
		switch {
		case x > y:
			return 1
		case x == y:
			return 0.5
		}
		return 0
	}
	v10 = make([]float64, len(pos))
	v01 = make([]float64, len(neg))
	for i, x := range pos {
		for j, y := range neg {
			p := psi(x, y)
			v10[i] += p / float64(len(neg))
			v01[j] += p / float64(len(pos))
		}
	}
	return v10, v01
}

// TestClusterBootstrapSE checks the clustered bootstrap against DeLong's standard
// error: with every item its own cluster they agree; with every item copied five
// times into one cluster the copies add no information, so the standard error stays
// the original's (DeLong's of the originals), where treating the copies as
// independent would shrink it by √5.
func TestClusterBootstrapSE(t *testing.T) {
	const n = 120
	scores, pos := twoClassScores(rand.New(rand.NewSource(3)), n, 1)
	ref := delongSE(scores, pos)
	own := make([]int, n)
	for i := range own {
		own[i] = i
	}
	assert.InEpsilon(t, ref, ClusterBootstrapSE(scores, pos, own, 2000, 1), 0.1, "independent items")

	var rs []float64
	var rp []bool
	var cl, each []int
	for i := range n {
		for range 5 {
			rs, rp = append(rs, scores[i]), append(rp, pos[i])
			cl, each = append(cl, i), append(each, len(each))
		}
	}
	clustered := ClusterBootstrapSE(rs, rp, cl, 2000, 1)
	assert.InEpsilon(t, ref, clustered, 0.1, "copies in one cluster")
	assert.Greater(t, clustered, 1.8*ClusterBootstrapSE(rs, rp, each, 2000, 1), "copies taken as independent")

	assert.True(t, math.IsNaN(ClusterBootstrapSE(scores, pos, make([]int, n), 100, 1)), "one cluster")
	assert.True(t, math.IsNaN(ClusterBootstrapSE(scores, pos[:3], own, 100, 1)), "lengths differ")
}

// TestClusterBootstrapAUCGap checks the paired bootstrap of a ROC-AUC gap against
// DeLong's standard error of the difference of two correlated ROC-AUCs: on
// independent items, and on items copied five times into one cluster each; that
// pairing matters (the unpaired combination of the two standard errors is far
// larger for a rival that shares the classifier's errors); and that the gap is taken
// to the best rival.
func TestClusterBootstrapAUCGap(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	const n = 160
	scores, pos := twoClassScores(rng, n, 1.2)
	var rival, weak []float64
	for _, s := range scores {
		rival = append(rival, s+0.8*rng.NormFloat64()) // shares the classifier's errors
		weak = append(weak, rng.NormFloat64())         // chance
	}
	own := make([]int, n)
	for i := range own {
		own[i] = i
	}
	ref := delongDiffSE(scores, rival, pos)
	gap, se := ClusterBootstrapAUCGap(scores, [][]float64{rival, weak}, pos, own, 2000, 1)
	assert.InDelta(t, ROCAUC(scores, pos)-ROCAUC(rival, pos), gap, 1e-12, "the gap is to the best rival")
	assert.InEpsilon(t, ref, se, 0.15, "independent items: DeLong's %.4f", ref)
	unpaired := math.Hypot(delongSE(scores, pos), delongSE(rival, pos))
	t.Logf("gap %.4f: paired bootstrap SE %.4f, DeLong %.4f, unpaired %.4f", gap, se, ref, unpaired)
	assert.Less(t, se, 0.7*unpaired, "paired (%.4f) against unpaired (%.4f)", se, unpaired)

	var rs, rr, rw []float64
	var rp []bool
	var cl, each []int
	for i := range n {
		for range 5 {
			rs, rr, rw, rp = append(rs, scores[i]), append(rr, rival[i]), append(rw, weak[i]), append(rp, pos[i])
			cl, each = append(cl, i), append(each, len(each))
		}
	}
	_, clustered := ClusterBootstrapAUCGap(rs, [][]float64{rr, rw}, rp, cl, 2000, 1)
	_, flat := ClusterBootstrapAUCGap(rs, [][]float64{rr, rw}, rp, each, 2000, 1)
	assert.InEpsilon(t, ref, clustered, 0.15, "copies in one cluster")
	assert.Greater(t, clustered, 1.8*flat, "copies taken as independent")

	for name, f := range map[string]func() (float64, float64){
		"no rival": func() (float64, float64) { return ClusterBootstrapAUCGap(scores, nil, pos, own, 100, 1) },
		"rival's length": func() (float64, float64) {
			return ClusterBootstrapAUCGap(scores, [][]float64{rival[:9]}, pos, own, 100, 1)
		},
		"one cluster": func() (float64, float64) {
			return ClusterBootstrapAUCGap(scores, [][]float64{rival}, pos, make([]int, n), 100, 1)
		},
	} {
		_, se := f()
		assert.True(t, math.IsNaN(se), name)
	}
}
