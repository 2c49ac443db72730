package train_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/models"
	"github.com/graphloom/graphloom/models/train"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errKilled = errors.New("killed")

// TestSaveStateResumesExactly kills a run after an evaluation, resumes it from the
// weights and SaveState's file in a fresh store, and compares with the run that was
// never interrupted: the same evaluations, best step, stop and final weights, bit for
// bit. A resume from the weights alone (Resume) does not reproduce them: that is what
// the optimizer's moments and the random state in the file are for.
func TestSaveStateResumesExactly(t *testing.T) {
	eng, err := engine.New(engine.Config{Backend: "go"})
	require.NoError(t, err)
	defer eng.Close()
	bk := newBucketer(t)
	batch := func(i int) train.Example {
		return makeExample(t, rand.New(rand.NewPCG(uint64(i), 7)), bk, 8)
	}
	evalSet := []train.Example{makeExample(t, rand.New(rand.NewPCG(99, 9)), bk, 16)}
	cfg := train.DefaultConfig()
	cfg.LearningRate, cfg.MinLearningRate, cfg.WarmupSteps, cfg.TotalSteps = 2e-2, 1e-3, 4, 40
	cfg.EvalEvery, cfg.Patience, cfg.MinDelta, cfg.ClipNorm = 4, 3, 0.01, 1
	next := func(i0 int) func(int) ([]train.Batch, error) {
		return func(i int) ([]train.Batch, error) { return []train.Batch{batch(i0 + i)}, nil }
	}
	fit := func(tr *train.Trainer, from int) (*train.Result, error) {
		return tr.FitTask(context.Background(), next(from), func() (train.Metrics, error) { return tr.Evaluate(evalSet) })
	}
	weights := func(m *models.RGCNClassifier) [][]float32 {
		var out [][]float32
		for _, v := range m.Variables() {
			val, err := v.Value()
			require.NoError(t, err)
			out = append(out, tensors.MustCopyFlatData[float32](val))
		}
		return out
	}

	whole := smallModel(t, model.NewStore())
	tr, err := train.New(eng, whole, cfg)
	require.NoError(t, err)
	want, err := fit(tr, 0)
	require.NoError(t, err)
	t.Logf("uninterrupted: %d steps, best at %d, stopped early %v, %d evaluations", want.Steps, want.BestStep, want.StoppedEarly, len(want.History))
	require.Greater(t, want.Steps, 12, "the run must outlive the kill")
	require.True(t, want.StoppedEarly, "early stopping must be part of what is resumed")

	for _, kill := range []int{8, 12} {
		dir := t.TempDir()
		ckpt, state := filepath.Join(dir, "last.ckpt"), filepath.Join(dir, "last.state")
		first := smallModel(t, model.NewStore())
		tr, err := train.New(eng, first, cfg)
		require.NoError(t, err)
		tr.Checkpoint = func(step int) error {
			require.NoError(t, models.Save(ckpt, first, nil))
			require.NoError(t, tr.SaveState(state))
			if step == kill {
				return errKilled
			}
			return nil
		}
		_, err = fit(tr, 0)
		require.ErrorIs(t, err, errKilled)

		resume := func(exact bool) (*train.Result, [][]float32) {
			m, _, err := models.LoadRGCNClassifier(ckpt, model.NewStore())
			require.NoError(t, err)
			tr, err := train.New(eng, m, cfg)
			require.NoError(t, err)
			if exact {
				at, err := tr.LoadState(state)
				require.NoError(t, err)
				require.Equal(t, kill, at)
			} else {
				require.NoError(t, tr.Resume(kill))
			}
			res, err := fit(tr, kill)
			require.NoError(t, err)
			return res, weights(m)
		}
		got, w := resume(true)
		assert.Equal(t, want.Steps, kill+got.Steps, "kill at %d: steps", kill)
		assert.Equal(t, want.BestStep, kill+got.BestStep, "kill at %d: best step", kill)
		assert.Equal(t, want.StoppedEarly, got.StoppedEarly, "kill at %d", kill)
		assert.Equal(t, want.Best, got.Best, "kill at %d", kill)
		assert.Equal(t, want.History, got.History, "kill at %d: every evaluation, the first run's included", kill)
		assert.Equal(t, weights(whole), w, "kill at %d: the final (best) weights", kill)

		_, approx := resume(false)
		assert.NotEqual(t, weights(whole), approx, "kill at %d: resuming from the weights alone differs", kill)
	}
}

// TestLoadStateRefusesOtherFiles: a state file of another model, of another step range,
// or not a state file at all is refused with its path, before anything changes.
func TestLoadStateRefusesOtherFiles(t *testing.T) {
	eng, err := engine.New(engine.Config{Backend: "go"})
	require.NoError(t, err)
	defer eng.Close()
	bk := newBucketer(t)
	evalSet := []train.Example{makeExample(t, rand.New(rand.NewPCG(99, 9)), bk, 8)}
	cfg := train.DefaultConfig()
	cfg.TotalSteps, cfg.EvalEvery = 6, 3
	dir := t.TempDir()
	state := filepath.Join(dir, "last.state")
	m := smallModel(t, model.NewStore())
	tr, err := train.New(eng, m, cfg)
	require.NoError(t, err)
	require.Error(t, tr.SaveState(state), "no evaluation yet")
	tr.Checkpoint = func(step int) error {
		if step == 3 {
			return tr.SaveState(state)
		}
		return nil
	}
	_, err = tr.Fit(func(i int) (train.Example, error) {
		return makeExample(t, rand.New(rand.NewPCG(uint64(i), 1)), bk, 8), nil
	}, evalSet)
	require.NoError(t, err)

	ckpt := filepath.Join(dir, "model.ckpt")
	require.NoError(t, models.Save(ckpt, m, nil))
	wider := func() *models.RGCNClassifier {
		c := m.Config()
		c.Hidden = 32
		w, err := models.NewRGCNClassifier(model.NewStore(), c)
		require.NoError(t, err)
		return w
	}
	short := cfg
	short.TotalSteps = 3
	adamw := cfg
	adamw.Optimizer, adamw.WeightDecay = "adamw", 0.01
	for _, c := range []struct {
		name, file, want string
		m                *models.RGCNClassifier
		cfg              train.Config
	}{
		{"weights, not a state", ckpt, "kind", smallModel(t, model.NewStore()), cfg},
		{"other widths", state, "variable /rgcn/in_proj/weight is", wider(), cfg},
		{"past the run's end", state, "TotalSteps 3", smallModel(t, model.NewStore()), short},
		{"another optimizer", state, "saved by adam", smallModel(t, model.NewStore()), adamw},
		{"missing", filepath.Join(dir, "absent.state"), "absent.state", smallModel(t, model.NewStore()), cfg},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, err := train.New(eng, c.m, c.cfg)
			require.NoError(t, err)
			_, err = tr.LoadState(c.file)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), filepath.Base(c.file))
			assert.Equal(t, 0, tr.StepsTaken())
		})
	}
	_, err = os.Stat(state)
	require.NoError(t, err)
}
