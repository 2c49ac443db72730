package augment

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/models/train"
)

// plantedIndex builds a graph whose missingness is visible in the entities, not in
// the shape of the subgraphs: a backbone of B entities (a ring with chords), and A
// entities each hanging off one B entity; every A and B entity always holds one fact
// to its own C entity (supported three times, so walks that reach it usually step on
// to its C).
// Entity features are the type (A, B, C) plus noise. A view where an A entity lacks
// its C fact — masked, or C deleted — is incomplete; a scorer can tell only by
// looking at which types meet.
func plantedIndex(seed int64, nA, nB int) *graphio.Index {
	rng := rand.New(rand.NewSource(seed))
	const dim = 8
	ix := &graphio.Index{}
	emb := &graphio.Embedding{Dim: dim}
	add := func(name string, typ int) int32 {
		ix.Entities = append(ix.Entities, graphio.Entity{ID: "entity-" + name, Name: name})
		row := make([]float32, dim)
		row[typ] = 1
		for i := 3; i < dim; i++ {
			row[i] = float32(rng.NormFloat64()) * 0.5
		}
		emb.Data = append(emb.Data, row...)
		return int32(len(ix.Entities) - 1)
	}
	fact := func(s, o int32, w float32) {
		ix.Facts = append(ix.Facts, graphio.Fact{ID: fmt.Sprintf("fact-%d", len(ix.Facts)), Subject: s, Predicate: "rel", Object: o, Weight: w, Chunks: []int32{0}})
	}
	bs := make([]int32, nB)
	for i := range bs {
		bs[i] = add(fmt.Sprintf("b%d", i), 1)
		fact(bs[i], add(fmt.Sprintf("c-of-b%d", i), 2), 3)
	}
	for i := range bs {
		fact(bs[i], bs[(i+1)%nB], 1)
		if j := rng.Intn(nB); j != i && j != (i+1)%nB && j != (i+nB-1)%nB {
			fact(bs[i], bs[j], 1)
		}
	}
	for i := range nA {
		a := add(fmt.Sprintf("a%d", i), 0)
		c := add(fmt.Sprintf("c%d", i), 2)
		fact(a, bs[rng.Intn(nB)], 1)
		fact(a, c, 3)
	}
	ix.Embeddings = map[graphio.NodeKind]*graphio.Embedding{graphio.KindEntity: emb}
	return ix
}

// TestScorerLearnsPlantedMissingness trains the real R-GCN scorer end to end
// (trainScorer: balanced views, disjoint splits, early stopping on validation) on a
// graph with planted missingness and checks that on the test split it beats every
// shortcut baseline, and that a reloaded checkpoint scores identically.
func TestScorerLearnsPlantedMissingness(t *testing.T) {
	// The planted rule lives in the embeddings' type columns (the paper's input), and
	// in the fact degrees the evidence features count.
	for _, mode := range []string{FeaturesEmbedding, FeaturesEvidence} {
		t.Run(mode, func(t *testing.T) { testScorerLearnsPlanted(t, mode) })
	}
}

func testScorerLearnsPlanted(t *testing.T, mode string) {
	ix := plantedIndex(3, 260, 200)
	cfg := DefaultConfig()
	cfg.Hidden, cfg.TrainRoots, cfg.EvalRoots, cfg.TestRoots = 32, 64, 64, 128
	cfg.Epochs, cfg.EvalEvery, cfg.Patience = 150, 10, 60
	cfg.LearningRate = 2e-3
	eng, err := engine.New(engine.Config{Backend: "go"})
	require.NoError(t, err)
	defer eng.Close()
	cfg.NodeFeatures = mode
	feat, err := newFeaturizer(ix, cfg.NodeFeatures)
	require.NoError(t, err)
	sc, err := NewRGCNScorer(eng, feat.dim, cfg)
	require.NoError(t, err)
	g := newMinerGraph(ix, cfg)
	tr, err := trainScorer(context.Background(), g, feat, g.rootCandidates(), sc, cfg, trainLogs{})
	require.NoError(t, err)
	for _, h := range tr.History {
		t.Logf("epoch %d train %.4f val %.4f auc %.3f", h.Epoch, h.TrainLoss, h.EvalBCE, h.AUC)
	}
	t.Logf("epochs %d (best %d), test AUC %.3f ranking %.3f, baselines %v, %d compilations, %.1fs",
		tr.Epochs, tr.BestEpoch, tr.TestAUC, tr.TestRanking, tr.Baselines, tr.Compilations, tr.Seconds)
	for _, k := range []string{"node_count", "edge_count", "components"} {
		assert.InDelta(t, 0.5, tr.Baselines[k], 0.02, "%s carries no label information after balancing", k)
	}
	assert.Greater(t, tr.TestAUC, tr.BestBaseline+0.04, "the scorer beats every shortcut baseline on the test split")
	oracle := plantedOracleAUC(ix, g, cfg)
	t.Logf("oracle (knows the planted rule) ROC-AUC %.3f", oracle)
	assert.Greater(t, tr.TestAUC, oracle-0.05, "the scorer finds about all the signal the planted rule leaves in the views")

	// Checkpoint reload: identical scores.
	path := filepath.Join(t.TempDir(), "scorer")
	require.NoError(t, sc.Save(path))
	re, err := LoadRGCNScorer(eng, path, cfg)
	require.NoError(t, err)
	part := g.partition(cfg.ValFraction, cfg.TestFraction, cfg.MinTestEntities, cfg.Seed+104729)
	gt := g.restrict(part, splitTest)
	views := gt.sampleGroups(gt.rootsIn(g.rootCandidates()), 32, cfg, rand.New(rand.NewSource(5)))
	gs, _ := graphsOf(feat, views)
	a, err := sc.Logits(gs)
	require.NoError(t, err)
	b, err := re.Logits(gs)
	require.NoError(t, err)
	assert.Equal(t, a, b, "reloaded scorer: bit-identical logits")
}

