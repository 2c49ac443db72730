package calibrate

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/models"
	"github.com/graphloom/graphloom/models/train"
	"github.com/graphloom/graphloom/retrieve"
)

// pair is one (evidence, non-evidence) candidate pair of a question, weighted so that
// every question counts the same.
type pair struct {
	pos, neg []float64
	z        []float64
	w        float64
}

// pairs draws the training pairs of the questions: each evidence candidate against
// the cfg.Negatives/2 best-ranked non-evidence candidates by the uncalibrated ranking
// and as many drawn at random from the rest of the pool.
func pairs(qs []question, sets []retrieve.CandidateSet, cfg Config, rng *rand.Rand) []pair {
	var out []pair
	for i, q := range qs {
		cs := &sets[i]
		gold := map[int32]bool{}
		for _, c := range q.chunks {
			gold[c] = true
		}
		var pos, neg []int
		for j, c := range cs.Chunks {
			if gold[c] {
				pos = append(pos, j)
			} else {
				neg = append(neg, j)
			}
		}
		if len(pos) == 0 || len(neg) == 0 {
			continue
		}
		// Hard negatives: the best ranked by the defaults.
		byDefault := cs.Order(cs.DefaultScores())
		var hard []int
		for _, j := range byDefault {
			if !gold[cs.Chunks[j]] {
				hard = append(hard, j)
			}
		}
		var mine []pair
		for _, p := range pos {
			chosen := map[int]bool{}
			for _, j := range hard[:min(cfg.Negatives/2, len(hard))] {
				chosen[j] = true
			}
			for tries := 0; len(chosen) < min(cfg.Negatives, len(neg)) && tries < 4*cfg.Negatives; tries++ {
				chosen[neg[rng.IntN(len(neg))]] = true
			}
			for _, j := range neg { // in pool order: deterministic
				if chosen[j] {
					mine = append(mine, pair{pos: cs.X[p], neg: cs.X[j], z: cs.Z})
				}
			}
		}
		for k := range mine {
			mine[k].w = 1 / float64(len(mine))
		}
		out = append(out, mine...)
	}
	return out
}

// unfitted marks the features the rankers are not fitted on (their weights stay 0):
// those that do not depend on the question. Fitted on synthetic questions, a
// question-independent weight learns how the generator samples evidence, not how
// anyone asks: the generator draws facts, so passages stating many facts — long ones —
// are evidence far more often than in real questions. On the example corpus the
// ungated ranker put its largest weight on length (1.2, against 0.25 on the
// uncalibrated rank). docs/calibration.md gives the effect on real questions.
var unfitted = [retrieve.NumFeatures]bool{retrieve.FeatLength: true}

// pairBatch is a fixed-size batch of pairs (padding has weight 0).
type pairBatch struct {
	xp, xn, z, w []float32
	n            int
}

func newPairBatch(ps []pair, n int) pairBatch {
	b := pairBatch{xp: make([]float32, n*retrieve.NumFeatures), xn: make([]float32, n*retrieve.NumFeatures),
		z: make([]float32, n*retrieve.NumGates), w: make([]float32, n), n: n}
	for i, p := range ps[:min(n, len(ps))] {
		for j := range retrieve.NumFeatures {
			if unfitted[j] {
				continue // 0 in every batch: its weight keeps its starting 0
			}
			b.xp[i*retrieve.NumFeatures+j] = float32(p.pos[j])
			b.xn[i*retrieve.NumFeatures+j] = float32(p.neg[j])
		}
		for g := range retrieve.NumGates {
			b.z[i*retrieve.NumGates+g] = float32(p.z[g])
		}
		b.w[i] = float32(p.w)
	}
	return b
}

// Inputs implements train.Batch.
func (b pairBatch) Inputs() ([]*tensors.Tensor, error) {
	return []*tensors.Tensor{
		tensors.FromFlatDataAndDimensions(b.xp, b.n, retrieve.NumFeatures),
		tensors.FromFlatDataAndDimensions(b.xn, b.n, retrieve.NumFeatures),
		tensors.FromFlatDataAndDimensions(b.z, b.n, retrieve.NumGates),
		tensors.FromFlatDataAndDimensions(b.w, b.n),
	}, nil
}

