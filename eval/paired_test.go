package eval

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat"
)

// summaryOf is a retriever's summary whose example i has one gold item at rank ranks[i]
// (0: not found), under id "q<i>"; a negative rank leaves the example out.
func summaryOf(name string, ranks ...int) Summary {
	s := Summary{Retriever: name}
	for i, r := range ranks {
		if r < 0 {
			continue
		}
		s.Examples = append(s.Examples, ExampleResult{ID: fmt.Sprint("q", i), Hits: &Hits{Ranks: []int{r}}})
	}
	return s
}

func TestPairedDiffs(t *testing.T) {
	t.Run("paired by id, on the questions both ranked", func(t *testing.T) {
		r := &Report{Settings: Settings{Ks: []int{1, 5}}, Dataset: DatasetInfo{WithEvidence: 4},
			Retrievers: []Summary{summaryOf("ppr", 1, 9, 2, 3), summaryOf("bm25", 7, 4, -1, 3), summaryOf("dense", 0, 0, 0, 0)}}
		r.Retrievers[1].Examples[0], r.Retrievers[1].Examples[2] = r.Retrievers[1].Examples[2], r.Retrievers[1].Examples[0]
		ps := r.pairedDiffs()
		require.Len(t, ps, 2)
		// ppr − bm25 at R@5 on q0, q1, q3: +100, −100, 0.
		assert.Equal(t, PairedDiff{Retriever: "ppr", Baseline: "bm25", K: 5, Questions: 3, Diff: 0, Low: ps[0].Low, High: ps[0].High, Better: 1, Worse: 1, Tied: 1}, ps[0])
		assert.Less(t, ps[0].Low, 0.0)
		assert.Greater(t, ps[0].High, 0.0)
		assert.GreaterOrEqual(t, ps[0].Low, -100.0)
		assert.LessOrEqual(t, ps[0].High, 100.0)
		assert.Equal(t, "dense", ps[1].Retriever)
		assert.InDelta(t, -200.0/3, ps[1].Diff, 1e-9)
		assert.Equal(t, 2, ps[1].Worse)
		assert.Equal(t, "ppr − bm25 R@5: +0.0 ["+fmt.Sprintf("%+.1f", ps[0].Low)+", "+fmt.Sprintf("%+.1f", ps[0].High)+"] on 3 questions (1 better, 1 worse, 1 tied)", ps[0].String())
	})
	t.Run("a constant difference has no spread", func(t *testing.T) {
		r := &Report{Settings: Settings{Ks: []int{2}}, Dataset: DatasetInfo{WithEvidence: 3},
			Retrievers: []Summary{summaryOf("bm25", 3, 3, 3), summaryOf("ppr", 1, 2, 2)}}
		ps := r.pairedDiffs()
		require.Len(t, ps, 1)
		assert.Equal(t, 2, ps[0].K, "R@5 not measured: the first k")
		assert.Equal(t, []float64{100, 100, 100}, []float64{ps[0].Diff, ps[0].Low, ps[0].High})
	})
	t.Run("no baseline, a skipped baseline or no evidence: no comparison", func(t *testing.T) {
		r := &Report{Dataset: DatasetInfo{WithEvidence: 1}, Retrievers: []Summary{summaryOf("ppr", 1)}}
		assert.Nil(t, r.pairedDiffs())
		r.Retrievers = append(r.Retrievers, Summary{Retriever: "bm25", Skipped: "no index"})
		assert.Nil(t, r.pairedDiffs())
		r = &Report{Retrievers: []Summary{summaryOf("bm25", 1), summaryOf("ppr", 1)}}
		assert.Nil(t, r.pairedDiffs())
	})
}

// TestBootstrapMeanMatchesTheNormalInterval: for 400 draws of a skewed distribution the
// percentile bootstrap's 95 % interval of the mean is close to the normal one, mean ±
// 1.96·s/√n, computed from the sample by gonum; the draws are seeded.
func TestBootstrapMeanMatchesTheNormalInterval(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	xs := make([]float64, 400)
	for i := range xs {
		xs[i] = 100 * math.Floor(3*rng.Float64()*rng.Float64()) // 0, 100 or 200 with skew
	}
	mean, low, high := bootstrapMean(xs, 4000, 1)
	m, sd := stat.MeanStdDev(xs, nil) // gonum: the sample standard deviation
	half := 1.96 * sd / math.Sqrt(float64(len(xs)))
	assert.InDelta(t, m, mean, 1e-9)
	assert.InDelta(t, m-half, low, 0.1*half)
	assert.InDelta(t, m+half, high, 0.1*half)
	m2, l2, h2 := bootstrapMean(xs, 4000, 1)
	assert.Equal(t, []float64{mean, low, high}, []float64{m2, l2, h2}, "seeded")
}

func TestPairedInMarkdown(t *testing.T) {
	r := &Report{Settings: Settings{Ks: []int{5}}, Dataset: DatasetInfo{WithEvidence: 2},
		Retrievers: []Summary{summaryOf("bm25", 9, 1), summaryOf("ppr", 1, 1)}}
	r.finish()
	md := r.Markdown()
	assert.Contains(t, md, "Paired with bm25")
	assert.Contains(t, md, "- ppr − bm25 R@5: +50.0 [")
	for _, line := range strings.Split(md, "\n") {
		if strings.Contains(line, "ppr − bm25") {
			assert.NotContains(t, line, "|", "not a table row scripts read as one")
		}
	}
}