// plantedOracleAUC is the ROC-AUC of a classifier that knows the planted rule and
// where the corruption strikes (Config.RootCentred: a fact of the root, or a fact
// neighbour of the root): it flags a view whose root is an A or B entity without its C
// fact in the view.
func plantedOracleAUC(ix *graphio.Index, g *minerGraph, cfg Config) float64 {
	views := g.sampleGroups(g.rootCandidates(), 400, cfg, rand.New(rand.NewSource(1)))
	typ := func(n int32) byte { return ix.Entities[n].Name[0] }
	var scores []float64
	var pos []bool
	for _, v := range views {
		r, hasC := v.sg.root, false
		for _, e := range v.sg.edges {
			u, w := v.sg.nodes[e.u], v.sg.nodes[e.v]
			if (u == r && typ(w) == 'c') || (w == r && typ(u) == 'c') {
				hasC = true
			}
		}
		bad := 0.0
		if typ(r) != 'c' && !hasC {
			bad = 1
		}
		scores = append(scores, bad)
		pos = append(pos, v.label == 1)
	}
	return train.ROCAUC(scores, pos)
}

// TestConcurrentMembersTrainAsAlone trains three real R-GCN members in lockstep on
// one engine, their epochs and evaluations run concurrently (trainMembers), and checks
// each against the same member trained alone (its seed, the same split) for the same
// epochs: the same validation history and the same test logits. Under -race (make
// test-race) it also checks that the members share nothing they write.
func TestConcurrentMembersTrainAsAlone(t *testing.T) {
	ix := plantedIndex(3, 60, 40)
	cfg := DefaultConfig()
	cfg.Hidden, cfg.TrainRoots, cfg.EvalRoots, cfg.TestRoots = 16, 32, 32, 32
	cfg.Epochs, cfg.EvalEvery, cfg.Patience = 6, 2, 1000 // no early stop: every run trains 6 epochs
	cfg.NodeFeatures = FeaturesEvidence
	eng, err := engine.New(engine.Config{Backend: "go"})
	require.NoError(t, err)
	defer eng.Close()
	feat, err := newFeaturizer(ix, cfg.NodeFeatures)
	require.NoError(t, err)
	g := newMinerGraph(ix, cfg)
	scorer := func(seed int64) Scorer {
		c := cfg
		c.Seed = seed
		sc, err := NewRGCNScorer(eng, feat.dim, c)
		require.NoError(t, err)
		return sc
	}
	const k = 3
	scs := make([]Scorer, k)
	for i := range scs {
		scs[i] = scorer(memberSeed(cfg.Seed, i))
	}
	trs, runs, _, err := trainMembers(context.Background(), g, feat, g.rootCandidates(), scs, cfg, trainLogs{})
	require.NoError(t, err)
	require.Len(t, runs, k)
	require.Len(t, trs[0].History, 3, "evaluations at epochs 2, 4, 6")
	require.NotEmpty(t, runs[0].testLogits)
	for i := range k {
		alone := cfg
		alone.Seed = memberSeed(cfg.Seed, i)
		atr, aruns, _, err := trainMembers(context.Background(), g, feat, g.rootCandidates(), []Scorer{scorer(alone.Seed)}, alone, trainLogs{})
		require.NoError(t, err)
		require.Len(t, atr[0].History, len(trs[i].History))
		for e, h := range atr[0].History {
			assert.Equal(t, h.AUC, trs[i].History[e].AUC, "member %d, evaluation %d: validation ROC-AUC", i, e)
			assert.Equal(t, h.EvalBCE, trs[i].History[e].EvalBCE, "member %d, evaluation %d: validation BCE", i, e)
		}
		assert.Equal(t, atr[0].BestEpoch, trs[i].BestEpoch, "member %d", i)
		assert.Equal(t, aruns[0].testLogits, runs[i].testLogits, "member %d: test logits", i)
		if i > 0 {
			assert.NotEqual(t, runs[0].testLogits, runs[i].testLogits, "member %d trained as member 0: the seeds did not reach it", i)
		}
	}
}

// TestRunReleasesItsScorers checks that a run leaves none of its R-GCN scorers'
// compiled executables on the engine (ensemble.close → engine.Release): a command
// that runs many plans on one engine (augment --stability, --planted) does not keep
// every finished ensemble's.
func TestRunReleasesItsScorers(t *testing.T) {
	ix := chainIndex(t)
	eng, err := engine.New(engine.Config{Backend: "go"})
	require.NoError(t, err)
	defer eng.Close()
	opts := testOptions(nil)
	opts.Plan = true
	opts.Config.Ensemble, opts.Config.Hidden = 2, 16
	opts.NewScorer = func(dim int, c Config) (Scorer, error) { return NewRGCNScorer(eng, dim, c) }
	for i := range 2 {
		_, err := Run(context.Background(), ix, fmt.Sprintf("plan-%d", i), opts)
		require.NoError(t, err)
		st := eng.Stats()
		assert.Positive(t, st.Compilations, "run %d trained and scored on the engine", i)
		assert.Zero(t, st.Executables, "run %d left its scorers' executables on the engine", i)
	}
}
