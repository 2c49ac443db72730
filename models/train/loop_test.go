package train_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/models"
	"github.com/graphloom/graphloom/models/train"
)

func noDropoutModel(t *testing.T) *models.RGCNClassifier {
	t.Helper()
	m, err := models.NewRGCNClassifier(model.NewStore(), models.RGCNConfig{InputDim: featDim, Hidden: 16, Layers: 2,
		NumRelations: 2, NumNodeTypes: 2, HeadHidden: 16, Seed: 5})
	require.NoError(t, err)
	return m
}

func values(t *testing.T, vs []*model.Variable) [][]float32 {
	t.Helper()
	var out [][]float32
	for _, v := range vs {
		val, err := v.Value()
		require.NoError(t, err)
		out = append(out, tensors.MustCopyFlatData[float32](val))
	}
	return out
}

// TestGradientAccumulation: two micro-batches whose gradients average to g take the
// same step as one batch with gradient g (here: the same batch twice), clipping and
// Adam included.
func TestGradientAccumulation(t *testing.T) {
	eng, err := engine.New(engine.Config{Backend: "go"})
	require.NoError(t, err)
	defer eng.Close()
	ex := makeExample(t, rand.New(rand.NewPCG(4, 4)), newBucketer(t), 12)
	cfg := train.DefaultConfig()
	cfg.ClipNorm = 0.5
	a, b := noDropoutModel(t), noDropoutModel(t)
	require.Equal(t, values(t, a.Variables()), values(t, b.Variables()), "same seed, same init")
	ta, err := train.New(eng, a, cfg)
	require.NoError(t, err)
	tb, err := train.New(eng, b, cfg)
	require.NoError(t, err)
	for range 3 {
		sa, err := ta.StepBatches(ex, ex)
		require.NoError(t, err)
		sb, err := tb.Step(ex)
		require.NoError(t, err)
		assert.InDelta(t, sb.Loss, sa.Loss, 1e-5)
		assert.InDelta(t, sb.GradNorm, sa.GradNorm, 1e-4)
	}
	va, vb := values(t, a.Variables()), values(t, b.Variables())
	for i := range va {
		for j := range va[i] {
			require.InDelta(t, vb[i][j], va[i][j], 1e-5, "variable %s[%d]", a.Variables()[i].Path(), j)
		}
	}
}

// TestKeptBatchTrainsAsItsBatch: a batch kept across steps (train.Keep) gives the same
// tensors at every call, takes the same steps as the batch itself made afresh at each
// step — in one executable and as micro-batches, from equal weights that the steps
// move — and cannot be used after Release.
func TestKeptBatchTrainsAsItsBatch(t *testing.T) {
	eng, err := engine.New(engine.Config{Backend: "go"})
	require.NoError(t, err)
	defer eng.Close()
	ex := makeExample(t, rand.New(rand.NewPCG(6, 6)), newBucketer(t), 12)
	kept, err := train.Keep(ex)
	require.NoError(t, err)
	require.Equal(t, ex.ShapeKey(), kept.ShapeKey())
	again, err := train.Keep(kept)
	require.NoError(t, err)
	require.Same(t, kept, again)
	in1, err := kept.Inputs()
	require.NoError(t, err)
	in2, err := kept.Inputs()
	require.NoError(t, err)
	for i := range in1 {
		require.Same(t, in1[i], in2[i], "input %d", i)
	}
	cfg := train.DefaultConfig()
	a, b := noDropoutModel(t), noDropoutModel(t)
	start := values(t, a.Variables())
	require.Equal(t, start, values(t, b.Variables()), "same seed, same init")
	ta, err := train.New(eng, a, cfg)
	require.NoError(t, err)
	tb, err := train.New(eng, b, cfg)
	require.NoError(t, err)
	for step := range 4 {
		var sa, sb train.StepStats
		if step%2 == 0 {
			sa, err = ta.StepBatches(kept)
			require.NoError(t, err)
			sb, err = tb.StepBatches(ex)
		} else {
			sa, err = ta.StepBatches(kept, kept)
			require.NoError(t, err)
			sb, err = tb.StepBatches(ex, ex)
		}
		require.NoError(t, err)
		assert.Equal(t, sb.Loss, sa.Loss, "step %d", step)
	}
	assert.Equal(t, values(t, b.Variables()), values(t, a.Variables()))
	assert.NotEqual(t, start, values(t, a.Variables()), "the steps moved the weights")
	kept.Release()
	_, err = ta.StepBatches(kept)
	require.ErrorContains(t, err, "after Release")
}

