package retrieve

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kernels"
)

// randomVector returns n standard normal values, each kept with probability density
// (all of them at 1) and 0 otherwise.
func randomVector(rng *rand.Rand, n int, density float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		if density >= 1 || rng.Float64() < density {
			v[i] = float32(rng.NormFloat64())
		}
	}
	return v
}

// inCompressedRows returns the rows of m held in compressed rows, whatever their
// density.
func inCompressedRows(m *graphio.Embedding) *graphio.Embedding {
	held := graphio.NewSparseEmbedding(m.Dim)
	row := make([]float32, m.Dim)
	for i := range m.Rows() {
		held.AppendDense(m.RowInto(i, row))
	}
	return held
}

func TestSparseScoresEqualDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const rows, dim = 300, 96
	m := &graphio.Embedding{Dim: dim, Data: randomVector(rng, rows*dim, 0.08)}
	q := randomVector(rng, dim, 1)
	sp := sparseOf(m)
	require.NotNil(t, sp, "8% non-zeros is sparse")
	got := make([]float32, rows)
	sparseDots(sp, q, got)
	for i := range got {
		assert.InDelta(t, kernels.Dot(m.Row(i), q), got[i], 1e-5, "row %d", i)
	}
	// A matrix held in compressed rows is scored from them, with the same values.
	held := m.Compact()
	require.NotNil(t, held.Sparse)
	assert.Same(t, held.Sparse, sparseOf(held))
	again := make([]float32, rows)
	sparseDots(sparseOf(held), q, again)
	assert.Equal(t, got, again)

	// Scored through the query's non-zero coordinates once held by columns (after
	// expandAfter queries): the same sums, bit for bit, for queries with zeros.
	qs := randomVector(rng, dim, 0.3)
	byRow := make([]float32, rows)
	sparseDots(sp, qs, byRow)
	byCol := make([]float32, rows)
	columnsOf(sp, dim).dots(qs, byCol)
	require.Equal(t, byRow, byCol)
	ixs := &graphio.Index{Embeddings: map[graphio.NodeKind]*graphio.Embedding{graphio.KindFact: held}}
	ss := &Searcher{ix: ixs}
	for n := 1; n <= expandAfter+2; n++ {
		require.Equal(t, byRow, ss.scores(nil, graphio.KindFact, qs), "query %d", n)
		assert.Equal(t, n > expandAfter, ss.columns(graphio.KindFact) != nil, "query %d: columns after %d queries", n, expandAfter)
	}

	dense := &graphio.Embedding{Dim: dim, Data: randomVector(rng, rows*dim, 1)}
	assert.Nil(t, sparseOf(dense), "a dense matrix keeps the SIMD path")

	// A matrix of 40% non-zeros (the hashed embedder's passages) is scored from
	// compressed rows whether it is held in them or dense, and by columns after
	// expandAfter queries: the same bits throughout.
	mid := &graphio.Embedding{Dim: dim, Data: randomVector(rng, rows*dim, 0.4)}
	require.Less(t, mid.Density(), graphio.SparseDensity)
	held = inCompressedRows(mid)
	require.NotNil(t, sparseOf(held))
	want := make([]float32, rows)
	sparseDots(sparseOf(mid), qs, want)
	for _, kind := range []*graphio.Embedding{mid, held} {
		s := &Searcher{ix: &graphio.Index{Embeddings: map[graphio.NodeKind]*graphio.Embedding{graphio.KindChunk: kind}}}
		for n := 1; n <= expandAfter+2; n++ {
			require.Equal(t, want, s.scores(nil, graphio.KindChunk, qs), "query %d", n)
			assert.Equal(t, n > expandAfter, s.columns(graphio.KindChunk) != nil, "query %d", n)
			if kind == held {
				assert.Nil(t, s.denseRows(graphio.KindChunk), "query %d: no dense copy of a matrix scored sparse", n)
			}
		}
	}

	// Denser than SparseDensity but held in compressed rows (an older writer, or rows
	// appended by augmentation): scored with the SIMD kernel like its dense form, a row
	// at a time for the first expandAfter queries, then from the dense copy.
	thick := &graphio.Embedding{Dim: dim, Data: randomVector(rng, rows*dim, 0.7)}
	require.Greater(t, thick.Density(), graphio.SparseDensity)
	held = inCompressedRows(thick)
	assert.Nil(t, sparseOf(held))
	for _, kind := range []*graphio.Embedding{thick, held} {
		ix := &graphio.Index{Embeddings: map[graphio.NodeKind]*graphio.Embedding{graphio.KindChunk: kind}}
		s := &Searcher{ix: ix}
		for n := 1; n <= expandAfter+2; n++ {
			got := s.scores(nil, graphio.KindChunk, q)
			for i := range got {
				require.Equal(t, kernels.Dot(thick.Row(i), q), got[i], "query %d, row %d", n, i)
			}
			expanded := s.denseRows(graphio.KindChunk) != nil
			if kind == held {
				assert.Equal(t, n > expandAfter, expanded, "query %d: the copy is made after %d queries", n, expandAfter)
			} else {
				assert.True(t, expanded, "a dense matrix is scored in place")
			}
		}
	}
}

