package rerank

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/engine/enginetest"
	"github.com/graphloom/graphloom/kernels"
	"github.com/graphloom/graphloom/models"
)

func values64(t *testing.T, v *model.Variable) ([]float64, []int) {
	t.Helper()
	tv, err := v.Value()
	require.NoError(t, err)
	flat := tensors.MustCopyFlatData[float32](tv)
	out := make([]float64, len(flat))
	for i, x := range flat {
		out[i] = float64(x)
	}
	return out, tv.Shape().Dimensions
}

func mat(flat []float64, rows, cols int) [][]float64 {
	m := make([][]float64, rows)
	for i := range m {
		m[i] = flat[i*cols : (i+1)*cols]
	}
	return m
}

// referenceZ computes Z = Σ_nodes ReLU(RGCNConvRef(X)) in float64 from the encoder's weights.
func referenceZ(t *testing.T, e *Encoder, g *kernels.Graph) []float64 {
	t.Helper()
	f, h, r := e.cfg.FeatDim(), e.cfg.Hidden, e.cfg.NumRelationTypes()
	rel, _ := values64(t, e.conv.Rel)
	root, _ := values64(t, e.conv.Root)
	bias, _ := values64(t, e.conv.Bias)
	w := kernels.RGCNRef{Root: mat(root, f, h), Bias: bias}
	for k := range r {
		w.Rel = append(w.Rel, mat(rel[k*f*h:(k+1)*f*h], f, h))
	}
	x := make([][]float64, g.NumNodes)
	for i := range x {
		x[i] = make([]float64, f)
		for j := range f {
			x[i][j] = float64(g.X[i*f+j])
		}
	}
	out := kernels.RGCNConvRef(g, x, w, r)
	z := make([]float64, h)
	for _, row := range out {
		for j, v := range row {
			z[j] += math.Max(v, 0)
		}
	}
	return z
}

var passages = []string{
	"John Smith founded the Lamplighters Guild in 1852. He was born in Bristol.",
	"Paris is the capital of France. It has many old bridges.",
	"The guild, a small charity, sold salt and fish to the harbour towns.",
	"Mary's ship sank near the rocky coast.",
	"The sailors reached the harbour. They left the harbour at dawn.",
}

func TestEncoderMatchesReference(t *testing.T) {
	eng := enginetest.New(t)
	for _, single := range []bool{false, true} {
		t.Run(fmt.Sprintf("single=%v", single), func(t *testing.T) {
			cfg := DefaultEncoderConfig()
			cfg.Beta, cfg.SingleRelation, cfg.Hidden = 3, single, 16
			enc, err := NewEncoder(eng, cfg)
			require.NoError(t, err)
			p := NewParser()
			var pgs []*PassageGraph
			for _, s := range passages {
				pg, err := p.Parse(s)
				require.NoError(t, err)
				pgs = append(pgs, pg)
			}
			z, err := enc.Encode(pgs)
			require.NoError(t, err)
			require.Len(t, z, len(pgs))
			for i, pg := range pgs {
				ref := referenceZ(t, enc, cfg.Featurize(pg))
				for j := range ref {
					assert.InDelta(t, ref[j], float64(z[i][j]), 1e-4*(1+math.Abs(ref[j])), "passage %d dim %d", i, j)
				}
			}
		})
	}
}

