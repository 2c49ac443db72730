package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Dot is the float64 inner product to float32 rounding on every kernel path the CPU
// offers.
func TestDotMatchesFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 7, 16, 31, 32, 33, 100, 768, 1025} {
		a, b := make([]float32, n), make([]float32, n)
		var want float64
		for i := range a {
			a[i], b[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
			want += float64(a[i]) * float64(b[i])
		}
		assert.InDelta(t, want, float64(Dot(a, b)), 1e-4*math.Sqrt(float64(n)+1), "n=%d", n)
		for _, path := range CPUKernels() {
			assert.InDelta(t, want, float64(dotOn(path, a, b)), 1e-4*math.Sqrt(float64(n)+1), "%v n=%d", path, n)
		}
	}
}

// randomUnit returns n L2-normalised rows; with density < 1 most coordinates are zero.
// Rows come in near-duplicate pairs so some similarities pass a high threshold.
func randomUnit(rng *rand.Rand, n, dim int, density float64) []float32 {
	data := make([]float32, n*dim)
	for i := 0; i < n; i++ {
		row := data[i*dim : (i+1)*dim]
		if i%2 == 1 {
			copy(row, data[(i-1)*dim:i*dim])
			for d := range row {
				if rng.Float64() < density/4 {
					row[d] += float32(rng.NormFloat64()) * 0.3
				}
			}
		} else {
			for d := range row {
				if rng.Float64() < density {
					row[d] = float32(rng.NormFloat64())
				}
			}
		}
		var s float64
		for _, v := range row {
			s += float64(v) * float64(v)
		}
		if s == 0 {
			row[0], s = 1, 1
		}
		for d := range row {
			row[d] /= float32(math.Sqrt(s))
		}
	}
	return data
}

func bruteForce(data []float32, dim int, skip []bool, cfg KNNConfig) [][]Neighbor {
	n := len(data) / dim
	out := make([][]Neighbor, n)
	for i := 0; i < n; i++ {
		if skip != nil && skip[i] {
			continue
		}
		t := topK{k: cfg.K}
		for j := 0; j < n; j++ {
			if i == j || skip != nil && skip[j] {
				continue
			}
			var s float64
			for d := 0; d < dim; d++ {
				s += float64(data[i*dim+d]) * float64(data[j*dim+d])
			}
			if float32(s) >= cfg.MinScore {
				t.offer(Neighbor{int32(j), float32(s)})
			}
		}
		out[i] = t.sorted()
	}
	return out
}

func sameNeighbors(t *testing.T, want, got [][]Neighbor) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.Len(t, got[i], len(want[i]), "row %d", i)
		for k := range want[i] {
			assert.Equal(t, want[i][k].Index, got[i][k].Index, "row %d rank %d", i, k)
			assert.InDelta(t, want[i][k].Score, got[i][k].Score, 1e-5)
		}
	}
}

func TestSimilarRowsExactPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct {
		name    string
		density float64
		k       int
		min     float32
	}{
		{"sparse inverted index", 0.05, 5, 0.5},
		{"dense blocked", 1, 3, 0.6},
		{"sparse, cap binds", 0.1, 1, 0.2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n, dim = 120, 64
			data := randomUnit(rng, n, dim, tc.density)
			skip := make([]bool, n)
			skip[7], skip[50] = true, true
			cfg := KNNConfig{K: tc.k, MinScore: tc.min}
			got, err := SimilarRows(data, dim, skip, cfg)
			require.NoError(t, err)
			want := bruteForce(data, dim, skip, cfg)
			sameNeighbors(t, want, got)
			pairs := 0
			for _, r := range got {
				pairs += len(r)
			}
			assert.Greater(t, pairs, n/4, "the test data has similar pairs")
			assert.Empty(t, got[7])

			// Searching only the rows appended after row 81 (an odd cut, so near-duplicate
			// pairs straddle it) gives those rows what the full search gives them.
			cfg.From = 81
			part, err := SimilarRows(data, dim, skip, cfg)
			require.NoError(t, err)
			for i := range part {
				if i < cfg.From {
					assert.Nil(t, part[i], "row %d is not queried", i)
				}
			}
			sameNeighbors(t, append(make([][]Neighbor, cfg.From), want[cfg.From:]...), part)
		})
	}
}

func TestSimilarRowsIVFRecall(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const n, dim = 600, 32
	data := randomUnit(rng, n, dim, 1)
	cfg := KNNConfig{K: 3, MinScore: 0.5, ExactLimit: 100, Seed: 1}
	got, err := SimilarRows(data, dim, nil, cfg)
	require.NoError(t, err)
	want := bruteForce(data, dim, nil, cfg)
	found, total := 0, 0
	for i := range want {
		total += len(want[i])
		for _, w := range want[i] {
			for _, g := range got[i] {
				if g.Index == w.Index {
					found++
				}
			}
		}
	}
	require.Greater(t, total, 0)
	assert.Greater(t, float64(found)/float64(total), 0.9, "IVF recall")
}

func TestSimilarRowsErrorsAndTopK(t *testing.T) {
	_, err := SimilarRows(make([]float32, 10), 3, nil, KNNConfig{K: 1})
	assert.Error(t, err)
	_, err = SimilarSparseRows([]int64{0, 1}, []uint16{3}, []float32{1}, 3, nil, KNNConfig{K: 1})
	assert.ErrorContains(t, err, "coordinate 3")
	_, err = SimilarSparseRows([]int64{0, 2}, []uint16{1}, []float32{1}, 3, nil, KNNConfig{K: 1})
	assert.ErrorContains(t, err, "malformed")
	assert.Equal(t, []Neighbor{{2, 5}, {0, 3}}, TopK([]float32{3, 1, 5, 3}, 2))
}

