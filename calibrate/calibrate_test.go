package calibrate

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/extract"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/retrieve"
	"github.com/graphloom/graphloom/synth"
)

// TestTemplateQuestionsCarryOnlyGraphTerms checks that the template generator's
// questions give BM25 no term beyond the subgraph's entity names and relation
// phrases: any other word would be in every synthetic question and in no real one.
func TestTemplateQuestionsCarryOnlyGraphTerms(t *testing.T) {
	ix := &graphio.Index{
		Entities: []graphio.Entity{{Name: "tomas brell", Surface: []string{"Tomas Brell"}}, {Name: "mira solenne", Surface: []string{"Mira Solenne"}},
			{Name: "aldwick", Surface: []string{"Aldwick"}}, {Name: "lamplighters guild", Surface: []string{"Lamplighters' Guild"}},
			{Name: "ships", Surface: []string{"Ships", "ships"}}},
		Facts: []graphio.Fact{
			{Subject: 1, Predicate: "daughter of", Object: 0, Chunks: []int32{0}},
			{Subject: 0, Predicate: "was born in", Object: 2, Chunks: []int32{1}},
			{Subject: 3, Predicate: "lies north of", Object: 2, Chunks: []int32{2}},
			{Subject: 4, Predicate: "sailed to", Object: 2, Chunks: []int32{3}},
		},
		Hyperedges: []graphio.Hyperedge{
			{Text: "Tomas Brell settled in Aldwick.", Entities: []int32{0, 2}, Chunks: []int32{1}},
			{Text: "The Lamplighters' Guild met Mira Solenne in Aldwick.", Entities: []int32{3, 1, 2}, Chunks: []int32{2}},
		},
	}
	an := retrieve.Analyzer{Stem: true}
	cands := []synth.Candidate{
		{Type: synth.TypeHop, Facts: []int32{0, 1}, Answer: 2},
		{Type: synth.TypeSum, Facts: []int32{1, 2, 3}, Answer: 2},
		{Type: synth.TypeHyper, Hyperedges: []int32{0, 1}, Named: []int32{0, 3}, Answer: 2},
	}
	pairs, err := synth.Template{}.Generate(context.Background(), ix, cands, synth.DefaultConfig(), nil)
	require.NoError(t, err)
	require.Len(t, pairs, len(cands))
	for i, c := range cands {
		graph := map[string]bool{}
		for _, e := range c.Named { // a hyperedge has no relation phrase: only its members' names
			for _, term := range an.Terms(ix.Entities[e].Name) {
				graph[term] = true
			}
		}
		for _, f := range c.Facts {
			x := &ix.Facts[f]
			for _, text := range []string{ix.Entities[x.Subject].Name, x.Predicate, ix.Entities[x.Object].Name} {
				for _, term := range an.Terms(text) {
					graph[term] = true
				}
			}
		}
		q := pairs[i].Question
		terms := an.Terms(q)
		require.NotEmpty(t, terms, q)
		for _, term := range terms {
			assert.True(t, graph[term], "%s question %q: term %q is not from its subgraph", c.Type, q, term)
		}
		// and it still names the subgraph — the path's start or every subject, as the
		// corpus writes them (capitalised, so that query-entity linking sees names) —
		// and every relation.
		subjects := []string{"Mira Solenne"}
		switch c.Type {
		case synth.TypeSum:
			subjects = []string{"Tomas Brell", "Lamplighters' Guild", " ships "} // ships: also written in lower case, a common noun
		case synth.TypeHyper:
			subjects = []string{"Tomas Brell", "Lamplighters' Guild"} // the named members, not the hyperedges' other words
		}
		for _, name := range subjects {
			assert.Contains(t, q, name)
		}
		for _, f := range c.Facts {
			assert.Contains(t, q, ix.Facts[f].Predicate)
		}
	}
}

