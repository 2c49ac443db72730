package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// randomColumn returns n distinct indices below rows, ascending, and their values.
func randomColumn(rng *rand.Rand, rows, n int) ([]int32, []float32) {
	idx := make([]int32, 0, n)
	for _, i := range rng.Perm(rows)[:n] {
		idx = append(idx, int32(i))
	}
	slices.Sort(idx)
	vals := make([]float32, n)
	for k := range vals {
		vals[k] = float32(rng.NormFloat64())
	}
	return idx, vals
}

// AddScaledAt gives the scalar loop's bits on every kernel path the CPU offers, on
// columns around the blocks of 8 and 16 and with an infinite weight.
func TestAddScaledAtMatchesScalarBits(t *testing.T) {
	for _, path := range CPUKernels() {
		rng := rand.New(rand.NewPCG(3, 4))
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100, 1000, 4099} {
			rows := 2*n + 7
			out := make([]float32, rows)
			want := make([]float32, rows)
			for i := range out {
				out[i] = float32(rng.NormFloat64())
				want[i] = out[i]
			}
			for c := range 5 {
				idx, vals := randomColumn(rng, rows, n)
				w := float32(rng.NormFloat64())
				if c == 4 {
					w = float32(math.Inf(1)) // infinities and NaNs go where the scalar loop puts them
				}
				addScaledAt(path, out, idx, vals, w)
				for k, i := range idx {
					want[i] += float32(vals[k] * w)
				}
			}
			for i := range out {
				if math.Float32bits(out[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%v n=%d: out[%d] = %v, want %v", path, n, i, out[i], want[i])
				}
			}
		}
	}
}

// An index out of range panics as out[i] does, whether it falls in a vector block or
// the tail, on every kernel path, and the entries before its block are added.
func TestAddScaledAtPanicsOutOfRange(t *testing.T) {
	for _, path := range CPUKernels() {
		for _, bad := range []int32{-1, 40, 1 << 30, -1 << 31} {
			for _, at := range []int{3, 12, 20, 33} { // in the first block of 8 or 16, the second, the tail
				out := make([]float32, 40)
				idx := make([]int32, 40)
				for i := range idx {
					idx[i] = int32(i)
				}
				idx[at] = bad
				assert.Panics(t, func() { addScaledAt(path, out, idx, make([]float32, 40), 1) }, "%v index %d at %d", path, bad, at)
			}
		}
	}
}

func BenchmarkAddScaledAt(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	const rows, cols = 120_000, 130
	idx, vals := make([][]int32, cols), make([][]float32, cols)
	for c := range idx {
		idx[c], vals[c] = randomColumn(rng, rows, rows*46/100)
	}
	out := make([]float32, rows)
	kinds := []string{"scalar"}
	for _, p := range CPUKernels()[1:] {
		kinds = append(kinds, p.String())
	}
	for _, kind := range kinds {
		path := KernelsPortable
		for _, p := range CPUKernels() {
			if p.String() == kind {
				path = p
			}
		}
		b.Run(kind, func(b *testing.B) {
			for b.Loop() {
				clear(out)
				for c := range idx {
					addScaledAt(path, out, idx[c], vals[c], 0.5)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*cols*len(idx[0])), "ns/entry")
		})
	}
}
