package extract

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRulePatterns(t *testing.T) {
	r := NewRule(DefaultRuleConfig())
	for _, tc := range []struct {
		text string
		want []Triple
	}{
		{"Odile Varrant founded the Lamplighters' Guild in 1843.",
			[]Triple{{"Odile Varrant", "founded", "Lamplighters' Guild"}, {"Odile Varrant", "founded in", "1843"}}},
		{"Tomas Brell was born in Aldwick.", []Triple{{"Tomas Brell", "was born in", "Aldwick"}}},
		{"Port Keswyn is a harbour town in the province of Ostmark.",
			[]Triple{{"Port Keswyn", "is a", "harbour town"}}},
		{"Tomas Brell, the harbourmaster of Port Keswyn, was born in Aldwick.",
			[]Triple{{"Tomas Brell", "harbourmaster of", "Port Keswyn"}, {"Tomas Brell", "was born in", "Aldwick"}}},
		{"Odile Varrant, known as the Grey Widow, bought the Meridian from Tomas Brell.",
			[]Triple{{"Odile Varrant", "known as", "Grey Widow"}, {"Odile Varrant", "bought", "Meridian"}, {"Odile Varrant", "bought from", "Tomas Brell"}}},
		{"Mira Solenne is the daughter of Tomas Brell.", []Triple{{"Mira Solenne", "daughter of", "Tomas Brell"}}},
		{"Hesper Quill and Dunstan Marl met Odile Varrant.",
			[]Triple{{"Hesper Quill", "met", "Odile Varrant"}, {"Dunstan Marl", "met", "Odile Varrant"}}},
	} {
		t.Run(tc.text, func(t *testing.T) {
			res, err := r.ExtractText(tc.text)
			require.NoError(t, err)
			for _, w := range tc.want {
				assert.Contains(t, res.Triples, w, "got %v", res.Triples)
			}
		})
	}
}

func TestRulePronounsAliasesHyperedges(t *testing.T) {
	r := NewRule(DefaultRuleConfig())
	res, err := r.ExtractText("Mira Solenne rowed out to Gull Rock. She rescued Ruel Faddock. The Grey Widow, also known as Odile Varrant, watched from Tallow Point.")
	require.NoError(t, err)
	assert.Contains(t, res.Triples, Triple{"Mira Solenne", "rescued", "Ruel Faddock"}, "%v", res.Triples)
	assert.Contains(t, res.Aliases, [2]string{"Grey Widow", "Odile Varrant"})
	require.Len(t, res.Hyperedges, 3, fmt.Sprint(res.Hyperedges))
	assert.Equal(t, []string{"Mira Solenne", "Ruel Faddock"}, res.Hyperedges[1].Entities)
	assert.Equal(t, "She rescued Ruel Faddock.", res.Hyperedges[1].Text)
}
