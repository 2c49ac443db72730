package calibrate

import (
	"context"
	"fmt"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/models"
	"github.com/graphloom/graphloom/models/train"
	"github.com/graphloom/graphloom/retrieve"
)

// unfitted marks the features the rankers are not fitted on (their weights stay 0):
// those that do not depend on the question. Fitted on synthetic questions, a
// question-independent weight learns how the generator samples evidence, not how
// anyone asks: the generator draws facts, so passages stating many facts — long ones —
// are evidence far more often than in real questions. On the example corpus the
// ungated ranker put its largest weight on length (1.2, against 0.25 on the
// uncalibrated rank). docs/calibration.md gives the effect on real questions.
var unfitted = [retrieve.NumFeatures]bool{retrieve.FeatLength: true}

// listBatch is every candidate of the fitting questions and every (evidence,
// non-evidence) pair of candidates of one question, the whole training set in one
// batch: per candidate its features x and gate features z, transposed (x [F, n] with the
// unfitted rows 0, z [G, n]; FeatureRanker.Score), pos and neg the pairs'
// candidate rows and w their weights, 1/(pairs of the question × questions) so that
// every question counts the same. n and p are padded to a size class (padding: row 0,
// weight 0) so that folds of similar size share a compiled shape.
type listBatch struct {
	x, z     []float32
	pos, neg []int32
	w        []float32
	n, p     int
}

// sizeClass rounds n up to one of eight sizes per power of two (at most 1/8 padding).
func sizeClass(n int) int {
	step := 1
	for step*16 <= n {
		step *= 2
	}
	return (n + step - 1) / step * step
}

// newListBatch builds the batch of the questions' candidates and pairs; it returns the
// pair count, 0 when no question has both evidence and other candidates in its pool.
func newListBatch(qs []question, sets []retrieve.CandidateSet) (listBatch, int) {
	var rows [][2][]float64 // x, z
	var pos, neg []int32
	var weights []float64 // per pair: 1/(pairs of its question)
	nq := 0
	for i, q := range qs {
		cs := &sets[i]
		gold := map[int32]bool{}
		for _, c := range q.chunks {
			gold[c] = true
		}
		var p, n []int32
		for j, c := range cs.Chunks {
			row := int32(len(rows) + j)
			if gold[c] {
				p = append(p, row)
			} else {
				n = append(n, row)
			}
		}
		if len(p) == 0 || len(n) == 0 {
			continue
		}
		for j := range cs.Chunks {
			rows = append(rows, [2][]float64{cs.X[j], cs.Z})
		}
		nq++
		pw := 1 / float64(len(p)*len(n))
		for _, a := range p {
			for _, b := range n {
				pos, neg = append(pos, a), append(neg, b)
				weights = append(weights, pw)
			}
		}
	}
	if len(pos) == 0 {
		return listBatch{}, 0
	}
	b := listBatch{n: sizeClass(len(rows)), p: sizeClass(len(pos))}
	b.x = make([]float32, retrieve.NumFeatures*b.n) // transposed: [F, n]
	b.z = make([]float32, retrieve.NumGates*b.n)
	for r, row := range rows {
		for j, v := range row[0] {
			if !unfitted[j] {
				b.x[j*b.n+r] = float32(v)
			}
		}
		for g, v := range row[1] {
			b.z[g*b.n+r] = float32(v)
		}
	}
	b.pos, b.neg, b.w = make([]int32, b.p), make([]int32, b.p), make([]float32, b.p)
	copy(b.pos, pos)
	copy(b.neg, neg)
	for i, x := range weights {
		b.w[i] = float32(x / float64(nq))
	}
	return b, len(pos)
}

