package train_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/kernels"
	"github.com/graphloom/graphloom/models"
	"github.com/graphloom/graphloom/models/train"
)

// nodeExample is a batch with one 0/1 label per node of each input graph (labels[i]
// has graph i's NumNodes values).
type nodeExample struct {
	batch  *kernels.Batch
	labels [][]float32
}

// Inputs implements train.Batch: the batch tensors, then the node labels and a weight
// of 1 per node row (padding rows 0).
func (ex nodeExample) Inputs() ([]*tensors.Tensor, error) {
	b := ex.batch
	if b == nil {
		return nil, errors.New("nil batch")
	}
	if len(ex.labels) != b.NumGraphs {
		return nil, fmt.Errorf("%d label lists for %d graphs", len(ex.labels), b.NumGraphs)
	}
	n := b.Bucket.Nodes
	labels, weights := make([]float32, n), make([]float32, n)
	for i, ls := range ex.labels {
		off, size := int(b.NodeOffset[i]), int(b.GraphSize[i])
		if len(ls) != size {
			return nil, fmt.Errorf("graph %d: %d labels for %d nodes", i, len(ls), size)
		}
		copy(labels[off:off+size], ls)
		for j := range size {
			weights[off+j] = 1
		}
	}
	return append(b.Tensors(), tensors.FromFlatDataAndDimensions(labels, n), tensors.FromFlatDataAndDimensions(weights, n)), nil
}

// ShapeKey implements train.Batch.
func (ex nodeExample) ShapeKey() string { return ex.batch.ShapeKey() }

// gtNodeTask is the Graph Transformer (Out = 1) as a node-level binary task: one logit
// per node row, masked mean BCE over the real nodes.
type gtNodeTask struct{ *models.GraphTransformer }

func (m gtNodeTask) nodeLogits(b *kernels.BatchNodes, training bool) *graph.Node {
	h := m.Encode(b, training)
	return graph.Reshape(h, h.Shape().Dimensions[0])
}

// LossFn implements train.Task.
func (m gtNodeTask) LossFn(b train.Batch) (func(scope *model.Scope, in []*graph.Node, training bool) *graph.Node, error) {
	ex, ok := b.(nodeExample)
	if !ok || ex.batch == nil {
		return nil, fmt.Errorf("node BCE: want a nodeExample batch, got %T", b)
	}
	spec, layout := ex.batch.Spec, ex.batch.Layout
	nb := kernels.NumInputs(spec, layout)
	return func(scope *model.Scope, in []*graph.Node, training bool) *graph.Node {
		bn, err := kernels.NewBatchNodes(spec, layout, in[:nb])
		if err != nil {
			panic(err)
		}
		w := graph.Mul(graph.ConvertDType(bn.NodeMask, in[nb+1].DType()), in[nb+1])
		return train.MaskedBCE(m.nodeLogits(bn, training), in[nb], w)
	}, nil
}

// newNodeExample draws community graphs whose node labels are the community (features
// point to it through heavy noise; neighbours, mostly of the same community, tell).
func newNodeExample(t *testing.T, rng *rand.Rand, bk *kernels.Bucketer, numGraphs int) nodeExample {
	t.Helper()
	var gs []*kernels.Graph
	var labels [][]float32
	for range numGraphs {
		g := communityGraph(rng, false)
		ls := make([]float32, g.NumNodes)
		for i := range ls {
			ls[i] = float32(g.NodeType[i])
			g.NodeType[i] = 0 // the label is not an input
		}
		gs = append(gs, g)
		labels = append(labels, ls)
	}
	b, err := bk.Batch(gs)
	require.NoError(t, err)
	return nodeExample{batch: b, labels: labels}
}

// TestGraphTransformerNodeTask trains the Graph Transformer through the task
// interface (a node-level MaskedBCE task, FitTask with AdamW, warm-up + cosine, clipping) and checks
// held-out node accuracy.
func TestGraphTransformerNodeTask(t *testing.T) {
	eng, err := engine.New(engine.Config{Backend: "go"})
	require.NoError(t, err)
	defer eng.Close()
	rng := rand.New(rand.NewPCG(8, 8))
	bk := newBucketer(t)
	gt, err := models.NewGraphTransformer(model.NewStore(), models.GTConfig{InputDim: featDim, Hidden: 16, Out: 1, Layers: 2, Heads: 1, Seed: 2})
	require.NoError(t, err)
	cfg := train.DefaultConfig()
	cfg.Optimizer, cfg.WeightDecay, cfg.LearningRate, cfg.MinLearningRate = "adamw", 1e-4, 1e-2, 1e-3
	cfg.WarmupSteps, cfg.TotalSteps, cfg.ClipNorm, cfg.EvalEvery, cfg.Patience = 5, 60, 1, 10, 3
	tr, err := train.NewTask(eng, gtNodeTask{gt}, cfg)
	require.NoError(t, err)
	val := newNodeExample(t, rng, bk, 16)
	accuracy := func(ex nodeExample) (train.Metrics, error) {
		logits, labels, err := nodePredict(eng, gt, ex)
		if err != nil {
			return train.Metrics{}, err
		}
		return train.Evaluate(logits, labels)
	}
	before, err := accuracy(val)
	require.NoError(t, err)
	res, err := tr.FitTask(t.Context(), func(int) ([]train.Batch, error) {
		return []train.Batch{newNodeExample(t, rng, bk, 16)}, nil
	}, func() (train.Metrics, error) { return accuracy(val) })
	require.NoError(t, err)
	after, err := accuracy(newNodeExample(t, rng, bk, 16))
	require.NoError(t, err)
	t.Logf("node accuracy %.3f → %.3f (held out), loss %.3f → %.3f, %d steps", before.Accuracy, after.Accuracy, before.Loss, res.Best.Loss, res.Steps)
	assert.Greater(t, after.Accuracy, 0.9)
	assert.Less(t, res.Best.Loss, before.Loss)
}

// nodePredict runs the model's node logits in evaluation mode and returns them for the
// real nodes, graph after graph, with their labels.
func nodePredict(eng *engine.Engine, m *models.GraphTransformer, ex nodeExample) ([]float32, []float32, error) {
	b := ex.batch
	spec, layout := b.Spec, b.Layout
	nb := kernels.NumInputs(spec, layout)
	exe, err := eng.Exec(engine.Key{Name: m.Kind() + "/predict_nodes", Bucket: b.ShapeKey()}, m.Store(),
		func(scope *model.Scope, in []*graph.Node) []*graph.Node {
			bn, err := kernels.NewBatchNodes(spec, layout, in[:nb])
			if err != nil {
				panic(err)
			}
			scope.Store().SetTraining(bn.Graph(), false)
			return []*graph.Node{gtNodeTask{m}.nodeLogits(bn, false)}
		})
	if err != nil {
		return nil, nil, err
	}
	inputs := b.Tensors()
	outs, err := exe.Call(inputs...)
	engine.Finalize(inputs...)
	if err != nil {
		return nil, nil, err
	}
	defer engine.Finalize(outs...)
	rows := tensors.MustCopyFlatData[float32](outs[0])
	var logits, labels []float32
	for i, ls := range ex.labels {
		r, err := b.NodeRows(rows, 1, i)
		if err != nil {
			return nil, nil, err
		}
		logits = append(logits, r...)
		labels = append(labels, ls...)
	}
	return logits, labels, nil
}
