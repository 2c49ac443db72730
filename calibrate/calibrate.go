// Package calibrate fits the final ranking of the graph retrievers (ppr, hyperppr) to
// a corpus from the corpus's own synthetic questions: SelfGraphRAG's point (seed 001)
// that questions generated from the graph, with known evidence, train a retriever
// without labelled data, applied to the fusion of PPR, BM25 and dense scores.
//
// Run generates questions with package synth (offline templates or an LLM) and fits,
// per retriever:
//
//   - fusion: BM25's weight μ in the final PPR/BM25 fusion (of the uncalibrated
//     kind, reciprocal-rank by default) by grid search;
//   - ranker-nogate: a linear ranker over per-passage features (retrieve.FeatureNames:
//     BM25 score and rank, PPR mass and rank, dense score and rank, the uncalibrated
//     rank, question-entity and linked-fact hits, title match; length is reported but
//     not fitted, see unfitted) trained with RankNet's pairwise logistic loss on
//     every candidate pair through models/train, starting from the uncalibrated
//     ranking and pulled towards it;
//   - ranker: the same plus a hidden layer of ReLU units over the passage's features
//     and the question's own (retrieve.GateNames), so that a feature's weight can turn
//     on the question and on the other features.
//
// Each variant is judged by cross-validation split by evidence chunk, repeated over
// Repeats deals of the chunks to folds: a question whose evidence chunks all fall in
// one fold is scored by the variant fitted without that fold — and without any
// question sharing an evidence chunk with it. The held-out recall of each variant, of
// the uncalibrated defaults, of each feature alone and of the feature that ranks best
// on each fold's fitting questions is reported; the best variant,
// refitted on every question, is used only when it beats the defaults there by
// MinGainT standard errors and, if a ranker, every feature alone (choose). Template
// questions are more lexical than real ones: a variant that cannot win on held-out
// synthetic questions is not trusted on real ones. Evaluation files are never read.
package calibrate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/models/train"
	"github.com/graphloom/graphloom/retrieve"
	"github.com/graphloom/graphloom/synth"
)

