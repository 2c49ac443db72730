package models

import (
	"fmt"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/graphloom/graphloom/kernels"
)

// GTKind names GraphTransformer in checkpoints.
const GTKind = "graph_transformer"

// GTConfig holds every knob of a GraphTransformer. Defaults follow G-Retriever
// (src/model/gnn.py GraphTransformer, src/config.py).
type GTConfig struct {
	InputDim int     `json:"input_dim"` // node feature width; G-Retriever: 1024
	Hidden   int     `json:"hidden"`    // width between layers; 1024
	Out      int     `json:"out"`       // output width; 1024
	Layers   int     `json:"layers"`    // TransformerConv layers (≥ 1); 4
	Heads    int     `json:"heads"`     // attention heads; Hidden and Out divisible by it; 4
	EdgeDim  int     `json:"edge_dim"`  // edge feature width; G-Retriever uses InputDim; 0 = none
	Dropout  float64 `json:"dropout"`   // attention and inter-layer dropout; 0
	Seed     uint64  `json:"seed"`      // weight initialisation seed
	// Norm is the normalisation between layers: GTNormBatch (G-Retriever's
	// BatchNorm1d, the default when empty) or GTNormLayer (seed 004's layer
	// normalisation, after every layer).
	Norm string `json:"norm,omitempty"`
	// Residual adds each layer's input to its output where their widths match (seed
	// 004's residual connections).
	Residual bool `json:"residual,omitempty"`
}

// Normalisations of GTConfig.Norm.
const (
	GTNormBatch = "batch"
	GTNormLayer = "layer"
)

// Encoder profiles (GTProfiles): the Graph Transformer as each source configures it.
const (
	// GTProfileGRetriever is G-Retriever's src/model/gnn.py GraphTransformer: 4
	// TransformerConv layers, 4 heads, BatchNorm1d + ReLU between layers, dropout 0.
	GTProfileGRetriever = "g-retriever"
	// GTProfileSeed004 is seed 004's encoder: 4 layers, 8 heads, residual
	// connections, layer normalisation, dropout 0.1. The paper does not say where the
	// norm sits; graphloom reads it as post-norm: h ← LayerNorm(h + dropout(conv(h))),
	// with ReLU between layers.
	GTProfileSeed004 = "seed004"
)

// GTProfile returns the encoder settings of a profile for width dim (node, edge,
// hidden and output widths all dim, as both sources use).
func GTProfile(name string, dim int) (GTConfig, error) {
	c := DefaultGTConfig()
	c.InputDim, c.Hidden, c.Out, c.EdgeDim = dim, dim, dim, dim
	switch name {
	case GTProfileGRetriever, "":
	case GTProfileSeed004:
		c.Heads, c.Norm, c.Residual, c.Dropout = 8, GTNormLayer, true, 0.1
	default:
		return c, fmt.Errorf("models: gt: encoder profile %q: want %s or %s", name, GTProfileGRetriever, GTProfileSeed004)
	}
	return c, nil
}

// DefaultGTConfig returns G-Retriever's encoder settings.
func DefaultGTConfig() GTConfig {
	return GTConfig{InputDim: 1024, Hidden: 1024, Out: 1024, Layers: 4, Heads: 4, EdgeDim: 1024, Seed: 0}
}

// Validate checks the configuration.
func (c GTConfig) Validate() error {
	switch {
	case c.InputDim < 1 || c.Hidden < 1 || c.Out < 1 || c.Layers < 1 || c.Heads < 1 || c.EdgeDim < 0:
		return fmt.Errorf("models: gt: invalid sizes %+v", c)
	case c.Hidden%c.Heads != 0 || c.Out%c.Heads != 0:
		return fmt.Errorf("models: gt: Hidden %d and Out %d must be divisible by Heads %d", c.Hidden, c.Out, c.Heads)
	case c.Dropout < 0 || c.Dropout >= 1:
		return fmt.Errorf("models: gt: Dropout %g not in [0, 1)", c.Dropout)
	case c.Norm != "" && c.Norm != GTNormBatch && c.Norm != GTNormLayer:
		return fmt.Errorf("models: gt: Norm %q: want %s or %s", c.Norm, GTNormBatch, GTNormLayer)
	}
	return nil
}

