package embed

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
)

func cos(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestHashedGeometry(t *testing.T) {
	h, err := NewHashed(DefaultHashedConfig())
	require.NoError(t, err)
	h.Fit([]string{"Odile Varrant founded the guild.", "The Meridian sank near Gull Rock.", "Tomas Brell kept the ledger."})
	v := h.Vector("Odile Varrant")
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	assert.InDelta(t, 1, math.Sqrt(norm), 1e-5, "unit length")
	assert.Equal(t, v, h.Vector("odile  VARRANT!"), "case and punctuation do not matter")
	assert.Greater(t, cos(v, h.Vector("Odile Varant")), 0.45, "a misspelling stays close")
	assert.Greater(t, cos(h.Vector("Tallow Point"), h.Vector("Tallow Point Lighthouse")), 0.7, "a name inside a longer name")
	assert.Less(t, cos(v, h.Vector("Tomas Brell")), 0.3, "different names are far apart")
	assert.Greater(t, cos(h.Vector("who sank near Gull Rock"), h.Vector("The Meridian sank near Gull Rock.")),
		cos(h.Vector("who sank near Gull Rock"), h.Vector("Tomas Brell kept the ledger.")))
	assert.Equal(t, make([]float32, h.Dim()), h.Vector(""), "empty text is the zero vector")
}

func TestHashedStateRoundTripAndIdentity(t *testing.T) {
	h, _ := NewHashed(HashedConfig{Dim: 64})
	before := h.Identity()
	h.Fit([]string{"a b c", "b c d"})
	assert.NotEqual(t, before, h.Identity(), "fitting changes the identity")
	b, err := h.MarshalBinary()
	require.NoError(t, err)
	h2, err := UnmarshalHashed(b)
	require.NoError(t, err)
	assert.Equal(t, h.Identity(), h2.Identity())
	assert.Equal(t, h.Vector("b c x"), h2.Vector("b c x"))
	for _, bad := range [][]byte{nil, []byte("HTF1"), b[:len(b)-1], append([]byte("XXXX"), b[4:]...)} {
		_, err := UnmarshalHashed(bad)
		assert.Error(t, err)
	}
}

type fakeAPI struct{ id string }

func (f fakeAPI) Identity() string { return f.id }
func (f fakeAPI) Dim() int         { return 2 }
func (f fakeAPI) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = []float32{1, 0}
	}
	return out, nil
}

func TestForIndex(t *testing.T) {
	h, _ := NewHashed(HashedConfig{Dim: 32})
	h.Fit([]string{"x y"})
	ix := &graphio.Index{}
	_, err := ForIndex(ix, nil)
	assert.ErrorContains(t, err, "no embeddings")
	require.NoError(t, Store(ix, h))
	got, err := ForIndex(ix, nil)
	require.NoError(t, err)
	assert.Equal(t, h.Identity(), got.Identity())

	api := fakeAPI{"api:bge-m3"}
	require.NoError(t, Store(ix, api))
	_, err = ForIndex(ix, nil)
	assert.ErrorIs(t, err, ErrMismatch)
	_, err = ForIndex(ix, fakeAPI{"api:other"})
	assert.ErrorIs(t, err, ErrMismatch)
	got, err = ForIndex(ix, api)
	require.NoError(t, err)
	assert.Equal(t, api, got)
	m, err := Matrix(context.Background(), api, []string{"a", "b", "c"}, 2, nil)
	require.NoError(t, err)
	assert.Equal(t, 3, m.Rows())
}