// Config holds the calibration's settings; DefaultConfig gives graphloom's defaults
// (the method is graphloom's: no paper fixes them).
type Config struct {
	// Retrievers are the graph retrievers fitted; default ppr and hyperppr (hyperppr
	// is skipped on an index without hyperedges).
	Retrievers []string
	// Synth generates the questions: SelfGraphRAG's two-hop paths and in-neighbour
	// summaries, up to 1,500 of each before the split (seed 1); MaxSum also caps the
	// hypergraph's summaries (shapes). Unlike the paper's, the paths include those
	// whose ends a fact links (AdjacentEnds): left out, the variants chosen on the
	// held-out synthetic questions lost 0.4 to 5 points on the real questions of four
	// development sets (R@5; AnsIn@5 on LiteraryQA; docs/calibration.md, "Paths a
	// single fact answers").
	Synth synth.Config
	// Folds is the number of cross-validation folds; default 3. Chunks are dealt to
	// folds at random (seeded); fold k's validation questions are those whose evidence
	// chunks all lie in fold k, and its variants are fitted on the questions with no
	// evidence chunk in fold k.
	Folds int
	// Repeats is how many times the cross-validation is run, the chunks dealt to folds
	// anew each time; default 5. A question is validated only in the deals that put
	// all its evidence chunks in one fold — one in Folds^(n−1) for n chunks — so one
	// deal validates mostly the questions with fewest evidence chunks (the
	// single-passage ones, which BM25 answers alone) and few of the rest. Over
	// repeated deals most questions are validated at least once; each counts once, with
	// its held-out recall averaged over the deals that validated it.
	Repeats int
	// AllowPartial calibrates on the questions of the LLM generator's answered calls
	// when some got no answer; by default such a run stops with an error (a rerun asks
	// only the failed calls again: the others are cached), as synth does.
	AllowPartial bool
	// SingleShare bounds the questions answerable from one passage (its facts all
	// stated by one chunk): at most as many as the multi-passage ones, or this share of
	// all questions when that is more. Template paths mostly stay inside one passage,
	// which BM25 alone answers; the graph's work is the questions whose evidence spans
	// passages. Default 0.1.
	SingleShare float64
	// MaxQuestions caps the questions kept (a seeded sample); default 900.
	MaxQuestions int
	// Ask bounds the candidates sent to the generator for each question shape, as a
	// multiple of the questions still wanted (MaxQuestions less those generated by
	// earlier shapes); default 1.25. They are drawn before generation, in the mix of
	// multi- and single-passage ones the kept questions will have (SingleShare, then a
	// uniform share of the cap), since a call to the LLM generator is paid and a
	// question beyond MaxQuestions is thrown away: on the 2Wiki corpus the templates'
	// 2,375 candidates gave 900 questions. The margin covers rejected pairs; a later
	// shape is asked only while questions are short, and never a candidate an earlier
	// shape asked.
	Ask float64
	// MinQuestions is the fewest questions below which the corpus is too small to
	// calibrate (the defaults are kept), and MinQuestions/Folds the fewest held-out
	// ones; default 45. While fewer would be kept, the hypergraph is asked too
	// (shapes). Selection also needs a gain of MinGainT standard errors.
	MinQuestions int
	// K is the recall cut-off the selection compares (R@K); default 5, the cut-off
	// graphloom's reports lead with.
	K int
	// Depth is each ranking's contribution to a question's candidate pool;
	// default retrieve.CalibrationDepth (50).
	Depth int
	// Hidden is the gated ranker's hidden ReLU units, over the passage's features and
	// the question's gate features; default 8. The ungated ranker is linear.
	Hidden int
	// Sigma is the slope of RankNet's pairwise logistic loss (train.PairwiseLogistic)
	// on scores of features in [0, 1]; default 10.
	Sigma float64
	// Prior weighs the pull of the ranker's weights towards where they start — the
	// uncalibrated ranking, and hidden units that add nothing — in the loss:
	// Prior·½‖θ − θ₀‖², with the RankNet loss a mean over the questions; default
	// 0.003. Pulled towards 0 by 0.001 instead, the gated ranker read 72.0 held out on
	// the 2Wiki corpus's ppr and 79.5 on the example corpus's, against 71.8 and 80.3
	// (a float64 reimplementation on the same pools and folds, docs/calibration.md): the uncalibrated ranking, the prior real questions favour,
	// is kept where the questions are few to move it.
	Prior float64
	// Train is the optimiser: Adam, lr 0.02 constant, 300 full-batch steps (every
	// fitting question's candidate pairs in each), no weight decay (Prior instead), no
	// early stopping: the selection's cross-validation judges the trained ranker, and
	// held-back questions to stop on would be taken from the few a small graph gives.
	// (Until calibration method 4: a pairwise hinge on sampled batches of 512 pairs,
	// 16 negatives per evidence passage, stopped early on questions held back by
	// evidence chunk; with it one ranker or both beat every feature alone on 5 of the
	// development sets' 22 retriever–set pairs, now 9: docs/calibration.md.)
	Train train.Config
	// Seed drives the split and the gated ranker's starting hidden-unit weights.
	Seed uint64
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	sc := synth.DefaultConfig()
	sc.MaxHop, sc.MaxSum, sc.AdjacentEnds = 1500, 1500, true
	tc := train.DefaultConfig()
	tc.Optimizer, tc.LearningRate, tc.MinLearningRate, tc.WeightDecay = "adam", 0.02, 0.02, 0
	tc.TotalSteps, tc.EvalEvery, tc.Patience = 300, 300, 0
	return Config{Retrievers: []string{"ppr", "hyperppr"}, Synth: sc, Folds: 3, Repeats: 5, SingleShare: 0.1, MaxQuestions: 900, Ask: 1.25,
		MinQuestions: 45, K: 5, Depth: retrieve.CalibrationDepth, Hidden: 8, Sigma: 10, Prior: 0.003,
		Train: tc, Seed: 1}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	switch {
	case len(c.Retrievers) == 0:
		return errors.New("calibrate: no retriever to fit")
	case c.Folds < 2 || c.Folds > 32:
		return fmt.Errorf("calibrate: %d folds: want 2 to 32", c.Folds)
	case c.Repeats < 1:
		return fmt.Errorf("calibrate: %d cross-validation repeats: want at least 1", c.Repeats)
	case !(c.SingleShare >= 0 && c.SingleShare <= 1):
		return fmt.Errorf("calibrate: single-passage share %g: want 0 ≤ share ≤ 1", c.SingleShare)
	case c.MaxQuestions < 1 || c.MinQuestions < 1:
		return errors.New("calibrate: question cap and minimum must be ≥ 1")
	case !(c.Ask >= 1 && c.Ask <= 100):
		return fmt.Errorf("calibrate: candidates asked per shape %g × the questions wanted: want 1 to 100", c.Ask)
	case c.K < 1 || c.Depth < c.K || c.Hidden < 1 || !(c.Sigma > 0) || !(c.Prior >= 0):
		return fmt.Errorf("calibrate: need K ≥ 1, Depth ≥ K, Hidden ≥ 1, Sigma > 0, Prior ≥ 0 (got %d, %d, %d, %g, %g)", c.K, c.Depth, c.Hidden, c.Sigma, c.Prior)
	}
	for _, r := range c.Retrievers {
		if r != "ppr" && r != "hyperppr" {
			return fmt.Errorf("calibrate: retriever %q: only ppr and hyperppr are calibrated", r)
		}
	}
	return c.Train.Validate()
}

// Report says what was fitted and how it did.
type Report struct {
	Generator string `json:"generator"`
	Created   string `json:"created"`
	Seed      uint64 `json:"seed"`
	Generated int    `json:"generated"` // synthetic questions generated
	// FromHyperedges is how many of them the hypergraph gave (asked only when the
	// facts' questions are too few).
	FromHyperedges int     `json:"from_hyperedges,omitempty"`
	Questions      int     `json:"questions"` // kept (after the single-passage bound and the cap)
	Multi          int     `json:"multi_passage"`
	Folds          int     `json:"folds"`
	Repeats        int     `json:"repeats,omitempty"`
	K              int     `json:"k"`
	TooSmall       string  `json:"too_small,omitempty"` // why nothing was fitted
	Fits           []*RFit `json:"retrievers"`
	Seconds        float64 `json:"seconds"`
	Synth          any     `json:"synth,omitempty"`
	Config         struct {
		SingleShare float64 `json:"single_share"`
		Depth       int     `json:"depth"`
		Hidden      int     `json:"hidden"`
		Sigma       float64 `json:"sigma"`
		Prior       float64 `json:"prior"`
		Steps       int     `json:"steps"`
		LR          float64 `json:"learning_rate"`
	} `json:"config"`
}

