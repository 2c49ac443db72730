package eval

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
)

func TestExtractionScore(t *testing.T) {
	ix := &graphio.Index{Meta: graphio.Meta{Extractor: "rule"}}
	b := graphio.NewBuilder(ix, "")
	brell, _ := b.AddDocument("Tomas Brell", "…", "test")
	keswyn, _ := b.AddDocument("Port Keswyn", "…", "test")
	c0, _ := b.AddChunk(brell, 0, "Tomas Brell [chunk 1]", "Tomas Brell was born in Aldwick.", 8)
	c1, _ := b.AddChunk(brell, 1, "Tomas Brell [chunk 2]", "He was harbourmaster of Port Keswyn and retired in 1815.", 12)
	c2, _ := b.AddChunk(keswyn, 0, "Port Keswyn", "The Grey Widow founded the Lamplighters' Guild.", 10)
	for _, f := range []struct {
		s, p, o string
		c       int32
	}{
		{"Tomas Brell", "born in", "Aldwick", c0},
		{"Tomas Brell", "harbourmaster", "Port Keswyn", c1},
		{"1815", "retirement year of", "Tomas Brell", c1}, // reversed: a pair match only
		{"the Grey Widow", "founded", "Lamplighters' Guild", c2},
	} {
		_, _, err := b.AddFact(f.s, f.p, f.o, f.c)
		require.NoError(t, err)
	}
	_, _, err := graphio.NewBuilder(ix, "aug1").AddFact("Port Keswyn", "near", "Aldwick", c2) // augmented: not scored
	require.NoError(t, err)

	gold := []GoldTriples{
		{Title: "Tomas Brell", Triples: [][]string{{"Tomas Brell", "born in", "Aldwick"}, {"Tomas Brell", "harbourmaster of", "Port Keswyn"}, {"Tomas Brell", "retired in", "1815"}}},
		{Title: "Port Keswyn", Triples: [][]string{{"Grey Widow", "founded", "Lamplighters Guild"}, {"Port Keswyn", "is a", "harbour town"}}},
		{Title: "Saint Ebba", Triples: [][]string{{"Saint Ebba", "is a", "island"}}},
	}
	rep := ExtractionScore(ix, gold)
	assert.Equal(t, "rule", rep.Extractor)
	assert.Equal(t, 3, rep.Passages)
	assert.Equal(t, []string{"Saint Ebba"}, rep.Missing)
	assert.Equal(t, 6, rep.Gold)
	assert.Equal(t, 4, rep.Predicted)
	// Pair: 3 of Brell's (the reversed one included) + the Grey Widow = 4 of 4 predicted, of 6 gold.
	assertPRF(t, PRF{Matched: 4, Precision: 1, Recall: 4.0 / 6, F1: 0.8}, rep.Pair)
	// Predicate: the reversed triple no longer matches: 3 of 4, of 6.
	assertPRF(t, PRF{Matched: 3, Precision: 0.75, Recall: 0.5, F1: 0.6}, rep.Predicate)
	require.Len(t, rep.PerPassage, 3)
	kes := rep.PerPassage[1]
	assert.Equal(t, "Port Keswyn", kes.Title)
	assert.Equal(t, [2]int{2, 1}, [2]int{kes.Gold, kes.Predicted})
	assertPRF(t, PRF{Matched: 1, Precision: 1, Recall: 0.5, F1: 2.0 / 3}, kes.Pair)
	assertPRF(t, PRF{Matched: 1, Precision: 1, Recall: 0.5, F1: 2.0 / 3}, kes.Predicate)
	ebba := rep.PerPassage[2]
	assertPRF(t, PRF{}, ebba.Pair)
}

func assertPRF(t *testing.T, want, got PRF) {
	t.Helper()
	assert.Equal(t, want.Matched, got.Matched, "matched")
	assert.InDelta(t, want.Precision, got.Precision, 1e-12, "precision")
	assert.InDelta(t, want.Recall, got.Recall, 1e-12, "recall")
	assert.InDelta(t, want.F1, got.F1, 1e-12, "F1")
}

func TestReadGoldTriples(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.json")
	require.NoError(t, os.WriteFile(ok, []byte(`[{"title": "A", "triples": [["a", "b", "c"]]}]`), 0o644))
	g, err := ReadGoldTriples(ok)
	require.NoError(t, err)
	assert.Equal(t, []GoldTriples{{Title: "A", Triples: [][]string{{"a", "b", "c"}}}}, g)

	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`[{"title": "A", "triples": [["a", "b"]]}]`), 0o644))
	_, err = ReadGoldTriples(bad)
	assert.ErrorContains(t, err, `"A": triple 0 has 2 elements`)
}
