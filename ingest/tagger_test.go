package ingest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/jdkato/prose/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sharedCorpora is the shared data folder of a development checkout.
const sharedCorpora = "../../shared/data/corpora"

// corpusTexts returns the texts of a {title, text} corpus file, at most n.
func corpusTexts(t *testing.T, path string, n int) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var docs []struct{ Title, Text string }
	require.NoError(t, json.Unmarshal(data, &docs))
	var out []string
	for _, d := range docs[:min(n, len(docs))] {
		out = append(out, d.Title, d.Text)
	}
	return out
}

// TestNERModelMatchesProse checks that the rearranged entity model labels every token
// as prose's own classifier does given prose's tags, and the whole Tagger nearly so,
// on the example corpus, edge-case strings and (in a development checkout) 500
// passages of the 2Wiki corpus.
func TestNERModelMatchesProse(t *testing.T) {
	texts := []string{
		"", "a", "Mr. O'Neill-Smith met DR. who at 3.5 p.m. in São Paulo, Brazil!",
		"Ünïcödé Wörds ending in é and 100_000 or 1e5 and NaN inf 0x1p-2.",
		"The U.S. Army's 101st Airborne Division (\"Screaming Eagles\") left Fort Campbell, Kentucky.",
		"iPhone eBay McDonald's MacArthur de la Cruz van der Waals",
		"\xff\xfe invalid bytes Alice \xc3 Bob",
	}
	texts = append(texts, corpusTexts(t, filepath.Join("..", "examples", "harbour", "corpus.json"), 1000)...)
	if _, err := os.Stat(sharedCorpora); err == nil {
		texts = append(texts, corpusTexts(t, filepath.Join(sharedCorpora, "2wikimultihopqa_corpus.json"), 500)...)
	} else {
		t.Logf("shared corpora not found (%v): example corpus only", err)
	}
	tagger, err := LoadTagger()
	require.NoError(t, err)
	model := prose.ModelFromData("reference")
	tokens, diff, tagDiff, labelDiff := 0, 0, 0, 0
	for _, text := range texts {
		doc, err := prose.NewDocument(text, prose.WithSegmentation(false), prose.UsingModel(model))
		require.NoError(t, err)
		want := doc.Tokens()
		// Labels from prose's own tokens and tags: identical.
		got := make([]Token, len(want))
		for i, w := range want {
			got[i] = Token{Text: w.Text, Tag: w.Tag}
		}
		tagger.ner.Label(got)
		_, keys, err := tokenize(text)
		require.NoError(t, err)
		require.Len(t, keys, len(got))
		share(keys, got, func(t *Token) *string { return &t.Label })
		for i := range want {
			tokens++
			if want[i].Label != got[i].Label {
				diff++
				t.Errorf("%q token %d %q: prose %q, ours %q", text, i, want[i].Text, want[i].Label, got[i].Label)
			}
		}
		// The Tagger's tokens are prose's; its tags differ only where prose's map-order
		// sums break a near-tie otherwise (or on an emoticon with letters), and labels
		// follow the tags.
		tagged, err := tagger.Tag(text)
		require.NoError(t, err)
		require.Len(t, tagged, len(want), text)
		for i := range want {
			require.Equal(t, want[i].Text, tagged[i].Text)
			if want[i].Tag != tagged[i].Tag {
				tagDiff++
				t.Logf("tag of %q: prose %s, ours %s", want[i].Text, want[i].Tag, tagged[i].Tag)
			}
			if want[i].Label != tagged[i].Label {
				labelDiff++
			}
		}
	}
	t.Logf("%d texts, %d tokens; from prose's tags %d labels differ; Tagger: %d tags, %d labels differ", len(texts), tokens, diff, tagDiff, labelDiff)
	assert.Greater(t, tokens, 5000)
	assert.LessOrEqual(t, tagDiff, tokens/1000)
	assert.LessOrEqual(t, labelDiff, tokens/1000)
}

// TestTaggerDeterministic tags the same text with two separately loaded taggers.
func TestTaggerDeterministic(t *testing.T) {
	texts := corpusTexts(t, filepath.Join("..", "examples", "harbour", "corpus.json"), 1000)
	a, err := LoadTagger()
	require.NoError(t, err)
	b, err := LoadTagger()
	require.NoError(t, err)
	for _, text := range texts {
		x, err := a.Tag(text)
		require.NoError(t, err)
		y, err := b.Tag(text)
		require.NoError(t, err)
		require.Equal(t, x, y)
	}
}

func TestNERShape(t *testing.T) {
	for _, c := range []struct{ word, want string }{
		{"12", "number"}, {"1e5", "number"}, {"Inf", "number"}, {"", "other"}, {"abc", "downcase"},
		{"Abc", "upcase"}, {"ABC", "upcase"}, {"iPhone", "mixedcase"}, {"abc.", "punct"}, {"naïve", "downcase"}, {"café", "punct"},
		{"Rock-Hudson", "upcase"}, {"a_", "downcase"}, {"x\xff", "punct"},
	} {
		assert.Equal(t, c.want, nerShape(c.word), c.word)
	}
}

func TestTokenEntity(t *testing.T) {
	for label, want := range map[string]string{"B-PERSON": "PERSON", "I-GPE": "GPE", "O": "", "": "", "B-": ""} {
		assert.Equal(t, want, Token{Label: label}.Entity(), label)
	}
}