// RFit is one retriever's calibration report.
type RFit struct {
	Retriever string `json:"retriever"`
	Use       string `json:"use"` // the variant applied (retrieve.VariantDefaults: none)
	Why       string `json:"why"`
	// Validation is the cross-validated R@K (%) per variant (defaults included), each
	// question scored by the variant fitted without its fold, averaged over the deals
	// that validated it; Fitting is R@K of the variants refitted on every question, on
	// those questions.
	Validation map[string]float64 `json:"validation"`
	Validated  int                `json:"validation_questions"` // questions with every evidence chunk in one fold in at least one deal
	// Gain is each variant's mean held-out gain over the defaults divided by its
	// standard error (paired over the validation questions).
	Gain    map[string]float64 `json:"gain_t"`
	Fitting map[string]float64 `json:"fitting"`
	// Features is R@K (%) ranking by each feature alone, on the validation questions.
	Features map[string]float64 `json:"features_alone"`
	// Chosen is R@K (%) on the same questions ranking by the one feature that ranks
	// best on each fold's fitting questions (ChosenFeatures: how many folds chose each).
	// It is what picking a single feature without the held-out questions gives; the best
	// of Features is picked after seeing them, and on small graphs it usually reads
	// higher (docs/calibration.md). Both are empty when the corpus is too small.
	Chosen         float64         `json:"chosen_feature_recall,omitempty"`
	ChosenFeatures map[string]int  `json:"chosen_feature_folds,omitempty"`
	Fusion         retrieve.Fusion `json:"fusion"`
	// Pairs is the rankers' training pairs (final fit).
	Pairs    int     `json:"pairs"`
	Coverage float64 `json:"pool_coverage"` // share of evidence inside the pools (%)
}

// question is a synthetic question with its evidence: one group per fact, the chunks
// that state it (any of them counts).
type question struct {
	text   string
	groups [][]int32
	chunks []int32  // union of the groups
	multi  bool     // no single chunk holds evidence of every fact
	folds  []uint32 // per deal, bit k: an evidence chunk lies in fold k
}

// Run calibrates the graph retrievers of s's index (s opened with calibration off)
// and returns the calibration to store with the report. gen generates the questions;
// eng trains the rankers; log (may be nil) receives progress lines and progress (may
// be nil) the generation's calls done.
func Run(ctx context.Context, s *retrieve.Searcher, gen synth.Generator, eng *engine.Engine, cfg Config, log func(string), progress func(done, total int)) (*retrieve.Calibration, *Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	if log == nil {
		log = func(string) {}
	}
	start := time.Now()
	ix := s.Index()
	rep := &Report{Generator: gen.Name(), Created: time.Now().UTC().Format(time.RFC3339), Seed: cfg.Seed, K: cfg.K, Folds: cfg.Folds,
		Repeats: cfg.Repeats}
	rep.Config.SingleShare, rep.Config.Depth, rep.Config.Hidden, rep.Config.Sigma, rep.Config.Prior = cfg.SingleShare, cfg.Depth, cfg.Hidden, cfg.Sigma, cfg.Prior
	rep.Config.Steps, rep.Config.LR = cfg.Train.TotalSteps, cfg.Train.LearningRate
	cal := &retrieve.Calibration{Features: retrieve.FeatureNames, Gates: retrieve.GateNames, Generation: kg.Generation(ix),
		Retrievers: map[string]*retrieve.Fitted{}, Method: retrieve.CalibrationMethod}
	items, reps, err := generate(ctx, ix, gen, cfg, progress)
	if err != nil {
		return nil, nil, err
	}
	if len(reps) > 0 {
		rep.Synth = reps
	}
	rep.Generated = len(items)
	for _, it := range items {
		if it.Type == synth.TypeHyper {
			rep.FromHyperedges++
		}
	}
	qs := questions(ix, items, cfg)
	rep.Questions = len(qs)
	for _, q := range qs {
		if q.multi {
			rep.Multi++
		}
	}
	log(fmt.Sprintf("%d synthetic questions generated, %d kept (%d multi-passage), %d folds, %d deals", len(items), len(qs), rep.Multi, cfg.Folds, cfg.Repeats))
	if len(qs) < cfg.MinQuestions {
		rep.TooSmall = fmt.Sprintf("%d questions; calibration needs at least %d (a bigger corpus, or an index built with --extractor llm, which finds more facts)", len(qs), cfg.MinQuestions)
	}
	for _, name := range cfg.Retrievers {
		if name == "hyperppr" && len(ix.Hyperedges) == 0 {
			continue
		}
		rf := &RFit{Retriever: name, Use: retrieve.VariantDefaults}
		kind := s.Config().FinalFusion
		if kind == "" {
			kind = retrieve.FusionRRF
		}
		f := &retrieve.Fitted{Use: retrieve.VariantDefaults, Fusion: retrieve.Fusion{Kind: kind, Mu: s.Config().FinalBM25Weight},
			NoGate: defaultRanker(false), Ranker: defaultRanker(true)}
		if rep.TooSmall != "" {
			rf.Why = "too small to calibrate: " + rep.TooSmall
		} else if err := fitRetriever(ctx, s, eng, name, qs, cfg, f, rf, log); err != nil {
			return nil, nil, err
		}
		rep.Fits = append(rep.Fits, rf)
		cal.Retrievers[name] = f
	}
	rep.Seconds = time.Since(start).Seconds()
	return cal, rep, nil
}

