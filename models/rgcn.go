package models

import (
	"errors"
	"fmt"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/graphloom/graphloom/kernels"
)

// RGCNKind names RGCNClassifier in checkpoints.
const RGCNKind = "rgcn_classifier"

// RGCNConfig holds every knob of an RGCNClassifier. Defaults follow CrossAug's
// PyGSubgraphMissingnessClassifier.
type RGCNConfig struct {
	InputDim     int     `json:"input_dim"`      // node feature width (embedding size)
	Hidden       int     `json:"hidden"`         // width of every R-GCN layer; CrossAug: 256
	Layers       int     `json:"layers"`         // R-GCN layers; CrossAug: 2
	NumRelations int     `json:"num_relations"`  // edge types; CrossAug: 3
	NumNodeTypes int     `json:"num_node_types"` // node-type embedding rows; 0 = none; CrossAug: 3
	NumBases     int     `json:"num_bases"`      // basis decomposition; 0 = off (PyG default)
	Dropout      float64 `json:"dropout"`        // between layers and in the head; CrossAug: 0.1
	HeadHidden   int     `json:"head_hidden"`    // MLP head width; CrossAug: 256
	Seed         uint64  `json:"seed"`           // weight initialisation seed
}

// DefaultRGCNConfig returns CrossAug's scorer settings for node features of width
// inputDim.
func DefaultRGCNConfig(inputDim int) RGCNConfig {
	return RGCNConfig{InputDim: inputDim, Hidden: 256, Layers: 2, NumRelations: 3, NumNodeTypes: 3,
		Dropout: 0.1, HeadHidden: 256, Seed: 42}
}

// Validate checks the configuration.
func (c RGCNConfig) Validate() error {
	switch {
	case c.InputDim < 1 || c.Hidden < 1 || c.HeadHidden < 1:
		return fmt.Errorf("models: rgcn: widths must be ≥ 1 (input %d, hidden %d, head %d)", c.InputDim, c.Hidden, c.HeadHidden)
	case c.Layers < 1:
		return fmt.Errorf("models: rgcn: Layers %d < 1", c.Layers)
	case c.NumRelations < 1:
		return fmt.Errorf("models: rgcn: NumRelations %d < 1", c.NumRelations)
	case c.NumNodeTypes < 0 || c.NumBases < 0:
		return errors.New("models: rgcn: NumNodeTypes and NumBases must be ≥ 0")
	case c.Dropout < 0 || c.Dropout >= 1:
		return fmt.Errorf("models: rgcn: Dropout %g not in [0, 1)", c.Dropout)
	}
	return nil
}

// RGCNClassifier scores whole graphs:
//
//	h = Linear(InputDim→Hidden)(x) + Embedding(NumNodeTypes, Hidden)(node_type)
//	repeat Layers times: h = LayerNorm(GELU(RGCNConv(h))), dropout between layers
//	logit = Linear(Hidden→1)(Dropout(GELU(Linear(2·Hidden→HeadHidden)(mean_pool(h) ‖ max_pool(h)))))
//
// which is CrossAug's PyGSubgraphMissingnessClassifier with the default config.
type RGCNClassifier struct {
	cfg    RGCNConfig
	store  *model.Store
	vars   []*model.Variable
	inProj *Linear
	types  *Embedding
	convs  []*RGCN
	norms  []*LayerNorm
	head1  *Linear
	head2  *Linear
}

// NewRGCNClassifier creates the model's variables in store under scope "/rgcn".
func NewRGCNClassifier(store *model.Store, cfg RGCNConfig) (*RGCNClassifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := NewParams(store.RootScope().In("rgcn"), cfg.Seed)
	m := &RGCNClassifier{cfg: cfg, store: store}
	m.inProj = NewLinear(p.Sub("in_proj"), cfg.InputDim, cfg.Hidden, true)
	if cfg.NumNodeTypes > 0 {
		m.types = NewEmbedding(p.Sub("node_type"), cfg.NumNodeTypes, cfg.Hidden)
	}
	for l := range cfg.Layers {
		m.convs = append(m.convs, NewRGCN(p.Sub(fmt.Sprintf("conv%d", l)), cfg.Hidden, cfg.Hidden, cfg.NumRelations, cfg.NumBases))
		m.norms = append(m.norms, NewLayerNorm(p.Sub(fmt.Sprintf("norm%d", l)), cfg.Hidden))
	}
	m.head1 = NewLinear(p.Sub("head1"), 2*cfg.Hidden, cfg.HeadHidden, true)
	m.head2 = NewLinear(p.Sub("head2"), cfg.HeadHidden, 1, true)
	if err := p.Err(); err != nil {
		return nil, err
	}
	m.vars = p.Variables()
	return m, nil
}

// Kind implements Checkpointable.
func (m *RGCNClassifier) Kind() string { return RGCNKind }

// Config returns the model configuration.
func (m *RGCNClassifier) Config() RGCNConfig { return m.cfg }

// ConfigValue implements Checkpointable.
func (m *RGCNClassifier) ConfigValue() any { return m.cfg }

// Store returns the variable store.
func (m *RGCNClassifier) Store() *model.Store { return m.store }

// Variables returns the model weights in a fixed order.
func (m *RGCNClassifier) Variables() []*model.Variable { return m.vars }

// CheckBatch reports whether batches of spec fit the model. A spec may declare fewer
// relations than the model has: its edges use only the first spec.NumRelations
// relations, and the layers skip the others (see RGCN.Apply).
func (m *RGCNClassifier) CheckBatch(spec kernels.Spec) error {
	if spec.FeatDim != m.cfg.InputDim || spec.NumRelations < 1 || spec.NumRelations > m.cfg.NumRelations ||
		(m.cfg.NumNodeTypes > 0 && spec.NumNodeTypes > m.cfg.NumNodeTypes) {
		return fmt.Errorf("models: rgcn: batch spec %+v does not fit config (input %d, %d relations, %d node types)",
			spec, m.cfg.InputDim, m.cfg.NumRelations, m.cfg.NumNodeTypes)
	}
	return nil
}

// Embed returns the node embeddings after the last R-GCN layer, [N, Hidden].
func (m *RGCNClassifier) Embed(b *kernels.BatchNodes, training bool) *graph.Node {
	h := m.inProj.Apply(b.X)
	if m.types != nil {
		h = graph.Add(h, m.types.Apply(b.NodeType))
	}
	for l, conv := range m.convs {
		h = m.norms[l].Apply(kernels.GELU(conv.Apply(b, h)))
		if training && l < len(m.convs)-1 {
			h = kernels.Dropout(m.store, h, m.cfg.Dropout)
		}
	}
	return h
}

// Logits returns one logit per graph slot, [G].
func (m *RGCNClassifier) Logits(b *kernels.BatchNodes, training bool) *graph.Node {
	h := m.Embed(b, training)
	pooled := graph.Concatenate([]*graph.Node{kernels.MeanPool(b, h), kernels.MaxPool(b, h)}, 1)
	z := kernels.GELU(m.head1.Apply(pooled))
	if training {
		z = kernels.Dropout(m.store, z, m.cfg.Dropout)
	}
	return graph.Reshape(m.head2.Apply(z), b.NumGraphs())
}
