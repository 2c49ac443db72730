package augment

import (
	"math"

	"github.com/graphloom/graphloom/models/train"
)

// shortcutBaselines returns the test-split ROC-AUC of classifiers that see only a
// view's structure (shapeFeatures), never its entities: node count, edge count and
// components alone (each oriented on the validation split), a logistic regression on
// the degree statistics and one on every structural feature (both fitted on the
// training views). A scorer that beats them has learned more than the views' shape.
// With evidence features (feat non-nil) one more, root_text, fits a logistic
// regression on what the text says about the root alone (its static evidence
// features: chunks, sentences, co-occurring entities, type, name shape): were the
// corruptions drawn more often from some kinds of root, it would find it. test holds
// each baseline's scores of the test views, in order (for the paired comparison,
// TrainReport.ShortcutGapSE).
func shortcutBaselines(feat *featurizer, trainViews, valViews, testViews []view) (auc map[string]float64, test map[string][]float64) {
	feats := func(vs []view) ([][]float64, []bool) {
		x := make([][]float64, len(vs))
		y := make([]bool, len(vs))
		for i, v := range vs {
			x[i], y[i] = shapeFeatures(v.sg), v.label == 1
		}
		return x, y
	}
	xt, yt := feats(trainViews)
	xv, yv := feats(valViews)
	xs, ys := feats(testViews)
	column := func(x [][]float64, j int, sign float64) []float64 {
		out := make([]float64, len(x))
		for i := range x {
			out[i] = sign * x[i][j]
		}
		return out
	}
	auc, test = map[string]float64{}, map[string][]float64{}
	add := func(name string, scores []float64) {
		auc[name], test[name] = round3(train.ROCAUC(scores, ys)), scores
	}
	for j, name := range shapeFeatureNames[:3] {
		sign := 1.0
		if train.ROCAUC(column(xv, j, 1), yv) < 0.5 {
			sign = -1
		}
		add(name, column(xs, j, sign))
	}
	for name, cols := range map[string][]int{"degree_stats": {3, 4, 5, 6, 7}, "all_structure": {0, 1, 2, 3, 4, 5, 6, 7}} {
		lr := fitLogistic(selectCols(xt, cols), yt)
		add(name, lr.scores(selectCols(xs, cols)))
	}
	if feat != nil && feat.evidence {
		root := func(vs []view) [][]float64 {
			x := make([][]float64, len(vs))
			for i, v := range vs {
				row := feat.static[int(v.sg.root)*numStaticEvidence : int(v.sg.root+1)*numStaticEvidence]
				for _, f := range row {
					x[i] = append(x[i], float64(f))
				}
			}
			return x
		}
		lr := fitLogistic(root(trainViews), yt)
		add("root_text", lr.scores(root(testViews)))
	}
	return auc, test
}

func selectCols(x [][]float64, cols []int) [][]float64 {
	out := make([][]float64, len(x))
	for i, row := range x {
		out[i] = make([]float64, len(cols))
		for k, j := range cols {
			out[i][k] = row[j]
		}
	}
	return out
}

// logistic is a standardised logistic-regression classifier.
type logistic struct{ mean, std, w []float64 }

// fitLogistic fits a logistic regression by full-batch gradient descent (500 steps,
// rate 0.5, L2 1e-3) on standardised features.
func fitLogistic(x [][]float64, y []bool) logistic {
	if len(x) == 0 {
		return logistic{}
	}
	d := len(x[0])
	m := logistic{mean: make([]float64, d), std: make([]float64, d), w: make([]float64, d+1)}
	for _, row := range x {
		for j, v := range row {
			m.mean[j] += v / float64(len(x))
		}
	}
	for _, row := range x {
		for j, v := range row {
			m.std[j] += (v - m.mean[j]) * (v - m.mean[j]) / float64(len(x))
		}
	}
	for j := range m.std {
		m.std[j] = math.Max(math.Sqrt(m.std[j]), 1e-9)
	}
	grad := make([]float64, d+1)
	for range 500 {
		clear(grad)
		for i, row := range x {
			z := m.w[d]
			for j, v := range row {
				z += m.w[j] * (v - m.mean[j]) / m.std[j]
			}
			t := 0.0
			if y[i] {
				t = 1
			}
			r := sigmoid(z) - t
			for j, v := range row {
				grad[j] += r * (v - m.mean[j]) / m.std[j]
			}
			grad[d] += r
		}
		for j := range m.w {
			g := grad[j] / float64(len(x))
			if j < d {
				g += 1e-3 * m.w[j]
			}
			m.w[j] -= 0.5 * g
		}
	}
	return m
}

func (m logistic) scores(x [][]float64) []float64 {
	out := make([]float64, len(x))
	if len(m.w) == 0 {
		return out
	}
	d := len(m.w) - 1
	for i, row := range x {
		z := m.w[d]
		for j, v := range row {
			z += m.w[j] * (v - m.mean[j]) / m.std[j]
		}
		out[i] = z
	}
	return out
}
