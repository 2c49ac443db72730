package train

import (
	"errors"
	"fmt"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/kernels"
)

// NodeModel scores every node row of a batch: [N] logits.
type NodeModel interface {
	Kind() string
	Store() *model.Store
	Variables() []*model.Variable
	NodeLogits(b *kernels.BatchNodes, training bool) *graph.Node
}

// NodeExample is a batch with one 0/1 label per node of each input graph (Labels[i]
// has graph i's NumNodes values); Weights, when set, weigh each node (0 = masked).
type NodeExample struct {
	Batch   *kernels.Batch
	Labels  [][]float32
	Weights [][]float32
}

// rows spreads per-graph node values into the batch's node rows (padding rows 0).
func (ex NodeExample) rows(vals [][]float32, def float32) ([]float32, error) {
	b := ex.Batch
	out := make([]float32, b.Bucket.Nodes)
	if len(vals) != b.NumGraphs {
		return nil, fmt.Errorf("train: %d label lists for %d graphs", len(vals), b.NumGraphs)
	}
	for i, vs := range vals {
		off, n := int(b.NodeOffset[i]), int(b.GraphSize[i])
		if vs == nil {
			for j := range n {
				out[off+j] = def
			}
			continue
		}
		if len(vs) != n {
			return nil, fmt.Errorf("train: graph %d: %d labels for %d nodes", i, len(vs), n)
		}
		copy(out[off:off+n], vs)
	}
	return out, nil
}

// Inputs implements Batch: the batch tensors, node labels and node weights per row.
func (ex NodeExample) Inputs() ([]*tensors.Tensor, error) {
	if ex.Batch == nil {
		return nil, errors.New("train: nil batch")
	}
	labels, err := ex.rows(ex.Labels, 0)
	if err != nil {
		return nil, err
	}
	weights := make([][]float32, ex.Batch.NumGraphs)
	if ex.Weights != nil {
		weights = ex.Weights
	}
	w, err := ex.rows(weights, 1)
	if err != nil {
		return nil, err
	}
	n := len(labels)
	return append(ex.Batch.Tensors(), tensors.FromFlatDataAndDimensions(labels, n), tensors.FromFlatDataAndDimensions(w, n)), nil
}

// ShapeKey implements Batch.
func (ex NodeExample) ShapeKey() string {
	if ex.Batch == nil {
		return ""
	}
	return ex.Batch.ShapeKey()
}

// NodeBCE is the node-level binary task: masked mean BCE of a NodeModel's logits over
// real nodes (NodeMask × weights).
type NodeBCE struct{ NodeModel }

// LossFn implements Task.
func (t NodeBCE) LossFn(b Batch) (func(scope *model.Scope, in []*graph.Node, training bool) *graph.Node, error) {
	ex, ok := b.(NodeExample)
	if !ok || ex.Batch == nil {
		return nil, fmt.Errorf("train: node BCE: want a NodeExample batch, got %T", b)
	}
	spec, layout := ex.Batch.Spec, ex.Batch.Layout
	nb := kernels.NumInputs(spec, layout)
	return func(scope *model.Scope, in []*graph.Node, training bool) *graph.Node {
		bn, err := kernels.NewBatchNodes(spec, layout, in[:nb])
		if err != nil {
			panic(err)
		}
		w := graph.Mul(graph.ConvertDType(bn.NodeMask, in[nb+1].DType()), in[nb+1])
		return MaskedBCE(t.NodeModel.NodeLogits(bn, training), in[nb], w)
	}, nil
}

// PredictNodes runs m in evaluation mode on b and returns the logits of the real
// nodes, graph after graph in input order.
func PredictNodes(eng *engine.Engine, m NodeModel, b *kernels.Batch) ([]float32, error) {
	if b == nil {
		return nil, errors.New("train: predict: nil batch")
	}
	rows, err := evalLogits(eng, m.Kind()+"/predict_nodes", m.Store(), b, m.NodeLogits)
	if err != nil {
		return nil, fmt.Errorf("train: predict nodes: %w", err)
	}
	var out []float32
	for i := range b.NumGraphs {
		r, err := b.NodeRows(rows, 1, i)
		if err != nil {
			return nil, err
		}
		out = append(out, r...)
	}
	return out, nil
}
