package eval

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/retrieve"
)

func TestRecallAtK(t *testing.T) {
	for _, tc := range []struct {
		name      string
		retrieved []string
		gold      []string
		k         int
		want      float64
	}{
		{"all gold in top k", []string{"a", "b", "c"}, []string{"a", "b"}, 2, 1},
		{"one of two", []string{"a", "x", "b"}, []string{"a", "b"}, 2, 0.5},
		{"k beyond the ranking", []string{"a"}, []string{"a", "b"}, 10, 0.5},
		{"duplicate gold counted once", []string{"a"}, []string{"a", "a"}, 1, 1},
		{"duplicate retrieval counted once", []string{"a", "a"}, []string{"a", "b"}, 2, 0.5},
		{"no gold", []string{"a"}, nil, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, RecallAtK(tc.retrieved, tc.gold, tc.k), 1e-12)
		})
	}
}

func TestBaseTitle(t *testing.T) {
	assert.Equal(t, "Tomas Brell", BaseTitle("Tomas Brell [chunk 2]"))
	assert.Equal(t, "The Variable Man", BaseTitle("The Variable Man [chunk 0001]"))
	assert.Equal(t, "Tomas Brell", BaseTitle("Tomas Brell"))
	assert.Equal(t, "[chunk 1]", BaseTitle("[chunk 1]"))
}

func psg(title, text string) retrieve.Passage { return retrieve.Passage{Title: title, Text: text} }

func chunk(title, text string) graphio.Chunk { return graphio.Chunk{Title: title, Text: text} }

func TestMatcher(t *testing.T) {
	brellA := GoldPassage{"Tomas Brell", "Tomas Brell was born in Aldwick. He kept the harbour ledger."}
	brellB := GoldPassage{"Tomas Brell", "Tomas Brell retired in 1815."}
	keswyn := GoldPassage{"Port Keswyn", "Port Keswyn is a harbour town."}
	// An index that holds brellA in two chunks and keswyn whole; brellB's text is absent
	// (the index holds another passage titled Tomas Brell).
	m := NewMatcher([]graphio.Chunk{
		chunk("Tomas Brell [chunk 1]", "Tomas Brell was born in Aldwick."),
		chunk("Tomas Brell [chunk 2]", "He kept the harbour ledger."),
		chunk("Tomas Brell", "Tomas Brell was a harbourmaster."),
		chunk("Port Keswyn", "Port Keswyn is a harbour town."),
	})
	for _, tc := range []struct {
		name      string
		m         *Matcher
		gold      []GoldPassage
		ranking   []retrieve.Passage
		ranks     []int
		levels    []MatchLevel
		titleOnly int
		r1, r2    float64
	}{
		{
			name: "exact identity", m: m, gold: []GoldPassage{keswyn},
			ranking: []retrieve.Passage{psg("Other", "x"), psg(keswyn.Title, keswyn.Text)},
			ranks:   []int{2}, levels: []MatchLevel{MatchExact}, r1: 0, r2: 1,
		},
		{
			name: "a chunk matches its document's gold passage, once", m: m, gold: []GoldPassage{brellA, keswyn},
			ranking: []retrieve.Passage{psg("Tomas Brell [chunk 2]", "He kept the  harbour ledger."), psg("Tomas Brell [chunk 1]", "Tomas Brell was born in Aldwick.")},
			ranks:   []int{1, 0}, levels: []MatchLevel{MatchChunk, MatchNone}, r1: 0.5, r2: 0.5,
		},
		{
			name: "same title, other text: no match when the gold text is indexed", m: m, gold: []GoldPassage{brellA},
			ranking: []retrieve.Passage{psg("Tomas Brell", "Tomas Brell was a harbourmaster.")},
			ranks:   []int{0}, levels: []MatchLevel{MatchNone}, r1: 0, r2: 0,
		},
		{
			name: "title fallback when the gold text is not in the index", m: m, gold: []GoldPassage{brellB},
			ranking: []retrieve.Passage{psg("Port Keswyn", keswyn.Text), psg("Tomas Brell", "Tomas Brell was a harbourmaster.")},
			ranks:   []int{2}, levels: []MatchLevel{MatchTitle}, titleOnly: 1, r1: 0, r2: 1,
		},
		{
			// Two gold passages share a title and the index holds neither text (it was
			// built from another rendering of the corpus): each retrieved passage with
			// that title satisfies one of them, and a repeated passage counts once.
			name: "duplicate titles need two passages", m: NewMatcher([]graphio.Chunk{chunk("Thomas C. Südhof", "Südhof is a neuroscientist.")}),
			gold: []GoldPassage{{"Thomas C. Südhof", "Südhof shared the Nobel Prize."}, {"Thomas C. Südhof", "Südhof studies synapses."}, {"Robert Malenka", "Malenka is a psychiatrist."}},
			ranking: []retrieve.Passage{psg("Thomas C. Südhof", "Südhof is a neuroscientist."), psg("Thomas C. Südhof", "Südhof is a neuroscientist."),
				psg("Thomas C. Südhof", "Südhof works at Stanford.")},
			ranks: []int{1, 3, 0}, levels: []MatchLevel{MatchTitle, MatchTitle, MatchNone}, titleOnly: 3, r1: 1.0 / 3, r2: 1.0 / 3,
		},
		{
			name: "no corpus known: gold with text needs its text", m: &Matcher{}, gold: []GoldPassage{brellB},
			ranking: []retrieve.Passage{psg("Tomas Brell", "Tomas Brell was a harbourmaster.")},
			ranks:   []int{0}, levels: []MatchLevel{MatchNone}, r1: 0, r2: 0,
		},
		{
			// The index was built from a corpus in NFD ("Su\u0308dhof"), the dataset is in
			// NFC: the text is found, and the indexed text known, so no title fallback.
			name: "NFC and NFD spellings match", m: NewMatcher([]graphio.Chunk{chunk("Thomas C. Su\u0308dhof", "Su\u0308dhof studies synapses.")}),
			gold:    []GoldPassage{{"Thomas C. Südhof", "Südhof studies synapses."}},
			ranking: []retrieve.Passage{psg("Thomas C. Su\u0308dhof [chunk 1]", "Su\u0308dhof studies  synapses.")},
			ranks:   []int{1}, levels: []MatchLevel{MatchChunk}, r1: 1, r2: 1,
		},
		{
			name: "exact beats title for the same passage", m: &Matcher{},
			gold:    []GoldPassage{{Title: "Port Keswyn"}, keswyn},
			ranking: []retrieve.Passage{psg(keswyn.Title, keswyn.Text), psg("Port Keswyn", "Another passage.")},
			ranks:   []int{2, 1}, levels: []MatchLevel{MatchTitle, MatchExact}, titleOnly: 1, r1: 0.5, r2: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := &Example{Gold: tc.gold}
			h := tc.m.Match(tc.ranking, ex)
			assert.Equal(t, tc.ranks, h.Ranks)
			assert.Equal(t, tc.levels, h.Levels)
			assert.Equal(t, tc.titleOnly, h.TitleOnly)
			assert.InDelta(t, tc.r1, h.RecallAt(1), 1e-12)
			assert.InDelta(t, tc.r2, h.RecallAt(2), 1e-12)
		})
	}
}

