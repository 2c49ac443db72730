package rerank

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/kernels"
	"github.com/graphloom/graphloom/models/train"
)

// TrainConfig configures the encoder's diversity objective. The paper trains Z with "a
// diversity objective that separates structurally distinct passage graphs" and gives
// no loss; we use GraphCL-style contrastive learning (You et al. 2020): two random
// views of each passage graph (edge dropping, node-feature masking) are positives,
// the other passages of the batch negatives, under a symmetric InfoNCE on
// L2-normalised Z — it pulls a graph's views together and pushes distinct graphs
// apart, which is what prevents the embedding collapse the paper's appendix warns of.
type TrainConfig struct {
	Train       train.Config // optimiser, schedule, steps, early stopping
	Pairs       int          // passages per batch (≤ 32: two views fill 64 graph slots; a third of the passages on small corpora); default 32
	Temperature float64      // InfoNCE temperature; default 0.2 (GraphCL)
	EdgeDrop    float64      // probability of dropping an edge (with its inverse) per view; default 0.2
	FeatureMask float64      // probability of zeroing a node's features per view; default 0.1
	EvalFrac    float64      // share of passages held out for early stopping; default 0.1
	Seed        uint64       // views and split
}

// DefaultTrainConfig returns the defaults documented on TrainConfig: AdamW, lr 1e-3,
// 100 warm-up steps, 600 steps, evaluation every 50 with patience 4.
func DefaultTrainConfig() TrainConfig {
	tc := train.DefaultConfig()
	tc.Optimizer, tc.LearningRate, tc.MinLearningRate = "adamw", 1e-3, 1e-4
	tc.WarmupSteps, tc.TotalSteps, tc.EvalEvery, tc.Patience = 100, 600, 50, 4
	tc.WeightDecay, tc.ClipNorm = 1e-4, 1
	return TrainConfig{Train: tc, Pairs: 32, Temperature: 0.2, EdgeDrop: 0.2, FeatureMask: 0.1, EvalFrac: 0.1, Seed: 42}
}

// Validate checks the configuration.
func (c TrainConfig) Validate() error {
	switch {
	case c.Pairs < 2 || c.Pairs > 32:
		return fmt.Errorf("rerank: train: Pairs %d not in [2, 32]", c.Pairs)
	case !(c.Temperature > 0):
		return fmt.Errorf("rerank: train: Temperature %g must be > 0", c.Temperature)
	case c.EdgeDrop < 0 || c.EdgeDrop >= 1 || c.FeatureMask < 0 || c.FeatureMask >= 1:
		return errors.New("rerank: train: EdgeDrop and FeatureMask must be in [0, 1)")
	case c.EvalFrac <= 0 || c.EvalFrac >= 1:
		return fmt.Errorf("rerank: train: EvalFrac %g not in (0, 1)", c.EvalFrac)
	}
	return c.Train.Validate()
}

// view returns a random view of g: edges dropped in forward/inverse pairs with
// probability edgeDrop, node feature rows zeroed with probability featureMask.
func view(g *kernels.Graph, rng *rand.Rand, edgeDrop, featureMask float64, featDim int) *kernels.Graph {
	v := &kernels.Graph{NumNodes: g.NumNodes, NodeType: g.NodeType, X: append([]float32(nil), g.X...)}
	for k := 0; k+1 < g.NumEdges(); k += 2 {
		if rng.Float64() < edgeDrop {
			continue
		}
		v.Src = append(v.Src, g.Src[k], g.Src[k+1])
		v.Dst = append(v.Dst, g.Dst[k], g.Dst[k+1])
		v.EdgeType = append(v.EdgeType, g.EdgeType[k], g.EdgeType[k+1])
		v.EdgeWeight = append(v.EdgeWeight, g.EdgeWeight[k], g.EdgeWeight[k+1])
	}
	for i := range g.NumNodes {
		if rng.Float64() < featureMask {
			clear(v.X[i*featDim : (i+1)*featDim])
		}
	}
	return v
}

// pairBatch holds two views of up to Pairs graphs: view 1 in slots [0, P), view 2 in
// [P, 2P); empty graphs pad missing pairs, whose weight is 0.
type pairBatch struct {
	b       *kernels.Batch
	pairs   int
	weights []float32
}

