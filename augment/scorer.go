package augment

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"slices"
	"time"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kernels"
	"github.com/graphloom/graphloom/models/train"
)

// Scorer is the trainable missingness classifier: one logit per graph (sigmoid = the
// probability that the subgraph is incomplete).
type Scorer interface {
	// TrainStep takes one optimizer step on a batch of labelled graphs and returns the
	// mean BCE before the update.
	TrainStep(graphs []*kernels.Graph, labels []float32) (float64, error)
	// Logits scores graphs without dropout.
	Logits(graphs []*kernels.Graph) ([]float32, error)
	// Snapshot remembers the current weights; Restore brings the remembered ones back.
	Snapshot() error
	Restore() error
	// Save writes a checkpoint atomically.
	Save(path string) error
}

// TrainReport summarises the scorer's training.
type TrainReport struct {
	Reused        bool      `json:"reused_checkpoint"`
	Epochs        int       `json:"epochs"`
	BestEpoch     int       `json:"best_epoch"`
	TrainViews    int       `json:"train_views_per_epoch"`
	EvalViews     int       `json:"eval_views"`
	EvalBCE       float64   `json:"eval_bce"`
	EvalAccuracy  float64   `json:"eval_accuracy"`
	EvalAUC       float64   `json:"eval_roc_auc"`
	RankingAcc    float64   `json:"eval_ranking_accuracy"` // corrupted view scored above the clean view of its root
	SizeBaseline  float64   `json:"size_baseline_roc_auc"` // node-count-only classifier on the same views
	SizeMatched   bool      `json:"size_matched"`
	Seconds       float64   `json:"seconds"`
	Compilations  int64     `json:"compilations"` // executables the scorer compiled while training
	History       []EvalRow `json:"history"`
	Fingerprint   string    `json:"fingerprint"`
	ChecksumError string    `json:"-"`
}

// EvalRow is one evaluation during training.
type EvalRow struct {
	Epoch     int     `json:"epoch"`
	TrainLoss float64 `json:"train_loss"`
	EvalBCE   float64 `json:"eval_bce"`
	Accuracy  float64 `json:"accuracy"`
	AUC       float64 `json:"roc_auc"`
	Ranking   float64 `json:"ranking_accuracy"`
}

func sigmoid(z float64) float64 { return 1 / (1 + math.Exp(-z)) }

// fingerprint identifies the training problem: the graph and every setting that
// changes the trained weights.
func fingerprint(ix *graphio.Index, cfg Config) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s|%d|%d|%d\n", ix.Meta.Embedder, len(ix.Entities), len(ix.Facts), len(ix.Synonyms))
	for _, f := range ix.Facts {
		io.WriteString(h, f.ID)
	}
	for _, s := range ix.Synonyms {
		fmt.Fprintf(h, "%d-%d;", s.A, s.B)
	}
	t := struct {
		W, WR, CW int
		C, AF, AS float64
		MN, MF    int
		FM, ED    float64
		TR, ER    int
		SM        bool
		E         int
		LR        float64
		EE, P     int
		MD        float64
		H         int
		D         float64
		S         int64
	}{cfg.WalkLength, cfg.WalksPerRoot, cfg.CleanWalksPerRoot, cfg.WeightClip, cfg.FactWalkScale, cfg.SynonymWalkScale,
		cfg.MinNodes, cfg.MinFactEdges, cfg.FactMaskRatio, cfg.EntityDeleteRatio, cfg.TrainRoots, cfg.EvalRoots,
		cfg.SizeMatched, cfg.Epochs, cfg.LearningRate, cfg.EvalEvery, cfg.Patience, cfg.MinDelta, cfg.Hidden, cfg.Dropout, cfg.Seed}
	b, _ := json.Marshal(t)
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// obtainScorer loads the checkpoint when it was trained for this graph and settings
// (its sidecar report holds the fingerprint), or trains a new scorer and saves it.
func obtainScorer(ctx context.Context, ix *graphio.Index, g *minerGraph, cands []int32, opts Options) (Scorer, TrainReport, error) {
	fp := fingerprint(ix, opts.Config)
	if opts.Checkpoint != "" && opts.LoadScorer != nil {
		if data, err := os.ReadFile(opts.Checkpoint + ".json"); err == nil {
			var tr TrainReport
			if json.Unmarshal(data, &tr) == nil && tr.Fingerprint == fp {
				if sc, err := opts.LoadScorer(opts.Checkpoint); err == nil {
					tr.Reused = true
					return sc, tr, nil
				}
			}
		}
	}
	if opts.NewScorer == nil {
		return nil, TrainReport{}, fmt.Errorf("augment: no scorer constructor")
	}
	sc, err := opts.NewScorer(ix.Embeddings[graphio.KindEntity].Dim, opts.Config)
	if err != nil {
		return nil, TrainReport{}, err
	}
	tr, err := trainScorer(ctx, ix, g, cands, sc, opts.Config, opts.Log)
	if err != nil {
		return nil, tr, err
	}
	tr.Fingerprint = fp
	if opts.Checkpoint != "" {
		if err := sc.Save(opts.Checkpoint); err != nil {
			return nil, tr, err
		}
		data, _ := json.MarshalIndent(tr, "", "  ")
		if err := graphio.AtomicWrite(opts.Checkpoint+".json", func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
			return nil, tr, err
		}
	}
	return sc, tr, nil
}