// Inputs implements train.Batch.
func (b listBatch) Inputs() ([]*tensors.Tensor, error) {
	return []*tensors.Tensor{
		tensors.FromFlatDataAndDimensions(b.x, retrieve.NumFeatures, b.n),
		tensors.FromFlatDataAndDimensions(b.z, retrieve.NumGates, b.n),
		tensors.FromFlatDataAndDimensions(b.pos, b.p, 1),
		tensors.FromFlatDataAndDimensions(b.neg, b.p, 1),
		tensors.FromFlatDataAndDimensions(b.w, b.p),
	}, nil
}

// ShapeKey implements train.Batch.
func (b listBatch) ShapeKey() string { return fmt.Sprintf("n%d-p%d", b.n, b.p) }

// rankNetTask is the ranker with RankNet's pairwise logistic loss and a pull towards
// its starting weights.
type rankNetTask struct {
	*models.FeatureRanker
	w0           []float32
	sigma, prior float64
}

// LossFn implements train.Task.
func (t rankNetTask) LossFn(b train.Batch) (func(scope *model.Scope, in []*graph.Node, training bool) *graph.Node, error) {
	if _, ok := b.(listBatch); !ok {
		return nil, fmt.Errorf("calibrate: want a candidate batch, got %T", b)
	}
	return func(scope *model.Scope, in []*graph.Node, _ bool) *graph.Node {
		s := t.Score(scope, in[0], in[1])
		pos, neg := graph.Gather(s, in[2]), graph.Gather(s, in[3])
		loss := train.PairwiseLogistic(pos, neg, in[4], t.sigma)
		w0 := graph.Const(in[0].Graph(), t.w0)
		return graph.Add(loss, graph.MulScalar(t.Penalty(in[0].Graph(), w0), t.prior))
	}, nil
}

// trainRanker trains a ranker on the questions, starting from the uncalibrated ranking
// (defaultRanker): linear, or gated — with cfg.Hidden hidden units over the passage's
// and the question's features. Every question's (evidence, non-evidence) candidate
// pairs are one batch; RankNet's loss with slope cfg.Sigma plus cfg.Prior·½‖θ − θ₀‖²
// is minimised by cfg.Train (Adam) for its TotalSteps. It returns the ranker and how
// many pairs it was trained on.
func trainRanker(ctx context.Context, eng *engine.Engine, qs []question, sets []retrieve.CandidateSet, gated bool, cfg Config) (retrieve.Ranker, int, error) {
	b, npairs := newListBatch(qs, sets)
	if npairs == 0 {
		return retrieve.Ranker{}, 0, fmt.Errorf("no training pairs: the candidate pools hold no evidence (%d questions)", len(qs))
	}
	init := defaultRanker(false)
	w0 := make([]float32, len(init.W))
	for j, w := range init.W {
		w0[j] = float32(w)
	}
	hidden := 0
	if gated {
		hidden = cfg.Hidden
	}
	fr, err := models.NewFeatureRanker(w0, unfitted[:], retrieve.NumGates, hidden, cfg.Seed)
	if err != nil {
		return retrieve.Ranker{}, 0, err
	}
	task := rankNetTask{FeatureRanker: fr, w0: w0, sigma: cfg.Sigma, prior: cfg.Prior}
	tc := cfg.Train
	tc.Seed = int64(cfg.Seed)
	tr, err := train.NewTask(eng, task, tc)
	if err != nil {
		return retrieve.Ranker{}, 0, err
	}
	defer eng.Release(fr.Store()) // one ranker per fit: 32 fits per retriever would keep their executables
	kb, err := train.Keep(b)      // the same batch every step
	if err != nil {
		return retrieve.Ranker{}, 0, err
	}
	defer kb.Release()
	for range tc.TotalSteps { // no early stopping: the last step's weights
		if err := ctx.Err(); err != nil {
			return retrieve.Ranker{}, 0, err
		}
		if _, err := tr.StepBatches(kb); err != nil {
			return retrieve.Ranker{}, 0, err
		}
	}
	w, u, c, a, err := fr.Weights()
	if err != nil {
		return retrieve.Ranker{}, 0, err
	}
	return retrieve.Ranker{W: w, U: u, C: c, A: a}, npairs, nil
}
