package augment

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/models/train"
)

// TestPartitionAroundKeepsTheTestRegion checks that an ensemble member's partition
// keeps member 0's test region exactly and deals the rest anew into train and
// validation.
func TestPartitionAroundKeepsTheTestRegion(t *testing.T) {
	ix := chainIndex(t)
	g := newMinerGraph(ix, DefaultConfig())
	base := g.partition(0.15, 0.15, 0, 7)
	m := g.partitionAround(base, 0.15, 0.15, 0, 99)
	var val, train, moved, test int
	for u := range g.adj {
		if len(g.adj[u]) == 0 {
			continue
		}
		assert.Equal(t, base[u] == splitTest, m[u] == splitTest, "entity %d", u)
		switch m[u] {
		case splitVal:
			val++
		case splitTrain:
			train++
		case splitTest:
			test++
		}
		if base[u] != splitTest && base[u] != m[u] {
			moved++
		}
	}
	assert.Positive(t, test)
	assert.Positive(t, val)
	assert.Greater(t, train, val)
	assert.Positive(t, moved, "another seed deals train and validation differently")
}

// TestEnsembleMeanOfCalibratedProbabilities checks the ensemble score against a hand
// computation: members with logits 0 and 1, scaled by (1, 0) and (2, −1), give
// (σ(0) + σ(1))/2.
func TestEnsembleMeanOfCalibratedProbabilities(t *testing.T) {
	e := &ensemble{calib: []train.Platt{{A: 1}, {A: 2, B: -1}}}
	assert.InDelta(t, (0.5+0.7310585786300049)/2, e.prob([]float32{0, 1}), 1e-12)
}

// seededScorer is fakeScorer that remembers the seed it was made with.
type seededScorer struct {
	fakeScorer
	seed int64
}

// TestObtainEnsemble trains (fake) members through the real pipeline: each gets its
// own seed, all are tested on the same test views, each is calibrated on its own
// validation split, and the checkpoint brings the members and calibration back.
func TestObtainEnsemble(t *testing.T) {
	ix := chainIndex(t)
	opts := testOptions(nil)
	opts.Config.Ensemble = 3
	var seeds []int64
	opts.NewScorer = func(_ int, c Config) (Scorer, error) {
		seeds = append(seeds, c.Seed)
		return &seededScorer{seed: c.Seed}, nil
	}
	loads := 0
	opts.LoadScorer = func(string) (Scorer, error) { loads++; return &fakeScorer{}, nil }
	opts.Checkpoint = filepath.Join(t.TempDir(), "ix.scorer")
	g := newMinerGraph(ix, opts.Config)
	feat, err := newFeaturizer(ix, opts.Config.NodeFeatures)
	require.NoError(t, err)
	e, tr, err := obtainScorer(context.Background(), ix, g, feat, g.rootCandidates(), opts)
	require.NoError(t, err)
	s := opts.Config.Seed
	assert.Equal(t, []int64{s, s + 1000003, s + 2000006}, seeds)
	require.Len(t, e.members, 3)
	require.Len(t, tr.Members, 3)
	require.Len(t, tr.Calibration, 3)
	for _, m := range tr.Members {
		assert.Equal(t, tr.Members[0].TestViews, m.TestViews, "one shared test split")
		assert.Equal(t, tr.Members[0].SplitNodes[splitTest], m.SplitNodes[splitTest])
	}
	for _, x := range []float64{tr.TestECE, tr.TestECECalibrated} {
		assert.GreaterOrEqual(t, x, 0.0)
		assert.LessOrEqual(t, x, 1.0)
	}

	e2, tr2, err := obtainScorer(context.Background(), ix, g, feat, g.rootCandidates(), opts)
	require.NoError(t, err)
	assert.True(t, tr2.Reused)
	assert.Equal(t, 3, loads)
	assert.Equal(t, e.calib, e2.calib)
}