// TestLoopLogAndCurves: FitTask writes one JSON line per step and per evaluation,
// stops early on a flat validation loss, restores the best weights, and the curves
// render to a PNG.
func TestLoopLogAndCurves(t *testing.T) {
	eng, err := engine.New(engine.Config{Backend: "go"})
	require.NoError(t, err)
	defer eng.Close()
	rng := rand.New(rand.NewPCG(6, 6))
	bk := newBucketer(t)
	m := noDropoutModel(t)
	cfg := train.DefaultConfig()
	cfg.TotalSteps, cfg.EvalEvery, cfg.Patience = 40, 5, 2
	tr, err := train.New(eng, m, cfg)
	require.NoError(t, err)
	var log bytes.Buffer
	tr.Log = &log
	progress := 0
	tr.Progress = func(done, total int) { progress = done; assert.Equal(t, 40, total) }
	val := []train.Example{makeExample(t, rng, bk, 24)}
	evals := 0
	res, err := tr.FitTask(t.Context(), func(int) ([]train.Batch, error) {
		return []train.Batch{makeExample(t, rng, bk, 24)}, nil
	}, func() (train.Metrics, error) {
		evals++
		mt, err := tr.Evaluate(val)
		if evals > 2 {
			mt.Loss = 10 // no improvement after the second evaluation: stop after two more
		}
		return mt, err
	})
	require.NoError(t, err)
	assert.True(t, res.StoppedEarly)
	assert.Equal(t, 20, res.Steps, "evaluations at 5, 10 (best), 15, 20 (patience 2)")
	assert.Equal(t, 10, res.BestStep)
	assert.Equal(t, 20, progress)
	got, err := tr.Evaluate(val)
	require.NoError(t, err)
	assert.InDelta(t, res.Best.Loss, got.Loss, 1e-6, "best weights restored")

	steps, evalLines := 0, 0
	sc := bufio.NewScanner(&log)
	for sc.Scan() {
		var r train.LogRecord
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		if r.Eval != nil {
			evalLines++
		} else {
			steps++
			require.NotNil(t, r.Loss)
			assert.False(t, math.IsNaN(*r.Loss))
		}
	}
	assert.Equal(t, 20, steps)
	assert.Equal(t, 4, evalLines)

	png := filepath.Join(t.TempDir(), "curves.png")
	require.NoError(t, train.WriteCurves(png, "test", res))
	data, err := os.ReadFile(png)
	require.NoError(t, err)
	assert.Equal(t, "\x89PNG", string(data[:4]))
}

// A diverged run still writes its log: NaN and ±Inf metrics become JSON null, and
// null reads back as NaN while an absent field stays absent.
func TestLoopLogNaNMetrics(t *testing.T) {
	var log bytes.Buffer
	steps := []train.StepStats{
		{Loss: 0.5, LR: 0.01, GradNorm: 2},
		{Loss: math.NaN(), LR: 0.01, GradNorm: math.Inf(1)},
	}
	_, err := train.Loop{Steps: 2, EvalEvery: 2, Log: &log}.Run(t.Context(), train.Hooks{
		Step: func(i int) (train.StepStats, error) { return steps[i], nil },
		Eval: func() (train.Metrics, error) {
			return train.Metrics{Loss: math.NaN(), Accuracy: math.Inf(-1), AUC: math.NaN(), N: 3}, nil
		},
		Snapshot: func() error { return nil },
		Restore:  func() error { return nil },
	})
	require.NoError(t, err)

	// The lines as generic JSON (seconds vary, so they are checked for presence only).
	want := []map[string]any{
		{"step": 1.0, "loss": 0.5, "lr": 0.01, "grad_norm": 2.0},
		{"step": 2.0, "loss": nil, "lr": 0.01, "grad_norm": nil},
		{"step": 2.0, "train_loss": nil, "eval": map[string]any{"loss": nil, "accuracy": nil, "auc": nil, "n": 3.0}},
	}
	lines := bytes.Split(bytes.TrimSpace(log.Bytes()), []byte("\n"))
	require.Len(t, lines, len(want))
	for i, line := range lines {
		var got map[string]any
		require.NoError(t, json.Unmarshal(line, &got), "line %d: %s", i+1, line)
		assert.Contains(t, got, "seconds", "line %d", i+1)
		delete(got, "seconds")
		assert.Equal(t, want[i], got, "line %d: %s", i+1, line)
	}

	// Read back as LogRecords.
	var recs []train.LogRecord
	for _, line := range lines {
		var r train.LogRecord
		require.NoError(t, json.Unmarshal(line, &r))
		recs = append(recs, r)
	}
	require.NotNil(t, recs[0].Loss)
	assert.Equal(t, 0.5, *recs[0].Loss)
	assert.Equal(t, 2.0, *recs[0].GradNorm)
	assert.Nil(t, recs[0].Eval)
	assert.Nil(t, recs[0].TrainLoss, "absent stays nil")
	require.NotNil(t, recs[1].Loss)
	assert.True(t, math.IsNaN(*recs[1].Loss), "null loss reads back as NaN")
	assert.True(t, math.IsNaN(*recs[1].GradNorm), "+Inf was written as null")
	assert.Equal(t, 0.01, *recs[1].LR)
	require.NotNil(t, recs[2].Eval)
	assert.Nil(t, recs[2].Loss)
	assert.True(t, math.IsNaN(*recs[2].TrainLoss))
	assert.True(t, math.IsNaN(recs[2].Eval.Loss))
	assert.True(t, math.IsNaN(recs[2].Eval.Accuracy))
	assert.True(t, math.IsNaN(recs[2].Eval.AUC))
	assert.Equal(t, 3, recs[2].Eval.N)
}

