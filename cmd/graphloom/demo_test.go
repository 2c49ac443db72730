package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/eval"
	"github.com/graphloom/graphloom/retrieve"
)

func TestGoldFound(t *testing.T) {
	gold := []eval.GoldPassage{{Title: "A", Text: "a text"}, {Title: "B"}}
	for _, tc := range []struct {
		passages []retrieve.Passage
		want     int
	}{
		{nil, 0},
		{[]retrieve.Passage{{Title: "A", Text: "a text "}, {Title: "B", Text: "anything"}}, 2},
		{[]retrieve.Passage{{Title: "A", Text: "another text"}, {Title: "B"}}, 1},
		{[]retrieve.Passage{{Title: "C", Text: "a text"}}, 0},
	} {
		assert.Equal(t, tc.want, goldFound(gold, tc.passages))
	}
}

// TestDemoCrossChunkQuestion checks what `make demo` shows in its step 5 on the
// example corpus: after augmentation, `query --retriever ppr --compare bm25` finds
// cross-chunk questions whose gold passages are all in PPR's top 5 and not all in
// BM25's, and each one it lists is confirmed by querying both retrievers directly.
// (The demo trains the GNN selector at θ = 0.5; the test uses the random selector to
// stay fast: the check is of the comparison, on an index augmented the same way.)
func TestDemoCrossChunkQuestion(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "harbour.gl")
	ex := filepath.Join("..", "..", "examples", "harbour")
	r := run(t, nil, "index", "--corpus", filepath.Join(ex, "corpus.json"), "--out", idx, "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	r = run(t, nil, "augment", "--index", idx, "--roots", "100", "--budget", "40", "--selector", "random", "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	dataset := filepath.Join(ex, "questions.json")
	r = run(t, nil, "query", "--index", idx, "--retriever", "ppr", "--compare", "bm25", "--dataset", dataset, "--top-k", "5", "--no-recognition", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var wins []Win
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &wins))
	require.NotEmpty(t, wins, "no cross-chunk question that ppr answers and bm25 does not")
	ds, err := eval.ReadDataset(dataset)
	require.NoError(t, err)
	byID := map[string]eval.Example{}
	for _, e := range ds.Examples {
		byID[e.ID] = e
	}
	for _, w := range wins {
		ex := byID[w.ID]
		require.GreaterOrEqual(t, len(ex.Gold), 2, "a cross-chunk question")
		found := map[string]int{}
		for _, retr := range []string{"ppr", "bm25"} {
			r := run(t, nil, "query", "--index", idx, "--retriever", retr, "--top-k", "5", "--no-recognition", "--json", ex.Question)
			require.Equal(t, 0, r.code, r.stderr)
			var line retrieve.RunLine
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &line))
			found[retr] = goldFound(ex.Gold, line.Passages)
		}
		assert.Equal(t, len(ex.Gold), found["ppr"], "%s: ppr has every gold passage", w.ID)
		assert.Less(t, found["bm25"], len(ex.Gold), "%s: bm25 misses one", w.ID)
	}
	// The plain output names the questions.
	r = run(t, nil, "query", "--index", idx, "--retriever", "ppr", "--compare", "bm25", "--dataset", dataset, "--top-k", "5", "--no-recognition")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, wins[0].Question)
	assert.Contains(t, r.stdout, "multi-passage questions: all gold passages in ppr's top 5, not in bm25's")
}