// generate asks gen for the synthetic questions of ix: the configured shape, then
// the others (shapes) while questions are short of MaxQuestions — three-fact paths
// and two-neighbour summaries — and the hypergraph's only while fewer than
// MinQuestions would be kept (kept). A question already generated by an earlier
// shape is dropped. It returns the items and each asked shape's report.
func generate(ctx context.Context, ix *graphio.Index, gen synth.Generator, cfg Config, progress func(done, total int)) ([]synth.Item, []*synth.Report, error) {
	var items []synth.Item
	var reps []*synth.Report
	seen := map[string]bool{}
	asked := map[string]bool{}
	for i, sc := range shapes(cfg.Synth) {
		need := cfg.MaxQuestions - len(items)
		if i > 0 && need <= 0 {
			break
		}
		if synth.Askable(ix, sc) != nil || (sc.Hyperedges && kept(ix, items, cfg) >= cfg.MinQuestions) {
			continue
		}
		cands, srep := synth.Candidates(ix, sc)
		srep.Shape = shapeName(sc)
		got, err := synth.RunCandidates(ctx, ix, gen, ask(ix, cands, asked, need, cfg, i), srep, sc, progress)
		if err != nil {
			return nil, nil, fmt.Errorf("calibrate: %w", err)
		}
		if err := srep.LostCalls("not calibrating without their questions"); err != nil && !cfg.AllowPartial {
			return nil, nil, fmt.Errorf("calibrate: %w", err)
		}
		reps = append(reps, srep)
		for _, it := range got {
			if !seen[it.Question] {
				seen[it.Question] = true
				items = append(items, it)
			}
		}
	}
	return items, reps, nil
}

// shapes returns the synthetic-question shapes tried in turn: sc, then sc with paths
// one fact longer, then with one in-neighbour fewer per summary (at least 2), then
// the summaries on the hypergraph (synth.Config.Hyperedges) with sc's neighbours and
// with one fewer. The items a later shape shares with an earlier one are dropped by
// question.
//
// The hypergraph's shapes come last and are asked only while fewer than MinQuestions
// questions would be kept (kept): they let a corpus whose extraction gives few binary
// facts be calibrated from its n-ary ones (HyperGraphRAG's hyperedges). The Go
// specification's index has 42 facts, which give 25 questions, and 326 hyperedges,
// which add 53. They are a fallback because their template questions are
// further from real ones than the facts' (they name co-members and no relation, so
// question_entities alone answers them best): asked on PubMedQA too, where the facts
// give 128 questions, they made the gated ranker win on held-out synthetic questions
// (97.3 against the defaults' 94.8, t = 5.8) and lose on the real ones (R@5 97.4
// against 99.2).
func shapes(sc synth.Config) []synth.Config {
	sc.Hyperedges = false
	longer := sc
	longer.PathLength++
	fewer := sc
	fewer.SumNeighbours = max(2, sc.SumNeighbours-1)
	out := []synth.Config{sc, longer}
	if fewer.SumNeighbours != sc.SumNeighbours {
		out = append(out, fewer)
	}
	hyper, hyperFewer := sc, fewer
	hyper.Hyperedges, hyperFewer.Hyperedges = true, true
	out = append(out, hyper)
	if hyperFewer.SumNeighbours != hyper.SumNeighbours {
		out = append(out, hyperFewer)
	}
	return out
}

// ask returns the candidates of shape number shape sent to the generator: those no
// earlier shape asked (marked in asked, which it updates), at most Ask × need of
// them (pick).
func ask(ix *graphio.Index, cands []synth.Candidate, asked map[string]bool, need int, cfg Config, shape int) []synth.Candidate {
	var fresh []synth.Candidate
	key := func(c synth.Candidate) string { return fmt.Sprint(c.Type, c.Facts, c.Hyperedges, c.Named) }
	for _, c := range cands {
		if !asked[key(c)] {
			fresh = append(fresh, c)
		}
	}
	out := pick(ix, fresh, int(math.Ceil(cfg.Ask*float64(max(0, need)))), cfg, shape)
	for _, c := range out {
		asked[key(c)] = true
	}
	return out
}

// pick draws at most budget of the candidates, in the mix questions keeps: the
// single-passage ones bounded as SingleShare says (a seeded sample), and when those
// and the multi-passage ones are more than budget, each class cut to its share of it
// (a seeded sample). Candidates whose facts no chunk states (never kept) are not
// drawn. The result is in Candidates' order.
func pick(ix *graphio.Index, cands []synth.Candidate, budget int, cfg Config, shape int) []synth.Candidate {
	if len(cands) <= budget {
		return cands
	}
	var multi, single []int
	for i, c := range cands {
		groups := candidateGroups(ix, c)
		switch {
		case len(groups) == 0:
		case oneChunkCovers(groups):
			single = append(single, i)
		default:
			multi = append(multi, i)
		}
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xa5c+uint64(shape)))
	rng.Shuffle(len(multi), func(i, j int) { multi[i], multi[j] = multi[j], multi[i] })
	rng.Shuffle(len(single), func(i, j int) { single[i], single[j] = single[j], single[i] })
	nm := len(multi)
	ns := singleCap(nm, len(single), cfg.SingleShare)
	if total := nm + ns; total > budget {
		nm = int(math.Round(float64(budget) * float64(nm) / float64(total)))
		ns = budget - nm
	}
	keep := slices.Concat(multi[:nm], single[:ns])
	slices.Sort(keep)
	out := make([]synth.Candidate, len(keep))
	for k, i := range keep {
		out[k] = cands[i]
	}
	return out
}

// ShapePlan is what calibrate would ask the generator for one question shape.
type ShapePlan struct {
	Shape      string `json:"shape"`      // e.g. "paths of 2 facts, summaries of 3 in-neighbours"
	Hyperedges bool   `json:"hyperedges"` // a hypergraph shape: asked only while fewer than MinQuestions would be kept
	Calls      int    `json:"llm_calls"`  // candidates sent (the LLM generator's calls); 0 when the index has nothing for it
	Tokens     int    `json:"prompt_tokens"`
}