// ShapeKey implements train.Batch.
func (b pairBatch) ShapeKey() string { return fmt.Sprintf("p%d", b.n) }

// pairTask is the ranker with the pairwise hinge loss.
type pairTask struct {
	*models.LinearRanker
	margin float64
}

// LossFn implements train.Task.
func (t pairTask) LossFn(b train.Batch) (func(scope *model.Scope, in []*graph.Node, training bool) *graph.Node, error) {
	if _, ok := b.(pairBatch); !ok {
		return nil, fmt.Errorf("calibrate: want a pair batch, got %T", b)
	}
	return func(scope *model.Scope, in []*graph.Node, _ bool) *graph.Node {
		pos := t.Score(scope, in[0], in[2])
		neg := t.Score(scope, in[1], in[2])
		return train.PairwiseMargin(pos, neg, in[3], t.margin)
	}, nil
}

// hinge is the weighted mean pairwise hinge of ranker r over ps, in float64: the
// early-stopping loss.
func hinge(r retrieve.Ranker, ps []pair, margin float64) float64 {
	sum, w := 0.0, 0.0
	for _, p := range ps {
		d := margin - r.ScoreOf(p.pos, p.z) + r.ScoreOf(p.neg, p.z) // an ungated r ignores z
		sum += p.w * max(0, d)
		w += p.w
	}
	if w == 0 {
		return 0
	}
	return sum / w
}

// holdBack splits the questions by evidence chunk: a third of the chunks (at random)
// are held back; the questions whose evidence chunks all lie there are held back,
// those with none there are kept for fitting, and the rest are left out, so that no
// chunk's questions are on both sides.
func holdBack(qs []question, sets []retrieve.CandidateSet, rng *rand.Rand) (fitQ []question, fitS []retrieve.CandidateSet, heldQ []question, heldS []retrieve.CandidateSet) {
	chunks := int32(0)
	for _, q := range qs {
		for _, c := range q.chunks {
			chunks = max(chunks, c+1)
		}
	}
	held := make([]bool, chunks)
	for i, c := range rng.Perm(int(chunks)) {
		held[c] = i%3 == 0
	}
	for i, q := range qs {
		n := 0
		for _, c := range q.chunks {
			if held[c] {
				n++
			}
		}
		switch n {
		case len(q.chunks):
			heldQ, heldS = append(heldQ, q), append(heldS, sets[i])
		case 0:
			fitQ, fitS = append(fitQ, q), append(fitS, sets[i])
		}
	}
	return fitQ, fitS, heldQ, heldS
}

// rankerScores scores the candidates of cs with r (an ungated r ignores the gate).
func rankerScores(r *retrieve.Ranker, cs *retrieve.CandidateSet) []float64 {
	out := make([]float64, len(cs.Chunks))
	for j := range out {
		out[j] = r.ScoreOf(cs.X[j], cs.Z)
	}
	return out
}