func TestFeaturizeBetaAndRelations(t *testing.T) {
	pg := &PassageGraph{Nodes: []string{"found", "smith", "guild"}, Class: []int32{ClassVerb, ClassEntity, ClassNoun},
		Edges: []Edge{{0, 1, RelSubject}, {0, 2, RelObject}}}
	cfg := DefaultEncoderConfig()
	cfg.Beta = 2.5
	g := cfg.Featurize(pg)
	require.NoError(t, g.Validate(cfg.Spec()))
	f := cfg.FeatDim()
	// Anchors are smith and guild (out-degree 0): their rows are β × the plain features.
	for i, scale := range []float32{1, 2.5, 2.5} {
		wv := wordVector(pg.Nodes[i], cfg.HashDim)
		for j := range cfg.HashDim {
			assert.InDelta(t, scale*wv[j], g.X[i*f+j], 1e-6)
		}
		assert.InDelta(t, scale, g.X[i*f+cfg.HashDim+int(pg.Class[i])], 1e-6)
	}
	// Every edge touches an anchor: weight β, forward type r and inverse type r+R.
	assert.Equal(t, []int32{0, 1, 0, 2}, g.Src)
	assert.Equal(t, []int32{1, 0, 2, 0}, g.Dst)
	assert.Equal(t, []int32{int32(RelSubject), int32(RelSubject + NumRelations), int32(RelObject), int32(RelObject + NumRelations)}, g.EdgeType)
	assert.Equal(t, []float32{2.5, 2.5, 2.5, 2.5}, g.EdgeWeight)
	// β = 1 and the GCN ablation.
	cfg.Beta, cfg.SingleRelation = 1, true
	g = cfg.Featurize(pg)
	assert.Equal(t, []int32{0, 0, 0, 0}, g.EdgeType)
	assert.Equal(t, []float32{1, 1, 1, 1}, g.EdgeWeight)
	assert.Equal(t, 1, cfg.Spec().NumRelations)
	// The same key always has the same word vector; different keys differ.
	assert.Equal(t, wordVector("harbour", 8), wordVector("harbour", 8))
	assert.NotEqual(t, wordVector("harbour", 8), wordVector("harbor", 8))
}

// TestFeaturizeCutsBeforeAnchoring: past MaxNodes the anchors are those of the graph
// the encoder sees. Whole, the graph below has one anchor, the dropped node d (out-degree
// 0); cut to a, b and c, the anchor is b (out-degree 0 there; c, its one edge gone
// with d, is isolated and anchors nothing).
func TestFeaturizeCutsBeforeAnchoring(t *testing.T) {
	pg := &PassageGraph{Nodes: []string{"a", "b", "c", "d"}, Class: []int32{ClassVerb, ClassNoun, ClassNoun, ClassNoun},
		Edges: []Edge{{0, 1, RelSubject}, {1, 3, RelModifier}, {2, 3, RelModifier}}}
	assert.Equal(t, []int{3}, pg.Anchors())
	cfg := DefaultEncoderConfig()
	cfg.Beta, cfg.MaxNodes = 3, 3
	g := cfg.Featurize(pg)
	require.NoError(t, g.Validate(cfg.Spec()))
	require.Equal(t, 3, g.NumNodes)
	f := cfg.FeatDim()
	for i, scale := range []float32{1, 3, 1} {
		assert.InDelta(t, scale, g.X[i*f+cfg.HashDim+int(pg.Class[i])], 1e-6, "node %s", pg.Nodes[i])
	}
	assert.Equal(t, []int32{0, 1}, g.Src)
	assert.Equal(t, []float32{3, 3}, g.EdgeWeight, "a–b touches the anchor b")
	assert.Len(t, pg.Nodes, 4, "the graph itself is left whole")
}

// TestEncodeCompilesPerBucket encodes candidate sets of many sizes: the number of
// compilations is bounded by the buckets, not by the number of distinct sets.
func TestEncodeCompilesPerBucket(t *testing.T) {
	eng := enginetest.New(t)
	enc, err := NewEncoder(eng, DefaultEncoderConfig())
	require.NoError(t, err)
	p := NewParser()
	var pgs []*PassageGraph
	for _, s := range passages {
		pg, err := p.Parse(s)
		require.NoError(t, err)
		pgs = append(pgs, pg)
	}
	before := eng.Stats().Compilations
	for n := 1; n <= 20; n++ {
		set := make([]*PassageGraph, n)
		for i := range set {
			set[i] = pgs[(i*3+n)%len(pgs)]
		}
		z, err := enc.Encode(set)
		require.NoError(t, err)
		require.Len(t, z, n)
	}
	assert.LessOrEqual(t, eng.Stats().Compilations-before, int64(2), "20 candidate-set sizes must share the smallest buckets")
}

