package models

import (
	"math"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/graphloom/graphloom/kernels"
)

// value returns v's value in graph g, or nil for a nil variable.
func value(g *graph.Graph, v *model.Variable) *graph.Node {
	if v == nil {
		return nil
	}
	return v.NodeValue(g)
}

// Linear is torch.nn.Linear with the weight stored [in, out].
type Linear struct {
	W, B *model.Variable
}

// NewLinear creates a Linear initialised like torch (weight and bias uniform in
// ±1/√in).
func NewLinear(p *Params, in, out int, bias bool) *Linear {
	bound := 1 / math.Sqrt(float64(in))
	l := &Linear{W: p.Uniform("weight", bound, in, out)}
	if bias {
		l.B = p.Uniform("bias", bound, out)
	}
	return l
}

// Apply returns x·W + B.
func (l *Linear) Apply(x *graph.Node) *graph.Node {
	g := x.Graph()
	return kernels.Linear(x, value(g, l.W), value(g, l.B))
}

// Embedding is torch.nn.Embedding (N(0,1) initialisation).
type Embedding struct{ Table *model.Variable }

// NewEmbedding creates a [num, dim] embedding table.
func NewEmbedding(p *Params, num, dim int) *Embedding {
	return &Embedding{Table: p.Normal("weight", 1, num, dim)}
}

// Apply looks up int32 ids [N].
func (e *Embedding) Apply(ids *graph.Node) *graph.Node {
	return kernels.Embedding(e.Table.NodeValue(ids.Graph()), ids)
}

// LayerNorm is torch.nn.LayerNorm over the last axis (gamma 1, beta 0, eps 1e-5).
type LayerNorm struct {
	Gamma, Beta *model.Variable
	Eps         float64
}

// NewLayerNorm creates a LayerNorm of width dim.
func NewLayerNorm(p *Params, dim int) *LayerNorm {
	return &LayerNorm{Gamma: p.Fill("weight", true, 1, dim), Beta: p.Fill("bias", true, 0, dim), Eps: 1e-5}
}

// Apply normalises x.
func (l *LayerNorm) Apply(x *graph.Node) *graph.Node {
	g := x.Graph()
	return kernels.LayerNorm(x, value(g, l.Gamma), value(g, l.Beta), l.Eps)
}

// BatchNorm is torch.nn.BatchNorm1d over node rows with a padding mask; the running
// statistics are non-trainable variables updated by training steps.
type BatchNorm struct {
	Gamma, Beta, Mean, Var *model.Variable
	Momentum, Eps          float64
}

// NewBatchNorm creates a BatchNorm of width dim (momentum 0.1, eps 1e-5).
func NewBatchNorm(p *Params, dim int) *BatchNorm {
	return &BatchNorm{
		Gamma: p.Fill("weight", true, 1, dim), Beta: p.Fill("bias", true, 0, dim),
		Mean: p.Fill("running_mean", false, 0, dim), Var: p.Fill("running_var", false, 1, dim),
		Momentum: 0.1, Eps: 1e-5,
	}
}

// Apply normalises x [N, F] over the rows with mask set; in training it also schedules
// the running-statistics update.
func (b *BatchNorm) Apply(x, mask *graph.Node, training bool) *graph.Node {
	g := x.Graph()
	st := kernels.BatchNormState{Mean: value(g, b.Mean), Var: value(g, b.Var)}
	y, next := kernels.BatchNorm(x, mask, value(g, b.Gamma), value(g, b.Beta), st, training, b.Momentum, b.Eps)
	if training {
		b.Mean.SetNodeValue(next.Mean)
		b.Var.SetNodeValue(next.Var)
	}
	return y
}

// RGCN is one PyG RGCNConv layer (mean aggregation, root weight, bias).
type RGCN struct {
	Root, Rel, Basis, Comp, Bias *model.Variable
}

// NewRGCN creates an RGCNConv(in, out, numRelations, num_bases=numBases) initialised
// like PyG (glorot weights, zero bias). numBases 0 means one full matrix per relation.
func NewRGCN(p *Params, in, out, numRelations, numBases int) *RGCN {
	l := &RGCN{}
	if numBases > 0 {
		l.Basis = p.Glorot("weight", numBases, in, out)
		l.Comp = p.Glorot("comp", numRelations, numBases)
	} else {
		l.Rel = p.Glorot("weight", numRelations, in, out)
	}
	l.Root = p.Glorot("root", in, out)
	l.Bias = p.Fill("bias", true, 0, out)
	return l
}

