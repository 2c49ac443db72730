package augment

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
)

// featureIndex is a hand-built index: two chunks, three sentences (hyperedges) and two
// facts. Alice and Bob share sentence 0 and a fact; Alice and Paris share sentence 1
// with no fact between them; Bob and Acme share sentence 2 and a fact.
func featureIndex(names ...string) *graphio.Index {
	if len(names) == 0 {
		names = []string{"alice", "bob", "paris", "acme"}
	}
	ix := &graphio.Index{Chunks: []graphio.Chunk{{ID: "c0"}, {ID: "c1"}}}
	for i, n := range names {
		ix.Entities = append(ix.Entities, graphio.Entity{ID: "e" + n, Name: n, Type: []string{"PERSON", "PERSON", "GPE", "ORGANIZATION"}[i]})
	}
	ix.Mentions = []graphio.Mention{{Entity: 0, Chunk: 0}, {Entity: 1, Chunk: 0}, {Entity: 2, Chunk: 0}, {Entity: 1, Chunk: 1}, {Entity: 3, Chunk: 1}}
	ix.Hyperedges = []graphio.Hyperedge{
		{ID: "h0", Text: "Alice married Bob in spring.", Entities: []int32{0, 1}, Chunks: []int32{0}},
		{ID: "h1", Text: "Alice was born in Paris.", Entities: []int32{0, 2}, Chunks: []int32{0}},
		{ID: "h2", Text: "Bob founded Acme.", Entities: []int32{1, 3}, Chunks: []int32{1}},
	}
	ix.Facts = []graphio.Fact{
		{ID: "f0", Subject: 0, Predicate: "married", Object: 1, Chunks: []int32{0}, Weight: 1},
		{ID: "f1", Subject: 1, Predicate: "founded", Object: 3, Chunks: []int32{1}, Weight: 1},
	}
	return ix
}

// column returns feature name's value for local node i of a featurized graph.
func column(t *testing.T, f *featurizer, x []float32, i int, name string) float32 {
	t.Helper()
	for j, n := range evidenceFeatureNames {
		if n == name {
			return x[i*f.dim+j]
		}
	}
	t.Fatalf("no feature %q", name)
	return 0
}

func TestEvidenceFeatures(t *testing.T) {
	ix := featureIndex()
	f, err := newFeaturizer(ix, FeaturesEvidence)
	require.NoError(t, err)
	require.Equal(t, numEvidence+2*wordBuckets, f.dim)
	s := &subgraph{root: 0, nodes: []int32{0, 1, 3}, edges: []sedge{{u: 0, v: 1, rel: relFact}, {u: 1, v: 2, rel: relFact}}}
	clean := f.graph(s, nil)
	require.Len(t, clean.X, 3*f.dim)
	assert.Equal(t, []int32{nodeTypeRoot, 0, 0}, clean.NodeType)

	// Alice (local 0): 1 chunk, 2 sentences, 2 co-members, 2 co-mentions, 1 fact;
	// sentence 1 links her to nothing.
	want := map[string]float32{
		"log_chunks": log1p(1), "log_hyperedges": log1p(2), "log_comembers": log1p(2), "log_comentions": log1p(2),
		"type_person": 1, "type_place": 0, "log_fact_degree": log1p(1), "log_comembers_unlinked": log1p(1),
		"share_comembers_linked": 0.5, "log_sentences_unlinked": log1p(1), "share_sentences_unlinked": 0.5,
		"log_view_fact_degree": log1p(1), "log_fact_neighbours_outside_view": 0,
	}
	for name, v := range want {
		assert.InDelta(t, v, column(t, f, clean.X, 0, name), 1e-6, name)
	}
	// Bob (local 1): two facts, both in view, no unlinked sentence.
	assert.InDelta(t, log1p(2), column(t, f, clean.X, 1, "log_fact_degree"), 1e-6)
	assert.Zero(t, column(t, f, clean.X, 1, "log_sentences_unlinked"))

	// Masking Alice–Bob: both lose the fact, and Alice's sentence 0 becomes unlinked.
	mask := &walkMask{dropPairs: map[[2]int32]bool{pairKey(0, 1): true}}
	masked := f.graph(&subgraph{root: 0, nodes: []int32{0, 1, 3}, edges: []sedge{{u: 1, v: 2, rel: relFact}}}, mask)
	assert.Zero(t, column(t, f, masked.X, 0, "log_fact_degree"))
	assert.InDelta(t, log1p(2), column(t, f, masked.X, 0, "log_sentences_unlinked"), 1e-6)
	assert.InDelta(t, 1.0, column(t, f, masked.X, 0, "share_sentences_unlinked"), 1e-6)
	assert.InDelta(t, log1p(1), column(t, f, masked.X, 1, "log_fact_degree"), 1e-6)
	// Deleting Acme takes Bob's other fact.
	del := f.graph(&subgraph{root: 0, nodes: []int32{0, 1}, edges: []sedge{{u: 0, v: 1, rel: relFact}}}, &walkMask{dropNodes: map[int32]bool{3: true}})
	assert.InDelta(t, log1p(1), column(t, f, del.X, 1, "log_fact_degree"), 1e-6)
	assert.InDelta(t, log1p(1), column(t, f, del.X, 1, "log_sentences_unlinked"), 1e-6)

	// Word bags: Alice's sentences say "married", "born", "spring"; her fact says
	// "married". Masked, "married" is no longer said by any fact.
	bag := func(x []float32, i, off int) []float32 {
		return x[i*f.dim+numEvidence+off*wordBuckets : i*f.dim+numEvidence+(off+1)*wordBuckets]
	}
	ctx, unexplained := bag(clean.X, 0, 0), bag(clean.X, 0, 1)
	for _, w := range []string{"marri", "born", "spring"} {
		assert.Positive(t, ctx[wordBucket(w)], w)
	}
	assert.Equal(t, contentStems("Alice married Bob in spring."), []string{"marri", "spring"}, "names and stop words are no content")
	married := wordBucket("marri")
	if married != wordBucket("born") && married != wordBucket("spring") {
		assert.Zero(t, unexplained[married], "her fact says married")
		assert.Positive(t, bag(masked.X, 0, 1)[married], "masked, nothing says married")
	}
	assert.Equal(t, ctx, bag(masked.X, 0, 0), "what the text says does not depend on the graph")
}