// Scoring split into row ranges on several goroutines gives every row the bits one
// goroutine gives it, by columns, dense and a row at a time.
func TestScoringInRowRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const rows, dim = 1001, 64
	m := &graphio.Embedding{Dim: dim, Data: randomVector(rng, rows*dim, 0.1)}
	q := randomVector(rng, dim, 0.5)
	sp := m.Compact().Sparse
	require.NotNil(t, sp)
	want := make([]float32, rows)
	sparseDots(sp, q, want)
	cols := columnsOf(sp, dim)
	wantDense := make([]float32, rows)
	for i := range wantDense {
		wantDense[i] = kernels.Dot(m.Row(i), q)
	}
	for _, workers := range []int{1, 2, 3, 7, rows + 5} {
		got := slices.Repeat([]float32{float32(math.NaN())}, rows) // stale values must be overwritten
		nz, _ := cols.nonZero(q)
		cols.dotsOn(q, nz, got, workers)
		assert.Equal(t, want, got, "by columns, %d workers", workers)
		got = slices.Repeat([]float32{float32(math.NaN())}, rows)
		denseDots(m.Data, dim, q, got, workers)
		assert.Equal(t, wantDense, got, "dense, %d workers", workers)
		got = slices.Repeat([]float32{float32(math.NaN())}, rows)
		rowDots(m.Compact(), q, got, workers)
		assert.Equal(t, wantDense, got, "a row at a time, %d workers", workers)
	}
	var seen []int
	inRanges(10, 3, func(lo, hi int) {}) // no panic on uneven splits
	inRanges(0, 4, func(lo, hi int) { seen = append(seen, hi-lo) })
	assert.Equal(t, []int{0}, seen, "an empty range is one call")
	assert.Equal(t, 1, scoreWorkers(parallelScoreWork-1))
}

