package train_test

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/kernels"
	"github.com/graphloom/graphloom/models"
	"github.com/graphloom/graphloom/models/train"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const featDim = 8

var spec = kernels.Spec{FeatDim: featDim, NumRelations: 2, NumNodeTypes: 2}

// communityGraph draws a graph of two communities whose node features point in
// opposite directions; edges are mostly within a community. When corrupt, half of the
// edges are rewired to uniformly random endpoints (label 1).
func communityGraph(rng *rand.Rand, corrupt bool) *kernels.Graph {
	n := 12 + rng.IntN(9)
	half := n / 2
	g := &kernels.Graph{NumNodes: n, NodeType: make([]int32, n), X: make([]float32, n*featDim)}
	comm := func(i int) int {
		if i < half {
			return 0
		}
		return 1
	}
	for i := range n {
		g.NodeType[i] = int32(comm(i))
		sign := float32(1 - 2*comm(i))
		for f := range featDim {
			g.X[i*featDim+f] = sign*0.6 + float32(rng.NormFloat64())*0.8
		}
	}
	for range 2 * n {
		s := rng.IntN(n)
		var d int
		if rng.Float64() < 0.1 { // a few edges across communities even when clean
			d = rng.IntN(n)
		} else if comm(s) == 0 {
			d = rng.IntN(half)
		} else {
			d = half + rng.IntN(n-half)
		}
		if corrupt && rng.Float64() < 0.5 {
			d = rng.IntN(n)
		}
		r := int32(rng.IntN(2))
		g.Src = append(g.Src, int32(s), int32(d))
		g.Dst = append(g.Dst, int32(d), int32(s))
		g.EdgeType = append(g.EdgeType, r, r)
	}
	return g
}

func makeExample(t *testing.T, rng *rand.Rand, bk *kernels.Bucketer, numGraphs int) train.Example {
	t.Helper()
	var gs []*kernels.Graph
	var labels []float32
	for range numGraphs {
		corrupt := rng.IntN(2) == 1
		gs = append(gs, communityGraph(rng, corrupt))
		if corrupt {
			labels = append(labels, 1)
		} else {
			labels = append(labels, 0)
		}
	}
	b, err := bk.Batch(gs)
	require.NoError(t, err)
	return train.Example{Batch: b, Labels: labels}
}

func newBucketer(t *testing.T) *kernels.Bucketer {
	t.Helper()
	layout := kernels.Layout{TileSize: 32, GraphsPerTile: 2}
	bk, err := kernels.NewBucketer(kernels.BucketerConfig{Spec: spec, Layout: layout,
		Buckets: []kernels.Bucket{{Nodes: 256, Edges: 1024}, {Nodes: 640, Edges: 2560}}})
	require.NoError(t, err)
	return bk
}

func smallModel(t *testing.T, store *model.Store) *models.RGCNClassifier {
	t.Helper()
	cfg := models.RGCNConfig{InputDim: featDim, Hidden: 16, Layers: 2, NumRelations: 2, NumNodeTypes: 2,
		Dropout: 0.1, HeadHidden: 16, Seed: 3}
	m, err := models.NewRGCNClassifier(store, cfg)
	require.NoError(t, err)
	return m
}

// TestNoRecompilesAcrossMixedBatches warms up each bucket once, then runs 20 steps
// of mixed batch sizes: nothing may compile again.
func TestNoRecompilesAcrossMixedBatches(t *testing.T) {
	eng, err := engine.New(engine.Config{Backend: "go"})
	require.NoError(t, err)
	defer eng.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	bk := newBucketer(t)
	m := smallModel(t, model.NewStore())
	tr, err := train.New(eng, m, train.DefaultConfig())
	require.NoError(t, err)

	small, large := makeExample(t, rng, bk, 6), makeExample(t, rng, bk, 24)
	require.NotEqual(t, small.Batch.Bucket, large.Batch.Bucket, "the two warm-up batches must use different buckets")
	for _, ex := range []train.Example{small, large} {
		_, err := tr.Step(ex)
		require.NoError(t, err)
	}
	warm := eng.Stats()
	assert.Equal(t, int64(2), warm.Compilations, "one train graph per bucket")

	for i := range 20 {
		ex := makeExample(t, rng, bk, 4+rng.IntN(21)) // 4..24 graphs: either bucket
		st, err := tr.Step(ex)
		require.NoError(t, err, "step %d", i)
		assert.Equal(t, 2+i, st.Step)
	}
	after := eng.Stats()
	assert.Equal(t, warm.Compilations, after.Compilations, "no recompilation after warm-up")
	assert.Equal(t, warm.CacheHits+20, after.CacheHits)
}

