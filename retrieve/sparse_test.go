package retrieve

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kernels"
)

func TestSparseScoresEqualDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const rows, dim = 300, 96
	m := &graphio.Embedding{Dim: dim, Data: make([]float32, rows*dim)}
	for i := range m.Data {
		if rng.Float64() < 0.08 {
			m.Data[i] = float32(rng.NormFloat64())
		}
	}
	q := make([]float32, dim)
	for i := range q {
		q[i] = float32(rng.NormFloat64())
	}
	sp := sparseOf(m)
	require.NotNil(t, sp, "8% non-zeros is sparse")
	got := make([]float32, rows)
	sp.dots(q, got)
	for i := range got {
		assert.InDelta(t, kernels.Dot(m.Row(i), q), got[i], 1e-5, "row %d", i)
	}

	dense := &graphio.Embedding{Dim: dim, Data: make([]float32, rows*dim)}
	for i := range dense.Data {
		dense.Data[i] = float32(rng.NormFloat64())
	}
	assert.Nil(t, sparseOf(dense), "a dense matrix keeps the SIMD path")
}
