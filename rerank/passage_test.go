package rerank

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// edgeStrings renders edges as "src -rel-> dst" for comparison.
func edgeStrings(g *PassageGraph) []string {
	var out []string
	for _, e := range g.Edges {
		out = append(out, g.Nodes[e.Src]+" -"+e.Rel.String()+"-> "+g.Nodes[e.Dst])
	}
	return out
}

func anchorNames(g *PassageGraph) []string {
	var out []string
	for _, a := range g.Anchors() {
		out = append(out, g.Nodes[a])
	}
	return out
}

func TestParsePassageGraphs(t *testing.T) {
	p := NewParser()
	for _, tc := range []struct {
		name    string
		text    string
		nodes   []string
		edges   []string // all edges, any order
		anchors []string
	}{
		{
			name:  "subject object preposition, he resolved to the person",
			text:  "John Smith founded the Lamplighters Guild in 1852. He was born in Bristol.",
			nodes: []string{"john smith", "found", "lamplight guild", "1852", "born", "bristol"},
			edges: []string{"found -subj-> john smith", "found -obj-> lamplight guild", "lamplight guild -prep-> 1852",
				"born -subj-> john smith", "born -prep-> bristol"},
			anchors: []string{"john smith", "1852", "bristol"},
		},
		{
			name:  "he resolved to the last person, not the first proper noun",
			text:  "Bristol is a port. John Smith lived in Bristol. He founded the guild.",
			nodes: []string{"bristol", "port", "john smith", "live", "found", "guild"},
			edges: []string{"bristol -attr-> port", "live -subj-> john smith", "live -prep-> bristol",
				"found -subj-> john smith", "found -obj-> guild"},
			anchors: []string{"port", "john smith", "guild"},
		},
		{
			// prose tags neither name PERSON.
			name:  "with no person tagged, he resolved to the most recent proper noun",
			text:  "The pier was built in France. The ship came from Spain. He sold the ship.",
			nodes: []string{"pier", "built", "franc", "ship", "came", "spain", "sold"},
			edges: []string{"built -subj-> pier", "built -prep-> franc", "came -subj-> ship", "came -prep-> spain",
				"sold -subj-> spain", "sold -obj-> ship"},
			anchors: []string{"pier", "franc", "ship", "spain"},
		},
		{
			name:  "copula attribute, it resolved to the last thing, adjective modifiers",
			text:  "Paris is the capital of France. It has many old bridges.",
			nodes: []string{"pari", "capit", "franc", "has", "mani", "old", "bridg"},
			edges: []string{"pari -attr-> capit", "capit -prep-> franc", "has -subj-> franc", "has -obj-> bridg",
				"bridg -mod-> mani", "bridg -mod-> old"},
			anchors: []string{"franc", "mani", "old"},
		},
		{
			name:  "apposition, conjunction, compound modifier",
			text:  "The guild, a small charity, sold salt and fish to the harbour towns.",
			nodes: []string{"guild", "small", "chariti", "sold", "salt", "fish", "harbour", "town"},
			edges: []string{"guild -appos-> chariti", "chariti -mod-> small", "sold -subj-> guild", "sold -obj-> salt",
				"salt -conj-> fish", "fish -prep-> town", "town -mod-> harbour"},
			anchors: []string{"small", "harbour"},
		},
		{
			name:    "possessive",
			text:    "Mary's ship sank near the rocky coast.",
			nodes:   []string{"mari", "ship", "sank", "rocki", "coast"},
			edges:   []string{"ship -poss-> mari", "sank -subj-> ship", "sank -prep-> coast", "coast -mod-> rocki"},
			anchors: []string{"mari", "rocki"},
		},
		{
			name:    "they resolved to the plural noun, repeated words share one node",
			text:    "The sailors reached the harbour. They left the harbour at dawn.",
			nodes:   []string{"sailor", "reach", "harbour", "left", "dawn"},
			edges:   []string{"reach -subj-> sailor", "reach -obj-> harbour", "left -subj-> sailor", "left -obj-> harbour", "harbour -prep-> dawn"},
			anchors: []string{"sailor", "dawn"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := p.Parse(tc.text)
			require.NoError(t, err)
			assert.ElementsMatch(t, tc.nodes, g.Nodes)
			assert.ElementsMatch(t, tc.edges, edgeStrings(g))
			assert.ElementsMatch(t, tc.anchors, anchorNames(g))
			// Deterministic: parsing again gives the identical graph.
			g2, err := p.Parse(tc.text)
			require.NoError(t, err)
			assert.Equal(t, g, g2)
		})
	}
}

func TestParseEmptyAndPunctuation(t *testing.T) {
	p := NewParser()
	for _, text := range []string{"", "   ", "... !!! ???", "—"} {
		g, err := p.Parse(text)
		require.NoError(t, err)
		assert.Empty(t, g.Edges, text)
		assert.Empty(t, g.Anchors(), text)
	}
}

func TestAnchorsByHand(t *testing.T) {
	// a→b, a→c, b→c, d isolated: out-degrees a2 b1 c0 d0; d has no edge, so only c.
	g := &PassageGraph{Nodes: []string{"a", "b", "c", "d"}, Class: make([]int32, 4),
		Edges: []Edge{{0, 1, RelSubject}, {0, 2, RelObject}, {1, 2, RelModifier}}}
	assert.Equal(t, []int{2, 1, 0, 0}, g.OutDegree())
	assert.Equal(t, []int{2}, g.Anchors())
	// A cycle: every node has out-degree 1, so all are anchors.
	g = &PassageGraph{Nodes: []string{"a", "b"}, Class: make([]int32, 2), Edges: []Edge{{0, 1, RelConjunction}, {1, 0, RelConjunction}}}
	assert.Equal(t, []int{0, 1}, g.Anchors())
}