// TestFitFusionKeepsTheKind: the fusion fit moves BM25's weight within the
// uncalibrated fusion's kind and never switches kind, even where the other kind would
// fit the questions better. Here linear fusion ranks the evidence first for every
// μ in the grid and reciprocal-rank fusion for none: the evidence is second in both
// rankings, each distractor first in one and third in the other, and 1/(k+1) +
// 1/(k+3) > 2/(k+2) for any k > 0, so one distractor always outscores it.
func TestFitFusionKeepsTheKind(t *testing.T) {
	// Candidates 0 (evidence), 1 (first by PPR), 2 (first by BM25).
	cs := retrieve.CandidateSet{
		Chunks:    []int32{0, 1, 2},
		Z:         []float64{1, 0, 0, 0, 1},
		GraphRank: []int32{2, 1, 3}, BM25Rank: []int32{2, 3, 1}, DefaultRank: []int32{3, 1, 2},
		Graph: []float64{0.95, 1, 0.5}, BM25: []float64{0.95, 0.5, 1},
	}
	qs := []question{{groups: [][]int32{{0}}, chunks: []int32{0}}}
	sets := []retrieve.CandidateSet{cs}
	recall := func(f retrieve.Fusion) float64 {
		fit := retrieve.Fitted{Fusion: f}
		return meanRecall(qs, sets, 1, func(cs *retrieve.CandidateSet) []float64 { return fit.Score(retrieve.VariantFusion, cs) })
	}
	for i := 4; i <= 16; i++ {
		mu := float64(i) / 20
		require.Equal(t, 100.0, recall(retrieve.Fusion{Kind: retrieve.FusionLinear, Mu: mu}), "linear μ=%g", mu)
		require.Equal(t, 0.0, recall(retrieve.Fusion{Kind: retrieve.FusionRRF, Mu: mu}), "rrf μ=%g", mu)
	}
	for _, kind := range []string{retrieve.FusionRRF, retrieve.FusionLinear} {
		got := fitFusion(qs, sets, 1, retrieve.Fusion{Kind: kind, Mu: 0.5})
		assert.Equal(t, kind, got.Kind, "the uncalibrated kind %s is kept", kind)
	}
	// Within a kind, μ moves where that fits better: only a high μ lifts the evidence
	// (0.9, 0.3) above a distractor first by PPR (1, 0) in linear fusion.
	cs2 := cs
	cs2.Graph, cs2.BM25 = []float64{0.9, 1, 0}, []float64{0.3, 0, 1}
	got := fitFusion(qs, []retrieve.CandidateSet{cs2}, 1, retrieve.Fusion{Kind: retrieve.FusionLinear, Mu: 0.2})
	assert.Equal(t, retrieve.FusionLinear, got.Kind)
	assert.Greater(t, got.Mu, 0.25, "μ chosen: %g", got.Mu)
}

func TestTGain(t *testing.T) {
	// d = [1 0 0 1]: mean 0.5, sample sd √(1/3), se √(1/3)/2 → t = √3.
	assert.InDelta(t, math.Sqrt(3), tGain([]float64{1, 1, 0, 1}, []float64{0, 1, 0, 0}), 1e-12)
	assert.Equal(t, 0.0, tGain([]float64{1, 0}, []float64{1, 0}))
	assert.True(t, math.IsInf(tGain([]float64{1, 1}, []float64{0, 0}), 1))
	assert.True(t, math.IsInf(tGain([]float64{0, 0}, []float64{1, 1}), -1))
}

func TestMinGainT(t *testing.T) {
	// Standard normal quantiles from the tables: 1 − 0.025, 1 − 0.025/3, 1 − 0.005.
	for _, c := range []struct {
		m    int
		want float64
	}{{1, 1.959964}, {3, 2.393980}, {5, 2.575829}} {
		assert.InDelta(t, c.want, MinGainT(c.m), 1e-5, "m = %d", c.m)
	}
}