// trainScorer is CrossAug's self-supervised training (anchors §D.1, §D.4): every epoch
// draws fresh training roots, builds one clean and up to two corrupted views per root
// and takes one full-batch optimizer step; every EvalEvery epochs it scores a fixed set
// of evaluation views; training stops early after Patience epochs without a MinDelta
// improvement of the evaluation BCE, and the best weights are restored. A scorer that
// pads batches to fixed shapes is first sized to sampled epochs (prepareShapes); that
// draws from its own random source and changes no batch.
//
// Deviation: evaluation roots are excluded from training roots (the reference draws
// both from all candidates), so the reported metrics are on held-out roots.
func trainScorer(ctx context.Context, ix *graphio.Index, g *minerGraph, cands []int32, sc Scorer, cfg Config, log io.Writer) (TrainReport, error) {
	t0 := time.Now()
	tr := TrainReport{SizeMatched: cfg.SizeMatched}
	evalRng := rand.New(rand.NewSource(cfg.Seed + 104729))
	order := slices.Clone(cands)
	evalRng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	nEval := min(cfg.EvalRoots, max(1, len(order)/4))
	evalRoots, trainRoots := order[:nEval], order[nEval:]
	if len(trainRoots) == 0 {
		trainRoots = evalRoots
	}
	evalViews := g.sampleGroups(evalRoots, len(evalRoots), cfg, evalRng)
	if len(evalViews) == 0 {
		return tr, fmt.Errorf("augment: no training views: subgraphs need ≥ %d nodes and ≥ %d fact edges; the graph is too sparse", cfg.MinNodes, cfg.MinFactEdges)
	}
	tr.EvalViews = len(evalViews)
	tr.SizeBaseline = sizeBaselineAUC(evalViews)
	evalGraphs, evalLabels := graphsOf(ix, evalViews)
	if err := prepareShapes(sc, g, trainRoots, evalViews, cfg); err != nil {
		return tr, err
	}
	compiled := func() int64 { return 0 }
	if c, ok := sc.(compileCounter); ok {
		compiled = c.Compilations
	}
	compiledBefore := compiled()

	rng := rand.New(rand.NewSource(cfg.Seed))
	best, bestEpoch, sinceBest := math.Inf(1), 0, 0
	var lastLoss float64
	for epoch := 1; epoch <= cfg.Epochs; epoch++ {
		if err := ctx.Err(); err != nil {
			return tr, err
		}
		views := g.sampleGroups(trainRoots, cfg.TrainRoots, cfg, rng)
		if len(views) == 0 {
			return tr, fmt.Errorf("augment: epoch %d drew no training views", epoch)
		}
		tr.TrainViews = len(views)
		gs, ls := graphsOf(ix, views)
		loss, err := sc.TrainStep(gs, ls)
		if err != nil {
			return tr, fmt.Errorf("augment: train epoch %d: %w", epoch, err)
		}
		lastLoss = loss
		tr.Epochs = epoch
		if epoch%cfg.EvalEvery != 0 && epoch != cfg.Epochs {
			continue
		}
		row, err := evaluate(sc, evalGraphs, evalLabels, evalViews)
		if err != nil {
			return tr, err
		}
		row.Epoch, row.TrainLoss = epoch, lastLoss
		tr.History = append(tr.History, row)
		if log != nil {
			fmt.Fprintf(log, "epoch %3d  loss %.4f  eval BCE %.4f  acc %.3f  ROC-AUC %.3f  ranking %.3f  (%.0fs, %d compiled)\n",
				epoch, row.TrainLoss, row.EvalBCE, row.Accuracy, row.AUC, row.Ranking, time.Since(t0).Seconds(), compiled()-compiledBefore)
		}
		if row.EvalBCE < best-cfg.MinDelta {
			best, bestEpoch, sinceBest = row.EvalBCE, epoch, 0
			if err := sc.Snapshot(); err != nil {
				return tr, err
			}
		} else {
			sinceBest += cfg.EvalEvery
			if cfg.Patience > 0 && sinceBest >= cfg.Patience {
				break
			}
		}
	}
	if bestEpoch > 0 {
		if err := sc.Restore(); err != nil {
			return tr, err
		}
	}
	row, err := evaluate(sc, evalGraphs, evalLabels, evalViews)
	if err != nil {
		return tr, err
	}
	tr.BestEpoch = bestEpoch
	tr.EvalBCE, tr.EvalAccuracy, tr.EvalAUC, tr.RankingAcc = row.EvalBCE, row.Accuracy, row.AUC, row.Ranking
	tr.Seconds = round3(time.Since(t0).Seconds())
	tr.Compilations = compiled() - compiledBefore
	if log != nil {
		fmt.Fprintf(log, "best epoch %d: eval BCE %.4f  acc %.3f  ROC-AUC %.3f  ranking %.3f  (node-count baseline ROC-AUC %.3f)  %d executables compiled, %.1fs\n",
			bestEpoch, tr.EvalBCE, tr.EvalAccuracy, tr.EvalAUC, tr.RankingAcc, tr.SizeBaseline, tr.Compilations, tr.Seconds)
	}
	return tr, nil
}

