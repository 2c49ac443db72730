package kernels

import (
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
)

// GELU is the exact (erf) GELU, torch.nn.GELU() with approximate="none".
//
// The forward pass is GoMLX's fused GELU. The gradient Φ(x) + x·φ(x) is hand-written:
// it recovers Φ(x) = GELU(x)/x from the forward output instead of evaluating erf a
// second time (erf dominates GELU's cost on the go backend). [GELUForward]'s graph-op
// erf is not used here: on the R-GCN's small tensors its ops and their (unused)
// automatic gradient cost more than they save (the demo's scorer training: 54 → 76 s).
func GELU(x *graph.Node) *graph.Node {
	return withVJP([]*graph.Node{x},
		func(ins []*graph.Node) *graph.Node { return activation.Gelu(ins[0]) },
		func(y, v *graph.Node) []*graph.Node {
			g := x.Graph()
			isZero := graph.Equal(x, graph.ScalarZero(g, x.DType()))
			den := graph.Where(isZero, graph.OnesLike(x), x)
			cdf := graph.Where(isZero, graph.ConstAsDType(g, x.DType(), 0.5), graph.Div(y, den))  // Φ(x)
			pdf := graph.MulScalar(graph.Exp(graph.MulScalar(graph.Square(x), -0.5)), invSqrt2Pi) // φ(x)
			return []*graph.Node{graph.Mul(v, graph.Add(cdf, graph.Mul(x, pdf)))}
		})
}

// GELUForward is the exact GELU x/2·(1 + erf(x/√2)) for frozen networks on large
// tensors (the sentence encoders): for float32 x the erf is [Erf32] (the Go backend's
// own erf evaluates float64 math.Erf per element: at an encoder's [8, 512, 1536]
// GELU takes 106–121 ms this way against 185–208 fused); other dtypes get GoMLX's
// fused GELU. It defines no gradient of its own.
func GELUForward(x *graph.Node) *graph.Node {
	if x.DType() != dtypes.Float32 {
		return activation.Gelu(x)
	}
	return graph.Mul(graph.MulScalar(x, 0.5), graph.AddScalar(Erf32(graph.MulScalar(x, 1/math.Sqrt2)), 1))
}

// Erf32 is erf of a float32 tensor as XLA and Eigen evaluate it: x·P(x²)/Q(x²) for
// x clamped to [−4, 4], P of degree 6 and Q of degree 4 in x² (Eigen's
// generic_fast_erf_float coefficients). Its absolute error against float64 erf is
// below 5e-7 over the float32 line (TestErf32 scans it: 4.2e-7 at |x| ≈ 3.3; float32
// rounding of erf near ±1 is 6e-8). Built from elementwise graph ops, which the Go backend runs
// in parallel, where its Erf op evaluates float64 math.Erf one element at a time;
// XLA fuses the ops into one kernel. Other dtypes get graph.Erf.
func Erf32(x *graph.Node) *graph.Node {
	if x.DType() != dtypes.Float32 {
		return graph.Erf(x)
	}
	g := x.Graph()
	// Max and Min rather than Clamp: GoMLX builds the automatic gradient of GELU's
	// forward ops (see withVJP) and has none for Clamp.
	x = graph.Min(graph.Max(x, graph.Scalar(g, dtypes.Float32, -4)), graph.Scalar(g, dtypes.Float32, 4))
	x2 := graph.Mul(x, x)
	horner := func(coef []float64) *graph.Node {
		r := graph.AddScalar(graph.MulScalar(x2, coef[0]), coef[1])
		for _, c := range coef[2:] {
			r = graph.AddScalar(graph.Mul(r, x2), c)
		}
		return r
	}
	// Numerator and denominator coefficients, highest power first.
	alpha := []float64{-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
		-5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02}
	beta := []float64{-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
		-7.37332916720468e-03, -1.42647390514189e-02}
	return graph.Div(graph.Mul(x, horner(alpha)), horner(beta))
}

// invSqrt2Pi is 1/√(2π).
const invSqrt2Pi = 0.3989422804014327

// ReLU is max(x, 0).
func ReLU(x *graph.Node) *graph.Node { return activation.Relu(x) }

