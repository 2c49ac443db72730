// Package calibrate fits the final ranking of the graph retrievers (ppr, hyperppr) to
// a corpus from the corpus's own synthetic questions: SelfGraphRAG's point (seed 001)
// that questions generated from the graph, with known evidence, train a retriever
// without labelled data, applied to the fusion of PPR, BM25 and dense scores.
//
// Run generates questions with package synth (offline templates or an LLM) and fits,
// per retriever:
//
//   - fusion: the final PPR/BM25 fusion (reciprocal-rank or linear, BM25's weight μ)
//     by grid search;
//   - ranker-nogate: a linear ranker over per-passage features (retrieve.FeatureNames:
//     BM25 score and rank, PPR mass and rank, dense score and rank, the uncalibrated
//     rank, question-entity and linked-fact hits, title match, length) trained with a
//     pairwise hinge loss through models/train, starting from the uncalibrated ranking;
//   - ranker: the same with a per-question gate (retrieve.GateNames).
//
// Each variant is judged by cross-validation split by evidence chunk, repeated over
// Repeats deals of the chunks to folds: a question whose evidence chunks all fall in
// one fold is scored by the variant fitted without that fold — and without any
// question sharing an evidence chunk with it. The held-out recall of each variant, of
// the uncalibrated defaults and of each feature alone is reported; the best variant,
// refitted on every question, is used only when it beats the defaults there by
// MinGainT standard errors (template questions are more lexical than
// real ones: a variant that cannot win on held-out synthetic questions is not trusted
// on real ones). Evaluation files are never read.
package calibrate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
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
	// summaries, up to 1,500 of each before the split (seed 1).
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
	// SingleShare bounds the questions answerable from one passage (its facts all
	// stated by one chunk): at most as many as the multi-passage ones, or this share of
	// all questions when that is more. Template paths mostly stay inside one passage,
	// which BM25 alone answers; the graph's work is the questions whose evidence spans
	// passages. Default 0.1.
	SingleShare float64
	// MaxQuestions caps the questions kept (a seeded sample); default 900.
	MaxQuestions int
	// Ask bounds the candidates sent to the generator for each question shape, as a
	// multiple of MaxQuestions; default 1.25. They are drawn before generation by the
	// rule the kept questions follow (multi-passage ones first, single-passage ones
	// within SingleShare), since a call to the LLM generator is paid and a question
	// beyond MaxQuestions is thrown away: on the 2Wiki corpus the templates' 2,375
	// candidates gave 900 questions. The margin covers rejected pairs; a later shape
	// is asked only while questions are short.
	Ask float64
	// MinQuestions is the fewest questions below which the corpus is too small to
	// calibrate (the defaults are kept), and MinQuestions/Folds the fewest held-out
	// ones; default 45. Selection also needs a gain of MinGainT standard errors.
	MinQuestions int
	// K is the recall cut-off the selection compares (R@K); default 5, the cut-off
	// graphloom's reports lead with.
	K int
	// Depth is each ranking's contribution to a question's candidate pool;
	// default retrieve.CalibrationDepth (50).
	Depth int
	// Negatives is how many non-evidence candidates each evidence passage is paired
	// with: the half best ranked by the uncalibrated ranking, the rest drawn at random
	// from the pool. Default 16.
	Negatives int
	// Margin is the pairwise hinge's margin (train.PairwiseMargin); default 0.1 on
	// features in [0, 1].
	Margin float64
	// Pairs is the training batch size in pairs (one compiled shape); default 512.
	Pairs int
	// Train is the optimiser: AdamW, lr 0.01 constant, weight decay 0.01, 400 steps,
	// evaluation every 25 on a fifth of the fitting questions held back, patience 4.
	Train train.Config
	// Seed drives the split, the negative draws and the batches.
	Seed uint64
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	sc := synth.DefaultConfig()
	sc.MaxHop, sc.MaxSum = 1500, 1500
	tc := train.DefaultConfig()
	tc.Optimizer, tc.LearningRate, tc.MinLearningRate, tc.WeightDecay = "adamw", 0.01, 0.01, 0.01
	tc.TotalSteps, tc.EvalEvery, tc.Patience = 400, 25, 4
	return Config{Retrievers: []string{"ppr", "hyperppr"}, Synth: sc, Folds: 3, Repeats: 5, SingleShare: 0.1, MaxQuestions: 900, Ask: 1.25,
		MinQuestions: 45, K: 5, Depth: retrieve.CalibrationDepth, Negatives: 16, Margin: 0.1, Pairs: 512,
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
	case !(c.Ask >= 1):
		return fmt.Errorf("calibrate: candidates asked per shape %g × the question cap: want at least 1", c.Ask)
	case c.K < 1 || c.Depth < c.K || c.Negatives < 1 || c.Pairs < 1 || !(c.Margin > 0):
		return fmt.Errorf("calibrate: need K ≥ 1, Depth ≥ K, Negatives ≥ 1, Pairs ≥ 1, Margin > 0 (got %d, %d, %d, %d, %g)", c.K, c.Depth, c.Negatives, c.Pairs, c.Margin)
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
	Generator string  `json:"generator"`
	Created   string  `json:"created"`
	Seed      uint64  `json:"seed"`
	Generated int     `json:"generated"` // synthetic questions generated
	Questions int     `json:"questions"` // kept (after the single-passage bound and the cap)
	Multi     int     `json:"multi_passage"`
	Folds     int     `json:"folds"`
	Repeats   int     `json:"repeats,omitempty"`
	K         int     `json:"k"`
	TooSmall  string  `json:"too_small,omitempty"` // why nothing was fitted
	Fits      []*RFit `json:"retrievers"`
	Seconds   float64 `json:"seconds"`
	Synth     any     `json:"synth,omitempty"`
	Config    struct {
		SingleShare float64 `json:"single_share"`
		Depth       int     `json:"depth"`
		Negatives   int     `json:"negatives"`
		Margin      float64 `json:"margin"`
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
	// question scored by the variant fitted without its fold; Fitting is R@K of the
	// variants refitted on every question, on those questions.
	Validation map[string]float64 `json:"validation"`
	Validated  int                `json:"validation_questions"` // questions with every evidence chunk in one fold in at least one deal
	// Gain is each variant's mean held-out gain over the defaults divided by its
	// standard error (paired over the validation questions).
	Gain    map[string]float64 `json:"gain_t"`
	Fitting map[string]float64 `json:"fitting"`
	// Features is R@K (%) ranking by each feature alone, on the validation questions.
	Features map[string]float64 `json:"features_alone"`
	Fusion   retrieve.Fusion    `json:"fusion"`
	// Steps is each ranker's best step (final fit); Pairs its training pairs.
	Steps    map[string]int `json:"steps"`
	Pairs    int            `json:"pairs"`
	Coverage float64        `json:"pool_coverage"` // share of evidence inside the pools (%)
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
	rep.Config.SingleShare, rep.Config.Depth, rep.Config.Negatives, rep.Config.Margin = cfg.SingleShare, cfg.Depth, cfg.Negatives, cfg.Margin
	rep.Config.Steps, rep.Config.LR = cfg.Train.TotalSteps, cfg.Train.LearningRate
	cal := &retrieve.Calibration{Features: retrieve.FeatureNames, Gates: retrieve.GateNames, Generation: kg.Generation(ix),
		Retrievers: map[string]*retrieve.Fitted{}}
	var items []synth.Item
	if len(ix.Facts) > 0 {
		// The configured shape, then the others while questions are short of
		// MaxQuestions: three-fact paths and two-neighbour summaries.
		seen := map[string]bool{}
		var reps []*synth.Report
		for i, sc := range shapes(cfg.Synth) {
			if i > 0 && len(items) >= cfg.MaxQuestions {
				break
			}
			cands, srep := synth.Candidates(ix, sc)
			got, err := synth.RunCandidates(ctx, ix, gen, pick(ix, cands, cfg, i), srep, sc, progress)
			if err != nil {
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
		rep.Synth = reps
	}
	rep.Generated = len(items)
	qs := questions(ix, items, cfg)
	rep.Questions = len(qs)
	for _, q := range qs {
		if q.multi {
			rep.Multi++
		}
	}
	log(fmt.Sprintf("%d synthetic questions generated, %d kept (%d multi-passage), %d folds", len(items), len(qs), rep.Multi, cfg.Folds))
	if len(qs) < cfg.MinQuestions {
		rep.TooSmall = fmt.Sprintf("%d questions; calibration needs at least %d (a bigger corpus or graph, or --generator llm)", len(qs), cfg.MinQuestions)
	}
	for _, name := range cfg.Retrievers {
		if name == "hyperppr" && len(ix.Hyperedges) == 0 {
			continue
		}
		rf := &RFit{Retriever: name, Use: retrieve.VariantDefaults}
		f := &retrieve.Fitted{Use: retrieve.VariantDefaults, Fusion: retrieve.Fusion{Kind: retrieve.FusionRRF, Mu: s.Config().FinalBM25Weight},
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

// shapes returns the synthetic-question shapes tried in turn: sc, then sc with paths
// one fact longer, then with one in-neighbour fewer per summary (at least 2). The
// items a later shape shares with an earlier one are dropped by question.
func shapes(sc synth.Config) []synth.Config {
	longer := sc
	longer.PathLength++
	fewer := sc
	fewer.SumNeighbours = max(2, sc.SumNeighbours-1)
	out := []synth.Config{sc, longer}
	if fewer.SumNeighbours != sc.SumNeighbours {
		out = append(out, fewer)
	}
	return out
}

// pick draws the candidates of shape number shape sent to the generator: at most
// Ask × MaxQuestions, multi-passage ones first, single-passage ones within the bound
// questions applies (SingleShare), each class a seeded sample; in Candidates' order.
func pick(ix *graphio.Index, cands []synth.Candidate, cfg Config, shape int) []synth.Candidate {
	budget := int(math.Ceil(cfg.Ask * float64(cfg.MaxQuestions)))
	if len(cands) <= budget {
		return cands
	}
	var multi, single []int
	for i, c := range cands {
		var groups [][]int32
		for _, f := range c.Facts {
			if ch := ix.Facts[f].Chunks; len(ch) > 0 {
				groups = append(groups, ch)
			}
		}
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
	reserve := min(len(single), int(math.Ceil(cfg.SingleShare*float64(budget))))
	nm := min(len(multi), budget-reserve)
	ns := min(len(single), budget-nm, max(nm, reserve))
	keep := slices.Concat(multi[:nm], single[:ns])
	slices.Sort(keep)
	out := make([]synth.Candidate, len(keep))
	for k, i := range keep {
		out[k] = cands[i]
	}
	return out
}

// Plan is what calibrate would ask the generator of ix, per question shape in the
// order they are tried: candidates (the LLM generator's calls) and, with count, their
// prompt tokens. A shape after the first is asked only while fewer than MaxQuestions
// questions are kept, so the first is what a large corpus costs and the sum the most
// a small one can.
func Plan(ix *graphio.Index, cfg Config, count func(string) int) (calls, tokens []int) {
	if len(ix.Facts) == 0 {
		return nil, nil
	}
	for i, sc := range shapes(cfg.Synth) {
		cands, _ := synth.Candidates(ix, sc)
		cands = pick(ix, cands, cfg, i)
		calls, tokens = append(calls, len(cands)), append(tokens, synth.PlanTokens(ix, cands, sc, count))
	}
	return calls, tokens
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
	factOf := make(map[string]int32, len(ix.Facts))
	for i, f := range ix.Facts {
		factOf[f.ID] = int32(i)
	}
	var multi, single []question
	for _, it := range items {
		q := question{text: it.Question}
		for _, id := range it.FactIDs {
			f, ok := factOf[id]
			if !ok || len(ix.Facts[f].Chunks) == 0 {
				continue
			}
			q.groups = append(q.groups, ix.Facts[f].Chunks)
			q.chunks = append(q.chunks, ix.Facts[f].Chunks...)
		}
		if len(q.groups) == 0 {
			continue
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
	rng.Shuffle(len(single), func(i, j int) { single[i], single[j] = single[j], single[i] })
	single = single[:min(len(single), max(len(multi), int(math.Ceil(cfg.SingleShare*float64(len(multi)+len(single))))))]
	qs := append(multi, single...)
	rng.Shuffle(len(qs), func(i, j int) { qs[i], qs[j] = qs[j], qs[i] })
	qs = qs[:min(cfg.MaxQuestions, len(qs))]
	dealFolds(qs, len(ix.Chunks), cfg.Folds, cfg.Repeats, rng)
	return qs
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
	// Cross-validation, Repeats deals of the chunks to folds: fold k's questions (every
	// evidence chunk in fold k) scored by the variants fitted on the questions with no
	// evidence chunk in fold k. A question's held-out recall is its mean over the deals
	// that validated it.
	nv, nf := len(retrieve.Variants), len(retrieve.FeatureNames)
	sum := make([][]float64, len(qs)) // per question: variants' recall, then features'
	seen := make([]int, len(qs))
	for d := range cfg.Repeats {
		for k := range cfg.Folds {
			var trainQ []question
			var trainS []retrieve.CandidateSet
			var val []int
			for i, q := range qs {
				switch q.folds[d] {
				case 1 << k:
					val = append(val, i)
				default:
					if q.folds[d]&(1<<k) == 0 {
						trainQ, trainS = append(trainQ, q), append(trainS, sets[i])
					}
				}
			}
			if len(val) == 0 || len(trainQ) < 2*cfg.Folds {
				continue
			}
			fk := *f
			if err := fitVariants(ctx, eng, trainQ, trainS, cfg, &fk, nil); err != nil {
				return fmt.Errorf("calibrate: %s: deal %d, fold %d: %w", name, d+1, k+1, err)
			}
			for _, i := range val {
				q, cs := &qs[i], &sets[i]
				if sum[i] == nil {
					sum[i] = make([]float64, nv+nf)
				}
				seen[i]++
				for j, v := range retrieve.Variants {
					sum[i][j] += recallAt(q, cs, cs.Order(fk.Score(v, cs)), cfg.K)
				}
				for j := range nf {
					sum[i][nv+j] += recallAt(q, cs, cs.Order(column(cs, j)), cfg.K)
				}
			}
		}
	}
	held := map[string][]float64{}  // per variant, the held-out recall of each validation question
	alone := map[string][]float64{} // per feature, the same ranking by the feature alone
	nval := 0
	for i, n := range seen {
		if n == 0 {
			continue
		}
		nval++
		for j, v := range retrieve.Variants {
			held[v] = append(held[v], sum[i][j]/float64(n))
		}
		for j, fname := range retrieve.FeatureNames {
			alone[fname] = append(alone[fname], sum[i][nv+j]/float64(n))
		}
	}
	rf.Validated = nval
	if nval < cfg.MinQuestions/cfg.Folds {
		rf.Why = fmt.Sprintf("too small to calibrate: %d questions lie within one fold in some deal (their evidence split off from the rest); need %d", nval, cfg.MinQuestions/cfg.Folds)
		return nil
	}
	// The final fit, on every question.
	rf.Steps = map[string]int{}
	if err := fitVariants(ctx, eng, qs, sets, cfg, f, rf); err != nil {
		return fmt.Errorf("calibrate: %s: %w", name, err)
	}
	rf.Fusion = f.Fusion
	rf.Validation, rf.Fitting, rf.Features, rf.Gain = map[string]float64{}, map[string]float64{}, map[string]float64{}, map[string]float64{}
	for _, v := range retrieve.Variants {
		rf.Validation[v] = 100 * mean(held[v])
		rf.Fitting[v] = meanRecall(qs, sets, cfg.K, func(cs *retrieve.CandidateSet) []float64 { return f.Score(v, cs) })
		rf.Gain[v] = tGain(held[v], held[retrieve.VariantDefaults])
	}
	for fname, r := range alone {
		rf.Features[fname] = 100 * mean(r)
	}
	// The best variant by held-out recall, if its gain over the defaults is at least
	// MinGainT standard errors of the paired per-question differences for the number
	// of variants compared: a variant that wins by noise keeps the defaults.
	best, minT := retrieve.VariantDefaults, MinGainT(len(retrieve.Variants)-1)
	for _, v := range retrieve.Variants[1:] {
		if rf.Gain[v] >= minT && rf.Validation[v] > rf.Validation[best]+1e-9 {
			best = v
		}
	}
	f.Use, rf.Use = best, best
	if best == retrieve.VariantDefaults {
		rf.Why = fmt.Sprintf("no fitted variant beat the defaults' held-out R@%d %.1f by %.2f standard errors on %d synthetic questions: defaults kept", cfg.K, rf.Validation[best], minT, nval)
	} else {
		rf.Why = fmt.Sprintf("%s: held-out R@%d %.1f against the defaults' %.1f on %d synthetic questions (t = %.1f)", best, cfg.K, rf.Validation[best], rf.Validation[retrieve.VariantDefaults], nval, rf.Gain[best])
	}
	log(fmt.Sprintf("%s: %s", name, rf.Why))
	return nil
}

// fitVariants fits the fusion and both rankers of f on the questions; rf (may be nil)
// receives the rankers' best steps and pair count.
func fitVariants(ctx context.Context, eng *engine.Engine, qs []question, sets []retrieve.CandidateSet, cfg Config, f *retrieve.Fitted, rf *RFit) error {
	f.Fusion = fitFusion(qs, sets, cfg.K, f.Fusion)
	for _, gated := range []bool{false, true} {
		r, res, pairs, err := trainRanker(ctx, eng, qs, sets, gated, cfg)
		if err != nil {
			return err
		}
		v := retrieve.VariantNoGate
		if gated {
			f.Ranker, v = r, retrieve.VariantRanker
		} else {
			f.NoGate = r
		}
		if rf != nil {
			rf.Pairs = pairs
			rf.Steps[v] = res.BestStep
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

// fitFusion grid-searches the final fusion (rrf and linear, μ from 0.2 to 0.8 by
// 0.05) on the fitting questions by R@k; ties keep the candidate nearest the defaults
// (the first met: def itself is tried first). Neither ranking is dropped: synthetic
// questions cannot tell how lexical the real ones are, and a fusion that leaves BM25
// or the graph out loses where they differ (PubMedQA dev: ppr with μ = 0 fell from
// R@5 99.2 to 95.4 after template questions chose it).
func fitFusion(qs []question, sets []retrieve.CandidateSet, k int, def retrieve.Fusion) retrieve.Fusion {
	cands := []retrieve.Fusion{def}
	for _, kind := range []string{retrieve.FusionRRF, retrieve.FusionLinear} {
		for i := 4; i <= 16; i++ {
			cands = append(cands, retrieve.Fusion{Kind: kind, Mu: float64(i) / 20})
		}
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
