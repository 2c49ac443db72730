package retrieve

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// topRRF ranks as the full fusion does — the same passages in the same order with
// the same score bits — whenever it answers, on rankings that agree, disagree or are
// independent, with ties, zeros of both signs (a BM25 vector) and NaNs; and it
// declines (ok false) rather than guess when its depth cannot prove the top k.
func TestTopRRFMatchesFullFusion(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	var bufs rankBuffers
	answered, declined := 0, 0
	for trial := range 600 {
		n := 50 + rng.IntN(400)
		a, b := make([]float64, n), make([]float64, n)
		for i := range a {
			a[i] = rng.Float64()
			switch trial % 4 {
			case 0: // independent
				b[i] = rng.Float64()
			case 1: // agreeing, with noise
				b[i] = a[i] + 0.05*rng.NormFloat64()
			case 2: // opposed
				b[i] = -a[i]
			default: // a BM25 vector: mostly zeros of either sign, ties among the rest
				if rng.IntN(6) == 0 {
					b[i] = float64(rng.IntN(4))
				} else if rng.IntN(2) == 0 {
					b[i] = math.Copysign(0, -1)
				}
			}
			if rng.IntN(40) == 0 {
				a[i] = float64(rng.IntN(3)) // ties in the first ranking too
			}
			if rng.IntN(100) == 0 {
				a[i] = math.NaN()
			}
		}
		mu := []float64{0.5, 0.3, 0.9}[trial%3]
		k := 1 + rng.IntN(12)
		depth := k + rng.IntN(60)
		full := bufs.rrf(nil, a, b, mu)
		order := make([]int32, n)
		for i := range order {
			order[i] = int32(i)
		}
		slices.SortStableFunc(order, func(x, y int32) int { return cmp.Compare(full[y], full[x]) })
		top, scores, ok := bufs.topRRF(a, b, mu, k, depth)
		if !ok {
			declined++
			continue
		}
		answered++
		require.Len(t, top, k, "trial %d", trial)
		for j := range top {
			assert.Equal(t, order[j], top[j], "trial %d place %d", trial, j)
			assert.Equal(t, math.Float64bits(full[order[j]]), math.Float64bits(scores[j]), "trial %d place %d", trial, j)
		}
	}
	t.Logf("answered %d, declined %d", answered, declined)
	assert.Greater(t, answered, 300, "topRRF answers most questions")
	assert.Greater(t, declined, 0, "opposed rankings and shallow depths are declined")
	// The heads of the two rankings are disjoint and position 10 is sixth in both: it
	// is the best passage of all (and those after it in both come next), which a depth
	// of 5 cannot see and 20 can.
	a, b := make([]float64, 100), make([]float64, 100)
	for i := range a {
		a[i], b[i] = float64(-i), float64(-i)
	}
	for i := range 5 {
		a[i], b[i] = float64(10-i), float64(-1000-i)
		a[5+i], b[5+i] = float64(-1000-i), float64(10-i)
	}
	a[10], b[10] = 1, 1
	_, _, ok := bufs.topRRF(a, b, 0.5, 5, 5)
	assert.False(t, ok, "a passage below the depth in both rankings could lead")
	top, _, ok := bufs.topRRF(a, b, 0.5, 5, 20)
	require.True(t, ok)
	assert.Equal(t, []int32{10, 11, 12, 13, 14}, top)

	_, _, ok = bufs.topRRF([]float64{1, 2}, []float64{2, 1}, 0.5, 0, 1)
	assert.False(t, ok, "k = 0")
	_, _, ok = bufs.topRRF([]float64{1, 2}, []float64{2, 1}, 0.5, 1, 2)
	assert.False(t, ok, "depth not below the number of passages")
}

// smallest and rankOf agree with ranks on every place.
func TestRankHeads(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	sc := new(rankScratch)
	for trial := range 100 {
		v := make([]float64, 1+rng.IntN(500))
		for i := range v {
			v[i] = []float64{rng.Float64(), float64(rng.IntN(3)), 0, math.Copysign(0, -1), math.NaN()}[rng.IntN(5)]
		}
		want := slices.Clone(sc.ranks(v))
		keys := slices.Clone(sc.keysOf(v))
		for i := range v {
			require.Equal(t, want[i], rankOf(keys, int32(i)), "trial %d position %d", trial, i)
		}
		m := 1 + rng.IntN(len(v))
		head := sc.smallest(keys, m)
		require.Len(t, head, m)
		for r, i := range head {
			require.Equal(t, int32(r+1), want[i], "trial %d place %d", trial, r)
		}
	}
}
