package models

import (
	"fmt"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// RankerKind names a FeatureRanker's executables and checkpoints.
const RankerKind = "ranker"

// FeatureRanker scores a candidate passage from its features x [F] and its question's
// gate features z [G] (the learned fusion of `graphloom calibrate`):
//
//	s = w·x + Σ_h a_h · relu(U_h·[x; z] + c_h)
//
// a linear ranker w plus, when Hidden > 0, one hidden layer of ReLU units over the
// passage's and the question's features together, so that how much a feature counts
// can turn on the question (ranking by PPR mass where the question links facts, by
// its named entities where it does not) and on the other features (a passage found by
// one ranking and not the other). Without hidden units z is unused and s = w·x.
type FeatureRanker struct {
	store                  *model.Store
	w, ux, uz, c, a        *model.Variable
	vars                   []*model.Variable
	features, gates, units int
}

// NewFeatureRanker creates a ranker over len(init) features starting from the linear
// ranking init (w = init) and, when hidden > 0, hidden ReLU units over the features
// and gates gate features: U [hidden, F+G] ~ N(0, 0.5²) (held as its feature and gate
// columns apart), c = 0 and output weights
// a ~ N(0, 0.1²), drawn from seed — small enough that it starts near init's ranking.
// The columns of U of the features marked unused (may be nil) start at 0: a caller
// that feeds them as 0 in training keeps them 0 (their only gradient is Penalty's),
// so the ranker ignores them when scoring real values too.
func NewFeatureRanker(init []float32, unused []bool, gates, hidden int, seed uint64) (*FeatureRanker, error) {
	if len(init) == 0 || gates < 0 || hidden < 0 || (hidden > 0 && gates == 0) {
		return nil, fmt.Errorf("models: ranker: %d features, %d gates, %d hidden units (hidden units need gates)", len(init), gates, hidden)
	}
	store := model.NewStore()
	p := NewParams(store.RootScope().In(RankerKind), seed)
	r := &FeatureRanker{store: store, features: len(init), gates: gates, units: hidden}
	r.w = p.Values("w", true, init, len(init))
	if hidden > 0 {
		ux := make([]float32, hidden*len(init)) // [hidden, F]
		for i := range ux {
			if j := i % len(init); j >= len(unused) || !unused[j] {
				ux[i] = float32(p.st.rng.NormFloat64() * 0.5)
			}
		}
		r.ux = p.Values("ux", true, ux, hidden, len(init))
		r.uz = p.Normal("uz", 0.5, hidden, gates)
		r.c = p.Fill("c", true, 0, hidden)
		r.a = p.Normal("a", 0.1, hidden)
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	r.vars = p.Variables()
	return r, nil
}

// Kind implements train.Task.
func (r *FeatureRanker) Kind() string { return RankerKind }

// Store implements train.Task.
func (r *FeatureRanker) Store() *model.Store { return r.store }

// Variables implements train.Task.
func (r *FeatureRanker) Variables() []*model.Variable { return r.vars }

// Score returns the scores [P] of candidates given transposed, xt [F, P], whose
// questions' gate features are zt [G, P] (unused without hidden units). The candidates
// lie along the last axis so that neither the scores nor their gradients transpose
// them (the backends' matrix products contract the lhs's last axis).
func (r *FeatureRanker) Score(scope *model.Scope, xt, zt *graph.Node) *graph.Node {
	g := xt.Graph()
	s := graph.MatMul(graph.ExpandAxes(r.w.ValueGraph(g), 0), xt) // [1, P]
	if r.units > 0 {
		h := graph.Add(graph.MatMul(r.ux.ValueGraph(g), xt), graph.MatMul(r.uz.ValueGraph(g), zt)) // [H, P]
		h = graph.Add(h, graph.ExpandAxes(r.c.ValueGraph(g), -1))
		h = graph.Max(h, graph.ZerosLike(h))
		s = graph.Add(s, graph.MatMul(graph.ExpandAxes(r.a.ValueGraph(g), 0), h))
	}
	return graph.Squeeze(s, 0)
}

// Penalty is ½‖w − w₀‖² + ½‖U‖² + ½‖c‖² + ½‖a‖²: the linear weights pulled towards the
// starting ranking w₀ and the hidden units (which start small and random) towards
// adding nothing — the prior that training on few questions shrinks towards.
func (r *FeatureRanker) Penalty(g *graph.Graph, w0 *graph.Node) *graph.Node {
	d := graph.Sub(r.w.ValueGraph(g), w0)
	sum := graph.ReduceAllSum(graph.Mul(d, d))
	if r.units > 0 {
		for _, v := range []*model.Variable{r.ux, r.uz, r.c, r.a} {
			x := v.ValueGraph(g)
			sum = graph.Add(sum, graph.ReduceAllSum(graph.Mul(x, x)))
		}
	}
	return graph.MulScalar(sum, 0.5)
}

// Weights returns w [F] and, with hidden units, U [H][F+G], c [H] and a [H], as float64.
func (r *FeatureRanker) Weights() (w []float64, u [][]float64, c, a []float64, err error) {
	read := func(x *model.Variable) ([]float64, error) {
		t, err := x.Value()
		if err != nil {
			return nil, fmt.Errorf("models: ranker %s: %w", x.Path(), err)
		}
		var out []float64
		for _, v := range tensors.MustCopyFlatData[float32](t) {
			out = append(out, float64(v))
		}
		return out, nil
	}
	if w, err = read(r.w); err != nil || r.units == 0 {
		return w, nil, nil, nil, err
	}
	ux, err := read(r.ux)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	uz, err := read(r.uz)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	for h := range r.units {
		u = append(u, append(ux[h*r.features:(h+1)*r.features:(h+1)*r.features], uz[h*r.gates:(h+1)*r.gates]...))
	}
	if c, err = read(r.c); err != nil {
		return nil, nil, nil, nil, err
	}
	if a, err = read(r.a); err != nil {
		return nil, nil, nil, nil, err
	}
	return w, u, c, a, nil
}