// TestEvidenceFeaturesIgnoreNames renames every entity (same word counts): the
// features, and so the scorer, cannot tell.
func TestEvidenceFeaturesIgnoreNames(t *testing.T) {
	s := &subgraph{root: 1, nodes: []int32{0, 1, 2, 3}, edges: []sedge{{u: 0, v: 1, rel: relFact}, {u: 1, v: 3, rel: relFact}}}
	a, err := newFeaturizer(featureIndex(), FeaturesEvidence)
	require.NoError(t, err)
	b, err := newFeaturizer(featureIndex("zed", "yan", "xia", "wu"), FeaturesEvidence)
	require.NoError(t, err)
	assert.Equal(t, a.graph(s, nil).X, b.graph(s, nil).X)
}

func TestNodeFeatureModes(t *testing.T) {
	ix := featureIndex()
	ix.Embeddings = map[graphio.NodeKind]*graphio.Embedding{graphio.KindEntity: {Dim: 3, Data: make([]float32, 12)}}
	for _, tc := range []struct {
		mode, embedder string
		dim            int
	}{
		{FeaturesAuto, "hash-tfidf:v4", numEvidence + 2*wordBuckets},
		{FeaturesAuto, "openai:text-embedding-3-small", numEvidence + 2*wordBuckets + 3},
		{FeaturesEmbedding, "hash-tfidf:v4", 3},
		{FeaturesBoth, "hash-tfidf:v4", numEvidence + 2*wordBuckets + 3},
	} {
		ix.Meta.Embedder = tc.embedder
		f, err := newFeaturizer(ix, tc.mode)
		require.NoError(t, err, tc.mode)
		assert.Equal(t, tc.dim, f.dim, "%s with %s", tc.mode, tc.embedder)
	}
	_, err := newFeaturizer(ix, "names")
	assert.ErrorContains(t, err, "unknown node features")
	ix.Embeddings = nil
	_, err = newFeaturizer(ix, FeaturesEmbedding)
	assert.ErrorContains(t, err, "no entity embeddings"[3:])
}

func TestMiniBatchesAndRootBalance(t *testing.T) {
	var views []view
	for g := range 10 {
		for k := range g%3 + 1 { // groups with one, two or three corrupted views and two clean
			views = append(views, view{group: g, label: 1, sg: &subgraph{nodes: make([]int32, 4+k)}})
		}
		views = append(views, view{group: g, label: 0, sg: &subgraph{nodes: make([]int32, 4)}}, view{group: g, label: 0, sg: &subgraph{nodes: make([]int32, 5)}})
	}
	rng := rand.New(rand.NewSource(1))
	for _, n := range []int{1, 3, 4, 100} {
		parts := miniBatches(views, n, rng)
		assert.Len(t, parts, min(n, len(views)))
		total := 0
		for _, p := range parts {
			assert.InDelta(t, len(views)/len(parts), len(p), 1)
			total += len(p)
		}
		assert.Equal(t, len(views), total, "every view in one batch")
	}
	byGroup := balanceBy(views, rng, func(v view) any { return v.group })
	count := map[int][2]int{}
	for _, v := range byGroup {
		c := count[v.group]
		c[int(v.label)]++
		count[v.group] = c
	}
	for g, c := range count {
		assert.Equal(t, c[0], c[1], "group %d balanced", g)
	}
	assert.Len(t, byGroup, 2*(4*1+3*2+3*2), "min(clean, corrupted) of each class per group")
}
