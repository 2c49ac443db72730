package retrieve

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
)

func harbourQuestions(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../examples/harbour/questions.json")
	require.NoError(t, err)
	var qs []struct{ Question string }
	require.NoError(t, json.Unmarshal(data, &qs))
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.Question
	}
	return append(out, "zzzz qqqq") // matches nothing: the fallback path
}

// identity is a calibration whose every variant ranks as the uncalibrated defaults:
// the fusion with the defaults' μ, and rankers weighing the uncalibrated rank alone.
func identity(ix *graphio.Index, mu float64) *Calibration {
	f := func(use string) *Fitted {
		r := Ranker{W: make([]float64, NumFeatures), V: make([][]float64, NumFeatures)}
		r.W[FeatDefault] = 1
		for j := range r.V {
			r.V[j] = make([]float64, NumGates)
		}
		ng := Ranker{W: r.W}
		return &Fitted{Use: use, Fusion: Fusion{Kind: FusionRRF, Mu: mu}, NoGate: ng, Ranker: r}
	}
	return &Calibration{Features: FeatureNames, Gates: GateNames, Generation: "g0-test",
		Retrievers: map[string]*Fitted{"ppr": f(VariantFusion), "hyperppr": f(VariantFusion)}}
}

// TestCalibratedVariantsReproduceTheDefaults: over the candidate pool, the fusion
// variant with the defaults' own rrf μ and a ranker weighing only the uncalibrated
// rank give the uncalibrated retriever's top 10, passage for passage (the pool and its
// censored ranks lose nothing at the top).
func TestCalibratedVariantsReproduceTheDefaults(t *testing.T) {
	ctx := context.Background()
	ix := exampleIndex(t)
	qs := harbourQuestions(t)
	off := DefaultConfig()
	off.Calibration = CalibrationOff
	plain, err := Open(ix, nil, off, nil)
	require.NoError(t, err)
	require.NoError(t, WriteCalibration(ix, identity(ix, off.FinalBM25Weight)))
	for _, v := range []string{VariantFusion, VariantNoGate, VariantRanker} {
		cfg := DefaultConfig()
		cfg.Calibration = v
		s, err := Open(ix, nil, cfg, nil)
		require.NoError(t, err)
		require.NotNil(t, s.Calibration())
		for _, name := range []string{"ppr", "hyperppr"} {
			want, err := plain.Retriever(name)
			require.NoError(t, err)
			got, err := s.Retriever(name)
			require.NoError(t, err)
			require.IsType(t, calibratedRetriever{}, got)
			for _, q := range qs {
				a, err := want.Retrieve(ctx, q, 10)
				require.NoError(t, err)
				b, err := got.Retrieve(ctx, q, 10)
				require.NoError(t, err)
				require.Len(t, b.Passages, len(a.Passages), "%s %s %q", v, name, q)
				for i := range a.Passages {
					assert.Equal(t, a.Passages[i].ChunkID, b.Passages[i].ChunkID, "%s %s %q rank %d", v, name, q, i+1)
				}
			}
		}
	}
	// auto applies Use; off ignores the calibration.
	s, err := Open(ix, nil, DefaultConfig(), nil)
	require.NoError(t, err)
	r, err := s.Retriever("ppr")
	require.NoError(t, err)
	assert.IsType(t, calibratedRetriever{}, r)
	s, err = Open(ix, nil, off, nil)
	require.NoError(t, err)
	r, err = s.Retriever("ppr")
	require.NoError(t, err)
	assert.IsType(t, hippoRetriever{}, r)
}

// TestCandidateFeatures checks a pool's features against their definitions, computed
// here from the retriever's own outputs: every value in [0, 1], the BM25 rank feature
// 1/√rank of the BM25 retriever's order, the default rank that of the uncalibrated ppr.
func TestCandidateFeatures(t *testing.T) {
	ctx := context.Background()
	ix := exampleIndex(t)
	cfg := DefaultConfig()
	cfg.Calibration = CalibrationOff
	s, err := Open(ix, nil, cfg, nil)
	require.NoError(t, err)
	q := harbourQuestions(t)[0]
	sets, err := s.CandidateSets(ctx, "ppr", []string{q}, 10)
	require.NoError(t, err)
	cs := sets[0]
	require.NotEmpty(t, cs.Chunks)
	at := map[string]int{}
	for i, c := range cs.Chunks {
		at[ix.Chunks[c].ID] = i
		for j, x := range cs.X[i] {
			assert.True(t, x >= 0 && x <= 1+1e-12, "feature %s = %g", FeatureNames[j], x)
		}
	}
	for name, feat := range map[string]int{"bm25": FeatBM25Rank, "ppr": FeatDefault} {
		r, err := s.Retriever(name)
		require.NoError(t, err)
		res, err := r.Retrieve(ctx, q, 10)
		require.NoError(t, err)
		for rank, p := range res.Passages {
			i, ok := at[p.ChunkID]
			require.True(t, ok, "%s's rank %d not in the pool", name, rank+1)
			assert.InDelta(t, 1/math.Sqrt(float64(rank+1)), cs.X[i][feat], 1e-12, "%s rank %d", name, rank+1)
		}
	}
	assert.Equal(t, 1.0, cs.Z[GateBias])
	assert.Equal(t, 1.0, cs.Z[GateGraph])
}