// Plan is what calibrate would ask the generator of ix, per question shape in the
// order they are tried: candidates (the LLM generator's calls) and, with count, their
// prompt tokens. A shape after the first is asked only while fewer than MaxQuestions
// questions have been generated (the hypergraph's, while fewer than MinQuestions
// would be kept), and then for as many as are missing: the first shape is what a
// large corpus costs, the sum (each later shape counted as if no question had come
// before) the most any can; a shape the index has nothing for (no facts, or no
// hyperedges) counts 0.
func Plan(ix *graphio.Index, cfg Config, count func(string) int) []ShapePlan {
	var out []ShapePlan
	asked := map[string]bool{}
	for i, sc := range shapes(cfg.Synth) {
		p := ShapePlan{Shape: shapeName(sc), Hyperedges: sc.Hyperedges}
		if synth.Askable(ix, sc) == nil {
			cands, _ := synth.Candidates(ix, sc)
			cands = ask(ix, cands, asked, cfg.MaxQuestions, cfg, i)
			p.Calls, p.Tokens = len(cands), synth.PlanTokens(ix, cands, sc, count)
		}
		out = append(out, p)
	}
	return out
}

// shapeName says what a question shape asks.
func shapeName(sc synth.Config) string {
	if sc.Hyperedges {
		return fmt.Sprintf("summaries from %d hyperedges", sc.SumNeighbours)
	}
	return fmt.Sprintf("paths of %d facts, summaries of %d in-neighbours", sc.PathLength, sc.SumNeighbours)
}

// defaultRanker is a ranker that ranks as the uncalibrated defaults do.
func defaultRanker(gated bool) retrieve.Ranker {
	r := retrieve.Ranker{W: make([]float64, retrieve.NumFeatures)}
	r.W[retrieve.FeatDefault] = 1
	if gated {
		r.V = make([][]float64, retrieve.NumFeatures)
		for j := range r.V {
			r.V[j] = make([]float64, retrieve.NumGates)
		}
	}
	return r
}

// questions turns the synthetic items into questions with evidence groups, bounds the
// single-passage ones (Config.SingleShare), caps them (a seeded sample) and marks, for
// each of Config.Repeats deals of the chunks to folds (at random), the folds their
// evidence chunks fall in.
func questions(ix *graphio.Index, items []synth.Item, cfg Config) []question {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed_ca1))
	multi, single := evidenceOf(ix, items)
	rng.Shuffle(len(single), func(i, j int) { single[i], single[j] = single[j], single[i] })
	single = single[:singleCap(len(multi), len(single), cfg.SingleShare)]
	qs := append(multi, single...)
	rng.Shuffle(len(qs), func(i, j int) { qs[i], qs[j] = qs[j], qs[i] })
	qs = qs[:min(cfg.MaxQuestions, len(qs))]
	dealFolds(qs, len(ix.Chunks), cfg.Folds, cfg.Repeats, rng)
	return qs
}

// kept is how many questions the items give: those with evidence, the
// single-passage ones bounded (singleCap), capped at MaxQuestions — what questions
// returns.
func kept(ix *graphio.Index, items []synth.Item, cfg Config) int {
	multi, single := evidenceOf(ix, items)
	return min(cfg.MaxQuestions, len(multi)+singleCap(len(multi), len(single), cfg.SingleShare))
}

// singleCap is how many of ns single-passage questions are kept beside nm
// multi-passage ones: at most as many, or share of all when that is more.
func singleCap(nm, ns int, share float64) int {
	return min(ns, max(nm, int(math.Ceil(share*float64(nm+ns)))))
}

// evidenceOf turns the items into questions with their evidence groups, in item
// order, split into multi- and single-passage ones; an item whose facts or
// hyperedges no chunk states is dropped.
func evidenceOf(ix *graphio.Index, items []synth.Item) (multi, single []question) {
	factOf := make(map[string]int32, len(ix.Facts))
	for i, f := range ix.Facts {
		factOf[f.ID] = int32(i)
	}
	hyperOf := make(map[string]int32, len(ix.Hyperedges))
	for i, h := range ix.Hyperedges {
		hyperOf[h.ID] = int32(i)
	}
	for _, it := range items {
		var c synth.Candidate
		for _, id := range it.FactIDs {
			if f, ok := factOf[id]; ok {
				c.Facts = append(c.Facts, f)
			}
		}
		for _, id := range it.HyperedgeIDs {
			if h, ok := hyperOf[id]; ok {
				c.Hyperedges = append(c.Hyperedges, h)
			}
		}
		q := question{text: it.Question, groups: candidateGroups(ix, c)}
		if len(q.groups) == 0 {
			continue
		}
		for _, g := range q.groups {
			q.chunks = append(q.chunks, g...)
		}
		slices.Sort(q.chunks)
		q.chunks = slices.Compact(q.chunks)
		q.multi = !oneChunkCovers(q.groups)
		if q.multi {
			multi = append(multi, q)
		} else {
			single = append(single, q)
		}
	}
	return multi, single
}

// dealFolds deals the chunks to folds at random, repeats times, and marks in each
// question, per deal, the folds its evidence chunks fall in (q.folds[d], bit k).
func dealFolds(qs []question, chunks, folds, repeats int, rng *rand.Rand) {
	fold := make([]int, chunks)
	for i := range qs {
		qs[i].folds = make([]uint32, repeats)
	}
	for d := range repeats {
		for i, c := range rng.Perm(chunks) {
			fold[c] = i % folds
		}
		for i := range qs {
			for _, c := range qs[i].chunks {
				qs[i].folds[d] |= 1 << fold[c]
			}
		}
	}
}