// LayerNorm normalises the last axis of x [..., F] like torch.nn.LayerNorm:
// (x − mean)/√(var + eps)·gamma + beta, with the biased variance. gamma and beta are
// [F] or nil.
//
// Its gradient is hand-written (the standard closed form
// dx = rstd·(g − mean(g) − x̂·mean(g·x̂)) with g = v·gamma), and the column sums for
// dgamma/dbeta are matrix products: far fewer passes over the data than the
// automatic gradient of the decomposed formula.
func LayerNorm(x, gamma, beta *graph.Node, eps float64) *graph.Node {
	f := x.Shape().Dim(-1)
	rows := x.Shape().Size() / f
	x2 := graph.Reshape(x, rows, f)
	inputs := []*graph.Node{x2}
	if gamma != nil {
		inputs = append(inputs, gamma)
	}
	if beta != nil {
		inputs = append(inputs, beta)
	}
	var xhat, rstd *graph.Node
	y := withVJP(inputs,
		func(ins []*graph.Node) *graph.Node {
			xin := ins[0]
			mean := meanCols(xin)
			xc := graph.Sub(xin, mean)
			variance := meanCols(graph.Square(xc))
			rstd = graph.Reciprocal(graph.Sqrt(graph.AddScalar(variance, eps))) // [rows, 1]
			xhat = graph.Mul(xc, rstd)
			out := xhat
			k := 1
			if gamma != nil {
				out = graph.Mul(out, graph.InsertAxes(ins[k], 0))
				k++
			}
			if beta != nil {
				out = graph.Add(out, graph.InsertAxes(ins[k], 0))
			}
			return out
		},
		func(_, v *graph.Node) []*graph.Node {
			grads := make([]*graph.Node, len(inputs))
			gv := v
			k := 1
			if gamma != nil {
				gv = graph.Mul(v, graph.InsertAxes(gamma, 0))
				grads[k] = sumRows(graph.Mul(v, xhat))
				k++
			}
			if beta != nil {
				grads[k] = sumRows(v)
			}
			m1 := meanCols(gv)
			m2 := meanCols(graph.Mul(gv, xhat))
			grads[0] = graph.Mul(graph.Sub(graph.Sub(gv, m1), graph.Mul(xhat, m2)), rstd)
			return grads
		})
	return graph.Reshape(y, x.Shape().Dimensions...)
}

// meanCols returns the row means of m [M, F] as [M, 1], computed as m·(ones[F, 1]/F):
// on the go backend a matrix product is several times faster than a reduction, even
// over the innermost axis.
func meanCols(m *graph.Node) *graph.Node {
	f := m.Shape().Dim(1)
	return graph.MatMul(m, full(m.Graph(), m.DType(), 1/float64(f), f, 1))
}

// sumCols returns the row sums of m [M, F] as [M, 1], computed as m·ones[F, 1] (see
// meanCols).
func sumCols(m *graph.Node) *graph.Node {
	return graph.MatMul(m, graph.Ones(m.Graph(), shapeOf(m.DType(), m.Shape().Dim(1), 1)))
}

// sumSquaresRow is the widest row SumSquares sums in one product.
const sumSquaresRow = 4096

// SumSquares returns Σ x² over every entry of x, as a scalar, by matrix products:
// the squares as rows of x's last axis (rows of 1024 for a long vector that 1024
// divides), each row summed with a ones column (sumCols), then the row sums with a
// ones row (sumRows). On the go backend that is about twice as fast as
// ReduceAllSum(Square(x)), and no float32 accumulator takes more than a row's or a
// column's worth of terms (a single product of x flattened with itself does, and was
// off by 4e-4 on a million entries). A vector longer than sumSquaresRow that 1024
// does not divide falls back to ReduceAllSum.
func SumSquares(x *graph.Node) *graph.Node {
	n := x.Shape().Size()
	k := 1
	if x.Rank() > 0 {
		k = x.Shape().Dim(-1)
	}
	if k > sumSquaresRow && n%1024 == 0 {
		k = 1024
	}
	sq := graph.Square(x)
	if k > sumSquaresRow || k == 0 {
		return graph.ReduceAllSum(sq)
	}
	return graph.Reshape(sumRows(sumCols(graph.Reshape(sq, n/k, k))))
}

// sumRows returns the column sums of m [M, H] as [H], computed as ones[1,M]·m: a
// matrix product is much faster than a reduction over the leading axis on the go
// backend.
func sumRows(m *graph.Node) *graph.Node {
	ones := graph.Ones(m.Graph(), shapeOf(m.DType(), 1, m.Shape().Dim(0)))
	return graph.Reshape(graph.MatMul(ones, m), m.Shape().Dim(1))
}

// BatchNormState is the running statistics of a BatchNorm.
type BatchNormState struct {
	Mean, Var *graph.Node // [F]
}