// TestSecondTrainerRunsItsOwnUpdate: a second trainer of the same model (store) with
// other optimizer settings takes its own steps, not the first trainer's compiled
// update. From equal weights and one equal first step, an AdamW step with a large
// weight decay ends with smaller weights than a plain Adam step.
func TestSecondTrainerRunsItsOwnUpdate(t *testing.T) {
	eng, err := engine.New(engine.Config{Backend: "go"})
	require.NoError(t, err)
	defer eng.Close()
	ex := makeExample(t, rand.New(rand.NewPCG(6, 6)), newBucketer(t), 12)
	plain := train.DefaultConfig()
	plain.Optimizer, plain.WeightDecay = "adam", 0
	decay := plain
	decay.Optimizer, decay.WeightDecay = "adamw", 0.5
	after := func(second train.Config) ([][]float32, [][]float32) {
		m := noDropoutModel(t)
		first, err := train.New(eng, m, plain)
		require.NoError(t, err)
		_, err = first.StepBatches(ex)
		require.NoError(t, err)
		mid := values(t, m.Variables())
		next, err := train.New(eng, m, second)
		require.NoError(t, err)
		_, err = next.StepBatches(ex)
		require.NoError(t, err)
		return mid, values(t, m.Variables())
	}
	mid, withAdam := after(plain)
	mid2, withDecay := after(decay)
	require.Equal(t, mid, mid2, "the same first step")
	var shrink float64 // Σ (decayed − plain)·w: negative when the decay pulled weights towards 0
	for i := range mid {
		for j := range mid[i] {
			shrink += float64(withDecay[i][j]-withAdam[i][j]) * float64(mid[i][j])
		}
	}
	assert.Less(t, shrink, 0.0, "the AdamW trainer's step decays the weights")
}

// TestResumedRunCountsOn: a run resumed at step 7 of 15 logs steps 8…15, evaluates at
// 10 and 15 as the uninterrupted run would (every 5, and after the last), records
// those step numbers in History, and runs the 8 remaining steps.
func TestResumedRunCountsOn(t *testing.T) {
	eng, err := engine.New(engine.Config{Backend: "go"})
	require.NoError(t, err)
	defer eng.Close()
	rng := rand.New(rand.NewPCG(6, 6))
	bk := newBucketer(t)
	cfg := train.DefaultConfig()
	cfg.TotalSteps, cfg.EvalEvery, cfg.Patience = 15, 5, 0
	tr, err := train.New(eng, noDropoutModel(t), cfg)
	require.NoError(t, err)
	require.NoError(t, tr.Resume(7))
	var log bytes.Buffer
	tr.Log = &log
	val := []train.Example{makeExample(t, rng, bk, 24)}
	res, err := tr.FitTask(t.Context(), func(int) ([]train.Batch, error) {
		return []train.Batch{makeExample(t, rng, bk, 24)}, nil
	}, func() (train.Metrics, error) { return tr.Evaluate(val) })
	require.NoError(t, err)
	assert.Equal(t, 8, res.Steps)
	var evalAt []int
	for _, p := range res.History {
		evalAt = append(evalAt, p.Step)
	}
	assert.Equal(t, []int{10, 15}, evalAt)
	var stepAt []int
	sc := bufio.NewScanner(&log)
	for sc.Scan() {
		var r train.LogRecord
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		if r.Eval == nil {
			stepAt = append(stepAt, r.Step)
		}
	}
	assert.Equal(t, []int{8, 9, 10, 11, 12, 13, 14, 15}, stepAt)
	assert.Error(t, tr.Resume(15), "nothing left to run")
}