func (p pairBatch) Inputs() ([]*tensors.Tensor, error) {
	return append(p.b.Tensors(), tensors.FromFlatDataAndDimensions(p.weights, p.pairs)), nil
}

func (p pairBatch) ShapeKey() string { return fmt.Sprintf("%s/p%d", p.b.ShapeKey(), p.pairs) }

// contrastiveTask is the encoder under the symmetric InfoNCE of two views.
type contrastiveTask struct {
	*Encoder
	temperature float64
}

// lossAndZ builds the loss and the normalised Z of a pair batch.
func (t contrastiveTask) lossAndZ(spec kernels.Spec, layout kernels.Layout, pairs int, in []*graph.Node) (*graph.Node, *graph.Node) {
	nb := kernels.NumInputs(spec, layout)
	bn, err := kernels.NewBatchNodes(spec, layout, in[:nb])
	if err != nil {
		panic(err)
	}
	z := t.Embed(bn)
	norm := graph.Sqrt(graph.AddScalar(graph.ReduceSum(graph.Square(z), -1), 1e-12))
	z = graph.Div(z, graph.InsertAxes(norm, -1))
	q := graph.Slice(z, graph.AxisRange(0, pairs))
	k := graph.Slice(z, graph.AxisRange(pairs, 2*pairs))
	w := in[nb]
	loss := graph.DivScalar(graph.Add(train.InfoNCE(q, k, w, t.temperature), train.InfoNCE(k, q, w, t.temperature)), 2)
	return loss, z
}

// LossFn implements train.Task.
func (t contrastiveTask) LossFn(b train.Batch) (func(scope *model.Scope, in []*graph.Node, training bool) *graph.Node, error) {
	pb, ok := b.(pairBatch)
	if !ok {
		return nil, fmt.Errorf("rerank: train: want a pair batch, got %T", b)
	}
	spec, layout, pairs := pb.b.Spec, pb.b.Layout, pb.pairs
	return func(_ *model.Scope, in []*graph.Node, _ bool) *graph.Node {
		loss, _ := t.lossAndZ(spec, layout, pairs, in)
		return loss
	}, nil
}

// makePairs featurises passages idx and packs two views of each.
func (e *Encoder) makePairs(gs []*kernels.Graph, idx []int, pairs int, rng *rand.Rand, tc TrainConfig) (pairBatch, error) {
	all := make([]*kernels.Graph, 2*pairs)
	weights := make([]float32, pairs)
	f := e.cfg.FeatDim()
	for p := range pairs {
		if p >= len(idx) {
			all[p], all[pairs+p] = &kernels.Graph{}, &kernels.Graph{}
			continue
		}
		g := gs[idx[p]]
		all[p] = view(g, rng, tc.EdgeDrop, tc.FeatureMask, f)
		all[pairs+p] = view(g, rng, tc.EdgeDrop, tc.FeatureMask, f)
		weights[p] = 1
	}
	b, err := e.bucket.Batch(all)
	if err != nil {
		return pairBatch{}, err
	}
	return pairBatch{b: b, pairs: pairs, weights: weights}, nil
}

// TrainResult is the training result plus the evaluation before the first step.
type TrainResult struct {
	*train.Result
	Initial  train.Metrics // held-out metrics of the untrained encoder
	Passages int           // passages with edges (train + held out)
}

