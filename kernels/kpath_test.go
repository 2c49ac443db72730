package kernels

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestChooseKernels(t *testing.T) {
	all := []KernelPath{KernelsPortable, KernelsAVX2, KernelsAVX512}
	avx2 := []KernelPath{KernelsPortable, KernelsAVX2}
	none := []KernelPath{KernelsPortable}
	for _, tc := range []struct {
		name    string
		env     string
		offered []KernelPath
		want    KernelPath
		err     string
	}{
		{"unset: the best", "", all, KernelsAVX512, ""},
		{"unset on an AVX2 CPU", "", avx2, KernelsAVX2, ""},
		{"unset without vectors", "", none, KernelsPortable, ""},
		{"avx2 on an AVX-512 CPU", "avx2", all, KernelsAVX2, ""},
		{"portable, spaces and case", " Portable ", all, KernelsPortable, ""},
		{"avx512 on an AVX2 CPU", "avx512", avx2, KernelsAVX2, "has no avx512 kernels; it offers portable, avx2"},
		{"avx2 without vectors", "avx2", none, KernelsPortable, "has no avx2 kernels; it offers portable"},
		{"not a path", "sse", all, KernelsAVX512, `"sse": not a kernel path`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := chooseKernels(tc.env, tc.offered)
			assert.Equal(t, tc.want, got)
			if tc.err == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
			assert.Contains(t, err.Error(), KernelsEnv)
		})
	}
	assert.Equal(t, KernelsPortable, CPUKernels()[0], "every CPU offers the portable kernels")
	assert.Contains(t, CPUKernels(), Kernels())
}

// pprPathOutputs solves every query of resets with Solve, SolveNodes, SolveBatch (the
// float32 start and float64 throughout) and SolveBatchNodes on the given kernel path,
// and returns the results in one list.
func pprPathOutputs(t *testing.T, csr *CSR, cfg PPRConfig, path KernelPath, resets [][]float64, nodes []int32) [][]float64 {
	var out [][]float64
	for _, f64 := range []bool{false, true} {
		c := cfg
		c.Float64Batch = f64
		s, err := newPPRSolver(csr, c, 256) // small chunks: several per graph
		require.NoError(t, err)
		s.path = path
		if !f64 {
			for _, r := range resets {
				x, _, err := s.Solve(r)
				require.NoError(t, err)
				sub, _, err := s.SolveNodes(r, nodes)
				require.NoError(t, err)
				out = append(out, x, sub)
			}
		}
		xs, _, err := s.SolveBatch(resets)
		require.NoError(t, err)
		subs, _, err := s.SolveBatchNodes(resets, nodes)
		require.NoError(t, err)
		out = append(append(out, xs...), subs...)
	}
	return out
}

// pprFusedPath reports whether path runs the vector PPR passes, which fuse
// multiply-adds and return the same bits on every such path.
func pprFusedPath(path KernelPath) bool { return path != KernelsPortable }

func pprHash(xs [][]float64) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for _, x := range xs {
		for _, v := range x {
			u := math.Float64bits(v)
			for i := range b {
				b[i] = byte(u >> (8 * i))
			}
			h.Write(b[:])
		}
	}
	return h.Sum64()
}

// TestPPRKernelPathsAgree is the hash harness over every kernel path this CPU offers:
// 24 random graphs (self-loops, parallel and zero-weight edges, isolated nodes and
// leaves) × three methods × one and two workers, dense, seeded and one-node resets
// in a tile and a half. The AVX2 and AVX-512 paths return the same bits everywhere
// (the hash of every output); the portable path, which does not fuse multiply-adds,
// agrees with them to rounding (float64 throughout) or to the tolerance's bound (the
// float32 start, whose lanes may leave float32 a pass apart).
func TestPPRKernelPathsAgree(t *testing.T) {
	paths := CPUKernels()
	if len(paths) < 2 {
		t.Skip("this CPU or build offers the portable kernels only")
	}
	rng := rand.New(rand.NewPCG(46, 47))
	kinds := []string{"dense", "seeds", "one"}
	for g := range 24 {
		n := 50 + rng.IntN(3000)
		edges := pprRandomEdges(rng, n, (1+g%4)*n, g%7)
		csr := pprCSR(t, n, edges)
		resets := make([][]float64, 12)
		for i := range resets {
			resets[i] = pprRandomReset(rng, n, kinds[(i+g)%len(kinds)])
		}
		nodes := []int32{int32(n - 1), 0, int32(n / 2), int32(n / 3)}
		for _, method := range []PPRMethod{PPRSOR, PPRChebyshev, PPRPower} {
			for _, workers := range []int{1, 2} {
				cfg := PPRConfig{Method: method, Workers: workers}
				msg := fmt.Sprintf("graph %d (n %d) %v workers %d", g, n, method, workers)
				ref := pprPathOutputs(t, csr, cfg, KernelsPortable, resets, nodes)
				var want uint64
				var first KernelPath
				for _, path := range paths[1:] {
					got := pprPathOutputs(t, csr, cfg, path, resets, nodes)
					if want == 0 && pprFusedPath(path) {
						want, first = pprHash(got), path
					} else if pprFusedPath(path) {
						require.Equal(t, want, pprHash(got), "%s: %v's bits are not %v's", msg, path, first)
					}
					require.Len(t, got, len(ref))
					for i := range ref {
						assert.Less(t, pprL1(ref[i], got[i]), 2*DefaultPPRTol/(1-DefaultPPRDamping), "%s %v output %d", msg, path, i)
					}
				}
			}
		}
	}
}