// Apply runs the layer on node features x [N, in].
//
// A batch may declare fewer relations than the layer has (b.Spec.NumRelations < R):
// its edges then never carry the trailing relations, whose messages are 0, so the
// layer uses only the first b.Spec.NumRelations relation weights. The result and the
// gradients are those of the full layer (the skipped weights' gradient is exactly 0),
// at a fraction of the cost.
func (l *RGCN) Apply(b *kernels.BatchNodes, x *graph.Node) *graph.Node {
	g := x.Graph()
	w := kernels.RGCNWeights{
		Root: value(g, l.Root), Rel: value(g, l.Rel), Basis: value(g, l.Basis), Comp: value(g, l.Comp), Bias: value(g, l.Bias),
	}
	r := b.Spec.NumRelations
	if w.Rel != nil && w.Rel.Shape().Dim(0) > r {
		w.Rel = graph.Slice(w.Rel, graph.AxisRange(0, r))
	}
	if w.Comp != nil && w.Comp.Shape().Dim(0) > r {
		w.Comp = graph.Slice(w.Comp, graph.AxisRange(0, r))
	}
	return kernels.RGCNConv(b, x, w)
}

// Transformer is one PyG TransformerConv layer.
type Transformer struct {
	Query, Key, Value, Edge, Skip, Beta *Linear
	Heads                               int
	Concat                              bool
	Dropout                             float64 // attention dropout (training only)
}

// TransformerSpec configures NewTransformer; the fields mirror PyG's arguments.
type TransformerSpec struct {
	In, Out, Heads int     // out_channels per head is Out
	EdgeDim        int     // 0: no edge features
	Concat         bool    // concatenate heads (output Heads·Out) or average them (Out)
	Beta           bool    // PyG beta gate
	RootWeight     bool    // lin_skip
	Dropout        float64 // attention dropout
}

// NewTransformer creates a TransformerConv initialised like PyG (torch Linear init).
func NewTransformer(p *Params, s TransformerSpec) *Transformer {
	hc := s.Heads * s.Out
	l := &Transformer{
		Query: NewLinear(p.Sub("lin_query"), s.In, hc, true),
		Key:   NewLinear(p.Sub("lin_key"), s.In, hc, true),
		Value: NewLinear(p.Sub("lin_value"), s.In, hc, true),
		Heads: s.Heads, Concat: s.Concat, Dropout: s.Dropout,
	}
	if s.EdgeDim > 0 {
		l.Edge = NewLinear(p.Sub("lin_edge"), s.EdgeDim, hc, false)
	}
	width := s.Out
	if s.Concat {
		width = hc
	}
	if s.RootWeight {
		l.Skip = NewLinear(p.Sub("lin_skip"), s.In, width, true)
		if s.Beta {
			l.Beta = NewLinear(p.Sub("lin_beta"), 3*width, 1, false)
		}
	}
	return l
}

// Apply runs the layer; store provides dropout noise when training.
func (l *Transformer) Apply(b *kernels.BatchNodes, x *graph.Node, store *model.Store, training bool) *graph.Node {
	g := x.Graph()
	w := kernels.TransformerWeights{
		Query: value(g, l.Query.W), QueryBias: value(g, l.Query.B),
		Key: value(g, l.Key.W), KeyBias: value(g, l.Key.B),
		Value: value(g, l.Value.W), ValueBias: value(g, l.Value.B),
	}
	if l.Edge != nil {
		w.Edge = value(g, l.Edge.W)
	}
	if l.Skip != nil {
		w.Skip, w.SkipBias = value(g, l.Skip.W), value(g, l.Skip.B)
	}
	if l.Beta != nil {
		w.Beta = value(g, l.Beta.W)
	}
	opt := kernels.TransformerOptions{Heads: l.Heads, Concat: l.Concat}
	if training && l.Dropout > 0 {
		opt.DropAttention = func(a *graph.Node) *graph.Node { return kernels.Dropout(store, a, l.Dropout) }
	}
	return kernels.TransformerConv(b, x, w, opt)
}