// TestChooseHoldsRankersToTheirFeatures: the variant used is the best held-out one of
// those that beat the defaults by the bar; a ranker must also beat every feature
// alone, the fusion need not.
func TestChooseHoldsRankersToTheirFeatures(t *testing.T) {
	const bar = 2.39
	fit := func(fusion, nogate, ranker, alone float64, tFusion, tNoGate, tRanker float64) *RFit {
		return &RFit{
			Validation: map[string]float64{retrieve.VariantDefaults: 66.6, retrieve.VariantFusion: fusion, retrieve.VariantNoGate: nogate, retrieve.VariantRanker: ranker},
			Gain:       map[string]float64{retrieve.VariantDefaults: 0, retrieve.VariantFusion: tFusion, retrieve.VariantNoGate: tNoGate, retrieve.VariantRanker: tRanker},
			Features:   map[string]float64{"graph": 67.3, "linked_facts": alone, "length": 7.9},
		}
	}
	for _, c := range []struct {
		name   string
		rf     *RFit
		want   string
		barred []string
	}{
		{"ranker beats every feature", fit(68.6, 70.1, 69.0, 69.5, 2.6, 3.5, 3.0), retrieve.VariantNoGate, nil},
		// The 2Wiki corpus's ppr: the ungated ranker led but linked_facts alone read more.
		{"ranker below a feature: the fusion", fit(68.6, 68.8, 68.4, 69.5, 2.6, 2.9, 2.5), retrieve.VariantFusion, []string{"ranker-nogate (68.8)"}},
		{"a tie with a feature is not a win", fit(66.0, 69.5, 60.0, 69.5, 0, 3.0, 0), retrieve.VariantDefaults, []string{"ranker-nogate (69.5)"}},
		{"the fusion is not held to the features", fit(68.6, 60, 60, 69.5, 2.6, 0, 0), retrieve.VariantFusion, nil},
		{"below the bar", fit(68.0, 70.1, 69.0, 60.0, 2.0, 2.3, 2.38), retrieve.VariantDefaults, nil},
		{"the better ranker wins", fit(60, 70.1, 70.3, 69.5, 0, 3.0, 3.1), retrieve.VariantRanker, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, alone := bestAlone(c.rf.Features)
			got, barred := choose(c.rf, bar, alone)
			assert.Equal(t, c.want, got)
			assert.Equal(t, c.barred, barred)
		})
	}
	name, r := bestAlone(map[string]float64{"graph": 97.9, "graph_rank": 97.9, "bm25": 93.4})
	assert.Equal(t, "graph", name, "ties: the first in FeatureNames")
	assert.Equal(t, 97.9, r)
}

func TestDealFoldsValidatesMostQuestionsOverRepeatedDeals(t *testing.T) {
	// 60 chunks in 3 folds of 20; each question has two distinct evidence chunks, so
	// one deal puts both in one fold with probability 19/59, and R independent deals
	// at least once with 1 − (1 − 19/59)^R.
	const chunks, folds, n = 60, 3, 3000
	gen := rand.New(rand.NewPCG(7, 7))
	for _, repeats := range []int{1, 5} {
		qs := make([]question, n)
		for i := range qs {
			a, b := gen.IntN(chunks), gen.IntN(chunks-1)
			if b >= a {
				b++
			}
			qs[i].chunks = []int32{int32(a), int32(b)}
		}
		dealFolds(qs, chunks, folds, repeats, rand.New(rand.NewPCG(1, 2)))
		validated := 0
		for _, q := range qs {
			require.Len(t, q.folds, repeats)
			once := false
			for _, m := range q.folds {
				switch m {
				case 1, 2, 4:
					once = true
				case 3, 5, 6:
				default:
					t.Fatalf("deal mask %b for two chunks", m)
				}
			}
			if once {
				validated++
			}
		}
		want := 1 - math.Pow(1-19.0/59, float64(repeats))
		assert.InDelta(t, want, float64(validated)/n, 0.03, "%d deals", repeats)
	}
	// Every deal puts each chunk in one fold, folds of equal size: a question on a
	// single chunk is validated in every deal, in the fold of that chunk.
	qs := make([]question, chunks)
	for c := range qs {
		qs[c].chunks = []int32{int32(c)}
	}
	dealFolds(qs, chunks, folds, 4, rand.New(rand.NewPCG(3, 4)))
	for d := range 4 {
		size := make([]int, folds)
		for _, q := range qs {
			for k := range folds {
				if q.folds[d] == 1<<k {
					size[k]++
				}
			}
		}
		assert.Equal(t, []int{20, 20, 20}, size, "deal %d", d)
	}
}