func TestMatcherSpans(t *testing.T) {
	ex := &Example{Spans: []string{
		"The Magpie bribed Dunstan Marl.",
		"the lamp was dark. the brig struck Gull Rock.",
	}}
	ranking := []retrieve.Passage{
		psg("Chapter 9", "In the autumn the  MAGPIE bribed Dunstan Marl. He took the silver."),
		psg("Chapter 10 [chunk 2]", "The brig struck Gull Rock."), // holds over half of span 2
		psg("Chapter 11", "Gull Rock."),                           // too short to stand for span 2
	}
	h := (&Matcher{}).Match(ranking, ex)
	assert.Equal(t, []int{1, 2}, h.Ranks)
	assert.Equal(t, []MatchLevel{MatchSpan, MatchSpan}, h.Levels)
	assert.InDelta(t, 0.5, h.RecallAt(1), 1e-12)

	h = (&Matcher{}).Match(ranking[2:], ex)
	assert.Equal(t, []int{0, 0}, h.Ranks)
}

// TestPubMedQAGoldIsTheAbstract: a PubMedQA question's gold is its own abstract; an
// abstract that shares a short section with it ("None.") is not part of it.
func TestPubMedQAGoldIsTheAbstract(t *testing.T) {
	ds, err := ParseDataset([]byte(`{
 "1": {"QUESTION": "Does it help?", "CONTEXTS": ["Trauma patients were studied.", "None."], "final_decision": "yes"},
 "2": {"QUESTION": "Does it hurt?", "CONTEXTS": ["Children were followed for a year.", "None."], "final_decision": "no"}}`), "pqa.json")
	require.NoError(t, err)
	require.Len(t, ds.Examples, 2)
	corpus := ds.Corpus()
	require.Len(t, corpus, 2)
	var chunks []graphio.Chunk
	for _, p := range corpus {
		chunks = append(chunks, graphio.Chunk{Title: p.Title, Text: p.Text})
	}
	m := NewMatcher(chunks)
	var ex *Example
	for i := range ds.Examples {
		if ds.Examples[i].ID == "1" {
			ex = &ds.Examples[i]
		}
	}
	other := retrieve.Passage{Text: "Children were followed for a year. None."}
	own := retrieve.Passage{Text: "Trauma patients were studied. None."}
	assert.Zero(t, m.Match([]retrieve.Passage{other}, ex).RecallAt(1), "another abstract sharing a section")
	assert.InDelta(t, 1, m.Match([]retrieve.Passage{other, own}, ex).RecallAt(2), 1e-12)
}
