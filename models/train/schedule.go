package train

import "math"

// Schedule is a learning-rate schedule: linear warm-up from Base/Warmup to Base over
// the first Warmup steps, then a half-cycle cosine from Base down to Min at step Total
// (and Min after). With Min == Base it is constant after warm-up.
type Schedule struct {
	Base, Min     float64
	Warmup, Total int
}

// LR returns the learning rate for step (0-based).
func (s Schedule) LR(step int) float64 {
	if step < 0 {
		step = 0
	}
	if step < s.Warmup {
		return s.Base * float64(step+1) / float64(s.Warmup)
	}
	if s.Total <= s.Warmup {
		return s.Base
	}
	if step >= s.Total {
		return s.Min
	}
	progress := float64(step-s.Warmup) / float64(s.Total-s.Warmup)
	return s.Min + (s.Base-s.Min)*0.5*(1+math.Cos(math.Pi*progress))
}
