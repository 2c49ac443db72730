package retrieve

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScratchLendsAndTakesBack(t *testing.T) {
	var pools bufPools
	sc := &scratch{pools: &pools}
	a, b := sc.f64(100), sc.f32(100)
	require.Len(t, a, 100)
	require.Len(t, b, 100)
	for i := range a {
		a[i], b[i] = 1, 1
	}
	sc.release64(a)
	sc.release64(make([]float64, 100)) // not lent: ignored
	assert.Len(t, sc.f64s, 0)
	assert.Len(t, sc.f32s, 1)
	sc.done()
	assert.Empty(t, sc.f32s)
	// A recycled vector is zeroed by f64z whatever its last user left in it.
	for range 4 {
		z := sc.f64z(100)
		assert.Equal(t, make([]float64, 100), z)
		z[3] = 7
		sc.done()
	}
	// A nil scratch allocates and keeps nothing.
	var none *scratch
	assert.Equal(t, make([]float64, 5), none.f64z(5))
	assert.Len(t, none.f32(5), 5)
	none.release64(none.f64(5))
	none.done()
}

// Recycled query vectors change no result: every retriever answers every question,
// interleaved and twice over one Searcher (its pools recycled, its matrices expanded
// after expandAfter queries), exactly as a fresh Searcher that allocates every vector
// answers it alone.
func TestRecycledVectorsChangeNoResult(t *testing.T) {
	ix := exampleIndex(t)
	data, err := os.ReadFile("../examples/harbour/questions.json")
	require.NoError(t, err)
	var qs []struct{ Question string }
	require.NoError(t, json.Unmarshal(data, &qs))
	names := []string{"bm25", "dense", "triples", "ppr", "hyperppr"}
	shared, err := Open(ix, nil, DefaultConfig(), nil)
	require.NoError(t, err)
	for round := range 2 {
		for _, q := range qs {
			for _, name := range names {
				fresh, err := Open(ix, nil, DefaultConfig(), nil)
				require.NoError(t, err)
				fresh.bufs.fresh = true
				want := retrieveWith(t, fresh, name, q.Question)
				got := retrieveWith(t, shared, name, q.Question)
				require.Equal(t, want, got, "round %d, %s, %q", round, name, q.Question)
			}
		}
	}
}

func retrieveWith(t *testing.T, s *Searcher, name, q string) Result {
	t.Helper()
	r, err := s.Retriever(name)
	require.NoError(t, err)
	res, err := r.Retrieve(context.Background(), q, 5)
	require.NoError(t, err)
	return res
}
