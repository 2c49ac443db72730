package models_test

import (
	"path/filepath"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/models"
	"github.com/graphloom/graphloom/models/checkpoint"
)

type projectorConfig struct {
	In, Out int
	Note    string
}

// projector builds a model no loader knows: an encoder (frozen) and a head.
func projector(store *model.Store, cfg projectorConfig, seed uint64) (frozen, head []*model.Variable) {
	defer func() { models.Freeze(store, frozen) }()
	p := models.NewParams(store.RootScope().In("projector"), seed)
	enc := models.NewLinear(p.Sub("encoder"), cfg.In, cfg.Out, true)
	h := models.NewLinear(p.Sub("head"), cfg.Out, 1, false)
	_, _ = enc, h
	vars := p.Variables()
	for _, v := range vars {
		if filepath.Base(filepath.Dir(v.Path())) == "encoder" {
			frozen = append(frozen, v)
		} else {
			head = append(head, v)
		}
	}
	return frozen, head
}

func flat(t *testing.T, vs []*model.Variable) [][]float32 {
	t.Helper()
	var out [][]float32
	for _, v := range vs {
		val, err := v.Value()
		require.NoError(t, err)
		out = append(out, tensors.MustCopyFlatData[float32](val))
	}
	return out
}

// TestGenericCheckpoint saves a model of a kind no loader knows with its config,
// reloads it bit for bit into a model built from that config, and checks that frozen
// variables are not saved again and keep their own values on load.
func TestGenericCheckpoint(t *testing.T) {
	cfg := projectorConfig{In: 6, Out: 4, Note: "soft prompt"}
	store := model.NewStore()
	frozen, head := projector(store, cfg, 1)
	require.NotEmpty(t, frozen)
	require.NotEmpty(t, head)
	path := filepath.Join(t.TempDir(), "proj.ckpt")
	all := append(append([]*model.Variable{}, frozen...), head...)
	require.NoError(t, models.SaveVariables(path, "projector", cfg, store, all, map[string]string{"step": "7"}))

	f, err := checkpoint.Load(path)
	require.NoError(t, err)
	assert.Len(t, f.Tensors, len(head), "frozen variables are not saved again")

	var got projectorConfig
	require.NoError(t, models.ConfigOf(path, "projector", &got))
	assert.Equal(t, cfg, got)
	store2 := model.NewStore()
	frozen2, head2 := projector(store2, got, 99) // other seed: other initial values
	frozenBefore := flat(t, frozen2)
	meta, err := models.LoadVariables(path, "projector", store2, append(append([]*model.Variable{}, frozen2...), head2...), nil)
	require.NoError(t, err)
	assert.Equal(t, "7", meta["step"])
	assert.Equal(t, flat(t, head), flat(t, head2), "bit-exact reload")
	assert.Equal(t, frozenBefore, flat(t, frozen2), "frozen variables keep the values they were loaded with")

	_, err = models.LoadVariables(path, "rgcn_classifier", store2, head2, nil)
	assert.ErrorContains(t, err, "holds a \"projector\" model")
	_, err = models.LoadVariables(path, "projector", model.NewStore(), append(append([]*model.Variable{}, frozen2...), head2...), nil)
	assert.ErrorContains(t, err, "no tensor", "a trainable variable missing from the file is an error")
}
