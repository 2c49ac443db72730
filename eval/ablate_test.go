package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/retrieve"
)

func TestAblateAppliesEachSetting(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example index")
	}
	ctx := context.Background()
	corpus := filepath.Join("..", "examples", "harbour", "corpus.json")
	rebuilt := 0
	build := OfflineRebuilder(corpus)
	rebuild := func(ctx context.Context, kcfg kg.Config, titles bool) (*graphio.Index, error) {
		rebuilt++
		return build(ctx, kcfg, titles)
	}
	ix, err := build(ctx, kg.DefaultConfig(), true)
	require.NoError(t, err)
	ds, err := ReadDataset(filepath.Join("..", "examples", "harbour", "questions.json"))
	require.NoError(t, err)
	var seen []retrieve.Config
	open := func(ix *graphio.Index, rc retrieve.Config) (Retrievers, error) {
		seen = append(seen, rc)
		return retrieve.Open(ix, nil, rc, nil)
	}
	cfg := DefaultConfig()
	cfg.Retrievers = []string{"bm25", "ppr"}
	rep, err := Ablate(ctx, ix, open, rebuild, ds, retrieve.DefaultConfig(), kg.DefaultConfig(), cfg)
	require.NoError(t, err)
	nr, ni := len(RetrievalAblations()), len(IndexAblations())
	assert.Equal(t, ni, rebuilt)
	require.Len(t, rep.Rows, 2+nr+ni, "bm25 and ppr by default, then ppr alone per ablation")
	assert.Equal(t, "bm25", rep.Rows[0].Retriever)
	for _, r := range rep.Rows[2:] {
		assert.Equal(t, "ppr", r.Retriever, r.Setting)
	}
	// Each retrieval ablation reached the searcher with its own config.
	require.Len(t, seen, 1+nr+ni)
	assert.Equal(t, retrieve.LexicalDense, seen[1].Lexical)
	assert.Zero(t, seen[2].FinalBM25Weight)
	assert.Equal(t, retrieve.FusionLinear, seen[3].FinalFusion)
	assert.False(t, seen[4].QueryEntities)
	// μ = 0 ranks by PPR mass alone, which differs on this corpus.
	assert.NotEqual(t, rep.Rows[1].Recall[2], rep.Rows[3].Recall[2])

	dir := t.TempDir()
	files, err := rep.WriteFiles(dir)
	require.NoError(t, err)
	assert.Len(t, files, 3)
	md, err := os.ReadFile(filepath.Join(dir, "ablation.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "| no final fusion (μ=0) | ppr |")
	png, err := os.ReadFile(filepath.Join(dir, "ablation.png"))
	require.NoError(t, err)
	assert.Equal(t, "\x89PNG", string(png[:4]))
}

// harbourIndex builds the example corpus's index offline and reads its questions.
func harbourIndex(t *testing.T) (*graphio.Index, *Dataset) {
	t.Helper()
	ix, err := OfflineRebuilder(filepath.Join("..", "examples", "harbour", "corpus.json"))(context.Background(), kg.DefaultConfig(), true)
	require.NoError(t, err)
	ds, err := ReadDataset(filepath.Join("..", "examples", "harbour", "questions.json"))
	require.NoError(t, err)
	return ix, ds
}

func TestSweepRunsEachSetting(t *testing.T) {
	ctx := context.Background()
	ix, ds := harbourIndex(t)
	var mus []float64
	open := func(ix *graphio.Index, rc retrieve.Config) (Retrievers, error) {
		mus = append(mus, rc.FinalBM25Weight)
		return retrieve.Open(ix, nil, rc, nil)
	}
	var settings []Setting
	for _, mu := range []float64{0, 0.5, 1} {
		settings = append(settings, Setting{Name: fmt.Sprintf("mu=%g", mu), Apply: func(c *retrieve.Config) error { c.FinalBM25Weight = mu; return nil }})
	}
	cfg := DefaultConfig()
	cfg.Retrievers = []string{"ppr"}
	rep, err := Sweep(ctx, ix, open, ds, retrieve.DefaultConfig(), settings, cfg)
	require.NoError(t, err)
	assert.Equal(t, []float64{0, 0.5, 1}, mus)
	require.Len(t, rep.Rows, 3)
	assert.Equal(t, "mu=1", rep.Rows[2].Setting)
	assert.Contains(t, rep.Markdown(), "## Sweep")
}

// TestSweepIgnoresTheCalibration: on a calibrated index a sweep of the final fusion's
// weight still moves ppr (a calibrated fusion would fix μ for every row), the report
// says the calibration is left out, and a forced calibration variant is refused.
func TestSweepIgnoresTheCalibration(t *testing.T) {
	ctx := context.Background()
	ix, ds := harbourIndex(t)
	w := make([]float64, retrieve.NumFeatures)
	w[retrieve.FeatDefault] = 1
	fit := &retrieve.Fitted{Use: retrieve.VariantFusion, Fusion: retrieve.Fusion{Kind: retrieve.FusionRRF, Mu: 0.5},
		NoGate: retrieve.Ranker{W: w}, Ranker: retrieve.Ranker{W: w, V: make([][]float64, retrieve.NumFeatures)}}
	for i := range fit.Ranker.V {
		fit.Ranker.V[i] = make([]float64, retrieve.NumGates)
	}
	blob, err := json.Marshal(retrieve.Calibration{Features: retrieve.FeatureNames, Gates: retrieve.GateNames,
		Retrievers: map[string]*retrieve.Fitted{"ppr": fit, "hyperppr": fit}, Method: retrieve.CalibrationMethod})
	require.NoError(t, err)
	if ix.Blobs == nil {
		ix.Blobs = map[string][]byte{}
	}
	ix.Blobs[retrieve.CalibrationBlob] = blob
	var modes []string
	open := func(ix *graphio.Index, rc retrieve.Config) (Retrievers, error) {
		modes = append(modes, rc.Calibration)
		return retrieve.Open(ix, nil, rc, nil)
	}
	var settings []Setting
	for _, mu := range []float64{0, 1} {
		settings = append(settings, Setting{Name: fmt.Sprintf("mu=%g", mu), Apply: func(c *retrieve.Config) error { c.FinalBM25Weight = mu; return nil }})
	}
	cfg := DefaultConfig()
	cfg.Retrievers = []string{"ppr"}
	rep, err := Sweep(ctx, ix, open, ds, retrieve.DefaultConfig(), settings, cfg)
	require.NoError(t, err)
	assert.Equal(t, []string{retrieve.CalibrationOff, retrieve.CalibrationOff}, modes)
	require.Len(t, rep.Rows, 2)
	assert.NotEqual(t, rep.Rows[0].Recall[2], rep.Rows[1].Recall[2], "μ = 0 and μ = 1 rank differently")
	assert.Contains(t, rep.Markdown(), "calibration is not applied")

	forced := retrieve.DefaultConfig()
	forced.Calibration = retrieve.VariantFusion
	_, err = Sweep(ctx, ix, open, ds, forced, settings, cfg)
	assert.ErrorContains(t, err, "--calibration fusion would replace them")
}
