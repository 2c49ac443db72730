package train

import (
	"errors"
	"fmt"
	"math"
)

// Platt is Platt scaling of a classifier's logits: the calibrated probability of a
// logit z is σ(A·z + B). A temperature T is the special case A = 1/T, B = 0; the
// identity is A = 1, B = 0.
type Platt struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

// Prob returns the calibrated probability of logit z.
func (p Platt) Prob(z float64) float64 { return 1 / (1 + math.Exp(-(p.A*z + p.B))) }

// FitPlatt fits Platt scaling to held-out logits and 0/1 labels by Newton's method on
// the mean binary cross-entropy of σ(A·z + B), in float64, with step halving whenever
// a full step does not lower the loss. Labels are used as they are (Platt's 1999 paper
// smooths them to (N₊+1)/(N₊+2) and 1/(N₋+2); the plain maximum-likelihood fit is
// what recovers known parameters). Separable data have no finite optimum: the fit
// then stops after 100 iterations with a large A. It needs both classes.
func FitPlatt(logits, labels []float32) (Platt, error) {
	if len(logits) != len(labels) {
		return Platt{}, fmt.Errorf("train: platt: %d logits for %d labels", len(logits), len(labels))
	}
	var pos int
	for _, y := range labels {
		if y > 0.5 {
			pos++
		}
	}
	if pos == 0 || pos == len(labels) {
		return Platt{}, errors.New("train: platt: need both classes")
	}
	loss := func(a, b float64) float64 {
		var s float64
		for i, z := range logits {
			s += BCEWithLogits(a*float64(z)+b, float64(labels[i]))
		}
		return s / float64(len(logits))
	}
	a, b := 1.0, 0.0
	cur := loss(a, b)
	for range 100 {
		// Gradient and Hessian of the mean BCE in (a, b).
		var ga, gb, haa, hab, hbb float64
		for i, zf := range logits {
			z := float64(zf)
			p := 1 / (1 + math.Exp(-(a*z + b)))
			r, w := p-float64(labels[i]), p*(1-p)
			ga += r * z
			gb += r
			haa += w * z * z
			hab += w * z
			hbb += w
		}
		n := float64(len(logits))
		ga, gb, haa, hab, hbb = ga/n, gb/n, haa/n+1e-12, hab/n, hbb/n+1e-12
		det := haa*hbb - hab*hab
		if !(det > 0) {
			break
		}
		da := (hbb*ga - hab*gb) / det
		db := (haa*gb - hab*ga) / det
		step, improved := 1.0, false
		for range 30 {
			if l := loss(a-step*da, b-step*db); l <= cur {
				a, b, cur, improved = a-step*da, b-step*db, l, true
				break
			}
			step /= 2
		}
		if !improved || math.Abs(step*da)+math.Abs(step*db) < 1e-10 {
			break
		}
	}
	if math.IsNaN(a) || math.IsNaN(b) {
		return Platt{}, errors.New("train: platt: fit diverged")
	}
	return Platt{A: a, B: b}, nil
}

// ECE is the expected calibration error of probabilities against 0/1 labels over
// bins equal-width bins of [0, 1] (a probability of exactly 1 falls in the last):
// Σ_b |B_b|/n · |mean probability in B_b − fraction of positives in B_b|. It returns
// NaN for no predictions.
func ECE(probs []float64, labels []float32, bins int) float64 {
	if len(probs) == 0 || len(probs) != len(labels) || bins < 1 {
		return math.NaN()
	}
	sumP := make([]float64, bins)
	sumY := make([]float64, bins)
	count := make([]float64, bins)
	for i, p := range probs {
		b := min(bins-1, max(0, int(p*float64(bins))))
		sumP[b] += p
		sumY[b] += float64(labels[i])
		count[b]++
	}
	var e float64
	for b := range bins {
		if count[b] > 0 {
			e += math.Abs(sumP[b]-sumY[b]) / float64(len(probs))
		}
	}
	return e
}