// TestCalibrationBlobErrors: a malformed blob, another graphloom's features and an
// out-of-range fit are refused with messages that say what to do.
func TestCalibrationBlobErrors(t *testing.T) {
	ix := exampleIndex(t)
	ix.Blobs[CalibrationBlob] = []byte("{not json")
	_, err := Open(ix, nil, DefaultConfig(), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "calibration")
	assert.Contains(t, err.Error(), "--calibration off")
	off := DefaultConfig()
	off.Calibration = CalibrationOff
	_, err = Open(ix, nil, off, nil)
	require.NoError(t, err, "off never reads the blob")

	c := identity(ix, 0.5)
	c.Features = []string{"bm25"}
	require.NoError(t, WriteCalibration(ix, c))
	_, err = ReadCalibration(ix)
	require.ErrorContains(t, err, "run `graphloom calibrate` again")

	c = identity(ix, 0.5)
	c.Retrievers["ppr"].Fusion.Mu = 2
	require.NoError(t, WriteCalibration(ix, c))
	_, err = ReadCalibration(ix)
	require.ErrorContains(t, err, `retriever "ppr"`)

	for _, tc := range []struct {
		name string
		mend func(f *Fitted)
		want string
	}{
		{"gate weights on the ungated ranker", func(f *Fitted) { f.NoGate.U = [][]float64{make([]float64, NumFeatures+NumGates)} }, "ranker-nogate: gate weights"},
		{"both a gate matrix and hidden units", func(f *Fitted) {
			f.Ranker.U, f.Ranker.C, f.Ranker.A = [][]float64{make([]float64, NumFeatures+NumGates)}, []float64{0}, []float64{0}
		}, "either gate rows"},
		{"neither gate rows nor hidden units", func(f *Fitted) { f.Ranker.V = nil }, "either gate rows"},
		{"hidden unit of the wrong width", func(f *Fitted) {
			f.Ranker.V, f.Ranker.U, f.Ranker.C, f.Ranker.A = nil, [][]float64{make([]float64, NumFeatures)}, []float64{0}, []float64{0}
		}, "hidden unit of 11 inputs, want 16"},
		{"hidden units without output weights", func(f *Fitted) {
			f.Ranker.V, f.Ranker.U, f.Ranker.C = nil, [][]float64{make([]float64, NumFeatures+NumGates)}, []float64{0}
		}, "1 hidden units with 1 biases and 0 output weights"},
	} {
		c = identity(ix, 0.5)
		tc.mend(c.Retrievers["hyperppr"])
		require.NoError(t, WriteCalibration(ix, c))
		_, err = ReadCalibration(ix)
		require.ErrorContains(t, err, `retriever "hyperppr"`, tc.name)
		require.ErrorContains(t, err, tc.want, tc.name)
	}

	delete(ix.Blobs, CalibrationBlob)
	forced := DefaultConfig()
	forced.Calibration = VariantRanker
	_, err = Open(ix, nil, forced, nil)
	require.ErrorContains(t, err, "needs a calibration")
	forced.Calibration = "bogus"
	_, err = Open(ix, nil, forced, nil)
	require.ErrorContains(t, err, "bogus")
}

// TestRankerScore: both stored forms of the gated ranker score as their formulas say,
// worked by hand on two features' worth of weights (the rest 0): a gate matrix
// (calibration methods up to 3) moves each weight by V·z; hidden units add
// Σ_h a_h relu(U_h·[x; z] + c_h).
func TestRankerScore(t *testing.T) {
	x := make([]float64, NumFeatures)
	x[FeatBM25], x[FeatGraph] = 0.5, 0.25
	z := make([]float64, NumGates)
	z[GateBias], z[GateFacts] = 1, 0.5
	w := make([]float64, NumFeatures)
	w[FeatBM25], w[FeatGraph] = 2, -1
	v := make([][]float64, NumFeatures)
	for j := range v {
		v[j] = make([]float64, NumGates)
	}
	v[FeatGraph][GateFacts] = 4 // graph's weight −1 + 4·0.5 = 1
	u0, u1 := make([]float64, NumFeatures+NumGates), make([]float64, NumFeatures+NumGates)
	u0[FeatGraph], u0[NumFeatures+GateFacts] = 4, 2 // 4·0.25 + 2·0.5 − 0.5 = 1.5
	u1[FeatBM25] = -2                               // −1 + 0: relu 0
	for _, tc := range []struct {
		name string
		r    Ranker
		z    []float64
		want float64
	}{
		{"linear", Ranker{W: w}, nil, 2*0.5 - 0.25},
		{"gate matrix", Ranker{W: w, V: v}, z, 2*0.5 + 1*0.25},
		{"gate matrix, no gate given", Ranker{W: w, V: v}, nil, 2*0.5 - 0.25},
		{"hidden units", Ranker{W: w, U: [][]float64{u0, u1}, C: []float64{-0.5, 0}, A: []float64{3, 7}}, z, 2*0.5 - 0.25 + 3*1.5},
	} {
		assert.InDelta(t, tc.want, tc.r.score(x, tc.z), 1e-12, tc.name)
	}
}
