package models

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// Params creates model variables under a scope with deterministic initial values drawn
// from a seeded generator. Sub-scopes share the generator and the list of variables.
type Params struct {
	scope *model.Scope
	st    *paramState
}

type paramState struct {
	rng  *rand.Rand
	vars []*model.Variable
	err  error
}

// NewParams returns a Params creating variables under scope, seeded with seed.
func NewParams(scope *model.Scope, seed uint64) *Params {
	return &Params{scope: scope, st: &paramState{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}}
}

// Sub returns a Params for the named sub-scope.
func (p *Params) Sub(name string) *Params { return &Params{scope: p.scope.In("%s", name), st: p.st} }

// Err returns the first error met while creating variables.
func (p *Params) Err() error { return p.st.err }

// Variables returns every variable created through p or its sub-scopes, in order.
func (p *Params) Variables() []*model.Variable { return p.st.vars }

// create makes a float32 variable from values (nil on an earlier error).
func (p *Params) create(name string, trainable bool, values []float32, dims ...int) *model.Variable {
	if p.st.err != nil {
		return nil
	}
	if p.scope.GetVariable(name) != nil {
		p.st.err = fmt.Errorf("models: variable %s/%s already exists (one model per scope)", p.scope.Scope(), name)
		return nil
	}
	v, err := p.scope.CreateVariable(name, tensors.FromFlatDataAndDimensions(values, dims...))
	if err != nil {
		p.st.err = fmt.Errorf("models: creating variable %s/%s: %w", p.scope.Scope(), name, err)
		return nil
	}
	v.SetTrainable(trainable)
	p.st.vars = append(p.st.vars, v)
	return v
}

func size(dims []int) int {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return n
}

// Uniform creates a trainable variable with entries uniform in [-bound, bound].
func (p *Params) Uniform(name string, bound float64, dims ...int) *model.Variable {
	vals := make([]float32, size(dims))
	for i := range vals {
		vals[i] = float32((2*p.st.rng.Float64() - 1) * bound)
	}
	return p.create(name, true, vals, dims...)
}

// Glorot creates a trainable variable initialised like PyG's glorot: uniform with
// bound √(6/(fan_in+fan_out)) taken from the last two axes.
func (p *Params) Glorot(name string, dims ...int) *model.Variable {
	n := len(dims)
	return p.Uniform(name, math.Sqrt(6/float64(dims[n-2]+dims[n-1])), dims...)
}

// Normal creates a trainable variable with N(0, std²) entries.
func (p *Params) Normal(name string, std float64, dims ...int) *model.Variable {
	vals := make([]float32, size(dims))
	for i := range vals {
		vals[i] = float32(p.st.rng.NormFloat64() * std)
	}
	return p.create(name, true, vals, dims...)
}

// Fill creates a variable with every entry equal to value.
func (p *Params) Fill(name string, trainable bool, value float32, dims ...int) *model.Variable {
	vals := make([]float32, size(dims))
	for i := range vals {
		vals[i] = value
	}
	return p.create(name, trainable, vals, dims...)
}

// Values creates a variable holding values (row-major, shaped dims): a starting point
// a caller chooses, such as a ranker that begins as a known ranking.
func (p *Params) Values(name string, trainable bool, values []float32, dims ...int) *model.Variable {
	if len(values) != size(dims) {
		if p.st.err == nil {
			p.st.err = fmt.Errorf("models: variable %s/%s: %d values for shape %v", p.scope.Scope(), name, len(values), dims)
		}
		return nil
	}
	return p.create(name, trainable, append([]float32(nil), values...), dims...)
}
