package augment

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/kernels"
	"github.com/graphloom/graphloom/models"
	"github.com/graphloom/graphloom/models/train"
)

// walkGraphs returns count subgraph-like graphs of minN…maxN nodes: a spanning chain
// plus random extra pairs, FACT or SYNONYM, each edge in both directions.
func walkGraphs(rng *rand.Rand, dim, count, minN, maxN int) []*kernels.Graph {
	var gs []*kernels.Graph
	for range count {
		n := minN + rng.IntN(maxN-minN+1)
		g := &kernels.Graph{NumNodes: n, NodeType: make([]int32, n), X: make([]float32, n*dim)}
		for i := range g.X {
			if rng.IntN(4) == 0 {
				g.X[i] = float32(rng.NormFloat64())
			}
		}
		add := func(u, v int32, rel int32) {
			g.Src = append(g.Src, u, v)
			g.Dst = append(g.Dst, v, u)
			g.EdgeType = append(g.EdgeType, rel, rel)
		}
		for i := 1; i < n; i++ {
			add(int32(rng.IntN(i)), int32(i), 0)
		}
		for range n / 2 {
			add(int32(rng.IntN(n)), int32(rng.IntN(n)), int32(rng.IntN(walkRelations)))
		}
		gs = append(gs, g)
	}
	return gs
}

func variableValues(t *testing.T, v *model.Variable) []float32 {
	t.Helper()
	val, err := v.Value()
	require.NoError(t, err)
	return tensors.MustCopyFlatData[float32](val)
}

// TestRGCNScorerMatchesReferenceLayout checks that the scorer's tiled batches with two
// declared relations compute what the reference layout computes (sequential batches,
// all three relations): the same logits, the same loss, and after an Adam step the same
// logits again, with the ENTITY_CHUNK weights untouched as in the reference.
func TestRGCNScorerMatchesReferenceLayout(t *testing.T) {
	eng, err := engine.New(engine.Config{Backend: "go"})
	require.NoError(t, err)
	defer eng.Close()
	const dim = 12
	cfg := DefaultConfig()
	cfg.Hidden, cfg.Dropout = 16, 0
	cfg.WalksPerRoot = 30 // subgraphs up to 91 nodes: 128-row tiles too
	rng := rand.New(rand.NewPCG(3, 4))

	for _, tc := range []struct {
		name   string
		graphs []*kernels.Graph
		tile   int
	}{
		{"small graphs, 64-row tiles", walkGraphs(rng, dim, 24, 3, 40), 64},
		{"a graph over 64 nodes, 128-row tiles", append(walkGraphs(rng, dim, 10, 3, 30), walkGraphs(rng, dim, 2, 65, 91)...), 128},
	} {
		t.Run(tc.name, func(t *testing.T) {
			labels := make([]float32, len(tc.graphs))
			for i := range labels {
				labels[i] = float32(i % 2)
			}
			sc, err := NewRGCNScorer(eng, dim, cfg)
			require.NoError(t, err)
			b, err := sc.shapes.batch(tc.graphs)
			require.NoError(t, err)
			assert.Equal(t, tc.tile, b.Layout.TileSize)

			ref, err := models.NewRGCNClassifier(model.NewStore(), scorerModelConfig(dim, cfg))
			require.NoError(t, err)
			refTrainer, err := train.New(eng, ref, scorerTrainConfig(cfg))
			require.NoError(t, err)
			refBk, err := kernels.NewBucketer(kernels.BucketerConfig{
				Spec:    kernels.Spec{FeatDim: dim, NumRelations: numRel, NumNodeTypes: 3},
				Buckets: []kernels.Bucket{{Nodes: 2048, Edges: 8192, Graphs: 64}},
			})
			require.NoError(t, err)
			refBatch, err := refBk.Batch(tc.graphs)
			require.NoError(t, err)

			near := func(want, got []float32, tol float64, what string) {
				t.Helper()
				require.Len(t, got, len(want))
				for i := range want {
					assert.InDelta(t, want[i], got[i], tol*math.Max(1, math.Abs(float64(want[i]))), "%s %d", what, i)
				}
			}
			want, err := refTrainer.Predict(refBatch)
			require.NoError(t, err)
			got, err := sc.Logits(tc.graphs)
			require.NoError(t, err)
			near(want, got, 1e-4, "logit")

			conv := func(m *models.RGCNClassifier) *model.Variable {
				for _, v := range m.Variables() {
					if strings.HasSuffix(v.Path(), "conv0/weight") {
						return v
					}
				}
				t.Fatal("no conv0/weight")
				return nil
			}
			before := variableValues(t, conv(sc.m))
			refStep, err := refTrainer.Step(train.Example{Batch: refBatch, Labels: labels})
			require.NoError(t, err)
			loss, err := sc.TrainStep(tc.graphs, labels)
			require.NoError(t, err)
			assert.InDelta(t, refStep.Loss, loss, 1e-5)
			want, err = refTrainer.Predict(refBatch)
			require.NoError(t, err)
			got, err = sc.Logits(tc.graphs)
			require.NoError(t, err)
			near(want, got, 1e-3, "logit after a step")
			after := variableValues(t, conv(sc.m))
			h := cfg.Hidden * cfg.Hidden
			assert.Equal(t, before[2*h:], after[2*h:], "ENTITY_CHUNK weights have no edges and stay as initialised")
			assert.NotEqual(t, before[:h], after[:h], "FACT weights were updated")
		})
	}
}

