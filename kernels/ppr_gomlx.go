package kernels

import (
	"fmt"
	"math"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// PPRGoMLXMinTolFloat32 is the smallest tolerance PPRGoMLX honours in float32: below it
// the L1 residual is rounding noise and the loop would run to MaxIter.
const PPRGoMLXMinTolFloat32 = 1e-6

// PPRGoMLX is the PPR kernel as one GoMLX computation, for accelerators: the same
// z = s + d·Pᵀz iteration as [PPRSolver] (Chebyshev or power, per PPRConfig.Method;
// PPRSOR, the default, runs Chebyshev: a sweep colour by colour has no batched form)
// inside a graph.While loop that stops on the same residual test, with Pᵀz computed
// as Gather over the edge sources and ScatterSum into the (sorted) edge targets. A
// batch of B personalisation vectors is one [N,B] tensor. Use it on a GPU backend: on
// CPU (backend "go") the plain-Go PPRSolver is more than an order of magnitude faster.
//
// Every distinct batch size compiles one executable (cached). Methods must not be
// called concurrently.
type PPRGoMLX struct {
	solver *PPRSolver // validation and reset checks
	dtype  dtypes.DType
	tol    float64
	n      int
	src    *tensors.Tensor // [E,1] int32: column u of each non-zero entry
	dst    *tensors.Tensor // [E,1] int32: row v of each entry, sorted
	coef   *tensors.Tensor // [E,1] dtype: w(v,u)/strength(u)
	exec   *graph.Exec
}

// NewPPRGoMLX validates csr like NewPPRSolver and uploads its edge list for backend.
// dtype is Float32 (the Tol is raised to PPRGoMLXMinTolFloat32 if smaller) or Float64.
func NewPPRGoMLX(backend compute.Backend, csr *CSR, cfg PPRConfig, dtype dtypes.DType) (*PPRGoMLX, error) {
	if backend == nil {
		return nil, fmt.Errorf("kernels: ppr gomlx: nil backend")
	}
	if dtype != dtypes.Float32 && dtype != dtypes.Float64 {
		return nil, fmt.Errorf("kernels: ppr gomlx: dtype %s not supported (want Float32 or Float64)", dtype)
	}
	if cfg.Method == PPRSOR {
		// A colour-by-colour sweep has no batched form: its accelerated parallel
		// counterpart runs instead (the same fixed point and residual test).
		cfg.Method = PPRChebyshev
	}
	s, err := NewPPRSolver(csr, cfg)
	if err != nil {
		return nil, err
	}
	p := &PPRGoMLX{solver: s, dtype: dtype, tol: s.cfg.Tol, n: csr.N}
	if dtype == dtypes.Float32 {
		p.tol = math.Max(p.tol, PPRGoMLXMinTolFloat32)
	}
	var src, dst []int32
	var coef []float64
	strength := csr.Strength()
	for v := 0; v < csr.N; v++ {
		for q := csr.RowPtr[v]; q < csr.RowPtr[v+1]; q++ {
			if w := csr.Val[q]; w > 0 {
				u := csr.Col[q]
				src = append(src, u)
				dst = append(dst, int32(v))
				coef = append(coef, float64(w)/strength[u])
			}
		}
	}
	if len(src) == 0 { // no edges: one inert entry keeps the shapes non-empty
		src, dst, coef = []int32{0}, []int32{0}, []float64{0}
	}
	e := len(src)
	p.src = tensors.FromFlatDataAndDimensions(src, e, 1)
	p.dst = tensors.FromFlatDataAndDimensions(dst, e, 1)
	if dtype == dtypes.Float32 {
		c32 := make([]float32, e)
		for i, c := range coef {
			c32[i] = float32(c)
		}
		p.coef = tensors.FromFlatDataAndDimensions(c32, e, 1)
	} else {
		p.coef = tensors.FromFlatDataAndDimensions(coef, e, 1)
	}
	p.exec, err = graph.NewExec(backend, p.build)
	if err != nil {
		return nil, fmt.Errorf("kernels: ppr gomlx: %w", err)
	}
	return p, nil
}

// build returns the computation: inputs s [N,B], src, dst, coef; outputs the
// normalised scores [N,B], the number of passes (int32) and the last residual.
func (p *PPRGoMLX) build(g *graph.Graph, in []*graph.Node) []*graph.Node {
	s, src, dst, coef := in[0], in[1], in[2], in[3]
	dt := p.dtype
	cfg := p.solver.cfg
	shape := s.Shape()
	e := src.Shape().Dimensions[0]
	msgShape := shapes.Make(dt, e, shape.Dimensions[1])
	coefB := graph.BroadcastToShape(coef, msgShape)
	// Every constant the loop uses is made here, in the main function, and captured by
	// the closures: GoMLX caches scalar constants per graph, so a scalar first made
	// inside one closure and reused in the other would cross function scopes.
	konst := func(v float64) *graph.Node { return graph.ConstAsDType(g, dt, v) }
	zeros := graph.Zeros(g, shape)
	damping := konst(cfg.Damping)
	tol := konst(p.tol)
	one := konst(1)
	rho2 := cfg.Damping * cfg.Damping
	omega2 := konst(1 / (1 - rho2/2))
	rho2over4 := konst(rho2 / 4)
	maxIter := graph.Const(g, int32(cfg.MaxIter))
	zeroI, oneI := graph.Const(g, int32(0)), graph.Const(g, int32(1))
	stateShapes := []shapes.Shape{
		shapes.Make(dtypes.Int32), // k: passes done
		shape,                     // z_{k-1}
		shape,                     // z_k
		shapes.Make(dt),           // ω of the next pass
		shapes.Make(dt),           // residual of the last pass
	}
	params := func(g *graph.Graph) []*graph.Node {
		names := []string{"k", "zprev", "z", "omega", "res"}
		out := make([]*graph.Node, len(names))
		for i, name := range names {
			out[i] = graph.Parameter(g, name, stateShapes[i])
		}
		return out
	}
	cond := graph.NewClosure(g, func(g *graph.Graph) []*graph.Node {
		st := params(g)
		return []*graph.Node{graph.LogicalAnd(graph.LessThan(st[0], maxIter), graph.GreaterOrEqual(st[4], tol))}
	})
	body := graph.NewClosure(g, func(g *graph.Graph) []*graph.Node {
		st := params(g)
		k, zprev, z, omega := st[0], st[1], st[2], st[3]
		msgs := graph.Mul(graph.Gather(z, src), coefB)
		ptz := graph.ScatterSum(zeros, dst, msgs, true, false)
		j := graph.Add(s, graph.Mul(ptz, damping))
		r := graph.ReduceSum(graph.Abs(graph.Sub(j, z)), 0)
		res := graph.ReduceMax(graph.Div(r, graph.ReduceSum(z, 0)))
		znew, omegaNew := j, omega
		if cfg.Method == PPRChebyshev {
			znew = graph.Add(graph.Mul(graph.BroadcastToShape(omega, shape), graph.Sub(j, zprev)), zprev)
			later := graph.Div(one, graph.Sub(one, graph.Mul(omega, rho2over4)))
			omegaNew = graph.Where(graph.Equal(k, zeroI), omega2, later)
		}
		return []*graph.Node{graph.Add(k, oneI), z, znew, omegaNew, res}
	})
	out := graph.While(cond, body, zeroI, zeros, s, one, konst(math.Inf(1)))
	z := out[2]
	x := graph.Div(z, graph.BroadcastToShape(graph.InsertAxes(graph.ReduceSum(z, 0), 0), shape))
	return []*graph.Node{x, out[0], out[4]}
}

// Solve returns the scores for one personalisation vector (see PPRSolver.Solve).
func (p *PPRGoMLX) Solve(reset []float64) ([]float64, PPRStats, error) {
	xs, st, err := p.SolveBatch([][]float64{reset})
	if err != nil {
		return nil, st, err
	}
	return xs[0], st, nil
}

// SolveBatch solves all vectors in one computation; the loop runs until every vector
// has converged, so PPRStats is shared (Residual is the largest).
func (p *PPRGoMLX) SolveBatch(resets [][]float64) ([][]float64, PPRStats, error) {
	b := len(resets)
	if b == 0 {
		return nil, PPRStats{}, nil
	}
	n := p.n
	s64 := make([]float64, n*b)
	for i, r := range resets {
		scale, err := p.solver.resetScale(r)
		if err != nil {
			return nil, PPRStats{}, fmt.Errorf("kernels: ppr gomlx: query %d: %w", i, err)
		}
		for v, x := range r {
			s64[v*b+i] = x * scale
		}
	}
	var sT *tensors.Tensor
	if p.dtype == dtypes.Float32 {
		s32 := make([]float32, len(s64))
		for i, x := range s64 {
			s32[i] = float32(x)
		}
		sT = tensors.FromFlatDataAndDimensions(s32, n, b)
	} else {
		sT = tensors.FromFlatDataAndDimensions(s64, n, b)
	}
	outs, err := p.exec.Call(sT, p.src, p.dst, p.coef)
	if err != nil {
		return nil, PPRStats{}, fmt.Errorf("kernels: ppr gomlx: %w", err)
	}
	defer func() {
		for _, o := range outs {
			_ = o.FinalizeAll()
		}
	}()
	var flat []float64
	var res float64
	if p.dtype == dtypes.Float32 {
		f32, err := tensors.CopyFlatData[float32](outs[0])
		if err != nil {
			return nil, PPRStats{}, fmt.Errorf("kernels: ppr gomlx: reading scores: %w", err)
		}
		flat = make([]float64, len(f32))
		for i, x := range f32 {
			flat[i] = float64(x)
		}
		res = float64(tensors.ToScalar[float32](outs[2]))
	} else {
		if flat, err = tensors.CopyFlatData[float64](outs[0]); err != nil {
			return nil, PPRStats{}, fmt.Errorf("kernels: ppr gomlx: reading scores: %w", err)
		}
		res = tensors.ToScalar[float64](outs[2])
	}
	st := PPRStats{Iterations: int(tensors.ToScalar[int32](outs[1])), Residual: res, Converged: res < p.tol}
	xs := make([][]float64, b)
	for i := range xs {
		x := make([]float64, n)
		for v := range x {
			x[v] = flat[v*b+i]
		}
		xs[i] = x
	}
	return xs, st, nil
}

// Close releases the compiled executables.
func (p *PPRGoMLX) Close() { p.exec.Finalize() }
