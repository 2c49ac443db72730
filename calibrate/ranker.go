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
		z := p.z
		if r.V == nil {
			z = nil
		}
		d := margin - r.ScoreOf(p.pos, z) + r.ScoreOf(p.neg, z)
		sum += p.w * max(0, d)
		w += p.w
	}
	if w == 0 {
		return 0
	}
	return sum / w
}

// trainRanker trains a (gated) ranker on the fitting questions, a fifth of them held
// back for early stopping, starting from the uncalibrated ranking.
func trainRanker(ctx context.Context, eng *engine.Engine, qs []question, sets []retrieve.CandidateSet, gated bool, cfg Config) (retrieve.Ranker, *train.Result, int, error) {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x7a1d))
	var trainQ, heldQ []question
	var trainS, heldS []retrieve.CandidateSet
	for i := range qs {
		if i%5 == 4 {
			heldQ, heldS = append(heldQ, qs[i]), append(heldS, sets[i])
		} else {
			trainQ, trainS = append(trainQ, qs[i]), append(trainS, sets[i])
		}
	}
	trainP, heldP := pairs(trainQ, trainS, cfg, rng), pairs(heldQ, heldS, cfg, rng)
	if len(trainP) == 0 || len(heldP) == 0 {
		return retrieve.Ranker{}, nil, 0, fmt.Errorf("no training pairs: the candidate pools hold no evidence (%d, %d questions)", len(trainQ), len(heldQ))
	}
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
		return retrieve.Ranker{}, nil, 0, err
	}
	task := pairTask{LinearRanker: lr, margin: cfg.Margin}
	tc := cfg.Train
	tc.Seed = int64(cfg.Seed)
	tr, err := train.NewTask(eng, task, tc)
	if err != nil {
		return retrieve.Ranker{}, nil, 0, err
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
		return train.Metrics{Loss: hinge(r, heldP, cfg.Margin), N: len(heldP)}, nil
	}
	res, err := tr.FitTask(ctx, next, eval)
	if err != nil {
		return retrieve.Ranker{}, nil, 0, err
	}
	r, err := current()
	return r, res, len(trainP), err
}