// TestBatchShapes checks tile choice, fitted shapes and the ladder that always fits.
func TestBatchShapes(t *testing.T) {
	const dim = 4
	cfg := DefaultConfig()
	cfg.WalksPerRoot = 30
	s, err := newBatchShapes(kernels.Spec{FeatDim: dim, NumRelations: walkRelations, NumNodeTypes: 1}, cfg)
	require.NoError(t, err)
	require.Len(t, s.tiers, 2, "the largest subgraph (1 + 30 walks × 3 hops = 91 nodes) needs 128-row tiles")
	rng := rand.New(rand.NewPCG(5, 6))

	b, err := s.batch(walkGraphs(rng, dim, 5, 3, 64))
	require.NoError(t, err)
	assert.Equal(t, 64, b.Layout.TileSize)
	b, err = s.batch(walkGraphs(rng, dim, 5, 65, 91))
	require.NoError(t, err)
	assert.Equal(t, 128, b.Layout.TileSize)
	_, err = s.batch(walkGraphs(rng, dim, 1, 129, 129))
	assert.ErrorContains(t, err, "exceeds the largest tile")

	// The worst training batch (every view of every root at the largest size) fits the ladder.
	worst := (cleanPerGroup + 2) * cfg.TrainRoots
	b, err = s.batch(walkGraphs(rng, dim, worst, 91, 91))
	require.NoError(t, err)
	assert.Equal(t, worst*128, b.Bucket.Nodes)

	// Batches like the fitted samples land in fitted shapes with little padding.
	var samples [][]*kernels.Graph
	for range 8 {
		samples = append(samples, walkGraphs(rng, dim, 360+rng.IntN(24), 3, 40))
	}
	require.NoError(t, s.fit(samples))
	require.NoError(t, s.fit([][]*kernels.Graph{walkGraphs(rng, dim, 64, 3, 30)}), "a second family adds its own shapes")
	fitted := map[kernels.Bucket]bool{}
	for _, bk := range s.tiers[0].fitShapes {
		fitted[bk] = true
	}
	for _, gs := range samples {
		b, err := s.batch(gs)
		require.NoError(t, err)
		assert.True(t, fitted[b.Bucket], "bucket %v is a fitted one", b.Bucket)
		assert.Less(t, float64(b.Bucket.Nodes), 1.2*float64(b.NumNodes), "padding")
	}
}
