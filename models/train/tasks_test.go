package train_test

import (
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/kernels"
	"github.com/graphloom/graphloom/models"
	"github.com/graphloom/graphloom/models/train"
)

// nodeExample draws community graphs whose node labels are the community (features
// point to it through heavy noise; neighbours, mostly of the same community, tell).
func nodeExample(t *testing.T, rng *rand.Rand, bk *kernels.Bucketer, numGraphs int) train.NodeExample {
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
	return train.NodeExample{Batch: b, Labels: labels}
}

// TestGraphTransformerNodeTask trains the Graph Transformer through the task
// interface (NodeBCE, FitTask with AdamW, warm-up + cosine, clipping) and checks
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
	tr, err := train.NewTask(eng, train.NodeBCE{NodeModel: gt}, cfg)
	require.NoError(t, err)
	val := nodeExample(t, rng, bk, 16)
	accuracy := func(ex train.NodeExample) (train.Metrics, error) {
		logits, labels, err := nodePredict(eng, gt, ex)
		if err != nil {
			return train.Metrics{}, err
		}
		return train.Evaluate(logits, labels)
	}
	before, err := accuracy(val)
	require.NoError(t, err)
	res, err := tr.FitTask(t.Context(), func(int) ([]train.Batch, error) {
		return []train.Batch{nodeExample(t, rng, bk, 16)}, nil
	}, func() (train.Metrics, error) { return accuracy(val) })
	require.NoError(t, err)
	after, err := accuracy(nodeExample(t, rng, bk, 16))
	require.NoError(t, err)
	t.Logf("node accuracy %.3f → %.3f (held out), loss %.3f → %.3f, %d steps", before.Accuracy, after.Accuracy, before.Loss, res.Best.Loss, res.Steps)
	assert.Greater(t, after.Accuracy, 0.9)
	assert.Less(t, res.Best.Loss, before.Loss)
}

// nodePredict runs the model's node logits in evaluation mode and returns them for the
// real nodes with their labels.
func nodePredict(eng *engine.Engine, m *models.GraphTransformer, ex train.NodeExample) ([]float32, []float32, error) {
	logits, err := train.PredictNodes(eng, m, ex.Batch)
	if err != nil {
		return nil, nil, err
	}
	var labels []float32
	for _, ls := range ex.Labels {
		labels = append(labels, ls...)
	}
	return logits, labels, nil
}
