package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// pprBenchGraph is the bench/ppr graph shape: 100K nodes, 300K random edges.
func pprBenchGraph(b *testing.B) (*CSR, [][]float64) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, m = 100_000, 300_000
	edges := make([]Edge, m)
	for i := range edges {
		edges[i] = Edge{U: int32(rng.IntN(n)), V: int32(rng.IntN(n)), Weight: float32(0.1 + rng.Float64())}
	}
	csr, err := NewSymmetricCSR(n, edges)
	if err != nil {
		b.Fatal(err)
	}
	resets := make([][]float64, 32)
	for q := range resets {
		resets[q] = pprRandomReset(rng, n, "seeds")
	}
	return csr, resets
}

func BenchmarkPPRSingle(b *testing.B) {
	csr, resets := pprBenchGraph(b)
	for _, workers := range []int{1, 2, -1} {
		s, err := NewPPRSolver(csr, PPRConfig{Workers: max(workers, 1)})
		if err != nil {
			b.Fatal(err)
		}
		if workers < 0 {
			s.path = KernelsPortable
		}
		b.Run(map[int]string{1: "w1", 2: "w2", -1: "w1-portable"}[workers], func(b *testing.B) {
			it := 0
			for i := 0; b.Loop(); i++ {
				_, st, _ := s.Solve(resets[i%len(resets)])
				it += st.Iterations
			}
			b.ReportMetric(float64(it)/float64(b.N), "passes/op")
		})
	}
}

// BenchmarkPPRBatch times SolveBatch on every kernel path the CPU offers
// (PATH/wWORKERS-qQUERIES, -f64 for Float64Batch).
func BenchmarkPPRBatch(b *testing.B) {
	csr, resets := pprBenchGraph(b)
	for _, path := range CPUKernels() {
		for _, workers := range []int{1, 2} {
			for _, f64 := range []bool{false, true} {
				s, err := NewPPRSolver(csr, PPRConfig{Workers: workers, Float64Batch: f64})
				if err != nil {
					b.Fatal(err)
				}
				s.path = path
				for _, q := range []int{8, 32} { // one tile; four tiles
					name := fmt.Sprintf("%v/w%d-q%d", path, workers, q)
					if f64 {
						name += "-f64"
					}
					b.Run(name, func(b *testing.B) {
						for b.Loop() {
							s.SolveBatch(resets[:q])
						}
					})
				}
			}
		}
	}
}
