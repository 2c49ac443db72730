package kernels

import (
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/support/exceptions"
)

// Linear returns x·w + b for x [..., K], w [K, H] and b [H] (nil for no bias), like
// torch.nn.functional.linear with the weight stored transposed ([in, out]).
func Linear(x, w, b *graph.Node) *graph.Node { return LinearSum([]*graph.Node{x}, []*graph.Node{w}, b) }

// LinearSum returns Σᵢ xs[i]·ws[i] + b: xs[i] [..., Kᵢ] with the same leading axes,
// ws[i] [Kᵢ, H], b [H] or nil. It equals Linear of the concatenated inputs and weights
// without materialising the concatenation.
//
// Its gradient is hand-written (see withVJP) so that on the go backend no large
// operand is transposed: dxᵢ = v·wᵢᵀ uses the transposed-RHS matmul layout, and dwᵢ is
// computed from one transposition of the (usually narrower) adjoint v.
func LinearSum(xs, ws []*graph.Node, b *graph.Node) *graph.Node {
	if len(xs) == 0 || len(xs) != len(ws) {
		exceptions.Panicf("kernels.LinearSum: %d inputs and %d weights", len(xs), len(ws))
	}
	lead := xs[0].Shape().Dimensions[:xs[0].Rank()-1]
	m := 1
	for _, d := range lead {
		m *= d
	}
	h := ws[0].Shape().Dim(-1)
	for i := range xs {
		k := xs[i].Shape().Dim(-1)
		if ws[i].Rank() != 2 || ws[i].Shape().Dim(0) != k || ws[i].Shape().Dim(1) != h {
			exceptions.Panicf("kernels.LinearSum: input %d %s does not match weight %s (want [%d, %d])",
				i, xs[i].Shape(), ws[i].Shape(), k, h)
		}
		if xs[i].Shape().Size() != m*k {
			exceptions.Panicf("kernels.LinearSum: input %d %s: leading axes differ from %v", i, xs[i].Shape(), lead)
		}
	}
	if b != nil && (b.Rank() != 1 || b.Shape().Dim(0) != h) {
		exceptions.Panicf("kernels.LinearSum: bias %s, want [%d]", b.Shape(), h)
	}
	n := len(xs)
	inputs := make([]*graph.Node, 0, 2*n+1)
	for _, x := range xs {
		inputs = append(inputs, graph.Reshape(x, m, x.Shape().Dim(-1)))
	}
	inputs = append(inputs, ws...)
	if b != nil {
		inputs = append(inputs, b)
	}
	y := withVJP(inputs,
		func(ins []*graph.Node) *graph.Node {
			var y *graph.Node
			for i := range n {
				p := graph.MatMul(ins[i], ins[n+i])
				if y == nil {
					y = p
				} else {
					y = graph.Add(y, p)
				}
			}
			if b != nil {
				y = graph.Add(y, graph.InsertAxes(ins[2*n], 0))
			}
			return y
		},
		func(_, v *graph.Node) []*graph.Node {
			grads := make([]*graph.Node, len(inputs))
			var vT *graph.Node // [H, M], built on first use
			for i := range n {
				x, w := inputs[i], inputs[n+i]
				k := x.Shape().Dim(1)
				grads[i] = graph.DotGeneral(v, []int{1}, nil, w, []int{1}, nil) // [M, K]
				if m*k <= m*h+k*h {
					grads[n+i] = graph.MatMul(graph.Transpose(x, 0, 1), v)
				} else {
					if vT == nil {
						vT = graph.Transpose(v, 0, 1)
					}
					grads[n+i] = graph.Transpose(graph.MatMul(vT, x), 0, 1)
				}
			}
			if b != nil {
				grads[2*n] = sumRows(v)
			}
			return grads
		})
	outDims := append(append([]int{}, lead...), h)
	return graph.Reshape(y, outDims...)
}