// candidateGroups is a question's evidence: per fact or hyperedge that some chunk
// states, the chunks that state it.
func candidateGroups(ix *graphio.Index, c synth.Candidate) [][]int32 {
	var groups [][]int32
	for _, f := range c.Facts {
		if ch := ix.Facts[f].Chunks; len(ch) > 0 {
			groups = append(groups, ch)
		}
	}
	for _, h := range c.Hyperedges {
		if ch := ix.Hyperedges[h].Chunks; len(ch) > 0 {
			groups = append(groups, ch)
		}
	}
	return groups
}

// oneChunkCovers reports whether a single chunk states a fact of every group: the
// question is then answerable from one passage.
func oneChunkCovers(groups [][]int32) bool {
	for _, c := range groups[0] {
		all := true
		for _, g := range groups[1:] {
			if _, ok := slices.BinarySearch(g, c); !ok {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// recallAt is the share of q's evidence groups with a chunk among the first k of
// order (positions into cs.Chunks).
func recallAt(q *question, cs *retrieve.CandidateSet, order []int, k int) float64 {
	top := map[int32]bool{}
	for _, j := range order[:min(k, len(order))] {
		top[cs.Chunks[j]] = true
	}
	hit := 0
	for _, g := range q.groups {
		for _, c := range g {
			if top[c] {
				hit++
				break
			}
		}
	}
	return float64(hit) / float64(len(q.groups))
}

// meanRecall is the mean R@k (%) of scoring over the questions.
func meanRecall(qs []question, sets []retrieve.CandidateSet, k int, score func(cs *retrieve.CandidateSet) []float64) float64 {
	if len(qs) == 0 {
		return 0
	}
	sum := 0.0
	for i := range qs {
		cs := &sets[i]
		sum += recallAt(&qs[i], cs, cs.Order(score(cs)), k)
	}
	return 100 * sum / float64(len(qs))
}

func texts(qs []question) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.text
	}
	return out
}

// fitRetriever fits and selects retriever name's calibration into f, reporting in rf.
func fitRetriever(ctx context.Context, s *retrieve.Searcher, eng *engine.Engine, name string, qs []question, cfg Config,
	f *retrieve.Fitted, rf *RFit, log func(string)) error {
	sets, err := s.CandidateSets(ctx, name, texts(qs), cfg.Depth)
	if err != nil {
		return fmt.Errorf("calibrate: %s: %w", name, err)
	}
	rf.Coverage = coverage(qs, sets)
	cv, err := crossValidate(ctx, eng, qs, sets, cfg, *f)
	if err != nil {
		return fmt.Errorf("calibrate: %s: %w", name, err)
	}
	nval := cv.validated
	rf.Validated = nval
	if nval < cfg.MinQuestions/cfg.Folds {
		rf.Why = fmt.Sprintf("too small to calibrate: %d questions lie within one fold in some deal (their evidence split off from the rest); need %d", nval, cfg.MinQuestions/cfg.Folds)
		return nil
	}
	rf.Chosen, rf.ChosenFeatures = cv.chosen, cv.chosenIn
	// The final fit, on every question.
	if err := fitVariants(ctx, eng, qs, sets, cfg, f, rf); err != nil {
		return fmt.Errorf("calibrate: %s: %w", name, err)
	}
	rf.Fusion = f.Fusion
	rf.Validation, rf.Fitting, rf.Features, rf.Gain = map[string]float64{}, map[string]float64{}, map[string]float64{}, map[string]float64{}
	for _, v := range retrieve.Variants {
		rf.Validation[v] = 100 * mean(cv.held[v])
		rf.Fitting[v] = meanRecall(qs, sets, cfg.K, func(cs *retrieve.CandidateSet) []float64 { return f.Score(v, cs) })
		rf.Gain[v] = tGain(cv.held[v], cv.held[retrieve.VariantDefaults])
	}
	for fname, r := range cv.alone {
		rf.Features[fname] = 100 * mean(r)
	}
	// The best variant by held-out recall, if its gain over the defaults is at least
	// MinGainT standard errors of the paired per-question differences for the number
	// of variants compared: a variant that wins by noise keeps the defaults.
	// A ranker must also beat each of its features alone there (choose).
	minT := MinGainT(len(retrieve.Variants) - 1)
	alonePick, aloneBest := bestAlone(rf.Features)
	best, barred := choose(rf, minT, aloneBest)
	f.Use, rf.Use = best, best
	switch {
	case best == retrieve.VariantDefaults && len(barred) > 0:
		rf.Why = fmt.Sprintf("%s beat the defaults' held-out R@%d %.1f by %.2f standard errors on %d synthetic questions but not %s alone (%.1f): defaults kept",
			strings.Join(barred, " and "), cfg.K, rf.Validation[best], minT, nval, alonePick, aloneBest)
	case best == retrieve.VariantDefaults:
		rf.Why = fmt.Sprintf("no fitted variant beat the defaults' held-out R@%d %.1f by %.2f standard errors on %d synthetic questions: defaults kept", cfg.K, rf.Validation[best], minT, nval)
	default:
		rf.Why = fmt.Sprintf("%s: held-out R@%d %.1f against the defaults' %.1f on %d synthetic questions (t = %.1f)", best, cfg.K, rf.Validation[best], rf.Validation[retrieve.VariantDefaults], nval, rf.Gain[best])
		if len(barred) > 0 {
			rf.Why += fmt.Sprintf("; not used: %s, no better than %s alone (%.1f)", strings.Join(barred, ", "), alonePick, aloneBest)
		}
	}
	log(fmt.Sprintf("%s: %s", name, rf.Why))
	return nil
}

// heldOut is crossValidate's result: per variant and per feature alone, the held-out
// recall (0 to 1) of each validated question; and the mean held-out R@K (%) of the
// feature chosen on each fold's fitting questions, with how many folds chose each.
type heldOut struct {
	held, alone map[string][]float64
	validated   int
	chosen      float64
	chosenIn    map[string]int
}

// crossValidate runs Repeats deals of the chunks to folds: fold k's questions (every
// evidence chunk in fold k) are scored by the variants fitted on the questions with no
// evidence chunk in fold k, by each feature alone, and by the one feature that ranks
// best on those fitting questions (chosenFeature) — a single feature picked without
// seeing the held-out questions, as the best of the features alone is not. A
// question's held-out recall is its mean over the deals that validated it.
func crossValidate(ctx context.Context, eng *engine.Engine, qs []question, sets []retrieve.CandidateSet, cfg Config, f retrieve.Fitted) (heldOut, error) {
	nv, nf := len(retrieve.Variants), len(retrieve.FeatureNames)
	sum := make([][]float64, len(qs)) // per question: variants' recall, features', the chosen feature's
	seen := make([]int, len(qs))
	out := heldOut{held: map[string][]float64{}, alone: map[string][]float64{}, chosenIn: map[string]int{}}
	alone := featureRecalls(qs, sets, cfg.K) // a feature's recall does not depend on the fold
	for d := range cfg.Repeats {
		for k := range cfg.Folds {
			var trainQ []question
			var trainS []retrieve.CandidateSet
			var trainAlone [][]float64
			var val []int
			for i, q := range qs {
				switch q.folds[d] {
				case 1 << k:
					val = append(val, i)
				default:
					if q.folds[d]&(1<<k) == 0 {
						trainQ, trainS = append(trainQ, q), append(trainS, sets[i])
						trainAlone = append(trainAlone, alone[i])
					}
				}
			}
			if len(val) == 0 || len(trainQ) < 2*cfg.Folds {
				continue
			}
			fk := f
			if err := fitVariants(ctx, eng, trainQ, trainS, cfg, &fk, nil); err != nil {
				return heldOut{}, fmt.Errorf("deal %d, fold %d: %w", d+1, k+1, err)
			}
			sel := chosenFeature(trainAlone)
			out.chosenIn[retrieve.FeatureNames[sel]]++
			for _, i := range val {
				q, cs := &qs[i], &sets[i]
				if sum[i] == nil {
					sum[i] = make([]float64, nv+nf+1)
				}
				seen[i]++
				for j, v := range retrieve.Variants {
					sum[i][j] += recallAt(q, cs, cs.Order(fk.Score(v, cs)), cfg.K)
				}
				for j, r := range alone[i] {
					sum[i][nv+j] += r
				}
				sum[i][nv+nf] += alone[i][sel]
			}
		}
	}
	var chosen []float64
	for i, n := range seen {
		if n == 0 {
			continue
		}
		out.validated++
		for j, v := range retrieve.Variants {
			out.held[v] = append(out.held[v], sum[i][j]/float64(n))
		}
		for j, fname := range retrieve.FeatureNames {
			out.alone[fname] = append(out.alone[fname], sum[i][nv+j]/float64(n))
		}
		chosen = append(chosen, sum[i][nv+nf]/float64(n))
	}
	out.chosen = 100 * mean(chosen)
	return out, nil
}

// featureRecalls is, per question, the recall at k of ranking its candidates by each
// feature alone (in retrieve.FeatureNames order).
func featureRecalls(qs []question, sets []retrieve.CandidateSet, k int) [][]float64 {
	out := make([][]float64, len(qs))
	for i := range qs {
		cs := &sets[i]
		out[i] = make([]float64, len(retrieve.FeatureNames))
		for j := range out[i] {
			out[i][j] = recallAt(&qs[i], cs, cs.Order(column(cs, j)), k)
		}
	}
	return out
}

// chosenFeature is the feature whose ranking alone has the best mean recall over the
// questions whose featureRecalls rows are given (ties: the first in
// retrieve.FeatureNames).
func chosenFeature(rows [][]float64) int {
	best, bestR := 0, -1.0
	for j := range retrieve.FeatureNames {
		sum := 0.0
		for _, row := range rows {
			sum += row[j]
		}
		if r := 100 * sum / float64(max(1, len(rows))); r > bestR+1e-9 {
			best, bestR = j, r
		}
	}
	return best
}

// choose picks the variant to use from rf's held-out figures: the best by held-out
// R@K among those whose gain over the defaults is at least minT standard errors and,
// for a ranker, whose R@K beats alone, the best R@K of a feature alone (bestAlone); the
// defaults when none qualifies. barred lists, as "variant (R@K)", the rankers that would otherwise have
// been chosen over the variant then best.
//
// A linear ranker whose weights cannot outdo one of its own inputs has learnt no
// combination (ten weights where one feature does as well), and where it does not, it
// did not learn that input either: on the 2Wiki corpus the ungated ppr ranker (68.8)
// and the gated hyperppr one (68.8) were selected over the defaults (66.6, 65.5) while
// question_entities alone read 69.4 and linked_facts alone 69.5. The fusion is not held
// to this: it fits one weight (BM25's share, kept between 0.2 and 0.8, fitFusion) of
// two rankings the uncalibrated ranking already fuses, and learns no combination of its
// own. Choosing the best of eleven features after seeing the held-out recall favours
// the features, so the rule errs towards the simpler variant.
func choose(rf *RFit, minT, alone float64) (best string, barred []string) {
	best = retrieve.VariantDefaults
	for _, v := range retrieve.Variants[1:] {
		if rf.Gain[v] < minT || rf.Validation[v] <= rf.Validation[best]+1e-9 {
			continue
		}
		if isRanker(v) && rf.Validation[v] <= alone+1e-9 {
			barred = append(barred, fmt.Sprintf("%s (%.1f)", v, rf.Validation[v]))
			continue
		}
		best = v
	}
	return best, barred
}

// isRanker reports whether variant v is one of the learned rankers.
func isRanker(v string) bool { return v == retrieve.VariantNoGate || v == retrieve.VariantRanker }

// bestAlone is the feature that ranks best alone on the held-out questions, and its
// R@K (ties: the first in retrieve.FeatureNames).
func bestAlone(features map[string]float64) (string, float64) {
	name, r := "", -1.0
	for _, fname := range retrieve.FeatureNames {
		if v, ok := features[fname]; ok && v > r {
			name, r = fname, v
		}
	}
	return name, r
}

// fitVariants fits the fusion and both rankers of f on the questions; rf (may be nil)
// receives the rankers' pair count.
func fitVariants(ctx context.Context, eng *engine.Engine, qs []question, sets []retrieve.CandidateSet, cfg Config, f *retrieve.Fitted, rf *RFit) error {
	f.Fusion = fitFusion(qs, sets, cfg.K, f.Fusion)
	for _, gated := range []bool{false, true} {
		r, pairs, err := trainRanker(ctx, eng, qs, sets, gated, cfg)
		if err != nil {
			return err
		}
		if gated {
			f.Ranker = r
		} else {
			f.NoGate = r
		}
		if rf != nil {
			rf.Pairs = pairs
		}
	}
	return nil
}

// column returns feature j of every candidate of cs.
func column(cs *retrieve.CandidateSet, j int) []float64 {
	out := make([]float64, len(cs.Chunks))
	for i := range out {
		out[i] = cs.X[i][j]
	}
	return out
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// tGain is the mean of the paired differences a−b over their standard error (0 when
// they are all equal; +Inf when a always wins by the same amount).
func tGain(a, b []float64) float64 {
	if len(a) != len(b) || len(a) < 2 {
		return 0
	}
	d := make([]float64, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
	}
	m := mean(d)
	ss := 0.0
	for _, x := range d {
		ss += (x - m) * (x - m)
	}
	se := math.Sqrt(ss / float64(len(d)-1) / float64(len(d)))
	switch {
	case se == 0 && m == 0:
		return 0
	case se == 0:
		return math.Copysign(math.Inf(1), m)
	}
	return m / se
}

// coverage is the share (%) of the questions' evidence groups with a chunk in the pool.
func coverage(qs []question, sets []retrieve.CandidateSet) float64 {
	hit, n := 0, 0
	for i, q := range qs {
		in := map[int32]bool{}
		for _, c := range sets[i].Chunks {
			in[c] = true
		}
		for _, g := range q.groups {
			n++
			for _, c := range g {
				if in[c] {
					hit++
					break
				}
			}
		}
	}
	if n == 0 {
		return 0
	}
	return 100 * float64(hit) / float64(n)
}

// fitFusion grid-searches BM25's weight μ in the final fusion, from 0.2 to 0.8 by
// 0.05, on the fitting questions by R@k, keeping the uncalibrated fusion's kind
// (reciprocal-rank by default); ties keep the candidate nearest the defaults (the
// first met: def itself is tried first). Neither ranking is dropped: synthetic
// questions cannot tell how lexical the real ones are, and a fusion that leaves BM25
// or the graph out loses where they differ (PubMedQA dev: ppr with μ = 0 fell from
// R@5 99.2 to 95.4 after template questions chose it). Nor can they choose between
// reciprocal-rank and linear fusion of min-max PPR mass: on MoreHopQA's template
// questions the best of each differed by 0.1 point of held-out R@5 (98.0 reciprocal-
// rank, 97.9 linear) and on its real questions by 3.6 (90.3 against 86.7), so which
// won turned on a wording change of the templates.
func fitFusion(qs []question, sets []retrieve.CandidateSet, k int, def retrieve.Fusion) retrieve.Fusion {
	cands := []retrieve.Fusion{def}
	for i := 4; i <= 16; i++ {
		cands = append(cands, retrieve.Fusion{Kind: def.Kind, Mu: float64(i) / 20})
	}
	best, bestR := def, -1.0
	for _, c := range cands {
		fit := retrieve.Fitted{Fusion: c}
		r := meanRecall(qs, sets, k, func(cs *retrieve.CandidateSet) []float64 { return fit.Score(retrieve.VariantFusion, cs) })
		if r > bestR+1e-9 {
			best, bestR = c, r
		}
	}
	return best
}

// SelectionAlpha is the one-sided chance, at most, that calibration replaces the
// defaults by a variant no better than them on held-out synthetic questions: 2.5 %.
const SelectionAlpha = 0.025

// MinGainT returns the least gain over the defaults, in standard errors of the paired
// per-question differences of held-out recall, for the best of m fitted variants to
// be used: the standard normal quantile 1 − SelectionAlpha/m. The best of m is picked
// after seeing them all, so each is held to SelectionAlpha/m (Bonferroni): 1.96 for
// one variant, 2.39 for the three fitted here. (Two standard errors for any m let the
// defaults go on the development sets where a variant led by t = 2.0 and 2.1 and
// the real questions then did no better or worse.)
func MinGainT(m int) float64 {
	return math.Sqrt2 * math.Erfinv(1-2*SelectionAlpha/float64(max(1, m)))
}
