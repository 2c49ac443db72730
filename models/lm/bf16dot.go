package lm

import (
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
)

// DotGeneral is graph.DotGeneral, except for bf16 operands on the pure-Go backend of
// a CPU without AVX-512: there gomlx compute v0.1.2's AVX2 bf16 matrix kernel gives
// wrong products when the right operand is contracted on its last axis (x·wᵀ, q·kᵀ:
// every projection and attention score; most entries off by up to the result's own
// size). The operands are then widened to float32 and the product rounded back to
// bf16, which is what a bf16 product accumulates in anyway. graphloom's commands
// compute in float32 on that backend (ComputeFor), so this guards the library's bf16
// path (Options.DType without ComputeDType) and the tests of it.
func DotGeneral(lhs *graph.Node, lhsContract, lhsBatch []int, rhs *graph.Node, rhsContract, rhsBatch []int) *graph.Node {
	if lhs.DType() == dtypes.BFloat16 && rhs.DType() == dtypes.BFloat16 && goBackendWithoutAVX512(lhs.Graph()) {
		out := graph.DotGeneral(graph.ConvertDType(lhs, dtypes.Float32), lhsContract, lhsBatch,
			graph.ConvertDType(rhs, dtypes.Float32), rhsContract, rhsBatch)
		return graph.ConvertDType(out, dtypes.BFloat16)
	}
	return graph.DotGeneral(lhs, lhsContract, lhsBatch, rhs, rhsContract, rhsBatch)
}

// goBackendWithoutAVX512 reports whether g runs on the pure-Go backend of a CPU whose
// AVX-512 is absent (or turned off: GODEBUG=cpu.avx512f=off).
func goBackendWithoutAVX512(g *graph.Graph) bool {
	b := g.Backend()
	return b != nil && b.Name() == "Go Backend" && !hasAVX512()
}