func TestPickBoundsTheCandidatesAsked(t *testing.T) {
	// Fact i is stated by chunk i alone; fact 0 also by chunk 1. A two-fact candidate
	// on facts (0, 1) is answerable from chunk 1 (single-passage), on (i, i+1), i ≥ 1,
	// it is not (multi-passage); one on a fact without chunks counts as neither.
	ix := &graphio.Index{}
	for i := range 1000 {
		ix.Facts = append(ix.Facts, graphio.Fact{Chunks: []int32{int32(i)}})
	}
	ix.Facts[0].Chunks = []int32{0, 1}
	ix.Facts[999].Chunks = nil
	cands := func(multi, single int) []synth.Candidate {
		var out []synth.Candidate
		for i := range multi {
			out = append(out, synth.Candidate{Type: synth.TypeHop, Facts: []int32{int32(i + 1), int32(i + 2)}})
		}
		for range single {
			out = append(out, synth.Candidate{Type: synth.TypeSum, Facts: []int32{0, 1}})
		}
		return append(out, synth.Candidate{Type: synth.TypeHop, Facts: []int32{999}})
	}
	cfg := DefaultConfig() // SingleShare 0.1
	const budget = 125
	for _, c := range []struct {
		name                  string
		multi, single         int
		wantMulti, wantSingle int
	}{
		// Single-passage ones bounded by max(multi, ⌈0.1 × all⌉) = max(300, 35): all 50;
		// then 350 > 125, each class cut to its share: 125 × 300/350 = 107.1 → 107, 18.
		{"plenty", 300, 50, 107, 18},
		// max(60, 26) = 60 single-passage ones; 120 ≤ 125: all of them.
		{"few multi", 60, 200, 60, 60},
		{"no single", 300, 0, 125, 0},
		// max(0, ⌈0.1 × 300⌉) = 30.
		{"no multi", 0, 300, 0, 30},
		// Within the budget: all are asked, the chunkless one too.
		{"small", 80, 40, 80, 40},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := cands(c.multi, c.single)
			got := pick(ix, in, budget, cfg, 0)
			m, s := 0, 0
			for _, x := range got {
				switch x.Type {
				case synth.TypeHop:
					if x.Facts[0] != 999 {
						m++
					}
				case synth.TypeSum:
					s++
				}
			}
			assert.Equal(t, c.wantMulti, m)
			assert.Equal(t, c.wantSingle, s)
			// In Candidates' order, and the same draw twice.
			pos := map[*int32]int{}
			for i := range in {
				pos[&in[i].Facts[0]] = i
			}
			for i := 1; i < len(got); i++ {
				assert.Less(t, pos[&got[i-1].Facts[0]], pos[&got[i].Facts[0]])
			}
			assert.Equal(t, got, pick(ix, in, budget, cfg, 0))
		})
	}

	// ask: a later shape asks none of what an earlier one asked, and at most
	// 1.25 × the questions still wanted.
	asked := map[string]bool{}
	first := ask(ix, cands(300, 0), asked, 100, cfg, 0)
	assert.Len(t, first, 125)
	again := ask(ix, cands(300, 0), asked, 40, cfg, 1)
	assert.Len(t, again, 50)
	seen := map[int32]bool{}
	for _, c := range first {
		seen[c.Facts[0]] = true
	}
	for _, c := range again {
		assert.False(t, seen[c.Facts[0]], "asked twice: %v", c.Facts)
	}
	assert.Len(t, asked, 175)
}

func TestOneChunkCovers(t *testing.T) {
	for _, c := range []struct {
		groups [][]int32
		want   bool
	}{
		{[][]int32{{1, 4}, {4, 9}}, true},
		{[][]int32{{1, 4}, {2, 9}}, false},
		{[][]int32{{3}}, true},
		{[][]int32{{1, 2}, {2}, {1}}, false},
	} {
		assert.Equal(t, c.want, oneChunkCovers(c.groups), "%v", c.groups)
	}
}

// planted makes n questions of 20 candidates each, with random features and gate
// features; the single evidence candidate is the argmax of feature a when the
// question's graph gate is 1 and of feature b when it is 0. The uncalibrated rank is
// random. Only a gated ranker can learn both halves.
func planted(rng *rand.Rand, n, a, b int) ([]question, []retrieve.CandidateSet) {
	var qs []question
	var sets []retrieve.CandidateSet
	for range n {
		cs := retrieve.CandidateSet{Z: make([]float64, retrieve.NumGates)}
		cs.Z[retrieve.GateBias] = 1
		if rng.IntN(2) == 1 {
			cs.Z[retrieve.GateGraph] = 1
		}
		key := a
		if cs.Z[retrieve.GateGraph] == 0 {
			key = b
		}
		perm := rng.Perm(20)
		best, bestV := int32(0), -1.0
		for i := range 20 {
			x := make([]float64, retrieve.NumFeatures)
			for j := range x {
				x[j] = rng.Float64()
			}
			x[retrieve.FeatDefault] = 1 / math.Sqrt(float64(perm[i]+1))
			cs.Chunks = append(cs.Chunks, int32(i))
			cs.X = append(cs.X, x)
			cs.DefaultRank = append(cs.DefaultRank, int32(perm[i]+1))
			if x[key] > bestV {
				best, bestV = int32(i), x[key]
			}
		}
		qs = append(qs, question{text: "q", groups: [][]int32{{best}}, chunks: []int32{best}, multi: true})
		sets = append(sets, cs)
	}
	return qs, sets
}