// trainRanker trains a (gated) ranker on the fitting questions, starting from the
// uncalibrated ranking, with the pairwise hinge. The number of steps is chosen on
// questions held back by evidence chunk (holdBack): trained on the others, training
// stops early on the held-back pairs' hinge, and if the held-back questions' R@K is
// then no better than the starting ranking's, that ranking stands. Otherwise the ranker
// is trained again on every question for the chosen number of steps.
func trainRanker(ctx context.Context, eng *engine.Engine, qs []question, sets []retrieve.CandidateSet, gated bool, cfg Config) (retrieve.Ranker, *train.Result, int, error) {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x7a1d))
	init := defaultRanker(gated)
	fitQ, fitS, heldQ, heldS := holdBack(qs, sets, rng)
	fitP, heldP := pairs(fitQ, fitS, cfg, rng), pairs(heldQ, heldS, cfg, rng)
	allP := pairs(qs, sets, cfg, rng)
	if len(allP) == 0 {
		return retrieve.Ranker{}, nil, 0, fmt.Errorf("no training pairs: the candidate pools hold no evidence (%d questions)", len(qs))
	}
	if len(fitP) == 0 || len(heldP) == 0 {
		return init, &train.Result{}, len(allP), nil // nothing to choose the steps on
	}
	heldRecall := func(r retrieve.Ranker) float64 {
		return meanRecall(heldQ, heldS, cfg.K, func(cs *retrieve.CandidateSet) []float64 { return rankerScores(&r, cs) })
	}
	r, res, err := fitRanker(ctx, eng, fitP, heldP, gated, cfg, cfg.Train.TotalSteps, cfg.Train.Patience, rng)
	if err != nil {
		return retrieve.Ranker{}, nil, 0, err
	}
	if res.BestStep == 0 || heldRecall(r) <= heldRecall(init)+1e-9 {
		res.BestStep = 0
		return init, res, len(allP), nil
	}
	steps := res.BestStep
	r, res, err = fitRanker(ctx, eng, allP, allP, gated, cfg, steps, 0, rng)
	if err != nil {
		return retrieve.Ranker{}, nil, 0, err
	}
	res.BestStep = steps
	return r, res, len(allP), nil
}

// fitRanker trains a ranker from the uncalibrated ranking on trainP for at most steps
// steps, keeping the weights of the least hinge on evalP (evaluated every
// Train.EvalEvery steps; patience 0: no early stop).
func fitRanker(ctx context.Context, eng *engine.Engine, trainP, evalP []pair, gated bool, cfg Config, steps, patience int, rng *rand.Rand) (retrieve.Ranker, *train.Result, error) {
	init := defaultRanker(gated)
	w0 := make([]float32, len(init.W))
	for j, w := range init.W {
		w0[j] = float32(w)
	}
	gates := 0
	if gated {
		gates = retrieve.NumGates
	}
	lr, err := models.NewLinearRanker(w0, gates)
	if err != nil {
		return retrieve.Ranker{}, nil, err
	}
	task := pairTask{LinearRanker: lr, margin: cfg.Margin}
	tc := cfg.Train
	tc.Seed = int64(cfg.Seed)
	tc.TotalSteps, tc.Patience = steps, patience
	tc.EvalEvery = min(tc.EvalEvery, steps)
	tr, err := train.NewTask(eng, task, tc)
	if err != nil {
		return retrieve.Ranker{}, nil, err
	}
	// Batches: the training pairs reshuffled every pass, cfg.Pairs at a time.
	order := rng.Perm(len(trainP))
	pos := 0
	next := func(int) ([]train.Batch, error) {
		batch := make([]pair, 0, cfg.Pairs)
		for len(batch) < min(cfg.Pairs, len(trainP)) {
			if pos == len(order) {
				rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
				pos = 0
			}
			batch = append(batch, trainP[order[pos]])
			pos++
		}
		// Each pair keeps its question's weight: PairwiseMargin divides by the batch's
		// weight sum, so every question counts the same however many pairs it has.
		return []train.Batch{newPairBatch(batch, cfg.Pairs)}, nil
	}
	current := func() (retrieve.Ranker, error) {
		w, v, err := lr.Weights()
		if err != nil {
			return retrieve.Ranker{}, err
		}
		return retrieve.Ranker{W: w, V: v}, nil
	}
	eval := func() (train.Metrics, error) {
		r, err := current()
		if err != nil {
			return train.Metrics{}, err
		}
		return train.Metrics{Loss: hinge(r, evalP, cfg.Margin), N: len(evalP)}, nil
	}
	res, err := tr.FitTask(ctx, next, eval)
	if err != nil {
		return retrieve.Ranker{}, nil, err
	}
	r, err := current()
	return r, res, err
}