// TestToyTrainingAndCheckpoint trains the R-GCN classifier to detect rewired edges in
// community graphs, checks held-out accuracy > 0.9, then saves, reloads into a fresh
// store and compares predictions bit for bit.
func TestToyTrainingAndCheckpoint(t *testing.T) {
	eng, err := engine.New(engine.Config{Backend: "go"})
	require.NoError(t, err)
	defer eng.Close()
	rng := rand.New(rand.NewPCG(2, 2))
	bk := newBucketer(t)
	m := smallModel(t, model.NewStore())
	cfg := train.DefaultConfig()
	cfg.Optimizer, cfg.WeightDecay = "adamw", 1e-4
	cfg.LearningRate, cfg.MinLearningRate, cfg.WarmupSteps, cfg.TotalSteps = 1e-2, 1e-3, 10, 160
	cfg.ClipNorm, cfg.EvalEvery, cfg.Patience = 1, 20, 4
	tr, err := train.New(eng, m, cfg)
	require.NoError(t, err)

	var evalSet []train.Example
	for range 3 {
		evalSet = append(evalSet, makeExample(t, rng, bk, 24))
	}
	res, err := tr.Fit(func(int) (train.Example, error) { return makeExample(t, rng, bk, 24), nil }, evalSet)
	require.NoError(t, err)
	require.NotEmpty(t, res.History)
	t.Logf("best at step %d: %s (stopped early: %v)", res.BestStep, res.Best, res.StoppedEarly)

	// Held-out batches never seen in training or model selection.
	var heldOut []train.Example
	for range 3 {
		heldOut = append(heldOut, makeExample(t, rng, bk, 24))
	}
	got, err := tr.Evaluate(heldOut)
	require.NoError(t, err)
	t.Logf("held out: %s", got)
	assert.Greater(t, got.Accuracy, 0.9)
	assert.Greater(t, got.AUC, 0.9)

	// Fit restored the best weights: evaluating the selection set reproduces Best.
	again, err := tr.Evaluate(evalSet)
	require.NoError(t, err)
	assert.InDelta(t, res.Best.Loss, again.Loss, 1e-6)

	path := filepath.Join(t.TempDir(), "scorer.ckpt")
	require.NoError(t, models.Save(path, m, map[string]string{"step": "best"}))
	reloaded, meta, err := models.LoadRGCNClassifier(path, model.NewStore())
	require.NoError(t, err)
	assert.Equal(t, "best", meta["step"])
	assert.Equal(t, m.Config(), reloaded.Config())
	untrained := smallModel(t, model.NewStore())
	for _, ex := range heldOut {
		want, err := train.Predict(eng, m, ex.Batch)
		require.NoError(t, err)
		have, err := train.Predict(eng, reloaded, ex.Batch)
		require.NoError(t, err)
		assert.Equal(t, want, have, "reloaded model predicts identically")
		other, err := train.Predict(eng, untrained, ex.Batch)
		require.NoError(t, err)
		assert.NotEqual(t, want, other, "an untrained model of the same kind predicts differently")
	}
}

func TestStepErrors(t *testing.T) {
	eng, err := engine.New(engine.Config{Backend: "go"})
	require.NoError(t, err)
	defer eng.Close()
	rng := rand.New(rand.NewPCG(4, 4))
	bk := newBucketer(t)
	m := smallModel(t, model.NewStore())
	tr, err := train.New(eng, m, train.DefaultConfig())
	require.NoError(t, err)
	ex := makeExample(t, rng, bk, 4)
	ex.Labels = ex.Labels[:2]
	_, err = tr.Step(ex)
	assert.Error(t, err, "label count mismatch")
	_, err = tr.Step(train.Example{})
	assert.Error(t, err, "nil batch")
	_, err = tr.Fit(func(int) (train.Example, error) { return ex, nil }, nil)
	assert.Error(t, err, "no eval set")
	_, err = train.New(eng, m, train.Config{})
	assert.Error(t, err, "invalid config")
	wide := kernels.Spec{FeatDim: featDim + 1, NumRelations: 2, NumNodeTypes: 2}
	wbk, err := kernels.NewBucketer(kernels.BucketerConfig{Spec: wide, Buckets: []kernels.Bucket{{Nodes: 8, Edges: 8, Graphs: 1}}})
	require.NoError(t, err)
	wb, err := wbk.Batch([]*kernels.Graph{{NumNodes: 1, X: make([]float32, featDim+1)}})
	require.NoError(t, err)
	_, err = tr.Predict(wb)
	assert.Error(t, err, "feature width does not match the model")
}