// TestRankersLearnAPlantedRanking: trained through models/train on planted questions,
// the gated ranker finds the evidence first on fresh questions far more often than
// the uncalibrated rank (chance, 1 in 20) and than the ungated ranker, which cannot
// switch features with the gate. The rankers are scored in float64 by
// retrieve.Fitted.Score: a mismatch with the GoMLX graph would fail here.
func TestRankersLearnAPlantedRanking(t *testing.T) {
	eng := testEngine(t)
	rng := rand.New(rand.NewPCG(7, 7))
	qs, sets := planted(rng, 300, retrieve.FeatTitle, retrieve.FeatBM25)
	testQ, testS := planted(rng, 300, retrieve.FeatTitle, retrieve.FeatBM25)
	cfg := DefaultConfig()
	f := retrieve.Fitted{Fusion: retrieve.Fusion{Kind: retrieve.FusionRRF, Mu: 0.5}}
	for _, gated := range []bool{false, true} {
		r, pairs, err := trainRanker(context.Background(), eng, qs, sets, gated, cfg)
		require.NoError(t, err)
		assert.Equal(t, 300*19, pairs, "every question's evidence against its 19 other candidates")
		if gated {
			f.Ranker = r
		} else {
			f.NoGate = r
		}
	}
	r1 := func(v string) float64 {
		return meanRecall(testQ, testS, 1, func(cs *retrieve.CandidateSet) []float64 { return f.Score(v, cs) })
	}
	def, nogate, gated := r1(retrieve.VariantDefaults), r1(retrieve.VariantNoGate), r1(retrieve.VariantRanker)
	t.Logf("held-out R@1: defaults %.1f, ranker-nogate %.1f, ranker %.1f", def, nogate, gated)
	assert.Less(t, def, 15.0)
	assert.Greater(t, gated, 80.0)
	assert.Greater(t, gated, nogate+15)
	assert.Greater(t, nogate, def+20, "half the questions follow one feature")
}

// TestRankersLeaveLengthAlone: a question-independent feature is not fitted, even
// where it alone finds the evidence: both rankers keep weight 0 on length and stay
// at the uncalibrated ranking.
func TestRankersLeaveLengthAlone(t *testing.T) {
	eng := testEngine(t)
	rng := rand.New(rand.NewPCG(8, 8))
	qs, sets := planted(rng, 200, retrieve.FeatLength, retrieve.FeatLength)
	cfg := DefaultConfig()
	for _, gated := range []bool{false, true} {
		r, _, err := trainRanker(context.Background(), eng, qs, sets, gated, cfg)
		require.NoError(t, err)
		assert.Zero(t, r.W[retrieve.FeatLength], "gated %v", gated)
		if gated {
			require.Len(t, r.U, cfg.Hidden)
			for h, u := range r.U {
				assert.Zero(t, u[retrieve.FeatLength], "U[%d][length]", h)
			}
		}
		f, v := retrieve.Fitted{NoGate: r}, retrieve.VariantNoGate
		if gated {
			f, v = retrieve.Fitted{Ranker: r}, retrieve.VariantRanker
		}
		got := meanRecall(qs, sets, 1, func(cs *retrieve.CandidateSet) []float64 { return f.Score(v, cs) })
		assert.Less(t, got, 30.0, "gated %v: R@1 on the fitting questions (length alone: 100)", gated)
	}
}