func TestEncoderCheckpointRoundTrip(t *testing.T) {
	eng := enginetest.New(t)
	cfg := DefaultEncoderConfig()
	cfg.Hidden, cfg.Seed = 8, 7
	enc, err := NewEncoder(eng, cfg)
	require.NoError(t, err)
	path := t.TempDir() + "/cage.ckpt"
	require.NoError(t, enc.Save(path, map[string]string{"index": "x"}))
	back, err := LoadEncoder(eng, path, func(c *EncoderConfig) { c.Beta = 3 })
	require.NoError(t, err)
	assert.Equal(t, 3.0, back.Config().Beta)
	pg, err := NewParser().Parse(passages[0])
	require.NoError(t, err)
	a, err := enc.Encode([]*PassageGraph{pg})
	require.NoError(t, err)
	cfgB := back.Config()
	cfgB.Beta = cfg.Beta
	back.cfg = cfgB
	b, err := back.Encode([]*PassageGraph{pg})
	require.NoError(t, err)
	assert.Equal(t, a, b)
	_, err = LoadEncoder(eng, path, func(c *EncoderConfig) { c.Hidden = 16 })
	require.Error(t, err)
	assert.Equal(t, "x", back.Meta()["index"], "the caller's metadata is kept")

	// A checkpoint of the weighted-mean R-GCN (no edge_norm record) computes
	// differently now: refused, with what to do.
	old := t.TempDir() + "/old.ckpt"
	require.NoError(t, models.SaveVariables(old, EncoderKind, enc.cfg, enc.store, enc.vars, map[string]string{"index": "x"}))
	_, err = LoadEncoder(eng, old, nil)
	assert.ErrorContains(t, err, "train it again")
}

// TestTrainSeparatesGraphs trains briefly on generated passages: the held-out
// contrastive loss falls and own-view retrieval accuracy rises above its start.
func TestTrainSeparatesGraphs(t *testing.T) {
	eng := enginetest.New(t)
	subjects := []string{"Anna Berg", "Tom Hale", "The guild", "The council", "Peter Voss", "The harbour master", "Clara Moss", "The company"}
	verbs := []string{"built", "sold", "painted", "repaired", "visited", "described", "bought", "mapped"}
	objects := []string{"the lighthouse", "a ship", "the old bridge", "three warehouses", "the northern pier", "a small chapel", "the salt mill", "the canal"}
	places := []string{"Bristol", "Leith", "Dundee", "Hull", "Cork", "Whitby", "Dover", "Poole"}
	var texts []string
	for i := range 96 {
		texts = append(texts, fmt.Sprintf("%s %s %s in %s in %d. It was %s by %s.",
			subjects[i%8], verbs[(i/8)%8], objects[(i*3)%8], places[(i*5)%8], 1800+i, verbs[(i+3)%8], subjects[(i*7+1)%8]))
	}
	cfg := DefaultEncoderConfig()
	cfg.Hidden = 32
	enc, err := NewEncoder(eng, cfg)
	require.NoError(t, err)
	tc := DefaultTrainConfig()
	tc.Pairs, tc.EvalFrac = 16, 0.2
	tc.Train.TotalSteps, tc.Train.WarmupSteps, tc.Train.EvalEvery, tc.Train.Patience = 40, 5, 20, 0
	tc.Train.LearningRate = 3e-3
	res, err := Train(context.Background(), eng, enc, texts, tc, nil)
	require.NoError(t, err)
	require.NotEmpty(t, res.History)
	t.Logf("eval: %v → best %v", res.Initial, res.Best)
	assert.Less(t, res.Best.Loss, res.Initial.Loss-0.3)
	assert.Greater(t, res.Best.Accuracy, 0.5, "own-view retrieval among 16 (chance 1/16)")
}
