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
// models.RGCNClassifier trained with Adam through models/train.
//
// Batches use the tiled layout (dense per-tile adjacency products, see package
// kernels): tiles of 64 node rows when every graph of the batch fits one, else 128,
// else the sequential layout. They are padded to a few fixed shapes per layout, so
// training and scoring compile a bounded number of executables: a coarse geometric
// ladder that always fits, refined by Prepare with shapes fitted to the batches that
// will follow.
//
// The batches declare only the relations the walk graph has (FACT, SYNONYM); the
// model keeps the reference's third relation (ENTITY_CHUNK), which no sampled
// subgraph carries, and skips its all-zero messages (models.RGCN.Apply): outputs and
// updates are those of the full model.
type RGCNScorer struct {
	eng    *engine.Engine
	m      *models.RGCNClassifier
	tr     *train.Trainer
	shapes *batchShapes
	best   []checkpoint.Tensor
}

// scorerModelConfig is the reference scorer's model for node features of width
// inputDim: three relations, three node types (anchors §D.5).
func scorerModelConfig(inputDim int, cfg Config) models.RGCNConfig {
	mc := models.DefaultRGCNConfig(inputDim)
	mc.Hidden, mc.HeadHidden, mc.Dropout, mc.Seed, mc.NumRelations = cfg.Hidden, cfg.Hidden, cfg.Dropout, uint64(cfg.Seed), numRel
	return mc
}

// scorerTrainConfig is the reference scorer's optimizer: Adam at a constant rate.
func scorerTrainConfig(cfg Config) train.Config {
	tc := train.DefaultConfig()
	tc.LearningRate, tc.MinLearningRate, tc.TotalSteps, tc.Seed = cfg.LearningRate, cfg.LearningRate, cfg.Epochs*cfg.MiniBatches, cfg.Seed
	return tc
}

// NewRGCNScorer returns an untrained scorer for node features of width inputDim.
func NewRGCNScorer(eng *engine.Engine, inputDim int, cfg Config) (*RGCNScorer, error) {
	m, err := models.NewRGCNClassifier(model.NewStore(), scorerModelConfig(inputDim, cfg))
	if err != nil {
		return nil, err
	}
	return newRGCNScorer(eng, m, cfg)
}

func newRGCNScorer(eng *engine.Engine, m *models.RGCNClassifier, cfg Config) (*RGCNScorer, error) {
	tr, err := train.New(eng, m, scorerTrainConfig(cfg))
	if err != nil {
		return nil, err
	}
	spec := kernels.Spec{FeatDim: m.Config().InputDim, NumRelations: walkRelations, NumNodeTypes: numNodeTypes}
	if err := m.CheckBatch(spec); err != nil {
		return nil, fmt.Errorf("augment: scorer: %w", err)
	}
	shapes, err := newBatchShapes(spec, cfg)
	if err != nil {
		return nil, err
	}
	return &RGCNScorer{eng: eng, m: m, tr: tr, shapes: shapes}, nil
}

// LoadRGCNScorer restores a scorer saved by Save.
func LoadRGCNScorer(eng *engine.Engine, path string, cfg Config) (*RGCNScorer, error) {
	m, _, err := models.LoadRGCNClassifier(path, model.NewStore())
	if err != nil {
		return nil, err
	}
	return newRGCNScorer(eng, m, cfg)
}

// Prepare implements batchPreparer: it adds padded shapes fitted to batches like
// samples (only their node and edge counts matter).
func (s *RGCNScorer) Prepare(samples [][]*kernels.Graph) error { return s.shapes.fit(samples) }

// TrainStep implements Scorer.
func (s *RGCNScorer) TrainStep(graphs []*kernels.Graph, labels []float32) (float64, error) {
	b, err := s.shapes.batch(graphs)
	if err != nil {
		return 0, fmt.Errorf("augment: scorer batch of %d graphs: %w", len(graphs), err)
	}
	st, err := s.tr.Step(train.Example{Batch: b, Labels: labels})
	return st.Loss, err
}

// Logits implements Scorer; batches too large for a bucket are split.
func (s *RGCNScorer) Logits(graphs []*kernels.Graph) ([]float32, error) {
	b, err := s.shapes.batch(graphs)
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

// Close releases the executables the scorer compiled on its engine
// (engine.Engine.Release); the scorer must not be used afterwards.
func (s *RGCNScorer) Close() error {
	s.eng.Release(s.m.Store())
	return nil
}

// Compilations reports how many executables the engine has compiled.
func (s *RGCNScorer) Compilations() int64 { return s.eng.Stats().Compilations }