// sizingEpochs is how many epochs of training views prepareShapes draws to size the
// scorer's batches.
const sizingEpochs = 16

// prepareShapes lets a scorer that pads batches fit its shapes, before the first step,
// to sizingEpochs epochs of training batches drawn with their own random source (the
// training draws are unchanged) and to the evaluation batches.
func prepareShapes(sc Scorer, g *minerGraph, trainRoots []int32, evalViews []view, cfg Config) error {
	p, ok := sc.(batchPreparer)
	if !ok {
		return nil
	}
	rng := rand.New(rand.NewSource(cfg.Seed + 7919))
	var train [][]*kernels.Graph
	for range sizingEpochs {
		if vs := g.sampleGroups(trainRoots, cfg.TrainRoots, cfg, rng); len(vs) > 0 {
			train = append(train, shapeGraphs(viewSubgraphs(vs)))
		}
	}
	var eval [][]*kernels.Graph
	for lo := 0; lo < len(evalViews); lo += evalChunk {
		eval = append(eval, shapeGraphs(viewSubgraphs(evalViews[lo:min(lo+evalChunk, len(evalViews))])))
	}
	for _, family := range [][][]*kernels.Graph{train, eval} {
		if err := p.Prepare(family); err != nil {
			return fmt.Errorf("augment: sizing scorer batches: %w", err)
		}
	}
	return nil
}

func graphsOf(ix *graphio.Index, views []view) ([]*kernels.Graph, []float32) {
	gs := make([]*kernels.Graph, len(views))
	ls := make([]float32, len(views))
	for i, v := range views {
		gs[i], ls[i] = toGraph(ix, v.sg), v.label
	}
	return gs, ls
}

// evaluate scores the evaluation views: BCE, accuracy at 0.5, ROC-AUC and ranking
// accuracy (within a root, each corrupted view against the clean one).
func evaluate(sc Scorer, gs []*kernels.Graph, labels []float32, views []view) (EvalRow, error) {
	var logits []float32
	for lo := 0; lo < len(gs); lo += evalChunk {
		z, err := sc.Logits(gs[lo:min(lo+evalChunk, len(gs))])
		if err != nil {
			return EvalRow{}, fmt.Errorf("augment: evaluate: %w", err)
		}
		logits = append(logits, z...)
	}
	m, err := train.Evaluate(logits, labels)
	if err != nil {
		return EvalRow{}, err
	}
	clean := map[int]float32{}
	for i, v := range views {
		if v.label == 0 {
			clean[v.group] = logits[i]
		}
	}
	var won, total float64
	for i, v := range views {
		if c, ok := clean[v.group]; ok && v.label == 1 {
			total++
			switch {
			case logits[i] > c:
				won++
			case logits[i] == c:
				won += 0.5
			}
		}
	}
	row := EvalRow{EvalBCE: m.Loss, Accuracy: m.Accuracy, AUC: m.AUC}
	if total > 0 {
		row.Ranking = won / total
	}
	return row, nil
}