// BatchNorm is torch.nn.BatchNorm1d over the rows of x [N, F] with mask ([N], nil = all
// rows) selecting the rows that count: padding rows neither enter the statistics nor
// matter. In training it normalises with the masked batch mean and biased variance and
// returns the updated running statistics (momentum as in PyTorch: new = (1−m)·old +
// m·batch, with the unbiased variance); otherwise it uses the running statistics and
// returns them unchanged. gamma/beta are [F] or nil.
func BatchNorm(x, mask, gamma, beta *graph.Node, running BatchNormState, training bool, momentum, eps float64) (*graph.Node, BatchNormState) {
	checkRank("kernels.BatchNorm: x", x, 2)
	var mean, variance *graph.Node
	next := running
	if training {
		var keep, cnt *graph.Node
		masked := func(v *graph.Node) *graph.Node { return v }
		if mask != nil {
			keep = rowMask(mask)
			cnt = graph.ReduceAllSum(asDType(mask, x))
			// Where rather than a product: padding rows never leak into the statistics,
			// even if they hold non-finite values.
			masked = func(v *graph.Node) *graph.Node { return graph.Where(keep, v, graph.ZerosLike(v)) }
		} else {
			cnt = graph.ConstAsDType(x.Graph(), x.DType(), x.Shape().Dim(0))
		}
		safeCnt := graph.MaxScalar(cnt, 1)
		mean = graph.Div(graph.ReduceSum(masked(x), 0), safeCnt)
		centered := graph.Sub(x, graph.InsertAxes(mean, 0))
		variance = graph.Div(graph.ReduceSum(masked(graph.Square(centered)), 0), safeCnt)
		if running.Mean != nil && running.Var != nil {
			unbiased := graph.Mul(variance, graph.Div(cnt, graph.MaxScalar(graph.AddScalar(cnt, -1), 1)))
			// A batch of fewer than 2 rows has no variance to speak of (PyTorch refuses
			// it): the running statistics stay, rather than decay towards 0 and blow
			// up evaluation by 1/√eps.
			mom := graph.MulScalar(asDType(graph.GreaterOrEqual(cnt, graph.Scalar(cnt.Graph(), cnt.DType(), 2)), x), momentum)
			step := func(old, batch *graph.Node) *graph.Node {
				old = graph.StopGradient(old)
				return graph.Add(old, graph.Mul(graph.Sub(graph.StopGradient(batch), old), mom))
			}
			next.Mean = step(running.Mean, mean)
			next.Var = step(running.Var, unbiased)
		}
	} else {
		if running.Mean == nil || running.Var == nil {
			exceptions.Panicf("kernels.BatchNorm: evaluation needs running statistics")
		}
		mean, variance = running.Mean, running.Var
	}
	row := func(v *graph.Node) *graph.Node { return graph.InsertAxes(v, 0) } // [F] → [1, F]
	y := graph.Mul(graph.Sub(x, row(mean)), row(graph.Reciprocal(graph.Sqrt(graph.AddScalar(variance, eps)))))
	if gamma != nil {
		y = graph.Mul(y, row(gamma))
	}
	if beta != nil {
		y = graph.Add(y, row(beta))
	}
	return y, next
}

// Dropout zeroes each entry of x with probability rate and scales the rest by
// 1/(1−rate) (inverted dropout, as torch). The noise comes from the store's random
// state, so a seeded store gives reproducible masks. Call it in training only.
func Dropout(store *model.Store, x *graph.Node, rate float64) *graph.Node {
	if rate <= 0 {
		return x
	}
	if rate >= 1 {
		return graph.ZerosLike(x)
	}
	keep := graph.GreaterOrEqual(store.RandomUniform(x.Graph(), x.Shape()), graph.ConstAsDType(x.Graph(), x.DType(), rate))
	return graph.Where(keep, graph.MulScalar(x, 1/(1-rate)), graph.ZerosLike(x))
}

// Embedding looks up rows of table [V, F] for int ids [N]: [N, F]. Small vocabularies
// (V ≤ 64, e.g. node types) use a one-hot product, which is faster than a gather on the
// go backend; ids outside [0, V) then give zero rows.
func Embedding(table, ids *graph.Node) *graph.Node {
	checkRank("kernels.Embedding: table", table, 2)
	checkRank("kernels.Embedding: ids", ids, 1)
	v := table.Shape().Dim(0)
	if v <= 64 {
		return Linear(graph.OneHot(ids, v, table.DType()), table, nil)
	}
	return graph.Gather(table, graph.InsertAxes(ids, -1))
}

// MaskRows sets rows whose mask is 0 to 0 (mask [N], x [N, …]).
func MaskRows(x, mask *graph.Node) *graph.Node {
	return graph.Where(rowMask(mask), x, graph.ZerosLike(x))
}