// GraphTransformer is G-Retriever's graph encoder: Layers TransformerConv layers
// (heads concatenated, edge features of width EdgeDim on every layer) with
// BatchNorm1d + ReLU + dropout between them, and a mean-pool readout.
type GraphTransformer struct {
	cfg   GTConfig
	store *model.Store
	vars  []*model.Variable
	convs []*Transformer
	norms []*BatchNorm // between layers (GTNormBatch)
	lns   []*LayerNorm // after every layer (GTNormLayer)
}

// NewGraphTransformer creates the model's variables in store under scope "/gt".
func NewGraphTransformer(store *model.Store, cfg GTConfig) (*GraphTransformer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := NewParams(store.RootScope().In("gt"), cfg.Seed)
	m := &GraphTransformer{cfg: cfg, store: store}
	in := cfg.InputDim
	for l := range cfg.Layers {
		out := cfg.Hidden
		if l == cfg.Layers-1 {
			out = cfg.Out
		}
		m.convs = append(m.convs, NewTransformer(p.Sub(fmt.Sprintf("conv%d", l)), TransformerSpec{
			In: in, Out: out / cfg.Heads, Heads: cfg.Heads, EdgeDim: cfg.EdgeDim, Concat: true, RootWeight: true, Dropout: cfg.Dropout,
		}))
		switch {
		case cfg.Norm == GTNormLayer:
			m.lns = append(m.lns, NewLayerNorm(p.Sub(fmt.Sprintf("ln%d", l)), out))
		case l < cfg.Layers-1:
			m.norms = append(m.norms, NewBatchNorm(p.Sub(fmt.Sprintf("bn%d", l)), out))
		}
		in = out
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	m.vars = p.Variables()
	return m, nil
}

// Kind implements Checkpointable.
func (m *GraphTransformer) Kind() string { return GTKind }

// Config returns the configuration.
func (m *GraphTransformer) Config() GTConfig { return m.cfg }

// ConfigValue implements Checkpointable.
func (m *GraphTransformer) ConfigValue() any { return m.cfg }

// Store returns the variable store.
func (m *GraphTransformer) Store() *model.Store { return m.store }

// Variables returns the model weights (including BatchNorm running statistics).
func (m *GraphTransformer) Variables() []*model.Variable { return m.vars }

// Encode returns node embeddings [N, Out]. In training, BatchNorm uses (and updates)
// batch statistics over the real nodes of the batch.
func (m *GraphTransformer) Encode(b *kernels.BatchNodes, training bool) *graph.Node {
	h := b.X
	for l, conv := range m.convs {
		x := h
		h = conv.Apply(b, h, m.store, training)
		if m.cfg.Norm == GTNormLayer { // seed 004: LayerNorm(h + dropout(conv(h))), ReLU between layers
			if training {
				h = kernels.Dropout(m.store, h, m.cfg.Dropout)
			}
			if m.cfg.Residual && x.Shape().Equal(h.Shape()) {
				h = graph.Add(h, x)
			}
			h = m.lns[l].Apply(h)
			if l < len(m.convs)-1 {
				h = kernels.ReLU(h)
			}
			continue
		}
		if m.cfg.Residual && x.Shape().Equal(h.Shape()) {
			h = graph.Add(h, x)
		}
		if l == len(m.convs)-1 {
			break
		}
		h = kernels.ReLU(m.norms[l].Apply(h, b.NodeMask, training))
		if training {
			h = kernels.Dropout(m.store, h, m.cfg.Dropout)
		}
	}
	return h
}

// Readout returns the mean of each graph's node embeddings, [G, Out] (G-Retriever's
// graph token input).
func (m *GraphTransformer) Readout(b *kernels.BatchNodes, training bool) *graph.Node {
	return kernels.MeanPool(b, m.Encode(b, training))
}
