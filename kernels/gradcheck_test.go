package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/graphloom/graphloom/engine"
	"github.com/stretchr/testify/require"
)

// gradParam is one differentiable input of a gradient check: value is a []float64,
// [][]float64 or [][][]float64 that the reference loss reads and the check perturbs.
type gradParam struct {
	name  string
	value any
	rows  []int // for matrices: only entries of these rows are checked (nil = all)
}

// entries returns pointers to the entries of v in row-major order.
func entries(v any) []*float64 {
	var out []*float64
	switch x := v.(type) {
	case []float64:
		for i := range x {
			out = append(out, &x[i])
		}
	case [][]float64:
		for _, r := range x {
			out = append(out, entries(r)...)
		}
	case [][][]float64:
		for _, m := range x {
			out = append(out, entries(m)...)
		}
	default:
		panic(fmt.Sprintf("entries: %T", v))
	}
	return out
}

// checkGradients compares GoMLX's float64 gradients of loss(build) with central finite
// differences of refLoss, on a sample of entries of each parameter. fixed are the
// non-differentiated inputs (e.g. the batch tensors); build gets fixed then params.
func checkGradients(t *testing.T, e *engine.Engine, rng *rand.Rand, fixed []*tensors.Tensor, params []gradParam,
	build func(in []*graph.Node) *graph.Node, refLoss func() float64) {
	t.Helper()
	inputs := append([]*tensors.Tensor{}, fixed...)
	for _, p := range params {
		inputs = append(inputs, tensorOf(dtypes.Float64, p.value))
	}
	nf := len(fixed)
	outs := run(t, e, func(in []*graph.Node) []*graph.Node {
		loss := build(in)
		grads := graph.Gradient(loss, in[nf:]...)
		return append([]*graph.Node{loss}, grads...)
	}, inputs...)
	want := refLoss()
	got := flat64(outs[0])[0]
	// Batch weights such as 1/deg are float32 data, hence ~1e-8 relative differences.
	require.InDelta(t, want, got, 1e-6*math.Max(1, math.Abs(want)), "loss vs reference")

	const h = 1e-5
	for pi, p := range params {
		grad := flat64(outs[1+pi])
		ptrs := entries(p.value)
		require.Len(t, grad, len(ptrs), p.name)
		candidates := make([]int, 0, len(ptrs))
		if m, ok := p.value.([][]float64); ok && p.rows != nil {
			w := width(m)
			for _, r := range p.rows {
				for c := range w {
					candidates = append(candidates, r*w+c)
				}
			}
		} else {
			for i := range ptrs {
				candidates = append(candidates, i)
			}
		}
		rng.Shuffle(len(candidates), func(i, j int) { candidates[i], candidates[j] = candidates[j], candidates[i] })
		for _, idx := range candidates[:min(len(candidates), 8)] {
			orig := *ptrs[idx]
			*ptrs[idx] = orig + h
			lp := refLoss()
			*ptrs[idx] = orig - h
			lm := refLoss()
			*ptrs[idx] = orig
			fd := (lp - lm) / (2 * h)
			require.InDeltaf(t, fd, grad[idx], 1e-6*math.Max(1, math.Abs(fd)), "%s[%d]: finite difference %g, gradient %g", p.name, idx, fd, grad[idx])
		}
	}
}

// projection returns a random [n][w] matrix that is zero on the given padding rows, so
// Σ out⊙P only sees real rows.
func projection(rng *rand.Rand, mask []float32, w int) [][]float64 {
	p := randMat(rng, len(mask), w, 1)
	for i, m := range mask {
		if m == 0 {
			for j := range p[i] {
				p[i][j] = 0
			}
		}
	}
	return p
}

// realRows lists the rows with mask set.
func realRows(mask []float32) []int {
	var out []int
	for i, m := range mask {
		if m != 0 {
			out = append(out, i)
		}
	}
	return out
}

// dot sums a⊙b over the rows of a reference output placed at the graph's rows of p.
func dotRows(out [][]float64, p [][]float64, offset int) float64 {
	s := 0.0
	for i, row := range out {
		for j, v := range row {
			s += v * p[offset+i][j]
		}
	}
	return s
}

// graphRows returns rows [off, off+n) of x as a matrix sharing x's storage.
func graphRows(x [][]float64, off, n int) [][]float64 { return x[off : off+n] }
