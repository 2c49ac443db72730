package lm_test

import (
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/engine/enginetest"
	"github.com/graphloom/graphloom/models/lm"
	"github.com/graphloom/graphloom/models/lm/lmtest"
	"github.com/graphloom/graphloom/models/train"
)

// softPrompt is a train.Task: one trainable vector spliced at position 1 of every
// sequence, fed through the frozen LM, token cross-entropy on the labels.
type softPrompt struct {
	m   *lm.Model
	vec *model.Variable
}

func (s softPrompt) Kind() string                 { return "softprompt" }
func (s softPrompt) Store() *model.Store          { return s.m.Store() }
func (s softPrompt) Variables() []*model.Variable { return []*model.Variable{s.vec} }

func (s softPrompt) LossFn(train.Batch) (func(*model.Scope, []*graph.Node, bool) *graph.Node, error) {
	return func(_ *model.Scope, in []*graph.Node, _ bool) *graph.Node {
		ids, mask, labels := in[0], in[1], in[2]
		g := ids.Graph()
		dims := ids.Shape().Dimensions
		h := s.m.Config().Hidden
		emb := s.m.EmbedTokens(ids)
		at := graph.Equal(graph.Iota(g, ids.Shape(), 1), graph.Scalar(g, ids.DType(), 1))
		soft := graph.BroadcastToDims(graph.Reshape(s.vec.NodeValue(g), 1, 1, h), dims[0], dims[1], h)
		emb = graph.Where(at, soft, emb)
		return train.TokenCE(s.m.Logits(emb, mask), labels)
	}, nil
}

type tokBatch struct{ ids, mask, labels []int32 }

func (b tokBatch) Inputs() ([]*tensors.Tensor, error) {
	n := len(b.ids) / 8
	return []*tensors.Tensor{tensors.FromFlatDataAndDimensions(b.ids, n, 8), tensors.FromFlatDataAndDimensions(b.mask, n, 8),
		tensors.FromFlatDataAndDimensions(b.labels, n, 8)}, nil
}
func (b tokBatch) ShapeKey() string { return "2x8" }

// TestTrainThroughFrozenLM trains a soft prompt through the frozen LM: the loss
// falls, the soft prompt changes, the LM's variables stay bit-identical.
func TestTrainThroughFrozenLM(t *testing.T) {
	for _, dt := range []dtypes.DType{dtypes.Float32, dtypes.BFloat16} {
		t.Run(dt.String(), func(t *testing.T) { trainThroughFrozenLM(t, dt) })
	}
}

func trainThroughFrozenLM(t *testing.T, dt dtypes.DType) {
	eng := enginetest.New(t)
	dir := t.TempDir()
	_, err := lmtest.Write(dir, lmtest.Spec{Seed: 8})
	require.NoError(t, err)
	m, err := lm.Load(dir, model.NewStore(), lm.Options{DType: dt})
	require.NoError(t, err)
	vec, err := m.Store().RootScope().At("soft").CreateVariable("vec", tensors.FromFlatDataAndDimensions(make([]float32, m.Config().Hidden), m.Config().Hidden))
	require.NoError(t, err)
	before := map[string][]byte{}
	for _, v := range m.Variables() {
		before[v.Path()] = rawBytes(t, v.MustValue())
	}
	const ign = train.IgnoreIndex
	// Two right-padded rows; the second is shorter (mask 0 and label −100 on padding).
	b := tokBatch{
		ids:    []int32{267, 0, 116, 257, 264, 0, 0, 0, 267, 0, 40, 41, 0, 0, 0, 0},
		mask:   []int32{1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0},
		labels: []int32{ign, ign, ign, ign, 100, ign, ign, ign, ign, ign, ign, 100, ign, ign, ign, ign},
	}
	cfg := train.DefaultConfig()
	cfg.LearningRate, cfg.MinLearningRate, cfg.TotalSteps = 0.05, 0.05, 30
	tr, err := train.NewTask(eng, softPrompt{m: m, vec: vec}, cfg)
	require.NoError(t, err)
	var first, last float64
	for i := range 30 {
		st, err := tr.StepBatches(b)
		require.NoError(t, err)
		if i == 0 {
			first = st.Loss
		}
		last = st.Loss
	}
	assert.Less(t, last, first*2/3, "loss %g → %g", first, last) // 6.15 → 3.85 (one vector cannot fit both rows)
	assert.NotEqual(t, make([]float32, m.Config().Hidden), tensors.MustCopyFlatData[float32](vec.MustValue()))
	for _, v := range m.Variables() {
		assert.Equal(t, before[v.Path()], rawBytes(t, v.MustValue()), "%s changed", v.Path())
	}
}

func rawBytes(t *testing.T, x *tensors.Tensor) []byte {
	var b []byte
	require.NoError(t, x.ConstBytes(func(data []byte) { b = append(b, data...) }))
	return b
}
