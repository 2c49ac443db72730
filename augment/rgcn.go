package augment

import (
	"fmt"

	"github.com/gomlx/gomlx/ml/model"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/kernels"
	"github.com/graphloom/graphloom/models"
	"github.com/graphloom/graphloom/models/checkpoint"
	"github.com/graphloom/graphloom/models/train"
)

// RGCNScorer is CrossAug's scorer (anchors §D.5) on the GoMLX engine:
// models.RGCNClassifier trained with Adam through models/train, its batches padded to
// a fixed ladder of buckets so that training and scoring compile a bounded number of
// executables.
type RGCNScorer struct {
	eng  *engine.Engine
	m    *models.RGCNClassifier
	tr   *train.Trainer
	bk   *kernels.Bucketer
	best []checkpoint.Tensor
}

// scorerBucketer pads batches to a fixed set of shapes: for each batch width (64
// graphs when scoring, 256 when evaluating, up to three views per training root when
// training) a geometric ladder of node rows from MinNodes to 3/5 of the largest possible
// subgraph (1 + walks × hops nodes) per graph, with 8 directed edge slots per node row
// (16 on the top rung). Graph slots do not shrink with the rung, so a batch of many
// small subgraphs gets a small bucket.
func scorerBucketer(inputDim int, cfg Config) (*kernels.Bucketer, error) {
	spec := kernels.Spec{FeatDim: inputDim, NumRelations: numRel, NumNodeTypes: 3}
	maxNodes := 1 + max(cfg.WalksPerRoot, cfg.CleanWalksPerRoot)*cfg.WalkLength
	per := max(cfg.MinNodes*4, maxNodes*3/5)
	var buckets []kernels.Bucket
	for _, graphs := range []int{64, 256, 3 * cfg.TrainRoots} {
		for n := float64(cfg.MinNodes); ; n *= 1.4 {
			rows := (int(n*float64(graphs)) + 7) / 8 * 8
			if n >= float64(per) {
				rows = graphs * per
				buckets = append(buckets, kernels.Bucket{Nodes: rows, Edges: rows * 16, Graphs: graphs})
				break
			}
			buckets = append(buckets, kernels.Bucket{Nodes: rows, Edges: rows * 8, Graphs: graphs})
		}
	}
	return kernels.NewBucketer(kernels.BucketerConfig{Spec: spec, Buckets: buckets})
}

// NewRGCNScorer returns an untrained scorer for node features of width inputDim.
func NewRGCNScorer(eng *engine.Engine, inputDim int, cfg Config) (*RGCNScorer, error) {
	mc := models.DefaultRGCNConfig(inputDim)
	mc.Hidden, mc.HeadHidden, mc.Dropout, mc.Seed = cfg.Hidden, cfg.Hidden, cfg.Dropout, uint64(cfg.Seed)
	m, err := models.NewRGCNClassifier(model.NewStore(), mc)
	if err != nil {
		return nil, err
	}
	return newRGCNScorer(eng, m, cfg)
}

func newRGCNScorer(eng *engine.Engine, m *models.RGCNClassifier, cfg Config) (*RGCNScorer, error) {
	tc := train.DefaultConfig()
	tc.LearningRate, tc.MinLearningRate, tc.TotalSteps, tc.Seed = cfg.LearningRate, cfg.LearningRate, cfg.Epochs, cfg.Seed
	tr, err := train.New(eng, m, tc)
	if err != nil {
		return nil, err
	}
	bk, err := scorerBucketer(m.Config().InputDim, cfg)
	if err != nil {
		return nil, err
	}
	return &RGCNScorer{eng: eng, m: m, tr: tr, bk: bk}, nil
}

// LoadRGCNScorer restores a scorer saved by Save.
func LoadRGCNScorer(eng *engine.Engine, path string, cfg Config) (*RGCNScorer, error) {
	m, _, err := models.LoadRGCNClassifier(path, model.NewStore())
	if err != nil {
		return nil, err
	}
	return newRGCNScorer(eng, m, cfg)
}

// TrainStep implements Scorer.
func (s *RGCNScorer) TrainStep(graphs []*kernels.Graph, labels []float32) (float64, error) {
	b, err := s.bk.Batch(graphs)
	if err != nil {
		return 0, fmt.Errorf("augment: scorer batch of %d graphs: %w", len(graphs), err)
	}
	st, err := s.tr.Step(train.Example{Batch: b, Labels: labels})
	return st.Loss, err
}

// Logits implements Scorer; batches too large for a bucket are split.
func (s *RGCNScorer) Logits(graphs []*kernels.Graph) ([]float32, error) {
	b, err := s.bk.Batch(graphs)
	if err != nil {
		if len(graphs) == 1 {
			return nil, fmt.Errorf("augment: scorer: %w", err)
		}
		h := len(graphs) / 2
		lo, err := s.Logits(graphs[:h])
		if err != nil {
			return nil, err
		}
		hi, err := s.Logits(graphs[h:])
		return append(lo, hi...), err
	}
	return s.tr.Predict(b)
}

// Snapshot implements Scorer.
func (s *RGCNScorer) Snapshot() error {
	ts, err := checkpoint.FromVariables(s.m.Variables(), "/rgcn/")
	if err != nil {
		return err
	}
	s.best = ts
	return nil
}

// Restore implements Scorer.
func (s *RGCNScorer) Restore() error {
	if s.best == nil {
		return fmt.Errorf("augment: no snapshot to restore")
	}
	f := &checkpoint.File{Tensors: s.best}
	return f.Assign(s.m.Variables(), "/rgcn/")
}

// Save implements Scorer.
func (s *RGCNScorer) Save(path string) error {
	return models.Save(path, s.m, map[string]string{"model": "crossaug-missingness"})
}

// Compilations reports how many executables the engine has compiled.
func (s *RGCNScorer) Compilations() int64 { return s.eng.Stats().Compilations }