// Train fits the encoder on passage texts with the contrastive diversity objective
// and returns the training result (the best evaluation's weights are restored).
// Passages whose graph has no edge carry no structure and are skipped.
func Train(ctx context.Context, eng *engine.Engine, enc *Encoder, texts []string, tc TrainConfig, log io.Writer) (*TrainResult, error) {
	if err := tc.Validate(); err != nil {
		return nil, err
	}
	parser := NewParser()
	var gs []*kernels.Graph
	for i, t := range texts {
		pg, err := parser.Parse(t)
		if err != nil {
			return nil, fmt.Errorf("rerank: train: passage %d: %w", i, err)
		}
		if len(pg.Edges) == 0 {
			continue
		}
		gs = append(gs, enc.cfg.Featurize(pg))
	}
	// Small corpora train with smaller batches: a third of the passages per batch, so
	// that a held-out batch and two training batches exist.
	tc.Pairs = min(tc.Pairs, len(gs)/3)
	if tc.Pairs < 2 {
		return nil, fmt.Errorf("rerank: train: %d passages with edges, need at least 6", len(gs))
	}
	rng := rand.New(rand.NewPCG(tc.Seed, 1))
	perm := rng.Perm(len(gs))
	nEval := max(tc.Pairs, int(math.Round(tc.EvalFrac*float64(len(gs)))))
	evalIdx, trainIdx := perm[:nEval], perm[nEval:]
	if len(trainIdx) < tc.Pairs {
		return nil, fmt.Errorf("rerank: train: %d training passages, need at least %d", len(trainIdx), tc.Pairs)
	}
	// Fixed evaluation batches (views drawn once).
	erng := rand.New(rand.NewPCG(tc.Seed, 104729))
	var evalBatches []pairBatch
	for s := 0; s < len(evalIdx); s += tc.Pairs {
		pb, err := enc.makePairs(gs, evalIdx[s:min(s+tc.Pairs, len(evalIdx))], tc.Pairs, erng, tc)
		if err != nil {
			return nil, err
		}
		evalBatches = append(evalBatches, pb)
	}
	task := contrastiveTask{Encoder: enc, temperature: tc.Temperature}
	tr, err := train.NewTask(eng, task, tc.Train)
	if err != nil {
		return nil, err
	}
	tr.Log = log
	order := append([]int(nil), trainIdx...)
	pos := len(order)
	next := func(int) ([]train.Batch, error) {
		if pos+tc.Pairs > len(order) {
			rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			pos = 0
		}
		pb, err := enc.makePairs(gs, order[pos:pos+tc.Pairs], tc.Pairs, rng, tc)
		pos += tc.Pairs
		return []train.Batch{pb}, err
	}
	eval := func() (train.Metrics, error) { return task.evaluate(eng, evalBatches) }
	initial, err := eval()
	if err != nil {
		return nil, err
	}
	res, err := tr.FitTask(ctx, next, eval)
	if err != nil {
		return nil, err
	}
	return &TrainResult{Result: res, Initial: initial, Passages: len(gs)}, nil
}

// evaluate returns the mean InfoNCE loss over the batches and, as Accuracy, the share of
// first views whose nearest second view (by cosine) is their own (AUC is left 0).
func (t contrastiveTask) evaluate(eng *engine.Engine, bs []pairBatch) (train.Metrics, error) {
	var m train.Metrics
	hits, n := 0, 0
	for _, pb := range bs {
		spec, layout, pairs := pb.b.Spec, pb.b.Layout, pb.pairs
		exe, err := eng.Exec(engine.Key{Name: EncoderKind + "/eval", Bucket: pb.ShapeKey()}, t.store,
			func(_ *model.Scope, in []*graph.Node) []*graph.Node {
				loss, z := t.lossAndZ(spec, layout, pairs, in)
				return []*graph.Node{loss, z}
			})
		if err != nil {
			return m, err
		}
		inputs, _ := pb.Inputs()
		outs, err := exe.Call(inputs...)
		engine.Finalize(inputs...)
		if err != nil {
			return m, fmt.Errorf("rerank: evaluate: %w", err)
		}
		loss := tensors.MustCopyFlatData[float32](outs[0])[0]
		z := tensors.MustCopyFlatData[float32](outs[1])
		engine.Finalize(outs...)
		real := 0
		for _, w := range pb.weights {
			if w > 0 {
				real++
			}
		}
		m.Loss += float64(loss) * float64(real)
		h := t.cfg.Hidden
		for p := range real {
			best, bestJ := math.Inf(-1), -1
			for j := range real {
				s := cosine(z[p*h:(p+1)*h], z[(pairs+j)*h:(pairs+j+1)*h])
				if s > best {
					best, bestJ = s, j
				}
			}
			if bestJ == p {
				hits++
			}
		}
		n += real
	}
	if n == 0 {
		return m, errors.New("rerank: evaluate: no pairs")
	}
	m.Loss /= float64(n)
	m.Accuracy = float64(hits) / float64(n)
	m.AUC = 0 // undefined for this task; NaN would break the JSONL log (encoding/json rejects it)
	m.N = n
	return m, nil
}
