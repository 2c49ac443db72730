package augment

import (
	"bytes"
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
)

// TestSummariseStability checks the report's figures against ones worked by hand.
func TestSummariseStability(t *testing.T) {
	runs := []StabilityRun{
		{TestAUC: 0.6, TestAUCSE: 0.1, BestShortcut: 0.5, AboveThreshold: 10, ECE: 0.4, ECECalibrated: 0.1, Selected: []string{"a", "b", "c"}},
		{TestAUC: 0.8, TestAUCSE: 0.1, BestShortcut: 0.5, AboveThreshold: 14, ECE: 0.2, ECECalibrated: 0.3, Selected: []string{"b", "c", "d"}},
		{TestAUC: 0.7, TestAUCSE: 0.1, BestShortcut: 0.5, AboveThreshold: 12, ECE: 0.3, ECECalibrated: 0.1, Selected: []string{"c"}},
	}
	rep := summariseStability(StabilityOverSeed, runs)
	assert.InDelta(t, 0.7, rep.TestAUC[0], 1e-12)
	assert.InDelta(t, 0.1, rep.TestAUC[1], 1e-12, "sample sd of 0.6, 0.8, 0.7")
	assert.InDelta(t, 12, rep.AboveThreshold[0], 1e-12)
	assert.InDelta(t, 2, rep.AboveThreshold[1], 1e-12)
	assert.InDelta(t, 2.0/12, rep.AboveDeviation, 1e-12, "10 and 14 lie 2 from the mean 12")
	assert.InDelta(t, 0.5, rep.BestShortcut[0], 1e-12)
	assert.Zero(t, rep.BestShortcut[1])
	// {a,b,c}·{b,c,d} 2/4, {a,b,c}·{c} 1/3, {b,c,d}·{c} 1/3.
	assert.InDelta(t, (0.5+1.0/3+1.0/3)/3, rep.Jaccard, 1e-12)
	assert.InDelta(t, 1.0/3, rep.JaccardMin, 1e-12)
	assert.Equal(t, 1, rep.ECEHigher, "the second run's ECE rose with calibration")

	one := summariseStability(StabilityOverSplit, runs[:1])
	assert.Equal(t, 1.0, one.Jaccard)
	assert.Zero(t, one.TestAUC[1])
	assert.Equal(t, 1.0, setJaccard(nil, nil))
	assert.Equal(t, 0.0, setJaccard([]string{"a"}, []string{"b"}))
	assert.False(t, math.IsNaN(summariseStability(StabilityOverSeed, []StabilityRun{{}, {}}).AboveDeviation), "no subgraph ≥ θ in any run")
}

// TestStabilityRunsThePlannedCommand checks that the report runs the planned command
// once per seed, gives the seed to the training or to the data sample as asked, trains
// every run (no checkpoint) and leaves the index as it was.
func TestStabilityRunsThePlannedCommand(t *testing.T) {
	ix := chainIndex(t)
	var before bytes.Buffer
	require.NoError(t, graphio.Write(&before, ix))
	for _, over := range []string{StabilityOverSeed, StabilityOverSplit} {
		t.Run(over, func(t *testing.T) {
			opts := testOptions(nil)
			opts.Config.Ensemble = 1
			opts.Checkpoint = t.TempDir() + "/must-not-be-written.scorer"
			type seen struct{ seed, split int64 }
			var made []seen
			opts.NewScorer = func(_ int, c Config) (Scorer, error) {
				made = append(made, seen{c.Seed, c.SplitSeed})
				return &fakeScorer{}, nil
			}
			rep, err := Stability(context.Background(), ix, []int64{5, 6, 7}, over, opts)
			require.NoError(t, err)
			require.Len(t, rep.Runs, 3)
			require.Len(t, made, 3, "one training a run")
			for i, s := range []int64{5, 6, 7} {
				assert.Equal(t, s, rep.Runs[i].Seed)
				if over == StabilityOverSeed {
					assert.Equal(t, seen{s, opts.Config.SplitSeed}, made[i])
				} else {
					assert.Equal(t, seen{opts.Config.Seed, s}, made[i])
				}
				assert.Positive(t, rep.Runs[i].Sampled)
				assert.IsIncreasing(t, rep.Runs[i].Selected, "sorted, without repeats")
			}
			// The fake scorer ranks by size alone, whatever the seed: the same selection.
			assert.Equal(t, 1.0, rep.Jaccard)
			assert.NoFileExists(t, opts.Checkpoint)
		})
	}
	var after bytes.Buffer
	require.NoError(t, graphio.Write(&after, ix))
	assert.True(t, bytes.Equal(before.Bytes(), after.Bytes()), "the index is not changed")

	opts := testOptions(nil)
	for _, tc := range []struct {
		seeds []int64
		over  string
		tweak func(*Options)
		want  string
	}{
		{nil, StabilityOverSeed, nil, "no seeds"},
		{[]int64{1}, "seeds", nil, `stability over "seeds"`},
		{[]int64{1}, StabilityOverSeed, func(o *Options) { o.Config.RandomSelector = true }, "train none"},
	} {
		o := opts
		if tc.tweak != nil {
			tc.tweak(&o)
		}
		_, err := Stability(context.Background(), ix, tc.seeds, tc.over, o)
		assert.ErrorContains(t, err, tc.want)
	}
}
