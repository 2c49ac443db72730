package eval

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNormalizeAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"lower and articles", "The Eiffel Tower", "eiffel tower"},
		{"all three articles", "a cat, an owl and the dog", "cat owl and dog"},
		{"articles only as words", "Theatre Anna Atlas", "theatre anna atlas"},
		{"punctuation removed, not spaced", "U.S.A.", "usa"},
		{"hyphen joins", "well-known", "wellknown"},
		{"apostrophe", "Lamplighters' Guild", "lamplighters guild"},
		{"article after punctuation removal", "the-end", "theend"},
		{"whitespace collapsed", "  New \t York\n", "new york"},
		{"unicode kept, lowered", "Zürich ÉCOLE", "zürich école"},
		{"non-ASCII punctuation kept", "rock–paper", "rock–paper"},
		{"article next to a non-ASCII dash", "the–end", "–end"},
		{"numbers", "1,000 ships", "1000 ships"},
		{"empty", "", ""},
		{"only an article", "The", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, NormalizeAnswer(tc.in))
		})
	}
}

func TestExactMatchAndF1(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pred     string
		golds    []string
		em, f1   float64
		prec, rc float64
	}{
		{"exact after normalisation", "the Grey Widow.", []string{"Grey Widow"}, 1, 1, 1, 1},
		{"alias matches", "Odile Varrant", []string{"the Grey Widow", "Odile Varrant"}, 1, 1, 1, 1},
		// pred {tomas, brell, harbourmaster} vs gold {tomas, brell}: P 2/3, R 1, F1 0.8.
		{"partial overlap", "Tomas Brell harbourmaster", []string{"Tomas Brell"}, 0, 0.8, 2.0 / 3, 1},
		// best alias by F1: "port keswyn" (F1 2/3 vs 0).
		{"max over aliases", "Keswyn", []string{"Aldwick", "Port Keswyn"}, 0, 2.0 / 3, 1, 0.5},
		// multiplicity: pred "the the cat cat" → {cat, cat}; gold {cat}: common 1, P 1/2, R 1.
		{"token multiplicity", "cat cat", []string{"the cat"}, 0, 2.0 / 3, 0.5, 1},
		{"no common token", "Aldwick", []string{"Port Keswyn"}, 0, 0, 0, 0},
		{"empty prediction", "", []string{"Aldwick"}, 0, 0, 0, 0},
		{"no gold", "Aldwick", nil, 0, 0, 0, 0},
		// A gold answer that normalises to nothing (MoreHopQA's "a") is compared lower-cased.
		{"article gold, empty answer", "", []string{"a"}, 0, 0, 0, 0},
		{"article gold, another article", "The", []string{"a"}, 0, 0, 0, 0},
		{"article gold, matched", "A", []string{"a"}, 1, 1, 1, 1},
		{"article gold, with punctuation", "a.", []string{"a"}, 1, 1, 1, 1},
		{"article gold, in a phrase", "a town", []string{"a"}, 0, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ScoreAnswer(tc.pred, tc.golds)
			assert.InDelta(t, tc.em, s.EM, 1e-12)
			assert.InDelta(t, tc.f1, s.F1, 1e-12)
			assert.InDelta(t, tc.prec, s.Precision, 1e-12)
			assert.InDelta(t, tc.rc, s.Recall, 1e-12)
			assert.InDelta(t, tc.em, ExactMatch(tc.pred, tc.golds), 1e-12)
		})
	}
}

func TestContainsAnswer(t *testing.T) {
	text := "Tomas Brell was born in Aldwick in 1749. He became harbourmaster of Port Keswyn."
	for _, tc := range []struct {
		name    string
		answers []string
		want    bool
	}{
		{"whole words", []string{"Port Keswyn"}, true},
		{"alias", []string{"Dover", "aldwick"}, true},
		{"not a token prefix", []string{"Ald"}, false},
		{"number", []string{"1749"}, true},
		{"article-only answer is ignored", []string{"the"}, false},
		{"absent", []string{"Fennmouth"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ContainsAnswer(text, tc.answers))
		})
	}
}

// TestScoreListed: answers a retriever lists (G-Retriever's "a|b") are scored each on
// its own, the best kept; scored as one string the "|" vanishes in SQuAD's
// normalisation and "malia|sasha" is one wrong word.
func TestScoreListed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		preds  []string
		golds  []string
		em, f1 float64
	}{
		{"listed answers", []string{"malia", "sasha"}, []string{"Malia", "Sasha"}, 1, 1},
		{"listed aliases", []string{"united states", "usa"}, []string{"United States of America", "USA"}, 1, 1},
		{"one partly right", []string{"Aldwick", "Keswyn"}, []string{"Port Keswyn"}, 0, 2.0 / 3},
		{"none right", []string{"Aldwick"}, []string{"Port Keswyn"}, 0, 0},
	} {
		s := ScoreListed(tc.preds, tc.golds)
		assert.InDelta(t, tc.em, s.EM, 1e-12, tc.name)
		assert.InDelta(t, tc.f1, s.F1, 1e-12, tc.name)
	}
	assert.Zero(t, ScoreAnswer("malia|sasha", []string{"Malia", "Sasha"}).EM, "one string: one wrong word")
}