// TestRunOnTheExampleCorpus: calibration, given only the index (Run takes a searcher
// and no dataset; the command's test runs it with the corpus deleted), reports every
// variant and feature, and stores a fit that retrieve accepts and applies.
func TestRunOnTheExampleCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example index and trains the rankers")
	}
	ctx := context.Background()
	ix, err := kg.BuildOffline(ctx, "../examples/harbour/corpus.json", kg.DefaultConfig(), extract.DefaultRuleConfig())
	require.NoError(t, err)
	rc := retrieve.DefaultConfig()
	rc.Calibration = retrieve.CalibrationOff
	s, err := retrieve.Open(ix, nil, rc, nil)
	require.NoError(t, err)
	eng := testEngine(t)
	cfg := DefaultConfig()
	cfg.Train.TotalSteps, cfg.Repeats = 100, 2 // what is reported, not how well: make eval measures that
	cal, rep, err := Run(ctx, s, synth.Template{}, eng, cfg, nil, nil)
	require.NoError(t, err)
	assert.Positive(t, rep.Questions)
	assert.Empty(t, rep.TooSmall)
	require.Len(t, rep.Fits, 2)
	for _, rf := range rep.Fits {
		assert.Positive(t, rf.Validated, rf.Retriever)
		for _, v := range retrieve.Variants {
			assert.Contains(t, rf.Validation, v)
		}
		assert.Len(t, rf.Features, retrieve.NumFeatures)
		assert.Contains(t, retrieve.Variants, rf.Use)
		if rf.Use != retrieve.VariantDefaults {
			assert.GreaterOrEqual(t, rf.Gain[rf.Use], MinGainT(len(retrieve.Variants)-1))
		}
	}
	require.NoError(t, retrieve.WriteCalibration(ix, cal))
	back, err := retrieve.ReadCalibration(ix)
	require.NoError(t, err)
	assert.Empty(t, kg.StaleWarning(ix, back.Generation, "the calibration"))

	// Too small: a cap below the minimum keeps the defaults and says why.
	cfg.MaxQuestions = 10
	_, rep, err = Run(ctx, s, synth.Template{}, eng, cfg, nil, nil)
	require.NoError(t, err)
	assert.Contains(t, rep.TooSmall, "needs at least 45")
	for _, rf := range rep.Fits {
		assert.Equal(t, retrieve.VariantDefaults, rf.Use)
	}
}

// TestGenerateFallsBackToHyperedges: the hypergraph's questions are asked only while
// the facts' give fewer than MinQuestions, after them, and never twice.
func TestGenerateFallsBackToHyperedges(t *testing.T) {
	ctx := context.Background()
	ix, err := kg.BuildOffline(ctx, "../examples/harbour/corpus.json", kg.DefaultConfig(), extract.DefaultRuleConfig())
	require.NoError(t, err)
	cfg := DefaultConfig()
	count := func(items []synth.Item) (facts, hyper int) {
		for _, it := range items {
			require.True(t, len(it.FactIDs) == 0 || len(it.HyperedgeIDs) == 0, it.ID)
			if it.Type == synth.TypeHyper {
				hyper++
				require.NotEmpty(t, it.HyperedgeIDs, it.ID)
			} else {
				facts++
			}
		}
		return facts, hyper
	}
	types := func(reps []*synth.Report) (hyperShapes int) {
		for _, r := range reps {
			if r.Asked[synth.TypeHyper] > 0 {
				hyperShapes++
			}
		}
		return hyperShapes
	}

	items, reps, err := generate(ctx, ix, synth.Template{}, cfg, nil)
	require.NoError(t, err)
	f, h := count(items)
	require.GreaterOrEqual(t, f, cfg.MinQuestions, "the harbour graph's facts suffice")
	assert.Zero(t, h)
	assert.Zero(t, types(reps))

	// kept is what questions keeps, for any single-passage share and cap.
	for _, c := range []struct {
		share float64
		cap   int
	}{{0, 900}, {0.1, 900}, {1, 900}, {0.1, 40}} {
		cc := cfg
		cc.SingleShare, cc.MaxQuestions = c.share, c.cap
		assert.Equal(t, len(questions(ix, items, cc)), kept(ix, items, cc), "share %g, cap %d", c.share, c.cap)
	}

	// Few facts: the hypergraph tops the questions up, after the facts' questions,
	// until enough would be kept.
	few := *ix
	few.Facts = ix.Facts[:12]
	items, reps, err = generate(ctx, &few, synth.Template{}, cfg, nil)
	require.NoError(t, err)
	f, h = count(items)
	assert.Positive(t, f)
	assert.Less(t, kept(&few, items[:f], cfg), cfg.MinQuestions, "the facts alone are too few")
	assert.GreaterOrEqual(t, kept(&few, items, cfg), cfg.MinQuestions)
	assert.Positive(t, h)
	assert.Positive(t, types(reps))
	for i, it := range items {
		if it.Type != synth.TypeHyper {
			assert.Less(t, i, f, "fact questions come first")
		}
	}

	// No facts at all: the hypergraph alone.
	few.Facts = nil
	items, _, err = generate(ctx, &few, synth.Template{}, cfg, nil)
	require.NoError(t, err)
	f, h = count(items)
	assert.Zero(t, f)
	assert.GreaterOrEqual(t, h, cfg.MinQuestions)
}

