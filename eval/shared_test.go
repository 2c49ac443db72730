package eval

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
)

// corpora is the shared data folder of a development checkout (see the Makefile's SHARED).
const corpora = "../../shared/data/corpora"

func needCorpora(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(corpora); err != nil {
		t.Skipf("shared corpora not found at %s (a fresh clone has none): %v", corpora, err)
	}
}

// corpusMatcher returns a Matcher knowing a {title, text} corpus file as one chunk per passage.
func corpusMatcher(t *testing.T, path string) *Matcher {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var docs []struct{ Title, Text string }
	require.NoError(t, json.Unmarshal(data, &docs))
	chunks := make([]graphio.Chunk, len(docs))
	for i, d := range docs {
		chunks[i] = graphio.Chunk{Title: d.Title, Text: d.Text}
	}
	return NewMatcher(chunks)
}

func TestHarbourExample(t *testing.T) {
	ds, err := ReadDataset(filepath.Join("..", "examples", "harbour", "questions.json"))
	require.NoError(t, err)
	assert.Equal(t, FormatHippoRAG, ds.Format)
	assert.Len(t, ds.Examples, 26)
	assert.Empty(t, ds.Skipped)
	assert.Equal(t, 26, ds.WithEvidence())
	m := corpusMatcher(t, filepath.Join("..", "examples", "harbour", "corpus.json"))
	gold := 0
	for _, ex := range ds.Examples {
		gold += len(ex.Gold)
		for _, g := range ex.Gold {
			assert.True(t, m.InCorpus(g), "%s: gold %q is byte-identical to the corpus", ex.ID, g.Title)
		}
		assert.NotEmpty(t, ex.Answers, ex.ID)
	}
	assert.Equal(t, 54, gold)

	triples, err := ReadGoldTriples(filepath.Join("..", "examples", "harbour", "gold_triples.json"))
	require.NoError(t, err)
	assert.Len(t, triples, 15)
}

func TestSharedCorpora(t *testing.T) {
	needCorpora(t)
	t.Run("MoreHopQA-150", func(t *testing.T) {
		path := filepath.Join(corpora, "morehopqa_150.json")
		ds, err := ReadDataset(path)
		require.NoError(t, err)
		assert.Equal(t, FormatMoreHopQA, ds.Format)
		assert.Len(t, ds.Examples, 150)
		assert.Empty(t, ds.Skipped)
		for _, ex := range ds.Examples {
			require.Len(t, ex.Gold, 2, ex.ID)
			for _, g := range ex.Gold {
				assert.NotEmpty(t, g.Text, "%s: support title %q has a context paragraph", ex.ID, g.Title)
			}
			assert.Len(t, ex.Answers, 1)
		}
		ps, _, err := CorpusFromDataset(path)
		require.NoError(t, err)
		assert.Len(t, ps, 235, "distinct (title, text) contexts")
	})
	for _, cs := range []struct {
		name    string
		gold    int
		answers int
	}{{"biomed", 2, 1}, {"books", 2, 1}, {"movies", 2, 1}, {"university", 4, 3}} {
		t.Run("case study "+cs.name, func(t *testing.T) {
			ds, err := ReadDataset(filepath.Join(corpora, "case_study_"+cs.name+".json"))
			require.NoError(t, err)
			assert.Equal(t, FormatHippoRAG, ds.Format)
			require.Len(t, ds.Examples, 1)
			ex := ds.Examples[0]
			assert.Len(t, ex.Gold, cs.gold)
			assert.Len(t, ex.Answers, cs.answers)
			m := corpusMatcher(t, filepath.Join(corpora, "case_study_"+cs.name+"_corpus.json"))
			for _, g := range ex.Gold {
				assert.True(t, m.InCorpus(g), "gold %q is in the corpus", g.Title)
			}
		})
	}
	t.Run("LiteraryQA", func(t *testing.T) {
		matches, err := filepath.Glob(filepath.Join(corpora, "literaryqa", "literaryqa_test_*[0-9].json"))
		require.NoError(t, err)
		require.Len(t, matches, 3)
		for _, path := range matches {
			ds, err := ReadDataset(path)
			require.NoError(t, err)
			assert.Equal(t, FormatLiteraryQA, ds.Format, path)
			assert.Zero(t, ds.WithEvidence(), path)
			assert.GreaterOrEqual(t, len(ds.Examples), 26, path)
			for _, ex := range ds.Examples {
				assert.GreaterOrEqual(t, len(ex.Answers), 1, ex.ID)
			}
		}
	})
	t.Run("a corpus file is not a dataset", func(t *testing.T) {
		_, err := ReadDataset(filepath.Join(corpora, "sample_corpus.json"))
		assert.ErrorContains(t, err, "unknown dataset format")
	})
}