func TestBounds(t *testing.T) {
	negZero := math.Copysign(0, -1)
	for _, tc := range []struct {
		name string
		v    []float64
	}{
		{"ordinary", []float64{0.5, -2, 7, 3}},
		{"one", []float64{4}},
		{"constant", []float64{1, 1, 1}},
		{"NaN inside", []float64{1, math.NaN(), 3}},
		{"NaN first", []float64{math.NaN(), 1, 3}},
		{"two NaNs", []float64{2, math.Float64frombits(0xfff8000000000000), math.NaN()}},
		{"−0 after +0", []float64{0, negZero, 0}},
		{"+0 after −0", []float64{negZero, 0}},
		{"only −0", []float64{negZero, negZero}},
		{"zeros and positives", []float64{negZero, 2, 0}},
		{"infinities", []float64{math.Inf(-1), 1, math.Inf(1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi := tc.v[0], tc.v[0]
			for _, x := range tc.v {
				lo, hi = min(lo, x), max(hi, x)
			}
			glo, ghi := bounds(tc.v)
			assert.Equal(t, math.Float64bits(lo), math.Float64bits(glo), "least")
			assert.Equal(t, math.Float64bits(hi), math.Float64bits(ghi), "greatest")
		})
	}
}

// TestWarmExpandsDenseCopies checks that a server's warm-up makes the dense copy of a
// matrix stored in compressed rows at once, with unchanged results.
func TestWarmExpandsDenseCopies(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example index")
	}
	ix := exampleIndex(t)
	// The passages held in compressed rows whatever their density, as the hashed
	// embedder stores them on larger corpora.
	held := inCompressedRows(ix.Embeddings[graphio.KindChunk])
	ix.Embeddings[graphio.KindChunk] = held
	require.Nil(t, sparseOf(held), "scored with the dense kernel")
	q := "Who bought the Meridian in 1801?"
	cold, err := Open(ix, nil, DefaultConfig(), nil)
	require.NoError(t, err)
	r, err := cold.Retriever("ppr")
	require.NoError(t, err)
	want, err := r.Retrieve(t.Context(), q, 5)
	require.NoError(t, err)
	assert.Nil(t, cold.denseRows(graphio.KindChunk), "one query makes no dense copy")

	warm, err := Open(ix, nil, DefaultConfig(), nil)
	require.NoError(t, err)
	require.NoError(t, warm.Warm(t.Context(), "ppr", "dense"))
	assert.NotNil(t, warm.denseRows(graphio.KindChunk), "Warm makes the dense copy")
	r, err = warm.Retriever("ppr")
	require.NoError(t, err)
	got, err := r.Retrieve(t.Context(), q, 5)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

func TestPassagesTopKOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ix := &graphio.Index{}
	for i := 0; i < 200; i++ {
		ix.Chunks = append(ix.Chunks, graphio.Chunk{ID: fmt.Sprint(i)})
	}
	s := &Searcher{ix: ix}
	scores := make([]float64, 200)
	for i := range scores {
		scores[i] = float64(rng.IntN(20)) // many ties
	}
	for _, k := range []int{0, 1, 7, 200, 500} {
		got := s.passages(scores, k)
		want := make([]int, len(scores))
		for i := range want {
			want[i] = i
		}
		slices.SortStableFunc(want, func(a, b int) int { return cmp.Compare(scores[b], scores[a]) })
		require.Len(t, got, min(k, 200))
		for j, p := range got {
			assert.Equal(t, int32(want[j]), p.Chunk, "k=%d rank %d", k, j)
		}
	}
	sc := new(rankScratch)
	assert.Equal(t, []int32{1, 3, 2, 4}, sc.ranks([]float64{5, 1, 3, 1}), "ties by position")
	assert.Equal(t, []int32{5, 1, 2, 3, 4}, sc.ranks([]float64{math.NaN(), 0, math.Copysign(0, -1), -1e-300, math.Inf(-1)}),
		"NaN last, −0 ties +0")

	// The radix sort ranks as a stable comparison sort does, on scores with many ties,
	// both signs, zeros and extremes.
	for trial := range 50 {
		v := make([]float64, rng.IntN(3000))
		for i := range v {
			switch rng.IntN(6) {
			case 0:
				v[i] = float64(rng.IntN(5)) // ties
			case 1:
				v[i] = -rng.ExpFloat64()
			case 2:
				v[i] = []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.MaxFloat64, math.SmallestNonzeroFloat64}[rng.IntN(6)]
			default:
				v[i] = rng.Float64()
			}
		}
		order := make([]int, len(v))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(v[y], v[x]) })
		want := make([]int32, len(v))
		for k, i := range order {
			want[i] = int32(k + 1)
		}
		require.Equal(t, want, sc.ranks(v), "trial %d", trial) // a reused scratch
	}
}
