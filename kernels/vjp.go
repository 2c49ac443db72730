package kernels

import (
	"github.com/gomlx/gomlx/core/graph"
)

// withVJP returns fwd(inputs) with a hand-written reverse-mode gradient: bwd receives
// the output and its adjoint v and returns one gradient per input (nil where an input
// needs none). GoMLX still builds the automatic gradient of fwd's ops, but nothing
// consumes it, so the backends drop it as dead code.
//
// This exists for speed: the go backend's DotGeneral transposes operands whose
// contracting axis is not innermost, and those transposes cost more than the matrix
// products themselves, so the kernels spell out gradient products in layouts that need
// no transposition.
func withVJP(inputs []*graph.Node, fwd func(ins []*graph.Node) *graph.Node, bwd func(out, v *graph.Node) []*graph.Node) *graph.Node {
	var (
		out   *graph.Node
		adj   *graph.Node
		grads []*graph.Node
		done  bool
	)
	wrapped := make([]*graph.Node, len(inputs))
	for i, x := range inputs {
		wrapped[i] = graph.IdentityWithCustomGradient(x, func(x, _ *graph.Node) *graph.Node {
			if !done {
				done = true
				if adj == nil {
					adj = graph.ZerosLike(out)
				}
				grads = bwd(out, adj)
			}
			if i >= len(grads) || grads[i] == nil {
				return graph.ZerosLike(x)
			}
			return grads[i]
		})
	}
	out = fwd(wrapped)
	return graph.IdentityWithCustomGradient(out, func(_, v *graph.Node) *graph.Node {
		adj, done = v, false
		return v
	})
}
