package models

import (
	"fmt"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// RankerKind names a LinearRanker's executables and checkpoints.
const RankerKind = "ranker"

// LinearRanker scores a candidate from its features x [F] and, when gated, its
// question's gate features z [G]: s = Σⱼ (wⱼ + Σ_g Vⱼg z_g) xⱼ — a linear ranker whose
// weights each question's own features move (the learned fusion of `graphloom
// calibrate`). Without a gate V is absent and s = w·x.
type LinearRanker struct {
	store    *model.Store
	w, v     *model.Variable
	vars     []*model.Variable
	features int
	gates    int // 0: no gate
}

// NewLinearRanker creates a ranker over features features with init as its starting
// weights w (len features) and, when gates > 0, a zero gate matrix V [features, gates]:
// it starts as the ranking init defines.
func NewLinearRanker(init []float32, gates int) (*LinearRanker, error) {
	if len(init) == 0 || gates < 0 {
		return nil, fmt.Errorf("models: ranker: %d features, %d gates", len(init), gates)
	}
	store := model.NewStore()
	p := NewParams(store.RootScope().In(RankerKind), 1)
	r := &LinearRanker{store: store, features: len(init), gates: gates}
	r.w = p.Values("w", true, init, len(init))
	if gates > 0 {
		r.v = p.Fill("v", true, 0, len(init), gates)
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	r.vars = p.Variables()
	return r, nil
}

// Kind implements train.Task.
func (r *LinearRanker) Kind() string { return RankerKind }

// Store implements train.Task.
func (r *LinearRanker) Store() *model.Store { return r.store }

// Variables implements train.Task.
func (r *LinearRanker) Variables() []*model.Variable { return r.vars }

// Score returns the scores [P] of candidates x [P, F] whose questions have gate
// features z [P, G] (ignored without a gate).
func (r *LinearRanker) Score(scope *model.Scope, x, z *graph.Node) *graph.Node {
	g := x.Graph()
	w := graph.ExpandAxes(r.w.ValueGraph(g), 0) // [1, F]
	if r.gates > 0 {
		w = graph.Add(w, graph.Einsum("pg,fg->pf", z, r.v.ValueGraph(g))) // [P, F]
	}
	return graph.ReduceSum(graph.Mul(x, w), -1)
}

// Weights returns w [F] and, when gated, V [F][G] as float64.
func (r *LinearRanker) Weights() (w []float64, v [][]float64, err error) {
	read := func(x *model.Variable) ([]float32, error) {
		t, err := x.Value()
		if err != nil {
			return nil, fmt.Errorf("models: ranker %s: %w", x.Path(), err)
		}
		return tensors.MustCopyFlatData[float32](t), nil
	}
	ws, err := read(r.w)
	if err != nil {
		return nil, nil, err
	}
	for _, x := range ws {
		w = append(w, float64(x))
	}
	if r.gates > 0 {
		vs, err := read(r.v)
		if err != nil {
			return nil, nil, err
		}
		for j := range r.features {
			row := make([]float64, r.gates)
			for g := range row {
				row[g] = float64(vs[j*r.gates+g])
			}
			v = append(v, row)
		}
	}
	return w, v, nil
}
