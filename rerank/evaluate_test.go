package rerank

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/eval"
)

// TestPoolCandidatesDistractorsAreDistinct: distractors are drawn without
// replacement — no passage fills two slots of a pool — and a pool gets the asked
// number when the other examples hold enough passages.
func TestPoolCandidatesDistractorsAreDistinct(t *testing.T) {
	ds := &eval.Dataset{}
	for i := range 6 {
		p := eval.Passage{Title: fmt.Sprintf("T%d", i), Text: fmt.Sprintf("passage %d", i)}
		ds.Examples = append(ds.Examples, eval.Example{Question: fmt.Sprintf("q%d", i), Context: []eval.Passage{p},
			Gold: []eval.GoldPassage{{Title: p.Title, Text: p.Text}}})
	}
	for _, tc := range []struct{ distractors, size int }{{2, 3}, {5, 6}, {9, 6}} {
		for seed := range uint64(20) {
			for _, c := range PoolCandidates(ds, tc.distractors, seed) {
				seen := map[string]bool{}
				for _, k := range c.Keys {
					require.False(t, seen[k], "distractors %d seed %d: %q twice in one pool", tc.distractors, seed, k)
					seen[k] = true
				}
				assert.Len(t, c.Keys, tc.size, "distractors %d seed %d", tc.distractors, seed)
			}
		}
	}
}
