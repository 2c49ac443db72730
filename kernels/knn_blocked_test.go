package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// zipfRows returns n unit rows over dim coordinates drawn from a Zipf law (a third of
// them near-duplicates of the row before), in compressed form.
func zipfRows(rng *rand.Rand, n, dim int) (ptr []int64, idx []uint16, val []float32) {
	zipf := rand.NewZipf(rng, 1.1, 2, uint64(dim-1))
	row := make([]float32, dim)
	prev := make([]float32, dim)
	ptr = []int64{0}
	for i := 0; i < n; i++ {
		clear(row)
		if i%3 == 1 {
			copy(row, prev)
			row[zipf.Uint64()] += 0.3
		} else {
			for range 3 + rng.IntN(10) {
				row[zipf.Uint64()] += float32(0.2 + rng.Float64())
			}
		}
		var s float64
		for _, v := range row {
			s += float64(v) * float64(v)
		}
		for d, v := range row {
			if v != 0 {
				idx, val = append(idx, uint16(d)), append(val, v/float32(math.Sqrt(s)))
			}
		}
		copy(prev, row)
		ptr = append(ptr, int64(len(idx)))
	}
	return ptr, idx, val
}

func widen(idx []uint16) []int32 {
	out := make([]int32, len(idx))
	for k, d := range idx {
		out[k] = int32(d)
	}
	return out
}

// With block rows for which the bound holds (the rows themselves, bound a hair under
// the threshold), the blocked search returns exactly the exact search's lists, bit for
// bit, for every From and skip mask.
func TestSimilarSparseRowsBlockedEqualsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const n, dim = 900, 4096
	ptr, idx, val := zipfRows(rng, n, dim)
	skip := make([]bool, n)
	for i := range skip {
		skip[i] = rng.IntN(10) == 0
	}
	for _, tc := range []struct {
		min  float32
		from int
		skip []bool
	}{{0.8, 0, nil}, {0.5, 0, skip}, {0.9, 600, nil}, {0.7, 450, skip}} {
		cfg := KNNConfig{K: 5, MinScore: tc.min, From: tc.from, Workers: 2}
		want, err := SimilarSparseRows(ptr, idx, val, dim, tc.skip, cfg)
		require.NoError(t, err)
		block := BlockRows{Ptr: ptr, Idx: widen(idx), Val: val, Min: tc.min - 1e-4}
		got, err := SimilarSparseRowsBlocked(ptr, idx, val, dim, block, tc.skip, cfg)
		require.NoError(t, err)
		require.Equal(t, want, got, "min %g from %d", tc.min, tc.from)
		found := 0
		for _, l := range got {
			found += len(l)
		}
		assert.Greater(t, found, (n-tc.from)/4, "min %g: the data has similar pairs", tc.min)
	}
}

// Block rows that do not bound the similarity lose pairs but never change a score:
// every pair returned is in the exact lists' candidates with the same bits.
func TestSimilarSparseRowsBlockedWeakBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	const n, dim = 600, 2048
	ptr, idx, val := zipfRows(rng, n, dim)
	// Blocks: each row's single heaviest coordinate (a rough key).
	bp, bi, bv := []int64{0}, []int32{}, []float32{}
	for i := 0; i < n; i++ {
		best := ptr[i]
		for k := ptr[i]; k < ptr[i+1]; k++ {
			if val[k] > val[best] {
				best = k
			}
		}
		bi, bv = append(bi, int32(idx[best])), append(bv, 1)
		bp = append(bp, int64(len(bi)))
	}
	cfg := KNNConfig{K: 1000, MinScore: 0.6, Workers: 2}
	exact, err := SimilarSparseRows(ptr, idx, val, dim, nil, cfg)
	require.NoError(t, err)
	got, err := SimilarSparseRowsBlocked(ptr, idx, val, dim, BlockRows{Ptr: bp, Idx: bi, Val: bv, Min: 1}, nil, cfg)
	require.NoError(t, err)
	kept, total := 0, 0
	for i := range exact {
		score := map[int32]float32{}
		for _, nb := range exact[i] {
			score[nb.Index] = nb.Score
		}
		total += len(exact[i])
		for _, nb := range got[i] {
			s, ok := score[nb.Index]
			require.True(t, ok, "row %d: %d is no exact neighbour", i, nb.Index)
			require.Equal(t, s, nb.Score)
			kept++
		}
	}
	assert.Less(t, kept, total, "a one-key block misses pairs")
	assert.Greater(t, kept, total/3)
}

func TestSimilarSparseRowsBlockedErrors(t *testing.T) {
	ptr, idx, val := []int64{0, 1, 2}, []uint16{0, 1}, []float32{1, 1}
	good := BlockRows{Ptr: []int64{0, 1, 2}, Idx: []int32{0, 1}, Val: []float32{1, 1}, Min: 0.5}
	cfg := KNNConfig{K: 3, MinScore: 0.5}
	for name, b := range map[string]BlockRows{
		"rows":     {Ptr: []int64{0, 1}, Idx: []int32{0}, Val: []float32{1}, Min: 0.5},
		"lengths":  {Ptr: []int64{0, 1, 2}, Idx: []int32{0, 1}, Val: []float32{1}, Min: 0.5},
		"bound":    {Ptr: good.Ptr, Idx: good.Idx, Val: good.Val, Min: 0},
		"negative": {Ptr: good.Ptr, Idx: []int32{0, -1}, Val: good.Val, Min: 0.5},
	} {
		_, err := SimilarSparseRowsBlocked(ptr, idx, val, 4, b, nil, cfg)
		assert.Error(t, err, name)
	}
	_, err := SimilarSparseRowsBlocked(ptr, []uint16{0, 9}, val, 4, good, nil, cfg)
	assert.ErrorContains(t, err, "coordinate 9")
	got, err := SimilarSparseRowsBlocked(ptr, idx, val, 4, good, nil, cfg)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Empty(t, got[0])
	assert.Empty(t, got[1])
}
