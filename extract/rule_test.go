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
			[]Triple{{Subject: "Odile Varrant", Predicate: "founded", Object: "Lamplighters' Guild"}, {Subject: "Odile Varrant", Predicate: "founded in", Object: "1843"}}},
		{"Tomas Brell was born in Aldwick.", []Triple{{Subject: "Tomas Brell", Predicate: "was born in", Object: "Aldwick"}}},
		{"Port Keswyn is a harbour town in the province of Ostmark.",
			[]Triple{{Subject: "Port Keswyn", Predicate: "is a", Object: "harbour town"}}},
		{"Tomas Brell, the harbourmaster of Port Keswyn, was born in Aldwick.",
			[]Triple{{Subject: "Tomas Brell", Predicate: "harbourmaster of", Object: "Port Keswyn"}, {Subject: "Tomas Brell", Predicate: "was born in", Object: "Aldwick"}}},
		{"Odile Varrant, known as the Grey Widow, bought the Meridian from Tomas Brell.",
			[]Triple{{Subject: "Odile Varrant", Predicate: "known as", Object: "Grey Widow"}, {Subject: "Odile Varrant", Predicate: "bought", Object: "Meridian"}, {Subject: "Odile Varrant", Predicate: "bought from", Object: "Tomas Brell"}}},
		{"Mira Solenne is the daughter of Tomas Brell.", []Triple{{Subject: "Mira Solenne", Predicate: "daughter of", Object: "Tomas Brell"}}},
		{"Hesper Quill and Dunstan Marl met Odile Varrant.",
			[]Triple{{Subject: "Hesper Quill", Predicate: "met", Object: "Odile Varrant"}, {Subject: "Dunstan Marl", Predicate: "met", Object: "Odile Varrant"}}},
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
	assert.Contains(t, res.Triples, Triple{Subject: "Mira Solenne", Predicate: "rescued", Object: "Ruel Faddock"}, "%v", res.Triples)
	assert.Contains(t, res.Aliases, [2]string{"Grey Widow", "Odile Varrant"})
	require.Len(t, res.Hyperedges, 3, fmt.Sprint(res.Hyperedges))
	assert.Equal(t, []string{"Mira Solenne", "Ruel Faddock"}, res.Hyperedges[1].Entities)
	assert.Equal(t, "She rescued Ruel Faddock.", res.Hyperedges[1].Text)
}

func TestExtractDocsCrossTextPronouns(t *testing.T) {
	r := NewRule(DefaultRuleConfig())
	texts := []string{
		"Mira Solenne rowed out to Gull Rock in the storm.",
		"She rescued Ruel Faddock from the water.",
	}
	res, err := r.ExtractDocs(texts, nil)
	require.NoError(t, err)
	require.Len(t, res, 2)
	assert.Contains(t, res[1].Triples, Triple{Subject: "Mira Solenne", Predicate: "rescued", Object: "Ruel Faddock", Sources: []int{0}},
		"the pronoun resolves to the person of the previous text, which is recorded: %v", res[1].Triples)
	alone, err := r.ExtractText("She rescued Ruel Faddock from the water.")
	require.NoError(t, err)
	assert.Empty(t, alone.Triples, "alone, the pronoun has no antecedent")
	unlinked, err := r.ExtractDocs(texts, []bool{false, false})
	require.NoError(t, err)
	assert.Empty(t, unlinked[1].Triples, "texts that do not continue each other share no antecedents")
}

func TestExtractDocsTopicShiftEndsTheDiscourse(t *testing.T) {
	r := NewRule(DefaultRuleConfig())
	cases := []struct {
		name   string
		second string
		want   bool // the second text's pronoun resolves to the first text's person
	}{
		{"opens with a pronoun", "She rescued Ruel Faddock from the water.", true},
		{"a date before the pronoun", "In 1803 she rescued Ruel Faddock from the water.", true},
		{"names its own subject first", "The Meridian was a brig. She rescued Ruel Faddock from the water.", false},
		{"names a place first", "Port Keswyn is a harbour town. He rescued Ruel Faddock from the water.", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := r.ExtractDocs([]string{"Mira Solenne rowed out to Gull Rock in the storm.", c.second}, nil)
			require.NoError(t, err)
			resolved := false
			for _, tr := range res[1].Triples {
				if tr.Subject == "Mira Solenne" {
					resolved = true
				}
			}
			assert.Equal(t, c.want, resolved, "%v", res[1].Triples)
		})
	}
}

func TestAliasOfASplitNameIsNotRecorded(t *testing.T) {
	r := NewRule(DefaultRuleConfig())
	cases := []struct {
		text  string
		alias [2]string // want this alias; empty: want none
	}{
		{"Odile Varrant, known as the Grey Widow, was a shipowner.", [2]string{"Odile Varrant", "Grey Widow"}},
		{"The King on Main Street, also known as The King, is a 1925 American film.", [2]string{}},
		{"He was a member of the House of Lords, styled Lord Howard from 1889.", [2]string{}},
	}
	for _, c := range cases {
		t.Run(c.text, func(t *testing.T) {
			res, err := r.ExtractText(c.text)
			require.NoError(t, err)
			if c.alias == [2]string{} {
				assert.Empty(t, res.Aliases)
				return
			}
			assert.Contains(t, res.Aliases, c.alias)
		})
	}
}

func TestPersonTitle(t *testing.T) {
	for _, c := range []struct {
		title string
		want  bool
	}{
		{"Lars Eliasson", true},
		{"Obata Toramori", true},
		{"Minamoto no Chikako", true},
		{"Ludwig van Beethoven", true},
		{"Pattom A. Thanu Pillai [chunk 2]", false}, // four capitalised words
		{"Chapter 12: Morning Tide", false},
		{"Port Keswyn", true}, // no place word to tell it from a name
		{"Gull Rock", false},
		{"Madonna", false},
		{"Minamoto no", false},
		{"de Gaulle Charles", false},
		{"Anna van der Berg", false}, // two particles
		{"Her First Romance", false},
	} {
		assert.Equal(t, c.want, PersonTitle(c.title), c.title)
	}
}
