package eval

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// PairedBaseline is the retriever every other one is compared with, question by
// question, when a report has it: a graph method earns its place by beating BM25 on
// the same index and questions.
const PairedBaseline = "bm25"

// Paired bootstrap settings: resamples of the questions, and the seed of their draws.
const (
	pairedResamples = 2000
	pairedSeed      = 1
)

// PairedDiff compares a retriever with the baseline on the questions both ranked:
// the mean per-question difference of Recall@K in points, its 95 % interval by the
// percentile bootstrap over questions (Efron and Tibshirani, 1993; 2,000 resamples,
// seeded), and how many questions each won. On a development set of 26 or 100
// questions a difference of a few points is often inside the interval: the interval
// says whether the questions could as well have gone the other way.
type PairedDiff struct {
	Retriever string  `json:"retriever"`
	Baseline  string  `json:"baseline"`
	K         int     `json:"k"`         // Recall@K
	Questions int     `json:"questions"` // with gold evidence, ranked by both
	Diff      float64 `json:"diff"`      // mean of retriever − baseline, points
	Low       float64 `json:"ci95_low"`
	High      float64 `json:"ci95_high"`
	Better    int     `json:"better"` // questions where the retriever's recall is higher
	Worse     int     `json:"worse"`
	Tied      int     `json:"tied"`
}

// String renders d as "ppr − bm25 R@5: +2.0 [−1.5, +5.4] on 26 questions (8 better, 5 worse, 13 tied)".
func (d PairedDiff) String() string {
	return fmt.Sprintf("%s − %s R@%d: %+.1f [%+.1f, %+.1f] on %d questions (%d better, %d worse, %d tied)",
		d.Retriever, d.Baseline, d.K, d.Diff, d.Low, d.High, d.Questions, d.Better, d.Worse, d.Tied)
}

// pairedK is the cut-off the comparison uses: 5 when it was measured, else the first.
func pairedK(ks []int) int {
	if len(ks) == 0 || slices.Contains(ks, 5) {
		return 5
	}
	return ks[0]
}

// pairedDiffs compares every retriever of r with PairedBaseline on Recall@pairedK,
// pairing examples by id; nil when the baseline is absent, skipped or the dataset has
// no gold evidence.
func (r *Report) pairedDiffs() []PairedDiff {
	k := pairedK(r.Settings.Ks)
	var base *Summary
	for i := range r.Retrievers {
		if r.Retrievers[i].Retriever == PairedBaseline && r.Retrievers[i].Skipped == "" {
			base = &r.Retrievers[i]
		}
	}
	if base == nil || r.Dataset.WithEvidence == 0 {
		return nil
	}
	baseRecall := map[string]float64{}
	for _, e := range base.Examples {
		if e.Hits != nil && len(e.Hits.Ranks) > 0 {
			baseRecall[e.ID] = e.Hits.RecallAt(k)
		}
	}
	var out []PairedDiff
	for i := range r.Retrievers {
		s := &r.Retrievers[i]
		if s == base || s.Skipped != "" {
			continue
		}
		var diffs []float64
		for _, e := range s.Examples {
			b, ok := baseRecall[e.ID]
			if !ok || e.Hits == nil || len(e.Hits.Ranks) == 0 {
				continue
			}
			diffs = append(diffs, 100*(e.Hits.RecallAt(k)-b))
		}
		if len(diffs) == 0 {
			continue
		}
		d := PairedDiff{Retriever: s.Retriever, Baseline: base.Retriever, K: k, Questions: len(diffs)}
		d.Diff, d.Low, d.High = bootstrapMean(diffs, pairedResamples, pairedSeed)
		for _, x := range diffs {
			switch {
			case x > 0:
				d.Better++
			case x < 0:
				d.Worse++
			default:
				d.Tied++
			}
		}
		out = append(out, d)
	}
	return out
}

// bootstrapMean returns the mean of xs and the 2.5th and 97.5th percentiles of the
// means of resamples draws of len(xs) values with replacement (seeded).
func bootstrapMean(xs []float64, resamples int, seed uint64) (mean, low, high float64) {
	n := len(xs)
	for _, x := range xs {
		mean += x
	}
	mean /= float64(n)
	rng := rand.New(rand.NewPCG(seed, 0x70_61_69_72))
	means := make([]float64, resamples)
	for b := range means {
		sum := 0.0
		for range n {
			sum += xs[rng.IntN(n)]
		}
		means[b] = sum / float64(n)
	}
	slices.Sort(means)
	// As many resampled means below low as above high: with 2,000, 50 on each side.
	tail := int(0.025 * float64(resamples))
	return mean, means[tail], means[resamples-1-tail]
}

// pairedMarkdown renders the comparisons as a list under the table.
func (r *Report) pairedMarkdown() string {
	if len(r.Paired) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nPaired with %s, question by question (mean difference in points, 95 %% bootstrap interval over the questions):\n", PairedBaseline)
	for _, d := range r.Paired {
		fmt.Fprintf(&b, "- %s\n", d)
	}
	return b.String()
}