// TestSimilarSparseSkewedExact checks the sparse search against an exhaustive float32
// search on text-like rows — a few frequent coordinates in most rows, many rare ones.
// Scores must be bit-identical (products summed in coordinate order), which is what
// keeps rebuilt synonym edges identical whatever the search's internal order.
func TestSimilarSparseSkewedExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const n, dim = 800, 512
	zipf := rand.NewZipf(rng, 1.1, 2, dim-1)
	data := make([]float32, n*dim)
	for i := 0; i < n; i++ {
		row := data[i*dim : (i+1)*dim]
		if i%3 == 1 { // a near-duplicate of the previous row
			copy(row, data[(i-1)*dim:i*dim])
			row[zipf.Uint64()] += 0.3
		} else {
			for range 4 + rng.IntN(12) {
				row[zipf.Uint64()] += float32(0.2 + rng.Float64())
			}
		}
		var s float64
		for _, v := range row {
			s += float64(v) * float64(v)
		}
		for d := range row {
			row[d] /= float32(math.Sqrt(s))
		}
	}
	for _, min := range []float32{0.8, 0.5, 0.95} {
		cfg := KNNConfig{K: 7, MinScore: min, Workers: 2}
		got := similarSparse(data, dim, nil, cfg)
		// The same rows handed over in compressed form give the same lists.
		ptr := []int64{0}
		var idx []uint16
		var val []float32
		for i := 0; i < n; i++ {
			for d, v := range data[i*dim : (i+1)*dim] {
				if v != 0 {
					idx, val = append(idx, uint16(d)), append(val, v)
				}
			}
			ptr = append(ptr, int64(len(idx)))
		}
		csr, err := SimilarSparseRows(ptr, idx, val, dim, nil, cfg)
		require.NoError(t, err)
		require.Equal(t, got, csr)
		found := 0
		for i := 0; i < n; i++ {
			want := topK{k: cfg.K}
			for j := 0; j < n; j++ {
				var s float32
				for d := 0; d < dim; d++ {
					s += data[i*dim+d] * data[j*dim+d]
				}
				if j != i && s >= min && s != 0 {
					want.offer(Neighbor{int32(j), s})
				}
			}
			require.Equal(t, want.sorted(), got[i], "row %d, min %g", i, min)
			found += len(got[i])
		}
		assert.Greater(t, found, n/3, "min %g: the data has similar pairs", min)
	}
}

// TopK equals offering every score to the heap, on vectors with ties, signed zeros,
// NaNs and infinities, of lengths around the vector path's blocks and k from 1 past
// the length, on every kernel path the CPU offers.
func TestTopKMatchesHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1))}
	for trial := range 500 {
		v := make([]float32, rng.IntN(200))
		for i := range v {
			switch trial % 3 {
			case 0:
				v[i] = float32(rng.NormFloat64())
			case 1: // many ties
				v[i] = float32(rng.IntN(5))
			default: // ascending: the worst kept changes often
				v[i] = float32(i) + float32(rng.IntN(3))
			}
			if rng.IntN(20) == 0 {
				v[i] = specials[rng.IntN(len(specials))]
			}
		}
		k := 1 + rng.IntN(len(v)+2)
		want := topK{k: k}
		for i, s := range v {
			if math.IsNaN(float64(s)) { // TopK's definition: NaN counts as −Inf
				s = float32(math.Inf(-1))
			}
			want.offer(Neighbor{int32(i), s})
		}
		for _, path := range CPUKernels() {
			got := topKOn(path, v, k)
			require.Equal(t, len(want.hs), len(got), "trial %d %v", trial, path)
			for j, nb := range want.sorted() {
				assert.Equal(t, nb.Index, got[j].Index, "trial %d %v rank %d", trial, path, j)
				assert.Equal(t, math.Float32bits(nb.Score), math.Float32bits(got[j].Score), "trial %d %v rank %d", trial, path, j)
			}
		}
	}
	assert.Nil(t, TopK([]float32{1, 2}, 0))
	nan := float32(math.NaN())
	for _, path := range CPUKernels() {
		got := topKOn(path, append([]float32{nan, 1, 2}, make([]float32, 40)...), 2)
		assert.Equal(t, []int32{2, 1}, []int32{got[0].Index, got[1].Index}, "a NaN first does not block the scan (%v)", path)
	}
}

// TestSimilarRowsAllSkipped: with every row skipped, in the IVF search (past the
// exact search's size) no row has neighbours, and nothing panics.
func TestSimilarRowsAllSkipped(t *testing.T) {
	const n, dim = 50, 4
	data := make([]float32, n*dim)
	for i := range data {
		data[i] = float32(i%7) + 1 // dense: not the sparse search
	}
	skip := make([]bool, n)
	for i := range skip {
		skip[i] = true
	}
	got, err := SimilarRows(data, dim, skip, KNNConfig{K: 3, ExactLimit: 10})
	require.NoError(t, err)
	require.Len(t, got, n)
	for _, nb := range got {
		assert.Empty(t, nb)
	}
}
