package gretrieve_test

import (
	"context"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/eval"
	"github.com/graphloom/graphloom/extract"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/gretrieve"
	"github.com/graphloom/graphloom/kernels"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/retrieve"
)

func builder(t *testing.T, cfg retrieve.Config) (*gretrieve.Builder, *retrieve.Searcher) {
	t.Helper()
	ix, err := kg.BuildOffline(context.Background(), "../examples/harbour/corpus.json", kg.DefaultConfig(), extract.DefaultRuleConfig())
	require.NoError(t, err)
	s, err := retrieve.Open(ix, nil, cfg, nil)
	require.NoError(t, err)
	b, err := gretrieve.NewBuilder(s, "")
	require.NoError(t, err)
	return b, s
}

// TestExample checks an example against the PCST subgraph it comes from: node i is
// entity i's embedding row, edge j runs from fact j's subject to its object with the
// embedding of its relation text, the text is the CSV of exactly those nodes and
// edges, and the label is G-Retriever's.
func TestExample(t *testing.T) {
	cfg := retrieve.DefaultConfig()
	cfg.PCSTText = retrieve.PCSTTextVerbal // the example's text is CSV regardless
	b, s := builder(t, cfg)
	ix := s.Index()
	ctx := context.Background()
	q := "In which town was the father of Mira Solenne born?"
	ex, sg, err := b.Example(ctx, q, []string{"Aldwick", "ALDWICK town"})
	require.NoError(t, err)
	assert.Equal(t, q, ex.Question)
	assert.Equal(t, "aldwick|aldwick town", ex.Answer)
	require.NotEmpty(t, sg.Facts, "the harbour graph connects the question's entities")

	d := b.Dim()
	assert.Equal(t, ix.Embeddings[graphio.KindEntity].Dim, d)
	g := ex.Graph
	require.NoError(t, g.Validate(kernels.Spec{FeatDim: d, EdgeDim: d, NumRelations: 1, NumNodeTypes: 1}))
	assert.Equal(t, len(sg.Entities), g.NumNodes)
	assert.Len(t, g.X, len(sg.Entities)*d)
	assert.Len(t, g.Src, len(sg.Facts))
	assert.Len(t, g.EdgeAttr, len(sg.Facts)*d)
	for i, e := range sg.Entities {
		assert.Equal(t, ix.Embeddings[graphio.KindEntity].Row(int(e)), g.X[i*d:(i+1)*d])
	}
	rel, err := s.Embedder().Embed(ctx, []string{ix.Facts[sg.Facts[0]].Predicate})
	require.NoError(t, err)
	for j, f := range sg.Facts {
		x := ix.Facts[f]
		assert.Equal(t, x.Subject, sg.Entities[g.Src[j]])
		assert.Equal(t, x.Object, sg.Entities[g.Dst[j]])
		if x.Predicate == ix.Facts[sg.Facts[0]].Predicate {
			assert.Equal(t, rel[0], g.EdgeAttr[j*d:(j+1)*d], "edge %d: its relation text's embedding", j)
		}
	}

	// The CSV: a node table and an edge table, one row per node and edge.
	parts := strings.SplitN(ex.Text, "\n\n", 2)
	require.Len(t, parts, 2, ex.Text)
	nodes, err := csv.NewReader(strings.NewReader(parts[0])).ReadAll()
	require.NoError(t, err)
	edges, err := csv.NewReader(strings.NewReader(parts[1])).ReadAll()
	require.NoError(t, err)
	assert.Equal(t, []string{"node_id", "node_attr"}, nodes[0])
	assert.Equal(t, []string{"src", "edge_attr", "dst"}, edges[0])
	assert.Len(t, nodes, 1+g.NumNodes)
	assert.Len(t, edges, 1+len(g.Src))
	for i, e := range sg.Entities {
		assert.Equal(t, ix.Entities[e].Name, nodes[1+i][1])
	}
	// The text is whole: the model truncates its tokens to MaxTextTokens (max_txt_len).

	// The dataset path: every harbour question with its label; no answers → none.
	ds, err := eval.ReadDataset("../examples/harbour/questions.json")
	require.NoError(t, err)
	exs, skipped, err := b.Examples(ctx, ds, nil)
	require.NoError(t, err)
	assert.Zero(t, skipped)
	require.Len(t, exs, len(ds.Examples))
	for i, e := range exs {
		assert.Equal(t, strings.ToLower(strings.Join(ds.Examples[i].Answers, "|")), e.Answer)
		assert.Positive(t, e.Graph.NumNodes)
	}
	ex2, _, err := b.Example(ctx, q, nil)
	require.NoError(t, err)
	assert.Empty(t, ex2.Answer)
	assert.Equal(t, ex.Graph, ex2.Graph, "deterministic, the relation cache changes nothing")
}

func TestBuilderNeedsFacts(t *testing.T) {
	_, s := builder(t, retrieve.DefaultConfig())
	ix := *s.Index()
	ix.Facts = nil
	s2, err := retrieve.Open(&ix, nil, retrieve.DefaultConfig(), nil)
	require.NoError(t, err)
	_, err = gretrieve.NewBuilder(s2, "")
	assert.ErrorContains(t, err, "needs an index with facts")
}

// TestTextForms: the verbal form (SelfGraphRAG's GraphLM) writes the same subgraph as
// "v_i [r] v_j" lines; an unknown form is an error.
func TestTextForms(t *testing.T) {
	_, s := builder(t, retrieve.DefaultConfig())
	verbal, err := gretrieve.NewBuilder(s, retrieve.PCSTTextVerbal)
	require.NoError(t, err)
	q := "In which town was the father of Mira Solenne born?"
	ex, sg, err := verbal.Example(context.Background(), q, nil)
	require.NoError(t, err)
	// One "subject [predicate] object" line per kept fact, in the subgraph's order,
	// written here from the index's own names.
	require.NotEmpty(t, sg.Facts)
	ix := s.Index()
	var want []string
	for _, f := range sg.Facts {
		x := ix.Facts[f]
		want = append(want, ix.Entities[x.Subject].Name+" ["+x.Predicate+"] "+ix.Entities[x.Object].Name)
	}
	assert.Equal(t, strings.Join(want, "\n")+"\n", ex.Text, "each line ends with a newline")
	assert.NotContains(t, ex.Text, "node_id,node_attr")
	_, err = gretrieve.NewBuilder(s, "yaml")
	assert.ErrorContains(t, err, `text form "yaml"`)
}

// TestListedAnswers: a generated "a|b" lists two answers, as the labels join the gold
// answers; blanks and spaces around the bars go.
func TestListedAnswers(t *testing.T) {
	assert.Equal(t, []string{"malia", "sasha"}, gretrieve.ListedAnswers("malia | sasha"))
	assert.Equal(t, []string{"paris"}, gretrieve.ListedAnswers("paris"))
	assert.Equal(t, []string{"a"}, gretrieve.ListedAnswers("|a||"))
	assert.Nil(t, gretrieve.ListedAnswers(""))
}
