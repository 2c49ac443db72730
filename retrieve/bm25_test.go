package retrieve

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestLexIndexMatchesSequential checks the parallel, blockwise index against a plain
// sequential build: same postings in the same order, same lengths.
func TestLexIndexMatchesSequential(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("harbour harbours keeper keepers lamp lamps guild founded founding the of Port Keswyn 1791 salt rope")
	texts := make([]string, 5000) // more than one block of 4096, many workers
	for i := range texts {
		var b strings.Builder
		for range 3 + rng.IntN(20) {
			fmt.Fprint(&b, words[rng.IntN(len(words))], " ")
		}
		texts[i] = b.String()
	}
	an := Analyzer{Stem: true}
	got := newLexIndex(texts, an, 1.2, 0.75)
	want := map[string][]posting{}
	var total float64
	for i, text := range texts {
		ts := an.Terms(text)
		tf := map[string]int32{}
		for _, w := range ts {
			tf[w]++
		}
		for w, n := range tf {
			want[w] = append(want[w], posting{int32(i), n})
		}
		assert.Equal(t, float64(len(ts)), got.docLen[i])
		total += float64(len(ts))
	}
	assert.Equal(t, want, got.postings)
	assert.Equal(t, total/float64(len(texts)), got.avgLen)
	assert.Contains(t, got.postings, "harbour", "stems index both forms")
	assert.NotContains(t, got.postings, "harbours")
}