// testEngine returns an engine on the configured backend, closed when t ends.
func testEngine(t *testing.T) *engine.Engine {
	t.Helper()
	eng, err := engine.New(engine.Config{})
	require.NoError(t, err)
	t.Cleanup(eng.Close)
	return eng
}

// TestChosenFeature: the feature whose ranking alone finds the evidence best, the
// first in retrieve.FeatureNames on a tie.
func TestChosenFeature(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, tc := range []struct {
		name string
		keys []int // the planted key of each batch of 100 questions
		copy bool  // bm25 copies title: the two rank alike
		want int
	}{
		{"one key", []int{retrieve.FeatDense}, false, retrieve.FeatDense},
		{"the larger share", []int{retrieve.FeatTitle, retrieve.FeatTitle, retrieve.FeatBM25}, false, retrieve.FeatTitle},
		{"a tie goes to the first", []int{retrieve.FeatTitle}, true, retrieve.FeatBM25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var qs []question
			var sets []retrieve.CandidateSet
			for _, key := range tc.keys {
				q, s := planted(rng, 100, key, key)
				qs, sets = append(qs, q...), append(sets, s...)
			}
			if tc.copy {
				for _, cs := range sets {
					for _, x := range cs.X {
						x[retrieve.FeatBM25] = x[retrieve.FeatTitle]
					}
				}
			}
			assert.Equal(t, retrieve.FeatureNames[tc.want], retrieve.FeatureNames[chosenFeature(featureRecalls(qs, sets, 1))])
		})
	}
}

// TestCrossValidateChoosesTheFeatureOnTheFittingFolds: with two folds whose evidence
// follows different features, each fold is scored by the feature its fitting fold
// (the other one) ranks best by, so the chosen feature reads near chance on held-out
// questions although each feature alone finds half of them.
func TestCrossValidateChoosesTheFeatureOnTheFittingFolds(t *testing.T) {
	eng := testEngine(t)
	rng := rand.New(rand.NewPCG(10, 10))
	qa, sa := planted(rng, 60, retrieve.FeatTitle, retrieve.FeatTitle)
	qb, sb := planted(rng, 60, retrieve.FeatDense, retrieve.FeatDense)
	for i := range qa {
		qa[i].folds = []uint32{1 << 0}
		qb[i].folds = []uint32{1 << 1}
	}
	qs, sets := append(qa, qb...), append(sa, sb...)
	for i := range sets { // the fusion's inputs, which planted leaves out: the uncalibrated ranks
		cs := &sets[i]
		cs.GraphRank, cs.BM25Rank = cs.DefaultRank, cs.DefaultRank
		cs.Graph, cs.BM25 = column(cs, retrieve.FeatDefault), column(cs, retrieve.FeatDefault)
	}
	cfg := DefaultConfig()
	cfg.K, cfg.Folds, cfg.Repeats = 1, 2, 1
	cfg.Train.TotalSteps = 50
	cv, err := crossValidate(context.Background(), eng, qs, sets, cfg, retrieve.Fitted{Fusion: retrieve.Fusion{Kind: retrieve.FusionRRF, Mu: 0.5}})
	require.NoError(t, err)
	assert.Equal(t, len(qs), cv.validated)
	assert.Equal(t, map[string]int{"title": 1, "dense": 1}, cv.chosenIn)
	for _, f := range []string{"title", "dense"} { // its own fold's questions, and by chance 1 in 20 of the others
		assert.InDelta(t, 52.5, 100*mean(cv.alone[f]), 2.5, f)
	}
	assert.Less(t, cv.chosen, 15.0, "each fold ranked by the other fold's feature (chance: 5)")
}
