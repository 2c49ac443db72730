package kg

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/graphloom/graphloom/extract"
	"github.com/graphloom/graphloom/graphio"
)

func TestNameRules(t *testing.T) {
	for _, tc := range []struct {
		name, want string
	}{
		{"n", FilterShort},
		{"7", FilterShort},
		{"42", FilterNumber},
		{"3 14", FilterNumber},
		{"1922", ""}, // a year is a date
		{"chapter", FilterStructure},
		{"figure 2a", FilterStructure},
		{"chapter iv", FilterStructure},
		{"notice", FilterStructure},
		{"chapter house", ""}, // a building, not a chapter number
		{"the", FilterStop},
		{"it this", FilterStop},
		{"", FilterStop},
		{"mira solenne", ""},
		{"ip", ""}, // two letters: a name may be short (the synonym step skips it)
		{"p 0 001", FilterNumber},
		{"n 45", FilterNumber},
		{"p 0 05 group", ""},
		{"vitamin d 3", ""},
	} {
		assert.Equal(t, tc.want, nameRule(tc.name), "%q", tc.name)
	}
}

func TestEntityFilterGenericAndMentionOnly(t *testing.T) {
	// 4 chunks; "harbour" is in every one, "mira" in one triple, "ghost" only mentioned.
	var results []extract.Result
	for i := 0; i < 4; i++ {
		r := extract.Result{Entities: []extract.Entity{{Text: "Harbour"}}}
		if i == 0 {
			r.Entities = append(r.Entities, extract.Entity{Text: "Mira"}, extract.Entity{Text: "Ghost"}, extract.Entity{Text: "Tomas"})
			r.Triples = []extract.Triple{{Subject: "Mira", Predicate: "knows", Object: "Tomas"}}
		}
		results = append(results, r)
	}
	cfg := DefaultConfig()
	cfg.MaxEntityShare, cfg.GenericMinChunks = 0.5, 4
	f := newEntityFilter(results, cfg)
	assert.Equal(t, FilterGeneric, f.reject("Harbour", true))
	assert.Equal(t, "", f.reject("Mira", true), "in a triple")
	assert.Equal(t, FilterMention, f.reject("Ghost", true))
	assert.Equal(t, "", f.reject("Ghost", false), "as a triple endpoint it is not mention-only")

	cfg.MentionOnly = true
	cfg.GenericMinChunks = 5 // too few chunks for a share to mean anything
	f = newEntityFilter(results, cfg)
	assert.Equal(t, "", f.reject("Harbour", true))
	assert.Equal(t, "", f.reject("Ghost", true))
}

func TestStemSynonyms(t *testing.T) {
	ix := &graphio.Index{}
	b := graphio.NewBuilder(ix, "")
	towns := b.Entity("harbour towns", "")
	town := b.Entity("harbour town", "")
	guild := b.Entity("Lamplighters Guild", "")
	guild2 := b.Entity("lamplighter guild", "")
	b.Entity("harbourmaster", "")
	b.Entity("ox", "") // too short to link
	b.Entity("oxen", "")
	cfg := DefaultConfig()
	assert.Equal(t, 2, addStemSynonyms(graphio.NewSynonymBuilder(ix, ""), 0, cfg))
	assert.ElementsMatch(t, []graphio.Synonym{{A: towns, B: town, Cosine: 1}, {A: guild, B: guild2, Cosine: 1}}, ix.Synonyms)
	assert.Equal(t, 0, addStemSynonyms(graphio.NewSynonymBuilder(ix, ""), 0, cfg), "edges are added once")
}
